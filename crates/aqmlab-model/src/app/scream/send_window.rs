//! Sender transmission control: the send window and the pacer
//! (draft-johansson-ccwg-rfc8298bis-screamv2, sections "Send Window Calculation" and "Packet
//! Pacing").
//!
//! * send_wnd = ref_wnd x ref_wnd_overhead - bytes_in_flight; a packet may leave while it is
//!   positive. ref_wnd_overhead runs from REF_WND_OVERHEAD_MIN to REF_WND_OVERHEAD_MAX as the
//!   delay variation (qdelay_dev_norm) falls below its threshold.
//! * Packets are at least t_pace = size x 8 / pace_bitrate apart, pace_bitrate =
//!   max(RATE_PACE_MIN, target) x PACKET_PACING_HEADROOM, relaxed (up to
//!   MAX_RELAXED_PACING_FACTOR) as the target nears its maximum.

/// Lower bound of the window overhead (draft, "Send Window Calculation").
pub const REF_WND_OVERHEAD_MIN: f64 = 1.5;
/// Upper bound (same section).
pub const REF_WND_OVERHEAD_MAX: f64 = 3.0;
/// Smallest pacing rate, bit/s (draft, "Packet Pacing").
pub const RATE_PACE_MIN: f64 = 50_000.0;
/// Pacing headroom over the target (same section).
pub const PACKET_PACING_HEADROOM: f64 = 1.5;
/// Largest relaxation of the pacing near the maximum rate (same section).
pub const MAX_RELAXED_PACING_FACTOR: f64 = 4.0;
/// Fraction of the maximum rate where relaxing starts (same section).
pub const RELAXED_PACING_LIMIT_LOW: f64 = 0.8;

/// ref_wnd_overhead for a delay-variation threshold `th` and qdelay_dev_norm `dev`.
pub fn ref_wnd_overhead(th: f64, dev: f64) -> f64 {
    REF_WND_OVERHEAD_MIN + (REF_WND_OVERHEAD_MAX - REF_WND_OVERHEAD_MIN) * ((th - dev) / th).max(0.0)
}

/// May a packet leave: send_wnd > 0.
pub fn may_send(ref_wnd: f64, overhead: f64, bytes_in_flight: f64) -> bool {
    ref_wnd * overhead - bytes_in_flight > 0.0
}

/// The pacing interval after a packet of `size` bytes, s.
pub fn t_pace(size: u32, target_bps: f64, max_bps: f64) -> f64 {
    let mut pace = target_bps.max(RATE_PACE_MIN) * PACKET_PACING_HEADROOM;
    let nominal = target_bps / max_bps;
    let relax = ((nominal - RELAXED_PACING_LIMIT_LOW) / (1.0 - RELAXED_PACING_LIMIT_LOW)).min(1.0);
    let scale = (1.0 - relax).clamp(1.0 / MAX_RELAXED_PACING_FACTOR, 1.0);
    pace /= scale;
    size as f64 * 8.0 / pace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_runs_from_1_5_to_3_with_delay_variation() {
        assert_eq!(ref_wnd_overhead(0.1, 0.0), 3.0);
        assert_eq!(ref_wnd_overhead(0.1, 0.1), 1.5);
        assert!((ref_wnd_overhead(0.1, 0.05) - 2.25).abs() < 1e-12);
        assert_eq!(ref_wnd_overhead(0.1, 0.15), 1.5);
        assert!(may_send(1000.0, 1.5, 1499.0));
        assert!(!may_send(1000.0, 1.5, 1500.0));
    }

    #[test]
    fn pacing_is_1_5_times_the_target_relaxed_near_the_maximum() {
        // 1 Mbit/s of 6: 1200 B at 1.5 Mbit/s = 6.4 ms.
        assert!((t_pace(1200, 1e6, 6e6) - 0.0064).abs() < 1e-12);
        // Below 50 kbit/s the floor holds.
        assert!((t_pace(1000, 10_000.0, 6e6) - 8000.0 / 75_000.0).abs() < 1e-12);
        // 90 % of the maximum: relax = 0.5, pace / 0.5.
        assert!((t_pace(1200, 5.4e6, 6e6) - 9600.0 / (5.4e6 * 1.5 / 0.5)).abs() < 1e-12);
        // At the maximum: relaxed by the full factor 4.
        assert!((t_pace(1200, 6e6, 6e6) - 9600.0 / (6e6 * 1.5 * 4.0)).abs() < 1e-12);
    }
}
