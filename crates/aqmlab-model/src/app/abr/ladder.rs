//! An encoding ladder: the rungs a player may choose from, and for every rung the size of
//! each segment and, when known, its picture quality.
//!
//! The engines receive a ladder already expanded into numbers (the scenario side builds the
//! built-in synthetic ladder or reads a user's CSV, `python/aqmlab/video/ladder.py`), so this
//! file only holds the data and guards the shape the algorithms rely on.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ladder {
    /// Media time each segment holds (every segment the same, as in DASH's `SegmentTemplate`
    /// with a fixed `@duration`).
    pub segment_duration_ns: u64,
    /// Each rung's nominal (advertised) bitrate, bits/s, strictly ascending: what the
    /// algorithms that work from bitrates (throughput rule, BBA, BOLA) compare.
    pub bitrates_bps: Vec<u64>,
    /// `sizes_bytes[rung][segment]`: payload bytes of each encoded segment.
    pub sizes_bytes: Vec<Vec<u64>>,
    /// `ssim_db[rung][segment]`: SSIM in dB (`-10 log10(1 - SSIM)`), or empty when unknown.
    #[serde(default)]
    pub ssim_db: Vec<Vec<f64>>,
    /// `psnr_db[rung][segment]`, or empty when unknown.
    #[serde(default)]
    pub psnr_db: Vec<Vec<f64>>,
}

impl Ladder {
    pub fn rungs(&self) -> usize {
        self.bitrates_bps.len()
    }

    pub fn segments(&self) -> usize {
        self.sizes_bytes.first().map_or(0, Vec::len)
    }

    pub fn segment_duration_s(&self) -> f64 {
        self.segment_duration_ns as f64 * 1e-9
    }

    /// Bytes of `segment` at `rung`.
    pub fn size(&self, rung: usize, segment: usize) -> u64 {
        self.sizes_bytes[rung][segment]
    }

    pub fn ssim_db(&self, rung: usize, segment: usize) -> Option<f64> {
        self.ssim_db.get(rung).map(|r| r[segment])
    }

    /// The shape every user of a ladder relies on, named by field.
    pub fn validate(&self) -> Result<(), String> {
        if self.segment_duration_ns == 0 {
            return Err("ladder.segment_duration_ns must be positive".into());
        }
        if self.bitrates_bps.is_empty() {
            return Err("ladder.bitrates_bps must hold at least one rung".into());
        }
        if self.bitrates_bps[0] == 0 || self.bitrates_bps.windows(2).any(|w| w[0] >= w[1]) {
            return Err("ladder.bitrates_bps must be positive and strictly ascending".into());
        }
        if self.sizes_bytes.len() != self.rungs() {
            return Err(format!("ladder.sizes_bytes must have one row per rung ({})", self.rungs()));
        }
        let n = self.segments();
        if n == 0 || self.sizes_bytes.iter().any(|r| r.len() != n || r.contains(&0)) {
            return Err("ladder.sizes_bytes rows must be equally long, non-empty and positive".into());
        }
        for (name, scores) in [("ssim_db", &self.ssim_db), ("psnr_db", &self.psnr_db)] {
            if !scores.is_empty() && (scores.len() != self.rungs() || scores.iter().any(|r| r.len() != n)) {
                return Err(format!("ladder.{name} must be empty or shaped like sizes_bytes"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) fn test_ladder(bitrates_kbps: &[u64], segments: usize, segment_s: f64) -> Ladder {
    let bitrates_bps: Vec<u64> = bitrates_kbps.iter().map(|k| k * 1000).collect();
    let sizes_bytes = bitrates_bps.iter().map(|b| vec![(*b as f64 * segment_s / 8.0) as u64; segments]).collect();
    Ladder { segment_duration_ns: (segment_s * 1e9) as u64, bitrates_bps, sizes_bytes, ssim_db: Vec::new(), psnr_db: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_is_checked_by_field() {
        let mut l = test_ladder(&[300, 750], 3, 2.0);
        assert!(l.validate().is_ok());
        l.bitrates_bps.swap(0, 1);
        assert!(l.validate().unwrap_err().contains("bitrates_bps"));
        let mut l = test_ladder(&[300, 750], 3, 2.0);
        l.sizes_bytes[1].pop();
        assert!(l.validate().unwrap_err().contains("sizes_bytes"));
        let mut l = test_ladder(&[300], 3, 2.0);
        l.ssim_db = vec![vec![10.0; 2]];
        assert!(l.validate().unwrap_err().contains("ssim_db"));
    }
}
