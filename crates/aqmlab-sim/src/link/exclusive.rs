//! Links that one flow's packets alone ever use, crossed without events of their own (issue
//! 22, point 2: fewer events per packet).
//!
//! Each flow has its own two hosts (`sim/build.rs`), so each of its four access links carries
//! only that flow's packets in one direction, and they all come from one place: the host that
//! emits them, or the one router-to-router link the flow's route reaches the link's router by.
//! Such a link behind a Drop-Tail buffer is a FIFO server whose whole state is when it is next
//! free and which accepted packets have not started yet; nothing else can reach it. So a
//! packet's fate on it (dropped at its buffer, or its start, end and arrival at the far node)
//! follows by arithmetic from the packets before it, in the order they reach it:
//!
//! - start = max(arrival at the link, end of the previous transmission); the packet is refused
//!   when the buffer (the accepted packets whose start is still ahead) is at its limit, the
//!   same `Limit::admits` test Drop-Tail makes;
//! - it reaches the far node at start + size / rate + delay.
//!
//! A packet emitted by a host is placed at once (`send_on`); a packet that a plain shared link
//! starts sending, whose next hop is such a link, is placed when that transmission starts,
//! at the time it will reach the link's router (`Network::transmit`): that link's delay line and
//! the arrival event at the router are skipped. The packet then waits in the exclusive link's
//! own delay line (`ExclusiveLink::line`: its arrival time, and its slot in the store that all
//! exclusive links share, `packet_store.rs`), whose arrivals are in time order as ever (each
//! flow's packets reach it in the order they leave the one link before it, whose delay is
//! constant), and arrives with one `PipeArrive` event. Per packet of a dumbbell, the link's
//! `TxDone` events and one of the two arrivals on each side go: 8.0 events per bottleneck packet
//! become about 5.
//!
//! The physics is the same; what changes is the order of events at equal times (the arrival
//! event is scheduled earlier, so it takes an earlier place among events of the same
//! nanosecond) and the moment the link's counters count a packet (when it is placed, not
//! when it reaches the link), so results differ from the event-per-step model's in the last
//! digits (README, "Results"). `Simulation::disable_exclusive_links` turns it off, and a test
//! compares the two (`crates/aqmlab-sim/tests/network.rs`).

use crate::link::Link;
use crate::sim::network::Network;
use crate::sim::Event;
use crate::topology::{LinkId, NodeId};
use aqmlab_core::{DropReason, Limit, Packet, Time};
use std::collections::VecDeque;

/// An exclusive link's server state (see the module notes).
#[derive(Debug)]
pub struct ExclusiveLink {
    /// The buffer's limit (the link's Drop-Tail limit).
    limit: Limit,
    /// When the last accepted packet's transmission ends.
    free_at: Time,
    /// Accepted packets whose transmission has not started by the last placement: start
    /// time and size, in order.
    waiting: VecDeque<(Time, u32)>,
    waiting_bytes: u64,
    /// The delay line: accepted packets not yet at the far node, in order, as their arrival
    /// time there and their slot in `Network::exclusive_packets` (the link's `pipe` stays
    /// empty; `packet_store.rs` says why).
    pub(crate) line: VecDeque<(Time, u32)>,
}

/// Entries an exclusive link's empty delay line keeps room for (see `release_idle_line`).
const IDLE_LINE_CAPACITY: usize = 16;

impl ExclusiveLink {
    /// Gives back the memory of exclusive link's delay line `line`, just emptied, beyond
    /// `IDLE_LINE_CAPACITY` entries. Such a line holds one flow's packets from the start of
    /// their transmission on the link before it until they reach the host (or the router), so
    /// a burst in slow start fills it with tens of entries at once; kept at that size,
    /// thousands of lines hold the room of their largest burst ever. A line that has emptied
    /// grows again when needed.
    pub(crate) fn release_idle_line<T>(line: &mut VecDeque<T>) {
        if line.capacity() > IDLE_LINE_CAPACITY {
            line.shrink_to(IDLE_LINE_CAPACITY);
        }
    }

    /// The state of `link` when it qualifies: a plain link (no trace, schedule, impairments or
    /// recorder) whose discipline is a FIFO that lets an idle link pass packets through
    /// (Drop-Tail, `QdiscCapabilities::pass_through_limit`). Whether only one flow uses it is
    /// the builder's to know.
    pub fn for_link(link: &Link) -> Option<ExclusiveLink> {
        let plain = link.trace.is_none() && link.schedule.is_none() && link.impairments.is_none() && link.recorder.is_none();
        let caps = link.queue.capabilities();
        let limit = caps.pass_through_limit.filter(|_| plain && caps.empty_dequeue_is_noop)?;
        Some(ExclusiveLink { limit, free_at: Time::ZERO, waiting: VecDeque::new(), waiting_bytes: 0, line: VecDeque::new() })
    }

    /// Places a packet of `size` bytes reaching the link at `at` (never earlier than the last
    /// placement's): its start time, or `None` when the buffer refuses it.
    fn place(&mut self, at: Time, size: u32) -> Option<Time> {
        while let Some(&(start, bytes)) = self.waiting.front() {
            if start > at {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= bytes as u64;
        }
        if self.free_at <= at {
            // Idle: the packet passes straight through the empty buffer (`Queue::pass_through`
            // admits it on the same test).
            return self.limit.admits(0, 0, size).then_some(at);
        }
        if !self.limit.admits(self.waiting.len(), self.waiting_bytes, size) {
            return None;
        }
        self.waiting.push_back((self.free_at, size));
        self.waiting_bytes += size as u64;
        Some(self.free_at)
    }
}

impl Network {
    /// Whether link `l` is crossed by arithmetic (see the module notes). Inlined: asked once per
    /// packet per link.
    #[inline]
    pub(crate) fn is_exclusive(&self, l: LinkId) -> bool {
        self.exclusive_links && self.topo.links[l as usize].exclusive.is_some()
    }

    /// Packet `p` reaches exclusive link `l` at `at` (now, or when a transmission that starts
    /// now brings it to the link's router): counted by the link's queue as Drop-Tail would
    /// count it, then dropped or put in the link's delay line with its arrival time at the
    /// far node (the packet itself in the shared store).
    pub(crate) fn send_exclusive(&mut self, l: LinkId, mut p: Packet, at: Time) {
        let link = &mut self.topo.links[l as usize];
        let state = link.exclusive.as_mut().expect("an exclusive link");
        let Some(start) = state.place(at, p.size) else {
            link.queue.count_overflow_drop(&p);
            return self.forget_dropped(l, &p, DropReason::Overflow);
        };
        let done = start + link.rate.tx_time(p.size as u64);
        state.free_at = done;
        p = link.queue.pass_through(p, at).expect("an exclusive link's queue is always empty");
        let arrive = done + link.delay;
        state.line.push_back((arrive, self.exclusive_packets.put(p)));
        if state.line.len() == 1 {
            self.events.schedule(arrive, Event::PipeArrive(l));
        }
        self.stamp_label(l, &p);
    }

    /// The head of exclusive link `l`'s delay line reaches the far node (`on_pipe_arrive` for
    /// such a link): its packet, taken from the store, and the far node.
    #[inline]
    pub(crate) fn exclusive_arrive(&mut self, l: LinkId) -> (NodeId, Packet) {
        let link = &mut self.topo.links[l as usize];
        let state = link.exclusive.as_mut().expect("an exclusive link");
        let (_, slot) = state.line.pop_front().expect("PipeArrive on an empty delay line");
        if let Some(&(next, _)) = state.line.front() {
            self.events.schedule(next, Event::PipeArrive(l));
        } else {
            ExclusiveLink::release_idle_line(&mut state.line);
        }
        (link.to, self.exclusive_packets.take(slot))
    }

    /// The packet at the head of exclusive link `l`'s delay line, if any: for looking ahead.
    #[inline]
    pub(crate) fn exclusive_head(&self, l: LinkId) -> Option<&Packet> {
        let state = self.topo.links[l as usize].exclusive.as_ref()?;
        state.line.front().map(|&(_, slot)| self.exclusive_packets.peek(slot))
    }

    /// The exclusive link packet `p`, starting on link `l` now, takes next, if any: then it
    /// skips `l`'s delay line (see `transmit`).
    #[inline]
    pub(crate) fn exclusive_next_hop(&self, l: LinkId, p: &Packet) -> Option<LinkId> {
        if !self.exclusive_links {
            return None;
        }
        let to = self.topo.links[l as usize].to;
        if to == p.dst {
            return None;
        }
        self.topo.next_hop(to, p.dst).filter(|&next| self.topo.links[next as usize].exclusive.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(limit: Limit) -> ExclusiveLink {
        ExclusiveLink { limit, free_at: Time::ZERO, waiting: VecDeque::new(), waiting_bytes: 0, line: VecDeque::new() }
    }

    /// Placing packets as a Drop-Tail FIFO serves them: an idle link starts one at once, a busy
    /// one queues it behind the last (each 1000-byte packet takes 10 us here), the buffer holds
    /// the accepted packets not yet started, and a packet that starts frees its place.
    #[test]
    fn places_packets_as_a_fifo_of_two_packets_serves_them() {
        let mut x = link(Limit::Packets(2));
        let us = |n: u64| Time(n * 1_000);
        let send = |x: &mut ExclusiveLink, at: Time| {
            let start = x.place(at, 1000)?;
            x.free_at = start + us(10);
            Some(start)
        };
        assert_eq!(send(&mut x, us(0)), Some(us(0)), "idle: at once");
        assert_eq!(send(&mut x, us(0)), Some(us(10)), "behind the first");
        assert_eq!(send(&mut x, us(1)), Some(us(20)), "second in the buffer");
        assert_eq!(send(&mut x, us(2)), None, "the buffer holds two");
        assert_eq!(send(&mut x, us(10)), Some(us(30)), "the second started at 10 us: room for one");
        assert_eq!(send(&mut x, us(11)), None);
        assert_eq!(send(&mut x, us(50)), Some(us(50)), "idle again");
        assert!(x.waiting.is_empty());
    }

    /// An emptied line keeps room for `IDLE_LINE_CAPACITY` entries, not for its largest burst;
    /// a small line is left alone.
    #[test]
    fn an_emptied_line_gives_back_the_room_of_its_burst() {
        let mut line: VecDeque<(Time, u32)> = (0..200).map(|i| (Time(i), i as u32)).collect();
        line.clear();
        assert!(line.capacity() >= 200);
        ExclusiveLink::release_idle_line(&mut line);
        assert!(line.capacity() >= IDLE_LINE_CAPACITY && line.capacity() < 2 * IDLE_LINE_CAPACITY, "{}", line.capacity());
        let mut small: VecDeque<u8> = VecDeque::with_capacity(4);
        ExclusiveLink::release_idle_line(&mut small);
        assert_eq!(small.capacity(), 4);
    }

    /// A byte limit counts the waiting packets' bytes, as `Limit::admits` does for Drop-Tail: a
    /// small packet fits where a large one does not.
    #[test]
    fn a_byte_limit_counts_the_waiting_bytes() {
        let mut x = link(Limit::Bytes(2500));
        x.free_at = Time(1_000_000);
        assert!(x.place(Time::ZERO, 1500).is_some());
        assert!(x.place(Time::ZERO, 1500).is_none());
        assert!(x.place(Time::ZERO, 1000).is_some());
        assert_eq!(x.waiting_bytes, 2500);
        assert!(link(Limit::Bytes(999)).place(Time::ZERO, 1000).is_none(), "too large even for an empty buffer");
    }
}
