//! The network congestion control: the reference window ref_wnd, in bytes
//! (draft-johansson-ccwg-rfc8298bis-screamv2, sections "Congestion Detection: Delay, Data Unit
//! Loss and ECN-CE" and "Reference Window Update").
//!
//! Reduction, at most once per min(VIRTUAL_RTT, s_rtt), for the first of:
//! * loss since the last reaction: ref_wnd x BETA_LOSS;
//! * CE since the last reaction: L4S mode ref_wnd x (1 - l4s_alpha / 2 / max(1, s_rtt /
//!   VIRTUAL_RTT)), the back-off scaled down near the last known maximum ref_wnd_i when qdelay <
//!   qdelay_target / 4; classic ECN mode ref_wnd x BETA_ECN;
//! * qdelay_avg > qdelay_target / 2 (a "virtual CE"): the L4S rule with
//!   l4s_alpha_v = (qdelay_avg - qdelay_target / 2) / (qdelay_target / 2) within [0, 1].
//!
//! Increase on every report by the bytes newly acknowledged and not CE-marked, times
//! MSS / ref_wnd (one MSS per RTT), times 1 + MUL_INCREASE_FACTOR x ref_wnd / MSS once
//! POST_CONGESTION_DELAY_RTT RTTs have passed since congestion, slowed near ref_wnd_i, and only
//! while ref_wnd stays within MSS + BYTES_IN_FLIGHT_HEAD_ROOM x the recent bytes in flight and
//! the target is below its maximum.
//!
//! The competing-flows compensation (the draft's `adjust_qdelay_target`, which raises
//! qdelay_target up to QDELAY_TARGET_HI against loss-based flows) is not built: qdelay_target
//! stays QDELAY_TARGET_LO.

/// Target queue delay, s (draft, "Reference Window Update").
pub const QDELAY_TARGET_LO: f64 = 0.06;
/// Smallest reference window, bytes (same section).
pub const MIN_REF_WND: f64 = 3000.0;
/// Room of ref_wnd above the bytes in flight (same section).
pub const BYTES_IN_FLIGHT_HEAD_ROOM: f64 = 1.5;
/// Scale on a loss event (same section).
pub const BETA_LOSS: f64 = 0.7;
/// Scale on a classic ECN-CE event (same section).
pub const BETA_ECN: f64 = 0.8;
/// RTTs after congestion before multiplicative increase is back in full (same section).
pub const POST_CONGESTION_DELAY_RTT: f64 = 100.0;
/// Multiplicative increase per RTT, as a fraction of ref_wnd (same section).
pub const MUL_INCREASE_FACTOR: f64 = 0.02;
/// Virtual RTT, s (same section).
pub const VIRTUAL_RTT: f64 = 0.025;
/// Smallest scale of increase and back-off by the delay variation (same section).
pub const MIN_QUEUE_DELAY_DEV_SCALE: f64 = 0.1;

/// What congested, for the rate table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    None = 0,
    Loss = 1,
    Ce = 2,
    VirtualCe = 3,
}

/// What one report tells the reference window.
#[derive(Clone, Copy, Debug)]
pub struct Signals {
    pub now: f64,
    pub s_rtt: f64,
    pub loss: bool,
    pub ce: bool,
    pub l4s_alpha: f64,
    pub qdelay: f64,
    pub qdelay_avg: f64,
    /// The delay-variation scale (see `QueueDelay::dev_scale`).
    pub dev_scale: f64,
    pub bytes_newly_acked: f64,
    pub bytes_newly_acked_ce: f64,
    /// max(max_bytes_in_flight, max_bytes_in_flight_prev).
    pub max_bytes_in_flight: f64,
    pub max_bytes_in_flight_prev: f64,
    pub target_at_max: bool,
}

#[derive(Clone, Debug)]
pub struct RefWnd {
    pub ref_wnd: f64,
    pub ref_wnd_i: f64,
    pub mss: f64,
    pub l4s: bool,
    pub qdelay_target: f64,
    loss_pending: bool,
    ce_pending: bool,
    last_congestion_detected: Option<f64>,
    last_reaction: Option<f64>,
    last_ref_wnd_i_update: Option<f64>,
}

impl RefWnd {
    pub fn new(mss: f64, l4s: bool) -> RefWnd {
        RefWnd {
            ref_wnd: MIN_REF_WND,
            ref_wnd_i: 1.0,
            mss,
            l4s,
            qdelay_target: QDELAY_TARGET_LO,
            loss_pending: false,
            ce_pending: false,
            last_congestion_detected: None,
            last_reaction: None,
            last_ref_wnd_i_update: None,
        }
    }

    /// min(1, MSS / ref_wnd).
    pub fn ratio(&self) -> f64 {
        (self.mss / self.ref_wnd).min(1.0)
    }

    /// Slows increase and back-off near ref_wnd_i: (8 (ref_wnd - ref_wnd_i) / ref_wnd_i)^2
    /// within [0.1, 1].
    pub fn scl(&self) -> f64 {
        let t = 8.0 * (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i;
        (t * t).clamp(0.1, 1.0)
    }

    /// Applies one report: the reduction (if due), then the increase. Returns what reduced it.
    pub fn update(&mut self, s: &Signals) -> Reaction {
        let reaction = self.reduce(s);
        self.increase(s);
        reaction
    }

    fn reduce(&mut self, s: &Signals) -> Reaction {
        let scl = self.scl();
        self.loss_pending |= s.loss;
        self.ce_pending |= s.ce;
        if s.loss || s.ce {
            self.last_congestion_detected = Some(s.now);
        }
        let since_reaction = self.last_reaction.map_or(f64::INFINITY, |t| s.now - t);
        if since_reaction < VIRTUAL_RTT.min(s.s_rtt) {
            return Reaction::None;
        }
        let half = self.qdelay_target / 2.0;
        let reaction = if self.loss_pending {
            Reaction::Loss
        } else if self.ce_pending {
            Reaction::Ce
        } else if s.qdelay_avg > half {
            Reaction::VirtualCe
        } else {
            return Reaction::None;
        };
        if self.last_ref_wnd_i_update.is_none_or(|t| s.now - t > 10.0 * s.s_rtt) {
            self.last_ref_wnd_i_update = Some(s.now);
            self.ref_wnd_i = self.ref_wnd;
        }
        let rtt_scale = (s.s_rtt / VIRTUAL_RTT).max(1.0);
        match reaction {
            Reaction::Loss => self.ref_wnd *= BETA_LOSS,
            Reaction::Ce if self.l4s => {
                let mut backoff = s.l4s_alpha / 2.0 / rtt_scale;
                if s.qdelay < self.qdelay_target * 0.25 {
                    backoff *= scl.max(0.25);
                    backoff *= s.dev_scale;
                }
                if since_reaction > 100.0 * VIRTUAL_RTT.max(s.s_rtt) {
                    // Long uncongested (source-limited): bring ref_wnd back to what was in flight.
                    self.ref_wnd = self.ref_wnd.min(s.max_bytes_in_flight_prev.max(MIN_REF_WND));
                }
                self.ref_wnd *= 1.0 - backoff;
            }
            Reaction::Ce => self.ref_wnd *= BETA_ECN,
            _ => {
                let alpha_v = ((s.qdelay_avg - half) / half).clamp(0.0, 1.0);
                self.ref_wnd *= 1.0 - alpha_v / 2.0 / rtt_scale;
            }
        }
        self.ref_wnd = self.ref_wnd.max(MIN_REF_WND);
        self.loss_pending = false;
        self.ce_pending = false;
        self.last_reaction = Some(s.now);
        reaction
    }

    fn increase(&mut self, s: &Signals) {
        let scl = self.scl();
        let post = match self.last_congestion_detected {
            None => 1.0,
            Some(t) => ((s.now - t) / (POST_CONGESTION_DELAY_RTT * VIRTUAL_RTT.max(s.s_rtt))).clamp(0.0, 1.0),
        };
        let mut inc = (s.bytes_newly_acked - s.bytes_newly_acked_ce).max(0.0) * self.ratio();
        inc *= (s.s_rtt / VIRTUAL_RTT).min(1.0);
        inc *= scl.max(0.25);
        inc *= s.dev_scale;
        let mut mul = 1.0 + MUL_INCREASE_FACTOR * self.ref_wnd / self.mss;
        if mul > 1.0 {
            mul = 1.0 + (mul - 1.0) * post * scl;
        }
        inc *= mul;
        let max_allowed = self.mss + s.max_bytes_in_flight.max(s.max_bytes_in_flight_prev) * BYTES_IN_FLIGHT_HEAD_ROOM;
        if self.ref_wnd + inc <= max_allowed && !s.target_at_max {
            self.ref_wnd += inc;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(now: f64) -> Signals {
        Signals {
            now,
            s_rtt: 0.05,
            loss: false,
            ce: false,
            l4s_alpha: 0.0,
            qdelay: 0.0,
            qdelay_avg: 0.0,
            dev_scale: 1.0,
            bytes_newly_acked: 0.0,
            bytes_newly_acked_ce: 0.0,
            max_bytes_in_flight: 1e9,
            max_bytes_in_flight_prev: 1e9,
            target_at_max: false,
        }
    }

    fn wnd(bytes: f64, l4s: bool) -> RefWnd {
        let mut w = RefWnd::new(1000.0, l4s);
        w.ref_wnd = bytes;
        w
    }

    #[test]
    fn loss_scales_by_beta_loss_once_per_rtt() {
        let mut w = wnd(20_000.0, false);
        assert_eq!(w.update(&Signals { loss: true, ..quiet(1.0) }), Reaction::Loss);
        assert!((w.ref_wnd - 14_000.0).abs() < 1e-9, "{}", w.ref_wnd);
        // 10 ms later, within min(VIRTUAL_RTT, s_rtt) = 25 ms: no second cut.
        assert_eq!(w.update(&Signals { loss: true, ..quiet(1.01) }), Reaction::None);
        assert!((w.ref_wnd - 14_000.0).abs() < 1e-9);
        // The loss seen then is acted on at the next chance.
        assert_eq!(w.update(&quiet(1.03)), Reaction::Loss);
        assert!((w.ref_wnd - 9_800.0).abs() < 1e-9);
    }

    #[test]
    fn classic_ce_scales_by_beta_ecn_and_l4s_by_half_alpha_over_the_rtt_ratio() {
        let mut c = wnd(20_000.0, false);
        c.update(&Signals { ce: true, l4s_alpha: 0.5, ..quiet(1.0) });
        assert!((c.ref_wnd - 16_000.0).abs() < 1e-9);
        // L4S, s_rtt = 50 ms (twice VIRTUAL_RTT), qdelay not small: back-off 0.5 / 2 / 2.
        let mut l = wnd(20_000.0, true);
        l.update(&Signals { ce: true, l4s_alpha: 0.5, qdelay: 0.02, ..quiet(1.0) });
        assert!((l.ref_wnd - 20_000.0 * 0.875).abs() < 1e-9, "{}", l.ref_wnd);
    }

    #[test]
    fn queue_delay_above_half_the_target_backs_off_linearly() {
        // qdelay_avg 45 ms: alpha_v = (45 - 30) / 30 = 0.5; s_rtt 25 ms: back-off 0.25.
        let mut w = wnd(20_000.0, false);
        let r = w.update(&Signals { qdelay_avg: 0.045, s_rtt: 0.025, ..quiet(1.0) });
        assert_eq!(r, Reaction::VirtualCe);
        assert!((w.ref_wnd - 15_000.0).abs() < 1e-9, "{}", w.ref_wnd);
        // At or below 30 ms nothing happens.
        let mut q = wnd(20_000.0, false);
        assert_eq!(q.update(&Signals { qdelay_avg: 0.030, ..quiet(1.0) }), Reaction::None);
        assert_eq!(q.ref_wnd, 20_000.0);
    }

    #[test]
    fn never_below_min_ref_wnd() {
        let mut w = wnd(3_500.0, false);
        w.update(&Signals { loss: true, ..quiet(1.0) });
        assert_eq!(w.ref_wnd, MIN_REF_WND);
    }

    #[test]
    fn increase_is_one_mss_per_window_plus_two_percent_when_uncongested() {
        // ref_wnd 10 MSS, a whole window acknowledged, never congested, s_rtt >= VIRTUAL_RTT:
        // + 1000 x (1 + 0.02 x 10) = 1200 bytes.
        let mut w = wnd(10_000.0, false);
        w.update(&Signals { bytes_newly_acked: 10_000.0, ..quiet(1.0) });
        assert!((w.ref_wnd - 11_200.0).abs() < 1e-9, "{}", w.ref_wnd);
        // CE-marked bytes do not count.
        let mut c = wnd(10_000.0, false);
        c.ref_wnd_i = 1.0;
        c.increase(&Signals { bytes_newly_acked: 10_000.0, bytes_newly_acked_ce: 5_000.0, ..quiet(1.0) });
        assert!((c.ref_wnd - 10_600.0).abs() < 1e-9, "{}", c.ref_wnd);
    }

    #[test]
    fn increase_is_additive_right_after_congestion_and_capped_by_bytes_in_flight() {
        let mut w = wnd(10_000.0, false);
        w.update(&Signals { loss: true, ..quiet(1.0) }); // 7000, ref_wnd_i = 10000
        let before = w.ref_wnd;
        // scl = (8 x (7000 - 10000) / 10000)^2 = 5.76 -> 1; post = 0: + 7000 x 1000 / 7000.
        w.update(&Signals { bytes_newly_acked: 7_000.0, ..quiet(1.0) });
        assert!((w.ref_wnd - before - 1000.0).abs() < 1e-9, "{}", w.ref_wnd - before);
        // Little in flight: MSS + 1.5 x 4000 = 7000 < 8000 + increment: held.
        let mut h = wnd(8_000.0, false);
        h.update(&Signals { bytes_newly_acked: 8_000.0, max_bytes_in_flight: 4_000.0, max_bytes_in_flight_prev: 4_000.0, ..quiet(1.0) });
        assert_eq!(h.ref_wnd, 8_000.0);
        // At the maximum target: held.
        let mut m = wnd(8_000.0, false);
        m.update(&Signals { bytes_newly_acked: 8_000.0, target_at_max: true, ..quiet(1.0) });
        assert_eq!(m.ref_wnd, 8_000.0);
    }
}
