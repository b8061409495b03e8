//! A link that sends at a delivery trace's opportunities (mahimahi's `LinkQueue`), with the
//! same discipline in front and the same delay line behind as a link with a rate.
//!
//! The byte accounting is `aqmlab_core::link::TraceServer`'s; this file ties it to the
//! simulator. As in mahimahi, the opportunities due up to now are served before an arriving
//! packet is offered (`LinkQueue::read_packet` calls `rationalize` first), and while a packet
//! waits or is in transit one `Event::Opportunity` is scheduled at the next opportunity. An
//! idle link schedules nothing: the opportunities it misses are burned, in one step, when the
//! next packet arrives. Packets leave the discipline at the opportunity that carries their
//! first byte and enter the delay line at the one that carries their last, in time order, so
//! the line stays a FIFO. A delay schedule beside the trace (`aqmlab_core::link::schedule`,
//! delays alone) gives each packet the delay in force then, never ahead of the packet before.

use crate::sim::network::Network;
use crate::sim::Event;
use crate::topology::LinkId;
use aqmlab_core::link::OpportunityUser;
use aqmlab_core::qdisc::DequeueOutcome;
use aqmlab_core::{Packet, Time};
use aqmlab_model::record::event;

/// The simulator's side of one `TraceServer::serve`: link `l`'s discipline and delay line.
struct SimLinkUser<'a> {
    net: &'a mut Network,
    l: LinkId,
}

impl OpportunityUser for SimLinkUser<'_> {
    fn backlog_empty(&self) -> bool {
        self.net.topo.links[self.l as usize].queue.is_empty()
    }

    fn pull(&mut self, at: Time) -> Option<Packet> {
        // Opportunities before now are only ever burned without a backlog: a backlog keeps an
        // event at the next one. So a dequeue happens at its opportunity's time, which the
        // discipline's clock and the records use.
        debug_assert_eq!(at, self.net.now, "a trace link dequeues at an opportunity's time");
        let (net, l) = (&mut *self.net, self.l);
        let link = &mut net.topo.links[l as usize];
        let DequeueOutcome { packet, marked, dropped } = link.queue.dequeue(at);
        if !dropped.is_empty() {
            let dropped = dropped.to_vec();
            for e in dropped {
                net.forget_dropped(l, &e.packet, e.reason);
            }
        }
        let p = packet?;
        net.record(l, event::DEQUEUE, &p, None, marked);
        if l == net.bottleneck {
            if let Some(w) = net.pcap.as_mut() {
                w.write(at, &p, net.sack_blocks.get(&p.uid));
            }
        }
        Some(p)
    }

    fn deliver(&mut self, at: Time, p: Packet) {
        debug_assert_eq!(at, self.net.now, "a trace link delivers at an opportunity's time");
        if self.net.topo.links[self.l as usize].impairments.is_some() {
            return self.net.enter_impaired_line(self.l, p);
        }
        let link = &mut self.net.topo.links[self.l as usize];
        let arrive = match link.schedule.as_ref() {
            // A delay schedule (the trace fixes the sending): the delay in force as the last
            // byte leaves, held behind the packet ahead, as on a scheduled rate link.
            Some(s) => s.arrival(at, link.pipe.back().map_or(Time::ZERO, |&(t, _)| t)),
            None => at + link.delay,
        };
        link.pipe.push_back((arrive, p));
        if link.pipe.len() == 1 {
            self.net.events.schedule(arrive, Event::PipeArrive(self.l));
        }
    }
}

impl Network {
    /// `send_on` for a link that follows a trace.
    pub(super) fn send_on_trace(&mut self, l: LinkId, p: Packet) {
        self.serve_opportunities(l);
        self.record(l, event::ARRIVE, &p, None, false);
        self.enqueue_on(l, p);
        self.schedule_opportunity(l);
    }

    /// The next opportunity of trace link `l` is due.
    pub(crate) fn on_opportunity(&mut self, l: LinkId) {
        self.topo.links[l as usize].wake_at = None;
        self.serve_opportunities(l);
        self.schedule_opportunity(l);
    }

    /// Uses (or burns) link `l`'s opportunities due up to now.
    fn serve_opportunities(&mut self, l: LinkId) {
        let now = self.now;
        let mut server = self.topo.links[l as usize].trace.take().expect("a trace link");
        server.serve(now, &mut SimLinkUser { net: self, l });
        self.topo.links[l as usize].trace = Some(server);
    }

    /// Keeps one `Event::Opportunity` scheduled while link `l` has packets to carry. The
    /// next opportunity never moves earlier, so a pending event is never too late.
    fn schedule_opportunity(&mut self, l: LinkId) {
        let link = &mut self.topo.links[l as usize];
        if link.wake_at.is_some() {
            return;
        }
        let server = link.trace.as_ref().expect("a trace link");
        if let Some(t) = server.next_due(link.queue.is_empty()) {
            if t != Time::MAX {
                link.wake_at = Some(t);
                self.events.schedule(t, Event::Opportunity(l));
            }
        }
    }
}
