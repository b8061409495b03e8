//! The queue-discipline seam shared by both engines.
//!
//! A discipline implements [`Qdisc`]: `enqueue` decides (accept, mark, drop with a typed
//! [`DropReason`], or accept and push out other packets, as longest-queue-drop does) and
//! `dequeue` picks the next packet to send. Engines never call a discipline directly: they go
//! through [`Queue`], which keeps the books so that no discipline can get them wrong:
//!
//! * received = enqueued + dropped on arrival
//! * backlog  = enqueued - dequeued - evicted
//!
//! (after ns-3's `QueueDisc::Enqueue`/`DoEnqueue` split). [`Queue::check_invariants`] verifies
//! both against the discipline's own backlog counters. Packets an AQM drops from the head while
//! dequeueing (CoDel, FQ-CoDel) count as evicted: they had been accepted and leave without being
//! sent. The wrapper collects them after every `dequeue` ([`Qdisc::take_dequeue_drops`]) and
//! hands them to the engine ([`Queue::dequeue_drops`]) for its records.

pub mod classful;
pub mod shared;

pub mod codel;
pub mod drr;
pub mod droptail;
pub mod fq_codel;
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
use crate::units::{Limit, Rate, Time};
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
    pub const ALL: [DropReason; 5] = [
        DropReason::Overflow,
        DropReason::Early,
        DropReason::Forced,
        DropReason::Evicted,
        DropReason::Policy,
    ];
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

/// A queue discipline. Implementations hold only their own state; the accounting that must
/// always hold lives in [`Queue`].
pub trait Qdisc: Send {
    /// Offers `pkt` at time `now`. Packets pushed out to make room are appended to `evicted`.
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, evicted: &mut Vec<Evicted>) -> Verdict;
    /// Removes the next packet to transmit, if any.
    fn dequeue(&mut self, now: Time) -> Option<Packet>;
    /// Moves the packets the last `dequeue` dropped from the buffer instead of sending (an AQM
    /// that drops at the head, such as CoDel) into `out`. The default: none.
    fn take_dequeue_drops(&mut self, _out: &mut Vec<Evicted>) {}
    /// Whether the packet the last `dequeue` returned was CE-marked by that dequeue (CoDel marks
    /// at the head). The default: never.
    fn dequeue_marked(&self) -> bool {
        false
    }
    /// Backlog in packets.
    fn len_packets(&self) -> usize;
    /// Backlog in bytes.
    fn len_bytes(&self) -> u64;
    /// The discipline's own smoothed queue estimate (RED's `avg`), in the unit it uses.
    fn average_queue(&self) -> Option<f64> {
        None
    }
    /// Short name used in records and tables.
    fn kind(&self) -> &'static str;
    /// For non-work-conserving disciplines (shapers): when `dequeue` may next return a packet
    /// if it returned `None` at `now` with packets queued. `None` means "only after an
    /// arrival" (always the case for work-conserving disciplines, the default).
    fn next_dequeue_time(&self, _now: Time) -> Option<Time> {
        None
    }
    /// For disciplines that label passing packets with congestion feedback (the PELS router,
    /// [`pels_feedback`]): the label this discipline writes into `p`, asked by the engine right
    /// after `p` was accepted. The engine merges it with any label `p` already carries
    /// ([`pels_feedback::FeedbackLabel::merge`]). `None` (the default): no label.
    fn feedback_label(&self, _p: &Packet) -> Option<pels_feedback::FeedbackLabel> {
        None
    }
    /// Whether `dequeue` on an empty buffer changes nothing (no idle-time bookkeeping, as RED
    /// and CoDel keep). The simulator then need not call it when a transmission ends with
    /// nothing queued behind it, which lets it skip that event. The default: false (call it).
    fn empty_dequeue_is_noop(&self) -> bool {
        false
    }
    /// For a plain FIFO whose only state is its buffer (Drop-Tail): the limit an arrival to the
    /// empty buffer must fit. When the link is idle, such an arrival is dequeued at once and
    /// unchanged, so the engine may send it without writing it into the buffer and reading it
    /// back ([`Queue::pass_through`]). The default: None (always enqueue, then dequeue).
    fn pass_through_limit(&self) -> Option<Limit> {
        None
    }
    /// Per-flow state entries held (flows with a queue of their own; children's included):
    /// never more than the packets queued, so memory stays bounded by the buffer however many
    /// flows pass. 0 for disciplines without per-flow state (the default).
    fn flow_states(&self) -> usize {
        0
    }
}

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

/// A discipline behind the accounting wrapper. Engines hold `Queue`s, never bare disciplines.
pub struct Queue {
    inner: Box<dyn Qdisc>,
    stats: QdiscStats,
    evicted: Vec<Evicted>,
    /// What the last `dequeue` dropped at the head, and whether it marked the packet it returned.
    head_drops: Vec<Evicted>,
    head_marked: bool,
    /// Packets held: enqueued - dequeued - evicted, kept here (and checked against the
    /// discipline's count by `check_invariants`) so that asking whether the queue is empty
    /// does not reach into the discipline, a separate allocation.
    backlog: usize,
    /// The discipline's `empty_dequeue_is_noop` and `pass_through_limit`, properties of its
    /// kind, read once.
    empty_dequeue_is_noop: bool,
    pass_through_limit: Option<Limit>,
}

impl Queue {
    pub fn new(inner: Box<dyn Qdisc>) -> Queue {
        Queue {
            empty_dequeue_is_noop: inner.empty_dequeue_is_noop(),
            pass_through_limit: inner.pass_through_limit(),
            inner,
            stats: QdiscStats::default(),
            evicted: Vec::new(),
            head_drops: Vec::new(),
            head_marked: false,
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
    /// ([`Qdisc::pass_through_limit`]), the queue is empty and the limit admits the packet.
    pub fn pass_through(&mut self, mut pkt: Packet, now: Time) -> Result<Packet, Packet> {
        let admitted = self.pass_through_limit.is_some_and(|limit| limit.admits(0, 0, pkt.size));
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
        self.head_drops.clear();
        self.head_marked = false;
        Ok(pkt)
    }

    /// The next packet to send. Packets the discipline dropped at the head on the way are in
    /// [`Queue::dequeue_drops`] until the next call, even when this returns `None`.
    pub fn dequeue(&mut self, now: Time) -> Option<Packet> {
        let pkt = self.inner.dequeue(now);
        self.head_drops.clear();
        self.inner.take_dequeue_drops(&mut self.head_drops);
        for e in &self.head_drops {
            self.stats.evicted_packets[e.reason as usize] += 1;
            self.stats.evicted_bytes[e.reason as usize] += e.packet.size as u64;
        }
        self.backlog -= self.head_drops.len();
        self.head_marked = pkt.is_some() && self.inner.dequeue_marked();
        let pkt = pkt?;
        self.backlog -= 1;
        self.stats.marked_packets += self.head_marked as u64;
        self.stats.dequeued_packets += 1;
        self.stats.dequeued_bytes += pkt.size as u64;
        Some(pkt)
    }

    /// Packets the last `dequeue` dropped at the head (CoDel), oldest first.
    pub fn dequeue_drops(&self) -> &[Evicted] {
        &self.head_drops
    }

    /// Whether the packet the last `dequeue` returned was CE-marked by it.
    pub fn dequeue_marked(&self) -> bool {
        self.head_marked
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
    pub fn average_queue(&self) -> Option<f64> {
        self.inner.average_queue()
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
    /// See [`Qdisc::feedback_label`].
    pub fn feedback_label(&self, p: &Packet) -> Option<pels_feedback::FeedbackLabel> {
        self.inner.feedback_label(p)
    }

    /// See [`Qdisc::empty_dequeue_is_noop`]: also true of this wrapper (it only clears the
    /// previous dequeue's head drops and mark, which nothing reads before the next dequeue).
    pub fn empty_dequeue_is_noop(&self) -> bool {
        self.empty_dequeue_is_noop
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
                self.kind(), s.received_packets, s.enqueued_packets, dropped
            ));
        }
        let backlog = s.enqueued_packets as i128 - s.dequeued_packets as i128 - evicted as i128;
        if backlog != self.len_packets() as i128 || self.backlog != self.len_packets() {
            return Err(format!(
                "{}: backlog by accounting {} (counted as it changed: {}) != discipline's {} packets",
                self.kind(), backlog, self.backlog, self.len_packets()
            ));
        }
        let evicted_b: u64 = s.evicted_bytes.iter().sum();
        let backlog_b = s.enqueued_bytes as i128 - s.dequeued_bytes as i128 - evicted_b as i128;
        if backlog_b != self.len_bytes() as i128 {
            return Err(format!(
                "{}: byte backlog by accounting {} != discipline's {}",
                self.kind(), backlog_b, self.len_bytes()
            ));
        }
        Ok(())
    }
}

/// One direction of a point-to-point link, as both engines take it: rate in bit/s, propagation
/// delay and the discipline of its output queue. In the emulator a rate of 0 means unshaped (as
/// fast as the router forwards).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub qdisc: QdiscConfig,
}

/// Every discipline's configuration, tagged by `kind` as in scenario files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    #[serde(alias = "fifo", alias = "drop_tail")]
    Droptail(droptail::DropTailConfig),
    Red(red::RedConfig),
    RbRed(rb_red::RbRedConfig),
    RbRio(rb_rio::RbRioConfig),
    Rio(rio::RioConfig),
    Sqf(sqf::SqfConfig),
    #[serde(alias = "fq")]
    Drr(drr::DrrConfig),
    Pfq(pfq::PfqConfig),
    Tbf(tbf::TbfConfig),
    Prio(prio::PrioConfig),
    Wrr(wrr::WrrConfig),
    PelsFeedback(pels_feedback::PelsFeedbackConfig),
    Codel(codel::CodelConfig),
    FqCodel(fq_codel::FqCodelConfig),
    Pie(pie::PieConfig),
}

impl QdiscConfig {
    /// Checks parameter ranges; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscConfig::Droptail(c) => c.validate(),
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::RbRed(c) => c.validate(),
            QdiscConfig::RbRio(c) => c.validate(),
            QdiscConfig::Rio(c) => c.validate(),
            QdiscConfig::Sqf(c) => c.validate(),
            QdiscConfig::Drr(c) => c.validate(),
            QdiscConfig::Pfq(c) => c.validate(),
            QdiscConfig::Tbf(c) => c.validate(),
            QdiscConfig::Prio(c) => c.validate(),
            QdiscConfig::Wrr(c) => c.validate(),
            QdiscConfig::PelsFeedback(c) => c.validate(),
            QdiscConfig::Codel(c) => c.validate(),
            QdiscConfig::FqCodel(c) => c.validate(),
            QdiscConfig::Pie(c) => c.validate(),
        }
    }

    /// The physical capacity of the discipline's buffer.
    pub fn limit(&self) -> Limit {
        match self {
            QdiscConfig::Droptail(c) => c.limit,
            QdiscConfig::Red(c) => c.limit,
            QdiscConfig::RbRed(c) => c.limit,
            QdiscConfig::RbRio(c) => c.limit,
            QdiscConfig::Rio(c) => c.limit,
            QdiscConfig::Sqf(c) => c.limit,
            QdiscConfig::Drr(c) => c.limit,
            QdiscConfig::Pfq(c) => c.limit,
            QdiscConfig::Tbf(c) => c.limit,
            QdiscConfig::Prio(c) => c.limit(),
            QdiscConfig::Wrr(c) => c.limit(),
            QdiscConfig::PelsFeedback(c) => c.limit(),
            QdiscConfig::Codel(c) => c.limit,
            QdiscConfig::FqCodel(c) => c.limit,
            QdiscConfig::Pie(c) => c.limit,
        }
    }
}

/// Builds a discipline for a link of rate `link_rate` (RED needs it for its idle-time decay).
pub fn build_qdisc(cfg: &QdiscConfig, link_rate: Rate) -> Result<Queue, String> {
    cfg.validate()?;
    let inner: Box<dyn Qdisc> = match cfg {
        QdiscConfig::Droptail(c) => Box::new(droptail::DropTail::new(c.clone())),
        QdiscConfig::Red(c) => Box::new(red::Red::new(c.clone(), link_rate)),
        QdiscConfig::RbRed(c) => Box::new(rb_red::RbRed::new(c.clone(), link_rate)),
        QdiscConfig::RbRio(c) => Box::new(rb_rio::RbRio::new(c.clone(), link_rate)),
        QdiscConfig::Rio(c) => Box::new(rio::Rio::new(c.clone(), link_rate)),
        QdiscConfig::Sqf(c) => Box::new(sqf::Sqf::new(c.clone())),
        QdiscConfig::Drr(c) => Box::new(drr::Drr::new(c.clone())),
        QdiscConfig::Pfq(c) => Box::new(pfq::Pfq::new(c.clone())),
        QdiscConfig::Tbf(c) => Box::new(tbf::Tbf::new(c.clone())),
        QdiscConfig::Prio(c) => Box::new(prio::Prio::new(c, link_rate)?),
        QdiscConfig::Wrr(c) => Box::new(wrr::Wrr::new(c, link_rate)?),
        QdiscConfig::PelsFeedback(c) => Box::new(pels_feedback::PelsFeedback::new(c, link_rate)?),
        QdiscConfig::Codel(c) => Box::new(codel::Codel::new(c.clone())),
        QdiscConfig::FqCodel(c) => Box::new(fq_codel::FqCodel::new(c.clone())),
        QdiscConfig::Pie(c) => Box::new(pie::Pie::new(c.clone())),
    };
    Ok(Queue::new(inner))
}

#[cfg(test)]
pub(crate) mod testutil {
    use crate::packet::Packet;

    pub fn pkt(uid: u64, flow: u32, size: u32) -> Packet {
        Packet { uid, flow, size, ..Packet::default() }
    }
}
