//! A synthetic live video encoder whose output follows a target rate, after RFC 8593
//! ("Video Traffic Models for RTP Congestion Control Evaluations") section 5, the statistical
//! model: frames at a fixed rate `fps`, each of nominal size `R_v / fps`, fluctuating around
//! it, with the encoder reacting to a new target rate only after a lag.
//!
//! * **Rate in force**: the target requested `reaction_lag` ago (RFC 8593's tau_v, the
//!   encoder's reaction latency), clamped to [min, max].
//! * **I-frames**: every `key_interval` frames (the first frame is always one) a frame
//!   `key_ratio` times the size of the others; the others are scaled down so that a whole
//!   group of frames still averages the rate in force (`N / (N - 1 + key_ratio)`).
//! * **Fluctuation**: every frame is multiplied by `1 + delta`, delta drawn from a zero-mean
//!   Laplacian with scale `fluctuation` (RFC 8593's steady-state model), cut symmetrically at
//!   +-0.5 so that a frame is never below half its nominal size and the mean stays the nominal.
//!
//! Not modelled: RFC 8593's transient state (the burst of larger frames after a big rate
//! change) and its trace-driven and hybrid models.

use aqmlab_core::{SimRng, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodecConfig {
    pub fps: f64,
    /// Frames from one I-frame to the next (1 = every frame an I-frame; 0 = only the first).
    pub key_interval: u32,
    /// I-frame size over the other frames' (>= 1).
    pub key_ratio: f64,
    /// Scale of the Laplacian size fluctuation (0 = none).
    pub fluctuation: f64,
    pub reaction_lag_ns: u64,
    pub min_rate_bps: u64,
    pub max_rate_bps: u64,
}

/// The largest |delta| of the fluctuation.
pub const MAX_DELTA: f64 = 0.5;

/// One encoded frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EncodedFrame {
    pub size_bytes: u64,
    pub key: bool,
    /// The rate the encoder was following, bit/s.
    pub rate_bps: f64,
}

pub struct SyntheticCodec {
    cfg: CodecConfig,
    rng: SimRng,
    frames: u64,
    /// Targets requested and when, oldest first; the front one is in force.
    requests: VecDeque<(Time, f64)>,
}

impl SyntheticCodec {
    pub fn new(cfg: CodecConfig, start_bps: f64, rng: SimRng) -> SyntheticCodec {
        let mut requests = VecDeque::new();
        requests.push_back((Time::ZERO, start_bps));
        SyntheticCodec { cfg, rng, frames: 0, requests }
    }

    /// The sender asks for `bps` from `now` on.
    pub fn set_target(&mut self, now: Time, bps: f64) {
        self.requests.push_back((now, bps));
    }

    /// The rate in force at `now`: the latest request made at or before `now - lag`.
    pub fn rate_at(&mut self, now: Time) -> f64 {
        let seen = now.saturating_sub(Time(self.cfg.reaction_lag_ns));
        while self.requests.len() > 1 && self.requests[1].0 <= seen {
            self.requests.pop_front();
        }
        self.requests[0].1.clamp(self.cfg.min_rate_bps as f64, self.cfg.max_rate_bps as f64)
    }

    /// Encodes the next frame at `now`.
    pub fn next_frame(&mut self, now: Time) -> EncodedFrame {
        let rate = self.rate_at(now);
        let n = self.cfg.key_interval;
        let key = self.frames == 0 || (n > 0 && self.frames.is_multiple_of(n as u64));
        self.frames += 1;
        let nominal = rate / 8.0 / self.cfg.fps;
        let scale = if n == 0 {
            if key {
                self.cfg.key_ratio
            } else {
                1.0
            }
        } else {
            let p = n as f64 / (n as f64 - 1.0 + self.cfg.key_ratio);
            if key {
                self.cfg.key_ratio * p
            } else {
                p
            }
        };
        let delta = laplace(&mut self.rng, self.cfg.fluctuation).clamp(-MAX_DELTA, MAX_DELTA);
        let size = (nominal * scale * (1.0 + delta)).round().max(1.0) as u64;
        EncodedFrame { size_bytes: size, key, rate_bps: rate }
    }
}

/// A zero-mean Laplacian draw with scale `b` (inverse of its CDF).
fn laplace(rng: &mut SimRng, b: f64) -> f64 {
    if b == 0.0 {
        return 0.0;
    }
    let u = rng.uniform() - 0.5;
    -b * u.signum() * (1.0 - 2.0 * u.abs()).max(f64::MIN_POSITIVE).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> CodecConfig {
        CodecConfig {
            fps: 30.0,
            key_interval: 30,
            key_ratio: 4.0,
            fluctuation: 0.15,
            reaction_lag_ns: 200_000_000,
            min_rate_bps: 100_000,
            max_rate_bps: 10_000_000,
        }
    }

    fn frame_at(i: u64) -> Time {
        Time::from_nanos(i * 1_000_000_000 / 30)
    }

    #[test]
    fn output_follows_the_rate_on_average_with_periodic_i_frames() {
        let mut c = SyntheticCodec::new(cfg(), 1e6, SimRng::stream(1, "codec"));
        let frames: Vec<EncodedFrame> = (0..3000).map(|i| c.next_frame(frame_at(i))).collect();
        let bits: f64 = frames.iter().map(|f| f.size_bytes as f64 * 8.0).sum();
        assert!((bits / 100.0 / 1e6 - 1.0).abs() < 0.01, "{}", bits / 100.0);
        assert!(frames.iter().enumerate().all(|(i, f)| f.key == (i % 30 == 0)));
        // I-frames are key_ratio times the P-frames on average.
        let mean = |key: bool| {
            let s: Vec<f64> = frames.iter().filter(|f| f.key == key).map(|f| f.size_bytes as f64).collect();
            s.iter().sum::<f64>() / s.len() as f64
        };
        assert!((mean(true) / mean(false) / 4.0 - 1.0).abs() < 0.05);
        // The spread: mean |delta| of a Laplacian is its scale (the cut at 0.5 trims a little).
        let p = 1e6 / 8.0 / 30.0 * 30.0 / 33.0;
        let mad: f64 = frames.iter().filter(|f| !f.key).map(|f| (f.size_bytes as f64 / p - 1.0).abs()).sum::<f64>() / 2900.0;
        assert!(mad > 0.13 && mad < 0.155, "{mad}");
        assert!(frames.iter().filter(|f| !f.key).all(|f| (f.size_bytes as f64 / p - 1.0).abs() <= 0.5 + 1e-3));
    }

    #[test]
    fn a_new_target_takes_effect_after_the_reaction_lag_within_bounds() {
        let mut c = SyntheticCodec::new(cfg(), 1e6, SimRng::stream(1, "codec"));
        c.set_target(Time::from_millis(1000), 2e6);
        assert_eq!(c.rate_at(Time::from_millis(1199)), 1e6);
        assert_eq!(c.rate_at(Time::from_millis(1200)), 2e6);
        c.set_target(Time::from_millis(2000), 5e4);
        assert_eq!(c.rate_at(Time::from_millis(2300)), 1e5, "clamped at min");
    }
}
