//! The configuration of a PELS FGS video source (S. Kang, Y. Zhang, M. Dai and D. Loguinov,
//! "Multi-layer Active Queue Management and Congestion Control for Scalable Video Streaming",
//! ICDCS 2004). The sender and receiver themselves are the simulator's (`aqmlab_sim::app::pels`):
//! they need the router feedback only the simulated PELS queue gives.

use crate::headers::UDP_IP_HEADER_BYTES;
use aqmlab_core::Time;
use serde::{Deserialize, Serialize};

/// A frame's packets are tracked in a 128-bit mask at the receiver.
pub const MAX_FRAME_PACKETS: u32 = 128;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PelsConfig {
    /// Frames per second.
    pub fps: f64,
    /// Size of every packet on the wire (IP), bytes.
    pub packet_size: u32,
    /// Green (base-layer) packets per frame.
    pub base_packets: u32,
    /// Packets of a full-rate frame (base + whole enhancement layer), at most 128.
    pub max_packets: u32,
    pub initial_rate_bps: f64,
    /// MKC additive gain alpha, bits/s per control step.
    pub alpha_bps: f64,
    /// MKC multiplicative gain beta (stable iff 0 < beta < 2, Lemma 5).
    pub beta: f64,
    /// Gamma controller gain sigma (stable iff 0 < sigma < 2, Lemma 2).
    pub sigma: f64,
    /// Target red loss p_thr.
    pub p_thr: f64,
    pub gamma_low: f64,
    pub gamma_init: f64,
    /// true: PELS yellow/red partitioning; false: best-effort (all enhancement yellow).
    pub partition: bool,
}

impl PelsConfig {
    pub fn validate(&self) -> Result<(), String> {
        let finite_pos = |v: f64| v > 0.0 && v.is_finite();
        if !finite_pos(self.fps) {
            return Err("fps: must be positive".into());
        }
        if self.packet_size <= UDP_IP_HEADER_BYTES {
            return Err(format!("packet_size: must exceed the {UDP_IP_HEADER_BYTES}-byte IP+UDP headers"));
        }
        if self.base_packets == 0 {
            return Err("base_packets: must be at least 1 (the base layer)".into());
        }
        if self.max_packets < self.base_packets || self.max_packets > MAX_FRAME_PACKETS {
            return Err(format!("max_packets: must be in base_packets..={MAX_FRAME_PACKETS}, got {}", self.max_packets));
        }
        if !finite_pos(self.initial_rate_bps) {
            return Err("initial_rate: must be positive".into());
        }
        if !(self.alpha_bps >= 0.0 && self.alpha_bps.is_finite()) {
            return Err("alpha: must be >= 0".into());
        }
        if !finite_pos(self.beta) {
            return Err("beta: must be positive (MKC is stable for 0 < beta < 2)".into());
        }
        if !finite_pos(self.sigma) {
            return Err("sigma: must be positive (stable for 0 < sigma < 2)".into());
        }
        if !(self.p_thr > 0.0 && self.p_thr <= 1.0) {
            return Err("p_thr: must be in (0, 1]".into());
        }
        if !(self.gamma_low >= 0.0 && self.gamma_low <= 1.0) {
            return Err("gamma_low: must be in [0, 1]".into());
        }
        if !(self.gamma_init >= self.gamma_low && self.gamma_init <= 1.0) {
            return Err("gamma_init: must be in [gamma_low, 1]".into());
        }
        Ok(())
    }

    /// Time between frames, 1/fps.
    pub fn frame_interval(&self) -> Time {
        Time::from_secs_f64(1.0 / self.fps)
    }

    /// Bits per second of frames of `packets` packets each.
    pub fn rate_of(&self, packets: u32) -> f64 {
        packets as f64 * self.packet_size as f64 * 8.0 * self.fps
    }

    /// The base layer's rate: the lowest rate MKC may set.
    pub fn min_rate_bps(&self) -> f64 {
        self.rate_of(self.base_packets)
    }

    /// The full-rate frame's rate: the highest rate MKC may set.
    pub fn max_rate_bps(&self) -> f64 {
        self.rate_of(self.max_packets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PelsConfig {
        PelsConfig {
            fps: 10.0,
            packet_size: 500,
            base_packets: 3,
            max_packets: 126,
            initial_rate_bps: 128_000.0,
            alpha_bps: 20_000.0,
            beta: 0.5,
            sigma: 0.5,
            p_thr: 0.75,
            gamma_low: 0.05,
            gamma_init: 0.5,
            partition: true,
        }
    }

    #[test]
    fn validation_names_the_field() {
        assert_eq!(cfg().validate(), Ok(()));
        let bad = |f: fn(&mut PelsConfig)| {
            let mut c = cfg();
            f(&mut c);
            c.validate().unwrap_err()
        };
        assert!(bad(|c| c.max_packets = 129).starts_with("max_packets:"));
        assert!(bad(|c| c.max_packets = 2).starts_with("max_packets:"));
        assert!(bad(|c| c.base_packets = 0).starts_with("base_packets:"));
        assert!(bad(|c| c.packet_size = 28).starts_with("packet_size:"));
        assert!(bad(|c| c.p_thr = 0.0).starts_with("p_thr:"));
        assert!(bad(|c| c.gamma_init = 0.01).starts_with("gamma_init:"));
        assert!(bad(|c| c.fps = f64::NAN).starts_with("fps:"));
        assert!(bad(|c| c.beta = 0.0).starts_with("beta:"));
    }

    #[test]
    fn rate_bounds_are_the_base_and_the_full_frame() {
        // 3 and 126 packets of 500 B at 10 fps.
        assert_eq!(cfg().min_rate_bps(), 120_000.0);
        assert_eq!(cfg().max_rate_bps(), 5_040_000.0);
    }
}
