//! The queue-discipline seam shared by both engines.
//!
//! A discipline implements [`Qdisc`]: `enqueue` decides (accept, mark, drop with a typed
//! [`DropReason`], or accept and push out other packets, as longest-queue-drop does) and
//! `dequeue` picks the next packet to send, reporting the packets it dropped from the head on
//! the way (CoDel) and whether it CE-marked the packet it returns. Both calls report what they
//! did the same way: through their result and a caller-provided buffer of [`Evicted`]
//! packets, so nothing has to be read back afterwards and no packet allocates. Engines never
//! call a discipline directly: they go through [`Queue`], which keeps the books so that no
//! discipline can get them wrong:
//!
//! * received = enqueued + dropped on arrival
//! * backlog  = enqueued - dequeued - evicted
//!
//! (after ns-3's `QueueDisc::Enqueue`/`DoEnqueue` split). [`Queue::check_invariants`] verifies
//! both against the discipline's own backlog counters. Packets an AQM drops from the head while
//! dequeueing count as evicted: they had been accepted and leave without being sent.
//!
//! Besides that, a discipline declares once what the engines may rely on
//! ([`QdiscCapabilities`]), may report named statistics of its state ([`Qdisc::named_stats`]),
//! and, for the PELS router alone, labels packets ([`FeedbackLabeller`]).
//!
//! Layout: `shared/` holds the parts several disciplines are built from, `classful/` the
//! containers whose packets are held by child disciplines, and every other file is one
//! discipline.

pub mod classful;
pub mod shared;

pub mod cake;
pub mod cobalt;
pub mod codel;
pub mod droptail;
pub mod drr;
pub mod dualpi2;
pub mod fq_codel;
pub mod fq_pie;
pub mod pfq;
pub mod pie;
pub mod rb_red;
pub mod rb_rio;
pub mod red;
pub mod rio;
pub mod sqf;
pub mod tbf;

// The classful disciplines keep their short paths (`qdisc::prio`, ...), which scenario code
// and the simulator already use.
pub use classful::{pels_feedback, prio, wrr};

#[cfg(test)]
mod per_flow_tests;

use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

/// Why a packet was dropped. Every drop in aqmlab carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum DropReason {
    /// The buffer was full (tail drop).
    Overflow = 0,
    /// Early drop by an AQM (RED's random drop, Rb-RED's rate-based coin, PIE's coin on arrival,
    /// CoDel's control-law drop at the head).
    Early = 1,
    /// Forced drop by an AQM beyond its hard threshold (RED's avg >= max_th).
    Forced = 2,
    /// Pushed out of the buffer to make room for an arrival (longest queue drop).
    Evicted = 3,
    /// Dropped by a class policy regardless of load (Rb-RIO "drop all class1 packets").
    Policy = 4,
}

impl DropReason {
    pub const ALL: [DropReason; 5] = [DropReason::Overflow, DropReason::Early, DropReason::Forced, DropReason::Evicted, DropReason::Policy];
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Overflow => "overflow",
            DropReason::Early => "early",
            DropReason::Forced => "forced",
            DropReason::Evicted => "evicted",
            DropReason::Policy => "policy",
        }
    }
}

/// The outcome of offering a packet to a discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted unchanged.
    Enqueued,
    /// Accepted with its ECN field set to CE instead of being dropped (RFC 3168).
    Marked,
    /// Refused; the caller still holds its copy of the packet.
    Dropped(DropReason),
}

/// A packet pushed out of the buffer after it had been accepted.
#[derive(Clone, Copy, Debug)]
pub struct Evicted {
    pub packet: Packet,
    pub reason: DropReason,
}

/// What `dequeue` hands to the link: the packet, and whether this dequeue CE-marked it (CoDel
/// marks at the head instead of dropping).
#[derive(Clone, Copy, Debug)]
pub struct Dequeued {
    pub packet: Packet,
    pub marked: bool,
}

impl Dequeued {
    /// A packet leaving as it was queued.
    pub fn unmarked(packet: Packet) -> Dequeued {
        Dequeued { packet, marked: false }
    }
}

/// What the engines may rely on about a discipline, declared once by its kind (read once, when
/// the discipline is wrapped in a [`Queue`]). The default claims nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscCapabilities {
    /// `dequeue` on an empty buffer changes nothing (no idle-time bookkeeping, as RED and CoDel
    /// keep). The simulator then need not call it when a transmission ends with nothing queued
    /// behind it, which lets it skip that event.
    pub empty_dequeue_is_noop: bool,
    /// For a plain FIFO whose only state is its buffer (Drop-Tail): the limit an arrival to the
    /// empty buffer must fit. When the link is idle, such an arrival is dequeued at once and
    /// unchanged, so the engine may send it without writing it into the buffer and reading it
    /// back ([`Queue::pass_through`]). `None`: always enqueue, then dequeue.
    pub pass_through_limit: Option<Limit>,
}

/// One statistic of a discipline's state beyond its backlog, under a name that says what it
/// is (and becomes the column name in the queue samples).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NamedStat {
    pub name: &'static str,
    pub value: f64,
}

/// The name of [`Qdisc::average_queue`] among the named statistics.
pub const AVERAGE_QUEUE: &str = "average_queue";

/// A discipline that writes congestion feedback into the packets it accepts (the PELS router,
/// [`pels_feedback`]), and the containers that hold one.
pub trait FeedbackLabeller {
    /// The label this discipline writes into `p`, asked by the engine right after `p` was
    /// accepted. The engine merges it with any label `p` already carries
    /// ([`pels_feedback::FeedbackLabel::merge`]). `None`: no label for this packet.
    fn feedback_label(&self, p: &Packet) -> Option<pels_feedback::FeedbackLabel>;
}

/// A queue discipline. Implementations hold only their own state; the accounting that must
/// always hold lives in [`Queue`].
pub trait Qdisc: Send {
    /// Offers `pkt` at time `now`. Packets pushed out to make room are appended to `evicted`.
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict;
    /// Removes the next packet to transmit, if any. Packets dropped from the buffer instead of
    /// being sent (an AQM that drops at the head, such as CoDel) are appended to `dropped`,
    /// oldest first, also when nothing is returned.
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued>;
    /// Backlog in packets.
    fn len_packets(&self) -> usize;
    /// Backlog in bytes.
    fn len_bytes(&self) -> u64;
    /// The discipline's own smoothed queue length (RED's `avg`), in the unit it counts its
    /// queue in (packets, or mean-size packets in byte mode). Only a queue length: other state
    /// is reported by [`Qdisc::named_stats`]. `None` (the default): no average kept.
    fn average_queue(&self) -> Option<f64> {
        None
    }
    /// Appends the discipline's statistics of its state to `out`: always the same names in the
    /// same order for one discipline, so that they can be columns of a table. The default
    /// reports the average queue, if any, as [`AVERAGE_QUEUE`].
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        if let Some(avg) = self.average_queue() {
            out.push(NamedStat { name: AVERAGE_QUEUE, value: avg });
        }
    }
    /// Short name used in records and tables.
    fn kind(&self) -> &'static str;
    /// For non-work-conserving disciplines (shapers): when `dequeue` may next return a packet
    /// if it returned `None` at `now` with packets queued. `None` means "only after an
    /// arrival" (always the case for work-conserving disciplines, the default).
    fn next_dequeue_time(&self, _now: Time) -> Option<Time> {
        None
    }
    /// What the engines may rely on (see [`QdiscCapabilities`]). The default: nothing.
    fn capabilities(&self) -> QdiscCapabilities {
        QdiscCapabilities::default()
    }
    /// The discipline's labeller, for the few that label packets with congestion feedback.
    /// `None` (the default): this discipline writes no labels.
    fn feedback_labeller(&self) -> Option<&dyn FeedbackLabeller> {
        None
    }
    /// Per-flow state entries held (flows with a queue of their own; children's included):
    /// never more than the packets queued, so memory stays bounded by the buffer however many
    /// flows pass. 0 for disciplines without per-flow state (the default).
    fn flow_states(&self) -> usize {
        0
    }
}

mod config;
mod queue;

pub use config::{build_qdisc, LinkConfig, QdiscConfig};
pub use queue::{DequeueOutcome, EnqueueOutcome, QdiscStats, Queue};

#[cfg(test)]
pub(crate) mod testutil {
    use super::Qdisc;
    use crate::packet::Packet;
    use crate::units::Time;

    pub fn pkt(uid: u64, flow: u32, size: u32) -> Packet {
        Packet { uid, flow, size, ..Packet::default() }
    }

    /// `dequeue` on a bare discipline for the tests of disciplines that never drop at the
    /// head nor mark on the way out: the packet alone (checked to be neither).
    pub trait PopPacket {
        fn pop_packet(&mut self, now: Time) -> Option<Packet>;
    }

    impl<Q: Qdisc + ?Sized> PopPacket for Q {
        fn pop_packet(&mut self, now: Time) -> Option<Packet> {
            let mut dropped = Vec::new();
            let out = self.dequeue(now, &mut dropped);
            assert!(dropped.is_empty() && !out.is_some_and(|d| d.marked), "{} dropped or marked at the head", self.kind());
            out.map(|d| d.packet)
        }
    }
}
