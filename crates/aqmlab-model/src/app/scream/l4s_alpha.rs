//! l4s_alpha, the smoothed fraction of CE-marked packets that sizes the L4S back-off
//! (draft-johansson-ccwg-rfc8298bis-screamv2, section "Receiving ECN-CE for L4S"): counted in
//! packets, updated at least every min(10 ms, s_rtt) with a fast-attack (L4S_AVG_G_UP),
//! slow-decay (L4S_AVG_G_DOWN) EWMA. Only an L4S-mode sender (ECT(1)) keeps it.

use aqmlab_core::Time;

/// EWMA gain when the marked fraction is at or above alpha (draft, same section).
pub const L4S_AVG_G_UP: f64 = 1.0 / 8.0;
/// Decay per update when it is below (draft, same section).
pub const L4S_AVG_G_DOWN: f64 = 1.0 / 128.0;
/// Longest time between updates, s (draft: "updated at least every 10ms").
pub const L4S_ALPHA_INTERVAL: f64 = 0.01;

#[derive(Clone, Debug, Default)]
pub struct L4sAlpha {
    pub alpha: f64,
    delivered: u64,
    marked: u64,
    last_update: Option<Time>,
}

impl L4sAlpha {
    /// A report acknowledged `acked` packets, `ce` of them CE-marked.
    pub fn on_feedback(&mut self, acked: u64, ce: u64, now: Time, s_rtt: f64) {
        self.delivered += acked;
        self.marked += ce;
        let due = self.last_update.is_none_or(|t| now.saturating_sub(t).as_secs_f64() >= L4S_ALPHA_INTERVAL.min(s_rtt));
        if !due || self.delivered == 0 {
            return;
        }
        let f = self.marked as f64 / self.delivered as f64;
        self.alpha =
            if f >= self.alpha { L4S_AVG_G_UP * f + (1.0 - L4S_AVG_G_UP) * self.alpha } else { (1.0 - L4S_AVG_G_DOWN) * self.alpha };
        self.last_update = Some(now);
        self.delivered = 0;
        self.marked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_attacks_by_an_eighth_and_decays_by_1_128() {
        let mut a = L4sAlpha::default();
        a.on_feedback(10, 5, Time::ZERO, 0.05);
        assert!((a.alpha - 0.5 / 8.0).abs() < 1e-12, "{}", a.alpha);
        // Within 10 ms: counted, not applied.
        a.on_feedback(10, 10, Time::from_millis(5), 0.05);
        assert!((a.alpha - 0.5 / 8.0).abs() < 1e-12);
        // Since the last update 10 of 10 marked: 1 >= alpha.
        a.on_feedback(0, 0, Time::from_millis(10), 0.05);
        let up = 1.0 / 8.0 + 7.0 / 8.0 * (0.5 / 8.0);
        assert!((a.alpha - up).abs() < 1e-12, "{}", a.alpha);
        a.on_feedback(10, 0, Time::from_millis(20), 0.05);
        assert!((a.alpha - up * (1.0 - 1.0 / 128.0)).abs() < 1e-12);
    }
}
