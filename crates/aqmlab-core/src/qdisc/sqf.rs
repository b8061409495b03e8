//! SQF: Shortest Queue First with Longest Queue Drop, after T. Bonald, L. Muscariello and
//! N. Ostallo, "Self-Prioritization of Audio and Video Traffic", IEEE ICC 2011 (Algorithm 1,
//! section III), cited as BMO below.
//!
//! * **Flows** (BMO III-A): packets are grouped by a key made of the 5-tuple or part of it
//!   ([`FlowKeyConfig`]; e.g. the source port alone aggregates an application's traffic).
//! * **Scheduler** (BMO III-B): one virtual FIFO per *active* flow (a flow with at least one
//!   packet in the buffer). A departure serves the head packet of the flow with the fewest
//!   *bytes* queued, "making the algorithm insensitive to the packet size distribution". The
//!   scheduler is work-conserving and non-preemptive: it picks only when the link asks for a
//!   packet, and a packet in service is no longer in the buffer.
//! * **Ties** (not specified by BMO): among flows with the same number of bytes queued, the flow
//!   whose head packet arrived first is served, i.e. FIFO among equals. With equal-size
//!   single-packet flows SQF therefore degenerates to FIFO.
//! * **Buffer management** (BMO Algorithm 1, "combined with LQD so that regulated flows (with low
//!   virtual queues) do not suffer any packet drop"): the arrival is first counted in its flow;
//!   if the shared buffer is then over its limit, the flow with the most bytes queued loses its
//!   *tail* packet, repeatedly until the buffer fits (a byte limit may need several). When that
//!   flow is the arrival's own, its tail is the arrival: it is refused with
//!   `Verdict::Dropped(Overflow)` and nothing else is dropped; otherwise the arrival is accepted
//!   and the packets pushed out are reported as `DropReason::Evicted`. Ties for the longest
//!   flow go to the flow whose head packet arrived last (a newcomer with as many bytes as the
//!   longest flow is refused rather than pushing out an older flow's packet).
//!
//!   Tail rather than head: BMO's `queue[flow_id_longest] -> drop()` does not name the end,
//!   but with the arrival enqueued first, only a tail drop refuses the arrival when its own
//!   flow is the longest (a head drop would accept it and push out an older packet of the same
//!   flow); the same end is used for every flow, as in Linux `sfq`'s default LQD.
//!
//! Per-flow state exists only for active flows, so it is bounded by the buffer, never by the
//! number of flows ever seen ("the number of active flows is upper bounded by the buffer size,
//! which makes the scheduler perfectly scalable", BMO III-B). The shortest and the longest
//! flow are the tops of two indexed heaps on the same key, so every enqueue and dequeue is
//! O(log n) in the number n of active flows (plus O(k log n) for k packets pushed out).

use super::shared::flow_key::{FlowKeyConfig, FlowKeyer};
use super::shared::flow_table::{never_fits, Entry, FlowTable, Slot};
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqfConfig {
    /// Capacity of the shared buffer, in packets or bytes.
    pub limit: Limit,
    /// Header fields that identify a flow (default: the 5-tuple).
    #[serde(default)]
    pub flow_key: FlowKeyConfig,
}

impl Default for SqfConfig {
    /// A 100-packet buffer (BMO's "50 to 200 MTU sized packets"), flows by 5-tuple.
    fn default() -> SqfConfig {
        SqfConfig { limit: Limit::Packets(100), flow_key: FlowKeyConfig::default() }
    }
}

impl SqfConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        self.flow_key.validate()
    }
}

pub struct Sqf {
    cfg: SqfConfig,
    keyer: FlowKeyer,
    flows: FlowTable<()>,
    /// Scratch space for longest queue drop, kept to avoid an allocation per arrival.
    victims: Vec<(Slot, Entry)>,
}

impl Sqf {
    pub fn new(cfg: SqfConfig) -> Sqf {
        let keyer = FlowKeyer::new(&cfg.flow_key);
        Sqf { cfg, keyer, flows: FlowTable::new(), victims: Vec::new() }
    }

    /// Number of flows with state, i.e. with at least one packet queued.
    pub fn active_flows(&self) -> usize {
        self.flows.active_flows()
    }
}

impl Qdisc for Sqf {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        if never_fits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        let s = self.flows.get_or_insert(self.keyer.key(&pkt), || ());
        self.flows.push_back(s, pkt, false);
        if !self.flows.lqd(self.cfg.limit, s, &mut self.victims) {
            self.flows.release_if_empty(s);
            return Verdict::Dropped(DropReason::Overflow);
        }
        for (v, e) in self.victims.drain(..) {
            evicted.push(Evicted { packet: e.pkt, reason: DropReason::Evicted });
            self.flows.release_if_empty(v);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, _now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let s = self.flows.shortest()?;
        let e = self.flows.pop_front(s)?;
        self.flows.release_if_empty(s);
        Some(Dequeued::unmarked(e.pkt))
    }

    fn len_packets(&self) -> usize {
        self.flows.packets()
    }
    fn len_bytes(&self) -> u64 {
        self.flows.bytes()
    }
    fn kind(&self) -> &'static str {
        "sqf"
    }
    fn flow_states(&self) -> usize {
        self.flows.active_flows()
    }
}

#[cfg(test)]
impl super::per_flow_tests::Inspect for Sqf {
    fn active_flows(&self) -> usize {
        self.flows.active_flows()
    }
    fn check(&self) -> Result<(), String> {
        self.flows.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::shared::flow_key::FlowField;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;
    use proptest::prelude::*;

    /// Keyed by the engine flow index, so that `pkt(uid, flow, size)` is enough.
    fn by_flow(limit: Limit) -> SqfConfig {
        SqfConfig { limit, flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }
    }

    fn queue(limit: Limit) -> Queue {
        Queue::new(Box::new(Sqf::new(by_flow(limit))))
    }

    fn drain(q: &mut Queue) -> Vec<u64> {
        std::iter::from_fn(|| q.dequeue(Time::ZERO).packet).map(|p| p.uid).collect()
    }

    fn offer(q: &mut Queue, uid: u64, flow: u32, size: u32) -> (Verdict, Vec<u64>) {
        let mut rng = SimRng::stream(1, "t");
        let o = q.enqueue(pkt(uid, flow, size), Time::ZERO, &mut rng);
        (o.verdict, o.evicted.iter().map(|e| e.packet.uid).collect())
    }

    #[test]
    fn one_flow_is_served_in_order() {
        let mut q = queue(Limit::Packets(10));
        for i in 0..5 {
            offer(&mut q, i, 3, 100 + 100 * i as u32);
        }
        assert_eq!(drain(&mut q), vec![0, 1, 2, 3, 4]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_small_flow_is_preferred_over_a_backlogged_one() {
        let mut q = queue(Limit::Packets(50));
        for i in 0..10 {
            offer(&mut q, i, 1, 1500); // bulk: 15000 B queued
        }
        offer(&mut q, 100, 2, 200); // voice packet arrives behind them
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 100);
        // Then the bulk flow, in order.
        assert_eq!(drain(&mut q), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn the_choice_is_by_bytes_not_packets() {
        let mut q = queue(Limit::Packets(50));
        // Flow 1: three 100 B packets (300 B). Flow 2: one 1500 B packet.
        offer(&mut q, 0, 2, 1500);
        for i in 1..4 {
            offer(&mut q, i, 1, 100);
        }
        // 300 < 1500: flow 1 first; after its packets leave it is smaller still.
        assert_eq!(drain(&mut q), vec![1, 2, 3, 0]);
    }

    #[test]
    fn shortest_is_recomputed_after_every_departure() {
        let mut q = queue(Limit::Packets(50));
        offer(&mut q, 0, 1, 600); // flow 1: 600, 600 -> 1200
        offer(&mut q, 1, 1, 600);
        offer(&mut q, 2, 2, 1000); // flow 2: 1000
                                   // 1000 < 1200: flow 2 goes first; then flow 1.
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 2);
        offer(&mut q, 3, 2, 700); // flow 2: 700 < flow 1's 1200
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 3);
        offer(&mut q, 4, 3, 500); // flow 3: 500 < 1200
        assert_eq!(drain(&mut q), vec![4, 0, 1]);
    }

    #[test]
    fn equal_bytes_are_served_in_arrival_order_of_their_heads() {
        let mut q = queue(Limit::Packets(50));
        // Four single-packet flows of equal size: FIFO.
        for (i, f) in [(0, 7), (1, 3), (2, 9), (3, 1)] {
            offer(&mut q, i, f, 500);
        }
        assert_eq!(drain(&mut q), vec![0, 1, 2, 3]);
        // Equal bytes, different packet counts: flow 1 = 2 x 250, flow 2 = 1 x 500 arriving in
        // between: flow 1's head is older, it goes first; then flow 1 (250) beats flow 2 (500).
        offer(&mut q, 10, 1, 250);
        offer(&mut q, 11, 2, 500);
        offer(&mut q, 12, 1, 250);
        assert_eq!(drain(&mut q), vec![10, 12, 11]);
        // Ties go by the head packet's age, not by how long a flow has been active: flow 1 is
        // active first, but once its head (22) is younger than flow 2's (21), flow 2 wins.
        offer(&mut q, 20, 1, 100);
        offer(&mut q, 21, 2, 300);
        offer(&mut q, 22, 1, 200); // flow 1 = 300 (head 20), flow 2 = 300 (head 21)
        assert_eq!(q.dequeue(Time::ZERO).packet.unwrap().uid, 20);
        offer(&mut q, 23, 1, 100); // flow 1 = 300 (head 22), flow 2 = 300 (head 21)
        assert_eq!(drain(&mut q), vec![21, 22, 23]);
    }

    #[test]
    fn lqd_drops_the_tail_of_the_longest_flow_by_bytes() {
        let mut q = queue(Limit::Packets(4));
        offer(&mut q, 0, 1, 1500); // flow 1: 2 x 1500 = 3000 B
        offer(&mut q, 1, 1, 1500);
        offer(&mut q, 2, 2, 200); // flow 2: 2 x 200 = 400 B
        assert_eq!(offer(&mut q, 3, 2, 200), (Verdict::Enqueued, vec![]));
        // Buffer full (4). A voice packet of a new flow pushes out flow 1's tail, not flow 2's.
        assert_eq!(offer(&mut q, 4, 3, 100), (Verdict::Enqueued, vec![1]));
        assert_eq!(drain(&mut q), vec![4, 2, 3, 0]);
        let s = q.stats();
        assert_eq!(s.evicted_packets[DropReason::Evicted as usize], 1);
        assert_eq!(s.evicted_bytes[DropReason::Evicted as usize], 1500);
        q.check_invariants().unwrap();
    }

    #[test]
    fn lqd_refuses_the_arrival_when_its_own_flow_is_longest() {
        let mut q = queue(Limit::Packets(3));
        offer(&mut q, 0, 1, 1000);
        offer(&mut q, 1, 1, 1000);
        offer(&mut q, 2, 2, 500);
        // Flow 1 would hold 3000 B: it is the longest, so its tail, the arrival, is dropped.
        assert_eq!(offer(&mut q, 3, 1, 1000), (Verdict::Dropped(DropReason::Overflow), vec![]));
        // A tie with a newcomer: flow 3 arrives with 1000 B, flow 1 holds 2000, flow 2 500:
        // flow 1 is longest -> its tail (packet 1) goes.
        assert_eq!(offer(&mut q, 4, 3, 1000), (Verdict::Enqueued, vec![1]));
        // Tie: flow 1 = 1000, flow 3 = 1000, flow 2 = 500; a new 1000 B flow would tie at 1000
        // with flows 1 and 3; its head is the youngest, so the newcomer is refused.
        assert_eq!(offer(&mut q, 5, 4, 1000), (Verdict::Dropped(DropReason::Overflow), vec![]));
        assert_eq!(q.stats().dropped_packets[DropReason::Overflow as usize], 2);
        assert_eq!(drain(&mut q), vec![2, 0, 4]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn byte_limit_evicts_as_many_packets_as_needed() {
        let mut q = queue(Limit::Bytes(3000));
        for i in 0..5 {
            offer(&mut q, i, 1, 500); // flow 1: 2500 B
        }
        offer(&mut q, 5, 2, 300); // flow 2: 300 B, total 2800
                                  // 1200 B for flow 3: needs 1000 B of room: flow 1 loses two tails (4, 3).
        assert_eq!(offer(&mut q, 6, 3, 1200), (Verdict::Enqueued, vec![4, 3]));
        assert_eq!(q.len_bytes(), 3000);
        // Larger than the whole buffer: refused outright, nobody evicted.
        assert_eq!(offer(&mut q, 7, 4, 3001), (Verdict::Dropped(DropReason::Overflow), vec![]));
        q.check_invariants().unwrap();
    }

    #[test]
    fn state_is_dropped_when_a_flow_goes_idle() {
        let mut sqf = Sqf::new(by_flow(Limit::Packets(100)));
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for f in 0..10_000u32 {
            sqf.enqueue(pkt(f as u64, f, 100), Time::ZERO, &mut rng, &mut ev);
            if f % 2 == 1 {
                sqf.pop_packet(Time::ZERO);
                sqf.pop_packet(Time::ZERO);
            }
            assert!(sqf.active_flows() <= sqf.len_packets());
        }
        assert_eq!(sqf.active_flows(), 0);
    }

    #[test]
    fn validation_names_the_field() {
        let e = SqfConfig { limit: Limit::Packets(0), flow_key: FlowKeyConfig::default() }.validate().unwrap_err();
        assert!(e.starts_with("limit"), "{e}");
        let e = SqfConfig { limit: Limit::Packets(5), flow_key: FlowKeyConfig { fields: vec![] } }.validate().unwrap_err();
        assert!(e.starts_with("flow_key.fields"), "{e}");
        assert!(by_flow(Limit::Bytes(1)).validate().is_ok());
        assert!(SqfConfig::default().validate().is_ok());
    }

    /// A direct transcription of Algorithm 1 with linear scans, as the reference.
    struct Naive {
        limit: Limit,
        /// (flow, packets with their arrival numbers), in activation order.
        flows: Vec<(u32, std::collections::VecDeque<(u64, Packet)>)>,
        n: u64,
    }

    impl Naive {
        fn bytes(q: &std::collections::VecDeque<(u64, Packet)>) -> u64 {
            q.iter().map(|(_, p)| p.size as u64).sum()
        }
        fn totals(&self) -> (usize, u64) {
            (self.flows.iter().map(|f| f.1.len()).sum(), self.flows.iter().map(|f| Naive::bytes(&f.1)).sum())
        }
        /// Index of the flow that is extreme under (bytes, head arrival) by `better`.
        fn pick(&self, better: impl Fn((u64, u64), (u64, u64)) -> bool) -> Option<usize> {
            let mut best: Option<(usize, (u64, u64))> = None;
            for (i, (_, q)) in self.flows.iter().enumerate() {
                let k = (Naive::bytes(q), q[0].0);
                if best.is_none_or(|(_, b)| better(k, b)) {
                    best = Some((i, k));
                }
            }
            best.map(|b| b.0)
        }
        fn enqueue(&mut self, p: Packet) -> (Verdict, Vec<u64>) {
            if !self.limit.admits(0, 0, p.size) {
                return (Verdict::Dropped(DropReason::Overflow), vec![]);
            }
            let saved = self.flows.clone();
            match self.flows.iter_mut().find(|f| f.0 == p.flow) {
                Some(f) => f.1.push_back((self.n, p)),
                None => self.flows.push((p.flow, [(self.n, p)].into())),
            }
            self.n += 1;
            let mut victims = vec![];
            loop {
                let (np, nb) = self.totals();
                let fits = match self.limit {
                    Limit::Packets(n) => np as u64 <= n,
                    Limit::Bytes(b) => nb <= b,
                };
                if fits {
                    break;
                }
                let i = self.pick(|a, b| a > b).unwrap();
                if self.flows[i].0 == p.flow {
                    self.flows = saved;
                    return (Verdict::Dropped(DropReason::Overflow), vec![]);
                }
                victims.push(self.flows[i].1.pop_back().unwrap().1.uid);
                if self.flows[i].1.is_empty() {
                    self.flows.remove(i);
                }
            }
            (Verdict::Enqueued, victims)
        }
        fn dequeue(&mut self) -> Option<u64> {
            let i = self.pick(|a, b| a < b)?;
            let p = self.flows[i].1.pop_front().unwrap().1;
            if self.flows[i].1.is_empty() {
                self.flows.remove(i);
            }
            Some(p.uid)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn matches_a_naive_transcription_of_algorithm_1(
            ops in prop::collection::vec(prop_oneof![
                3 => (0u32..8, prop_oneof![Just(100u32), Just(500), Just(1500), 1u32..1600]).prop_map(Some),
                2 => Just(None),
            ], 1..300),
            bytes_mode in any::<bool>(),
        ) {
            let limit = if bytes_mode { Limit::Bytes(6000) } else { Limit::Packets(6) };
            let mut q = queue(limit);
            let mut naive = Naive { limit, flows: vec![], n: 0 };
            for (uid, op) in ops.iter().enumerate() {
                match *op {
                    Some((flow, size)) => {
                        let got = offer(&mut q, uid as u64, flow, size);
                        let want = naive.enqueue(pkt(uid as u64, flow, size));
                        prop_assert_eq!(got, want, "arrival {}", uid);
                    }
                    None => prop_assert_eq!(q.dequeue(Time::ZERO).packet.map(|p| p.uid), naive.dequeue()),
                }
                prop_assert!(q.check_invariants().is_ok());
            }
        }
    }
}
