//! Prague's RTT-independence heuristics, Linux `tcp_prague.c`'s `prague_rtt_scaling` module
//! parameter (`RTT_CONTROL_NONE`, `_RATE`, `_SCALABLE`, `_ADDITIVE`; the default is RATE):
//! how many segments a flow adds per round of congestion avoidance once RTT independence
//! applies, and the target RTT that paces its alpha updates and CE reductions
//! (draft-briscoe-iccrg-prague-congestion-control, "Reduced RTT-Dependence"). The scenario
//! field is `tcp.prague_rtt_scaling`.
//!
//! With R the smoothed RTT and T the target (25 ms):
//! * RATE: (R / T)^2 below T, 1 at or above it (`prague_rate_scaled_ai_ack_increase`): every
//!   flow's rate grows by one segment per T^2, as a flow at T grows;
//! * SCALABLE: (R0 / 8 + min(max(R - R1, 0), R0)) R / R0^2 with R0 = 16.384 ms and
//!   R1 = 1.536 ms (`prague_scalable_ai_ack_increase`): at least R / (8 R0) so that even a
//!   microsecond-RTT flow gets a mark every few rounds, trading some rate balance at very low
//!   RTT; unlike RATE it is not capped at 1, so above about 16 ms it grows faster than Reno (at
//!   25 ms, 1.72 segments per round) — as Linux computes it;
//! * ADDITIVE: RATE's rule with the target T + R (`prague_dynamic_rtt_target`): the flow
//!   behaves as one with T more RTT; alpha updates and reductions wait T + R too;
//! * NONE: 1 (Reno's), and no waiting for a target.
//!
//! Linux leaves every flow whose RTT is above 100 ms unscaled (`MAX_SCALED_RTT`), and counts
//! RTTs in units of 128 us (`RTT_UNIT`); here RTTs are continuous.

use aqmlab_core::Time;
pub use aqmlab_model::app::tcp_config::PragueRttScaling;

/// SCALABLE's R0 (Linux `US2RTT(1 << 14)`: 16,384 us).
pub const SCALABLE_R0: Time = Time(16_384_000);
/// SCALABLE's R1 (Linux `US2RTT((1 << 10) + (1 << 9))`: 1,536 us).
pub const SCALABLE_R1: Time = Time(1_536_000);

/// The target RTT that paces alpha updates and CE reductions with smoothed RTT `srtt`: the
/// fixed target, or for ADDITIVE the target plus `srtt`; None for NONE.
pub fn target(scaling: PragueRttScaling, target: Time, srtt: Option<Time>) -> Option<Time> {
    match scaling {
        PragueRttScaling::None => None,
        PragueRttScaling::Rate | PragueRttScaling::Scalable => Some(target),
        PragueRttScaling::Additive => Some(target + srtt.unwrap_or(Time::ZERO)),
    }
}

/// Segments added per round with smoothed RTT `r` (> 0, at most 100 ms) once RTT independence
/// applies.
pub fn ai_per_round(scaling: PragueRttScaling, target_rtt: Time, r: Time) -> f64 {
    let rate = |t: Time| {
        if r >= t {
            1.0
        } else {
            let ratio = r.as_secs_f64() / t.as_secs_f64();
            ratio * ratio
        }
    };
    match scaling {
        PragueRttScaling::None => 1.0,
        PragueRttScaling::Rate => rate(target_rtt),
        PragueRttScaling::Additive => rate(target_rtt + r),
        PragueRttScaling::Scalable => {
            let (r0, r1, r) = (SCALABLE_R0.as_secs_f64(), SCALABLE_R1.as_secs_f64(), r.as_secs_f64());
            (r0 / 8.0 + (r - r1).clamp(0.0, r0)) * r / (r0 * r0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Time {
        Time((x * 1e6) as u64)
    }

    #[test]
    fn each_heuristic_adds_what_linux_adds_per_round() {
        let t = ms(25.0);
        for (r, rate, additive, scalable) in [
            // R, RATE (R/T)^2, ADDITIVE (R/(T+R))^2, SCALABLE (R0/8 + clamp(R - R1, 0, R0)) R / R0^2
            (1.0, 0.0016, 1.0 / 676.0, 2.048 * 1.0 / 268.435456),
            (10.0, 0.16, 100.0 / 1225.0, (2.048 + 8.464) * 10.0 / 268.435456),
            (25.0, 1.0, 0.25, (2.048 + 16.384) * 25.0 / 268.435456),
            (80.0, 1.0, 6400.0 / 11025.0, (2.048 + 16.384) * 80.0 / 268.435456),
        ] {
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.max(1.0);
            assert!(close(ai_per_round(PragueRttScaling::Rate, t, ms(r)), rate), "RATE at {r} ms");
            assert!(close(ai_per_round(PragueRttScaling::Additive, t, ms(r)), additive), "ADDITIVE at {r} ms");
            assert!(close(ai_per_round(PragueRttScaling::Scalable, t, ms(r)), scalable), "SCALABLE at {r} ms");
            assert_eq!(ai_per_round(PragueRttScaling::None, t, ms(r)), 1.0);
        }
        // Below R1 SCALABLE keeps its floor of R / (8 R0) segments per round.
        assert!((ai_per_round(PragueRttScaling::Scalable, t, ms(0.5)) - 0.5 / (8.0 * 16.384)).abs() < 1e-12);
    }

    #[test]
    fn additive_waits_the_target_plus_the_rtt_and_none_waits_nothing() {
        let t = ms(25.0);
        assert_eq!(target(PragueRttScaling::Rate, t, Some(ms(10.0))), Some(t));
        assert_eq!(target(PragueRttScaling::Scalable, t, Some(ms(10.0))), Some(t));
        assert_eq!(target(PragueRttScaling::Additive, t, Some(ms(10.0))), Some(ms(35.0)));
        assert_eq!(target(PragueRttScaling::None, t, Some(ms(10.0))), None);
    }
}
