//! A unidirectional link and its mechanics: a packet arrives and is offered to the link's
//! discipline (or passes straight through an idle, empty FIFO), the link serializes one packet
//! at a time and asks the discipline for the next when it is done (or when a shaper says its
//! head becomes sendable), and a serialized packet waits in the delay line until it reaches
//! the far node. Any link can record its packet events.
//!
//! One event per link departure (htsim's structure): when a link finishes serializing, the
//! packet is scheduled to arrive at the far node after the propagation delay and the next
//! packet is pulled from the discipline; a transmission with nothing queued behind it needs
//! no event of its own (`end_needs_no_event`).
//!
//! An access link, which only its flow's packets use, has no events of its own: a packet's
//! crossing is settled by arithmetic when it reaches the link, or when the link before it
//! starts sending it (`exclusive.rs`, `transmit_to_exclusive`).
//!
//! A link driven by a delivery trace sends at the trace's opportunities instead of at a rate
//! (`trace.rs`); only the way packets leave the discipline differs, the delay line is the same.
//!
//! A link with a rate and delay schedule (`aqmlab_core::link::schedule`) reads its rate when
//! a packet starts (`transmit`), its delay when the packet finishes (`on_tx_done`, held behind
//! the packet ahead in the delay line so that a delay decrease never reorders), and starts
//! nothing during an outage (`start_tx_if_idle` retries when it ends). Its transmissions all
//! end with an event, as an impaired link's do.

mod exclusive;
mod impaired;
mod packet_store;
mod trace;

pub use exclusive::ExclusiveLink;
pub(crate) use packet_store::PacketStore;

use crate::sim::network::Network;
use crate::sim::Event;
use crate::topology::{LinkId, NodeId};
use aqmlab_core::link::impairments::Impairments;
use aqmlab_core::link::{Schedule, TraceServer};
use aqmlab_core::qdisc::pels_feedback::FeedbackLabel;
use aqmlab_core::qdisc::DequeueOutcome;
use aqmlab_core::{Packet, Queue, Rate, SimRng, Time, Verdict};
use aqmlab_model::record::{event, PacketEvents};
use std::collections::VecDeque;

pub struct Link {
    pub from: NodeId,
    pub to: NodeId,
    pub rate: Rate,
    pub delay: Time,
    pub queue: Queue,
    /// The discipline's random stream, `"link/<name>"`.
    pub rng: SimRng,
    /// Packet being serialized, if any.
    pub in_flight: Option<Packet>,
    /// Packets propagating, with their arrival times at the far node (a FIFO). Empty on an
    /// exclusive link crossed by arithmetic: its packets wait in `ExclusiveLink::line`.
    pub pipe: VecDeque<(Time, Packet)>,
    /// A transmission whose end needs no event unless a packet queues behind it (see
    /// `Network::start_tx_if_idle`); its packet is already in `pipe`.
    pub lazy_tx: Option<LazyTx>,
    /// When a pending shaper retry fires, if one is scheduled.
    pub retry_at: Option<Time>,
    /// The link's packet events (arrive, enqueue, drop, dequeue), when they are recorded.
    /// Boxed: only the bottleneck may have one, and inline its columns took 288 of a link's
    /// bytes, which every packet's visit to the link brought through the cache.
    pub recorder: Option<Box<PacketEvents>>,
    pub name: String,
    /// Delivery opportunities from a trace, when the link follows one (then `rate` is only the
    /// trace's mean rate, which the discipline was built for, and `in_flight`, `lazy_tx` and
    /// `retry_at` stay unused).
    /// Boxed, like `impairments`: most links have neither, and a link stays small in cache.
    pub trace: Option<Box<TraceServer>>,
    /// When the next `Event::Opportunity` of a trace link fires, if one is scheduled.
    pub wake_at: Option<Time>,
    /// netem's impairments on the wire, when the link has any (`impaired.rs`): then every
    /// transmission ends with an event and the delay line is kept ordered by due time.
    pub impairments: Option<Box<Impairments>>,
    /// The rate and delay schedule, when the link has one (then `rate` and `delay` are only
    /// its first step's, which the discipline was built for).
    pub schedule: Option<Box<Schedule>>,
    /// The server state of a link only one flow's packets use, when it is crossed by
    /// arithmetic instead of events (`exclusive.rs`); then `queue` only counts.
    pub exclusive: Option<ExclusiveLink>,
}

/// The end of a transmission that was not scheduled: when it would have been handled, at
/// (`done`, `order`) in the event list's order, and whether a `TxDone` was scheduled for it
/// after all because a packet arrived behind it.
#[derive(Clone, Copy, Debug)]
pub struct LazyTx {
    pub done: Time,
    pub order: u64,
    pub scheduled: bool,
}

impl Link {
    /// An idle link from `from` to `to`, without a recorder.
    pub fn new(from: NodeId, to: NodeId, rate: Rate, delay: Time, queue: Queue, rng: SimRng, name: String) -> Link {
        Link {
            from,
            to,
            rate,
            delay,
            queue,
            rng,
            in_flight: None,
            pipe: VecDeque::new(),
            lazy_tx: None,
            retry_at: None,
            recorder: None,
            name,
            trace: None,
            wake_at: None,
            impairments: None,
            schedule: None,
            exclusive: None,
        }
    }
}

impl Network {
    /// A packet event at link `l`, recorded when the link has a recorder. Inlined, so that
    /// the usual case (no recorder) costs a look at the link.
    #[inline]
    fn record(&mut self, l: LinkId, ev: u8, p: &Packet, reason: Option<aqmlab_core::DropReason>, marked: bool) {
        if self.records_packets_of(l) {
            self.push_record(l, ev, p, reason, marked);
        }
    }

    /// Whether packet events at link `l` are recorded.
    #[inline]
    fn records_packets_of(&self, l: LinkId) -> bool {
        self.any_recorder && self.topo.links[l as usize].recorder.is_some()
    }

    #[inline(never)]
    fn push_record(&mut self, l: LinkId, ev: u8, p: &Packet, reason: Option<aqmlab_core::DropReason>, marked: bool) {
        let link = &mut self.topo.links[l as usize];
        if let Some(rec) = link.recorder.as_mut() {
            let q = &link.queue;
            rec.push(self.now, ev, p, reason, marked, q.len_packets(), q.len_bytes());
        }
    }

    /// Offers `p` to link `l`'s discipline and starts transmission if the link is idle.
    pub(crate) fn send_on(&mut self, l: LinkId, p: Packet) {
        if self.any_varying_link && self.topo.links[l as usize].trace.is_some() {
            return self.send_on_trace(l, p);
        }
        if self.is_exclusive(l) {
            return self.send_exclusive(l, p, self.now);
        }
        self.record(l, event::ARRIVE, &p, None, false);
        let p = match self.pass_through_if_idle(l, p) {
            Ok(()) => return,
            Err(p) => p,
        };
        self.enqueue_on(l, p);
        self.start_tx_if_idle(l);
    }

    /// Offers `p` to link `l`'s discipline: records its verdict and forgets what it refused or
    /// pushed out. Always inlined into `send_on`, the per-packet path (the trace link's call is
    /// rare): out of line it cost 1 % more instructions on the 600-flow run.
    ///
    /// The packet itself is kept past the discipline's call only when a label or a record may
    /// need it (PELS flows, a recorder): otherwise the discipline takes it without a copy,
    /// which cost 0.5 % of the 600-flow run's instructions (benches/README.md, issue 21).
    #[inline(always)]
    fn enqueue_on(&mut self, l: LinkId, p: Packet) {
        let now = self.now;
        let kept = (self.pels_flows || self.any_recorder).then_some(p);
        let (uid, sack_blocks) = (p.uid, p.sack_blocks);
        let link = &mut self.topo.links[l as usize];
        let out = link.queue.enqueue(p, now, &mut link.rng);
        let verdict = out.verdict;
        let evicted: Vec<_> = out.evicted.to_vec();
        match verdict {
            Verdict::Enqueued | Verdict::Marked => {
                if let Some(p) = &kept {
                    self.stamp_label(l, p);
                    self.record(l, event::ENQUEUE, p, None, verdict == Verdict::Marked)
                }
            }
            Verdict::Dropped(reason) => {
                if sack_blocks != 0 {
                    self.sack_blocks.remove(&uid); // as `take_sack_blocks`
                }
                self.labels.remove(&uid);
                if let Some(p) = &kept {
                    self.record(l, event::DROP, p, Some(reason), false)
                }
            }
        }
        for e in evicted {
            self.forget_dropped(l, &e.packet, e.reason);
        }
    }

    /// A packet link `l` drops besides an arrival its discipline refuses (pushed out of the
    /// buffer after it was accepted, dropped at the head by an AQM, or refused by an exclusive
    /// link's arithmetic): its side state goes and the drop is recorded. Never inlined: when the
    /// compiler's partitioning of the crate let it inline this into `send_exclusive`, the per-packet
    /// path paid for the drop path's registers, about 30 instructions a packet (benches/README.md,
    /// "The send buffer and the window a sender uses").
    #[inline(never)]
    fn forget_dropped(&mut self, l: LinkId, p: &Packet, reason: aqmlab_core::DropReason) {
        self.take_sack_blocks(p);
        self.labels.remove(&p.uid);
        self.record(l, event::DROP, p, Some(reason), false);
    }

    /// Sends `p` on link `l` at once if the link is idle and its discipline is an empty plain
    /// FIFO that takes it (`Queue::pass_through`): the same counters, records and event order
    /// as `enqueue` then `start_tx_if_idle`, without writing the packet into the buffer and
    /// reading it back (on a dumbbell with thousands of flows, each access link's buffer is
    /// memory that is not in cache). Not on a link whose packets are recorded, whose records
    /// hold the queue length at enqueue. Gives `p` back otherwise.
    fn pass_through_if_idle(&mut self, l: LinkId, p: Packet) -> Result<(), Packet> {
        if !self.pass_through || self.records_packets_of(l) || self.scheduled(l) || !self.is_idle(l) {
            return Err(p);
        }
        let sent = self.topo.links[l as usize].queue.pass_through(p, self.now)?;
        self.counters.passed_through += 1;
        self.stamp_label(l, &p);
        self.transmit(l, sent, false);
        Ok(())
    }

    /// Whether link `l` is sending nothing (see `lazy_tx_busy` for a transmission without an
    /// end event). Inlined: asked once or twice per packet per link.
    #[inline]
    fn is_idle(&mut self, l: LinkId) -> bool {
        self.topo.links[l as usize].in_flight.is_none() && !self.lazy_tx_busy(l)
    }

    /// Whether link `l` follows a rate and delay schedule.
    #[inline]
    fn scheduled(&self, l: LinkId) -> bool {
        self.any_varying_link && self.topo.links[l as usize].schedule.is_some()
    }

    pub(crate) fn start_tx_if_idle(&mut self, l: LinkId) {
        let now = self.now;
        if !self.is_idle(l) {
            return;
        }
        if self.scheduled(l) && self.in_outage(l) {
            return;
        }
        let link = &mut self.topo.links[l as usize];
        let DequeueOutcome { packet, marked, dropped } = link.queue.dequeue(now);
        if !dropped.is_empty() {
            // An AQM that drops at the head (CoDel): those packets are lost here.
            let dropped = dropped.to_vec();
            for e in dropped {
                self.forget_dropped(l, &e.packet, e.reason);
            }
        }
        let link = &mut self.topo.links[l as usize];
        let Some(p) = packet else {
            // A shaper may hold packets that are not yet sendable: ask it when, and keep one
            // retry scheduled no later than that (an outdated retry just asks again).
            if link.queue.len_packets() > 0 {
                if let Some(t) = link.queue.next_dequeue_time(now) {
                    if link.retry_at.is_none_or(|r| r > t) {
                        link.retry_at = Some(t);
                        self.events.schedule(t.max(now), Event::QueueRetry(l));
                    }
                }
            }
            return;
        };
        self.transmit(l, p, marked);
    }

    /// Whether scheduled link `l` is in an outage now: then nothing starts, and a retry waits
    /// for its end if packets wait (one retry kept, as for a shaper).
    #[inline(never)]
    fn in_outage(&mut self, l: LinkId) -> bool {
        let now = self.now;
        let link = &mut self.topo.links[l as usize];
        let schedule = link.schedule.as_ref().expect("a scheduled link");
        let t = schedule.sending_from(now);
        if t == now {
            return false;
        }
        if link.queue.len_packets() > 0 && link.retry_at.is_none_or(|r| r > t) {
            link.retry_at = Some(t);
            self.events.schedule(t, Event::QueueRetry(l));
        }
        true
    }

    /// Starts sending `p`, just dequeued from idle link `l` (CE-marked by that dequeue if
    /// `marked`).
    fn transmit(&mut self, l: LinkId, p: Packet, marked: bool) {
        let now = self.now;
        let link = &mut self.topo.links[l as usize];
        // One test of the flag for both questions a varying link changes (most runs have none).
        let (done, impaired) = if self.any_varying_link {
            let done = match link.schedule.as_ref() {
                Some(s) => s.finish(now, p.size as u64),
                None => now + link.rate.tx_time(p.size as u64),
            };
            (done, link.impairments.is_some() || link.schedule.is_some())
        } else {
            (now + link.rate.tx_time(p.size as u64), false)
        };
        let exclusive_next = if impaired { None } else { self.exclusive_next_hop(l, &p) };
        if let Some(next) = exclusive_next {
            return self.transmit_to_exclusive(l, p, marked, done, next);
        }
        let link = &mut self.topo.links[l as usize];
        if self.lazy_tx_ends && !impaired && Self::end_needs_no_event(link, done) {
            link.pipe.push_back((done + link.delay, p));
            link.lazy_tx = Some(LazyTx { done, order: self.events.reserve_order(), scheduled: false });
            if done.as_nanos() <= self.cfg.duration_ns {
                self.counters.events += 1; // its TxDone would have been handled within the run
            }
        } else {
            link.in_flight = Some(p);
            self.events.schedule(done, Event::TxDone(l));
        }
        self.record_departure(l, &p, marked);
    }

    /// Packet `p` starts on link `l` now: its dequeue is recorded, and on the bottleneck it
    /// goes into the pcap. Before anything can drop it and take its SACK blocks.
    #[inline]
    fn record_departure(&mut self, l: LinkId, p: &Packet, marked: bool) {
        self.record(l, event::DEQUEUE, p, None, marked);
        if l == self.bottleneck {
            if let Some(w) = self.pcap.as_mut() {
                w.write(self.now, p, self.sack_blocks.get(&p.uid));
            }
        }
    }

    /// Starts sending `p` on plain link `l`, ending at `done`, when its next hop is exclusive
    /// link `next`: the packet goes straight into `next` (`send_exclusive`), at the time it
    /// reaches `next`'s router, so that `l`'s delay line and the arrival event there are
    /// skipped. `l`'s end still needs its TxDone event when packets wait behind it (to dequeue
    /// the next); when none do, it is a lazy end, as in `end_needs_no_event`, whose other
    /// condition (the delay line) does not arise: nothing enters `l`'s line. Either way the
    /// end is held in `lazy_tx`, which says the packet is placed already.
    fn transmit_to_exclusive(&mut self, l: LinkId, p: Packet, marked: bool, done: Time, next: LinkId) {
        let link = &mut self.topo.links[l as usize];
        let at = done + link.delay;
        let order = self.events.reserve_order();
        let lazy = self.lazy_tx_ends && link.queue.is_empty() && link.queue.capabilities().empty_dequeue_is_noop;
        link.lazy_tx = Some(LazyTx { done, order, scheduled: !lazy });
        if !lazy {
            self.events.schedule_reserved(done, order, Event::TxDone(l));
        }
        if done.as_nanos() <= self.cfg.duration_ns {
            self.counters.events += 1; // as a lazy end's: `on_tx_done` takes it back when handled
        }
        self.record_departure(l, &p, marked);
        self.send_exclusive(next, p, at);
    }

    /// Whether the transmission link starts now, ending at `done`, may end without a TxDone
    /// event. That event's handler would (1) put the packet in the delay line, (2) schedule
    /// its arrival if the line were otherwise empty, and (3) dequeue the next packet. When
    /// nothing is queued behind the packet, an empty dequeue changes nothing in the
    /// discipline, and the packet ahead in the delay line arrives strictly after `done` (so
    /// (2) schedules nothing: that packet's arrival will, as always), the handler schedules
    /// nothing and only (1) has an effect, which can be done now: no later handler looks at
    /// the delay line's tail before that arrival. The end keeps the order it reserves now, in
    /// case a packet queues behind it and it needs its event after all (`lazy_tx_busy`), so
    /// the event list pops exactly the same sequence of the other events as before: results
    /// are unchanged, one event fewer per packet on links that are idle and long (the receiver
    /// and ACK links of a dumbbell with many packets in flight).
    fn end_needs_no_event(link: &Link, done: Time) -> bool {
        link.queue.is_empty()
            && link.queue.capabilities().empty_dequeue_is_noop
            && link.pipe.back().is_some_and(|&(arrive, _)| arrive > done)
    }

    /// Whether link `l` is still sending a packet whose end had no event (true before that
    /// end's place in the event order). The caller has a packet waiting: the end gets its
    /// TxDone event now, at the place it reserved, to dequeue the next one.
    fn lazy_tx_busy(&mut self, l: LinkId) -> bool {
        let link = &mut self.topo.links[l as usize];
        let Some(tx) = link.lazy_tx.as_mut() else { return false };
        if !self.events.handling_before(tx.done, tx.order) {
            link.lazy_tx = None; // ended, with nothing queued behind it
            return false;
        }
        if !tx.scheduled {
            tx.scheduled = true;
            self.events.schedule_reserved(tx.done, tx.order, Event::TxDone(l));
        }
        true
    }

    /// The serialized packet enters the link's delay line. Departures from one link are in
    /// time order and the delay is constant, so the line is a FIFO and only its head needs an
    /// event.
    #[inline] // called from the engine's dispatch alone: inlined, as it was before the split
    pub(crate) fn on_tx_done(&mut self, l: LinkId) {
        let link = &mut self.topo.links[l as usize];
        if link.lazy_tx.take().is_some() {
            // The end of a lazy transmission, scheduled because a packet queued behind it: its
            // packet is in the delay line already, behind one still propagating.
            self.counters.events -= 1; // counted when the transmission started
        } else if self.any_varying_link && link.impairments.is_some() {
            let p = link.in_flight.take().expect("TxDone on an idle link");
            self.enter_impaired_line(l, p);
        } else {
            let p = link.in_flight.take().expect("TxDone on an idle link");
            let arrive = match (self.any_varying_link, link.schedule.as_ref()) {
                // Held behind the packet ahead (a delay decrease never reorders).
                (true, Some(s)) => s.arrival(self.now, link.pipe.back().map_or(Time::ZERO, |&(t, _)| t)),
                _ => self.now + link.delay,
            };
            link.pipe.push_back((arrive, p));
            if link.pipe.len() == 1 {
                self.events.schedule(arrive, Event::PipeArrive(l));
            }
        }
        self.start_tx_if_idle(l);
    }

    /// The head of link `l`'s delay line reaches the far node: forwarded, or given back when
    /// it is the packet's destination (see `Network::on_arrive`).
    #[inline] // likewise
    pub(crate) fn on_pipe_arrive(&mut self, l: LinkId) -> Option<Packet> {
        if self.is_exclusive(l) {
            let (to, p) = self.exclusive_arrive(l);
            return self.on_arrive(to, p);
        }
        let link = &mut self.topo.links[l as usize];
        if self.any_varying_link && link.impairments.is_some() && link.pipe.front().is_none_or(|&(due, _)| due > self.now) {
            return None; // an impaired line's event for a head that another packet overtook
        }
        let (_, p) = link.pipe.pop_front().expect("PipeArrive on an empty delay line");
        let to = link.to;
        if let Some(&(next, _)) = link.pipe.front() {
            self.events.schedule(next, Event::PipeArrive(l));
        }
        self.on_arrive(to, p)
    }

    /// After link `l` accepted `p`: the label its discipline writes, merged with the label `p`
    /// already carries (the max-override of section 5.2). Only PELS streams' packets carry
    /// labels, so that the side table holds nothing nobody will take. Inlined, so that a run
    /// without PELS flows pays one test per accepted packet.
    #[inline]
    fn stamp_label(&mut self, l: LinkId, p: &Packet) {
        if self.pels_flows {
            self.stamp_pels_label(l, p);
        }
    }

    #[inline(never)]
    fn stamp_pels_label(&mut self, l: LinkId, p: &Packet) {
        if !self.flows[p.flow as usize].labelled {
            return;
        }
        if let Some(mine) = self.topo.links[l as usize].queue.feedback_label(p) {
            let merged = FeedbackLabel::merge(self.labels.get(&p.uid).copied(), mine);
            self.labels.insert(p.uid, merged);
        }
    }

    /// A shaper's retry: its head packet may be sendable now.
    pub(crate) fn on_queue_retry(&mut self, l: LinkId) {
        self.topo.links[l as usize].retry_at = None;
        self.start_tx_if_idle(l);
    }
}
