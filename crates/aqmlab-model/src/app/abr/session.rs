//! One ABR client's results: a row per segment downloaded (the `abr_segments` table) and a
//! row of quality of experience per client (the `abr_sessions` table), in the record schema
//! both engines share (`crate::record`).
//!
//! Per-client measures, each as the ABR literature and Puffer (Yan et al., NSDI 2020) state
//! it: SSIM and bitrate are time-weighted over the media the viewer saw (a segment counts
//! for the part of it played before the session's end); SSIM variation is the mean absolute
//! change of SSIM from one played segment to the next; the stall ratio is time stalled over
//! time stalled plus time played; switches count rung changes between consecutive segments;
//! `qoe_lin` is Yin et al.'s linear QoE ([`super::qoe`]) over the segments downloaded, with
//! the startup delay as T_s (the whole session when playback never started).

use super::ladder::Ladder;
use super::player::Playback;
use super::qoe;
use super::Algorithm;
use crate::record::{Column, Table};

/// One downloaded segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentRow {
    pub segment: u32,
    pub rung: u32,
    /// When the (first) request for it was sent, ns.
    pub request_ns: u64,
    /// From that request to its last byte in order at the client, ns.
    pub download_ns: u64,
    /// Media buffered when its rung was chosen, ns.
    pub buffer_ns: u64,
    /// Times the request was sent (more than 1 when a request was lost).
    pub requests: u32,
}

#[derive(Clone, Debug, Default)]
pub struct SessionLog {
    pub rows: Vec<SegmentRow>,
}

impl SessionLog {
    /// The `abr_segments` rows of client `flow`.
    pub fn segments_table(&self, flow: u32, ladder: &Ladder) -> Table {
        let n = self.rows.len();
        let size = |r: &SegmentRow| ladder.size(r.rung as usize, r.segment as usize);
        let col_u32 = |f: &dyn Fn(&SegmentRow) -> u32| Column::U32(self.rows.iter().map(f).collect());
        let col_u64 = |f: &dyn Fn(&SegmentRow) -> u64| Column::U64(self.rows.iter().map(f).collect());
        let col_f64 = |f: &dyn Fn(&SegmentRow) -> f64| Column::F64(self.rows.iter().map(f).collect());
        vec![
            ("flow", Column::U32(vec![flow; n])),
            ("segment", col_u32(&|r| r.segment)),
            ("rung", col_u32(&|r| r.rung)),
            ("bitrate_bps", col_u64(&|r| ladder.bitrates_bps[r.rung as usize])),
            ("size_bytes", col_u64(&|r| size(r))),
            ("request_ns", col_u64(&|r| r.request_ns)),
            ("download_ns", col_u64(&|r| r.download_ns)),
            ("buffer_ns", col_u64(&|r| r.buffer_ns)),
            ("throughput_bps", col_f64(&|r| size(r) as f64 * 8.0 / (r.download_ns.max(1) as f64 * 1e-9))),
            ("ssim_db", col_f64(&|r| ladder.ssim_db(r.rung as usize, r.segment as usize).unwrap_or(f64::NAN))),
            ("requests", col_u32(&|r| r.requests)),
        ]
    }

    /// The `abr_sessions` row of client `flow`.
    pub fn session_table(&self, flow: u32, algorithm: Algorithm, ladder: &Ladder, seen: &Playback) -> Table {
        let q = self.quality(ladder, seen);
        let code = Algorithm::ALL.iter().position(|a| *a == algorithm).unwrap() as u8;
        vec![
            ("flow", Column::U32(vec![flow])),
            ("algorithm", Column::U8(vec![code])),
            ("segments", Column::U32(vec![seen.downloaded as u32])),
            ("started", Column::U8(vec![seen.startup_delay_ns.is_some() as u8])),
            ("startup_ns", Column::U64(vec![seen.startup_delay_ns.unwrap_or(seen.waited_ns)])),
            ("played_ns", Column::U64(vec![seen.played_ns])),
            ("stalls", Column::U32(vec![seen.stalls])),
            ("stall_ns", Column::U64(vec![seen.stall_ns])),
            ("stall_ratio", Column::F64(vec![q.stall_ratio])),
            ("bitrate_bps", Column::F64(vec![q.bitrate_bps])),
            ("ssim_db", Column::F64(vec![q.ssim_db])),
            ("ssim_change_db", Column::F64(vec![q.ssim_change_db])),
            ("switches", Column::U32(vec![q.switches])),
            ("qoe_lin", Column::F64(vec![q.qoe_lin])),
        ]
    }

    /// The per-client measures (see the module's documentation).
    pub fn quality(&self, ladder: &Ladder, seen: &Playback) -> Quality {
        let seg = ladder.segment_duration_ns;
        // Media of segment k is [k seg, (k+1) seg): the part of it played.
        let weight = |k: u32| (seen.played_ns.saturating_sub(k as u64 * seg)).min(seg) as f64;
        let (mut w_sum, mut rate_sum, mut ssim_sum) = (0.0, 0.0, 0.0);
        let (mut changes, mut change_sum, mut prev_ssim) = (0u32, 0.0, None);
        for r in &self.rows {
            let w = weight(r.segment);
            if w == 0.0 {
                continue;
            }
            let ssim = ladder.ssim_db(r.rung as usize, r.segment as usize).unwrap_or(f64::NAN);
            w_sum += w;
            rate_sum += w * ladder.bitrates_bps[r.rung as usize] as f64;
            ssim_sum += w * ssim;
            if let Some(p) = prev_ssim {
                changes += 1;
                change_sum += f64::abs(ssim - p);
            }
            prev_ssim = Some(ssim);
        }
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        let kbps: Vec<f64> = self.rows.iter().map(|r| ladder.bitrates_bps[r.rung as usize] as f64 / 1000.0).collect();
        let startup_s = seen.startup_delay_ns.unwrap_or(seen.waited_ns) as f64 * 1e-9;
        Quality {
            stall_ratio: ratio(seen.stall_ns as f64, (seen.stall_ns + seen.played_ns) as f64),
            bitrate_bps: ratio(rate_sum, w_sum),
            ssim_db: ratio(ssim_sum, w_sum),
            ssim_change_db: ratio(change_sum, changes as f64),
            switches: self.rows.windows(2).filter(|w| w[0].rung != w[1].rung).count() as u32,
            qoe_lin: qoe::session(&kbps, seen.stall_ns as f64 * 1e-9, startup_s),
        }
    }
}

/// A client's measures; NaN where undefined (nothing played, scores unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quality {
    pub stall_ratio: f64,
    pub bitrate_bps: f64,
    pub ssim_db: f64,
    pub ssim_change_db: f64,
    pub switches: u32,
    pub qoe_lin: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;

    const S: u64 = 1_000_000_000;

    fn row(segment: u32, rung: u32) -> SegmentRow {
        SegmentRow { segment, rung, request_ns: 0, download_ns: S, buffer_ns: 0, requests: 1 }
    }

    /// Three 2 s segments at 1, 3, 1 Mbit/s (SSIM 10, 14, 10 dB); 5 s played, so the third
    /// counts for 1 s: bitrate (2*1 + 2*3 + 1*1) / 5 = 1.8 Mbit/s, SSIM (20 + 28 + 10) / 5 =
    /// 11.6 dB, SSIM change (4 + 4) / 2 = 4 dB; 1 s stalled: ratio 1/6; two switches;
    /// QoE_lin = 5000 - 4000 - 3000 * 1 - 3000 * 0.5 = -3500.
    #[test]
    fn measures_by_hand() {
        let mut l = test_ladder(&[1000, 3000], 3, 2.0);
        l.ssim_db = vec![vec![10.0; 3], vec![14.0; 3]];
        let log = SessionLog { rows: vec![row(0, 0), row(1, 1), row(2, 0)] };
        let seen = Playback { startup_delay_ns: Some(S / 2), waited_ns: 7 * S, played_ns: 5 * S, stalls: 1, stall_ns: S, downloaded: 3 };
        let q = log.quality(&l, &seen);
        assert!((q.bitrate_bps - 1.8e6).abs() < 1e-6);
        assert!((q.ssim_db - 11.6).abs() < 1e-12);
        assert_eq!(q.ssim_change_db, 4.0);
        assert!((q.stall_ratio - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(q.switches, 2);
        assert_eq!(q.qoe_lin, -3500.0);
        let t = log.segments_table(7, &l);
        assert!(t.iter().all(|(_, c)| c.to_le_bytes().len() % 3 == 0));
        assert_eq!(log.session_table(7, Algorithm::Bola, &l, &seen).len(), 14);
    }
}
