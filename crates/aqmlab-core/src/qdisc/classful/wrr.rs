//! WRR: weighted round robin over child disciplines, in bytes: Deficit Round Robin (M.
//! Shreedhar and G. Varghese, "Efficient Fair Queuing using Deficit Round Robin", ACM SIGCOMM
//! 1995, cited as S&V) with one class per child and a per-child quantum equal to its weight,
//! as Linux `sch_drr` with classes (tc-drr(8)).
//!
//! * **Bands**: each band is a child discipline ([`build_qdisc`](crate::qdisc::build_qdisc)) with a `weight` in bytes per
//!   round. Under saturation band i receives `weight_i / sum(weight)` of the bytes sent,
//!   whatever the packet sizes (S&V, Theorem 1), and no backlogged band ever starves: in
//!   every round it gets at least its weight of credit. The weights need not be one MTU: a
//!   weight smaller than a packet only means several rounds of credit before it may send.
//! * **Classification**: the same [`Classifier`] as [`super::prio`]; the chosen child's
//!   verdict (with its `DropReason`) is WRR's verdict and its evictions are WRR's evictions.
//!   The PELS router (Kang, Zhang, Dai and Loguinov, section 4.1, Fig. 4) is
//!   `WRR[PRIO[green, yellow, red], FIFO(internet)]` with a class map sending classes 1..3 to
//!   band 0 and the rest to band 1.
//! * **Scheduler** (S&V, walked one packet per `dequeue` as Linux `sch_drr_dequeue`): the
//!   backlogged bands form an active list; a band joining it starts with one quantum of
//!   credit. The head band sends its head packet if its credit covers it; otherwise it gets
//!   one more quantum and moves to the tail. A band that empties leaves the list and loses its
//!   credit, so an idle band cannot bank service.
//! * **Small weights in O(bands)**: when a full pass over the list finds no band able to send,
//!   the `k - 1` further passes in which nobody could send either (`k` the fewest quanta any
//!   band still needs) are applied at once by crediting every band `k - 1` quanta, which
//!   leaves the order unchanged: the service order is exactly S&V's and a `dequeue` costs
//!   O(bands) whatever the ratio of packet size to weight.
//! * **Head packets**: the [`Qdisc`] trait has no `peek`, so, as Linux's
//!   `qdisc_peek_dequeued`, WRR takes a child's head packet out to learn its size and holds
//!   it until its turn. A held packet counts in WRR's backlog (not in the child's), and the
//!   child saw it leave at that `dequeue` time. As in Linux, where the peeked packet still
//!   counts in the child's queue length, it still counts against its band's limit
//!   ([`QdiscConfig::limit`]): while a band holds a packet, an arrival that would not fit
//!   beside it is refused (`Overflow`) before reaching the child, so a band never holds more
//!   than its limit and WRR never more than the sum of its bands' limits. (A child with
//!   longest-queue-drop would have pushed a packet out instead; this differs only while the
//!   band is full and holds a head packet.)
//! * **Non-work-conserving children** (a [`crate::qdisc::tbf`] shaper): a band that holds packets but
//!   yields none is passed over without credit; when no band yields, `dequeue` returns `None`.

use super::children::{build_children, offer, sum_limits, take, validate_children};
use super::classifier::{BandTable, Classifier};
use super::pels_feedback::FeedbackLabel;
use crate::packet::Packet;
use crate::qdisc::{Dequeued, Evicted, FeedbackLabeller, Qdisc, QdiscConfig, Queue, Verdict};
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One WRR band: a child discipline and its share.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrrBand {
    /// Bytes of credit per round (the band's DRR quantum). Shares are proportional to weights.
    pub weight: u32,
    /// The child discipline.
    pub qdisc: QdiscConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrrConfig {
    /// The bands; the classifier's band numbers index this list.
    pub bands: Vec<WrrBand>,
    /// Band selection (default: by class, 3 -> 0, 2 -> 1, 1 -> 2, others to the last band).
    #[serde(default)]
    pub classifier: Classifier,
}

impl WrrConfig {
    pub fn validate(&self) -> Result<(), String> {
        validate_children("bands", self.bands.iter().map(|b| &b.qdisc), "qdisc.")?;
        if let Some(i) = self.bands.iter().position(|b| b.weight == 0) {
            return Err(format!("bands.{i}.weight: must be at least 1 byte per round"));
        }
        self.classifier.validate("classifier", self.bands.len())
    }

    /// Sum of the bands' limits (see `children::sum_limits` for mixed units).
    pub fn limit(&self) -> Limit {
        sum_limits(self.bands.iter().map(|b| &b.qdisc))
    }
}

struct Band {
    q: Queue,
    /// The child's capacity, which its held head packet counts against.
    limit: Limit,
    weight: u64,
    /// Credit for the band's next turn, in bytes.
    deficit: u64,
    /// A head packet taken out of `q` and waiting for its turn, and whether `q` CE-marked it.
    held: Option<Packet>,
    held_marked: bool,
    active: bool,
}

impl Band {
    fn backlogged(&self) -> bool {
        self.held.is_some() || self.q.len_packets() > 0
    }
}

pub struct Wrr {
    bands: Vec<Band>,
    table: BandTable,
    /// Active list of band indices, head first.
    active: VecDeque<usize>,
}

impl Wrr {
    /// Builds the children; fails only on a configuration that does not validate.
    pub fn new(cfg: &WrrConfig, link_rate: Rate) -> Result<Wrr, String> {
        cfg.validate()?;
        let queues = build_children("bands", cfg.bands.iter().map(|b| &b.qdisc), "qdisc.", link_rate)?;
        let bands = queues
            .into_iter()
            .zip(&cfg.bands)
            .map(|(q, b)| Band {
                q,
                limit: b.qdisc.limit(),
                weight: b.weight as u64,
                deficit: 0,
                held: None,
                held_marked: false,
                active: false,
            })
            .collect::<Vec<_>>();
        Ok(Wrr { table: cfg.classifier.table(bands.len()), bands, active: VecDeque::new() })
    }

    /// The band an arrival would join.
    pub fn classify(&self, p: &Packet) -> usize {
        self.table.band(p)
    }

    /// Band `i`'s own queue (its statistics count a held head packet as dequeued).
    pub fn band(&self, i: usize) -> Option<&Queue> {
        self.bands.get(i).map(|b| &b.q)
    }

    fn deactivate_front(&mut self) {
        if let Some(i) = self.active.pop_front() {
            let b = &mut self.bands[i];
            b.active = false;
            b.deficit = 0;
        }
    }

    /// After a full pass in which no band sent: credits every band holding a head packet the
    /// `k - 1` quanta of the further passes in which none could send either. Bands that held
    /// packets but yielded none (shapers, at this same `now`) would be passed over without
    /// credit in those passes, so they get none here either.
    fn skip_idle_rounds(&mut self) {
        let k = self
            .active
            .iter()
            .filter_map(|&i| {
                let b = &self.bands[i];
                let size = b.held?.size as u64;
                Some(size.saturating_sub(b.deficit).div_ceil(b.weight.max(1)))
            })
            .min()
            .unwrap_or(0);
        if k > 1 {
            for &i in &self.active {
                let b = &mut self.bands[i];
                if b.held.is_none() {
                    continue;
                }
                b.deficit = b.deficit.saturating_add((k - 1).saturating_mul(b.weight));
            }
        }
    }
}

impl Qdisc for Wrr {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        let i = self.table.band(&pkt).min(self.bands.len().saturating_sub(1));
        let Some(b) = self.bands.get_mut(i) else {
            return Verdict::Dropped(crate::qdisc::DropReason::Overflow);
        };
        if let Some(h) = b.held {
            let (n, bytes) = (b.q.len_packets() + 1, b.q.len_bytes() + h.size as u64);
            if !b.limit.admits(n, bytes, pkt.size) {
                return Verdict::Dropped(crate::qdisc::DropReason::Overflow);
            }
        }
        let v = offer(&mut b.q, pkt, now, rng, evicted);
        if !b.active && b.backlogged() {
            b.active = true;
            b.deficit = b.weight;
            self.active.push_back(i);
        }
        v
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        // Consecutive turns that ended without a packet, and how many of them were bands short
        // of credit (the others held packets but yielded none).
        let (mut turns, mut short) = (0usize, 0usize);
        loop {
            if turns >= self.active.len() {
                if short == 0 {
                    return None; // a full pass in which no band yielded a packet
                }
                self.skip_idle_rounds();
                turns = 0;
                short = 0;
            }
            let &i = self.active.front()?;
            let b = &mut self.bands[i];
            if b.held.is_none() {
                let taken = take(&mut b.q, now, dropped);
                b.held = taken.map(|d| d.packet);
                b.held_marked = taken.is_some_and(|d| d.marked);
                if b.held.is_none() {
                    if b.q.len_packets() == 0 {
                        self.deactivate_front();
                        turns = 0;
                        short = 0;
                    } else {
                        // Not ready (a shaper): passed over without credit.
                        turns += 1;
                        self.active.rotate_left(1);
                    }
                    continue;
                }
            }
            let size = b.held.map_or(0, |p| p.size as u64);
            if b.deficit >= size {
                b.deficit -= size;
                let packet = b.held.take();
                let marked = b.held_marked;
                if !b.backlogged() {
                    self.deactivate_front();
                }
                return packet.map(|packet| Dequeued { packet, marked });
            }
            b.deficit = b.deficit.saturating_add(b.weight);
            self.active.rotate_left(1);
            turns += 1;
            short += 1;
        }
    }

    fn len_packets(&self) -> usize {
        self.bands.iter().map(|b| b.q.len_packets() + b.held.is_some() as usize).sum()
    }
    fn len_bytes(&self) -> u64 {
        self.bands.iter().map(|b| b.q.len_bytes() + b.held.map_or(0, |p| p.size as u64)).sum()
    }
    fn kind(&self) -> &'static str {
        "wrr"
    }
    fn flow_states(&self) -> usize {
        self.bands.iter().map(|b| b.q.flow_states()).sum()
    }
    fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.bands.iter().filter_map(|b| if b.held.is_some() { Some(now) } else { b.q.next_dequeue_time(now) }).min()
    }
    /// A labeller when a band holds one (as [`super::prio::Prio`]).
    fn feedback_labeller(&self) -> Option<&dyn FeedbackLabeller> {
        self.bands.iter().any(|b| b.q.is_feedback_labeller()).then_some(self as &dyn FeedbackLabeller)
    }
}

impl FeedbackLabeller for Wrr {
    /// The label of the band `p` was classified to.
    fn feedback_label(&self, p: &Packet) -> Option<FeedbackLabel> {
        self.bands.get(self.table.band(p))?.q.feedback_label(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::build_qdisc;
    use crate::qdisc::droptail::DropTailConfig;
    use crate::qdisc::prio::PrioConfig;
    use crate::qdisc::red::{RedConfig, RedMode};
    use crate::qdisc::testutil::pkt;

    fn dt(n: u64) -> QdiscConfig {
        QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(n) })
    }

    fn band(weight: u32, qdisc: QdiscConfig) -> WrrBand {
        WrrBand { weight, qdisc }
    }

    fn wrr(bands: Vec<WrrBand>, classifier: Classifier) -> Queue {
        build_qdisc(&QdiscConfig::Wrr(WrrConfig { bands, classifier }), Rate::mbps(10)).unwrap()
    }

    /// Band 0 by class 3, band 1 by class 0 (the default band).
    fn two_way() -> Classifier {
        Classifier::Class { map: Some(vec![(3, 0)]), default_band: Some(1) }
    }

    /// Runs `steps` dequeues; before each, `arrive(step, uid)` lists the arrivals. Returns the
    /// bytes and packets served per class and the queue for further checks.
    fn drive(q: &mut Queue, steps: usize, mut arrive: impl FnMut(usize) -> Vec<(u8, u32)>) -> ([u64; 4], Vec<u8>) {
        let mut rng = SimRng::stream(7, "t");
        let mut bytes = [0u64; 4];
        let mut order = Vec::new();
        let mut uid = 0;
        for step in 0..steps {
            for (class, size) in arrive(step) {
                uid += 1;
                q.enqueue(Packet { class, ..pkt(uid, class as u32, size) }, Time::ZERO, &mut rng);
            }
            if let Some(p) = q.dequeue(Time::ZERO).packet {
                bytes[p.class as usize] += p.size as u64;
                order.push(p.class);
            }
            q.check_invariants().unwrap();
        }
        (bytes, order)
    }

    fn share(a: u64, b: u64) -> f64 {
        a as f64 / (a + b) as f64
    }

    #[test]
    fn weights_are_honoured_in_bytes_under_saturation() {
        let mut rng = SimRng::stream(3, "sizes");
        let mut sizes: Vec<u32> = (0..200_000).map(|_| 40 + (rng.next_u64() % 1461) as u32).collect();
        for (w0, w1) in [(1500, 1500), (4500, 1500), (3, 1), (50, 50)] {
            let mut q = wrr(vec![band(w0, dt(50)), band(w1, dt(50))], two_way());
            // Band 0: 1500-byte packets; band 1: random sizes 40..1500. Both always backlogged.
            let (bytes, _) = drive(&mut q, 60_000, |_| vec![(3, 1500), (0, sizes.pop().unwrap_or(700))]);
            let want = w0 as f64 / (w0 + w1) as f64;
            let got = share(bytes[3], bytes[0]);
            assert!((got - want).abs() < 0.01, "weights {w0}:{w1}: band 0 got {got}, want {want}");
        }
    }

    #[test]
    fn round_skipping_gives_exactly_the_plain_drr_order() {
        // Reference: S&V / Linux sch_drr walked one turn at a time, no skipping.
        fn reference(weights: &[u64], queues: &mut [VecDeque<u32>]) -> Vec<usize> {
            let mut active: VecDeque<usize> = (0..queues.len()).filter(|&i| !queues[i].is_empty()).collect();
            let mut deficit: Vec<u64> = weights.to_vec();
            let mut out = Vec::new();
            while let Some(&i) = active.front() {
                let size = queues[i][0] as u64;
                if deficit[i] >= size {
                    deficit[i] -= size;
                    queues[i].pop_front();
                    out.push(i);
                    if queues[i].is_empty() {
                        active.pop_front();
                        deficit[i] = 0;
                    }
                } else {
                    deficit[i] += weights[i];
                    active.rotate_left(1);
                }
            }
            out
        }
        let mut rng = SimRng::stream(11, "sizes");
        for weights in [vec![1u32, 1, 1], vec![7, 300, 1500], vec![50, 50, 2], vec![1, 1000, 13]] {
            let mut queues: Vec<VecDeque<u32>> = (0..3).map(|_| (0..200).map(|_| 40 + (rng.next_u64() % 1461) as u32).collect()).collect();
            let cls = Classifier::Class { map: Some(vec![(3, 0), (2, 1), (1, 2)]), default_band: Some(2) };
            let mut q = wrr(weights.iter().map(|&w| band(w, dt(1000))).collect(), cls);
            let mut r = SimRng::stream(1, "t");
            let mut uid = 0;
            for (i, qu) in queues.iter().enumerate() {
                for &size in qu {
                    uid += 1;
                    q.enqueue(Packet { class: 3 - i as u8, ..pkt(uid, 0, size) }, Time::ZERO, &mut r);
                }
            }
            let got: Vec<usize> = std::iter::from_fn(|| q.dequeue(Time::ZERO).packet).map(|p| 3 - p.class as usize).collect();
            let w: Vec<u64> = weights.iter().map(|&w| w as u64).collect();
            assert_eq!(got, reference(&w, &mut queues), "weights {weights:?}");
        }
    }

    #[test]
    fn a_low_weight_band_is_never_starved() {
        // 1500-byte packets on both; band 1 weighs 1/16 of band 0 and is below one packet.
        let mut q = wrr(vec![band(1500, dt(50)), band(100, dt(50))], two_way());
        let (bytes, order) = drive(&mut q, 32_000, |_| vec![(3, 1500), (0, 1500)]);
        let got = share(bytes[0], bytes[3]);
        assert!((got - 100.0 / 1600.0).abs() < 0.01, "low band share {got}");
        // Between two services of the low band there are at most 15 packets of the other.
        let mut gap = 0;
        for c in order {
            if c == 0 {
                gap = 0;
            } else {
                gap += 1;
                assert!(gap <= 15, "low band waited {gap} packets");
            }
        }
    }

    #[test]
    fn an_idle_band_does_not_bank_credit() {
        let mut q = wrr(vec![band(1500, dt(100)), band(1500, dt(100))], two_way());
        // Band 1 alone for a while, then both: service alternates from the start.
        let (_, order) = drive(&mut q, 200, |s| if s < 100 { vec![(0, 1000)] } else { vec![(3, 1000), (0, 1000)] });
        let tail = &order[110..190];
        let zeros = tail.iter().filter(|&&c| c == 0).count();
        assert!((zeros as i64 - 40).abs() <= 2, "{zeros} of 80");
    }

    #[test]
    fn pels_router_wrr_of_strict_priority_and_internet_fifo() {
        // Kang, Zhang, Dai and Loguinov, PELS, section 4.1 and Fig. 4: WRR with weights 50/50
        // between the PELS queue (strict priority green > yellow > red) and an Internet FIFO.
        let pels = QdiscConfig::Prio(PrioConfig { bands: vec![dt(50), dt(50), dt(50)], classifier: Classifier::default() });
        let cfg = WrrConfig {
            bands: vec![band(50, pels), band(50, dt(50))],
            classifier: Classifier::Class { map: Some(vec![(3, 0), (2, 0), (1, 0)]), default_band: None },
        };
        let json = serde_json::to_string(&QdiscConfig::Wrr(cfg.clone())).unwrap();
        assert_eq!(serde_json::from_str::<QdiscConfig>(&json).unwrap(), QdiscConfig::Wrr(cfg.clone()));
        // Offered loads in packets per link slot (500-byte packets as in the paper's
        // simulations); the Internet FIFO is always saturated, and the PELS queue is offered
        // more than its half: (green, yellow, red) -> expected served per slot.
        let cases = [
            ((0.2, 0.2, 0.3), (0.2, 0.2, 0.1)), // red absorbs the shortfall
            ((0.2, 0.4, 0.3), (0.2, 0.3, 0.0)), // red starved, yellow partially served
            ((0.6, 0.2, 0.3), (0.5, 0.0, 0.0)), // yellow and red starved
        ];
        for ((g, y, r), (eg, ey, er)) in cases {
            let mut q = build_qdisc(&QdiscConfig::Wrr(cfg.clone()), Rate::mbps(4)).unwrap();
            let mut acc = [0.0f64; 3];
            let steps = 40_000;
            let (bytes, _) = drive(&mut q, steps, |_| {
                let mut a = vec![(0u8, 500u32)];
                for (k, (load, class)) in [(g, 3u8), (y, 2), (r, 1)].into_iter().enumerate() {
                    acc[k] += load;
                    while acc[k] >= 1.0 {
                        acc[k] -= 1.0;
                        a.push((class, 500));
                    }
                }
                a
            });
            let per_slot = |c: usize| bytes[c] as f64 / 500.0 / steps as f64;
            let pels = per_slot(1) + per_slot(2) + per_slot(3);
            assert!((pels - 0.5).abs() < 0.005, "PELS share {pels}");
            assert!((per_slot(0) - 0.5).abs() < 0.005, "Internet share {}", per_slot(0));
            for (got, want, name) in [(per_slot(3), eg, "green"), (per_slot(2), ey, "yellow"), (per_slot(1), er, "red")] {
                assert!((got - want).abs() < 0.005, "loads {g}/{y}/{r}: {name} got {got}, want {want}");
            }
        }
    }

    #[test]
    fn drops_and_early_drops_of_children_propagate() {
        let red = QdiscConfig::Red(RedConfig {
            limit: Limit::Packets(100),
            min_th: 0.0,
            max_th: 0.5,
            w_q: 1.0,
            max_p: 1.0,
            gentle: false,
            mode: RedMode::Packets,
            ecn: false,
            mean_pkt_size: 500,
            wait: false,
        });
        let mut q = wrr(vec![band(1500, dt(1)), band(1500, red)], two_way());
        let mut rng = SimRng::stream(1, "t");
        let p = |uid, class| Packet { class, ..pkt(uid, 0, 500) };
        assert_eq!(q.enqueue(p(0, 3), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(p(1, 3), Time::ZERO, &mut rng).verdict, Verdict::Dropped(crate::qdisc::DropReason::Overflow));
        assert_eq!(q.enqueue(p(2, 0), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(p(3, 0), Time::ZERO, &mut rng).verdict, Verdict::Dropped(crate::qdisc::DropReason::Forced));
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_shaped_band_not_ready_is_passed_over() {
        use crate::qdisc::tbf::TbfConfig;
        let tbf = QdiscConfig::Tbf(TbfConfig { rate: Rate(8_000), burst: 500, limit: Limit::Bytes(10_000) });
        let mut q = wrr(vec![band(1500, tbf), band(1500, dt(10))], two_way());
        let mut rng = SimRng::stream(1, "t");
        for uid in 0..2 {
            q.enqueue(Packet { class: 3, ..pkt(uid, 0, 500) }, Time::ZERO, &mut rng);
        }
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 0);
        assert_eq!(q.dequeue(Time::ZERO).packet, None, "shaper not ready, other band empty");
        assert_eq!(q.next_dequeue_time(Time::ZERO), Some(Time::from_millis(500)));
        q.enqueue(Packet { class: 0, ..pkt(2, 0, 500) }, Time::ZERO, &mut rng);
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 2);
        assert_eq!(q.dequeue(Time::from_millis(500)).packet.unwrap().uid, 1);
        assert_eq!(q.len_packets(), 0);
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_held_head_packet_counts_against_its_bands_limit() {
        let mut q = wrr(vec![band(100, dt(2)), band(1500, dt(2))], two_way());
        let mut rng = SimRng::stream(1, "t");
        let p = |uid, class| Packet { class, ..pkt(uid, 0, 1000) };
        for uid in 0..2 {
            q.enqueue(p(uid, 3), Time::ZERO, &mut rng);
            q.enqueue(p(10 + uid, 0), Time::ZERO, &mut rng);
        }
        // Band 0 (weight 100) has its head taken out to learn its size; band 1 sends.
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 10);
        // Band 0: one packet in the child, one held: full.
        assert_eq!(q.enqueue(p(2, 3), Time::ZERO, &mut rng).verdict, Verdict::Dropped(crate::qdisc::DropReason::Overflow));
        assert_eq!(q.enqueue(p(12, 0), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.len_packets(), 4);
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_band() {
        let bad = QdiscConfig::Droptail(DropTailConfig { limit: Limit::Bytes(0) });
        let e = WrrConfig { bands: vec![band(1, dt(1)), band(1, bad)], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands.1.qdisc.limit:"), "{e}");
        let e = WrrConfig { bands: vec![band(1, dt(1)), band(0, dt(1))], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands.1.weight:"), "{e}");
        let e = WrrConfig { bands: vec![], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands:"), "{e}");
        let inner = QdiscConfig::Prio(PrioConfig {
            bands: vec![dt(1), QdiscConfig::Droptail(DropTailConfig { limit: Limit::Packets(0) })],
            classifier: Classifier::default(),
        });
        let e = WrrConfig { bands: vec![band(1, inner)], classifier: Classifier::default() }.validate().unwrap_err();
        assert!(e.starts_with("bands.0.qdisc.bands.1.limit:"), "{e}");
        let e = WrrConfig { bands: vec![band(1, dt(1))], classifier: Classifier::Dscp { map: vec![(46, 1)], default_band: None } }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("classifier.map.0:"), "{e}");
        assert!(serde_json::from_str::<WrrConfig>(
            r#"{"bands": [{"weight": 1, "qdisc": {"kind": "fifo", "limit": {"packets": 1}}, "prio": 2}]}"#
        )
        .is_err());
    }
}
