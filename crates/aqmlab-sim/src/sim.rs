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
use crate::record::{FlowSample, FlowSamples, PacketEvents, QueueSamples};
use crate::tcp::{AckAction, Segment, TcpReceiver, TcpSender};
use crate::link::Link;
use crate::topology::{LinkId, NodeId, Topology};
use aqmlab_core::packet::tcp_flags;
use aqmlab_core::qdisc::build_qdisc;
use aqmlab_core::{Ecn, Packet, Proto, QdiscConfig, Rate, SackBlocks, SimRng, Time};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

// Per-application glue of the simulator, one file each under src/sim/.
mod pels;
mod stream;
mod tables;
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
pub(crate) enum Event {
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

pub(crate) struct Flow {
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
pub(crate) struct UidHasher(u64);

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
pub(crate) type UidMap<V> = HashMap<u64, V, BuildHasherDefault<UidHasher>>;

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
    pub(crate) cfg: SimConfig,
    pub(crate) now: Time,
    pub(crate) events: EventList<Event>,
    pub(crate) topo: Topology,
    pub(crate) flows: Vec<Flow>,
    pub(crate) bottleneck: LinkId,
    pub(crate) next_uid: u64,
    pub(crate) segs: Vec<Segment>,
    pub(crate) queue_samples: QueueSamples,
    pub(crate) flow_samples: FlowSamples,
    pub(crate) pcap: Option<PcapWriter>,
    /// SACK blocks of ACKs in flight, by packet uid (see `Packet::sack_blocks`).
    pub(crate) sack_blocks: UidMap<SackBlocks>,
    /// PELS feedback labels of packets in flight, by packet uid (no room in `Packet`).
    pub(crate) labels: UidMap<FeedbackLabel>,
    /// Whether any flow is a PELS stream (the only packets that carry labels): without one,
    /// enqueues skip the label step and with it a look at the packet's flow.
    pub(crate) pels_flows: bool,
    pub counters: RunCounters,
    /// Whether transmissions may end without an event (`end_needs_no_event`); off only in
    /// the test that checks it changes no result.
    pub(crate) lazy_tx_ends: bool,
    /// Whether idle links may send a packet without the round trip through their buffer
    /// (`pass_through_if_idle`); off only in the test that checks it changes no result.
    pub(crate) pass_through: bool,
}

fn access_link(from: NodeId, to: NodeId, rate: u64, delay: u64, qdisc: &QdiscConfig, seed: u64, name: String) -> Result<Link, String> {
    let rate = Rate(rate);
    let queue = build_qdisc(qdisc, rate).map_err(|e| format!("{name}: {e}"))?;
    let rng = SimRng::stream(seed, &format!("link/{name}"));
    Ok(Link::new(from, to, rate, Time(delay), queue, rng, name))
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
        // The scenario records the bottleneck's packets; any other link could have a recorder.
        topo.links[bottleneck as usize].recorder = records.packet_events.then(PacketEvents::default);
        let mut sim = Simulation {
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
            Event::QueueRetry(l) => self.on_queue_retry(l),
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

    // ---- routing and packets ------------------------------------------------------

    pub(crate) fn on_arrive(&mut self, node: NodeId, p: Packet) {
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
    pub(crate) fn take_sack_blocks(&mut self, p: &Packet) -> SackBlocks {
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
