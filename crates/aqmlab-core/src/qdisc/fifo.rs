//! Drop-Tail: a FIFO that refuses arrivals once its packet or byte limit is reached.

use super::{DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Capacity in packets or bytes.
    pub limit: Limit,
}

impl DropTailConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()
    }
}

/// A FIFO of packets that keeps its byte count: the storage of every single-queue discipline
/// (Drop-Tail, RED, Rb-RED, Rb-RIO, RIO), so that the byte accounting lives in one place.
#[derive(Debug, Default)]
pub struct PacketFifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl PacketFifo {
    /// Whether one more packet of `size` bytes fits within `limit`.
    pub fn admits(&self, limit: Limit, size: u32) -> bool {
        limit.admits(self.q.len(), self.bytes, size)
    }
    pub fn push(&mut self, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(p);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

pub struct DropTail {
    cfg: DropTailConfig,
    q: PacketFifo,
}

impl DropTail {
    pub fn new(cfg: DropTailConfig) -> DropTail {
        DropTail { cfg, q: PacketFifo::default() }
    }
}

impl Qdisc for DropTail {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        if !self.q.admits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.q.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let p = self.q.pop()?;
        Some(p)
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn kind(&self) -> &'static str {
        "droptail"
    }
    fn empty_dequeue_is_noop(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::Queue;

    fn queue(limit: Limit) -> Queue {
        Queue::new(Box::new(DropTail::new(DropTailConfig { limit })))
    }

    #[test]
    fn packet_mode_drops_the_arrival_past_the_limit_and_keeps_order() {
        let mut q = queue(Limit::Packets(3));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..3 {
            assert_eq!(q.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        }
        assert_eq!(q.enqueue(pkt(3, 0, 40), Time::ZERO, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(Time::ZERO)).map(|p| p.uid).collect();
        assert_eq!(order, vec![0, 1, 2]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn byte_mode_counts_bytes_not_packets() {
        let mut q = queue(Limit::Bytes(2500));
        let mut rng = SimRng::stream(1, "t");
        assert_eq!(q.enqueue(pkt(0, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(pkt(1, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        // A small packet still fits where a large one did not.
        assert_eq!(q.enqueue(pkt(2, 0, 1000), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.len_bytes(), 2500);
        q.check_invariants().unwrap();
    }

    #[test]
    fn zero_limit_is_rejected() {
        assert!(DropTailConfig { limit: Limit::Packets(0) }.validate().unwrap_err().contains("limit"));
    }
}
