//! PELS flows in the simulation: pacing the FGS source, the receiver's accounting and ACKs,
//! the feedback labels that travel beside packets, and the PELS record tables. See
//! `app::pels` for the source and its controllers and `aqmlab_core::qdisc::pels_feedback`
//! for the router side (and `Network::stamp_label` for where a router's label is written).

use super::super::network::Network;
use super::{sample_without_window, Application, FlowTotals};
use crate::app::pels::{account, PelsReceiver, PelsSender, ACK_SIZE};
use aqmlab_core::{Packet, Proto};
use aqmlab_model::app::pels_config::PelsConfig;
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use aqmlab_model::record::{Column, FlowSample, Table};

/// The only timer: the source's next packet is due.
const SEND: u8 = 0;

/// A PELS stream: the FGS source with MKC and gamma, and its receiver.
pub(super) struct Pels {
    tx: PelsSender,
    rx: PelsReceiver,
    running: bool,
}

impl Pels {
    pub(super) fn new(cfg: &PelsConfig) -> Result<Pels, String> {
        Ok(Pels { tx: PelsSender::new(cfg.clone())?, rx: PelsReceiver::default(), running: false })
    }

    /// Sends the source's next packet and schedules the one after.
    fn on_send(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if !self.running {
            return;
        }
        let (e, next) = self.tx.next_packet(now);
        net.schedule(next, f, SEND);
        let mut p = net.udp_packet(f, true, e.size, UDP_IP_HEADER_BYTES, e.seq);
        p.class = e.class;
        p.frame_id = e.frame_id;
        p.frag_index = e.index;
        p.frag_count = e.count;
        net.emit(p);
    }

    /// The receiver logs the packet and answers with an ACK echoing its label.
    fn on_data(&mut self, f: u32, p: Packet, net: &mut Network) {
        let now = net.now;
        let label = net.labels.remove(&p.uid);
        self.rx.on_data(p.frame_id, p.frag_index, p.class, p.size, p.sent_at, now);
        let mut ack = net.new_packet(f, false);
        ack.proto = Proto::Udp;
        ack.size = ACK_SIZE;
        ack.payload = ACK_SIZE - UDP_IP_HEADER_BYTES;
        ack.seq = p.seq;
        if let Some(label) = label {
            net.labels.insert(ack.uid, label);
        }
        net.emit(ack);
    }

    /// The source acts on the echoed label if its epoch is fresh.
    fn on_ack(&mut self, p: Packet, net: &mut Network) {
        let now = net.now;
        let Some(label) = net.labels.remove(&p.uid) else { return };
        self.tx.on_feedback(label, p.seq, now);
    }
}

impl Application for Pels {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        self.on_send(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, _timer: u8, net: &mut Network) {
        self.on_send(f, net);
    }

    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if to_receiver {
            self.on_data(f, p, net);
        } else {
            self.on_ack(p, net);
        }
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.tx.packets_sent, delivered_bytes: self.rx.bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.rx.bytes, 0)
    }

    /// The PELS tables: `pels_frames` (one row per frame sent, with the receiver's per-frame
    /// accounting), `pels_control` (one row per applied feedback) and `pels_packets` (one row
    /// per video packet received).
    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let flows = [(f, self)];
        vec![("pels_frames", frames_table(&flows)), ("pels_control", control_table(&flows)), ("pels_packets", packets_table(&flows))]
    }

    fn carries_labels(&self) -> bool {
        true
    }
}

fn frames_table(flows: &[(u32, &Pels)]) -> Table {
    let (mut flow, mut id, mut t, mut rate, mut gamma) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut g, mut y, mut r, mut g_rx, mut y_rx, mut r_rx, mut useful, mut utility) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for &(fi, p) in flows {
        for fr in &p.tx.frames {
            let a = account(fr.plan, p.rx.mask(fr.id));
            flow.push(fi);
            id.push(fr.id);
            t.push(fr.t.as_nanos());
            rate.push(fr.rate_bps);
            gamma.push(fr.gamma);
            g.push(fr.plan.green);
            y.push(fr.plan.yellow);
            r.push(fr.plan.red);
            g_rx.push(a.green);
            y_rx.push(a.yellow);
            r_rx.push(a.red);
            useful.push(a.useful);
            utility.push(a.utility);
        }
    }
    vec![
        ("flow", Column::U32(flow)),
        ("frame_id", Column::U32(id)),
        ("t_ns", Column::U64(t)),
        ("rate_bps", Column::F64(rate)),
        ("gamma", Column::F64(gamma)),
        ("green", Column::U32(g)),
        ("yellow", Column::U32(y)),
        ("red", Column::U32(r)),
        ("green_received", Column::U32(g_rx)),
        ("yellow_received", Column::U32(y_rx)),
        ("red_received", Column::U32(r_rx)),
        ("useful", Column::U32(useful)),
        ("utility", Column::F64(utility)),
    ]
}

fn control_table(flows: &[(u32, &Pels)]) -> Table {
    let (mut flow, mut t, mut router, mut epoch, mut loss, mut rate, mut gamma) = (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for &(fi, p) in flows {
        for c in &p.tx.control {
            flow.push(fi);
            t.push(c.t.as_nanos());
            router.push(c.label.router_id);
            epoch.push(c.label.epoch);
            loss.push(c.label.loss);
            rate.push(c.rate_bps);
            gamma.push(c.gamma);
        }
    }
    vec![
        ("flow", Column::U32(flow)),
        ("t_ns", Column::U64(t)),
        ("router_id", Column::U32(router)),
        ("epoch", Column::U64(epoch)),
        ("loss", Column::F64(loss)),
        ("rate_bps", Column::F64(rate)),
        ("gamma", Column::F64(gamma)),
    ]
}

fn packets_table(flows: &[(u32, &Pels)]) -> Table {
    let (mut flow, mut frame, mut class, mut sent, mut recv) = (vec![], vec![], vec![], vec![], vec![]);
    for &(fi, p) in flows {
        let rx = &p.rx;
        flow.extend(std::iter::repeat_n(fi, rx.log_frame.len()));
        frame.extend_from_slice(&rx.log_frame);
        class.extend_from_slice(&rx.log_class);
        sent.extend_from_slice(&rx.log_sent_ns);
        recv.extend_from_slice(&rx.log_recv_ns);
    }
    vec![
        ("flow", Column::U32(flow)),
        ("frame_id", Column::U32(frame)),
        ("class", Column::U8(class)),
        ("sent_ns", Column::U64(sent)),
        ("recv_ns", Column::U64(recv)),
    ]
}
