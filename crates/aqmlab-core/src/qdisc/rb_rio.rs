//! Rb-RIO: rate-based RIO with three priority classes, after J. Chung and M. Claypool,
//! "Rate-Based Active Queue Management with Priority Classes for Better Video Transmission",
//! ISCC 2002 (C&C), section 2 and Figure 2, itself after the class extension sketched in
//! De Cnodder, Pauwels and Elloumi's Rb-RED (\[7\], NOSSDAV 2000; see `rb_red.rs`).
//!
//! One FIFO, one estimated arrival rate per class, `EAR1` (class1, lowest) .. `EAR3` (class3,
//! highest), `TEAR = EAR1 + EAR2 + EAR3`, and the service rate SR (the link rate). On every
//! arrival of class `k`, `EARk` is updated with the packet (the CSFQ estimator of `rb_red.rs`,
//! time constant `tau`) and the other two are read as they are, unless their next arrival is
//! overdue (later than the gap `8 size / EARj` their own rate implies), in which case they are
//! read decayed by `e^{-overdue/tau}`: a class that falls silent stops counting within a few
//! `tau` instead of keeping its last rate forever (`RateEstimator::rate_at`). Then:
//!
//! | stage | condition                  | class1              | class2                      | class3              |
//! |-------|----------------------------|---------------------|-----------------------------|---------------------|
//! | (a)   | `TEAR <= SR`               | accept              | accept                      | accept              |
//! | (b)   | `EAR3 + EAR2 <= SR < TEAR` | `(TEAR - SR)/EAR1`  | accept                      | accept              |
//! | (c)   | `EAR3 <= SR < EAR3 + EAR2` | all (Policy)        | `(EAR3 + EAR2 - SR)/EAR2`   | accept              |
//! | (d)   | `SR < EAR3`                | all (Policy)        | all (Policy)                | `(EAR3 - SR)/EAR3`  |
//!
//! A formula is that class's drop probability `P`; "all" drops every packet of the class.
//! Each `P` is in (0, 1] by its stage's condition, and is exactly the fraction of that class
//! that brings the accepted rate down to SR: in every stage the accepted rate is
//! `min(TEAR, SR)`. As in Rb-RED, `P` is then adjusted by the average queue and the
//! aggressiveness parameter, `P_adj = min(1, P AP avg / (2 target))` (the average queue
//! settles at `2 target / AP` under steady overload), and spread uniformly with RED's count
//! method, its `p_b` chosen (about `P_adj / 2`, see `rb_red.rs`) so that the mean gap between
//! drops is `1 / P_adj` arrivals; there is one count per class.
//! Probabilistic drops are `Early`, the "drop all" of a class is `Policy`, and an accepted
//! packet that does not fit in the physical limit is an `Overflow` drop.
//!
//! **Correction of Figure 2.** C&C's Figure 2 reads (condensed, one line per statement):
//!
//! ```text
//! if (EAR(class1) + EAR(class2) + EAR(class1)) <= SR      accept all packets
//! else if (EAR(class3) + EAR(class2)) <= SR               accept class3 and class2,
//!                                                          drop class1 with P = (TEAR - SR)/EAR(class1)
//! else if EAR(class3) <= SR                               accept class3; drop all class1;
//!                                                          drop all class1; drop all class2;
//!                                                          drop class2 with P = (EAR(class3) + EAR(class2) - SR)/EAR(class2)
//! else                                                    drop all class1;
//!                                                          drop class3 with p = (EAR(class3) - SR)/EAR(class3)
//! ```
//!
//! Three evident typos, corrected to the intent the text states ("all incoming packets that
//! belong to a lower priority class are dropped when probabilistically dropping packets from
//! the next priority class"; TEAR is "the sum of all class' EAR"): the first test sums class1
//! twice and omits class3, read as `TEAR <= SR`; the third branch repeats "drop all class1
//! packets" and also says "drop all class2 packets" right before dropping class2
//! probabilistically, read as "drop all class1, class2 with P"; the last branch never mentions
//! class2, read as "drop all class1 and all class2, class3 with P". So every class1 packet is
//! dropped before any class2 packet is, and every class2 packet before any class3 packet.
//!
//! **Classes.** `Packet::class` 1, 2, 3 map to class1, class2, class3. Unclassified packets
//! (class 0) are treated as class3, the most protected: a discipline that meets traffic nobody
//! classified (ACKs on a reverse path, a workload without a classifier) then behaves exactly as
//! Rb-RED instead of policy-dropping it. Values above 3 are also treated as class3.

use super::shared::drop_spreader::DropSpreader;
use super::shared::rate_based::{adjust_probability, AveragedFifo, RateBasedConfig};
use super::shared::rate_estimator::RateEstimator;
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Rate, Time};

/// Rb-RIO's parameters: Rb-RED's ([`RateBasedConfig`]), applied to all three classes.
pub type RbRioConfig = RateBasedConfig;

/// Which branch of (corrected) Figure 2 the rates select.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// (a) `TEAR <= SR`: accept all.
    AcceptAll,
    /// (b) `EAR3 + EAR2 <= SR < TEAR`: class1 dropped with a probability.
    DropClass1,
    /// (c) `EAR3 <= SR < EAR3 + EAR2`: class1 all dropped, class2 with a probability.
    DropClass2,
    /// (d) `SR < EAR3`: class1 and class2 all dropped, class3 with a probability.
    DropClass3,
}

/// What the rates say about one arrival, before the queue adjustment and the count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    Accept,
    /// Dropped whatever the coin: `DropReason::Policy`.
    PolicyDrop,
    /// Dropped with this probability, in (0, 1]: `DropReason::Early` when the coin says so.
    DropWithProbability(f64),
}

/// Index 0, 1, 2 for class1, class2, class3; class 0 (unclassified) and above 3 are class3.
pub fn class_index(class: u8) -> usize {
    match class {
        1 => 0,
        2 => 1,
        _ => 2,
    }
}

/// The stage for per-class rates `ears` = [EAR1, EAR2, EAR3] and service rate `sr` (same unit).
pub fn stage(ears: [f64; 3], sr: f64) -> Stage {
    let [e1, e2, e3] = ears;
    if e1 + e2 + e3 <= sr {
        Stage::AcceptAll
    } else if e3 + e2 <= sr {
        Stage::DropClass1
    } else if e3 <= sr {
        Stage::DropClass2
    } else {
        Stage::DropClass3
    }
}

/// Corrected Figure 2 for one arrival of `class` (a `Packet::class` value): a pure function of
/// the rates, so that every branch can be checked class by class.
pub fn decide(ears: [f64; 3], sr: f64, class: u8) -> Action {
    let [e1, e2, e3] = ears;
    let k = class_index(class);
    let prob = |p: f64| Action::DropWithProbability(p.clamp(f64::MIN_POSITIVE, 1.0));
    match (stage(ears, sr), k) {
        (Stage::AcceptAll, _) => Action::Accept,
        (Stage::DropClass1, 0) => prob((e1 + e2 + e3 - sr) / e1),
        (Stage::DropClass1, _) => Action::Accept,
        (Stage::DropClass2, 0) => Action::PolicyDrop,
        (Stage::DropClass2, 1) => prob((e3 + e2 - sr) / e2),
        (Stage::DropClass2, _) => Action::Accept,
        (Stage::DropClass3, 2) => prob((e3 - sr) / e3),
        (Stage::DropClass3, _) => Action::PolicyDrop,
    }
}

pub struct RbRio {
    cfg: RbRioConfig,
    fifo: AveragedFifo,
    ears: [RateEstimator; 3],
    /// Service rate in bit/s (infinite for an infinitely fast link).
    sr: f64,
    target: f64,
    spread: [DropSpreader; 3],
}

impl RbRio {
    pub fn new(cfg: RbRioConfig, link_rate: Rate) -> RbRio {
        let sr = if link_rate.0 == 0 { f64::INFINITY } else { link_rate.as_bps_f64() };
        let est = RateEstimator::new(Time(cfg.time_constant_ns));
        RbRio {
            ears: [est.clone(), est.clone(), est],
            fifo: AveragedFifo::new(cfg.limit, cfg.w_q, cfg.mean_pkt_size, link_rate),
            target: cfg.target(),
            spread: [DropSpreader::new(), DropSpreader::new(), DropSpreader::new()],
            sr,
            cfg,
        }
    }

    /// [EAR1, EAR2, EAR3] in bit/s as read at `now` (see `RateEstimator::rate_at`).
    pub fn estimated_arrival_rates(&self, now: Time) -> [f64; 3] {
        [self.ears[0].rate_at(now), self.ears[1].rate_at(now), self.ears[2].rate_at(now)]
    }
}

impl Qdisc for RbRio {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        let k = class_index(pkt.class);
        self.ears[k].update(pkt.size, now);
        let ears = self.estimated_arrival_rates(now);
        let avg = self.fifo.observe_arrival(now);
        match decide(ears, self.sr, pkt.class) {
            Action::Accept => self.spread[k].reset(),
            Action::PolicyDrop => {
                self.spread[k].reset();
                return Verdict::Dropped(DropReason::Policy);
            }
            Action::DropWithProbability(p) => {
                let p = adjust_probability(p, avg, self.target, self.cfg.aggressiveness);
                if self.spread[k].coin(p, rng) {
                    return Verdict::Dropped(DropReason::Early);
                }
            }
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
        "rb_rio"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::shared::queue_model::{run, Source, Tally};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;
    use crate::units::Limit;
    use proptest::prelude::*;

    const SR: f64 = 10.0;
    const LINK: Rate = Rate::mbps(10);

    fn p(a: Action) -> f64 {
        match a {
            Action::DropWithProbability(p) => p,
            other => panic!("expected a probabilistic drop, got {other:?}"),
        }
    }

    #[test]
    fn stage_a_accepts_every_class() {
        for ears in [[2.0, 3.0, 4.0], [0.0, 0.0, 0.0], [3.0, 3.0, 4.0], [0.0, 0.0, 10.0]] {
            assert_eq!(stage(ears, SR), Stage::AcceptAll, "{ears:?}");
            for class in 0..=3 {
                assert_eq!(decide(ears, SR, class), Action::Accept, "{ears:?} class {class}");
            }
        }
    }

    #[test]
    fn stage_b_drops_class1_with_the_excess_over_ear1() {
        // TEAR 12 > 10, EAR3 + EAR2 = 7 <= 10: P1 = (12 - 10) / 5.
        let ears = [5.0, 3.0, 4.0];
        assert_eq!(stage(ears, SR), Stage::DropClass1);
        assert!((p(decide(ears, SR, 1)) - 0.4).abs() < 1e-12);
        assert_eq!(decide(ears, SR, 2), Action::Accept);
        assert_eq!(decide(ears, SR, 3), Action::Accept);
        // Boundary EAR3 + EAR2 = SR is still (b), and then P1 = 1: all of class1 goes.
        let ears = [2.0, 6.0, 4.0];
        assert_eq!(stage(ears, SR), Stage::DropClass1);
        assert!((p(decide(ears, SR, 1)) - 1.0).abs() < 1e-12);
        assert_eq!(decide(ears, SR, 2), Action::Accept);
    }

    #[test]
    fn stage_c_drops_all_class1_and_class2_with_its_excess() {
        // EAR3 + EAR2 = 12 > 10, EAR3 = 4 <= 10: class1 policy, P2 = (12 - 10) / 8.
        let ears = [5.0, 8.0, 4.0];
        assert_eq!(stage(ears, SR), Stage::DropClass2);
        assert_eq!(decide(ears, SR, 1), Action::PolicyDrop);
        assert!((p(decide(ears, SR, 2)) - 0.25).abs() < 1e-12);
        assert_eq!(decide(ears, SR, 3), Action::Accept);
        // Boundary EAR3 = SR is still (c), with P2 = 1; a silent class1 changes nothing.
        let ears = [0.0, 3.0, 10.0];
        assert_eq!(stage(ears, SR), Stage::DropClass2);
        assert!((p(decide(ears, SR, 2)) - 1.0).abs() < 1e-12);
        assert_eq!(decide(ears, SR, 3), Action::Accept);
    }

    #[test]
    fn stage_d_drops_all_class1_and_class2_and_class3_with_its_excess() {
        let ears = [5.0, 8.0, 12.0];
        assert_eq!(stage(ears, SR), Stage::DropClass3);
        assert_eq!(decide(ears, SR, 1), Action::PolicyDrop);
        assert_eq!(decide(ears, SR, 2), Action::PolicyDrop);
        assert!((p(decide(ears, SR, 3)) - 2.0 / 12.0).abs() < 1e-12);
        // Class2 is policy-dropped even when its own rate is tiny (Figure 2's last branch).
        assert_eq!(decide([0.0, 0.1, 11.0], SR, 2), Action::PolicyDrop);
    }

    #[test]
    fn unclassified_and_out_of_range_classes_are_class3() {
        for ears in [[2.0, 3.0, 4.0], [5.0, 3.0, 4.0], [5.0, 8.0, 4.0], [5.0, 8.0, 12.0]] {
            assert_eq!(decide(ears, SR, 0), decide(ears, SR, 3), "{ears:?}");
            assert_eq!(decide(ears, SR, 7), decide(ears, SR, 3), "{ears:?}");
        }
        assert_eq!(class_index(0), 2);
        assert_eq!(class_index(1), 0);
    }

    proptest! {
        /// Strict priority and rate conservation: a class is only touched once every lower class
        /// is dropped entirely, probabilities are in (0, 1], and the expected accepted rate is
        /// exactly min(TEAR, SR).
        #[test]
        fn decisions_respect_priority_and_conserve_the_service_rate(
            e1 in 0.0f64..20.0, e2 in 0.0f64..20.0, e3 in 0.0f64..20.0, sr in 0.1f64..30.0,
        ) {
            let ears = [e1, e2, e3];
            let acts = [decide(ears, sr, 1), decide(ears, sr, 2), decide(ears, sr, 3)];
            let mut accepted = 0.0;
            for k in 0..3 {
                let keep = match acts[k] {
                    Action::Accept => 1.0,
                    Action::PolicyDrop => 0.0,
                    Action::DropWithProbability(p) => {
                        prop_assert!(p > 0.0 && p <= 1.0, "p {} class{}", p, k + 1);
                        1.0 - p
                    }
                };
                accepted += ears[k] * keep;
                if acts[k] != Action::Accept {
                    for lower in &acts[..k] {
                        prop_assert_eq!(*lower, Action::PolicyDrop);
                    }
                }
            }
            let expect = (e1 + e2 + e3).min(sr);
            prop_assert!((accepted - expect).abs() < 1e-9 * (1.0 + expect), "{} vs {}", accepted, expect);
        }
    }

    fn three_classes(rates_mbps: [f64; 3]) -> Vec<Source> {
        (0..3).map(|k| Source { rate_bps: rates_mbps[k] * 1e6, size: 1000, class: k as u8 + 1, poisson: false }).collect()
    }

    fn run_classes(rates_mbps: [f64; 3], cfg: RbRioConfig) -> (Tally, Queue) {
        let mut q = Queue::new(Box::new(RbRio::new(cfg, LINK)));
        let t = run(&mut q, LINK, &three_classes(rates_mbps), Time::from_secs(50), Time::from_secs(20), 5);
        (t, q)
    }

    fn reasons(t: &Tally, class: u8) -> Vec<DropReason> {
        let mut r: Vec<DropReason> = t
            .verdicts
            .iter()
            .filter_map(|(c, v)| match v {
                Verdict::Dropped(r) if *c == class => Some(*r),
                _ => None,
            })
            .collect();
        r.dedup();
        r
    }

    #[test]
    fn queue_model_stage_b_thins_class1_only() {
        let (t, q) = run_classes([4.0, 4.0, 4.0], RbRioConfig::default());
        println!("rb_rio (b): drops {:?} avg {:.1}", [1, 2, 3].map(|k| t.drop_fraction(k)), t.mean_avg);
        assert!((t.drop_fraction(1) - 0.5).abs() < 0.02, "{}", t.drop_fraction(1));
        assert_eq!(reasons(&t, 1), vec![DropReason::Early]);
        assert_eq!((t.drops[2], t.drops[3]), (0, 0));
        assert!((t.mean_avg - 50.0).abs() < 4.0, "avg {}", t.mean_avg);
        q.check_invariants().unwrap();
    }

    #[test]
    fn queue_model_stage_c_policy_drops_class1_and_thins_class2() {
        let (t, _) = run_classes([2.0, 6.0, 6.0], RbRioConfig::default());
        println!("rb_rio (c): drops {:?} avg {:.1}", [1, 2, 3].map(|k| t.drop_fraction(k)), t.mean_avg);
        assert_eq!(t.drops[1], t.arrivals[1]);
        assert_eq!(reasons(&t, 1), vec![DropReason::Policy]);
        assert!((t.drop_fraction(2) - 1.0 / 3.0).abs() < 0.02, "{}", t.drop_fraction(2));
        assert_eq!(reasons(&t, 2), vec![DropReason::Early]);
        assert_eq!(t.drops[3], 0);
    }

    #[test]
    fn queue_model_stage_d_policy_drops_class1_and_class2_and_thins_class3() {
        let (t, _) = run_classes([2.0, 2.0, 12.5], RbRioConfig::default());
        println!("rb_rio (d): drops {:?} avg {:.1}", [1, 2, 3].map(|k| t.drop_fraction(k)), t.mean_avg);
        assert_eq!((t.drops[1], t.drops[2]), (t.arrivals[1], t.arrivals[2]));
        assert_eq!(reasons(&t, 2), vec![DropReason::Policy]);
        assert!((t.drop_fraction(3) - 0.2).abs() < 0.01, "{}", t.drop_fraction(3));
        assert_eq!(reasons(&t, 3), vec![DropReason::Early]);
    }

    #[test]
    fn larger_ap_holds_the_queue_lower_here_too() {
        let (t20, _) = run_classes([4.0, 4.0, 4.0], RbRioConfig::default());
        let (t25, _) = run_classes([4.0, 4.0, 4.0], RbRioConfig { aggressiveness: 2.5, ..RbRioConfig::default() });
        assert!(t25.mean_avg < t20.mean_avg - 7.0, "{} vs {}", t25.mean_avg, t20.mean_avg);
        assert!((t25.mean_avg - 40.0).abs() < 4.0, "{}", t25.mean_avg);
    }

    #[test]
    fn a_silent_class_stops_counting() {
        // 0-1 s: class2 at 8 and class1 at 4 Mbit/s (stage b). Then class2 stops and class3
        // starts at 4: with class2's last rate kept, TEAR = 16 and EAR3 + EAR2 = 12 would be
        // stage (c) and class1 would be policy-dropped; decayed, TEAR = 8 and all is accepted.
        let mut r = RbRio::new(RbRioConfig::default(), LINK);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let mut uid = 0;
        let mut send = |r: &mut RbRio, class: u8, now: Time| {
            uid += 1;
            let mut p = pkt(uid, 0, 1000);
            p.class = class;
            let v = r.enqueue(p, now, &mut rng, &mut ev);
            while r.pop_packet(now).is_some() {}
            v
        };
        for i in 0..1000u64 {
            send(&mut r, 2, Time::from_micros(i * 1000));
            if i % 2 == 0 {
                send(&mut r, 1, Time::from_micros(i * 1000 + 500));
            }
        }
        let e = r.estimated_arrival_rates(Time::from_secs(1));
        assert!((e[1] - 8e6).abs() < 1e5 && (e[0] - 4e6).abs() < 1e5, "{e:?}");
        let mut dropped = 0;
        for i in 0..2000u64 {
            let now = Time::from_secs(1) + Time::from_micros(i * 1000);
            dropped += matches!(send(&mut r, 1, now), Verdict::Dropped(_)) as u32;
            dropped += matches!(send(&mut r, 3, now + Time::from_micros(500)), Verdict::Dropped(_)) as u32;
            if i >= 1000 {
                assert_eq!(dropped, 0, "dropped at {now}");
            } else {
                dropped = 0;
            }
        }
        assert!(r.estimated_arrival_rates(Time::from_secs(3))[1] < 1e3);
    }

    #[test]
    fn physical_limit_is_an_overflow_and_books_balance() {
        let cfg = RbRioConfig { limit: Limit::Packets(2), ..RbRioConfig::default() };
        let mut q = Queue::new(Box::new(RbRio::new(cfg, LINK)));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..2 {
            assert_eq!(q.enqueue(pkt(i, 0, 1000), Time::from_secs(i), &mut rng).verdict, Verdict::Enqueued);
        }
        assert_eq!(q.enqueue(pkt(2, 0, 1000), Time::from_secs(2), &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        q.dequeue(Time::from_secs(3));
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let c = RbRioConfig::default();
        assert!(c.validate().is_ok());
        assert!(RbRioConfig { time_constant_ns: 0, ..c.clone() }.validate().unwrap_err().starts_with("time_constant_ns"));
        assert!(RbRioConfig { aggressiveness: 0.0, ..c.clone() }.validate().unwrap_err().starts_with("aggressiveness"));
        assert!(RbRioConfig { target_queue: Some(-1.0), ..c.clone() }.validate().unwrap_err().starts_with("target_queue"));
        assert!(RbRioConfig { w_q: 2.0, ..c.clone() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RbRioConfig { limit: Limit::Bytes(0), ..c.clone() }.validate().unwrap_err().starts_with("limit"));
        assert!(RbRioConfig { mean_pkt_size: 0, ..c }.validate().unwrap_err().starts_with("mean_pkt_size"));
    }
}
