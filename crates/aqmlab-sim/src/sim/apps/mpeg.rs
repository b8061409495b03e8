//! An MPEG-1 stream over UDP (see `app::mpeg`): the frames' fragments sent back to back, the
//! receiver's periodic reports that drive the sender's scaling, and the per-frame log that
//! becomes the `frames` table.

use super::super::network::Network;
use super::receive_log::ReceiveLog;
use super::{sample_without_window, AppSetup, Application, FlowTotals};
use crate::sim::FEEDBACK_SIZE;
use aqmlab_core::{Packet, Proto, SimRng, Time};
use aqmlab_model::app::mpeg::{Frame, MpegConfig, MpegSink, MpegSource};
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use aqmlab_model::record::{FlowSample, FrameRow, FramesTable, Table};
use aqmlab_model::streams;

/// The next frame is due.
const FRAME_SEND: u8 = 0;
/// The receiver's next report is due.
const FEEDBACK: u8 = 1;

pub(super) struct Mpeg {
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

impl Mpeg {
    pub(super) fn new(m: &MpegConfig, setup: &AppSetup) -> Result<Mpeg, String> {
        // Reports every base RTT unless the scenario sets an interval.
        let feedback = if m.feedback_interval_ns > 0 { m.feedback_interval_ns } else { setup.base_rtt_ns.max(1) };
        Ok(Mpeg {
            src: MpegSource::new(m.clone())?,
            sink: MpegSink::default(),
            rng: streams::flow_frames(setup.seed, setup.id),
            next_seq: 0,
            running: false,
            feedback: Time(feedback),
            packets_sent: 0,
            frames: Vec::new(),
            log: ReceiveLog::default(),
        })
    }

    /// Emits the next frame's fragments back to back (when the scaling level sends it) and
    /// schedules the following frame.
    fn on_frame_send(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if !self.running {
            return;
        }
        let frame = self.src.next_frame(&mut self.rng);
        let sizes = if frame.sent { self.src.fragments(frame.size) } else { Vec::new() };
        self.frames.push(FrameRecord { t: now, frame, packets: sizes.len() as u16 });
        let class = self.src.class_of(frame.frame_type);
        let first_seq = self.next_seq;
        self.next_seq += sizes.len() as u64;
        self.packets_sent += sizes.len() as u64;
        let next = now + Time(self.src.frame_interval_ns());
        net.schedule(next, f, FRAME_SEND);
        let count = sizes.len() as u16;
        for (i, size) in sizes.into_iter().enumerate() {
            let mut p = net.udp_packet(f, true, size, UDP_IP_HEADER_BYTES, first_seq + i as u64);
            p.class = class;
            p.frame_id = frame.id;
            p.frame_type = frame.frame_type;
            p.frag_index = i as u16;
            p.frag_count = count;
            net.emit(p);
        }
    }

    /// The receiver's periodic report (packets received, highest sequence) to the sender.
    fn on_video_feedback(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        let (received, highest, interval, running) = (self.sink.packets, self.sink.highest_seq, self.feedback, self.running);
        if !running {
            return;
        }
        net.schedule(now + interval, f, FEEDBACK);
        // Encodes "nothing yet" as 0 and sequence s as s + 1.
        let mut p = net.udp_packet(f, false, FEEDBACK_SIZE, UDP_IP_HEADER_BYTES, highest.map_or(0, |h| h + 1));
        p.ack = received;
        net.emit(p);
    }

    /// Flow `f`'s rows of the `frames` table: one per video frame produced, sent or skipped
    /// at the sender, its packets, and how many of them the receiver got. Built by the
    /// model's `FramesTable`, the builder the emulator's frames table uses too.
    fn frames_table(&self, f: u32) -> Table {
        let mut table = FramesTable::default();
        for r in &self.frames {
            table.push(FrameRow {
                flow: f,
                frame_id: r.frame.id,
                frame_type: r.frame.frame_type as u8,
                gop_position: r.frame.gop_position,
                t_ns: r.t.as_nanos(),
                size: r.frame.size,
                sent: r.frame.sent,
                packets: r.packets as u32,
                packets_received: self.sink.received.get(r.frame.id as usize).copied().unwrap_or(0) as u32,
            });
        }
        table.into_table()
    }
}

impl Application for Mpeg {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        let first_report = net.now + self.feedback;
        net.schedule(first_report, f, FEEDBACK);
        self.on_frame_send(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        match timer {
            FRAME_SEND => self.on_frame_send(f, net),
            _ => self.on_video_feedback(f, net),
        }
    }

    fn on_packet(&mut self, _f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if to_receiver {
            self.sink.on_packet(p.frame_id, p.seq, p.payload);
            self.log.push(&p, net.now);
        } else {
            self.src.on_report(p.ack, p.seq.checked_sub(1));
        }
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.packets_sent, delivered_bytes: self.sink.bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.sink.bytes, self.src.level as u32)
    }

    /// The `frames` table only once a frame was produced (no table without rows), and the
    /// `media` table.
    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let mut tables = Vec::new();
        if !self.frames.is_empty() {
            tables.push(("frames", self.frames_table(f)));
        }
        tables.push(self.log.media_table(f));
        tables
    }
}
