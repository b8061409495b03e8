//! The network the applications send into: hosts, routers and links, the flows' addresses,
//! the event list and the side tables that travel with packets. Everything of the simulation
//! except the applications themselves, so that an application, called with `&mut Network`,
//! can send packets and schedule its events while the engine holds it.

use super::{Event, RunCounters};
use crate::config::SimConfig;
use crate::engine::EventList;
use crate::link::PacketStore;
use crate::pcap::PcapWriter;
use crate::tcp::Segment;
use crate::topology::{LinkId, NodeId, Topology};
use aqmlab_core::qdisc::pels_feedback::FeedbackLabel;
use aqmlab_core::{Packet, Proto, SackBlocks, SimRng, Time};
use aqmlab_model::headers::{TCP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES};
use aqmlab_model::record::QueueSamples;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// IPv4 + TCP headers without options.
pub const TCP_HEADER: u32 = TCP_IP_HEADER_BYTES;
pub const TCP_PORT: u16 = 5001;
pub const UDP_PORT: u16 = 5004;
/// A receiver report: IP + UDP headers and 12 bytes of counters.
pub const FEEDBACK_SIZE: u32 = UDP_IP_HEADER_BYTES + 12;

/// A flow as the network sees it: its two hosts, their ports and its path's properties. Its
/// application is beside it, in the engine.
pub(crate) struct Flow {
    pub(crate) group: usize,
    pub(crate) src: NodeId,
    pub(crate) dst: NodeId,
    /// The one link each end's host sends on (its access link toward the routers), so that a
    /// new packet finds its first hop in the flow, not in the host's node.
    pub(crate) src_link: LinkId,
    pub(crate) dst_link: LinkId,
    pub(crate) sport: u16,
    /// The receiver's port: `TCP_PORT` or `UDP_PORT`, after the application's transport.
    pub(crate) dport: u16,
    pub(crate) start: Time,
    pub(crate) stop: Time,
    pub(crate) sender_delay: Time,
    pub(crate) receiver_delay: Time,
    pub(crate) class_weights: [f64; 3],
    pub(crate) class_rng: SimRng,
    pub(crate) dscp: u8,
    /// Whether its packets carry PELS feedback labels (`Application::carries_labels`).
    pub(crate) labelled: bool,
    /// Random loss before the bottleneck (`FlowGroup::path_loss`) and its stream.
    pub(crate) path_loss: f64,
    pub(crate) path_rng: SimRng,
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

/// Side tables keyed by packet uid.
pub(crate) type UidMap<V> = HashMap<u64, V, BuildHasherDefault<UidHasher>>;

pub(crate) struct Network {
    pub(crate) cfg: SimConfig,
    pub(crate) now: Time,
    pub(crate) events: EventList<Event>,
    pub(crate) topo: Topology,
    pub(crate) flows: Vec<Flow>,
    pub(crate) bottleneck: LinkId,
    pub(crate) next_uid: u64,
    /// The segments of one TCP send, a buffer shared by every connection (see
    /// `TcpConnection::send`).
    pub(crate) segs: Vec<Segment>,
    pub(crate) queue_samples: QueueSamples,
    pub(crate) pcap: Option<PcapWriter>,
    /// SACK blocks of ACKs in flight, by packet uid (see `Packet::sack_blocks`).
    pub(crate) sack_blocks: UidMap<SackBlocks>,
    /// PELS feedback labels of packets in flight, by packet uid (no room in `Packet`).
    pub(crate) labels: UidMap<FeedbackLabel>,
    /// Whether any flow is a PELS stream (the only packets that carry labels): without one,
    /// enqueues skip the label step and with it a look at the packet's flow.
    pub(crate) pels_flows: bool,
    pub(crate) counters: RunCounters,
    /// Whether transmissions may end without an event (`end_needs_no_event`); off only in
    /// the test that checks it changes no result.
    pub(crate) lazy_tx_ends: bool,
    /// Whether idle links may send a packet without the round trip through their buffer
    /// (`pass_through_if_idle`); off only in the test that checks it changes no result.
    pub(crate) pass_through: bool,
    /// Whether links only one flow uses are crossed by arithmetic (`link/exclusive.rs`); off
    /// with the scenario's `engine.access_link_events` or `Simulation::disable_exclusive_links`.
    pub(crate) exclusive_links: bool,
    /// The packets on exclusive links' wires, which their delay lines refer to by slot
    /// (`link/packet_store.rs`).
    pub(crate) exclusive_packets: PacketStore,
    /// Whether any link has a packet recorder: without one, the per-packet record checks stop
    /// at this flag instead of loading the link (most runs, and every benchmark, record none).
    pub(crate) any_recorder: bool,
    /// Whether any link follows a delivery trace or has impairments: without one (every paper
    /// scenario), the per-packet checks for them stop at this flag instead of loading the link.
    pub(crate) any_varying_link: bool,
}

impl Network {
    /// Schedules flow `f`'s application event `timer` at `at` (see `Application::on_timer`).
    #[inline]
    pub(crate) fn schedule(&mut self, at: Time, f: u32, timer: u8) {
        self.events.schedule(at, Event::App(f, timer));
    }

    /// Packet `p` reached `node`: forwarded on the next hop, or given back when `node` is
    /// its destination, for the engine to hand to the flow's application.
    pub(crate) fn on_arrive(&mut self, node: NodeId, p: Packet) -> Option<Packet> {
        if node == p.dst {
            return Some(p);
        }
        match self.topo.next_hop(node, p.dst) {
            Some(l) => self.send_on(l, p),
            None => debug_assert!(false, "no route from {node} to {}", p.dst),
        }
        None
    }

    /// Sends a packet from its source host onto the first link.
    pub(crate) fn emit(&mut self, p: Packet) {
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

    /// Whether packet `p`, leaving its sender, is lost on the Internet part of the path.
    fn lost_on_path(&mut self, p: &Packet) -> bool {
        let flow = &mut self.flows[p.flow as usize];
        flow.path_loss > 0.0 && p.src == flow.src && flow.path_rng.bernoulli(flow.path_loss)
    }

    /// A new packet of flow `f` from its sender (or, not `from_sender`, from its receiver),
    /// stamped now, with the next uid.
    pub(crate) fn new_packet(&mut self, f: u32, from_sender: bool) -> Packet {
        let uid = self.next_uid;
        self.next_uid += 1;
        let flow = &self.flows[f as usize];
        let (src, dst, sport, dport) =
            if from_sender { (flow.src, flow.dst, flow.sport, flow.dport) } else { (flow.dst, flow.src, flow.dport, flow.sport) };
        Packet { uid, flow: f, src, dst, sport, dport, dscp: flow.dscp, sent_at: self.now, ..Packet::default() }
    }

    /// A UDP packet of flow `f` (its sender's direction when `from_sender`) of `size` bytes on
    /// the wire, `header` of them the IP and UDP (and RTP) headers, numbered `seq`; the
    /// application sets the rest (class, frame, ECN).
    pub(crate) fn udp_packet(&mut self, f: u32, from_sender: bool, size: u32, header: u32, seq: u64) -> Packet {
        let mut p = self.new_packet(f, from_sender);
        p.proto = Proto::Udp;
        p.size = size;
        p.payload = size - header;
        p.seq = seq;
        p
    }

    /// Draws a priority class (1..=3) from the flow's weights; 0 when the flow is unclassified.
    pub(crate) fn draw_class(&mut self, f: u32) -> u8 {
        let flow = &mut self.flows[f as usize];
        if flow.class_weights.iter().all(|w| *w == 0.0) {
            return 0;
        }
        flow.class_rng.weighted_index(&flow.class_weights) as u8 + 1
    }

    /// The SACK blocks carried beside packet `p`, removed from the side table.
    pub(crate) fn take_sack_blocks(&mut self, p: &Packet) -> SackBlocks {
        if p.sack_blocks == 0 {
            return SackBlocks::default();
        }
        self.sack_blocks.remove(&p.uid).unwrap_or_default()
    }
}
