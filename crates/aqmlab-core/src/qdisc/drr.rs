//! FQ as Deficit Round Robin with Longest Queue Drop, after M. Shreedhar and G. Varghese,
//! "Efficient Fair Queuing using Deficit Round Robin", ACM SIGCOMM 1995 (cited as S&V), the
//! "FQ (DRR algorithm with LQD)" that Bonald, Muscariello and Ostallo (BMO, ICC 2011, section
//! V-A) compare SQF with.
//!
//! * **Flows**: one FIFO per active flow, keyed by [`FlowKeyConfig`] (default the 5-tuple);
//!   state exists only while a flow has packets queued (see [`super::shared::flow_table`]).
//! * **Scheduler** (S&V): active flows form a round-robin *active list*; a flow that
//!   becomes active joins its tail. Each flow has a deficit counter. When its turn comes it
//!   receives `quantum` bytes of credit and sends head packets while the head fits in the
//!   deficit; the remainder carries over to its next turn. When a flow's queue empties its
//!   deficit is reset to 0 and it leaves the list, so an idle flow cannot bank credit. Over
//!   many rounds every backlogged flow gets the same number of bytes whatever its packet sizes.
//!
//!   The list is walked one packet per `dequeue`, as in Linux `sch_drr`: the head flow sends
//!   if its deficit covers its head packet; otherwise it receives a quantum and moves to the
//!   tail. A newly active flow starts with one quantum, which is the credit S&V give a flow at
//!   the start of its turn, so the service order is exactly S&V's. With `quantum` at least the
//!   largest packet (S&V's condition for O(1) work) every dequeue is O(1) amortized; a smaller
//!   quantum is allowed: after one full pass in which no flow could send, the rounds in
//!   which none could send either are credited at once, so a dequeue costs at most two
//!   passes of the list whatever `max packet / quantum`.
//! * **Buffer management**: longest queue drop on the shared buffer ([`super::shared::flow_table`] module
//!   docs): the flow with the most bytes queued loses its tail; if that is the arrival's flow,
//!   the arrival is refused (`Overflow`), otherwise the pushed-out packets are `Evicted`.
//!   As BMO (section II) put it after Suter, Lakshman, Stiliadis and Choudhury (INFOCOM
//!   1998), "FQ must also be combined with the Longest Queue Drop (LQD) policy to protect flows
//!   of low throughput".
//!
//! The active list is intrusive (links in the per-flow state), so a flow emptied by LQD leaves
//! it in O(1). Every operation is also O(log n) in the number n of active flows for the heaps
//! that find the longest flow for LQD (see [`super::shared::flow_table`]).

#[cfg(test)]
use super::shared::deficit_round_robin::check_list;
use super::shared::deficit_round_robin::{default_quantum, drr_dequeue, settle, ActiveList, RrFlow};
use super::shared::flow_key::{FlowKeyConfig, FlowKeyer};
use super::shared::flow_table::{never_fits, Entry, FlowTable, Slot};
use super::{Dequeued, DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

pub use super::shared::deficit_round_robin::DEFAULT_QUANTUM;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrrConfig {
    /// Capacity of the shared buffer, in packets or bytes.
    pub limit: Limit,
    /// Bytes of credit a backlogged flow receives per round (default 1500, one MTU).
    #[serde(default = "default_quantum")]
    pub quantum: u32,
    /// Header fields that identify a flow (default: the 5-tuple).
    #[serde(default)]
    pub flow_key: FlowKeyConfig,
}

impl Default for DrrConfig {
    /// A 100-packet buffer, a one-MTU quantum, flows by 5-tuple.
    fn default() -> DrrConfig {
        DrrConfig { limit: Limit::Packets(100), quantum: DEFAULT_QUANTUM, flow_key: FlowKeyConfig::default() }
    }
}

impl DrrConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if self.quantum == 0 {
            return Err("quantum: must be at least 1 byte (one MTU, 1500, is usual)".into());
        }
        self.flow_key.validate()
    }
}

pub struct Drr {
    cfg: DrrConfig,
    keyer: FlowKeyer,
    quantum: u64,
    flows: FlowTable<RrFlow>,
    active: ActiveList,
    victims: Vec<(Slot, Entry)>,
}

impl Drr {
    pub fn new(cfg: DrrConfig) -> Drr {
        let keyer = FlowKeyer::new(&cfg.flow_key);
        let quantum = cfg.quantum.max(1) as u64;
        Drr { cfg, keyer, quantum, flows: FlowTable::new(), active: ActiveList::new(), victims: Vec::new() }
    }

    /// Number of flows with state, i.e. with at least one packet queued.
    pub fn active_flows(&self) -> usize {
        self.flows.active_flows()
    }
}

impl Qdisc for Drr {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict {
        if never_fits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        let s = self.flows.get_or_insert(self.keyer.key(&pkt), RrFlow::default);
        self.flows.push_back(s, pkt, false);
        if !self.flows.lqd(self.cfg.limit, s, &mut self.victims) {
            self.flows.release_if_empty(s);
            return Verdict::Dropped(DropReason::Overflow);
        }
        for (v, e) in self.victims.drain(..) {
            evicted.push(Evicted { packet: e.pkt, reason: DropReason::Evicted });
            settle(&mut self.flows, &mut self.active, v);
        }
        if !self.flows.flow(s).x.linked {
            self.active.activate(&mut self.flows, s, self.quantum);
        }
        Verdict::Enqueued
    }

    fn dequeue(&mut self, _now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        drr_dequeue(&mut self.flows, &mut self.active, self.quantum).map(Dequeued::unmarked)
    }

    fn len_packets(&self) -> usize {
        self.flows.packets()
    }
    fn len_bytes(&self) -> u64 {
        self.flows.bytes()
    }
    fn kind(&self) -> &'static str {
        "drr"
    }
    fn flow_states(&self) -> usize {
        self.flows.active_flows()
    }
}

#[cfg(test)]
impl super::per_flow_tests::Inspect for Drr {
    fn active_flows(&self) -> usize {
        self.flows.active_flows()
    }
    fn check(&self) -> Result<(), String> {
        self.flows.check()?;
        check_list(&self.flows, &self.active, &self.flows.live_slots())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::shared::flow_key::FlowField;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;
    use crate::qdisc::Queue;

    fn cfg(limit: Limit, quantum: u32) -> DrrConfig {
        DrrConfig { limit, quantum, flow_key: FlowKeyConfig::of(&[FlowField::Flow]) }
    }

    fn queue(limit: Limit, quantum: u32) -> Queue {
        Queue::new(Box::new(Drr::new(cfg(limit, quantum))))
    }

    fn offer(q: &mut Queue, uid: u64, flow: u32, size: u32) -> (Verdict, Vec<u64>) {
        let mut rng = SimRng::stream(1, "t");
        let o = q.enqueue(pkt(uid, flow, size), Time::ZERO, &mut rng);
        (o.verdict, o.evicted.iter().map(|e| e.packet.uid).collect())
    }

    fn flows_out(q: &mut Queue, n: usize) -> Vec<u32> {
        (0..n).filter_map(|_| q.dequeue(Time::ZERO).packet).map(|p| p.flow).collect()
    }

    #[test]
    fn packets_far_above_the_quantum_leave_in_walking_order_without_walking_every_round() {
        // Quantum 100: walking the rounds, B (550) is covered in the 6th pass, before C (720)
        // and A (1000); the skipped rounds must give the same order.
        let mut q = queue(Limit::Packets(10), 100);
        offer(&mut q, 0, 0, 1000);
        offer(&mut q, 1, 1, 550);
        offer(&mut q, 2, 2, 720);
        assert_eq!(flows_out(&mut q, 3), vec![1, 2, 0]);
        // Regression (found by examples/fuzz_disciplines.rs): a u32::MAX-byte packet under a
        // 1-byte quantum took 4 * 10^9 rotations, a dequeue of many seconds.
        let mut q = queue(Limit::Packets(10), 1);
        offer(&mut q, 0, 0, u32::MAX);
        offer(&mut q, 1, 1, u32::MAX - 1);
        assert_eq!(flows_out(&mut q, 2), vec![1, 0]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn equal_packets_are_served_round_robin_in_activation_order() {
        let mut q = queue(Limit::Packets(100), 1500);
        for i in 0..3 {
            for f in [5, 2, 9] {
                offer(&mut q, i * 3 + f as u64, f, 1500);
            }
        }
        assert_eq!(flows_out(&mut q, 9), vec![5, 2, 9, 5, 2, 9, 5, 2, 9]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn flows_get_equal_bytes_whatever_their_packet_sizes() {
        // Flow 1 sends 1500 B packets, flow 2 500 B packets; both always backlogged.
        let mut q = queue(Limit::Packets(1000), 1500);
        let mut uid = 0;
        for _ in 0..20 {
            offer(&mut q, uid, 1, 1500);
            uid += 1;
        }
        for _ in 0..60 {
            offer(&mut q, uid, 2, 500);
            uid += 1;
        }
        let mut served = [0u64; 3];
        for _ in 0..4000 {
            let p = q.dequeue(Time::ZERO).packet.unwrap();
            served[p.flow as usize] += p.size as u64;
            offer(&mut q, uid, p.flow, p.size); // keep it backlogged
            uid += 1;
            // DRR's bound: the two flows never differ by more than a quantum plus a packet.
            assert!(served[1].abs_diff(served[2]) <= 1500 + 1500, "{served:?}");
        }
        // Equal bytes, three times as many packets for flow 2.
        let total = served[1] + served[2];
        assert!(served[1].abs_diff(served[2]) * 100 <= total, "{served:?}");
        q.check_invariants().unwrap();
    }

    #[test]
    fn deficit_carries_over_when_the_quantum_is_smaller_than_a_packet() {
        // Quantum 1000: flow 1 (1500 B packets) can send on every second turn after the first
        // (deficits 1000 -> 2000 send -> 500 -> 1500 send -> 0 -> 1000 -> 2000 send ...), flow 2
        // (1000 B packets) on every turn.
        let mut q = queue(Limit::Packets(100), 1000);
        for i in 0..10 {
            offer(&mut q, i, 1, 1500);
        }
        for i in 10..30 {
            offer(&mut q, i, 2, 1000);
        }
        let out = flows_out(&mut q, 10);
        assert_eq!(out, vec![2, 1, 2, 1, 2, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn deficit_is_reset_when_a_flow_empties() {
        // Quantum 1500. Flow 1 sends one 100 B packet and empties: without the reset it would
        // keep 1400 B of credit and, back with 700 B packets, send three in its next turn
        // (1400 + 1500 = 2900 >= 3 x 700) instead of two (1500 >= 2 x 700).
        let mut q = queue(Limit::Packets(100), 1500);
        for i in 0..10 {
            offer(&mut q, i, 2, 1500);
        }
        offer(&mut q, 10, 1, 100);
        assert_eq!(flows_out(&mut q, 2), vec![2, 1]); // flow 1 empties
        for i in 11..20 {
            offer(&mut q, i, 1, 700);
        }
        assert_eq!(flows_out(&mut q, 7), vec![2, 1, 1, 2, 1, 1, 2]);
    }

    #[test]
    fn a_new_flow_waits_for_the_end_of_the_round() {
        let mut q = queue(Limit::Packets(100), 1500);
        for i in 0..4 {
            offer(&mut q, i, 1, 1500);
            offer(&mut q, 10 + i, 2, 1500);
        }
        assert_eq!(flows_out(&mut q, 1), vec![1]);
        offer(&mut q, 20, 3, 1500); // joins the tail: after flow 2, before flow 1's next turn
        assert_eq!(flows_out(&mut q, 5), vec![2, 3, 1, 2, 1]);
    }

    #[test]
    fn lqd_pushes_out_the_tail_of_the_longest_flow() {
        let mut q = queue(Limit::Packets(5), 1500);
        offer(&mut q, 0, 1, 1500);
        offer(&mut q, 1, 1, 1500); // flow 1: 3000 B
        offer(&mut q, 2, 2, 100);
        offer(&mut q, 3, 2, 100);
        offer(&mut q, 4, 2, 100); // flow 2: 300 B in more packets
        assert_eq!(offer(&mut q, 5, 3, 64), (Verdict::Enqueued, vec![1]));
        // The arrival's own flow is the longest: refused.
        assert_eq!(offer(&mut q, 6, 1, 1500), (Verdict::Dropped(DropReason::Overflow), vec![]));
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_flow_emptied_by_lqd_leaves_the_round() {
        let mut q = queue(Limit::Packets(2), 1500);
        offer(&mut q, 0, 1, 1500);
        offer(&mut q, 1, 2, 200);
        // Flow 1's only packet is pushed out: flow 1 must leave the active list.
        assert_eq!(offer(&mut q, 2, 3, 100), (Verdict::Enqueued, vec![0]));
        assert_eq!(flows_out(&mut q, 3), vec![2, 3]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn byte_limit_evicts_as_needed() {
        let mut q = queue(Limit::Bytes(4000), 1500);
        for i in 0..4 {
            offer(&mut q, i, 1, 800); // 3200 B
        }
        assert_eq!(offer(&mut q, 4, 2, 1500), (Verdict::Enqueued, vec![3]));
        assert_eq!(q.len_bytes(), 3900);
        q.check_invariants().unwrap();
    }

    #[test]
    fn a_zero_quantum_never_spins() {
        let mut d = Drr::new(DrrConfig { quantum: 0, ..cfg(Limit::Packets(10), 1) });
        let mut rng = SimRng::stream(1, "t");
        d.enqueue(pkt(0, 1, 1500), Time::ZERO, &mut rng, &mut Vec::new());
        assert_eq!(d.pop_packet(Time::ZERO).map(|p| p.uid), Some(0));
    }

    #[test]
    fn validation_names_the_field() {
        assert!(cfg(Limit::Packets(0), 1500).validate().unwrap_err().starts_with("limit"));
        assert!(cfg(Limit::Packets(10), 0).validate().unwrap_err().starts_with("quantum"));
        let e = DrrConfig { flow_key: FlowKeyConfig { fields: vec![] }, ..cfg(Limit::Packets(10), 1500) }.validate().unwrap_err();
        assert!(e.starts_with("flow_key"), "{e}");
        assert!(cfg(Limit::Bytes(1), 1).validate().is_ok());
        assert!(DrrConfig::default().validate().is_ok());
    }
}
