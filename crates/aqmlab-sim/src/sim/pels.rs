//! PELS flows in the simulation: pacing the FGS source, the receiver's accounting and ACKs,
//! the feedback labels that travel beside packets, and the PELS record tables. See
//! `app::pels` for the source and its controllers and `aqmlab_core::qdisc::pels_feedback`
//! for the router side.

use super::{Event, Simulation, Transport};
use crate::app::pels::{account, PelsReceiver, PelsSender, ACK_SIZE};
use aqmlab_model::app::pels_config::PelsConfig;
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use aqmlab_model::record::{Column, Table};
use crate::topology::LinkId;
use aqmlab_core::qdisc::pels_feedback::FeedbackLabel;
use aqmlab_core::{Packet, Proto};

/// A PELS stream: the FGS source with MKC and gamma, and its receiver.
pub(super) struct PelsFlow {
    pub(super) tx: PelsSender,
    pub(super) rx: PelsReceiver,
    pub(super) running: bool,
}

impl PelsFlow {
    pub(super) fn new(cfg: PelsConfig) -> Result<PelsFlow, String> {
        Ok(PelsFlow { tx: PelsSender::new(cfg)?, rx: PelsReceiver::default(), running: false })
    }
}

impl Simulation {
    /// After link `l` accepted `p`: the label its discipline writes, merged with the label `p`
    /// already carries (the max-override of section 5.2). Only PELS streams' packets carry
    /// labels, so that the side table holds nothing nobody will take.
    pub(super) fn stamp_label(&mut self, l: LinkId, p: &Packet) {
        if !self.pels_flows || !matches!(self.flows[p.flow as usize].transport, Transport::Pels(_)) {
            return;
        }
        if let Some(mine) = self.topo.links[l as usize].queue.feedback_label(p) {
            let merged = FeedbackLabel::merge(self.labels.get(&p.uid).copied(), mine);
            self.labels.insert(p.uid, merged);
        }
    }

    /// Sends the source's next packet and schedules the one after.
    pub(super) fn on_pels_send(&mut self, f: u32) {
        let now = self.now;
        let Transport::Pels(flow) = &mut self.flows[f as usize].transport else { return };
        if !flow.running {
            return;
        }
        let (e, next) = flow.tx.next_packet(now);
        self.events.schedule(next, Event::PelsSend(f));
        let mut p = self.new_packet(f, true);
        p.proto = Proto::Udp;
        p.size = e.size;
        p.payload = e.size - UDP_IP_HEADER_BYTES;
        p.seq = e.seq;
        p.class = e.class;
        p.frame_id = e.frame_id;
        p.frag_index = e.index;
        p.frag_count = e.count;
        self.emit(p);
    }

    /// The receiver logs the packet and answers with an ACK echoing its label.
    pub(super) fn on_pels_data(&mut self, f: u32, p: Packet) {
        let now = self.now;
        let label = self.labels.remove(&p.uid);
        let Transport::Pels(flow) = &mut self.flows[f as usize].transport else { return };
        flow.rx.on_data(p.frame_id, p.frag_index, p.class, p.size, p.sent_at, now);
        let mut ack = self.new_packet(f, false);
        ack.proto = Proto::Udp;
        ack.size = ACK_SIZE;
        ack.payload = ACK_SIZE - UDP_IP_HEADER_BYTES;
        ack.seq = p.seq;
        if let Some(label) = label {
            self.labels.insert(ack.uid, label);
        }
        self.emit(ack);
    }

    /// The source acts on the echoed label if its epoch is fresh.
    pub(super) fn on_pels_ack(&mut self, f: u32, p: Packet) {
        let now = self.now;
        let Some(label) = self.labels.remove(&p.uid) else { return };
        if let Transport::Pels(flow) = &mut self.flows[f as usize].transport {
            flow.tx.on_feedback(label, p.seq, now);
        }
    }

    /// The PELS tables: `pels_frames` (one row per frame sent, with the receiver's per-frame
    /// accounting), `pels_control` (one row per applied feedback) and `pels_packets` (one row
    /// per video packet received). Empty without PELS flows.
    pub(super) fn pels_tables(&self) -> Vec<(&'static str, Table)> {
        let flows: Vec<(u32, &PelsFlow)> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match &f.transport {
                Transport::Pels(p) => Some((i as u32, p.as_ref())),
                _ => None,
            })
            .collect();
        if flows.is_empty() {
            return Vec::new();
        }
        vec![("pels_frames", frames_table(&flows)), ("pels_control", control_table(&flows)), ("pels_packets", packets_table(&flows))]
    }
}

fn frames_table(flows: &[(u32, &PelsFlow)]) -> Table {
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

fn control_table(flows: &[(u32, &PelsFlow)]) -> Table {
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

fn packets_table(flows: &[(u32, &PelsFlow)]) -> Table {
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
