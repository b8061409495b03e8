//! One-way delay, queue delay and smoothed RTT as SCReAMv2 reads them from feedback
//! (draft-johansson-ccwg-rfc8298bis-screamv2, section "Detecting Increased Queue Delay"):
//!
//! * qdelay: each acknowledged packet's one-way delay less the base delay, the smallest one-way
//!   delay seen, kept as RFC 6817 (LEDBAT) section 3.4.2 keeps it: one minimum per minute over
//!   the last `BASE_HISTORY` minutes. The simulator's clocks agree, so no clock-drift
//!   compensation (the draft's "Clock drift issues and remedies") is needed or built.
//! * qdelay_avg: slow attack, fast decay (drops to qdelay at once, rises with gain
//!   QDELAY_AVG_G), updated at most every min(VIRTUAL_RTT, s_rtt).
//! * qdelay_dev_norm: how much qdelay varies, normalized to QDELAY_DEV_NORM (the draft's
//!   optional `calculate_qdelay_norm`), which restricts the reference window's growth and
//!   back-off and sets the send window's overhead.
//! * s_rtt: RFC 6298 section 2's smoothing (gain 1/8) of each report's RTT sample.

use super::ref_wnd::VIRTUAL_RTT;
use aqmlab_core::Time;
use std::collections::VecDeque;

/// EWMA gain of qdelay_avg (draft, "Detecting Increased Queue Delay").
pub const QDELAY_AVG_G: f64 = 1.0 / 4.0;
/// EWMA gain of qdelay_dev_norm (same section).
pub const QDELAY_DEV_AVG_G: f64 = 1.0 / 64.0;
/// Normalization of qdelay_dev_norm, s (same section).
pub const QDELAY_DEV_NORM: f64 = 0.025;
/// Base-delay history: one minimum per minute over this many minutes (RFC 6817 section 3.4.2
/// names BASE_HISTORY and recommends 10).
pub const BASE_HISTORY: usize = 10;
/// RTT smoothing gain (RFC 6298 section 2, alpha).
pub const RTT_G: f64 = 1.0 / 8.0;

#[derive(Clone, Debug)]
pub struct QueueDelay {
    /// (minute index, smallest one-way delay in it, s), oldest first.
    base: VecDeque<(u64, f64)>,
    /// The last sample, s.
    pub qdelay: f64,
    pub qdelay_avg: f64,
    pub qdelay_dev_norm: f64,
    last_avg_update: Option<Time>,
    /// Smoothed RTT, s (None before the first sample).
    pub s_rtt: Option<f64>,
}

impl Default for QueueDelay {
    fn default() -> Self {
        QueueDelay { base: VecDeque::new(), qdelay: 0.0, qdelay_avg: 0.0, qdelay_dev_norm: 0.0, last_avg_update: None, s_rtt: None }
    }
}

impl QueueDelay {
    /// A packet sent at `sent` was received at `arrived`: updates the base delay and qdelay.
    pub fn on_owd(&mut self, sent: Time, arrived: Time) {
        let owd = arrived.saturating_sub(sent).as_secs_f64();
        let minute = arrived.as_nanos() / 60_000_000_000;
        match self.base.back_mut() {
            Some((m, d)) if *m == minute => *d = d.min(owd),
            _ => {
                self.base.push_back((minute, owd));
                if self.base.len() > BASE_HISTORY {
                    self.base.pop_front();
                }
            }
        }
        let base = self.base.iter().map(|&(_, d)| d).fold(f64::INFINITY, f64::min);
        self.qdelay = owd - base;
    }

    /// One RTT sample, s (RFC 6298 section 2: the first sets s_rtt, later ones move it by 1/8).
    pub fn on_rtt(&mut self, rtt: f64) {
        self.s_rtt = Some(match self.s_rtt {
            None => rtt,
            Some(s) => (1.0 - RTT_G) * s + RTT_G * rtt,
        });
    }

    /// The threshold of qdelay_dev_norm for this reference window ratio (MSS / ref_wnd).
    pub fn dev_norm_th(ref_wnd_ratio: f64) -> f64 {
        (0.1 * (1.0 - ref_wnd_ratio / 0.1)).max(0.05)
    }

    /// How much the delay variation restricts the reference window's increase and L4S
    /// back-off: (th - qdelay_dev_norm) / th, at least MIN_QUEUE_DELAY_DEV_SCALE.
    pub fn dev_scale(&self, ref_wnd_ratio: f64) -> f64 {
        let th = Self::dev_norm_th(ref_wnd_ratio);
        ((th - self.qdelay_dev_norm) / th).max(super::ref_wnd::MIN_QUEUE_DELAY_DEV_SCALE)
    }

    /// Updates qdelay_avg and qdelay_dev_norm if min(VIRTUAL_RTT, s_rtt) has passed since the
    /// last update.
    pub fn update_avg(&mut self, now: Time, ref_wnd_ratio: f64) {
        let every = VIRTUAL_RTT.min(self.s_rtt.unwrap_or(VIRTUAL_RTT));
        if self.last_avg_update.is_some_and(|t| now.saturating_sub(t).as_secs_f64() < every) {
            return;
        }
        self.last_avg_update = Some(now);
        self.qdelay_avg =
            if self.qdelay < self.qdelay_avg { self.qdelay } else { QDELAY_AVG_G * self.qdelay + (1.0 - QDELAY_AVG_G) * self.qdelay_avg };
        let th = Self::dev_norm_th(ref_wnd_ratio);
        let x = ((self.qdelay - QDELAY_DEV_NORM / 4.0) / QDELAY_DEV_NORM).clamp(0.0, th * 1.5);
        self.qdelay_dev_norm = (1.0 - QDELAY_DEV_AVG_G) * self.qdelay_dev_norm + QDELAY_DEV_AVG_G * x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdelay_is_the_owd_above_the_smallest_seen() {
        let mut q = QueueDelay::default();
        q.on_owd(Time::ZERO, Time::from_millis(30));
        assert_eq!(q.qdelay, 0.0);
        q.on_owd(Time::from_millis(10), Time::from_millis(60));
        assert!((q.qdelay - 0.020).abs() < 1e-12, "{}", q.qdelay);
        // A smaller delay lowers the base.
        q.on_owd(Time::from_millis(100), Time::from_millis(125));
        assert_eq!(q.qdelay, 0.0);
    }

    #[test]
    fn the_base_forgets_minutes_older_than_the_history() {
        let mut q = QueueDelay::default();
        q.on_owd(Time::ZERO, Time::from_millis(10));
        for m in 1..=10 {
            let t = Time::from_secs(60 * m);
            q.on_owd(t, t + Time::from_millis(50));
        }
        // Minute 0 (10 ms) has left the 10-minute history: the base is 50 ms.
        assert_eq!(q.qdelay, 0.0);
    }

    #[test]
    fn qdelay_avg_falls_at_once_and_rises_by_a_quarter() {
        let mut q = QueueDelay { qdelay: 0.040, ..QueueDelay::default() };
        q.update_avg(Time::ZERO, 0.05);
        assert!((q.qdelay_avg - 0.010).abs() < 1e-12);
        // Too soon (VIRTUAL_RTT = 25 ms): unchanged.
        q.update_avg(Time::from_millis(10), 0.05);
        assert!((q.qdelay_avg - 0.010).abs() < 1e-12);
        q.update_avg(Time::from_millis(25), 0.05);
        assert!((q.qdelay_avg - (0.25 * 0.040 + 0.75 * 0.010)).abs() < 1e-12);
        q.qdelay = 0.001;
        q.update_avg(Time::from_millis(50), 0.05);
        assert_eq!(q.qdelay_avg, 0.001);
    }

    #[test]
    fn s_rtt_follows_rfc_6298() {
        let mut q = QueueDelay::default();
        q.on_rtt(0.1);
        q.on_rtt(0.18);
        assert!((q.s_rtt.unwrap() - 0.11).abs() < 1e-12);
    }
}
