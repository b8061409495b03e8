//! The loss-based controller (draft-ietf-rmcat-gcc-02 section 6): with p the fraction of
//! packets lost since the last update,
//! * p > 10 %: `As_hat(i) = As_hat(i-1) * (1 - 0.5 p)`;
//! * p < 2 %: `As_hat(i) = 1.05 * As_hat(i-1)`;
//! * otherwise As_hat is held.
//!
//! The draft runs it each time a loss report arrives. Ours is the transport-wide feedback,
//! pooled until it covers at least 20 packets (WebRTC's minimum for a loss fraction; our
//! choice, so that a report of three packets with one lost is not a 33 % loss).
//! As_hat is kept at or below the delay-based A_hat (the draft's section 6 bounds the send
//! rate by A_hat; WebRTC's "delay-based limit"), so the target `min(A_hat, As_hat)` is As_hat.
//! Without losses As_hat climbs 5 % per report (20 times a second at 50 ms feedback) and so
//! meets A_hat at once: the delay-based controller sets the pace; with more than 10 % lost
//! As_hat falls below it. (Pooling reports over a whole second instead, as RTCP receiver
//! reports would, made the 5 % a second the binding limit on a free link: tried, 347 against
//! 404 kbit/s after 4 s from 300.)

pub const LOW_LOSS: f64 = 0.02;
pub const HIGH_LOSS: f64 = 0.10;
pub const INCREASE: f64 = 1.05;
pub const REPORT_PACKETS: u64 = 20;

/// Section 6's rule on one report's loss fraction.
pub fn next_rate(rate_bps: f64, loss: f64) -> f64 {
    if loss > HIGH_LOSS {
        rate_bps * (1.0 - 0.5 * loss)
    } else if loss < LOW_LOSS {
        rate_bps * INCREASE
    } else {
        rate_bps
    }
}

#[derive(Clone, Debug)]
pub struct LossBased {
    /// As_hat, bit/s.
    pub rate_bps: f64,
    expected: u64,
    lost: u64,
    /// The loss fraction of the last report applied.
    pub last_loss: f64,
}

impl LossBased {
    pub fn new(start_bps: f64) -> Self {
        LossBased { rate_bps: start_bps, expected: 0, lost: 0, last_loss: 0.0 }
    }

    /// Adds one feedback's packets (`expected` covered, `lost` of them missing); applies the
    /// rule when the pooled report covers 20 packets. Returns As_hat, bounded by
    /// `delay_based_bps`.
    pub fn on_feedback(&mut self, expected: u64, lost: u64, delay_based_bps: f64) -> f64 {
        self.expected += expected;
        self.lost += lost;
        if self.expected >= REPORT_PACKETS {
            self.last_loss = self.lost as f64 / self.expected as f64;
            self.rate_bps = next_rate(self.rate_bps, self.last_loss);
            self.expected = 0;
            self.lost = 0;
        }
        self.rate_bps = self.rate_bps.min(delay_based_bps);
        self.rate_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_has_the_drafts_thresholds() {
        assert_eq!(next_rate(1e6, 0.0), 1.05e6);
        assert_eq!(next_rate(1e6, 0.0199), 1.05e6);
        assert_eq!(next_rate(1e6, 0.02), 1e6, "2 % exactly holds");
        assert_eq!(next_rate(1e6, 0.05), 1e6);
        assert_eq!(next_rate(1e6, 0.10), 1e6, "10 % exactly holds");
        assert!((next_rate(1e6, 0.2) - 0.9e6).abs() < 1e-6);
        assert!((next_rate(1e6, 0.5) - 0.75e6).abs() < 1e-6);
    }

    #[test]
    fn reports_pool_twenty_packets_and_stay_under_the_delay_based_rate() {
        let mut l = LossBased::new(1e6);
        // Feedback of 10 packets, 2 lost each: 20 % loss, applied every second report.
        assert_eq!(l.on_feedback(10, 2, 1e7), 1e6);
        assert!((l.on_feedback(10, 2, 1e7) - 0.9e6).abs() < 1e-6);
        assert_eq!(l.last_loss, 0.2);
        assert!((l.on_feedback(10, 2, 1e7) - 0.9e6).abs() < 1e-6);
        assert!((l.on_feedback(10, 2, 1e7) - 0.81e6).abs() < 1e-6);
        // 1 lost in 25: 4 %, held.
        assert!((l.on_feedback(25, 1, 1e7) - 0.81e6).abs() < 1e-6);
        // The delay-based estimate bounds it.
        assert_eq!(l.on_feedback(25, 0, 5e5), 5e5);
    }
}
