//! FQ-PIE: flow queueing with PIE in every queue, as Linux `net/sched/sch_fq_pie.c` (G.
//! Ramakrishnan, M. Bhasi, V. Saicharan, L. Monis, S. D. Patil, M. P. Tahiliani, "FQ-PIE Queue
//! Discipline in the Linux Kernel: Design, Implementation and Challenges", IEEE LCN Symposium
//! 2019); defaults as `tc-fq_pie(8)`.
//!
//! * **Classification**: packets are hashed by their flow key into `flows` buckets (default
//!   1024) exactly as FQ-CoDel does ([`bucket`], a fixed salt instead of Linux's random
//!   perturbation).
//! * **Scheduler** (Linux `fq_pie_qdisc_dequeue`): FQ-CoDel's deficit round robin over new and
//!   old flows ([`FlowLists`], RFC 8290 section 4.2), with a `quantum` of 1514 B.
//! * **PIE per queue** (Linux `fq_pie_qdisc_enqueue`, `pie_drop_early`): each bucket keeps its
//!   own PIE state ([`PieVars`], the same code as [`super::pie`]): the arrival is dropped early
//!   with the bucket's probability, tested against the bucket's own backlog (the 2-MTU floor),
//!   or CE-marked instead if `ecn` is on, the packet is ECN-capable and the probability is at
//!   most `ecn_prob` %. Drops happen on arrival only.
//! * **Probability updates** (Linux `fq_pie_timer`): every `t_update` every bucket's probability
//!   is updated from its own delay (the sojourn time of its last departure, or with the rate
//!   estimator its backlog over its departure rate). Lazily, as PIE ([`LazyTimer`]); a bucket
//!   whose update would change nothing (empty, probability 0, burst allowance full) is not
//!   visited until a packet arrives to it, which gives the same states as visiting it.
//! * **Overflow** (Linux): an arrival that finds `limit` packets (or would exceed a byte
//!   `limit`) is dropped; unlike FQ-CoDel nothing is pushed out of the fattest queue.
//!
//! Random numbers come only from the `rng` the engine passes to `enqueue`.

use super::pie::{self, PieConfig, PieEstimator, PieVars};
use super::shared::flow_key::{FlowKeyConfig, FlowKeyer};
use super::shared::flow_lists::{bucket, idle_rounds, FlowLists};
use super::shared::lazy_timer::LazyTimer;
use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

fn default_limit() -> Limit {
    Limit::Packets(10_240)
}
fn default_flows() -> u32 {
    1024
}
fn default_quantum() -> u32 {
    1514
}
fn default_ecn_prob() -> u32 {
    10
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqPieConfig {
    /// Capacity over all queues, packets or bytes (Linux `fq_pie_init`: 10240 packets).
    #[serde(default = "default_limit")]
    pub limit: Limit,
    /// Hash buckets, i.e. flow queues (Linux: 1024; 1..=65536).
    #[serde(default = "default_flows")]
    pub flows: u32,
    /// DRR bytes per round (Linux: `psched_mtu`, 1514 B on Ethernet; 1..=2^20).
    #[serde(default = "default_quantum")]
    pub quantum: u32,
    /// PIE target delay per queue (Linux `pie_params_init`: 15 ms).
    #[serde(default = "pie::default_15ms")]
    pub target_ns: u64,
    /// Probability update period (Linux: 15 ms).
    #[serde(default = "pie::default_15ms")]
    pub t_update_ns: u64,
    /// Weight of the delay error, 1/s (Linux: 2/16 = 0.125).
    #[serde(default = "pie::default_alpha")]
    pub alpha: f64,
    /// Weight of the delay trend, 1/s (Linux: 20/16 = 1.25).
    #[serde(default = "pie::default_beta")]
    pub beta: f64,
    /// Burst allowance per queue (Linux: 150 ms).
    #[serde(default = "pie::default_max_burst")]
    pub max_burst_ns: u64,
    /// CE-mark ECN-capable arrivals instead of dropping them (Linux default off).
    #[serde(default)]
    pub ecn: bool,
    /// Highest drop probability that marks instead of drops, percent (Linux: 10).
    #[serde(default = "default_ecn_prob")]
    pub ecn_prob: u32,
    /// Scale the drop probability by packet size / mtu (Linux default off).
    #[serde(default)]
    pub bytemode: bool,
    /// The 2-packet no-drop floor and the bytemode unit (default 1500 B).
    #[serde(default = "pie::default_mtu")]
    pub mtu: u32,
    /// Spread drops with the accumulated probability (RFC 8033 section 5.4; off as PIE here).
    #[serde(default)]
    pub derandomize: bool,
    /// Queue delay from timestamps (Linux default: `dq_rate_estimator` off) or departure rate.
    #[serde(default)]
    pub estimator: PieEstimator,
    /// Bytes per departure-rate measurement (16 KiB, as PIE).
    #[serde(default = "pie::default_dq_threshold")]
    pub dq_threshold: u32,
    /// Header fields that identify a flow (default: the 5-tuple).
    #[serde(default)]
    pub flow_key: FlowKeyConfig,
}

impl Default for FqPieConfig {
    fn default() -> FqPieConfig {
        FqPieConfig {
            limit: default_limit(),
            flows: default_flows(),
            quantum: default_quantum(),
            target_ns: pie::default_15ms(),
            t_update_ns: pie::default_15ms(),
            alpha: pie::default_alpha(),
            beta: pie::default_beta(),
            max_burst_ns: pie::default_max_burst(),
            ecn: false,
            ecn_prob: default_ecn_prob(),
            bytemode: false,
            mtu: pie::default_mtu(),
            derandomize: false,
            estimator: PieEstimator::Timestamp,
            dq_threshold: pie::default_dq_threshold(),
            flow_key: FlowKeyConfig::default(),
        }
    }
}

impl FqPieConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 || self.flows > 65_536 {
            return Err(format!("flows: must be in 1..=65536 buckets (tc-fq_pie; default 1024), got {}", self.flows));
        }
        if self.quantum == 0 || self.quantum > 1 << 20 {
            return Err(format!("quantum: must be in 1..=1048576 bytes (tc-fq_pie; default 1514), got {}", self.quantum));
        }
        if self.ecn_prob > 100 {
            return Err(format!("ecn_prob: must be a percentage in 0..=100 (default 10), got {}", self.ecn_prob));
        }
        self.pie().validate()?;
        self.flow_key.validate()
    }

    /// The PIE parameters every queue shares.
    fn pie(&self) -> PieConfig {
        PieConfig {
            limit: self.limit,
            target_ns: self.target_ns,
            t_update_ns: self.t_update_ns,
            alpha: self.alpha,
            beta: self.beta,
            max_burst_ns: self.max_burst_ns,
            ecn: self.ecn,
            mark_ecn_threshold: self.ecn_prob as f64 / 100.0,
            bytemode: self.bytemode,
            mtu: self.mtu,
            derandomize: self.derandomize,
            estimator: self.estimator,
            dq_threshold: self.dq_threshold,
        }
    }
}

/// One bucket (Linux `struct fq_pie_flow`).
struct Bucket {
    q: PacketFifo,
    deficit: i64,
    pie: PieVars,
    /// On the new or the old list.
    listed: bool,
    /// In `awake`: its PIE state may change at the next update.
    awake: bool,
}

pub struct FqPie {
    limit: Limit,
    quantum: i64,
    pie: PieConfig,
    keyer: FlowKeyer,
    buckets: Vec<Bucket>,
    lists: FlowLists,
    /// Buckets whose PIE state is not at rest, in the order they woke (module docs).
    awake: Vec<u32>,
    timer: LazyTimer,
    packets: usize,
    bytes: u64,
}

impl FqPie {
    pub fn new(cfg: FqPieConfig) -> FqPie {
        let pie = cfg.pie();
        FqPie {
            limit: cfg.limit,
            quantum: cfg.quantum.max(1) as i64,
            keyer: FlowKeyer::new(&cfg.flow_key),
            buckets: (0..cfg.flows.max(1))
                .map(|_| Bucket { q: PacketFifo::default(), deficit: 0, pie: PieVars::new(&pie), listed: false, awake: false })
                .collect(),
            lists: FlowLists::default(),
            awake: Vec::new(),
            timer: LazyTimer::new(cfg.t_update_ns),
            pie,
            packets: 0,
            bytes: 0,
        }
    }

    /// The bucket of `p`.
    pub fn bucket_of(&self, p: &Packet) -> usize {
        bucket(self.keyer.key(p), self.buckets.len())
    }

    /// The drop probability of bucket `i`.
    pub fn bucket_drop_prob(&self, i: usize) -> f64 {
        self.buckets[i].pie.drop_prob
    }

    fn wake(&mut self, i: usize) {
        if !self.buckets[i].awake {
            self.buckets[i].awake = true;
            self.awake.push(i as u32);
        }
    }

    /// Linux `fq_pie_timer`: every update due by `now` runs on every bucket not at rest.
    fn catch_up(&mut self, now: Time) {
        let mut timer = self.timer;
        timer.catch_up(now, |_| {
            let (pie, buckets) = (&self.pie, &mut self.buckets);
            for &i in &self.awake {
                let b = &mut buckets[i as usize];
                b.pie.update(pie, b.q.bytes());
            }
            // Buckets whose next update would change nothing fall asleep.
            self.awake.retain(|&i| {
                let b = &mut buckets[i as usize];
                b.awake = !(b.q.is_empty() && b.pie.at_rest(pie, 0));
                b.awake
            });
        });
        self.timer = timer;
    }
}

impl Qdisc for FqPie {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        self.catch_up(now);
        let idx = self.bucket_of(&pkt);
        self.wake(idx);
        let b = &mut self.buckets[idx];
        if !self.limit.admits(self.packets, self.bytes, pkt.size) {
            b.pie.on_drop();
            return Verdict::Dropped(DropReason::Overflow);
        }
        let mut verdict = Verdict::Enqueued;
        if b.pie.drop_early(&self.pie, b.q.bytes(), pkt.size, rng) {
            let markable = self.pie.ecn && pkt.ecn.is_ect() && b.pie.drop_prob <= self.pie.mark_ecn_threshold;
            if !markable {
                b.pie.on_drop();
                return Verdict::Dropped(DropReason::Early);
            }
            pkt.ecn = Ecn::Ce;
            verdict = Verdict::Marked;
        }
        self.packets += 1;
        self.bytes += pkt.size as u64;
        b.q.push(pkt);
        if !b.listed {
            b.listed = true;
            b.deficit = self.quantum;
            self.lists.new_flows.push_back(idx as u32);
        }
        verdict
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        self.catch_up(now);
        let mut refills = 0;
        loop {
            let (from_new, i) = self.lists.front()?;
            let b = &mut self.buckets[i as usize];
            if b.deficit <= 0 {
                b.deficit += self.quantum;
                self.lists.pop_front(from_new);
                self.lists.old_flows.push_back(i);
                refills += 1;
                if refills >= self.lists.len() {
                    let skip = idle_rounds(self.lists.iter().map(|j| self.buckets[j as usize].deficit), self.quantum);
                    for j in self.lists.iter() {
                        self.buckets[j as usize].deficit += skip * self.quantum;
                    }
                    refills = 0;
                }
                continue;
            }
            refills = 0;
            let Some(p) = b.q.pop() else {
                // Linux: an emptied new flow goes to the tail of old flows if there are any,
                // so that it cannot starve them by re-entering new flows.
                self.lists.pop_front(from_new);
                if from_new && !self.lists.old_flows.is_empty() {
                    self.lists.old_flows.push_back(i);
                } else {
                    b.listed = false;
                }
                continue;
            };
            b.deficit -= p.size as i64;
            self.packets -= 1;
            self.bytes -= p.size as u64;
            b.pie.on_dequeue(&self.pie, &p, b.q.bytes(), b.q.is_empty(), now);
            return Some(Dequeued::unmarked(p));
        }
    }

    fn len_packets(&self) -> usize {
        self.packets
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn kind(&self) -> &'static str {
        "fq_pie"
    }
    /// The flows on the new and old lists, and the largest drop probability of any bucket.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        out.push(NamedStat { name: "new_flows", value: self.lists.new_flows.len() as f64 });
        out.push(NamedStat { name: "old_flows", value: self.lists.old_flows.len() as f64 });
        let max_p = self.awake.iter().map(|&i| self.buckets[i as usize].pie.drop_prob).fold(0.0, f64::max);
        out.push(NamedStat { name: "max_drop_probability", value: max_p });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::pie::Pie;
    use crate::qdisc::shared::flow_key::FlowField;
    use crate::qdisc::testutil::pkt;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn by_flow() -> FqPieConfig {
        FqPieConfig { flow_key: FlowKeyConfig::of(&[FlowField::Flow]), ..FqPieConfig::default() }
    }

    /// Flow numbers in distinct buckets of `q`.
    fn distinct_flows(q: &FqPie, n: usize) -> Vec<u32> {
        let mut used = std::collections::HashSet::new();
        (0..1000u32).filter(|f| used.insert(q.bucket_of(&pkt(0, *f, 100)))).take(n).collect()
    }

    /// A link serving one 1000 B packet per ms; flow `flood` sends two 1000 B packets per ms,
    /// flow `sparse` one 200 B packet every 10 ms, for 6 s. Returns the sparse flow's worst
    /// sojourn after the first second and its drops, and the flood's drops.
    fn flood_and_sparse(q: &mut dyn Qdisc, flood: u32, sparse: u32) -> (Time, u32, u32) {
        let mut rng = SimRng::stream(5, "fq_pie-test");
        let mut ev = Vec::new();
        let (mut worst, mut sparse_drops, mut flood_drops) = (Time::ZERO, 0, 0);
        let mut uid = 0;
        for t in 0..6000 {
            let now = ms(t);
            let mut arrivals = vec![(flood, 1000), (flood, 1000)];
            if t % 10 == 0 {
                arrivals.push((sparse, 200));
            }
            for (f, size) in arrivals {
                let mut p = pkt(uid, f, size);
                p.enqueued_at = now;
                uid += 1;
                if let Verdict::Dropped(_) = q.enqueue(p, now, &mut rng, &mut ev) {
                    if f == sparse {
                        sparse_drops += 1;
                    } else {
                        flood_drops += 1;
                    }
                }
            }
            // One departure per ms, plus the sparse packet's 200 B in the same millisecond.
            for _ in 0..2 {
                if let Some(d) = q.dequeue(now, &mut Vec::new()) {
                    if d.packet.flow == sparse && t >= 1000 {
                        worst = worst.max(now - d.packet.enqueued_at);
                    }
                    if d.packet.flow != sparse {
                        break;
                    }
                }
            }
        }
        (worst, sparse_drops, flood_drops)
    }

    #[test]
    fn a_sparse_flow_is_isolated_from_a_flood() {
        let mut q = FqPie::new(by_flow());
        let f = distinct_flows(&q, 2);
        let (worst, sparse_drops, flood_drops) = flood_and_sparse(&mut q, f[0], f[1]);
        // The sparse flow's queue is served as a new flow: at most a millisecond of waiting
        // and no drop, while the flood's own PIE drops about half of it.
        assert!(worst <= ms(1), "sparse sojourn {worst:?}");
        assert_eq!(sparse_drops, 0);
        assert!(flood_drops > 4000, "flood drops {flood_drops}");
        let (flood_b, sparse_b) = (q.bucket_of(&pkt(0, f[0], 1)), q.bucket_of(&pkt(0, f[1], 1)));
        assert!(q.bucket_drop_prob(flood_b) > 0.2, "{}", q.bucket_drop_prob(flood_b));
        assert_eq!(q.bucket_drop_prob(sparse_b), 0.0);
        // The mechanism: one PIE for both flows makes the sparse flow wait behind the flood's
        // standing queue (near PIE's 15 ms target) and share its drop probability.
        let mut pie = Pie::new(PieConfig { limit: Limit::Packets(10_240), ..PieConfig::default() });
        let (worst, sparse_drops, _) = flood_and_sparse(&mut pie, f[0], f[1]);
        assert!(worst > ms(10), "sparse sojourn under one PIE {worst:?}");
        assert!(sparse_drops > 20, "sparse drops under one PIE {sparse_drops}");
    }

    #[test]
    fn overflow_drops_the_arrival_in_packets_or_bytes() {
        for limit in [Limit::Packets(3), Limit::Bytes(3000)] {
            let mut q = FqPie::new(FqPieConfig { limit, ..by_flow() });
            let mut rng = SimRng::stream(1, "t");
            let mut ev = Vec::new();
            let v: Vec<Verdict> = (0..4).map(|i| q.enqueue(pkt(i, i as u32, 1000), Time::ZERO, &mut rng, &mut ev)).collect();
            assert_eq!(v[3], Verdict::Dropped(DropReason::Overflow), "{limit:?}");
            assert!(ev.is_empty(), "nothing is pushed out");
            assert_eq!((q.len_packets(), q.len_bytes()), (3, 3000));
        }
    }

    #[test]
    fn ecn_marks_below_ecn_prob() {
        let mut rng = SimRng::stream(1, "t");
        for (prob, want) in [(0.08, Verdict::Marked), (0.3, Verdict::Dropped(DropReason::Early))] {
            let mut q = FqPie::new(FqPieConfig { ecn: true, t_update_ns: u64::MAX / 4, ..by_flow() });
            let mut ev = Vec::new();
            let mut seen = false;
            for i in 0..500 {
                let b = q.bucket_of(&pkt(0, 1, 1000));
                q.buckets[b].pie.drop_prob = prob;
                q.buckets[b].pie.burst_allowance = Time::ZERO;
                q.buckets[b].pie.qdelay = ms(30);
                let mut p = pkt(i, 1, 1000);
                p.ecn = Ecn::Ect0;
                let v = q.enqueue(p, Time::ZERO, &mut rng, &mut ev);
                assert!(v == Verdict::Enqueued || v == want, "{prob}: {v:?}");
                seen |= v == want;
            }
            assert!(seen, "{prob}");
        }
    }

    #[test]
    fn idle_buckets_fall_asleep_and_updates_skip_them() {
        let mut q = FqPie::new(by_flow());
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for f in distinct_flows(&q, 50) {
            q.enqueue(pkt(f as u64, f, 1000), Time::ZERO, &mut rng, &mut ev);
        }
        while q.dequeue(Time::ZERO, &mut Vec::new()).is_some() {}
        assert_eq!(q.awake.len(), 50);
        // Idle with nothing to decay: the first update finds them at rest.
        q.catch_up(ms(15));
        assert!(q.awake.is_empty());
        assert!(q.buckets.iter().all(|b| !b.awake));
    }

    #[test]
    fn validation_names_the_field() {
        let d = FqPieConfig::default;
        assert!(d().validate().is_ok());
        assert!(FqPieConfig { flows: 0, ..d() }.validate().unwrap_err().starts_with("flows"));
        assert!(FqPieConfig { flows: 65_537, ..d() }.validate().unwrap_err().starts_with("flows"));
        assert!(FqPieConfig { quantum: 0, ..d() }.validate().unwrap_err().starts_with("quantum"));
        assert!(FqPieConfig { ecn_prob: 101, ..d() }.validate().unwrap_err().starts_with("ecn_prob"));
        assert!(FqPieConfig { target_ns: 0, ..d() }.validate().unwrap_err().starts_with("target_ns"));
    }
}
