//! A TCP connection's two ends in the simulation, shared by the applications that run over
//! TCP (bulk transfer, adaptive streaming): putting the sender's segments on the wire, the
//! receiver's ACKs with their SACK blocks, the RTO, delayed-ACK and pacing timers, and, with
//! `TcpConfig::handshake`, the opening (`crate::tcp::handshake`).

use super::super::network::Network;
use super::{AppSetup, FlowTotals};
use crate::sim::TCP_HEADER;
use crate::tcp::handshake::{Handshake, State};
use crate::tcp::{AckAction, Segment, TcpReceiver, TcpSender};
use aqmlab_core::packet::tcp_flags;
use aqmlab_core::{Ecn, Packet, Proto, Time};
use aqmlab_model::app::frame_classes::SegmentMarks;
use aqmlab_model::app::tcp_config::{EcnCodepoint, TcpConfig};
use aqmlab_model::record::{BbrIntervalsTable, FlowSample, Table};
use aqmlab_model::streams;
use std::collections::VecDeque;

/// The connection's timers; an application over TCP numbers its own from `FIRST_APP_TIMER`.
const RTO_TIMER: u8 = 0;
const DELAYED_ACK: u8 = 1;
pub(super) const FIRST_APP_TIMER: u8 = 2;
/// The pacing timer (`TcpConfig::pacing`), numbered apart from the applications' timers so that
/// theirs keep their numbers.
const PACING_TIMER: u8 = u8::MAX;
/// The SYN timer (`TcpConfig::handshake`), numbered apart as the pacing timer.
const SYN_TIMER: u8 = u8::MAX - 1;
/// A SYN's and a SYN-ACK's size on the wire: the 40 bytes of IP and TCP headers and 12 of
/// options, MSS (4), SACK-permitted (2) and window scale (3) padded to a multiple of 4. Choice:
/// without the 12 bytes of timestamps a Linux SYN also carries, as the simulator's data
/// segments carry none.
const SYN_BYTES: u32 = TCP_HEADER + 12;

pub(super) struct TcpConnection {
    pub(super) tx: TcpSender,
    pub(super) rx: TcpReceiver,
    /// The codepoint of data segments when ECN is on (ECT(0), or ECT(1) for L4S).
    ect: Option<Ecn>,
    /// When the pending RTO timer event fires, if one is scheduled.
    timer_at: Option<Time>,
    /// When the pending pacing timer event fires, if one is scheduled.
    pacing_at: Option<Time>,
    /// Classes by what the bytes carry (an ABR server's segments marked by frame type); when
    /// absent, each segment's class is drawn from the flow's `class_weights`.
    pub(super) marks: Option<SegmentMarks>,
    /// `TcpConfig::handshake`, and the opening once started.
    handshake_on: bool,
    handshake: Option<Handshake>,
    initial_rto: Time,
    max_rto: Time,
    /// With `TcpConfig::rwnd_autotuning`: (uid, advertised window) of each ACK on its way, in
    /// the order sent. The window travels beside the packet, as SACK blocks do, so that
    /// `Packet` stays at 80 bytes; one connection's ACKs cross one path in order, so the ACK
    /// that arrives finds its entry at the front, behind those of ACKs that were lost.
    ack_windows: Option<VecDeque<(u64, u64)>>,
}

impl TcpConnection {
    pub(super) fn new(tcp: &TcpConfig, setup: &AppSetup) -> TcpConnection {
        let ect = tcp.ecn.then_some(match tcp.ecn_codepoint {
            EcnCodepoint::Ect0 => Ecn::Ect0,
            EcnCodepoint::Ect1 => Ecn::Ect1,
        });
        let tx = TcpSender::with_rng(tcp, || streams::flow_bbr(setup.seed, setup.id));
        TcpConnection {
            tx,
            rx: TcpReceiver::new(tcp),
            ect,
            timer_at: None,
            pacing_at: None,
            marks: None,
            handshake_on: tcp.handshake,
            handshake: None,
            initial_rto: Time(tcp.initial_rto_ns),
            max_rto: Time(tcp.max_rto_ns),
            ack_windows: tcp.rwnd_autotuning.then(VecDeque::new),
        }
    }

    /// Opens the connection at the flow's start: true when data may flow at once (no
    /// handshake); otherwise the SYN is on the wire, and the SYN-ACK starts the data
    /// (`on_syn`: what a bulk sender does, the only application the handshake is built for).
    pub(super) fn open(&mut self, f: u32, net: &mut Network) -> bool {
        if !self.handshake_on {
            return true;
        }
        let (h, deadline) = Handshake::start(net.now, self.initial_rto, self.max_rto);
        self.handshake = Some(h);
        self.emit_syn(f, net, true);
        net.schedule(deadline, f, SYN_TIMER);
        false
    }

    /// A SYN from the client (`forward`) or the server's SYN-ACK.
    fn emit_syn(&mut self, f: u32, net: &mut Network, forward: bool) {
        let mut p = net.new_packet(f, forward);
        p.proto = Proto::Tcp;
        p.size = SYN_BYTES;
        p.class = if forward { net.draw_class(f) } else { p.class };
        p.tcp_flags = if forward { tcp_flags::SYN } else { tcp_flags::SYN | tcp_flags::ACK };
        net.emit(p);
    }

    fn on_syn_timer(&mut self, f: u32, net: &mut Network) {
        let Some(h) = self.handshake.as_mut() else { return };
        if let Some(deadline) = h.on_timer(net.now) {
            self.emit_syn(f, net, true);
            net.schedule(deadline, f, SYN_TIMER);
        }
    }

    /// Runs `step` on the sender, puts the resulting segments on the wire and keeps one RTO
    /// timer event scheduled no later than the sender's deadline.
    pub(super) fn send(&mut self, f: u32, net: &mut Network, step: impl FnOnce(&mut TcpSender, Time, &mut Vec<Segment>)) {
        let now = net.now;
        // One buffer for every connection's segments, so that sending allocates nothing.
        let mut segs = std::mem::take(&mut net.segs);
        segs.clear();
        step(&mut self.tx, now, &mut segs);
        for s in &segs {
            // A retransmission carries the same bytes and so the same mark.
            let class = match &self.marks {
                Some(m) => m.class_of(s.seq, s.len),
                None => net.draw_class(f),
            };
            let mut p = net.new_packet(f, true);
            p.proto = Proto::Tcp;
            p.seq = s.seq;
            p.payload = s.len;
            p.size = s.len + TCP_HEADER;
            p.class = class;
            p.tcp_flags = tcp_flags::ACK | tcp_flags::PSH;
            if let Some(ect) = self.ect {
                p.ecn = ect;
            }
            net.emit(p);
        }
        net.segs = segs;
        self.arm_rto_timer(f, net);
        self.arm_pacing_timer(f, net);
    }

    fn arm_pacing_timer(&mut self, f: u32, net: &mut Network) {
        if let Some(at) = self.tx.pacing_deadline() {
            if self.pacing_at.is_none_or(|t| t > at) {
                self.pacing_at = Some(at);
                net.schedule(at, f, PACING_TIMER);
            }
        }
    }

    fn on_pacing_timer(&mut self, f: u32, net: &mut Network) {
        if self.pacing_at != Some(net.now) {
            return; // superseded by an earlier-scheduled event
        }
        self.pacing_at = None;
        self.send(f, net, |tx, now, out| tx.on_pacing_timer(now, out));
    }

    fn arm_rto_timer(&mut self, f: u32, net: &mut Network) {
        if let Some(deadline) = self.tx.rto_deadline() {
            // A later deadline is handled when the earlier event fires (lazy timer).
            if self.timer_at.is_none_or(|t| t > deadline) {
                self.timer_at = Some(deadline);
                net.schedule(deadline, f, RTO_TIMER);
            }
        }
    }

    /// The connection's own timers; false for a timer that is not one of them.
    pub(super) fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) -> bool {
        match timer {
            RTO_TIMER => self.on_rto_timer(f, net),
            DELAYED_ACK => self.on_delayed_ack(f, net),
            PACING_TIMER => self.on_pacing_timer(f, net),
            SYN_TIMER if self.handshake.is_some() => self.on_syn_timer(f, net),
            _ => return false,
        }
        true
    }

    fn on_rto_timer(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if self.timer_at != Some(now) {
            return; // superseded by an earlier-scheduled event
        }
        self.timer_at = None;
        self.send(f, net, |tx, now, out| tx.on_timer(now, out));
    }

    fn on_delayed_ack(&mut self, f: u32, net: &mut Network) {
        if self.rx.delack_deadline == Some(net.now) {
            self.send_ack(f, net);
        }
    }

    fn send_ack(&mut self, f: u32, net: &mut Network) {
        let (ack, ece) = self.rx.take_ack();
        self.emit_ack(f, net, ack, ece);
    }

    /// Puts one ACK on the wire with the receiver's current SACK blocks.
    fn emit_ack(&mut self, f: u32, net: &mut Network, ack: u64, ece: bool) {
        let sack = self.rx.sack_blocks();
        let mut p = net.new_packet(f, false);
        p.proto = Proto::Tcp;
        p.size = TCP_HEADER + sack.option_bytes();
        p.ack = ack;
        p.ece = ece;
        p.tcp_flags = tcp_flags::ACK;
        if !sack.is_empty() {
            p.sack_blocks = sack.len() as u8;
            net.sack_blocks.insert(p.uid, sack);
        }
        if let Some(windows) = self.ack_windows.as_mut() {
            windows.push_back((p.uid, self.rx.offer_window().expect("the receiver autotunes too")));
        }
        net.emit(p);
    }

    /// A data segment at the receiver (ACK now or later), or an ACK at the sender; with the
    /// handshake, a SYN at the receiver (answered) or the SYN-ACK at the sender (the data
    /// start). Inlined into each application's `on_packet`, which only forwards to it.
    #[inline]
    pub(super) fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if p.tcp_flags & tcp_flags::SYN != 0 {
            self.on_syn(f, to_receiver, net);
            return;
        }
        if to_receiver {
            let action = self.rx.on_data(p.seq, p.payload, p.ecn == Ecn::Ce, net.now);
            // A DCTCP receiver first acknowledges what came before a CE state change.
            if let Some((ack, ece)) = self.rx.take_prior_ack() {
                self.emit_ack(f, net, ack, ece);
            }
            match action {
                AckAction::Now => self.send_ack(f, net),
                AckAction::Delay(at) => net.schedule(at, f, DELAYED_ACK),
            }
        } else {
            let (ack, ece) = (p.ack, p.ece);
            let sack = net.take_sack_blocks(&p);
            if self.ack_windows.is_some() {
                self.take_ack_window(p.uid, ack);
            }
            self.send(f, net, |tx, now, out| tx.on_ack_sack(ack, ece, sack.as_slice(), now, out));
            if self.ack_windows.is_some() {
                // The autotuning receiver's RTT (receive_window.rs says why the sender's).
                if let Some(sample) = self.tx.take_latest_rtt_sample() {
                    self.rx.on_rtt_sample(sample);
                }
            }
        }
    }

    /// The window the ACK `uid` advertised, to the sender; entries of ACKs sent before it were
    /// lost on the way and are dropped. An ACK without an entry (one that overtook another)
    /// leaves the sender's window as it was.
    fn take_ack_window(&mut self, uid: u64, ack: u64) {
        let windows = self.ack_windows.as_mut().expect("called with autotuning on");
        while windows.front().is_some_and(|&(u, _)| u < uid) {
            windows.pop_front();
        }
        if let Some(&(u, w)) = windows.front() {
            if u == uid {
                windows.pop_front();
                self.tx.set_peer_window(ack, w);
            }
        }
    }

    /// The server answers every SYN, a retransmitted one too (it keeps no timer of its own);
    /// the client opens on the first SYN-ACK and sends what its windows allow.
    #[cold]
    fn on_syn(&mut self, f: u32, to_receiver: bool, net: &mut Network) {
        if to_receiver {
            self.emit_syn(f, net, false);
            return;
        }
        let Some(opened) = self.handshake.as_mut().and_then(|h| h.on_syn_ack(net.now)) else { return };
        self.tx.on_handshake(opened.rtt, opened.syn_lost);
        self.send(f, net, |tx, now, out| tx.send_available(now, out));
    }

    /// The connection's own tables: `bbr_intervals` when its sender runs BBR v1 (one row per
    /// event of the policer detection's long-term sampling, docs/tables.md), else none.
    pub(super) fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let Some(bbr) = self.tx.bbr() else { return Vec::new() };
        let mut t = BbrIntervalsTable::default();
        for e in bbr.lt_events() {
            t.push(f, e.t_ns, e.event, e.interval_rate * 8.0, e.lt_rate * 8.0);
        }
        vec![("bbr_intervals", t.into_table())]
    }

    /// The sender's counts, the opening's SYNs included (each SYN a packet sent, each of its
    /// expiries a timeout and the SYN that followed a retransmission, as Linux counts them).
    pub(super) fn totals(&self) -> FlowTotals {
        let s = &self.tx.stats;
        let (syns, syn_timeouts) = match &self.handshake {
            Some(h) => {
                let gave_up = u64::from(h.state() == State::GaveUp);
                (1 + u64::from(h.retransmissions()), u64::from(h.retransmissions()) + gave_up)
            }
            None => (0, 0),
        };
        FlowTotals {
            packets_sent: s.segments_sent + syns,
            retransmissions: s.retransmissions + syns.saturating_sub(1),
            fast_retransmits: s.fast_retransmits,
            timeouts: s.timeouts + syn_timeouts,
            spurious_timeouts: s.spurious_timeouts,
            delivered_bytes: self.rx.delivered_bytes,
        }
    }

    pub(super) fn sample(&self, app_level: u32) -> FlowSample {
        let tx = &self.tx;
        let totals = self.totals();
        FlowSample {
            delivered_bytes: self.rx.delivered_bytes,
            cwnd_bytes: tx.cwnd,
            ssthresh_bytes: tx.ssthresh.min(u64::MAX / 4),
            srtt_ns: tx.rtt().srtt().map_or(0, |t| t.as_nanos()),
            rto_ns: tx.rtt().rto().as_nanos(),
            app_level,
            packets_sent: totals.packets_sent,
            retransmissions: totals.retransmissions,
            delivery_rate_bps: tx.delivery_rate_bps(),
            snd_wnd_bytes: tx.peer_window(),
            pacing_rate_bps: tx.pacing_rate_bps(),
            pacing_gain: tx.bbr_pacing_gain(),
        }
    }
}
