//! FQ-CoDel: flow queueing with CoDel in every queue, after RFC 8290 (T. Hoeiland-Joergensen,
//! P. McKenney, D. Taht, J. Gettys, E. Dumazet, "The Flow Queue CoDel Packet Scheduler and
//! Active Queue Management Algorithm", 2018) and Linux `net/sched/sch_fq_codel.c`.
//!
//! * **Classification** (RFC 8290 section 4.1.1): packets are hashed by their flow key (the
//!   project's [`FlowKeyConfig`], default the 5-tuple) into `flows` buckets (default 1024), each
//!   a FIFO with its own CoDel state. The hash is the flow key through a SplitMix64 finalizer with
//!   a fixed salt, scaled onto the buckets as Linux's `reciprocal_scale`: deterministic for a
//!   run (Linux perturbs with a random value per qdisc; we have no per-build randomness, and a
//!   fixed salt keeps the same scenario giving the same bytes). Flows that collide share a queue.
//! * **Scheduler** (section 4.2, Linux `fq_codel_dequeue`): deficit round robin over two lists.
//!   A queue that becomes non-empty while on neither list joins the tail of *new flows* with a
//!   deficit of one `quantum` (default 1514 B as Linux: an Ethernet frame). Dequeue takes the
//!   head of new flows, else of old flows; a queue whose deficit is spent gets another quantum
//!   and moves to the tail of old flows. A queue that turns out empty when its turn comes leaves
//!   its list; if it was on new flows and old flows are not empty it goes to the tail of old
//!   flows instead (section 4.2: this keeps a flow from re-entering new flows to starve others).
//!   So a sparse flow's packet is served before any bulk backlog on the old list.
//! * **CoDel per queue** (section 4.3): the queue's head is passed through CoDel
//!   ([`super::codel::CodelVars`]) with the shared `target`, `interval`, `mtu` and `ecn`
//!   (RFC 8290 section 5.1: ECN on by default). As in Linux, the "more than one MTU queued" test
//!   uses the whole qdisc's backlog, not the queue's (ns-3's FqCoDel uses the queue's).
//! * **Overflow** (section 4.1.3, Linux `fq_codel_drop`): when the packet `limit` (default 10240)
//!   or the optional `memory_limit` in bytes is exceeded after an arrival, the *fattest* queue
//!   (most bytes; the lowest bucket among equals, as Linux's scan) loses packets from its head
//!   until half of its bytes are gone or `drop_batch` (default 64) packets are dropped, Linux's
//!   batch drop (ns-3's FqCoDel does the same). With a byte `limit`, batches repeat until the
//!   buffer is within it. Head drops of queued packets are `Evicted`; if the arrival itself is
//!   among them (its queue emptied), the arrival is refused as `Overflow`.

use super::codel::{self, CodelParams, CodelVars, HeadActions};
use super::shared::flow_key::{FlowKeyConfig, FlowKeyer};
use super::shared::flow_lists::{bucket, idle_rounds};
use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Linux `fq_codel`'s quantum on Ethernet: `psched_mtu` = 1500 B + 14 B header.
pub const DEFAULT_QUANTUM: u32 = 1514;
/// RFC 8290 section 5.1 / Linux: 1024 flow queues.
pub const DEFAULT_FLOWS: u32 = 1024;
/// Linux and RFC 8290 section 5.1: a 10240-packet limit.
pub const DEFAULT_LIMIT: Limit = Limit::Packets(10_240);
/// Linux: at most 64 packets dropped per overflow.
pub const DEFAULT_DROP_BATCH: u32 = 64;

fn default_limit() -> Limit {
    DEFAULT_LIMIT
}
fn default_flows() -> u32 {
    DEFAULT_FLOWS
}
fn default_quantum() -> u32 {
    DEFAULT_QUANTUM
}
fn default_drop_batch() -> u32 {
    DEFAULT_DROP_BATCH
}
fn default_true() -> bool {
    true
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Capacity over all queues, packets (default 10240) or bytes.
    #[serde(default = "default_limit")]
    pub limit: Limit,
    /// Optional cap on the bytes queued over all queues (Linux's `memory_limit`, default none).
    #[serde(default)]
    pub memory_limit: Option<u64>,
    /// Number of hash buckets, i.e. flow queues (default 1024).
    #[serde(default = "default_flows")]
    pub flows: u32,
    /// DRR bytes per round per queue (default 1514, as Linux).
    #[serde(default = "default_quantum")]
    pub quantum: u32,
    /// CoDel target per queue (default 5 ms).
    #[serde(default = "codel::default_target_ns")]
    pub target_ns: u64,
    /// CoDel interval per queue (default 100 ms).
    #[serde(default = "codel::default_interval_ns")]
    pub interval_ns: u64,
    /// Largest packet, for CoDel's "more than one MTU queued" test (default 1500 B).
    #[serde(default = "codel::default_mtu")]
    pub mtu: u32,
    /// CE-mark ECN-capable packets instead of dropping (RFC 8290 section 5.1: default on).
    #[serde(default = "default_true")]
    pub ecn: bool,
    /// Most packets dropped from the fattest queue per overflow (default 64, as Linux).
    #[serde(default = "default_drop_batch")]
    pub drop_batch: u32,
    /// Header fields that identify a flow (default: the 5-tuple).
    #[serde(default)]
    pub flow_key: FlowKeyConfig,
}

impl Default for FqCodelConfig {
    fn default() -> FqCodelConfig {
        FqCodelConfig {
            limit: DEFAULT_LIMIT,
            memory_limit: None,
            flows: DEFAULT_FLOWS,
            quantum: DEFAULT_QUANTUM,
            target_ns: codel::DEFAULT_TARGET_NS,
            interval_ns: codel::DEFAULT_INTERVAL_NS,
            mtu: codel::DEFAULT_MTU,
            ecn: true,
            drop_batch: DEFAULT_DROP_BATCH,
            flow_key: FlowKeyConfig::default(),
        }
    }
}

impl FqCodelConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if self.memory_limit == Some(0) {
            return Err("memory_limit: must be at least 1 byte, or left out for none".into());
        }
        if self.flows == 0 || self.flows > 65_536 {
            return Err(format!("flows: must be in 1..=65536 buckets (default 1024), got {}", self.flows));
        }
        if self.quantum == 0 {
            return Err("quantum: must be at least 1 byte (default 1514)".into());
        }
        if self.drop_batch == 0 {
            return Err("drop_batch: must be at least 1 packet (default 64)".into());
        }
        self.params().validate()?;
        self.flow_key.validate()
    }

    fn params(&self) -> CodelParams {
        CodelParams { target: Time(self.target_ns), interval: Time(self.interval_ns), mtu: self.mtu as u64, ecn: self.ecn }
    }
}

/// One bucket: its FIFO, DRR deficit and CoDel state (Linux `struct fq_codel_flow`).
#[derive(Default)]
struct Bucket {
    q: PacketFifo,
    deficit: i64,
    codel: CodelVars,
    /// On the new or the old list (Linux: `flowchain` not empty).
    listed: bool,
}

pub struct FqCodel {
    limit: Limit,
    memory_limit: Option<u64>,
    quantum: i64,
    drop_batch: u32,
    params: CodelParams,
    keyer: FlowKeyer,
    buckets: Vec<Bucket>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    packets: usize,
    bytes: u64,
}

impl FqCodel {
    pub fn new(cfg: FqCodelConfig) -> FqCodel {
        FqCodel {
            limit: cfg.limit,
            memory_limit: cfg.memory_limit,
            quantum: cfg.quantum.max(1) as i64,
            drop_batch: cfg.drop_batch.max(1),
            params: cfg.params(),
            keyer: FlowKeyer::new(&cfg.flow_key),
            buckets: (0..cfg.flows.max(1)).map(|_| Bucket::default()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: 0,
        }
    }

    /// The bucket of `p`: the salted key scaled onto the buckets (Linux `reciprocal_scale`).
    pub fn bucket_of(&self, p: &Packet) -> usize {
        bucket(self.keyer.key(p), self.buckets.len())
    }

    /// Bytes queued in bucket `i`.
    pub fn bucket_bytes(&self, i: usize) -> u64 {
        self.buckets[i].q.bytes()
    }

    fn over_limit(&self) -> bool {
        let over_limit = match self.limit {
            Limit::Packets(n) => self.packets as u64 > n,
            Limit::Bytes(b) => self.bytes > b,
        };
        over_limit || self.memory_limit.is_some_and(|m| self.bytes > m)
    }

    /// Linux `fq_codel_drop`: up to `drop_batch` packets from the head of the fattest bucket,
    /// stopping once half its bytes are gone. Returns the bucket.
    fn drop_from_fattest(&mut self, evicted: &mut Vec<Evicted>) -> usize {
        let mut fattest = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            if b.q.bytes() > self.buckets[fattest].q.bytes() {
                fattest = i;
            }
        }
        let b = &mut self.buckets[fattest];
        let threshold = b.q.bytes() / 2;
        let (mut freed, mut n) = (0u64, 0u32);
        while let Some(p) = b.q.pop() {
            freed += p.size as u64;
            n += 1;
            self.packets -= 1;
            self.bytes -= p.size as u64;
            evicted.push(Evicted { packet: p, reason: DropReason::Evicted });
            if n >= self.drop_batch || freed >= threshold {
                break;
            }
        }
        fattest
    }

    /// After a full pass in which every listed queue only received a quantum: credits at once
    /// the `k - 1` further passes in which none could send either (`k` the fewest refills after
    /// which some deficit turns positive), so the next pass goes exactly as walking those rounds
    /// would. Without it a packet far above the quantum would cost `size / quantum` rotations
    /// (as `drr` does for the same reason).
    fn skip_idle_rounds(&mut self) {
        let q = self.quantum;
        let listed = self.new_flows.iter().chain(&self.old_flows);
        let skip = idle_rounds(listed.map(|&i| self.buckets[i as usize].deficit), q);
        if skip == 0 {
            return;
        }
        for &i in self.new_flows.iter().chain(&self.old_flows) {
            self.buckets[i as usize].deficit += skip * q;
        }
    }

    /// Takes the head of the list a dequeue serves: new flows first (RFC 8290 section 4.2).
    fn front(&self) -> Option<(bool, u32)> {
        match self.new_flows.front() {
            Some(&i) => Some((true, i)),
            None => self.old_flows.front().map(|&i| (false, i)),
        }
    }

    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        let idx = self.bucket_of(&pkt);
        let size = pkt.size as u64;
        let b = &mut self.buckets[idx];
        b.q.push(pkt);
        if !b.listed {
            b.listed = true;
            b.deficit = self.quantum;
            self.new_flows.push_back(idx as u32);
        }
        self.packets += 1;
        self.bytes += size;
        while self.over_limit() {
            let before = evicted.len();
            let victim = self.drop_from_fattest(evicted);
            if victim == idx && self.buckets[idx].q.is_empty() {
                // The arrival was the tail of the emptied queue: refused rather than evicted.
                evicted.pop();
                return Verdict::Dropped(DropReason::Overflow);
            }
            if evicted.len() == before {
                break; // nothing left to drop (unreachable with a valid limit)
            }
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let mut refills = 0;
        loop {
            let (from_new, i) = self.front()?;
            let quantum = self.quantum;
            let b = &mut self.buckets[i as usize];
            if b.deficit <= 0 {
                b.deficit += quantum;
                self.pop_front(from_new);
                self.old_flows.push_back(i);
                refills += 1;
                if refills >= self.new_flows.len() + self.old_flows.len() {
                    self.skip_idle_rounds();
                    refills = 0;
                }
                continue;
            }
            refills = 0;
            let (n0, b0) = (b.q.len(), b.q.bytes());
            let others = self.bytes - b0;
            let mut acts = HeadActions::default();
            let p = b.codel.dequeue_behind(&mut b.q, others, now, &self.params, dropped, &mut acts);
            self.packets -= n0 - b.q.len();
            self.bytes -= b0 - b.q.bytes();
            match p {
                Some(p) => {
                    b.deficit -= p.size as i64;
                    return Some(Dequeued { packet: p, marked: acts.marked });
                }
                None => {
                    self.pop_front(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.old_flows.push_back(i);
                    } else {
                        self.buckets[i as usize].listed = false;
                    }
                }
            }
        }
    }

    fn len_packets(&self) -> usize {
        self.packets
    }
    fn len_bytes(&self) -> u64 {
        self.bytes
    }
    fn kind(&self) -> &'static str {
        "fq_codel"
    }
    /// RFC 8290 section 4.2: the flows on the new and on the old list (queues scheduled for
    /// service, an emptied queue included until its turn removes it).
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        out.push(NamedStat { name: "new_flows", value: self.new_flows.len() as f64 });
        out.push(NamedStat { name: "old_flows", value: self.old_flows.len() as f64 });
    }
}

#[cfg(test)]
impl super::per_flow_tests::Inspect for FqCodel {
    fn active_flows(&self) -> usize {
        self.buckets.iter().filter(|b| !b.q.is_empty()).count()
    }
    /// Totals match the buckets; the lists hold each listed bucket once and every non-empty
    /// bucket is listed.
    fn check(&self) -> Result<(), String> {
        let packets: usize = self.buckets.iter().map(|b| b.q.len()).sum();
        let bytes: u64 = self.buckets.iter().map(|b| b.q.bytes()).sum();
        if (packets, bytes) != (self.packets, self.bytes) {
            return Err(format!("totals {:?} != buckets {:?}", (self.packets, self.bytes), (packets, bytes)));
        }
        let mut seen = vec![false; self.buckets.len()];
        for &i in self.new_flows.iter().chain(&self.old_flows) {
            if std::mem::replace(&mut seen[i as usize], true) {
                return Err(format!("bucket {i} listed twice"));
            }
        }
        for (i, b) in self.buckets.iter().enumerate() {
            if b.listed != seen[i] || (!b.q.is_empty() && !b.listed) {
                return Err(format!("bucket {i}: listed flag {} on a list {} with {} packets", b.listed, seen[i], b.q.len()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;

    fn flow_pkt(uid: u64, flow: u16, size: u32) -> Packet {
        Packet { uid, size, flow: flow as u32, src: 1, dst: 2, sport: 1000 + flow, dport: 80, ..Packet::default() }
    }

    fn fq(limit: Limit) -> FqCodel {
        FqCodel::new(FqCodelConfig { limit, ..FqCodelConfig::default() })
    }

    /// Flow numbers whose packets land in distinct buckets of `q`.
    fn distinct_flows(q: &FqCodel, n: usize) -> Vec<u16> {
        let mut used = std::collections::HashSet::new();
        (0..1000u16).filter(|f| used.insert(q.bucket_of(&flow_pkt(0, *f, 100)))).take(n).collect()
    }

    fn sparse_before_bulk(limit: Limit) {
        let inner = fq(limit);
        let f = distinct_flows(&inner, 2);
        let (bulk, sparse) = (f[0], f[1]);
        let mut q = Queue::new(Box::new(inner));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..100 {
            q.enqueue(flow_pkt(i, bulk, 1500), Time::ZERO, &mut rng);
        }
        // The bulk flow spends its first quantum and moves to the old list.
        for _ in 0..3 {
            assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().flow, bulk as u32);
        }
        q.enqueue(flow_pkt(1000, sparse, 100), Time::ZERO, &mut rng);
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 1000, "the sparse packet goes first");
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().flow, bulk as u32);
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_sparse_flows_packet_is_dequeued_before_a_bulk_backlog() {
        sparse_before_bulk(Limit::Packets(1000));
        sparse_before_bulk(Limit::Bytes(1_000_000));
    }

    #[test]
    fn overflow_drops_half_the_fattest_queue_from_its_head() {
        for limit in [Limit::Packets(10), Limit::Bytes(10_000)] {
            let inner = fq(limit);
            let f = distinct_flows(&inner, 3);
            let mut q = Queue::new(Box::new(inner));
            let mut rng = SimRng::stream(1, "t");
            for i in 0..7 {
                q.enqueue(flow_pkt(i, f[0], 1000), Time::ZERO, &mut rng);
            }
            for i in 7..10 {
                q.enqueue(flow_pkt(i, f[1], 1000), Time::ZERO, &mut rng);
            }
            let out = q.enqueue(flow_pkt(10, f[2], 1000), Time::ZERO, &mut rng);
            assert_eq!(out.verdict, Verdict::Enqueued, "{limit:?}");
            // The fattest (7000 B) loses its 4 oldest packets: 4000 B >= half of 7000 B.
            let victims: Vec<u64> = out.evicted.iter().map(|e| e.packet.uid).collect();
            assert_eq!(victims, vec![0, 1, 2, 3], "{limit:?}");
            assert!(out.evicted.iter().all(|e| e.reason == DropReason::Evicted));
            assert_eq!(q.len_packets(), 7);
            q.check_invariants().unwrap();
        }
    }

    #[test]
    fn drop_batch_bounds_an_overflow_and_the_arrival_can_be_refused() {
        let inner = FqCodel::new(FqCodelConfig { limit: Limit::Packets(10), drop_batch: 1, ..FqCodelConfig::default() });
        let f = distinct_flows(&inner, 2);
        let mut q = Queue::new(Box::new(inner));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..10 {
            q.enqueue(flow_pkt(i, f[0], 1000), Time::ZERO, &mut rng);
        }
        let out = q.enqueue(flow_pkt(10, f[1], 1000), Time::ZERO, &mut rng);
        assert_eq!(out.evicted.len(), 1);
        assert_eq!(out.evicted[0].packet.uid, 0);
        // A single huge packet in its own queue, over a byte limit: it is the fattest and refused.
        let inner = fq(Limit::Bytes(3000));
        let f = distinct_flows(&inner, 2);
        let mut q = Queue::new(Box::new(inner));
        q.enqueue(flow_pkt(0, f[0], 1000), Time::ZERO, &mut rng);
        let out = q.enqueue(flow_pkt(1, f[1], 2500), Time::ZERO, &mut rng);
        assert_eq!(out.verdict, Verdict::Dropped(DropReason::Overflow));
        assert!(out.evicted.is_empty());
        assert_eq!(q.len_bytes(), 1000);
        q.check_invariants().unwrap();
    }

    #[test]
    fn drr_quantum_shares_bytes_equally_between_two_bulk_flows() {
        for limit in [Limit::Packets(10_000), Limit::Bytes(10_000_000)] {
            let inner = fq(limit);
            let f = distinct_flows(&inner, 2);
            let mut q = Queue::new(Box::new(inner));
            let mut rng = SimRng::stream(1, "t");
            // Flow 0 sends 1500 B packets, flow 1 300 B packets; both always backlogged.
            for i in 0..2000 {
                q.enqueue(flow_pkt(2 * i, f[0], 1500), Time::ZERO, &mut rng);
                q.enqueue(flow_pkt(2 * i + 1, f[1], 300), Time::ZERO, &mut rng);
            }
            let mut bytes = [0u64; 2];
            for _ in 0..1500 {
                let p = q.dequeue(Time::ZERO).packet.unwrap();
                bytes[(p.flow != f[0] as u32) as usize] += p.size as u64;
            }
            let ratio = bytes[0] as f64 / bytes[1] as f64;
            assert!((ratio - 1.0).abs() < 0.01, "{limit:?}: {bytes:?}");
            q.check_invariants().unwrap();
        }
    }

    #[test]
    fn packets_far_above_the_quantum_keep_the_drr_order_when_rounds_are_skipped() {
        // 100 MB packets under a 1514 B quantum: 66 000 refills each if walked one by one.
        for quantum in [1514u32, 50_000_000] {
            let inner = FqCodel::new(FqCodelConfig { quantum, limit: Limit::Packets(100), ..FqCodelConfig::default() });
            let f = distinct_flows(&inner, 2);
            let mut q = Queue::new(Box::new(inner));
            let mut rng = SimRng::stream(1, "t");
            for i in 0..6 {
                q.enqueue(flow_pkt(i, f[(i % 2) as usize], 100_000_000), Time::ZERO, &mut rng);
            }
            let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(Time::ZERO).packet).map(|p| p.uid).collect();
            // The quantum only decides how many rounds pass between sends, not the order.
            assert_eq!(order, vec![0, 1, 2, 3, 4, 5], "quantum {quantum}");
            q.check_invariants().unwrap();
        }
    }

    #[test]
    fn codel_runs_per_queue_and_drops_at_the_head() {
        // One standing flow is controlled by CoDel; its head drops are reported by the wrapper.
        let mut q = Queue::new(Box::new(FqCodel::new(FqCodelConfig { ecn: false, ..FqCodelConfig::default() })));
        let mut rng = SimRng::stream(1, "t");
        let mut uid = 0;
        let mut drops = 0;
        for ms in 0..600u64 {
            let now = Time::from_millis(ms);
            while q.len_packets() < 100 {
                q.enqueue(flow_pkt(uid, 0, 1000), now, &mut rng);
                uid += 1;
            }
            let out = q.dequeue(now);
            drops += out.dropped.len();
            assert!(out.dropped.iter().all(|e| e.reason == DropReason::Early));
        }
        assert!(drops > 5, "{drops}");
        assert_eq!(q.stats().evicted_packets[DropReason::Early as usize] as usize, drops);
        q.check_invariants().unwrap();
    }

    #[test]
    fn an_emptied_new_flow_yields_to_the_old_list() {
        let mut q = fq(Limit::Packets(100));
        let f = distinct_flows(&q, 2);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..5 {
            q.enqueue(flow_pkt(i, f[0], 1500), Time::ZERO, &mut rng, &mut ev);
        }
        q.pop_packet(Time::ZERO);
        q.pop_packet(Time::ZERO); // f0 spent its quantum
        q.pop_packet(Time::ZERO); // f0 moved to old with a new quantum, sends
        q.enqueue(flow_pkt(10, f[1], 100), Time::ZERO, &mut rng, &mut ev);
        assert_eq!(q.pop_packet(Time::ZERO).unwrap().uid, 10);
        // f1, empty on the new list, is moved to old flows (not dropped from the lists) on its
        // next turn, behind f0 whose deficit is spent; f0 then sends.
        assert_eq!(q.pop_packet(Time::ZERO).unwrap().flow, f[0] as u32);
        assert!(q.new_flows.is_empty());
        crate::qdisc::per_flow_tests::Inspect::check(&q).unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let d = FqCodelConfig::default;
        assert!(FqCodelConfig { flows: 0, ..d() }.validate().unwrap_err().starts_with("flows"));
        assert!(FqCodelConfig { quantum: 0, ..d() }.validate().unwrap_err().starts_with("quantum"));
        assert!(FqCodelConfig { drop_batch: 0, ..d() }.validate().unwrap_err().starts_with("drop_batch"));
        assert!(FqCodelConfig { memory_limit: Some(0), ..d() }.validate().unwrap_err().starts_with("memory_limit"));
        assert!(FqCodelConfig { target_ns: 100_000_000, ..d() }.validate().unwrap_err().starts_with("target_ns"));
    }
}
