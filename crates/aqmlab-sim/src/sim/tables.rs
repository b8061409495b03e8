//! The result tables of a run: the flows table, the application tables (video frames, media
//! packets) and the samples taken during the run, handed over by `take_records`.

use super::{totals, Simulation, Transport};
use crate::pcap::PcapWriter;
use crate::record::{Column, Table};

impl Simulation {

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
        if let Some(pe) = self.topo.links[self.bottleneck as usize].recorder.take() {
            tables.push(("packets", pe.into_table()));
        }
        tables.push(("queue", std::mem::take(&mut self.queue_samples).into_table()));
        tables.push(("flow_samples", std::mem::take(&mut self.flow_samples).into_table()));
        (tables, self.pcap.take().map(PcapWriter::into_bytes))
    }
}
