//! RED's average queue, after S. Floyd and V. Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1(4), 1993 (F&J), section 4 and Fig. 2:
//! `avg <- (1 - w_q) avg + w_q q` on every arrival, and after an idle period first
//! `avg <- (1 - w_q)^m avg` with `m` the idle time over the transmission time of a typical
//! packet. Shared by RED, RIO, Rb-RED and Rb-RIO, so that the arithmetic (and with it every
//! result) is written once.

use crate::units::Time;

/// RED's average queue with idle-time decay (F&J section 4).
#[derive(Clone, Debug)]
pub(crate) struct QueueAverage {
    w_q: f64,
    avg: f64,
    /// Since when the measured queue has been empty (the decay is accounted up to here).
    idle_since: Option<Time>,
    /// Transmission time of one `mean_pkt_size` packet, F&J's `s`.
    pkt_time: Time,
}

impl QueueAverage {
    pub(crate) fn new(w_q: f64, pkt_time: Time) -> QueueAverage {
        QueueAverage { w_q, avg: 0.0, idle_since: Some(Time::ZERO), pkt_time }
    }

    /// Folds in the instantaneous queue `q` seen by an arrival at `now`.
    pub(crate) fn update(&mut self, now: Time, q: f64) -> f64 {
        if let Some(since) = self.idle_since {
            if self.pkt_time > Time::ZERO {
                let m = (now - since).as_nanos() as f64 / self.pkt_time.as_nanos() as f64;
                self.avg *= (1.0 - self.w_q).powf(m);
            } else {
                self.avg = 0.0;
            }
            // Still idle until a packet is accepted; the decay is accounted up to now.
            self.idle_since = Some(now);
        }
        self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
        self.avg
    }

    /// The measured queue became empty at `now` (keeps an earlier start if already idle).
    pub(crate) fn set_idle(&mut self, now: Time) {
        if self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
    }

    /// A packet counted by this average was accepted.
    pub(crate) fn set_busy(&mut self) {
        self.idle_since = None;
    }

    pub(crate) fn value(&self) -> f64 {
        self.avg
    }

    #[cfg(test)]
    pub(crate) fn force(&mut self, avg: f64) {
        self.avg = avg;
        self.idle_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_decay_is_not_applied_twice_after_a_drop() {
        let mut a = QueueAverage::new(0.002, Time::from_micros(800));
        a.force(10.0);
        a.set_idle(Time::ZERO);
        // Two arrivals on an empty queue, at 40 and 80 ms, neither accepted: 80 ms of idleness
        // in all, 100 packet times (decaying from 0 again at 80 ms would make it 150).
        a.update(Time::from_millis(40), 0.0);
        a.update(Time::from_millis(80), 0.0);
        let w: f64 = 0.002;
        let expect = 10.0 * (1.0 - w).powf(100.0) * (1.0 - w) * (1.0 - w);
        assert!((a.value() - expect).abs() < 1e-9, "{} vs {expect}", a.value());
    }
}
