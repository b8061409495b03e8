//! mahimahi's byte accounting over a trace's delivery opportunities, for either engine.
//!
//! mahimahi `src/frontend/link_queue.cc`, `LinkQueue::rationalize(now)`: every opportunity due
//! at or before `now` is taken in turn and carries up to 1504 bytes (`OPPORTUNITY_BYTES`):
//!
//! * the packet in transit, if one is, continues; otherwise the next packet is dequeued from
//!   the discipline, and its whole size (IP bytes plus the 4-byte TUN header,
//!   `PACKET_OVERHEAD_BYTES`) is owed;
//! * a packet leaves when its last byte is carried, at the time of that opportunity; the rest
//!   of the opportunity goes to the next packet, so several small packets leave in one
//!   opportunity, and a packet larger than what is left spills into the next opportunity
//!   (its first bytes leave in this one);
//! * when the discipline has nothing, the rest of the opportunity is lost (the inner loop
//!   `break`s), and so is an opportunity that finds nothing at all: capacity is never banked.
//!
//! `LinkQueue::read_packet` calls `rationalize(now)` before enqueueing an arriving packet, so
//! an opportunity at the very time a packet arrives is used (or lost) without it: a packet
//! can only leave at an opportunity strictly after its arrival. Engines keep that by calling
//! [`TraceServer::serve`] before each enqueue as well as when the next opportunity is due.
//!
//! mahimahi refuses a packet larger than an opportunity (`read_packet` throws "packet size is
//! greater than maximum"); here such a packet spills over as many opportunities as its bytes
//! need, which is what `rationalize`'s arithmetic does with any bytes left in transit.

use super::opportunities::OpportunityClock;
use super::trace::{DeliveryTrace, OPPORTUNITY_BYTES, PACKET_OVERHEAD_BYTES};
use crate::packet::Packet;
use crate::units::Time;

/// What the server needs from its engine: the discipline in front of the link, and where a
/// delivered packet goes.
pub trait OpportunityUser {
    /// Whether the discipline holds no packet.
    fn backlog_empty(&self) -> bool;
    /// Dequeues the next packet at time `at` (an opportunity's time); `None` when the
    /// discipline has none to give now (empty, or a shaper holding its head).
    fn pull(&mut self, at: Time) -> Option<Packet>;
    /// Packet `p`'s last byte was carried by the opportunity at `at`.
    fn deliver(&mut self, at: Time, p: Packet);
}

/// One direction of a trace-driven link: the opportunity cursor and the packet in transit.
#[derive(Clone, Debug)]
pub struct TraceServer {
    clock: OpportunityClock,
    /// The packet whose bytes are being carried, and how many of them are still owed.
    in_transit: Option<(Packet, u32)>,
}

impl TraceServer {
    /// A link following `trace`, its first pass starting at `origin`.
    pub fn new(trace: &DeliveryTrace, origin: Time) -> TraceServer {
        TraceServer { clock: OpportunityClock::new(trace, origin), in_transit: None }
    }

    /// Starts the trace over at `origin`; a packet in transit keeps what it still owes.
    pub fn restart(&mut self, origin: Time) {
        self.clock.restart(origin);
    }

    /// Uses every opportunity due at or before `now`, as `LinkQueue::rationalize` does.
    pub fn serve(&mut self, now: Time, user: &mut impl OpportunityUser) {
        loop {
            if self.in_transit.is_none() && user.backlog_empty() {
                // Nothing to carry: every opportunity until now is lost at once.
                self.clock.skip_through(now);
                return;
            }
            if self.clock.peek() > now {
                return;
            }
            let at = self.clock.take();
            let mut room = OPPORTUNITY_BYTES;
            while room > 0 {
                let (p, owed) = match self.in_transit.take() {
                    Some(carried) => carried,
                    None => {
                        if user.backlog_empty() {
                            break;
                        }
                        let Some(p) = user.pull(at) else { break };
                        (p, p.size + PACKET_OVERHEAD_BYTES)
                    }
                };
                let sent = room.min(owed);
                room -= sent;
                if owed == sent {
                    user.deliver(at, p);
                } else {
                    self.in_transit = Some((p, owed - sent));
                }
            }
        }
    }

    /// When `serve` next has something to do, given whether the discipline holds packets:
    /// the next opportunity if a packet waits or is in transit, else none (the opportunities
    /// of an idle link are burned when the next packet arrives).
    pub fn next_due(&self, backlog_empty: bool) -> Option<Time> {
        (self.in_transit.is_some() || !backlog_empty).then(|| self.clock.peek())
    }

    /// The packet whose bytes are being carried, if any.
    pub fn in_transit(&self) -> Option<&Packet> {
        self.in_transit.as_ref().map(|(p, _)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A FIFO in front of the link, recording what leaves and when, and when each dequeue was.
    #[derive(Default)]
    struct Fifo {
        queue: VecDeque<Packet>,
        pulled: Vec<(u64, Time)>,
        delivered: Vec<(u64, Time)>,
        offered: u64,
    }

    impl OpportunityUser for Fifo {
        fn backlog_empty(&self) -> bool {
            self.queue.is_empty()
        }
        fn pull(&mut self, at: Time) -> Option<Packet> {
            let p = self.queue.pop_front()?;
            self.pulled.push((p.uid, at));
            Some(p)
        }
        fn deliver(&mut self, at: Time, p: Packet) {
            self.delivered.push((p.uid, at));
        }
    }

    fn packet(uid: u64, size: u32) -> Packet {
        Packet { uid, size, ..Packet::default() }
    }

    fn server(ms: &[u64]) -> TraceServer {
        TraceServer::new(&DeliveryTrace { opportunities_ms: ms.to_vec() }, Time::ZERO)
    }

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    /// Offers packets of `sizes` at `at` (after serving what is due before them), then serves
    /// until `until`, waking exactly when the server asks. Returns the delivery times in ms.
    fn run(srv: &mut TraceServer, fifo: &mut Fifo, at: Time, sizes: &[u32], until: Time) -> Vec<(u64, f64)> {
        srv.serve(at, fifo);
        for &s in sizes {
            fifo.queue.push_back(packet(fifo.offered, s));
            fifo.offered += 1;
        }
        while let Some(t) = srv.next_due(fifo.backlog_empty()) {
            if t > until {
                break;
            }
            srv.serve(t, fifo);
        }
        fifo.delivered.iter().map(|&(u, t)| (u, t.as_nanos() as f64 / 1e6)).collect()
    }

    #[test]
    fn a_saturated_link_delivers_one_mtu_packet_per_opportunity_at_its_time() {
        let mut srv = server(&[1, 1, 4, 6]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, Time::ZERO, &[1500; 9], ms(100));
        let times: Vec<f64> = out.iter().map(|&(_, t)| t).collect();
        assert_eq!(times, vec![1.0, 1.0, 4.0, 6.0, 7.0, 7.0, 10.0, 12.0, 13.0]);
        // Each packet is pulled from the discipline at the opportunity that carries it.
        assert_eq!(fifo.pulled.iter().map(|&(_, t)| t).collect::<Vec<_>>(), fifo.delivered.iter().map(|&(_, t)| t).collect::<Vec<_>>());
    }

    #[test]
    fn small_packets_share_an_opportunity_byte_for_byte() {
        // 1504 bytes per opportunity, 4 of them per packet on top of its IP size: 3 packets
        // of 497 B (501 each) fill one exactly; a fourth starts the next.
        let mut srv = server(&[1]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, Time::ZERO, &[497; 4], ms(10));
        assert_eq!(out, vec![(0, 1.0), (1, 1.0), (2, 1.0), (3, 2.0)]);
        // Two 750-byte packets are 1508 bytes with their headers: the second spills over.
        let mut srv = server(&[1]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, Time::ZERO, &[750, 750], ms(10));
        assert_eq!(out, vec![(0, 1.0), (1, 2.0)]);
    }

    #[test]
    fn a_packet_larger_than_an_opportunity_uses_several() {
        // 4000 + 4 bytes need three opportunities (1504 * 2 = 3008 < 4004) and leave 508
        // bytes of the third: enough for a 500-byte packet (504), not for a 505-byte one.
        let mut srv = server(&[1]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, Time::ZERO, &[4000, 500], ms(10));
        assert_eq!(out, vec![(0, 3.0), (1, 3.0)]);
        assert_eq!(fifo.pulled, vec![(0, ms(1)), (1, ms(3))]);
        let mut srv = server(&[1]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, Time::ZERO, &[4000, 505], ms(10));
        assert_eq!(out, vec![(0, 3.0), (1, 4.0)]);
    }

    #[test]
    fn an_idle_link_loses_its_opportunities() {
        let mut srv = server(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let mut fifo = Fifo::default();
        run(&mut srv, &mut fifo, Time::ZERO, &[1500], ms(2));
        // Idle from 1 ms to 5.5 ms: opportunities 2..=5 are gone; a burst of three then leaves
        // at 6, 7, 8, not at once on saved-up credit.
        let out = run(&mut srv, &mut fifo, Time::from_micros(5_500), &[1500; 3], ms(20));
        assert_eq!(out, vec![(0, 1.0), (1, 6.0), (2, 7.0), (3, 8.0)]);
        // The unused rest of a partly used opportunity is lost too: a 100-byte packet at 9 ms
        // leaves at 10, then one arriving at 10.5 waits for 11 (the next pass's first).
        let out = run(&mut srv, &mut fifo, Time::from_micros(9_500), &[100], ms(20));
        assert_eq!(out.last(), Some(&(4, 10.0)));
        let out = run(&mut srv, &mut fifo, Time::from_micros(10_500), &[100], ms(20));
        assert_eq!(out.last(), Some(&(5, 11.0)));
    }

    #[test]
    fn a_packet_arriving_at_an_opportunity_s_time_misses_it() {
        // mahimahi serves what is due before it enqueues the arrival.
        let mut srv = server(&[2, 4]);
        let mut fifo = Fifo::default();
        let out = run(&mut srv, &mut fifo, ms(2), &[1500], ms(10));
        assert_eq!(out, vec![(0, 4.0)]);
    }

    #[test]
    fn a_discipline_that_holds_its_head_burns_the_opportunity() {
        struct Holding(u32);
        impl OpportunityUser for Holding {
            fn backlog_empty(&self) -> bool {
                false
            }
            fn pull(&mut self, _: Time) -> Option<Packet> {
                self.0 += 1;
                None
            }
            fn deliver(&mut self, _: Time, _: Packet) {
                unreachable!()
            }
        }
        let mut srv = server(&[1, 2, 3]);
        let mut h = Holding(0);
        srv.serve(ms(5), &mut h);
        assert_eq!(h.0, 5, "one pull per opportunity at 1, 2, 3, 4, 5 ms");
        assert_eq!(srv.next_due(false), Some(ms(6)));
        assert_eq!(srv.next_due(true), None);
    }
}
