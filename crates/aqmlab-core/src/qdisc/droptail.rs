//! Drop-Tail: a FIFO that refuses arrivals once its packet or byte limit is reached.

use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, Qdisc, QdiscCapabilities, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

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

    fn dequeue(&mut self, _now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        self.q.pop().map(Dequeued::unmarked)
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
    /// Its only state is its buffer: an empty dequeue does nothing, and an arrival to the empty
    /// buffer of an idle link leaves at once, unchanged.
    fn capabilities(&self) -> QdiscCapabilities {
        QdiscCapabilities { empty_dequeue_is_noop: true, pass_through_limit: Some(self.cfg.limit) }
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
        let order: Vec<u64> = std::iter::from_fn(|| q.dequeue(Time::ZERO).packet).map(|p| p.uid).collect();
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

    /// `Queue::pass_through` must leave the queue exactly as `enqueue` then `dequeue` would,
    /// and refuse (counting nothing) whenever that pair would not hand the same packet back.
    #[test]
    fn pass_through_counts_as_enqueue_then_dequeue_and_only_when_that_returns_the_packet() {
        let mut rng = SimRng::stream(1, "t");
        let (mut passed, mut round_trip) = (queue(Limit::Packets(2)), queue(Limit::Packets(2)));
        let now = Time::from_millis(3);
        let p = passed.pass_through(pkt(7, 1, 1000), now).expect("an empty FIFO passes a packet through");
        round_trip.enqueue(pkt(7, 1, 1000), now, &mut rng);
        let q = round_trip.dequeue(now).packet.unwrap();
        assert_eq!((p.uid, p.enqueued_at), (q.uid, q.enqueued_at));
        assert_eq!(passed.stats(), round_trip.stats());
        assert!(passed.is_empty());
        passed.check_invariants().unwrap();

        // Not with a packet queued (it would go first), nor past a byte limit (it would be dropped).
        passed.enqueue(pkt(8, 1, 1000), now, &mut rng);
        let before = passed.stats().clone();
        assert_eq!(passed.pass_through(pkt(9, 1, 1000), now).unwrap_err().uid, 9);
        assert_eq!(passed.stats(), &before);
        assert!(queue(Limit::Bytes(999)).pass_through(pkt(1, 1, 1000), now).is_err());
        assert!(queue(Limit::Bytes(1000)).pass_through(pkt(1, 1, 1000), now).is_ok());

        // Nor through a discipline with state beyond its buffer.
        let red: crate::qdisc::QdiscConfig = serde_json::from_str(
            r#"{"kind": "red", "limit": {"packets": 60}, "min_th": 5.0, "max_th": 15.0, "max_p": 0.1, "w_q": 0.002,
                "gentle": false, "mode": "packets", "ecn": false, "mean_pkt_size": 1000}"#,
        )
        .unwrap();
        let mut red = crate::qdisc::build_qdisc(&red, crate::units::Rate(10_000_000)).unwrap();
        assert!(red.pass_through(pkt(1, 1, 1000), now).is_err());
        assert_eq!(red.stats().received_packets, 0);
    }

    #[test]
    fn zero_limit_is_rejected() {
        assert!(DropTailConfig { limit: Limit::Packets(0) }.validate().unwrap_err().contains("limit"));
    }
}
