//! The emulated link following a delivery trace: the same byte accounting as the simulator's
//! (`aqmlab_core::link::TraceServer`, mahimahi's `LinkQueue::rationalize`), against the
//! router's clock.
//!
//! Opportunities are served when the router wakes (`Link::service`, at the time `next_due`
//! asked for or later) and before each arrival joins the queue. A late wake-up serves the
//! opportunities it missed at their own times: a packet's dequeue is logged and its delay
//! counted from the opportunity that carried it, not from when the router got round to it, so
//! lateness of wake-ups never accumulates into rate error (as with the pacer's absolute clock).

use super::Link;
use aqmlab_core::link::OpportunityUser;
use aqmlab_core::{DropReason, Packet, Time};
use aqmlab_model::record::event;

/// The emulator's side of one `TraceServer::serve`.
struct EmuLinkUser<'a> {
    link: &'a mut Link,
}

impl OpportunityUser for EmuLinkUser<'_> {
    fn backlog_empty(&self) -> bool {
        self.link.queue.len_packets() == 0
    }

    fn pull(&mut self, at: Time) -> Option<Packet> {
        let link = &mut *self.link;
        let out = link.queue.dequeue(at);
        let (packet, marked) = (out.packet, out.marked);
        if !out.dropped.is_empty() {
            let dropped: Vec<(Packet, DropReason)> = out.dropped.iter().map(|e| (e.packet, e.reason)).collect();
            link.forget_head_drops(at, dropped);
        }
        let pkt = packet?;
        let marked = marked && link.mark_stored(pkt.uid);
        link.log(at, event::DEQUEUE, &pkt, None, marked);
        Some(pkt)
    }

    fn deliver(&mut self, at: Time, p: Packet) {
        self.link.put_on_delay_line(at, p.uid);
    }
}

impl Link {
    /// Starts a trace link's first pass (or a schedule's first step) at `origin`, the run's
    /// epoch, so that the trace's time 0 is the run's, as in the simulator (nothing for a link
    /// without either).
    pub fn start_trace_at(&mut self, origin: Time) {
        if let Some(server) = self.trace.as_mut() {
            server.restart(origin);
        }
        if let Some(schedule) = self.schedule.as_mut() {
            schedule.restart(origin);
        }
    }

    /// Uses (or burns) the opportunities due up to `now`.
    pub(super) fn serve_opportunities(&mut self, now: Time) {
        let Some(mut server) = self.trace.take() else { return };
        server.serve(now, &mut EmuLinkUser { link: self });
        self.trace = Some(server);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, offer};
    use super::super::*;
    use crate::classify::Classifier;
    use crate::config::ClassifyConfig;
    use aqmlab_core::link::DeliveryTrace;
    use aqmlab_core::QdiscConfig;

    fn trace_link(trace: &[u64], delay_ns: u64) -> Link {
        let qdisc: QdiscConfig = serde_json::from_str(r#"{"kind":"droptail","limit":{"packets":1000}}"#).unwrap();
        let trace = Some(DeliveryTrace { opportunities_ms: trace.to_vec() });
        let cfg = LinkConfig { rate_bps: 0, delay_ns, qdisc, trace, impairments: None, schedule: None };
        Link::new(&cfg, SimRng::stream(1, "test"), impaired::streams(1, "test"), true).unwrap()
    }

    #[test]
    fn a_saturated_trace_link_sends_at_the_opportunities_then_the_delay() {
        let mut link = trace_link(&[1, 1, 4], 5_000_000);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..6 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let out = drain(&mut link, Time::ZERO);
        let ms: Vec<u64> = out.iter().map(|(t, _)| t.as_nanos() / 1_000_000).collect();
        assert_eq!(ms, vec![6, 6, 9, 10, 10, 13]);
    }

    #[test]
    fn late_wakeups_serve_missed_opportunities_at_their_own_times() {
        // The router wakes 700 us after each due time: deliveries still keep the trace's
        // times (plus the lateness of the wake that hands them out), never drift later.
        let mut link = trace_link(&[1], 0);
        let mut cls = Classifier::new(&ClassifyConfig::default(), &[]);
        for uid in 0..100 {
            offer(&mut link, &mut cls, uid, Time::ZERO, 1500, 9);
        }
        let mut now = Time::ZERO;
        let mut sent = Vec::new();
        while let Some(due) = {
            link.service(now, &mut sent);
            link.next_due(now)
        } {
            now = due.max(now) + Time::from_micros(700);
        }
        link.service(now, &mut sent);
        assert_eq!(sent.len(), 100);
        assert!(now <= Time::from_micros(100_000 + 700), "last hand-out at {now}");
    }
}
