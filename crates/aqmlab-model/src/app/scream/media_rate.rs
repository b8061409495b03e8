//! The media rate control: the encoder's target bitrate from the reference window and the
//! smoothed RTT (draft-johansson-ccwg-rfc8298bis-screamv2, section "Media Rate Control"):
//!
//! target = 8 ref_wnd / s_rtt x (1 - min(0.2, max(0, ref_wnd_ratio - 0.1))) x MSS / (MSS +
//! PACKET_OVERHEAD) / (1.2 + rate_adjust_factor + frame_size_dev), within [min, max].
//!
//! rate_adjust_factor integrates the RTP queue's delay above a quarter frame period (gain
//! RATE_ADJUST_GAIN, within [0, 0.5]); frame_size_dev smooths how far frames exceed the nominal
//! size (gain FRAME_SIZE_DEV_ALPHA, at most 0.2). Both are updated once per frame.

/// Packetization overhead, bytes (draft, "Media Rate Control").
pub const PACKET_OVERHEAD: f64 = 20.0;
/// Gain of rate_adjust_factor (same section).
pub const RATE_ADJUST_GAIN: f64 = 1.0 / 16.0;
/// Gain of frame_size_dev (same section).
pub const FRAME_SIZE_DEV_ALPHA: f64 = 1.0 / 64.0;

#[derive(Clone, Debug, Default)]
pub struct MediaRate {
    pub rate_adjust_factor: f64,
    pub frame_size_dev: f64,
}

impl MediaRate {
    /// A frame of `frame_bytes` was made at `target_bps` with the RTP queue's oldest packet
    /// `media_qdelay` s old, frames `frame_period` s apart.
    pub fn on_frame(&mut self, media_qdelay: f64, frame_period: f64, frame_bytes: f64, target_bps: f64) {
        let error = (media_qdelay - frame_period / 4.0) / frame_period;
        self.rate_adjust_factor = (self.rate_adjust_factor + error * RATE_ADJUST_GAIN).clamp(0.0, 0.5);
        let nominal = target_bps * frame_period / 8.0;
        let deviation = ((frame_bytes - nominal) / nominal).max(0.0);
        self.frame_size_dev = ((1.0 - FRAME_SIZE_DEV_ALPHA) * self.frame_size_dev + FRAME_SIZE_DEV_ALPHA * deviation).min(0.2);
    }

    /// The target bitrate, bit/s.
    pub fn target(&self, ref_wnd: f64, ref_wnd_ratio: f64, mss: f64, s_rtt: f64, min_bps: f64, max_bps: f64) -> f64 {
        let mut k = 1.0 - (ref_wnd_ratio - 0.1).clamp(0.0, 0.2);
        k *= mss / (mss + PACKET_OVERHEAD);
        k /= 1.2 + self.rate_adjust_factor + self.frame_size_dev;
        (k * 8.0 * ref_wnd / s_rtt).clamp(min_bps, max_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_window_per_rtt_scaled_down() {
        let m = MediaRate::default();
        // 30 kB per 100 ms, ratio 0.04: 2.4 Mbit/s x 1000 / 1020 / 1.2.
        let t = m.target(30_000.0, 0.04, 1000.0, 0.1, 1.0, 1e9);
        assert!((t - 2.4e6 * 1000.0 / 1020.0 / 1.2).abs() < 1e-6, "{t}");
        // A window of 4 MSS (ratio 0.25): a further x (1 - 0.15).
        let s = m.target(4_000.0, 0.25, 1000.0, 0.1, 1.0, 1e9);
        assert!((s - 0.32e6 * 0.85 * 1000.0 / 1020.0 / 1.2).abs() < 1e-6, "{s}");
        assert_eq!(m.target(30_000.0, 0.04, 1000.0, 0.1, 1.0, 1e6), 1e6);
    }

    #[test]
    fn queue_delay_and_large_frames_lower_the_target() {
        let mut m = MediaRate::default();
        // 33 ms frames, the queue's head 33 ms old: error 0.75, factor 0.75 / 16.
        m.on_frame(1.0 / 30.0, 1.0 / 30.0, 1000.0, 240_000.0);
        assert!((m.rate_adjust_factor - 0.75 / 16.0).abs() < 1e-12);
        assert_eq!(m.frame_size_dev, 0.0);
        // A frame twice nominal (1000 B at 240 kbit/s, 30 fps): deviation 1, smoothed by 1/64.
        m.on_frame(0.0, 1.0 / 30.0, 2000.0, 240_000.0);
        assert!((m.frame_size_dev - 1.0 / 64.0).abs() < 1e-12, "{}", m.frame_size_dev);
        // An empty queue brings the factor down, never below 0.
        for _ in 0..100 {
            m.on_frame(0.0, 1.0 / 30.0, 1000.0, 240_000.0);
        }
        assert_eq!(m.rate_adjust_factor, 0.0);
    }
}
