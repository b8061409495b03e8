//! RIO: RED with In and Out, after D. D. Clark and W. Fang, "Explicit Allocation of
//! Best-Effort Packet Delivery Service", IEEE/ACM ToN 6(4), 1998 (C&F below), generalized from
//! two to three drop precedences with coupled averages.
//!
//! C&F keep one FIFO and two RED controllers: In packets are judged by `avg_in`, the average
//! of the number of In packets queued, with a lenient curve; Out packets by `avg_total`, the
//! average of the whole queue, with a harsh one. Out packets therefore see every In packet as
//! congestion, while In packets do not see Out packets at all. With three classes, class1
//! (lowest) .. class3 (highest), precedence `k` uses the average `avg_k` of the number of
//! queued packets of classes `>= k`:
//!
//! * `avg_3` counts class3 packets only (C&F's `avg_in`);
//! * `avg_2` counts class2 and class3 packets;
//! * `avg_1` counts all packets (C&F's `avg_total`).
//!
//! On an arrival of class `k`, every average that counts class `k` (`avg_j`, `j <= k`) is updated
//! as RED's (Floyd and Jacobson 1993, section 4; see `red.rs`): `avg_j <- (1 - w_q) avg_j + w_q
//! q_j`, `q_j` the queued packets of classes `>= j`, after `avg_j <- (1 - w_q)^m avg_j` when
//! `q_j` has been empty (`m` = that time / the transmission time of a `mean_pkt_size` packet).
//! C&F likewise update `avg_in` on In arrivals only; decaying each average over the periods its
//! own classes are absent (even while the link is busy with lower classes) is RED's idle rule
//! applied per precedence, our reading. Then the arrival is judged by `avg_k` against its own
//! curve `(min_th_k, max_th_k, max_p_k)`: below `min_th_k` accepted; from `max_th_k` on
//! dropped (`Forced`; there is no gentle mode, as in C&F); in between dropped
//! (`Early`) with `p_b = max_p_k (avg_k - min_th_k)/(max_th_k - min_th_k)`, spread with a count
//! per class, `p_a = p_b / (1 - count_k p_b)` (F&J section 7). An accepted packet that does not
//! fit in the physical limit is an `Overflow` drop. With a byte limit the queues are measured
//! in `mean_pkt_size` packets, as in RED's byte mode.
//!
//! Because the averages count nested sets of packets (`avg_1 >= avg_2 >= avg_3`, up to their
//! different update instants), equal curves would already protect the higher classes;
//! staggered curves (the defaults) make class1 reach its hard threshold before class2 starts
//! dropping in earnest, and class2 before class3.
//!
//! Unclassified packets (class 0) are treated as class3, as in `rb_rio.rs`: traffic nobody
//! classified sees plain RED with class3's curve instead of being judged as the lowest class.
//! Values above 3 are also class3.

use super::rb_rio::class_index;
use super::shared::packet_fifo::PacketFifo;
use super::shared::queue_average::QueueAverage;
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

/// One precedence's RED curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RioCurve {
    /// Lower threshold on this precedence's average, packets.
    pub min_th: f64,
    /// Hard threshold: from here on every arrival of the class is dropped.
    pub max_th: f64,
    /// Drop probability reached at `max_th`, in (0, 1].
    pub max_p: f64,
}

impl RioCurve {
    #[allow(clippy::neg_cmp_op_on_partial_ord, reason = "a negated comparison is how these checks refuse NaN too")]
    fn validate(&self, name: &str) -> Result<(), String> {
        if !(self.min_th >= 0.0) {
            return Err(format!("{name}.min_th: must be >= 0, got {}", self.min_th));
        }
        if !(self.min_th < self.max_th) {
            return Err(format!("{name}.min_th ({}) must be smaller than {name}.max_th ({})", self.min_th, self.max_th));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("{name}.max_p: must be in (0, 1], got {}", self.max_p));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RioConfig {
    /// Physical capacity (packets or bytes), shared by all classes.
    pub limit: Limit,
    /// Curve of class1 (lowest), judged on the average of all packets (default 10/30/0.2).
    pub class1: RioCurve,
    /// Curve of class2, judged on the average of class2 + class3 packets (default 20/50/0.1).
    pub class2: RioCurve,
    /// Curve of class3 (highest), judged on the average of class3 packets (default 30/70/0.05).
    pub class3: RioCurve,
    /// EWMA weight of the three averages, in (0, 1] (default 0.002, as RED).
    pub w_q: f64,
    /// Typical packet size in bytes: byte-limit queue unit and idle-decay packet time (1000).
    pub mean_pkt_size: u32,
}

impl Default for RioConfig {
    /// For a 100-packet buffer. The curves are staggered, min_th 10 < 20 < 30 and max_th
    /// 30 < 50 < 70, and judged on nested averages (avg_1 >= avg_2 >= avg_3), so class1 is
    /// forced out (total average 30) by the time class2's ramp has barely begun (its average
    /// counts fewer packets than 30), and class2 is well up its ramp before class3's starts.
    /// Class3's max_th 70 leaves 30 packets of the buffer for bursts above the last hard
    /// threshold. Every max_th is at least twice its min_th (3x, 2.5x, 2.3x), Floyd's rule of
    /// thumb for RED. max_p falls with priority (0.2, 0.1, 0.05), as C&F's Out curve is harsher
    /// than their In curve; the middle class gets 0.1, Floyd's recommended RED value.
    fn default() -> RioConfig {
        RioConfig {
            limit: Limit::Packets(100),
            class1: RioCurve { min_th: 10.0, max_th: 30.0, max_p: 0.2 },
            class2: RioCurve { min_th: 20.0, max_th: 50.0, max_p: 0.1 },
            class3: RioCurve { min_th: 30.0, max_th: 70.0, max_p: 0.05 },
            w_q: 0.002,
            mean_pkt_size: 1000,
        }
    }
}

impl RioConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        self.class1.validate("class1")?;
        self.class2.validate("class2")?;
        self.class3.validate("class3")?;
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(format!("w_q: must be in (0, 1], got {}", self.w_q));
        }
        if self.mean_pkt_size == 0 {
            return Err("mean_pkt_size: must be at least 1 byte".into());
        }
        Ok(())
    }

    fn curves(&self) -> [RioCurve; 3] {
        [self.class1, self.class2, self.class3]
    }
}

/// What one precedence's curve decided for an arrival (before the physical limit).
#[derive(Debug, PartialEq)]
enum Decision {
    Accept,
    Early,
    Forced,
}

pub struct Rio {
    cfg: RioConfig,
    curves: [RioCurve; 3],
    q: PacketFifo,
    /// Queued packets and bytes per class (index 0 = class1).
    class_packets: [usize; 3],
    class_bytes: [u64; 3],
    /// `avgs[j]` averages the packets of classes `>= j + 1`.
    avgs: [QueueAverage; 3],
    /// Per class: arrivals since its last drop; -1 while its average is below min_th.
    counts: [i64; 3],
}

impl Rio {
    pub fn new(cfg: RioConfig, link_rate: Rate) -> Rio {
        let pkt_time = link_rate.tx_time(cfg.mean_pkt_size as u64);
        let avg = QueueAverage::new(cfg.w_q, pkt_time);
        Rio {
            curves: cfg.curves(),
            q: PacketFifo::default(),
            class_packets: [0; 3],
            class_bytes: [0; 3],
            avgs: [avg.clone(), avg.clone(), avg],
            counts: [-1; 3],
            cfg,
        }
    }

    /// [avg_1, avg_2, avg_3]: the averages of classes >= 1, >= 2 and >= 3.
    pub fn averages(&self) -> [f64; 3] {
        [self.avgs[0].value(), self.avgs[1].value(), self.avgs[2].value()]
    }

    /// Queued packets of classes `>= j + 1`, in the unit the averages use.
    fn queue_at_or_above(&self, j: usize) -> f64 {
        match self.cfg.limit {
            Limit::Packets(_) => self.class_packets[j..].iter().sum::<usize>() as f64,
            Limit::Bytes(_) => self.class_bytes[j..].iter().sum::<u64>() as f64 / self.cfg.mean_pkt_size as f64,
        }
    }

    fn decide(&mut self, k: usize, rng: &mut SimRng) -> Decision {
        let RioCurve { min_th, max_th, max_p } = self.curves[k];
        let avg = self.avgs[k].value();
        if avg < min_th {
            self.counts[k] = -1;
            return Decision::Accept;
        }
        if avg >= max_th {
            self.counts[k] = 0;
            return Decision::Forced;
        }
        let p_b = max_p * (avg - min_th) / (max_th - min_th);
        self.counts[k] += 1;
        let denom = 1.0 - self.counts[k] as f64 * p_b;
        let p_a = if denom <= 0.0 { 1.0 } else { (p_b / denom).min(1.0) };
        if rng.bernoulli(p_a) {
            self.counts[k] = 0;
            Decision::Early
        } else {
            Decision::Accept
        }
    }
}

impl Qdisc for Rio {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        let k = class_index(pkt.class);
        for j in 0..=k {
            let q = self.queue_at_or_above(j);
            self.avgs[j].update(now, q);
        }
        match self.decide(k, rng) {
            Decision::Forced => return Verdict::Dropped(DropReason::Forced),
            Decision::Early => return Verdict::Dropped(DropReason::Early),
            Decision::Accept => {}
        }
        if !self.q.admits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.class_packets[k] += 1;
        self.class_bytes[k] += pkt.size as u64;
        for avg in &mut self.avgs[..=k] {
            avg.set_busy();
        }
        self.q.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let p = self.q.pop()?;
        let k = class_index(p.class);
        self.class_packets[k] -= 1;
        self.class_bytes[k] -= p.size as u64;
        for j in 0..=k {
            if self.class_packets[j..].iter().all(|n| *n == 0) {
                self.avgs[j].set_idle(now);
            }
        }
        Some(Dequeued::unmarked(p))
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    /// The average of the whole queue (C&F's `avg_total`); see [`Rio::averages`] for all three.
    fn average_queue(&self) -> Option<f64> {
        Some(self.avgs[0].value())
    }
    fn kind(&self) -> &'static str {
        "rio"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::shared::queue_model::{run, Source};
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;

    const LINK: Rate = Rate::mbps(10);

    fn class_pkt(uid: u64, class: u8) -> Packet {
        Packet { class, ..pkt(uid, 0, 1000) }
    }

    #[test]
    fn averages_count_nested_classes() {
        let mut r = Rio::new(RioConfig { w_q: 1.0, ..RioConfig::default() }, LINK);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let mut uid = 0;
        let mut offer = |r: &mut Rio, class: u8| {
            uid += 1;
            assert_eq!(r.enqueue(class_pkt(uid, class), Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
        };
        for class in [1, 1, 2, 2, 2] {
            offer(&mut r, class);
        }
        // w_q = 1: each average is the queue its class saw on its last update.
        offer(&mut r, 3);
        assert_eq!(r.averages(), [5.0, 3.0, 0.0]);
        offer(&mut r, 2);
        assert_eq!(r.averages(), [6.0, 4.0, 0.0]);
        offer(&mut r, 1);
        assert_eq!(r.averages(), [7.0, 4.0, 0.0]);
        offer(&mut r, 0); // unclassified counts as class3
        assert_eq!(r.averages(), [8.0, 5.0, 1.0]);
    }

    #[test]
    fn each_class_is_judged_by_its_own_average_and_curve() {
        let mut r = Rio::new(RioConfig::default(), LINK);
        // avg_1 = 35 >= class1's max_th 30, avg_2 = 25 in class2's ramp, avg_3 = 10 < 30.
        for (j, a) in [35.0, 25.0, 10.0].into_iter().enumerate() {
            r.avgs[j].force(a);
        }
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let (mut c2_drops, n) = (0, 20_000);
        for i in 0..n {
            assert_eq!(r.enqueue(class_pkt(i, 1), Time::ZERO, &mut rng, &mut ev), Verdict::Dropped(DropReason::Forced));
            match r.enqueue(class_pkt(i, 2), Time::ZERO, &mut rng, &mut ev) {
                Verdict::Dropped(DropReason::Early) => c2_drops += 1,
                Verdict::Enqueued => {}
                v => panic!("{v:?}"),
            }
            assert_eq!(r.enqueue(class_pkt(i, 3), Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
            while r.pop_packet(Time::ZERO).is_some() {}
            for (j, a) in [35.0, 25.0, 10.0].into_iter().enumerate() {
                r.avgs[j].force(a);
            }
        }
        // p_b = 0.1 * 5/30; RED's count method drops 2 p_b of the arrivals.
        let frac = c2_drops as f64 / n as f64;
        assert!((frac - 2.0 * 0.1 * 5.0 / 30.0).abs() < 0.004, "{frac}");
    }

    #[test]
    fn a_class_average_decays_while_its_classes_are_absent() {
        let mut r = Rio::new(RioConfig::default(), LINK);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        r.avgs[2].force(20.0);
        r.enqueue(class_pkt(0, 3), Time::ZERO, &mut rng, &mut ev);
        let a3 = r.averages()[2];
        r.pop_packet(Time::ZERO);
        // 100 ms of class1 traffic only: the link is busy, but no class3 packet is queued.
        for i in 1..=100u64 {
            r.enqueue(class_pkt(i, 1), Time::from_millis(i), &mut rng, &mut ev);
            r.pop_packet(Time::from_millis(i));
        }
        assert_eq!(r.averages()[2], a3, "avg_3 moves only on class3 arrivals");
        r.enqueue(class_pkt(101, 3), Time::from_millis(100), &mut rng, &mut ev);
        // 1000 B at 10 Mbit/s is 0.8 ms: 125 packet times of class3 idleness, then one update.
        let w: f64 = 0.002;
        let expect = a3 * (1.0 - w).powf(125.0) * (1.0 - w);
        assert!((r.averages()[2] - expect).abs() < 1e-9, "{} vs {expect}", r.averages()[2]);
    }

    #[test]
    fn drops_class1_before_class2_before_class3_as_load_grows() {
        // Equal thirds of Poisson traffic at a growing total load.
        let loads = [0.8, 0.95, 1.05, 1.2, 1.4, 1.7, 2.0, 2.5, 3.0, 4.0];
        let mut first = [None; 3];
        for &load in &loads {
            let sources: Vec<Source> =
                (1..=3).map(|c| Source { rate_bps: load * 1e7 / 3.0, size: 1000, class: c, poisson: true }).collect();
            let mut q = Queue::new(Box::new(Rio::new(RioConfig::default(), LINK)));
            let t = run(&mut q, LINK, &sources, Time::from_secs(40), Time::from_secs(10), 11);
            let d = [t.drop_fraction(1), t.drop_fraction(2), t.drop_fraction(3)];
            println!("rio load {load}: drop fractions {d:.4?}, avg {:.1}", t.mean_avg);
            assert!(d[0] >= d[1] && d[1] >= d[2], "load {load}: {d:?}");
            for k in 0..3 {
                if first[k].is_none() && d[k] > 0.001 {
                    first[k] = Some(load);
                }
            }
            q.check_invariants().unwrap();
        }
        let first = first.map(|f| f.expect("every class drops at 4x load"));
        assert!(first[0] < first[1] && first[1] < first[2], "first loads with drops {first:?}");
    }

    #[test]
    fn validation_names_the_field() {
        let c = RioConfig::default();
        assert!(c.validate().is_ok());
        let bad = |f: fn(&mut RioConfig)| {
            let mut c = RioConfig::default();
            f(&mut c);
            c.validate().unwrap_err()
        };
        let e = bad(|c| c.class2.max_th = 10.0);
        assert!(e.starts_with("class2.min_th") && e.contains("class2.max_th"), "{e}");
        assert!(bad(|c| c.class1.min_th = -1.0).starts_with("class1.min_th"));
        assert!(bad(|c| c.class3.max_p = 0.0).starts_with("class3.max_p"));
        assert!(bad(|c| c.class3.max_p = 1.01).starts_with("class3.max_p"));
        assert!(bad(|c| c.w_q = 0.0).starts_with("w_q"));
        assert!(bad(|c| c.limit = Limit::Packets(0)).starts_with("limit"));
        assert!(bad(|c| c.mean_pkt_size = 0).starts_with("mean_pkt_size"));
    }
}
