//! Rb-RED: rate-based RED, after S. De Cnodder, K. Pauwels and O. Elloumi, "A Rate Based RED
//! Mechanism", NOSSDAV 2000 (cited as \[7\] by J. Chung and M. Claypool, "Rate-Based Active Queue
//! Management with Priority Classes for Better Video Transmission", ISCC 2002, cited C&C below).
//!
//! \[7\] is not available to us. C&C section 2 gives only its principle: keep an estimated
//! arrival rate EAR (a weighted average of the incoming rate), compare it with the service
//! rate SR (the link rate) and drop probabilistically when EAR > SR, with a probability
//! "calculated using EAR and SR, adjusted considering the average queue length and the
//! aggressiveness parameter (AP) to keep the average queue within a target range (the middle
//! of the physical queue, by default), and applied with a uniform drop distribution". C&C
//! section 3 adds that AP = 2.5 "instead of 2.0" kept the average queue near 40 packets of a
//! 100-packet buffer. The estimator, the adjustment rule and the defaults below are therefore
//! aqmlab's design; each is chosen so that it satisfies those statements.
//!
//! On every arrival of a packet of `size` bytes at `now`:
//!
//! * **Estimated arrival rate** (the exponential averaging of I. Stoica, S. Shenker and H.
//!   Zhang, "Core-Stateless Fair Queueing", SIGCOMM 1998, section 2.3), with `dt` the time since
//!   the previous arrival and `tau` the time constant:
//!   `EAR <- (1 - e^{-dt/tau}) (8 size / dt) + e^{-dt/tau} EAR`  (bit/s).
//!   For `dt -> 0` the first term tends to `8 size / tau`, which is used for simultaneous
//!   arrivals. Chosen over a fixed-weight EWMA of `size/dt` because the weight grows with the
//!   gap: a packet counts for the time it stands for, so the estimate hardly depends on how
//!   the bytes are cut into packets or spaced (CSFQ's argument; for Poisson arrivals its mean
//!   is high by only about `1/(2 lambda tau)`), it decays properly over silences, and it is
//!   exact for a constant rate (the fixed point of the update with constant `size/dt = r` is
//!   `r`). Chosen over TSW's sliding window (Clark and Fang 1998) because it is the same single
//!   multiply-add with a clean time-constant meaning. Every arrival counts, dropped or not: it
//!   is the *offered* rate that is compared with SR.
//!   Default `tau` = 100 ms: much longer than a packet time (0.32 ms for 1000 B at 25 Mbit/s;
//!   the relative noise of the estimate is about `1/sqrt(2 lambda tau)`, 4 % for 312 packets
//!   per `tau`), and about one round-trip time (44-122 ms in the C&C scenario), so that TCP's
//!   once-per-RTT window bursts are averaged out while a load change (flows joining) is still
//!   followed within a few RTTs.
//! * **Average queue**, as RED's (Floyd and Jacobson 1993, section 4, see `red.rs`):
//!   `avg <- (1 - w_q) avg + w_q q`, after an idle period first `avg <- (1 - w_q)^m avg`, `m` =
//!   idle time / transmission time of a `mean_pkt_size` packet (`shared::queue_average`, which
//!   RED and RIO use too). The idle clock restarts at each decay, so an arrival that is dropped
//!   while the queue is empty does not make the next arrival decay the same idle time twice.
//! * **Rate-based probability**: when `EAR > SR`, `P = (EAR - SR) / EAR`. Dropping that fraction
//!   of the arrivals brings the accepted rate `EAR (1 - P)` down to exactly SR. No drop at all
//!   while `EAR <= SR`.
//! * **Queue adjustment by AP**:
//!   `P_adj = min(1, P * AP * avg / (2 target))`, `target` defaulting to half the physical
//!   limit. At a steady overload the queue is stable only where the accepted rate equals SR,
//!   i.e. where `P_adj = P`: the average queue settles at `q* = 2 target / AP`. AP = 2, the
//!   default of \[7\] (C&C: "2.5 instead of 2.0"), holds the average at the target; AP = 2.5
//!   holds it at 0.8 of the target, 40 of 100 packets, which is exactly the C&C observation. A
//!   larger AP is more aggressive: it drops more at any given queue. When the average is below
//!   `q*` fewer packets are dropped than the excess rate (the queue grows), above `q*` more
//!   (it drains). While the average queue is 0 nothing is dropped: a rate excess that has not
//!   built a queue costs nothing yet.
//!   The seemingly natural `P (avg/target)^AP` and `P AP^{(avg - target)/target}` were rejected:
//!   both equal `P` at `avg = target` whatever AP, so the queue would settle at the target for
//!   every AP, and AP would change only how stiffly it is held there, contradicting C&C.
//! * **Uniform spreading**, RED's count method (F&J section 7): `count` arrivals since the last
//!   drop, `p_a = p_b / (1 - count p_b)`. With `p_b = 1/(n+1)` this is the hazard `1/(n+1-j)`
//!   at the `j`-th arrival after a drop, so the gap between drops is uniform on 1 .. n when `n`
//!   is an integer, mean `(n+1)/2` = `1/(2 p_b)`: the long-run drop fraction is `2 p_b`, not
//!   `p_b` (see `red.rs`'s count test). RED's p_b is only a control signal, but `P_adj` is meant
//!   as the fraction of arrivals to drop, so `p_b` is chosen to make the mean gap exactly
//!   `g = 1/P_adj` arrivals. For a real `n` the gap is uniform on 1 .. m (probability `1/n`
//!   each) with the rest of the mass at `m + 1`, `m = ceil(n) - 1`, mean `(m+1)(n - m/2)/n`;
//!   solving for `n`: `m = ceil(2g) - 2`, `n = m (m+1) / (2 (m + 1 - g))`, `p_b = 1/(n+1)`.
//!   That is `p_b = P_adj / 2` whenever `2 / P_adj` is an integer, and differs from it only for
//!   large `P_adj` (0.4 instead of 0.375 for `P_adj` = 0.75); `P_adj = 1` drops every arrival.
//!
//! Drops decided by the rate test are `Early`; an arrival that passes it but does not fit in
//! the physical limit is an `Overflow` drop. With a byte limit the queue (`avg`, `target`) is
//! measured in `mean_pkt_size` packets, as in RED's byte mode.

use super::shared::drop_spreader::DropSpreader;
use super::shared::rate_based::{adjust_probability, AveragedFifo, RateBasedConfig};
use super::shared::rate_estimator::RateEstimator;
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Rate, Time};

/// Rb-RED's parameters: the ones Rb-RIO takes too ([`RateBasedConfig`]).
pub type RbRedConfig = RateBasedConfig;

pub struct RbRed {
    cfg: RbRedConfig,
    fifo: AveragedFifo,
    ear: RateEstimator,
    /// Service rate in bit/s (infinite for an infinitely fast link: never early-drops).
    sr: f64,
    target: f64,
    spread: DropSpreader,
}

impl RbRed {
    pub fn new(cfg: RbRedConfig, link_rate: Rate) -> RbRed {
        let sr = if link_rate.0 == 0 { f64::INFINITY } else { link_rate.as_bps_f64() };
        RbRed {
            ear: RateEstimator::new(Time(cfg.time_constant_ns)),
            fifo: AveragedFifo::new(cfg.limit, cfg.w_q, cfg.mean_pkt_size, link_rate),
            target: cfg.target(),
            spread: DropSpreader::new(),
            sr,
            cfg,
        }
    }

    /// The estimated arrival rate as of the last arrival, bit/s.
    pub fn estimated_arrival_rate(&self) -> f64 {
        self.ear.rate()
    }

    /// The adjusted drop fraction for an estimated arrival rate `ear` and the current average.
    fn drop_fraction(&self, ear: f64) -> f64 {
        if ear <= self.sr {
            return 0.0;
        }
        let p = (ear - self.sr) / ear;
        adjust_probability(p, self.fifo.average(), self.target, self.cfg.aggressiveness)
    }
}

impl Qdisc for RbRed {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        let ear = self.ear.update(pkt.size, now);
        self.fifo.observe_arrival(now);
        let p = self.drop_fraction(ear);
        if self.spread.coin(p, rng) {
            return Verdict::Dropped(DropReason::Early);
        }
        self.fifo.admit(pkt)
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        self.fifo.pop(now).map(Dequeued::unmarked)
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn average_queue(&self) -> Option<f64> {
        Some(self.fifo.average())
    }
    fn kind(&self) -> &'static str {
        "rb_red"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::shared::queue_model::{run, Source};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;
    use crate::units::Limit;

    const LINK: Rate = Rate::mbps(10);

    fn cbr(rate_bps: f64) -> Source {
        Source { rate_bps, size: 1000, class: 0, poisson: false }
    }

    #[test]
    fn no_drops_while_ear_is_below_sr() {
        // Evenly spaced 80 % load through the queue model: nothing is ever dropped.
        let mut q = Queue::new(Box::new(RbRed::new(RbRedConfig::default(), LINK)));
        let t = run(&mut q, LINK, &[cbr(8e6)], Time::from_secs(20), Time::ZERO, 1);
        assert_eq!(q.stats().total_dropped_packets(), 0);
        assert!(t.arrivals[0] > 19_000);
        let mut r = RbRed::new(RbRedConfig::default(), LINK);
        r.fifo.force_average(90.0);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..20_000u64 {
            // 9.9 Mbit/s: just under SR, with a nearly full average queue.
            let now = Time::from_secs_f64(i as f64 * 8000.0 / 9.9e6);
            assert_eq!(r.enqueue(pkt(i, 0, 1000), now, &mut rng, &mut ev), Verdict::Enqueued, "packet {i}");
            r.pop_packet(now);
            r.fifo.force_average(90.0);
        }
    }

    #[test]
    fn steady_overload_at_the_target_drops_the_excess_fraction() {
        // Average held at the target (AP 2 gives factor 1): the drop fraction must be
        // (EAR - SR) / EAR for several overloads.
        for &load in &[1.25, 2.0, 4.0] {
            let mut r = RbRed::new(RbRedConfig { w_q: 1e-9, ..RbRedConfig::default() }, LINK);
            let mut rng = SimRng::stream(7, "t");
            let mut ev = Vec::new();
            let gap = 8000.0 / (load * 1e7);
            let (mut n, mut drops) = (0u64, 0u64);
            for i in 0..100_000u64 {
                let now = Time::from_secs_f64(i as f64 * gap);
                r.fifo.force_average(50.0);
                let v = r.enqueue(pkt(i, 0, 1000), now, &mut rng, &mut ev);
                r.pop_packet(now);
                if now >= Time::from_secs(1) {
                    n += 1;
                    drops += matches!(v, Verdict::Dropped(DropReason::Early)) as u64;
                }
            }
            let expect = (load - 1.0) / load;
            let frac = drops as f64 / n as f64;
            assert!((frac - expect).abs() < 0.02 * expect + 0.002, "load {load}: {frac} vs {expect}");
        }
    }

    #[test]
    fn queue_model_at_default_ap_holds_the_target_and_drops_the_excess() {
        let mut q = Queue::new(Box::new(RbRed::new(RbRedConfig::default(), LINK)));
        let t = run(&mut q, LINK, &[cbr(12.5e6)], Time::from_secs(60), Time::from_secs(20), 1);
        let frac = t.drop_fraction(0);
        println!("rb_red AP 2.0 at 1.25x: avg {:.2} queue {:.2} drops {:.4}", t.mean_avg, t.mean_queue, frac);
        assert!((t.mean_avg - 50.0).abs() < 3.0, "avg {}", t.mean_avg);
        assert!((frac - 0.2).abs() < 0.01, "drop fraction {frac}");
        assert_eq!(q.stats().dropped_packets[DropReason::Overflow as usize], 0, "{:?}", q.stats());
    }

    #[test]
    fn larger_ap_holds_the_average_queue_lower() {
        // C&C section 3: AP 2.5 instead of 2.0 kept the average queue near 40 of 100 packets.
        // Fixed 25 % overload into the discipline, departures at the link rate, Poisson arrivals.
        let settle = |ap: f64| {
            let cfg = RbRedConfig { aggressiveness: ap, ..RbRedConfig::default() };
            let mut q = Queue::new(Box::new(RbRed::new(cfg, LINK)));
            let src = Source { poisson: true, ..cbr(12.5e6) };
            let t = run(&mut q, LINK, &[src], Time::from_secs(60), Time::from_secs(20), 3);
            println!(
                "rb_red AP {ap}: avg queue {:.2} (instantaneous {:.2}), drop fraction {:.4}",
                t.mean_avg,
                t.mean_queue,
                t.drop_fraction(0)
            );
            t.mean_avg
        };
        let a20 = settle(2.0);
        let a25 = settle(2.5);
        let a30 = settle(3.0);
        assert!(a25 < a20 - 7.0 && a30 < a25 - 4.0, "AP 2.0 {a20}, 2.5 {a25}, 3.0 {a30}");
        assert!((a20 - 50.0).abs() < 4.0, "AP 2.0 settles at {a20}");
        assert!((a25 - 40.0).abs() < 4.0, "AP 2.5 settles at {a25}");
    }

    #[test]
    fn byte_limit_measures_the_queue_in_mean_packets() {
        let cfg = RbRedConfig { limit: Limit::Bytes(100_000), w_q: 1.0, ..RbRedConfig::default() };
        assert_eq!(cfg.target(), 50.0);
        let mut r = RbRed::new(cfg, LINK);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..4 {
            r.enqueue(pkt(i, 0, 500), Time::ZERO, &mut rng, &mut ev);
        }
        assert!((r.fifo.average() - 1.5).abs() < 1e-12, "{}", r.fifo.average());
    }

    #[test]
    fn physical_limit_is_an_overflow() {
        let cfg = RbRedConfig { limit: Limit::Packets(3), ..RbRedConfig::default() };
        let mut q = Queue::new(Box::new(RbRed::new(cfg, LINK)));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..3 {
            assert_eq!(q.enqueue(pkt(i, 0, 1000), Time::from_secs(i), &mut rng).verdict, Verdict::Enqueued);
        }
        assert_eq!(q.enqueue(pkt(3, 0, 1000), Time::from_secs(3), &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let c = RbRedConfig::default();
        assert!(c.validate().is_ok());
        assert!(RbRedConfig { limit: Limit::Packets(0), ..c.clone() }.validate().unwrap_err().starts_with("limit"));
        assert!(RbRedConfig { time_constant_ns: 0, ..c.clone() }.validate().unwrap_err().starts_with("time_constant_ns"));
        for ap in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(RbRedConfig { aggressiveness: ap, ..c.clone() }.validate().unwrap_err().starts_with("aggressiveness"));
        }
        for t in [0.0, 101.0, f64::NAN] {
            assert!(RbRedConfig { target_queue: Some(t), ..c.clone() }.validate().unwrap_err().starts_with("target_queue"));
        }
        assert!(RbRedConfig { target_queue: Some(100.0), ..c.clone() }.validate().is_ok());
        assert!(RbRedConfig { w_q: 0.0, ..c.clone() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RbRedConfig { w_q: 1.5, ..c.clone() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RbRedConfig { mean_pkt_size: 0, ..c.clone() }.validate().unwrap_err().starts_with("mean_pkt_size"));
    }
}
