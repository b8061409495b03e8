//! The simulation: a dumbbell of hosts and routers, flows with their applications, the event
//! loop, and the records.
//!
//! One event per link departure (htsim's structure): a link serializes one packet at a time;
//! when it finishes, the packet is scheduled to arrive at the far node after the propagation
//! delay and the next packet is pulled from the link's discipline.

use crate::app::mpeg::{Frame, MpegSink, MpegSource};
use crate::app::rtp::{Emission, MediaSource};
use crate::app::streaming::StreamServer;
use crate::config::{AppConfig, FlowGroup, LinkConfig, SimConfig};
use crate::engine::EventList;
use crate::pcap::PcapWriter;
use crate::record::{event, FlowSample, FlowSamples, PacketEvents, QueueSamples, Table, Column};
use crate::tcp::{AckAction, Segment, TcpReceiver, TcpSender};
use crate::topology::{LazyTx, Link, LinkId, NodeId, Topology};
use aqmlab_core::packet::tcp_flags;
use aqmlab_core::qdisc::{build_qdisc, DequeueOutcome};
use aqmlab_core::{Ecn, Packet, Proto, QdiscConfig, Rate, SackBlocks, SimRng, Time, Verdict};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

// Per-application glue of the simulator, one file each under src/sim/.
mod pels;
mod stream;
use aqmlab_core::qdisc::pels_feedback::FeedbackLabel;
use pels::PelsFlow;
use stream::UdpStream;

/// IPv4 + TCP headers without options.
pub const TCP_HEADER: u32 = 40;
pub const TCP_PORT: u16 = 5001;
pub const UDP_PORT: u16 = 5004;
/// A receiver report: IP + UDP headers and 12 bytes of counters.
pub const FEEDBACK_SIZE: u32 = 40;

/// Events carry only ids: packets wait in link queues and delay lines, never in the event
/// list, which keeps heap entries small (24 bytes) however many packets are in flight.
#[derive(Clone, Copy)]
enum Event {
    /// A link finished serializing its packet.
    TxDone(LinkId),
    /// The head of a link's delay line reaches the far node.
    PipeArrive(LinkId),
    /// A shaping discipline (token bucket) said its head packet becomes sendable now.
    QueueRetry(LinkId),
    FlowStart(u32),
    FlowStop(u32),
    RtoTimer(u32),
    DelayedAck(u32),
    CbrSend(u32),
    FrameSend(u32),
    VideoFeedback(u32),
    MediaGenerate(u32),
    MediaDue(u32),
    /// An adaptive streaming server's next chunk is due (see `app::streaming`).
    StreamSend(u32),
    /// A PELS source's next packet is due.
    PelsSend(u32),
    QueueSample,
    FlowSample,
}

enum Transport {
    Tcp {
        tx: Box<TcpSender>,
        rx: TcpReceiver,
        ecn: bool,
        /// When the pending RTO timer event fires, if one is scheduled.
        timer_at: Option<Time>,
        /// An adaptive streaming server writing into this sender (app-limited); None: bulk.
        stream: Option<Box<StreamServer>>,
    },
    Cbr {
        interval: Time,
        size: u32,
        next_seq: u64,
        running: bool,
        rx_packets: u64,
        rx_bytes: u64,
    },
    Mpeg(Box<MpegFlow>),
    Rtp(Box<RtpFlow>),
    UdpStream(Box<UdpStream>),
    Pels(Box<PelsFlow>),
}

/// An RTP-like media stream: the source with its jitter queue, and the receiver's log.
struct RtpFlow {
    src: MediaSource,
    running: bool,
    /// When the pending MediaDue event fires, if one is scheduled (lazy, like the RTO timer).
    due_at: Option<Time>,
    log: ReceiveLog,
}

/// One row per packet the receiver got: sequence number, size, send and receive times.
#[derive(Default)]
struct ReceiveLog {
    seq: Vec<u64>,
    size: Vec<u32>,
    sent_ns: Vec<u64>,
    recv_ns: Vec<u64>,
    bytes: u64,
}

impl ReceiveLog {
    fn push(&mut self, p: &Packet, now: Time) {
        self.seq.push(p.seq);
        self.size.push(p.size);
        self.sent_ns.push(p.sent_at.as_nanos());
        self.recv_ns.push(now.as_nanos());
        self.bytes += p.payload as u64;
    }
}

/// An MPEG-1 stream over UDP: source, sink and the per-frame log.
struct MpegFlow {
    src: MpegSource,
    sink: MpegSink,
    /// Frame sizes stream, `"flow/<id>/frames"`.
    rng: SimRng,
    next_seq: u64,
    running: bool,
    feedback: Time,
    packets_sent: u64,
    frames: Vec<FrameRecord>,
    /// Which packets arrived (by sequence number): the quality pipeline drops the others from
    /// a real bitstream, so it needs the fragments, not only their count per frame.
    log: ReceiveLog,
}

struct FrameRecord {
    t: Time,
    frame: Frame,
    packets: u16,
}

struct Flow {
    group: usize,
    src: NodeId,
    dst: NodeId,
    /// The one link each end's host sends on (its access link toward the routers), so that a
    /// new packet finds its first hop in the flow, not in the host's node.
    src_link: LinkId,
    dst_link: LinkId,
    sport: u16,
    start: Time,
    stop: Time,
    sender_delay: Time,
    receiver_delay: Time,
    class_weights: [f64; 3],
    class_rng: SimRng,
    dscp: u8,
    transport: Transport,
    /// Random loss before the bottleneck (`FlowGroup::path_loss`) and its stream.
    path_loss: f64,
    path_rng: SimRng,
}

/// A flow's totals for the flows table: transport counters, zero where they do not apply.
#[derive(Default)]
struct FlowTotals {
    is_tcp: bool,
    packets_sent: u64,
    retransmissions: u64,
    fast_retransmits: u64,
    timeouts: u64,
    spurious_timeouts: u64,
    delivered_bytes: u64,
}

fn totals(t: &Transport) -> FlowTotals {
    match t {
        Transport::Tcp { tx, rx, .. } => FlowTotals {
            is_tcp: true,
            packets_sent: tx.stats.segments_sent,
            retransmissions: tx.stats.retransmissions,
            fast_retransmits: tx.stats.fast_retransmits,
            timeouts: tx.stats.timeouts,
            spurious_timeouts: tx.stats.spurious_timeouts,
            delivered_bytes: rx.delivered_bytes,
        },
        Transport::Cbr { next_seq, rx_bytes, .. } => {
            FlowTotals { packets_sent: *next_seq, delivered_bytes: *rx_bytes, ..FlowTotals::default() }
        }
        Transport::Mpeg(m) => FlowTotals { packets_sent: m.packets_sent, delivered_bytes: m.sink.bytes, ..FlowTotals::default() },
        Transport::Rtp(r) => FlowTotals { packets_sent: r.src.sent_packets, delivered_bytes: r.log.bytes, ..FlowTotals::default() },
        Transport::UdpStream(u) => FlowTotals { packets_sent: u.packets_sent, delivered_bytes: u.log.bytes, ..FlowTotals::default() },
        Transport::Pels(p) => FlowTotals { packets_sent: p.tx.packets_sent, delivered_bytes: p.rx.bytes, ..FlowTotals::default() },
    }
}

/// Hashes a packet uid with one multiplication (Fibonacci hashing) instead of SipHash: the
/// side tables below are touched on every SACK-carrying ACK, and uids are not adversarial.
/// Only lookups use the hash, never iteration order, so results do not depend on it.
#[derive(Default)]
struct UidHasher(u64);

impl Hasher for UidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ *b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, uid: u64) {
        // The high bits of the product mix every bit of the uid (hashbrown takes its control
        // byte from them and its bucket from the low bits, which the odd factor keeps spread).
        self.0 = uid.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(26);
    }
}

/// A hint to load the cache line holding `value` (a no-op where there is no such instruction).
#[inline(always)]
fn prefetch<T>(value: &T) {
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

/// Side tables keyed by packet uid.
type UidMap<V> = HashMap<u64, V, BuildHasherDefault<UidHasher>>;

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

pub struct Simulation {
    cfg: SimConfig,
    now: Time,
    events: EventList<Event>,
    topo: Topology,
    flows: Vec<Flow>,
    bottleneck: LinkId,
    next_uid: u64,
    segs: Vec<Segment>,
    pkt_events: Option<PacketEvents>,
    queue_samples: QueueSamples,
    flow_samples: FlowSamples,
    pcap: Option<PcapWriter>,
    /// SACK blocks of ACKs in flight, by packet uid (see `Packet::sack_blocks`).
    sack_blocks: UidMap<SackBlocks>,
    /// PELS feedback labels of packets in flight, by packet uid (no room in `Packet`).
    labels: UidMap<FeedbackLabel>,
    /// Whether any flow is a PELS stream (the only packets that carry labels): without one,
    /// enqueues skip the label step and with it a look at the packet's flow.
    pels_flows: bool,
    pub counters: RunCounters,
    /// Whether transmissions may end without an event (`end_needs_no_event`); off only in
    /// the test that checks it changes no result.
    lazy_tx_ends: bool,
    /// Whether idle links may send a packet without the round trip through their buffer
    /// (`pass_through_if_idle`); off only in the test that checks it changes no result.
    pass_through: bool,
}

fn access_link(from: NodeId, to: NodeId, rate: u64, delay: u64, qdisc: &QdiscConfig, seed: u64, name: String) -> Result<Link, String> {
    let rate = Rate(rate);
    Ok(Link {
        from,
        to,
        rate,
        delay: Time(delay),
        queue: build_qdisc(qdisc, rate).map_err(|e| format!("{name}: {e}"))?,
        rng: SimRng::stream(seed, &format!("link/{name}")),
        in_flight: None,
        pipe: Default::default(),
        lazy_tx: None,
        retry_at: None,
        name,
    })
}

fn link_from(cfg: &LinkConfig, from: NodeId, to: NodeId, seed: u64, name: &str) -> Result<Link, String> {
    access_link(from, to, cfg.rate_bps, cfg.delay_ns, &cfg.qdisc, seed, name.to_string())
}

impl Simulation {
    pub fn new(cfg: SimConfig) -> Result<Simulation, String> {
        cfg.validate()?;
        let seed = cfg.seed;
        let mut topo = Topology::default();
        let r1 = topo.add_node();
        let r2 = topo.add_node();
        let t = &cfg.topology;
        let bottleneck = topo.add_link(link_from(&t.bottleneck, r1, r2, seed, "bottleneck")?);
        topo.add_link(link_from(&t.reverse, r2, r1, seed, "reverse")?);
        // A parking lot: further routers in a row after R2 (none for the plain dumbbell).
        let mut routers = vec![r1, r2];
        for (i, hop) in t.chain.iter().enumerate() {
            let (prev, next) = (routers[routers.len() - 1], topo.add_node());
            topo.add_link(link_from(&hop.forward, prev, next, seed, &format!("hop{}", i + 1))?);
            topo.add_link(link_from(&hop.reverse, next, prev, seed, &format!("hop{}-rev", i + 1))?);
            routers.push(next);
        }
        let mut flows = Vec::new();
        for (gi, g) in cfg.flow_groups.iter().enumerate() {
            let mut start_rng = SimRng::stream(seed, &format!("group/{}/start", g.name));
            for i in 0..g.count {
                let id = flows.len() as u32;
                let [enter, exit] = g.path_in(t);
                let (r_in, r_out) = (routers[enter as usize], routers[exit as usize]);
                let flow = Self::build_flow(&mut topo, &cfg, gi, g, i, id, r_in, r_out, &mut start_rng)?;
                flows.push(flow);
            }
        }
        topo.compute_routes();
        let records = &cfg.records;
        let mut sim = Simulation {
            pkt_events: records.packet_events.then(PacketEvents::default),
            pcap: records.pcap.then(PcapWriter::new),
            cfg,
            now: Time::ZERO,
            events: EventList::default(),
            topo,
            flows,
            bottleneck,
            next_uid: 0,
            segs: Vec::new(),
            queue_samples: QueueSamples::default(),
            flow_samples: FlowSamples::default(),
            sack_blocks: UidMap::default(),
            labels: UidMap::default(),
            pels_flows: false,
            counters: RunCounters::default(),
            lazy_tx_ends: true,
            pass_through: true,
        };
        sim.pels_flows = sim.flows.iter().any(|f| matches!(f.transport, Transport::Pels(_)));
        for (id, f) in sim.flows.iter().enumerate() {
            sim.events.schedule(f.start, Event::FlowStart(id as u32));
            sim.events.schedule(f.stop, Event::FlowStop(id as u32));
        }
        sim.events.schedule(Time::ZERO, Event::QueueSample);
        sim.events.schedule(Time::ZERO, Event::FlowSample);
        Ok(sim)
    }

    #[allow(clippy::too_many_arguments)]
    fn build_flow(
        topo: &mut Topology,
        cfg: &SimConfig,
        gi: usize,
        g: &FlowGroup,
        i: u32,
        id: u32,
        r1: NodeId,
        r2: NodeId,
        start_rng: &mut SimRng,
    ) -> Result<Flow, String> {
        let seed = cfg.seed;
        let src = topo.add_node();
        let dst = topo.add_node();
        // Linear spread of sender access delays over the group, by index.
        let [lo, hi] = g.sender_delay_ns;
        let sender_delay = if g.count > 1 { lo + (hi - lo) * i as u64 / (g.count as u64 - 1) } else { lo };
        let aq = &cfg.topology.access_qdisc;
        let rate = g.access_rate_bps;
        let rd = g.receiver_delay_ns;
        let src_link = topo.add_link(access_link(src, r1, rate, sender_delay, aq, seed, format!("flow{id}/up"))?);
        topo.add_link(access_link(r1, src, rate, sender_delay, aq, seed, format!("flow{id}/up-rev"))?);
        topo.add_link(access_link(r2, dst, rate, rd, aq, seed, format!("flow{id}/down"))?);
        let dst_link = topo.add_link(access_link(dst, r2, rate, rd, aq, seed, format!("flow{id}/down-rev"))?);
        let jitter = if g.start_jitter_ns > 0 { start_rng.uniform() * g.start_jitter_ns as f64 } else { 0.0 };
        let start = Time(g.start_ns) + Time(jitter as u64);
        let transport = match &g.app {
            AppConfig::Bulk { tcp } => Transport::Tcp {
                tx: Box::new(TcpSender::new(tcp)),
                rx: TcpReceiver::new(tcp),
                ecn: tcp.ecn,
                timer_at: None,
                stream: None,
            },
            AppConfig::Stream(c) => stream::build_transport(c, start)?,
            AppConfig::Mpeg(m) => {
                let [enter, exit] = g.path_in(&cfg.topology);
                let base_rtt = 2 * (sender_delay + rd) + cfg.topology.path_delay_ns(enter, exit);
                let feedback = if m.feedback_interval_ns > 0 { m.feedback_interval_ns } else { base_rtt.max(1) };
                Transport::Mpeg(Box::new(MpegFlow {
                    src: MpegSource::new(m.clone())?,
                    sink: MpegSink::default(),
                    rng: SimRng::stream(seed, &format!("flow/{id}/frames")),
                    next_seq: 0,
                    running: false,
                    feedback: Time(feedback),
                    packets_sent: 0,
                    frames: Vec::new(),
                    log: ReceiveLog::default(),
                }))
            }
            AppConfig::Rtp(r) => Transport::Rtp(Box::new(RtpFlow {
                src: MediaSource::new(
                    r.clone(),
                    SimRng::stream(seed, &format!("flow/{id}/media")),
                    SimRng::stream(seed, &format!("flow/{id}/jitter")),
                )?,
                running: false,
                due_at: None,
                log: ReceiveLog::default(),
            })),
            AppConfig::Pels(c) => Transport::Pels(Box::new(PelsFlow::new(c.clone())?)),
            AppConfig::Cbr { rate_bps, packet_size } => Transport::Cbr {
                interval: Rate(*rate_bps).tx_time(*packet_size as u64),
                size: *packet_size,
                next_seq: 0,
                running: false,
                rx_packets: 0,
                rx_bytes: 0,
            },
        };
        Ok(Flow {
            group: gi,
            src,
            dst,
            src_link,
            dst_link,
            sport: 10_000 + (id % 50_000) as u16,
            start,
            stop: Time(g.stop_ns).max(start),
            sender_delay: Time(sender_delay),
            receiver_delay: Time(rd),
            class_weights: g.class_weights,
            class_rng: SimRng::stream(seed, &format!("flow/{id}/class")),
            dscp: g.dscp,
            transport,
            path_loss: g.path_loss,
            path_rng: SimRng::stream(seed, &format!("flow/{id}/path_loss")),
        })
    }

    /// Gives every transmission's end its own event, as before that was optimized away: for
    /// the test that compares the two.
    #[doc(hidden)]
    pub fn disable_lazy_tx_ends(&mut self) {
        self.lazy_tx_ends = false;
    }

    /// Sends every packet through its link's buffer, as before idle links passed packets
    /// through: for the test that compares the two.
    #[doc(hidden)]
    pub fn disable_pass_through(&mut self) {
        self.pass_through = false;
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Events scheduled and not yet handled (stale lazy timers included).
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Runs to the configured duration. Checks `cancel` and publishes the simulated time in
    /// `progress_ns` every few thousand events; returns Err if cancelled.
    pub fn run(&mut self, cancel: &AtomicBool, progress_ns: &AtomicU64) -> Result<(), String> {
        let end = Time(self.cfg.duration_ns);
        while let Some((at, ev)) = self.events.pop_until(end) {
            self.prefetch_ahead();
            self.now = at;
            self.counters.events += 1;
            self.counters.dispatched += 1;
            self.handle(ev);
            if self.counters.dispatched.is_multiple_of(8192) {
                progress_ns.store(at.as_nanos(), Ordering::Relaxed);
                if cancel.load(Ordering::Relaxed) {
                    return Err("cancelled".into());
                }
            }
        }
        self.now = end;
        progress_ns.store(end.as_nanos(), Ordering::Relaxed);
        Ok(())
    }

    /// Asks the CPU to start loading what the next events in this bucket will read, while this
    /// one is handled: with thousands of flows, an event's link, the head of its delay line and
    /// where that packet goes next are seldom in cache, and each miss would otherwise stall a
    /// handler. In three stages, each taking its addresses from lines asked for one event
    /// earlier: the link of the event three ahead, the delay line's head of the one two ahead,
    /// and the next hop or flow of the packet that arrives next. Prefetching changes no result.
    #[inline]
    fn prefetch_ahead(&self) {
        if let Some(Event::PipeArrive(l) | Event::TxDone(l)) = self.events.peek_ahead(2) {
            self.prefetch_link(l);
        }
        if let Some(Event::PipeArrive(l)) = self.events.peek_ahead(1) {
            if let Some(head) = self.topo.links[l as usize].pipe.front() {
                prefetch(head);
                prefetch(&head.1.sent_at);
            }
        }
        if let Some(Event::PipeArrive(l)) = self.events.peek_ahead(0) {
            let link = &self.topo.links[l as usize];
            if let Some((_, p)) = link.pipe.front() {
                if link.to == p.dst {
                    let flow = &self.flows[p.flow as usize];
                    prefetch(flow);
                    prefetch(&flow.transport);
                } else if let Some(next) = self.topo.next_hop(link.to, p.dst) {
                    self.prefetch_link(next);
                }
            }
        }
    }

    /// Asks for the lines of link `l` that sending and receiving on it read.
    #[inline]
    fn prefetch_link(&self, l: LinkId) {
        let link = &self.topo.links[l as usize];
        prefetch(&link.pipe);
        prefetch(&link.to);
        prefetch(&link.lazy_tx);
        prefetch(link.queue.stats());
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::TxDone(l) => self.on_tx_done(l),
            Event::PipeArrive(l) => self.on_pipe_arrive(l),
            Event::QueueRetry(l) => {
                self.topo.links[l as usize].retry_at = None;
                self.start_tx_if_idle(l);
            }
            Event::FlowStart(f) => self.on_flow_start(f),
            Event::FlowStop(f) => self.on_flow_stop(f),
            Event::RtoTimer(f) => self.on_rto_timer(f),
            Event::DelayedAck(f) => self.on_delayed_ack(f),
            Event::CbrSend(f) => self.on_cbr_send(f),
            Event::FrameSend(f) => self.on_frame_send(f),
            Event::VideoFeedback(f) => self.on_video_feedback(f),
            Event::MediaGenerate(f) => self.on_media_generate(f),
            Event::MediaDue(f) => self.on_media_due(f),
            Event::StreamSend(f) => self.on_stream_send(f),
            Event::PelsSend(f) => self.on_pels_send(f),
            Event::QueueSample => self.on_queue_sample(),
            Event::FlowSample => self.on_flow_sample(),
        }
    }

    // ---- links -------------------------------------------------------------------------

    /// A packet event at link `l`, recorded when it is the bottleneck and packet records are
    /// on. Inlined, so that the usual case (another link, or no records) costs a comparison.
    #[inline]
    fn record(&mut self, l: LinkId, ev: u8, p: &Packet, reason: Option<aqmlab_core::DropReason>, marked: bool) {
        if self.records_packets_of(l) {
            self.push_record(l, ev, p, reason, marked);
        }
    }

    /// Whether packet events at link `l` are recorded: the bottleneck's, when asked for.
    #[inline]
    fn records_packets_of(&self, l: LinkId) -> bool {
        l == self.bottleneck && self.pkt_events.is_some()
    }

    #[inline(never)]
    fn push_record(&mut self, l: LinkId, ev: u8, p: &Packet, reason: Option<aqmlab_core::DropReason>, marked: bool) {
        if let Some(rec) = self.pkt_events.as_mut() {
            let q = &self.topo.links[l as usize].queue;
            rec.push(self.now, ev, p, reason, marked, q.len_packets(), q.len_bytes());
        }
    }

    /// Offers `p` to link `l`'s discipline and starts transmission if the link is idle.
    fn send_on(&mut self, l: LinkId, p: Packet) {
        self.record(l, event::ARRIVE, &p, None, false);
        let now = self.now;
        let p = match self.pass_through_if_idle(l, p) {
            Ok(()) => return,
            Err(p) => p,
        };
        let link = &mut self.topo.links[l as usize];
        let out = link.queue.enqueue(p, now, &mut link.rng);
        let verdict = out.verdict;
        let evicted: Vec<_> = out.evicted.to_vec();
        match verdict {
            Verdict::Enqueued | Verdict::Marked => {
                self.stamp_label(l, &p);
                self.record(l, event::ENQUEUE, &p, None, verdict == Verdict::Marked)
            }
            Verdict::Dropped(reason) => {
                self.take_sack_blocks(&p);
                self.labels.remove(&p.uid);
                self.record(l, event::DROP, &p, Some(reason), false)
            }
        }
        for e in evicted {
            self.forget_dropped(l, &e.packet, e.reason);
        }
        self.start_tx_if_idle(l);
    }

    /// A packet pushed out of link `l`'s buffer after it was accepted (evicted, or dropped at
    /// the head by an AQM): its side state goes and the drop is recorded.
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
        if !self.pass_through || self.records_packets_of(l) || !self.is_idle(l) {
            return Err(p);
        }
        let sent = self.topo.links[l as usize].queue.pass_through(p, self.now)?;
        self.counters.passed_through += 1;
        self.stamp_label(l, &p);
        self.transmit(l, sent, false);
        Ok(())
    }

    /// Whether link `l` is sending nothing (see `lazy_tx_busy` for a transmission without an
    /// end event).
    fn is_idle(&mut self, l: LinkId) -> bool {
        self.topo.links[l as usize].in_flight.is_none() && !self.lazy_tx_busy(l)
    }

    fn start_tx_if_idle(&mut self, l: LinkId) {
        let now = self.now;
        if !self.is_idle(l) {
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

    /// Starts sending `p`, just dequeued from idle link `l` (CE-marked by that dequeue if
    /// `marked`).
    fn transmit(&mut self, l: LinkId, p: Packet, marked: bool) {
        let now = self.now;
        let link = &mut self.topo.links[l as usize];
        let done = now + link.rate.tx_time(p.size as u64);
        if self.lazy_tx_ends && Self::end_needs_no_event(link, done) {
            link.pipe.push_back((done + link.delay, p));
            link.lazy_tx = Some(LazyTx { done, order: self.events.reserve_order(), scheduled: false });
            if done.as_nanos() <= self.cfg.duration_ns {
                self.counters.events += 1; // its TxDone would have been handled within the run
            }
        } else {
            link.in_flight = Some(p);
            self.events.schedule(done, Event::TxDone(l));
        }
        self.record(l, event::DEQUEUE, &p, None, marked);
        if l == self.bottleneck {
            if let Some(w) = self.pcap.as_mut() {
                w.write(now, &p, self.sack_blocks.get(&p.uid));
            }
        }
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
    fn on_tx_done(&mut self, l: LinkId) {
        let link = &mut self.topo.links[l as usize];
        if link.lazy_tx.take().is_some() {
            // The end of a lazy transmission, scheduled because a packet queued behind it: its
            // packet is in the delay line already, behind one still propagating.
            self.counters.events -= 1; // counted when the transmission started
        } else {
            let p = link.in_flight.take().expect("TxDone on an idle link");
            let arrive = self.now + link.delay;
            link.pipe.push_back((arrive, p));
            if link.pipe.len() == 1 {
                self.events.schedule(arrive, Event::PipeArrive(l));
            }
        }
        self.start_tx_if_idle(l);
    }

    fn on_pipe_arrive(&mut self, l: LinkId) {
        let link = &mut self.topo.links[l as usize];
        let (_, p) = link.pipe.pop_front().expect("PipeArrive on an empty delay line");
        let to = link.to;
        if let Some(&(next, _)) = link.pipe.front() {
            self.events.schedule(next, Event::PipeArrive(l));
        }
        self.on_arrive(to, p);
    }

    fn on_arrive(&mut self, node: NodeId, p: Packet) {
        if node == p.dst {
            self.deliver(p);
            return;
        }
        match self.topo.next_hop(node, p.dst) {
            Some(l) => self.send_on(l, p),
            None => debug_assert!(false, "no route from {node} to {}", p.dst),
        }
    }

    /// Sends a packet from its source host onto the first link.
    fn emit(&mut self, p: Packet) {
        self.counters.packets_created += 1;
        if self.lost_on_path(&p) {
            return;
        }
        let flow = &self.flows[p.flow as usize];
        let l = if p.src == flow.src {
            flow.src_link
        } else if p.src == flow.dst {
            flow.dst_link
        } else {
            self.topo.next_hop(p.src, p.dst).expect("host without a link")
        };
        debug_assert_eq!(Some(l), self.topo.next_hop(p.src, p.dst), "first hop of flow {}", p.flow);
        self.send_on(l, p);
    }

    fn new_packet(&mut self, f: u32, from_sender: bool) -> Packet {
        let uid = self.next_uid;
        self.next_uid += 1;
        let flow = &self.flows[f as usize];
        let (src, dst, sport, dport) = if from_sender {
            (flow.src, flow.dst, flow.sport, self.dport(f))
        } else {
            (flow.dst, flow.src, self.dport(f), flow.sport)
        };
        Packet { uid, flow: f, src, dst, sport, dport, dscp: flow.dscp, sent_at: self.now, ..Packet::default() }
    }

    fn dport(&self, f: u32) -> u16 {
        match self.flows[f as usize].transport {
            Transport::Tcp { .. } => TCP_PORT,
            Transport::Cbr { .. } | Transport::Mpeg(_) | Transport::Rtp(_) | Transport::UdpStream(_) | Transport::Pels(_) => UDP_PORT,
        }
    }

    /// Draws a priority class (1..=3) from the flow's weights; 0 when the flow is unclassified.
    fn draw_class(&mut self, f: u32) -> u8 {
        let flow = &mut self.flows[f as usize];
        if flow.class_weights.iter().all(|w| *w == 0.0) {
            return 0;
        }
        flow.class_rng.weighted_index(&flow.class_weights) as u8 + 1
    }

    // ---- applications and transports --------------------------------------------------

    fn on_flow_start(&mut self, f: u32) {
        match &mut self.flows[f as usize].transport {
            Transport::Tcp { stream: Some(_), .. } | Transport::UdpStream(_) => self.on_stream_start(f),
            Transport::Tcp { .. } => self.tcp_send(f, |tx, now, out| tx.send_available(now, out)),
            Transport::Cbr { running, .. } => {
                *running = true;
                self.on_cbr_send(f);
            }
            Transport::Mpeg(m) => {
                m.running = true;
                let first_report = self.now + m.feedback;
                self.events.schedule(first_report, Event::VideoFeedback(f));
                self.on_frame_send(f);
            }
            Transport::Rtp(r) => {
                r.running = true;
                self.on_media_generate(f);
            }
            Transport::Pels(p) => {
                p.running = true;
                self.on_pels_send(f);
            }
        }
    }

    /// The source produces its next frame or packet; packets leave when due (at once without
    /// source jitter).
    fn on_media_generate(&mut self, f: u32) {
        let now = self.now;
        let Transport::Rtp(r) = &mut self.flows[f as usize].transport else { return };
        if !r.running {
            return;
        }
        let next = r.src.generate(now);
        self.events.schedule(next, Event::MediaGenerate(f));
        self.emit_due_media(f);
    }

    fn on_media_due(&mut self, f: u32) {
        let now = self.now;
        let Transport::Rtp(r) = &mut self.flows[f as usize].transport else { return };
        if r.due_at != Some(now) {
            return; // superseded by an earlier-scheduled event
        }
        r.due_at = None;
        self.emit_due_media(f);
    }

    /// Sends every packet due now and keeps one MediaDue event at the next due time.
    fn emit_due_media(&mut self, f: u32) {
        let now = self.now;
        let mut due: Vec<Emission> = Vec::new();
        let Transport::Rtp(r) = &mut self.flows[f as usize].transport else { return };
        r.src.due(now, &mut due);
        if let Some(next) = r.src.next_due() {
            if r.due_at.is_none_or(|t| t > next) {
                r.due_at = Some(next);
                self.events.schedule(next, Event::MediaDue(f));
            }
        }
        for e in due {
            let class = self.draw_class(f);
            let mut p = self.new_packet(f, true);
            p.proto = Proto::Udp;
            p.size = e.size;
            p.payload = e.size - crate::app::rtp::RTP_HEADERS;
            p.seq = e.seq;
            p.class = class;
            self.emit(p);
        }
    }

    fn on_flow_stop(&mut self, f: u32) {
        match &mut self.flows[f as usize].transport {
            Transport::Tcp { tx, stream, .. } => {
                tx.stop();
                if let Some(s) = stream {
                    s.stop();
                }
            }
            Transport::Cbr { running, .. } => *running = false,
            Transport::Mpeg(m) => m.running = false,
            Transport::Rtp(r) => r.running = false,
            Transport::UdpStream(u) => u.running = false,
            Transport::Pels(p) => p.running = false,
        }
    }

    /// Emits the next frame's fragments back to back (when the scaling level sends it) and
    /// schedules the following frame.
    fn on_frame_send(&mut self, f: u32) {
        let now = self.now;
        let Transport::Mpeg(m) = &mut self.flows[f as usize].transport else { return };
        if !m.running {
            return;
        }
        let frame = m.src.next_frame(&mut m.rng);
        let sizes = if frame.sent { m.src.fragments(frame.size) } else { Vec::new() };
        m.frames.push(FrameRecord { t: now, frame, packets: sizes.len() as u16 });
        let class = m.src.class_of(frame.frame_type);
        let first_seq = m.next_seq;
        m.next_seq += sizes.len() as u64;
        m.packets_sent += sizes.len() as u64;
        let next = now + Time(m.src.frame_interval_ns());
        self.events.schedule(next, Event::FrameSend(f));
        let count = sizes.len() as u16;
        for (i, size) in sizes.into_iter().enumerate() {
            let mut p = self.new_packet(f, true);
            p.proto = Proto::Udp;
            p.size = size;
            p.payload = size - crate::app::mpeg::UDP_IP_HEADER;
            p.seq = first_seq + i as u64;
            p.class = class;
            p.frame_id = frame.id;
            p.frame_type = frame.frame_type;
            p.frag_index = i as u16;
            p.frag_count = count;
            self.emit(p);
        }
    }

    /// The receiver's periodic report (packets received, highest sequence) to the sender.
    fn on_video_feedback(&mut self, f: u32) {
        let now = self.now;
        let Transport::Mpeg(m) = &self.flows[f as usize].transport else { return };
        let (received, highest, interval, running) = (m.sink.packets, m.sink.highest_seq, m.feedback, m.running);
        if !running {
            return;
        }
        self.events.schedule(now + interval, Event::VideoFeedback(f));
        let mut p = self.new_packet(f, false);
        p.proto = Proto::Udp;
        p.size = FEEDBACK_SIZE;
        p.payload = FEEDBACK_SIZE - crate::app::mpeg::UDP_IP_HEADER;
        p.ack = received;
        // Encodes "nothing yet" as 0 and sequence s as s + 1.
        p.seq = highest.map_or(0, |h| h + 1);
        self.emit(p);
    }

    fn on_cbr_send(&mut self, f: u32) {
        let now = self.now;
        let (size, seq, interval) = match &mut self.flows[f as usize].transport {
            Transport::Cbr { running: true, size, next_seq, interval, .. } => {
                *next_seq += 1;
                (*size, *next_seq - 1, *interval)
            }
            _ => return,
        };
        let class = self.draw_class(f);
        let mut p = self.new_packet(f, true);
        p.proto = Proto::Udp;
        p.size = size;
        p.payload = size - 28;
        p.seq = seq;
        p.class = class;
        self.emit(p);
        self.events.schedule(now + interval, Event::CbrSend(f));
    }

    /// Runs `step` on flow `f`'s TCP sender, puts the resulting segments on the wire and keeps
    /// one RTO timer event scheduled no later than the sender's deadline.
    fn tcp_send(&mut self, f: u32, step: impl FnOnce(&mut TcpSender, Time, &mut Vec<Segment>)) {
        let now = self.now;
        let mut segs = std::mem::take(&mut self.segs);
        segs.clear();
        let ecn = match &mut self.flows[f as usize].transport {
            Transport::Tcp { tx, ecn, .. } => {
                step(tx, now, &mut segs);
                *ecn
            }
            Transport::Cbr { .. } | Transport::Mpeg(_) | Transport::Rtp(_) | Transport::UdpStream(_)
            | Transport::Pels(_) => {
                unreachable!("tcp_send on a UDP flow")
            }
        };
        for s in &segs {
            let class = self.draw_class(f);
            let mut p = self.new_packet(f, true);
            p.proto = Proto::Tcp;
            p.seq = s.seq;
            p.payload = s.len;
            p.size = s.len + TCP_HEADER;
            p.class = class;
            p.tcp_flags = tcp_flags::ACK | tcp_flags::PSH;
            if ecn {
                p.ecn = Ecn::Ect0;
            }
            self.emit(p);
        }
        self.segs = segs;
        self.arm_rto_timer(f);
    }

    fn arm_rto_timer(&mut self, f: u32) {
        if let Transport::Tcp { tx, timer_at, .. } = &mut self.flows[f as usize].transport {
            if let Some(deadline) = tx.rto_deadline() {
                // A later deadline is handled when the earlier event fires (lazy timer).
                if timer_at.is_none_or(|t| t > deadline) {
                    *timer_at = Some(deadline);
                    self.events.schedule(deadline, Event::RtoTimer(f));
                }
            }
        }
    }

    fn on_rto_timer(&mut self, f: u32) {
        let now = self.now;
        if let Transport::Tcp { timer_at, .. } = &mut self.flows[f as usize].transport {
            if *timer_at != Some(now) {
                return; // superseded by an earlier-scheduled event
            }
            *timer_at = None;
        }
        self.tcp_send(f, |tx, now, out| tx.on_timer(now, out));
    }

    fn on_delayed_ack(&mut self, f: u32) {
        let now = self.now;
        if let Transport::Tcp { rx, .. } = &self.flows[f as usize].transport {
            if rx.delack_deadline == Some(now) {
                self.send_ack(f);
            }
        }
    }

    fn send_ack(&mut self, f: u32) {
        let (ack, ece, sack) = match &mut self.flows[f as usize].transport {
            Transport::Tcp { rx, .. } => {
                let (ack, ece) = rx.take_ack();
                (ack, ece, rx.sack_blocks())
            }
            Transport::Cbr { .. } | Transport::Mpeg(_) | Transport::Rtp(_) | Transport::UdpStream(_) | Transport::Pels(_) => return,
        };
        let mut p = self.new_packet(f, false);
        p.proto = Proto::Tcp;
        p.size = TCP_HEADER + sack.option_bytes();
        p.ack = ack;
        p.ece = ece;
        p.tcp_flags = tcp_flags::ACK;
        if sack.len() > 0 {
            p.sack_blocks = sack.len() as u8;
            self.sack_blocks.insert(p.uid, sack);
        }
        self.emit(p);
    }

    /// The SACK blocks carried beside packet `p`, removed from the side table.
    fn take_sack_blocks(&mut self, p: &Packet) -> SackBlocks {
        if p.sack_blocks == 0 {
            return SackBlocks::default();
        }
        self.sack_blocks.remove(&p.uid).unwrap_or_default()
    }

    fn deliver(&mut self, p: Packet) {
        let f = p.flow;
        let now = self.now;
        let to_receiver = p.dst == self.flows[f as usize].dst;
        match &mut self.flows[f as usize].transport {
            Transport::Tcp { rx, .. } if to_receiver => {
                match rx.on_data(p.seq, p.payload, p.ecn == Ecn::Ce, now) {
                    AckAction::Now => self.send_ack(f),
                    AckAction::Delay(at) => self.events.schedule(at, Event::DelayedAck(f)),
                }
            }
            Transport::Tcp { .. } => {
                let (ack, ece) = (p.ack, p.ece);
                let sack = self.take_sack_blocks(&p);
                self.tcp_send(f, |tx, now, out| tx.on_ack_sack(ack, ece, sack.as_slice(), now, out));
            }
            Transport::Cbr { rx_packets, rx_bytes, .. } => {
                *rx_packets += 1;
                *rx_bytes += p.payload as u64;
            }
            Transport::Mpeg(m) if to_receiver => {
                m.sink.on_packet(p.frame_id, p.seq, p.payload);
                m.log.push(&p, now);
            }
            Transport::Mpeg(m) => m.src.on_report(p.ack, p.seq.checked_sub(1)),
            Transport::Rtp(r) => r.log.push(&p, now),
            Transport::UdpStream(_) => self.on_stream_packet(f, p, to_receiver),
            Transport::Pels(_) if to_receiver => self.on_pels_data(f, p),
            Transport::Pels(_) => self.on_pels_ack(f, p),
        }
    }

    // ---- sampling ----------------------------------------------------------------------

    fn on_queue_sample(&mut self) {
        let q = &self.topo.links[self.bottleneck as usize].queue;
        self.queue_samples.push(self.now, q.len_packets(), q.len_bytes(), q.average_queue());
        let mut stats = Vec::new();
        q.named_stats(&mut stats);
        self.queue_samples.push_named_stats(&stats);
        let next = self.now + Time(self.cfg.records.queue_sample_ns);
        self.events.schedule(next, Event::QueueSample);
    }

    fn on_flow_sample(&mut self) {
        for (id, flow) in self.flows.iter().enumerate() {
            let s = match &flow.transport {
                Transport::Tcp { tx, rx, stream, .. } => FlowSample {
                    delivered_bytes: rx.delivered_bytes,
                    cwnd_bytes: tx.cwnd,
                    ssthresh_bytes: tx.ssthresh.min(u64::MAX / 4),
                    srtt_ns: tx.rtt().srtt().map_or(0, |t| t.as_nanos()),
                    rto_ns: tx.rtt().rto().as_nanos(),
                    app_level: stream.as_ref().map_or(0, |s| s.level() as u32),
                },
                Transport::Cbr { rx_bytes, .. } => FlowSample {
                    delivered_bytes: *rx_bytes,
                    cwnd_bytes: 0,
                    ssthresh_bytes: 0,
                    srtt_ns: 0,
                    rto_ns: 0,
                    app_level: 0,
                },
                Transport::UdpStream(u) => FlowSample {
                    delivered_bytes: u.log.bytes,
                    cwnd_bytes: 0,
                    ssthresh_bytes: 0,
                    srtt_ns: 0,
                    rto_ns: 0,
                    app_level: u.server.level() as u32,
                },
                Transport::Rtp(r) => FlowSample {
                    delivered_bytes: r.log.bytes,
                    cwnd_bytes: 0,
                    ssthresh_bytes: 0,
                    srtt_ns: 0,
                    rto_ns: 0,
                    app_level: 0,
                },
                Transport::Pels(p) => FlowSample {
                    delivered_bytes: p.rx.bytes,
                    cwnd_bytes: 0,
                    ssthresh_bytes: 0,
                    srtt_ns: 0,
                    rto_ns: 0,
                    app_level: 0,
                },
                Transport::Mpeg(m) => FlowSample {
                    delivered_bytes: m.sink.bytes,
                    cwnd_bytes: 0,
                    ssthresh_bytes: 0,
                    srtt_ns: 0,
                    rto_ns: 0,
                    app_level: m.src.level as u32,
                },
            };
            self.flow_samples.push(self.now, id as u32, s);
        }
        let next = self.now + Time(self.cfg.records.flow_sample_ns);
        self.events.schedule(next, Event::FlowSample);
    }

    // ---- results -----------------------------------------------------------------------

    /// The static description and totals of every flow.
    pub fn flows_table(&self) -> Table {
        let t = &self.cfg.topology;
        let n = self.flows.len();
        let (mut id, mut group, mut is_tcp) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut start, mut stop, mut sdelay, mut rdelay, mut base_rtt) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut sent, mut retx, mut fast, mut tos, mut spurious, mut delivered) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for (i, f) in self.flows.iter().enumerate() {
            id.push(i as u32);
            group.push(f.group as u32);
            start.push(f.start.as_nanos());
            stop.push(f.stop.as_nanos());
            sdelay.push(f.sender_delay.as_nanos());
            rdelay.push(f.receiver_delay.as_nanos());
            let [enter, exit] = self.cfg.flow_groups[f.group].path_in(t);
            base_rtt.push(2 * (f.sender_delay.as_nanos() + f.receiver_delay.as_nanos()) + t.path_delay_ns(enter, exit));
            let tot = totals(&f.transport);
            is_tcp.push(tot.is_tcp as u8);
            sent.push(tot.packets_sent);
            retx.push(tot.retransmissions);
            fast.push(tot.fast_retransmits);
            tos.push(tot.timeouts);
            spurious.push(tot.spurious_timeouts);
            delivered.push(tot.delivered_bytes);
        }
        vec![
            ("flow", Column::U32(id)),
            ("group", Column::U32(group)),
            ("is_tcp", Column::U8(is_tcp)),
            ("start_ns", Column::U64(start)),
            ("stop_ns", Column::U64(stop)),
            ("sender_delay_ns", Column::U64(sdelay)),
            ("receiver_delay_ns", Column::U64(rdelay)),
            ("base_rtt_ns", Column::U64(base_rtt)),
            ("packets_sent", Column::U64(sent)),
            ("retransmissions", Column::U64(retx)),
            ("fast_retransmits", Column::U64(fast)),
            ("timeouts", Column::U64(tos)),
            ("spurious_timeouts", Column::U64(spurious)),
            ("delivered_bytes", Column::U64(delivered)),
        ]
    }

    /// One row per video frame produced by any MPEG flow: sent or skipped at the sender, its
    /// packets, and how many of them the receiver got. None when the run has no video.
    pub fn frames_table(&self) -> Option<Table> {
        let mut flow = Vec::new();
        let mut id = Vec::new();
        let mut ftype = Vec::new();
        let mut pos = Vec::new();
        let mut t = Vec::new();
        let mut size = Vec::new();
        let mut sent = Vec::new();
        let mut packets = Vec::new();
        let mut received = Vec::new();
        for (fi, f) in self.flows.iter().enumerate() {
            let Transport::Mpeg(m) = &f.transport else { continue };
            for r in &m.frames {
                flow.push(fi as u32);
                id.push(r.frame.id);
                ftype.push(r.frame.frame_type as u8);
                pos.push(r.frame.gop_position);
                t.push(r.t.as_nanos());
                size.push(r.frame.size);
                sent.push(r.frame.sent as u8);
                packets.push(r.packets as u32);
                received.push(m.sink.received.get(r.frame.id as usize).copied().unwrap_or(0) as u32);
            }
        }
        if flow.is_empty() {
            return None;
        }
        Some(vec![
            ("flow", Column::U32(flow)),
            ("frame_id", Column::U32(id)),
            ("frame_type", Column::U8(ftype)),
            ("gop_position", Column::U32(pos)),
            ("t_ns", Column::U64(t)),
            ("size", Column::U32(size)),
            ("sent", Column::U8(sent)),
            ("packets", Column::U32(packets)),
            ("packets_received", Column::U32(received)),
        ])
    }

    /// One row per media packet received (RTP-like and MPEG flows, as the emulator records
    /// them): flow, sequence number, size, send and receive times. Loss, one-way delay and
    /// jitter are computed from it. None without media flows.
    pub fn media_table(&self) -> Option<Table> {
        let (mut flow, mut seq, mut size, mut sent, mut recv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut any = false;
        for (fi, f) in self.flows.iter().enumerate() {
            let log = match &f.transport {
                Transport::Rtp(r) => &r.log,
                Transport::UdpStream(u) => &u.log,
                Transport::Mpeg(m) => &m.log,
                _ => continue,
            };
            any = true;
            flow.extend(std::iter::repeat_n(fi as u32, log.seq.len()));
            seq.extend_from_slice(&log.seq);
            size.extend_from_slice(&log.size);
            sent.extend_from_slice(&log.sent_ns);
            recv.extend_from_slice(&log.recv_ns);
        }
        any.then(|| {
            vec![
                ("flow", Column::U32(flow)),
                ("seq", Column::U64(seq)),
                ("size", Column::U32(size)),
                ("sent_ns", Column::U64(sent)),
                ("recv_ns", Column::U64(recv)),
            ]
        })
    }

    /// One row per frame of any RTP-like video flow: when its first packet was due, its size,
    /// and its packets as a run of sequence numbers (with `media`, which of a frame's packets
    /// arrived). None without RTP video.
    pub fn media_frames_table(&self) -> Option<Table> {
        let (mut flow, mut id, mut t, mut size, mut first, mut packets) = (vec![], vec![], vec![], vec![], vec![], vec![]);
        for (fi, f) in self.flows.iter().enumerate() {
            let Transport::Rtp(r) = &f.transport else { continue };
            for (i, fr) in r.src.frames.iter().enumerate() {
                flow.push(fi as u32);
                id.push(i as u32);
                t.push(fr.at.as_nanos());
                size.push(fr.size);
                first.push(fr.first_seq);
                packets.push(fr.packets);
            }
        }
        (!flow.is_empty()).then(|| {
            vec![
                ("flow", Column::U32(flow)),
                ("frame_id", Column::U32(id)),
                ("t_ns", Column::U64(t)),
                ("size", Column::U32(size)),
                ("first_seq", Column::U64(first)),
                ("packets", Column::U32(packets)),
            ]
        })
    }

    /// Consumes the simulation's records: (name, table) pairs, plus the pcap bytes if captured.
    pub fn take_records(&mut self) -> (Vec<(&'static str, Table)>, Option<Vec<u8>>) {
        let mut tables = vec![("flows", self.flows_table())];
        if let Some(frames) = self.frames_table() {
            tables.push(("frames", frames));
        }
        if let Some(media) = self.media_table() {
            tables.push(("media", media));
        }
        if let Some(media_frames) = self.media_frames_table() {
            tables.push(("media_frames", media_frames));
        }
        tables.extend(self.pels_tables());
        if let Some(pe) = self.pkt_events.take() {
            tables.push(("packets", pe.into_table()));
        }
        tables.push(("queue", std::mem::take(&mut self.queue_samples).into_table()));
        tables.push(("flow_samples", std::mem::take(&mut self.flow_samples).into_table()));
        (tables, self.pcap.take().map(PcapWriter::into_bytes))
    }

    /// Run-level facts for summary.json.
    pub fn summary(&self) -> serde_json::Value {
        let b = &self.topo.links[self.bottleneck as usize].queue;
        serde_json::json!({
            "sim_time_ns": self.now.as_nanos(),
            "events": self.counters.events,
            "packets_created": self.counters.packets_created,
            "flows": self.flows.len(),
            "bottleneck": {
                "qdisc": b.kind(),
                "stats": b.stats(),
                "invariants_ok": b.check_invariants().is_ok(),
            },
        })
    }

    /// Every link's discipline still satisfies the accounting identities.
    pub fn check_invariants(&self) -> Result<(), String> {
        for l in &self.topo.links {
            l.queue.check_invariants().map_err(|e| format!("{}: {e}", l.name))?;
        }
        Ok(())
    }

    pub fn bottleneck_stats(&self) -> &aqmlab_core::QdiscStats {
        self.topo.links[self.bottleneck as usize].queue.stats()
    }

    /// Delivered bytes of each flow at the receiver.
    pub fn delivered_bytes(&self) -> Vec<u64> {
        self.flows.iter().map(|f| totals(&f.transport).delivered_bytes).collect()
    }

    pub fn tcp_sender(&self, f: usize) -> Option<&TcpSender> {
        match &self.flows[f].transport {
            Transport::Tcp { tx, .. } => Some(tx),
            _ => None,
        }
    }
}
