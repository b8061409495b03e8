//! The delay line of a link with netem's impairments (`aqmlab_core::link::impairments`): a
//! packet that finished sending may be lost, sent twice, or delayed by jitter, and with
//! reordering jitter a later packet may overtake an earlier one.
//!
//! The line stays a `VecDeque` kept in due-time order (equal times in the order they entered,
//! as netem's `tfifo_enqueue` walks from the tail), with an event at the due time of whichever
//! packet is at its head. A packet put in front of the head gets an event of its own; the
//! head's old event then finds a later head and does nothing (`Network::on_pipe_arrive`).

use crate::sim::network::Network;
use crate::sim::Event;
use crate::topology::LinkId;
use aqmlab_core::Packet;

impl Network {
    /// Packet `p` has left link `l` now: into the line, once, twice, or not at all.
    pub(super) fn enter_impaired_line(&mut self, l: LinkId, p: Packet) {
        let now = self.now;
        let link = &mut self.topo.links[l as usize];
        let imp = link.impairments.as_mut().expect("an impaired link");
        // A schedule's delay in force now; impairments keep the order unless they reorder.
        let delay = link.schedule.as_ref().map_or(link.delay, |s| s.delay_at(now));
        let copies = imp.transmit(now, delay);
        if copies.as_slice().is_empty() {
            // Lost on the wire: what travelled beside it goes too.
            self.take_sack_blocks(&p);
            self.labels.remove(&p.uid);
        }
        let link = &mut self.topo.links[l as usize];
        for &t in copies.as_slice() {
            let at = link.pipe.iter().rposition(|&(d, _)| d <= t).map_or(0, |i| i + 1);
            link.pipe.insert(at, (t, p));
            if at == 0 {
                self.events.schedule(t, Event::PipeArrive(l));
            }
        }
    }
}
