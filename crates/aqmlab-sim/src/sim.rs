//! The simulation's engine: the event loop, and the dispatch of each event to the link, the
//! application or the sampler it concerns.
//!
//! The parts, one file each: `build` (the topology and flows from a configuration),
//! `network` (what applications send into: hosts, routes, packets, side tables),
//! `crate::link` (a link's discipline, serialization and delay line), `apps` (one file per
//! application, behind one trait) and `tables` (the result tables).

mod apps;
mod build;
pub(crate) mod network;
mod tables;

use crate::tcp::TcpSender;
use crate::topology::LinkId;
use apps::Application;
use aqmlab_core::{Packet, Time};
use aqmlab_model::record::FlowSamples;
use network::Network;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use network::{FEEDBACK_SIZE, TCP_HEADER, TCP_PORT, UDP_PORT};

/// Events carry only ids: packets wait in link queues and delay lines, never in the event
/// list, which keeps heap entries small (24 bytes) however many packets are in flight.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    /// A link finished serializing its packet.
    TxDone(LinkId),
    /// The head of a link's delay line reaches the far node.
    PipeArrive(LinkId),
    /// A shaping discipline (token bucket) said its head packet becomes sendable now.
    QueueRetry(LinkId),
    /// A link that follows a delivery trace has an opportunity now (`link/trace.rs`).
    Opportunity(LinkId),
    FlowStart(u32),
    FlowStop(u32),
    /// An event of a flow's application: the flow, and which of the application's timers
    /// (its own numbering, see `Application::on_timer`).
    App(u32, u8),
    QueueSample,
    FlowSample,
}

// An event stays 8 bytes (an entry of the event list 24) with the application's timer in it.
const _: () = assert!(std::mem::size_of::<Event>() == 8);

/// A hint to load the cache line holding `value` (a no-op where there is no such instruction).
#[inline(always)]
fn prefetch<T: ?Sized>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint, never a memory access that can fault; SSE, which
        // provides it, is part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(value as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// Cumulative counters of the run, reported in the summary.
#[derive(Default, Debug, Clone)]
pub struct RunCounters {
    /// Events of the model handled, each transmission's end included even when it needed no
    /// event of its own (see `start_tx_if_idle`): the same count as when every end had one.
    pub events: u64,
    /// Events taken from the event list.
    pub dispatched: u64,
    /// Packets sent on an idle link without going through its buffer (`pass_through_if_idle`).
    pub passed_through: u64,
    pub packets_created: u64,
}

/// A run stopped by its cancel flag before the configured duration (the binding raises it as
/// `aqmlab._core.Cancelled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("simulation cancelled")
    }
}

impl std::error::Error for Cancelled {}

pub struct Simulation {
    net: Network,
    /// Each flow's application, by flow id.
    apps: Vec<Box<dyn Application>>,
    flow_samples: FlowSamples,
}

impl Simulation {
    /// Gives every transmission's end its own event, as before that was optimized away: for
    /// the test that compares the two.
    #[doc(hidden)]
    pub fn disable_lazy_tx_ends(&mut self) {
        self.net.lazy_tx_ends = false;
    }

    /// Sends every packet through its link's buffer, as before idle links passed packets
    /// through: for the test that compares the two.
    #[doc(hidden)]
    pub fn disable_pass_through(&mut self) {
        self.net.pass_through = false;
    }

    /// Gives every link its events again, links only one flow uses included (`link/exclusive.rs`):
    /// the event-per-step model, whose results differ in the last digits. Call before `run`.
    pub fn disable_exclusive_links(&mut self) {
        self.net.exclusive_links = false;
    }

    pub fn now(&self) -> Time {
        self.net.now
    }

    /// Events scheduled and not yet handled (stale lazy timers included).
    pub fn pending_events(&self) -> usize {
        self.net.events.len()
    }

    /// Cumulative counters of the run so far.
    pub fn counters(&self) -> &RunCounters {
        &self.net.counters
    }

    /// Runs to the configured duration. Checks `cancel` and publishes the simulated time in
    /// `progress_ns` every few thousand events; stops with [`Cancelled`] once `cancel` is set.
    pub fn run(&mut self, cancel: &AtomicBool, progress_ns: &AtomicU64) -> Result<(), Cancelled> {
        let end = Time(self.net.cfg.duration_ns);
        // Every dispatched event is also one of `events`: counted there once, when the loop
        // ends, rather than twice per event (handlers only add to and take from `events`).
        let dispatched_before = self.net.counters.dispatched;
        while let Some((at, ev)) = self.net.events.pop_until(end) {
            self.prefetch_ahead();
            self.net.now = at;
            self.net.counters.dispatched += 1;
            self.handle(ev);
            if self.net.counters.dispatched.is_multiple_of(8192) {
                progress_ns.store(at.as_nanos(), Ordering::Relaxed);
                if cancel.load(Ordering::Relaxed) {
                    self.net.counters.events += self.net.counters.dispatched - dispatched_before;
                    return Err(Cancelled);
                }
            }
        }
        self.net.counters.events += self.net.counters.dispatched - dispatched_before;
        self.net.now = end;
        progress_ns.store(end.as_nanos(), Ordering::Relaxed);
        Ok(())
    }

    /// Asks the CPU to start loading what the next events in this bucket will read, while this
    /// one is handled: with thousands of flows, an event's link, the head of its delay line and
    /// where that packet goes next are seldom in cache, and each miss would otherwise stall a
    /// handler. In three stages, each taking its addresses from lines asked for one event
    /// earlier: the link of the event three ahead, the delay line's head of the one two ahead,
    /// and the next hop or flow (and its application) of the packet that arrives next.
    /// Prefetching changes no result.
    #[inline]
    fn prefetch_ahead(&self) {
        let net = &self.net;
        if let Some(Event::PipeArrive(l) | Event::TxDone(l)) = net.events.peek_ahead(2) {
            self.prefetch_link(l);
        }
        if let Some(Event::PipeArrive(l)) = net.events.peek_ahead(1) {
            if let Some(head) = net.topo.links[l as usize].pipe.front() {
                prefetch(head);
                prefetch(&head.1.sent_at);
            } else if let Some(p) = net.exclusive_head(l) {
                prefetch(p);
                prefetch(&p.sent_at);
            }
        }
        if let Some(Event::PipeArrive(l)) = net.events.peek_ahead(0) {
            let link = &net.topo.links[l as usize];
            if let Some(p) = link.pipe.front().map(|(_, p)| p).or_else(|| net.exclusive_head(l)) {
                if link.to == p.dst {
                    prefetch(&net.flows[p.flow as usize]);
                    prefetch(&*self.apps[p.flow as usize]);
                } else if let Some(next) = net.topo.next_hop(link.to, p.dst) {
                    self.prefetch_link(next);
                }
            }
        }
    }

    /// Asks for the lines of link `l` that sending and receiving on it read.
    #[inline]
    fn prefetch_link(&self, l: LinkId) {
        let link = &self.net.topo.links[l as usize];
        prefetch(&link.pipe);
        prefetch(&link.exclusive);
        prefetch(&link.to);
        prefetch(&link.lazy_tx);
        prefetch(link.queue.stats());
    }

    fn handle(&mut self, ev: Event) {
        let net = &mut self.net;
        match ev {
            Event::TxDone(l) => net.on_tx_done(l),
            Event::PipeArrive(l) => {
                if let Some(p) = net.on_pipe_arrive(l) {
                    self.deliver(p);
                }
            }
            Event::QueueRetry(l) => net.on_queue_retry(l),
            Event::Opportunity(l) => net.on_opportunity(l),
            Event::FlowStart(f) => self.apps[f as usize].start(f, net),
            Event::FlowStop(f) => self.apps[f as usize].stop(),
            Event::App(f, timer) => self.apps[f as usize].on_timer(f, timer, net),
            Event::QueueSample => net.on_queue_sample(),
            Event::FlowSample => self.on_flow_sample(),
        }
    }

    /// Hands packet `p`, arrived at one of its flow's hosts, to the flow's application.
    #[inline]
    fn deliver(&mut self, p: Packet) {
        let f = p.flow;
        let to_receiver = p.dst == self.net.flows[f as usize].dst;
        self.apps[f as usize].on_packet(f, p, to_receiver, &mut self.net);
    }

    /// Every link's discipline still satisfies the accounting identities.
    pub fn check_invariants(&self) -> Result<(), String> {
        for l in &self.net.topo.links {
            l.queue.check_invariants().map_err(|e| format!("{}: {e}", l.name))?;
        }
        Ok(())
    }

    /// The counters of the link called `name` (`"bottleneck"`, `"flow3/up"`...), if there is one.
    pub fn link_stats(&self, name: &str) -> Option<&aqmlab_core::QdiscStats> {
        self.net.topo.links.iter().find(|l| l.name == name).map(|l| l.queue.stats())
    }

    pub fn bottleneck_stats(&self) -> &aqmlab_core::QdiscStats {
        self.net.topo.links[self.net.bottleneck as usize].queue.stats()
    }

    /// Delivered bytes of each flow at the receiver.
    pub fn delivered_bytes(&self) -> Vec<u64> {
        self.apps.iter().map(|a| a.totals().delivered_bytes).collect()
    }

    pub fn tcp_sender(&self, f: usize) -> Option<&TcpSender> {
        self.apps[f].tcp_sender()
    }
}
