//! An RTP-like media stream over UDP (VBR video, audio, Poisson packets; see `app::rtp`): the
//! source generating frames and releasing their packets when due, and the receiver's log.

use super::super::network::Network;
use super::receive_log::ReceiveLog;
use super::{sample_without_window, AppSetup, Application, FlowTotals};
use aqmlab_core::{Ecn, Packet, Proto, Time};
use aqmlab_model::app::rtp::{Emission, MediaSource, RtpConfig};
use aqmlab_model::headers::RTP_UDP_IP_HEADER_BYTES;
use aqmlab_model::record::{FlowSample, MediaFramesTable, Table};
use aqmlab_model::streams;

/// The source produces its next frame or packet.
const GENERATE: u8 = 0;
/// Packets held back by the source's jitter are due.
const DUE: u8 = 1;

pub(super) struct Rtp {
    src: MediaSource,
    /// The ECN codepoint of every packet.
    ecn: Ecn,
    running: bool,
    /// When the pending DUE event fires, if one is scheduled (lazy, like TCP's RTO timer).
    due_at: Option<Time>,
    log: ReceiveLog,
    /// The packets due now, kept between calls so that sending allocates nothing.
    due: Vec<Emission>,
}

impl Rtp {
    pub(super) fn new(r: &RtpConfig, setup: &AppSetup) -> Result<Rtp, String> {
        let (seed, id) = (setup.seed, setup.id);
        let src = MediaSource::new(r.clone(), streams::flow_media(seed, id), streams::flow_jitter(seed, id))?;
        Ok(Rtp { src, ecn: r.ecn, running: false, due_at: None, log: ReceiveLog::default(), due: Vec::new() })
    }

    /// The source produces its next frame or packet; packets leave when due (at once without
    /// source jitter).
    fn on_generate(&mut self, f: u32, net: &mut Network) {
        if !self.running {
            return;
        }
        let next = self.src.generate(net.now);
        net.schedule(next, f, GENERATE);
        self.emit_due(f, net);
    }

    fn on_due(&mut self, f: u32, net: &mut Network) {
        if self.due_at != Some(net.now) {
            return; // superseded by an earlier-scheduled event
        }
        self.due_at = None;
        self.emit_due(f, net);
    }

    /// Sends every packet due now and keeps one DUE event at the next due time.
    fn emit_due(&mut self, f: u32, net: &mut Network) {
        let mut due = std::mem::take(&mut self.due);
        due.clear();
        self.src.due(net.now, &mut due);
        if let Some(next) = self.src.next_due() {
            if self.due_at.is_none_or(|t| t > next) {
                self.due_at = Some(next);
                net.schedule(next, f, DUE);
            }
        }
        for e in &due {
            let class = net.draw_class(f);
            let mut p = net.udp_packet(f, true, e.size, RTP_UDP_IP_HEADER_BYTES, e.seq);
            p.class = class;
            p.ecn = self.ecn;
            net.emit(p);
        }
        self.due = due;
    }

    /// Flow `f`'s rows of the `media_frames` table: one per video frame, when its first
    /// packet was due, its size, and its packets as a run of sequence numbers (with `media`,
    /// which of a frame's packets arrived).
    fn media_frames_table(&self, f: u32) -> Table {
        let mut table = MediaFramesTable::default();
        table.push_flow(f, &self.src.frames);
        table.into_table()
    }
}

impl Application for Rtp {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        self.on_generate(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        match timer {
            GENERATE => self.on_generate(f, net),
            _ => self.on_due(f, net),
        }
    }

    fn on_packet(&mut self, _f: u32, p: Packet, _to_receiver: bool, net: &mut Network) {
        self.log.push(&p, net.now);
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.src.sent_packets, delivered_bytes: self.log.bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.log.bytes, 0)
    }

    /// The `media` table, and the `media_frames` table once a frame was produced (no table
    /// without rows; audio and Poisson sources produce none).
    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let mut tables = vec![self.log.media_table(f)];
        if !self.src.frames.is_empty() {
            tables.push(("media_frames", self.media_frames_table(f)));
        }
        tables
    }
}
