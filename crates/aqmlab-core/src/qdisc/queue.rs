//! The accounting wrapper engines hold instead of bare disciplines.

use super::pels_feedback::FeedbackLabel;
use super::{Dequeued, Evicted, NamedStat, Qdisc, QdiscCapabilities, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::Time;
use serde::Serialize;

/// Counters kept by [`Queue`] for every discipline.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QdiscStats {
    pub received_packets: u64,
    pub received_bytes: u64,
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    /// Packets CE-marked instead of dropped, on arrival or (CoDel) at the head.
    pub marked_packets: u64,
    pub dequeued_packets: u64,
    pub dequeued_bytes: u64,
    /// Drops on arrival, indexed by `DropReason as usize`.
    pub dropped_packets: [u64; 5],
    pub dropped_bytes: [u64; 5],
    /// Packets pushed out after acceptance, or dropped at the head while dequeueing, indexed by
    /// `DropReason as usize`.
    pub evicted_packets: [u64; 5],
    pub evicted_bytes: [u64; 5],
}

impl QdiscStats {
    pub fn total_dropped_packets(&self) -> u64 {
        self.dropped_packets.iter().sum::<u64>() + self.evicted_packets.iter().sum::<u64>()
    }
}

/// What happened to one arrival, as the engine needs it for its records.
#[derive(Debug)]
pub struct EnqueueOutcome<'a> {
    pub verdict: Verdict,
    pub evicted: &'a [Evicted],
}

/// What happened at one departure, as the engine needs it for its records: the packet to
/// send (if any), whether this dequeue CE-marked it, and the packets dropped from the head on
/// the way, oldest first (valid until the next call on the queue).
#[derive(Debug)]
pub struct DequeueOutcome<'a> {
    pub packet: Option<Packet>,
    pub marked: bool,
    pub dropped: &'a [Evicted],
}

/// A discipline behind the accounting wrapper. Engines hold `Queue`s, never bare disciplines.
pub struct Queue {
    inner: Box<dyn Qdisc>,
    stats: QdiscStats,
    /// What the last `enqueue` pushed out and the last `dequeue` dropped at the head: buffers
    /// reused from call to call, so that no packet allocates.
    evicted: Vec<Evicted>,
    head_drops: Vec<Evicted>,
    /// Packets held: enqueued - dequeued - evicted, kept here (and checked against the
    /// discipline's count by `check_invariants`) so that asking whether the queue is empty
    /// does not reach into the discipline, a separate allocation.
    backlog: usize,
    /// The discipline's capabilities, properties of its kind, read once.
    capabilities: QdiscCapabilities,
}

impl Queue {
    pub fn new(inner: Box<dyn Qdisc>) -> Queue {
        Queue {
            capabilities: inner.capabilities(),
            inner,
            stats: QdiscStats::default(),
            evicted: Vec::new(),
            head_drops: Vec::new(),
            backlog: 0,
        }
    }

    pub fn enqueue(&mut self, mut pkt: Packet, now: Time, rng: &mut SimRng) -> EnqueueOutcome<'_> {
        let size = pkt.size as u64;
        self.stats.received_packets += 1;
        self.stats.received_bytes += size;
        pkt.enqueued_at = now;
        self.evicted.clear();
        let verdict = self.inner.enqueue(pkt, now, rng, &mut self.evicted);
        match verdict {
            Verdict::Enqueued | Verdict::Marked => {
                self.backlog += 1;
                self.stats.enqueued_packets += 1;
                self.stats.enqueued_bytes += size;
                if verdict == Verdict::Marked {
                    self.stats.marked_packets += 1;
                }
            }
            Verdict::Dropped(reason) => {
                self.stats.dropped_packets[reason as usize] += 1;
                self.stats.dropped_bytes[reason as usize] += size;
            }
        }
        for e in &self.evicted {
            self.stats.evicted_packets[e.reason as usize] += 1;
            self.stats.evicted_bytes[e.reason as usize] += e.packet.size as u64;
        }
        self.backlog -= self.evicted.len();
        EnqueueOutcome { verdict, evicted: &self.evicted }
    }

    /// Offers `pkt` to an empty plain FIFO and takes it straight back out, as `enqueue` followed
    /// by `dequeue` would (same counters, same `enqueued_at`), without the discipline: the
    /// engine calls it for an idle link, where that packet would be the next one sent. Gives the
    /// packet back as `Err` (nothing counted) unless the discipline allows it
    /// ([`QdiscCapabilities::pass_through_limit`]), the queue is empty and the limit admits the
    /// packet. Such a packet is never marked and drops nothing at the head.
    pub fn pass_through(&mut self, mut pkt: Packet, now: Time) -> Result<Packet, Packet> {
        let admitted = self.capabilities.pass_through_limit.is_some_and(|limit| limit.admits(0, 0, pkt.size));
        if self.backlog > 0 || !admitted {
            return Err(pkt);
        }
        let size = pkt.size as u64;
        pkt.enqueued_at = now;
        self.stats.received_packets += 1;
        self.stats.received_bytes += size;
        self.stats.enqueued_packets += 1;
        self.stats.enqueued_bytes += size;
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += size;
        Ok(pkt)
    }

    /// Counts `pkt` as refused by a full FIFO (an overflow drop on arrival), as `enqueue` would:
    /// for the engine's exclusive links, which decide admission by their own arithmetic on the
    /// discipline's limit and hold no packet in it.
    pub fn count_overflow_drop(&mut self, pkt: &Packet) {
        let size = pkt.size as u64;
        let reason = super::DropReason::Overflow as usize;
        self.stats.received_packets += 1;
        self.stats.received_bytes += size;
        self.stats.dropped_packets[reason] += 1;
        self.stats.dropped_bytes[reason] += size;
    }

    /// The next packet to send, whether this dequeue marked it, and the packets the discipline
    /// dropped at the head on the way (also when no packet is returned).
    pub fn dequeue(&mut self, now: Time) -> DequeueOutcome<'_> {
        self.head_drops.clear();
        let out = self.inner.dequeue(now, &mut self.head_drops);
        for e in &self.head_drops {
            self.stats.evicted_packets[e.reason as usize] += 1;
            self.stats.evicted_bytes[e.reason as usize] += e.packet.size as u64;
        }
        self.backlog -= self.head_drops.len();
        let Some(Dequeued { packet, marked }) = out else {
            return DequeueOutcome { packet: None, marked: false, dropped: &self.head_drops };
        };
        self.backlog -= 1;
        self.stats.marked_packets += marked as u64;
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += packet.size as u64;
        DequeueOutcome { packet: Some(packet), marked, dropped: &self.head_drops }
    }

    pub fn len_packets(&self) -> usize {
        self.inner.len_packets()
    }
    /// Whether no packet is held (by the wrapper's count: no call into the discipline).
    pub fn is_empty(&self) -> bool {
        self.backlog == 0
    }
    pub fn len_bytes(&self) -> u64 {
        self.inner.len_bytes()
    }
    /// See [`Qdisc::average_queue`]: a queue length, or `None`.
    pub fn average_queue(&self) -> Option<f64> {
        self.inner.average_queue()
    }
    /// See [`Qdisc::named_stats`]: appended to `out`.
    pub fn named_stats(&self, out: &mut Vec<NamedStat>) {
        self.inner.named_stats(out)
    }
    pub fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    /// See [`Qdisc::next_dequeue_time`].
    pub fn next_dequeue_time(&self, now: Time) -> Option<Time> {
        self.inner.next_dequeue_time(now)
    }
    pub fn stats(&self) -> &QdiscStats {
        &self.stats
    }
    /// The label the discipline writes into `p` (see [`super::FeedbackLabeller`]); `None` from a
    /// discipline that labels nothing.
    pub fn feedback_label(&self, p: &Packet) -> Option<FeedbackLabel> {
        self.inner.feedback_labeller()?.feedback_label(p)
    }
    /// Whether the discipline labels packets at all (see [`Qdisc::feedback_labeller`]).
    pub fn is_feedback_labeller(&self) -> bool {
        self.inner.feedback_labeller().is_some()
    }

    /// See [`QdiscCapabilities`]. `empty_dequeue_is_noop` holds of this wrapper too: on an empty
    /// queue it only clears the previous dequeue's head drops, which nothing reads.
    pub fn capabilities(&self) -> &QdiscCapabilities {
        &self.capabilities
    }

    /// See [`Qdisc::flow_states`].
    pub fn flow_states(&self) -> usize {
        self.inner.flow_states()
    }
    /// Checks the two accounting identities against the discipline's own backlog.
    pub fn check_invariants(&self) -> Result<(), String> {
        let s = &self.stats;
        let dropped: u64 = s.dropped_packets.iter().sum();
        let evicted: u64 = s.evicted_packets.iter().sum();
        if s.received_packets != s.enqueued_packets + dropped {
            return Err(format!(
                "{}: received {} != enqueued {} + dropped {}",
                self.kind(),
                s.received_packets,
                s.enqueued_packets,
                dropped
            ));
        }
        let backlog = s.enqueued_packets as i128 - s.dequeued_packets as i128 - evicted as i128;
        if backlog != self.len_packets() as i128 || self.backlog != self.len_packets() {
            return Err(format!(
                "{}: backlog by accounting {} (counted as it changed: {}) != discipline's {} packets",
                self.kind(),
                backlog,
                self.backlog,
                self.len_packets()
            ));
        }
        let evicted_b: u64 = s.evicted_bytes.iter().sum();
        let backlog_b = s.enqueued_bytes as i128 - s.dequeued_bytes as i128 - evicted_b as i128;
        if backlog_b != self.len_bytes() as i128 {
            return Err(format!("{}: byte backlog by accounting {} != discipline's {}", self.kind(), backlog_b, self.len_bytes()));
        }
        Ok(())
    }
}
