//! RED: Random Early Detection, after S. Floyd and V. Jacobson, "Random Early Detection
//! Gateways for Congestion Avoidance", IEEE/ACM ToN 1(4), 1993 (cited as F&J below).
//!
//! On every arrival:
//! * average queue (F&J section 4, Fig. 2): `avg <- (1 - w_q) avg + w_q q`. When the queue
//!   has been idle since `q_time`, the average first decays as if `m` small packets had been
//!   sent in the meantime: `avg <- (1 - w_q)^m avg`, `m = (now - q_time) / s` with `s` the
//!   transmission time of a `mean_pkt_size` packet on this link;
//! * between `min_th` and `max_th`: `p_b = max_p (avg - min_th) / (max_th - min_th)`, spread
//!   uniformly by the count of packets since the last drop, `p_a = p_b / (1 - count p_b)`
//!   (F&J section 7, "method 2");
//! * `wait` (ns-2's `wait_`, ns-3's RedQueueDisc `Wait`, on by default in both; Floyd's
//!   "RED: Discussions of Setting Parameters", 1997): no early drop while `count p_b < 1`,
//!   then `p_a = p_b / (2 - count p_b)`, so that the gap between drops is uniform on
//!   `[1/p_b, 2/p_b)` instead of `[1, 1/p_b)`: drops are never closer than `1/p_b` packets;
//! * gentle mode (Floyd, "Optimum functioning of RED in the gentle mode", 2000): between
//!   `max_th` and `2 max_th`, `p_b = max_p + (1 - max_p)(avg - max_th)/max_th`, and only above
//!   `2 max_th` every arrival is dropped;
//! * byte mode (F&J section 11): the queue is measured in units of `mean_pkt_size` bytes and
//!   `p_b` is scaled by `size / mean_pkt_size`, so large packets are more likely dropped;
//! * with `ecn = true`, an ECN-capable packet selected by the early coin is marked CE instead
//!   of dropped (RFC 3168 section 7); forced drops above the hard threshold stay drops.
//!
//! The physical limit is independent of the thresholds: an arrival that does not fit is an
//! `Overflow` drop whatever `avg` says.

use super::shared::packet_fifo::PacketFifo;
use super::shared::queue_average::QueueAverage;
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

/// Whether RED measures its queue in packets or in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedMode {
    #[default]
    Packets,
    Bytes,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Physical capacity (packets or bytes).
    pub limit: Limit,
    /// Lower threshold on the average queue, in packets (in byte mode: in mean-size packets).
    pub min_th: f64,
    /// Upper threshold on the average queue, same unit as `min_th`.
    pub max_th: f64,
    /// EWMA weight of the average queue (F&J's w_q), in (0, 1].
    pub w_q: f64,
    /// Drop probability reached at `max_th` (F&J's max_p), in (0, 1].
    pub max_p: f64,
    /// Ramp from `max_p` to 1 between `max_th` and `2 max_th` instead of a cliff.
    pub gentle: bool,
    /// Measure the queue in packets or in bytes.
    pub mode: RedMode,
    /// Mark ECN-capable packets instead of dropping them on an early decision.
    pub ecn: bool,
    /// Typical packet size in bytes: the byte-mode unit and the idle-decay packet time.
    pub mean_pkt_size: u32,
    /// Wait between drops (ns-2 and ns-3's default): see the module docs. Off by default here,
    /// as every scenario and reproduction before it ran.
    #[serde(default)]
    pub wait: bool,
}

impl RedConfig {
    #[allow(clippy::neg_cmp_op_on_partial_ord, reason = "a negated comparison is how these checks refuse NaN too")]
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if !(self.min_th >= 0.0) {
            return Err(format!("min_th: must be >= 0, got {}", self.min_th));
        }
        if !(self.min_th < self.max_th) {
            return Err(format!("min_th ({}) must be smaller than max_th ({})", self.min_th, self.max_th));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(format!("w_q: must be in (0, 1], got {}", self.w_q));
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("max_p: must be in (0, 1], got {}", self.max_p));
        }
        if self.mean_pkt_size == 0 {
            return Err("mean_pkt_size: must be at least 1 byte".into());
        }
        Ok(())
    }
}

pub struct Red {
    cfg: RedConfig,
    q: PacketFifo,
    /// F&J's `avg`, with its idle-time decay over packets of F&J's `s` = the transmission time
    /// of one `mean_pkt_size` packet.
    avg: QueueAverage,
    /// Packets since the last drop or mark; -1 while avg is below min_th (F&J Fig. 2).
    count: i64,
}

/// What the average-queue test decided for one arrival (before the physical limit).
#[derive(Debug, PartialEq)]
enum Decision {
    Accept,
    Early,
    Forced,
}

impl Red {
    pub fn new(cfg: RedConfig, link_rate: Rate) -> Red {
        let pkt_time = link_rate.tx_time(cfg.mean_pkt_size as u64);
        Red { avg: QueueAverage::new(cfg.w_q, pkt_time), cfg, q: PacketFifo::default(), count: -1 }
    }

    /// The instantaneous queue in the unit RED averages.
    fn current_queue(&self) -> f64 {
        match self.cfg.mode {
            RedMode::Packets => self.q.len() as f64,
            RedMode::Bytes => self.q.bytes() as f64 / self.cfg.mean_pkt_size as f64,
        }
    }

    /// F&J section 4: the average with the queue this arrival sees (after the idle-time decay,
    /// which is accounted up to `now` even if the arrival is then dropped).
    fn update_average(&mut self, now: Time) {
        self.avg.update(now, self.current_queue());
    }

    /// Base probability p_b for the current average, or None when the hard threshold is passed.
    fn base_probability(&self) -> Option<f64> {
        let RedConfig { min_th, max_th, max_p, gentle, .. } = self.cfg;
        let avg = self.avg.value();
        if avg < max_th {
            Some(max_p * (avg - min_th) / (max_th - min_th))
        } else if gentle && avg < 2.0 * max_th {
            Some(max_p + (1.0 - max_p) * (avg - max_th) / max_th)
        } else {
            None
        }
    }

    fn decide(&mut self, size: u32, rng: &mut SimRng) -> Decision {
        if self.avg.value() < self.cfg.min_th {
            self.count = -1;
            return Decision::Accept;
        }
        let Some(mut p_b) = self.base_probability() else {
            self.count = 0;
            return Decision::Forced;
        };
        if self.cfg.mode == RedMode::Bytes {
            p_b *= size as f64 / self.cfg.mean_pkt_size as f64;
        }
        self.count += 1;
        let p_a = spread(p_b, self.count as f64, self.cfg.wait);
        if rng.bernoulli(p_a) {
            self.count = 0;
            Decision::Early
        } else {
            Decision::Accept
        }
    }

    fn push(&mut self, pkt: Packet) {
        self.q.push(pkt);
        self.avg.set_busy();
    }
}

/// The probability of this arrival's early drop from p_b and the packets since the last one.
/// F&J section 7: `p_a = p_b / (1 - count p_b)` spaces drops uniformly on `[1, 1/p_b)`; with
/// `wait` (ns-2 red.cc `modify_p`, ns-3 `RedQueueDisc::ModifyP`), nothing while `count p_b < 1`,
/// then `p_b / (2 - count p_b)`, uniform on `[1/p_b, 2/p_b)`.
fn spread(p_b: f64, count: f64, wait: bool) -> f64 {
    let x = count * p_b;
    if wait {
        if x < 1.0 {
            0.0
        } else if x < 2.0 {
            (p_b / (2.0 - x)).min(1.0)
        } else {
            1.0
        }
    } else if x < 1.0 {
        (p_b / (1.0 - x)).min(1.0)
    } else {
        1.0
    }
}

impl Qdisc for Red {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        self.update_average(now);
        let decision = self.decide(pkt.size, rng);
        if decision == Decision::Forced {
            return Verdict::Dropped(DropReason::Forced);
        }
        let mark = decision == Decision::Early && self.cfg.ecn && pkt.ecn.is_ect();
        if decision == Decision::Early && !mark {
            return Verdict::Dropped(DropReason::Early);
        }
        if !self.q.admits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        if mark {
            pkt.ecn = Ecn::Ce;
            self.push(pkt);
            return Verdict::Marked;
        }
        self.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let p = self.q.pop()?;
        if self.q.is_empty() {
            self.avg.set_idle(now);
        }
        Some(Dequeued::unmarked(p))
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn average_queue(&self) -> Option<f64> {
        Some(self.avg.value())
    }
    fn kind(&self) -> &'static str {
        "red"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;

    fn cfg() -> RedConfig {
        RedConfig {
            limit: Limit::Packets(100),
            min_th: 5.0,
            max_th: 15.0,
            w_q: 0.002,
            max_p: 0.1,
            gentle: false,
            mode: RedMode::Packets,
            ecn: false,
            mean_pkt_size: 1000,
            wait: false,
        }
    }

    fn red_with_avg(c: RedConfig, avg: f64) -> Red {
        let mut r = Red::new(c, Rate::mbps(10));
        r.avg.force(avg);
        r
    }

    #[test]
    fn average_follows_the_ewma() {
        let mut r = Red::new(cfg(), Rate::mbps(10));
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..10 {
            r.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        }
        // avg_k = sum_{j<k} w (1-w)^(k-1-j) j for q = 0..9 at each arrival.
        let w: f64 = 0.002;
        let mut expect = 0.0;
        for q in 0..10 {
            expect = (1.0 - w) * expect + w * q as f64;
        }
        assert!((r.avg.value() - expect).abs() < 1e-12, "{} vs {}", r.avg.value(), expect);
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut r = red_with_avg(cfg(), 10.0);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        r.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        r.pop_packet(Time::from_millis(1));
        // 1000 B at 10 Mbit/s is 0.8 ms: 100 ms idle is 125 packet times.
        r.enqueue(pkt(1, 0, 1000), Time::from_millis(101), &mut rng, &mut ev);
        let before = (1.0 - 0.002) * 10.0 + 0.0;
        let expect = before * (1.0f64 - 0.002).powf(125.0) * (1.0 - 0.002);
        assert!((r.avg.value() - expect).abs() < 1e-9, "{} vs {}", r.avg.value(), expect);
    }

    #[test]
    fn idle_time_is_decayed_only_once_when_an_arrival_to_an_empty_queue_is_dropped() {
        // Forced drop with an empty queue: avg above max_th, never below by the next arrival.
        let mut r = red_with_avg(cfg(), 40.0);
        r.avg.set_idle(Time::ZERO);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        // 0.8 ms per packet at 10 Mbit/s: 8 ms idle is 10 packet times per arrival.
        assert!(matches!(r.enqueue(pkt(0, 0, 1000), Time::from_millis(8), &mut rng, &mut ev), Verdict::Dropped(_)));
        r.enqueue(pkt(1, 0, 1000), Time::from_millis(16), &mut rng, &mut ev);
        let d = 1.0f64 - 0.002;
        // Twice 10 packet times of decay plus two empty-queue updates, not 10 + 20.
        let expect = 40.0 * d.powf(10.0) * d * d.powf(10.0) * d;
        assert!((r.avg.value() - expect).abs() < 1e-9, "{} vs {}", r.avg.value(), expect);
    }

    #[test]
    fn below_min_th_never_drops_above_max_th_always_drops() {
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let mut low = red_with_avg(cfg(), 0.0);
        for i in 0..50 {
            assert_eq!(low.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev), Verdict::Enqueued);
        }
        let mut high = red_with_avg(cfg(), 20.0);
        assert_eq!(high.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut ev), Verdict::Dropped(DropReason::Forced));
    }

    #[test]
    fn count_spreads_drops_uniformly() {
        // With p_b fixed and count reset to 0 at a drop and incremented before the coin (F&J
        // Fig. 2), the gap between drops is uniform on 1..=1/p_b - 1: here 1..=19, mean 10.
        let mut rng = SimRng::stream(3, "t");
        let mut r = red_with_avg(RedConfig { w_q: 1e-9, ..cfg() }, 10.0); // p_b = 0.05
        let mut gaps = Vec::new();
        let mut since = 0;
        let mut ev = Vec::new();
        for i in 0..20_000 {
            since += 1;
            if let Verdict::Dropped(DropReason::Early) = r.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev) {
                gaps.push(since);
                since = 0;
            }
            r.pop_packet(Time::ZERO);
            r.avg.force(10.0);
        }
        assert!(gaps.iter().all(|g| *g <= 19), "max gap {}", gaps.iter().max().unwrap());
        let mean = gaps.iter().sum::<usize>() as f64 / gaps.len() as f64;
        assert!((mean - 10.0).abs() < 0.3, "mean gap {mean}");
    }

    /// Gaps (arrivals per early drop, the dropped one included) at a fixed p_b.
    fn drop_gaps(c: RedConfig, avg: f64, arrivals: u64, seed: u64) -> Vec<usize> {
        let mut rng = SimRng::stream(seed, "t");
        let mut r = red_with_avg(RedConfig { w_q: 1e-9, ..c }, avg);
        let (mut gaps, mut since, mut ev) = (Vec::new(), 0, Vec::new());
        for i in 0..arrivals {
            since += 1;
            if let Verdict::Dropped(DropReason::Early) = r.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev) {
                gaps.push(since);
                since = 0;
            }
            r.pop_packet(Time::ZERO);
            r.avg.force(avg);
        }
        gaps
    }

    #[test]
    fn wait_spaces_drops_at_least_one_over_p_b_apart() {
        // p_b = 0.05: without wait the gap is uniform on 1..=19 (mean 10, F&J section 7); with
        // wait (ns-2 `modify_p`), no drop before count reaches 1/p_b = 20, then
        // p_b / (2 - count p_b), so the gap is uniform on 20..=39: mean 29.5, never below 20.
        // (avg a hair above 10 keeps p_b at least 0.05 against the average's 1e-9 drift, so that
        // count 20 reaches count p_b = 1 as the formula means.)
        let gaps = drop_gaps(RedConfig { wait: true, ..cfg() }, 10.000_001, 40_000, 3);
        assert!(gaps.iter().all(|g| (20..=39).contains(g)), "{:?}", (gaps.iter().min(), gaps.iter().max()));
        let mean = gaps.iter().sum::<usize>() as f64 / gaps.len() as f64;
        assert!((mean - 29.5).abs() < 0.4, "mean gap {mean}");
        // Every value of the range occurs: the spread is uniform, not a fixed period.
        for g in 20..=39 {
            assert!(gaps.contains(&g), "gap {g} never seen");
        }
        let plain = drop_gaps(cfg(), 10.0, 40_000, 3);
        assert!(plain.iter().all(|g| *g <= 19) && plain.iter().any(|g| *g < 20 / 2));
    }

    #[test]
    fn spread_matches_both_formulas_at_their_edges() {
        // ns-3 RedQueueDisc::ModifyP, both branches.
        assert_eq!(spread(0.1, 5.0, false), 0.1 / (1.0 - 0.5));
        assert_eq!(spread(0.1, 10.0, false), 1.0);
        assert_eq!(spread(0.1, 9.0, true), 0.0);
        assert_eq!(spread(0.1, 15.0, true), 0.1 / (2.0 - 1.5));
        assert_eq!(spread(0.1, 20.0, true), 1.0);
        assert_eq!(spread(0.4, 3.0, true), 0.4 / (2.0 - 3.0 * 0.4));
        assert_eq!(spread(0.9, 2.0, true), 1.0); // p_b / (2 - 1.8) = 4.5, a probability of 1
    }

    #[test]
    fn gentle_ramps_instead_of_forcing() {
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let mut r = red_with_avg(RedConfig { gentle: true, ..cfg() }, 20.0);
        // avg 20 with max_th 15: p_b = 0.1 + 0.9 * 5/15 = 0.4, never a forced drop.
        assert_eq!(r.base_probability(), Some(0.1 + 0.9 * 5.0 / 15.0));
        let v = r.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        assert_ne!(v, Verdict::Dropped(DropReason::Forced));
        let mut r = red_with_avg(RedConfig { gentle: true, ..cfg() }, 31.0);
        assert_eq!(r.enqueue(pkt(0, 0, 1000), Time::ZERO, &mut rng, &mut ev), Verdict::Dropped(DropReason::Forced));
    }

    #[test]
    fn byte_mode_drops_large_packets_more_often() {
        let c = RedConfig { mode: RedMode::Bytes, limit: Limit::Bytes(1_000_000), w_q: 1e-9, ..cfg() };
        let drops = |size: u32| {
            let mut rng = SimRng::stream(5, "t");
            let mut r = red_with_avg(c.clone(), 10.0);
            let mut ev = Vec::new();
            let mut n = 0;
            for i in 0..20_000 {
                if let Verdict::Dropped(_) = r.enqueue(pkt(i, 0, size), Time::ZERO, &mut rng, &mut ev) {
                    n += 1;
                }
                r.pop_packet(Time::ZERO);
                r.avg.force(10.0);
            }
            n
        };
        let small = drops(200);
        let large = drops(1500);
        assert!(large as f64 > 3.0 * small as f64, "large {large} small {small}");
    }

    #[test]
    fn byte_mode_measures_the_queue_in_mean_packets() {
        let c = RedConfig { mode: RedMode::Bytes, limit: Limit::Bytes(100_000), w_q: 1.0, ..cfg() };
        let mut r = Red::new(c, Rate::mbps(10));
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..4 {
            r.enqueue(pkt(i, 0, 500), Time::ZERO, &mut rng, &mut ev);
        }
        // Three 500 B packets queued when the 4th arrives: 1.5 mean-size packets.
        assert!((r.avg.value() - 1.5).abs() < 1e-12, "{}", r.avg.value());
    }

    #[test]
    fn ecn_marks_capable_packets_instead_of_dropping() {
        let c = RedConfig { ecn: true, w_q: 1e-9, ..cfg() };
        let mut rng = SimRng::stream(9, "t");
        let mut q = Queue::new(Box::new(red_with_avg(c, 14.9)));
        let mut marked = 0;
        for i in 0..200 {
            let mut p = pkt(i, 0, 1000);
            p.ecn = Ecn::Ect0;
            let was_marked = match q.enqueue(p, Time::ZERO, &mut rng).verdict {
                Verdict::Marked => true,
                Verdict::Dropped(r) => panic!("ECT packet dropped: {r:?}"),
                Verdict::Enqueued => false,
            };
            marked += was_marked as u32;
            let out = q.dequeue(Time::ZERO).packet.unwrap();
            assert_eq!(out.ecn == Ecn::Ce, was_marked, "packet {i}");
        }
        assert!(marked > 5, "{marked}");
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let e = RedConfig { min_th: 60.0, max_th: 20.0, ..cfg() }.validate().unwrap_err();
        assert!(e.contains("min_th") && e.contains("max_th"), "{e}");
        assert!(RedConfig { w_q: 0.0, ..cfg() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RedConfig { max_p: 1.5, ..cfg() }.validate().unwrap_err().starts_with("max_p"));
    }
}
