//! A real-time video call over UDP with Google Congestion Control (`congestion_control =
//! "gcc"` on a video flow): the synthetic encoder (`app::synthetic_codec`) makes one frame
//! every 1/fps at the target rate, its packets paced evenly over the frame interval (as the
//! open-loop RTP source paces a frame); the receiver sends transport-wide feedback every
//! `feedback_interval` as a packet on the reverse path, where it queues, can be delayed and
//! lost like any other; the sender's GCC estimator (`app::gcc`) turns each report that
//! arrives into a new target for the encoder.
//!
//! With `congestion_control = "scream"` the same encoder, feedback and frame tracking run with
//! SCReAMv2 (`app::scream`) instead: a frame's packets go into SCReAM's RTP queue and leave when
//! its pacer and send window allow (checked when a frame is made, when the pacer's time comes
//! and when a report arrives); the report also lists the CE-marked arrivals and has RFC 8888's
//! size.
//!
//! A report's contents travel beside its packet, in this application's own table keyed by the
//! report's number (the packet's `seq`), since both ends live here; a report whose packet is
//! lost is dropped from the table when a later one arrives.
//!
//! The receiver also tracks frames: a frame is complete when all its packets arrived; its
//! delay is from its capture (when its first packet was due) to its last packet's arrival;
//! it is late when complete after the deadline, lost when a packet never arrives (no
//! retransmission or FEC is modelled).

use super::super::network::Network;
use super::receive_log::ReceiveLog;
use super::{sample_without_window, AppSetup, Application, FlowTotals};
use aqmlab_core::{Ecn, Packet, Proto, Time};
use aqmlab_model::app::call_frames::{self, FrameLog, SessionCounts};
use aqmlab_model::app::frame_classes::frame_class;
use aqmlab_model::app::gcc::{FeedbackBuilder, FeedbackReport, GccSender};
use aqmlab_model::app::rtp::{packetize, MediaConfig, RtpConfig};
use aqmlab_model::app::scream::{EcnMode, Poll, ScreamSender};
use aqmlab_model::app::synthetic_codec::SyntheticCodec;
use aqmlab_model::headers::{RTP_UDP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES};
use aqmlab_model::record::{Column, FlowSample, Table};
use aqmlab_model::streams;
use std::collections::{BTreeMap, VecDeque};

/// The encoder produces its next frame.
const FRAME: u8 = 0;
/// Paced packets are due.
const DUE: u8 = 1;
/// The receiver sends its feedback.
const FEEDBACK: u8 = 2;

/// The class of frame `frame`'s packets: by its type when marking, else unclassified (0).
fn class_of(frames: &[FrameLog], mark_frames: bool, frame: u32) -> u8 {
    match frames.get(frame as usize) {
        Some(fr) if mark_frames => frame_class(fr.key),
        _ => 0,
    }
}

/// The rate controller the call runs.
enum Control {
    Gcc(GccSender),
    Scream(ScreamSender),
}

pub(super) struct Rtc {
    codec: SyntheticCodec,
    control: Control,
    feedback_interval: Time,
    deadline: Time,
    fps: f64,
    mtu: u32,
    ecn: Ecn,
    /// Packets carry their frame's class by type (`frame_classes.rs`); else class 0.
    mark_frames: bool,
    end: Time,
    running: bool,
    next_seq: u64,
    /// Paced packets not yet sent: (due, seq, IP size, frame).
    pending: VecDeque<(Time, u64, u32, u32)>,
    due_at: Option<Time>,
    frames: Vec<FrameLog>,
    feedback: FeedbackBuilder,
    /// Reports in flight, by number.
    reports: BTreeMap<u64, FeedbackReport>,
    next_report: u64,
    reports_sent: u64,
    reports_received: u64,
    log: ReceiveLog,
}

impl Rtc {
    pub(super) fn new(r: &RtpConfig, setup: &AppSetup) -> Result<Rtc, String> {
        r.validate()?;
        let MediaConfig::Video { fps, mtu, .. } = &r.media else {
            return Err("congestion_control: only video flows have it".into());
        };
        // (codec settings, start rate, feedback interval, deadline, controller)
        let (codec_cfg, start, feedback_ns, deadline_ns, control) = match (&r.gcc, &r.scream) {
            (Some(g), _) => {
                (g.codec(*fps), g.start_rate_bps, g.feedback_interval_ns, g.deadline_ns, Control::Gcc(GccSender::new(g.clone())?))
            }
            (None, Some(c)) => {
                let mode = match r.ecn {
                    Ecn::Ect1 => EcnMode::L4s,
                    Ecn::Ect0 => EcnMode::Classic,
                    _ => EcnMode::Off,
                };
                (
                    c.codec(*fps),
                    c.start_rate_bps,
                    c.feedback_interval_ns,
                    c.deadline_ns,
                    Control::Scream(ScreamSender::new(c.clone(), *mtu, *fps, mode)?),
                )
            }
            _ => return Err("congestion_control: gcc or scream needed for a call".into()),
        };
        let codec = SyntheticCodec::new(codec_cfg, start as f64, streams::flow_media(setup.seed, setup.id));
        Ok(Rtc {
            codec,
            control,
            feedback_interval: Time(feedback_ns),
            deadline: Time(deadline_ns),
            fps: *fps,
            mtu: *mtu,
            ecn: r.ecn,
            mark_frames: r.mark_frames,
            end: setup.end,
            running: false,
            next_seq: 0,
            pending: VecDeque::new(),
            due_at: None,
            frames: Vec::new(),
            feedback: FeedbackBuilder::default(),
            reports: BTreeMap::new(),
            next_report: 0,
            reports_sent: 0,
            reports_received: 0,
            log: ReceiveLog::default(),
        })
    }

    fn on_frame(&mut self, f: u32, net: &mut Network) {
        if !self.running {
            return;
        }
        let now = net.now;
        let interval = Time::from_secs_f64(1.0 / self.fps);
        net.schedule(now + interval, f, FRAME);
        let e = self.codec.next_frame(now);
        let sizes = packetize(e.size_bytes, self.mtu);
        let id = self.frames.len() as u32;
        match &mut self.control {
            Control::Gcc(_) => {
                let spacing = interval.as_nanos() / sizes.len() as u64;
                for (i, size) in sizes.iter().enumerate() {
                    self.pending.push_back((now + Time(spacing * i as u64), self.next_seq, *size, id));
                    self.next_seq += 1;
                }
            }
            Control::Scream(s) => s.on_frame(id, e.size_bytes, &sizes, now),
        }
        self.frames.push(FrameLog::new(now, e.size_bytes as u32, e.key, e.rate_bps, sizes.len() as u32));
        self.emit_due(f, net);
    }

    fn on_due(&mut self, f: u32, net: &mut Network) {
        if self.due_at != Some(net.now) {
            return; // superseded
        }
        self.due_at = None;
        self.emit_due(f, net);
    }

    /// Sends every packet due now and keeps one DUE event at the next due time.
    fn emit_due(&mut self, f: u32, net: &mut Network) {
        if let Control::Scream(s) = &mut self.control {
            loop {
                match s.poll(net.now) {
                    Poll::Send { seq, size, frame } => {
                        let mut p = net.udp_packet(f, true, size, RTP_UDP_IP_HEADER_BYTES, seq);
                        p.frame_id = frame;
                        p.ecn = self.ecn;
                        p.class = class_of(&self.frames, self.mark_frames, frame);
                        self.next_seq = seq + 1;
                        net.emit(p);
                    }
                    Poll::WaitUntil(next) => {
                        if self.due_at.is_none_or(|t| t > next || t < net.now) {
                            self.due_at = Some(next);
                            net.schedule(next, f, DUE);
                        }
                        break;
                    }
                    Poll::Blocked | Poll::Empty => break,
                }
            }
            return;
        }
        while let Some(&(at, seq, size, frame)) = self.pending.front() {
            if at > net.now {
                break;
            }
            self.pending.pop_front();
            let mut p = net.udp_packet(f, true, size, RTP_UDP_IP_HEADER_BYTES, seq);
            p.frame_id = frame;
            p.ecn = self.ecn;
            p.class = class_of(&self.frames, self.mark_frames, frame);
            if let Control::Gcc(g) = &mut self.control {
                g.on_sent(seq, size, net.now);
            }
            net.emit(p);
        }
        if let Some(&(next, ..)) = self.pending.front() {
            if self.due_at.is_none_or(|t| t > next) {
                self.due_at = Some(next);
                net.schedule(next, f, DUE);
            }
        }
    }

    /// The receiver's report timer: sends what arrived since the last report.
    fn on_feedback_timer(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        let report = self.feedback.take(now);
        if self.running || report.is_some() {
            net.schedule(now + self.feedback_interval, f, FEEDBACK);
        }
        let Some(report) = report else { return };
        let size = match self.control {
            Control::Gcc(_) => report.size(),
            Control::Scream(_) => report.size_rfc8888(),
        };
        let p = net.udp_packet(f, false, size, UDP_IP_HEADER_BYTES, self.next_report);
        self.reports.insert(self.next_report, report);
        self.next_report += 1;
        self.reports_sent += 1;
        net.emit(p);
    }

    fn on_data(&mut self, p: &Packet, now: Time) {
        self.log.push(p, now);
        self.feedback.on_packet_ecn(p.seq, now, p.ecn == Ecn::Ce);
        if let Some(fr) = self.frames.get_mut(p.frame_id as usize) {
            fr.on_arrival(now);
        }
    }

    fn on_report(&mut self, f: u32, p: &Packet, net: &mut Network) {
        let now = net.now;
        let Some(report) = self.reports.remove(&p.seq) else { return };
        // Older reports still in the table were lost (or are overtaken: dropped either way).
        self.reports = self.reports.split_off(&p.seq);
        self.reports_received += 1;
        let target = match &mut self.control {
            Control::Gcc(g) => g.on_feedback(&report, now),
            Control::Scream(s) => s.on_feedback(&report, now),
        };
        self.codec.set_target(now, target);
        if matches!(self.control, Control::Scream(_)) {
            // The window may have opened.
            self.emit_due(f, net);
        }
    }

    /// One row per report SCReAM applied.
    fn scream_table(s: &ScreamSender, f: u32) -> Table {
        let s = &s.samples;
        let col = |g: &dyn Fn(&aqmlab_model::app::scream::ScreamSample) -> f64| Column::F64(s.iter().map(g).collect());
        vec![
            ("flow", Column::U32(vec![f; s.len()])),
            ("t_ns", Column::U64(s.iter().map(|x| x.t.as_nanos()).collect())),
            ("target_bps", col(&|x| x.target_bps)),
            ("ref_wnd", col(&|x| x.ref_wnd)),
            ("bytes_in_flight", Column::U64(s.iter().map(|x| x.bytes_in_flight).collect())),
            ("s_rtt_ns", col(&|x| x.s_rtt * 1e9)),
            ("qdelay_ns", col(&|x| x.qdelay * 1e9)),
            ("qdelay_avg_ns", col(&|x| x.qdelay_avg * 1e9)),
            ("l4s_alpha", col(&|x| x.l4s_alpha)),
            ("reaction", Column::U8(s.iter().map(|x| x.reaction).collect())),
            ("lost", Column::U64(s.iter().map(|x| x.lost).collect())),
            ("ce", Column::U64(s.iter().map(|x| x.ce).collect())),
            ("rtp_queue_delay_ns", col(&|x| x.rtp_queue_delay * 1e9)),
        ]
    }

    fn session_table(&self, f: u32) -> Table {
        let targets: Vec<f64> = match &self.control {
            Control::Gcc(g) => g.samples.iter().map(|x| x.target_bps).collect(),
            Control::Scream(s) => s.samples.iter().map(|x| x.target_bps).collect(),
        };
        let counts = SessionCounts {
            deadline: self.deadline,
            end: self.end,
            targets: &targets,
            reports_sent: self.reports_sent,
            reports_received: self.reports_received,
        };
        call_frames::session_table(&self.frames, f, counts)
    }
}

impl Application for Rtc {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        net.schedule(net.now + self.feedback_interval, f, FEEDBACK);
        self.on_frame(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        match timer {
            FRAME => self.on_frame(f, net),
            DUE => self.on_due(f, net),
            _ => self.on_feedback_timer(f, net),
        }
    }

    fn on_packet(&mut self, _f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if to_receiver {
            self.on_data(&p, net.now);
        } else {
            self.on_report(_f, &p, net);
        }
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.next_seq - self.pending.len() as u64, delivered_bytes: self.log.bytes, ..FlowTotals::default() }
    }

    /// The adaptation level is the target rate in kbit/s.
    fn sample(&self) -> FlowSample {
        let target = match &self.control {
            Control::Gcc(g) => g.target_bps,
            Control::Scream(s) => s.target_bps,
        };
        sample_without_window(self.log.bytes, (target / 1000.0).round() as u32)
    }

    /// `media` (the receiver's packet log, as for every RTP flow), `gcc_rate` or `scream_rate` (one row per
    /// report applied), `rtc_frames` (one row per frame) and `rtc_sessions` (one row per flow).
    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let rate = match &self.control {
            Control::Gcc(g) => ("gcc_rate", g.rate_table(f)),
            Control::Scream(s) => ("scream_rate", Self::scream_table(s, f)),
        };
        vec![
            self.log.media_table(f),
            rate,
            ("rtc_frames", call_frames::frames_table(&self.frames, f)),
            ("rtc_sessions", self.session_table(f)),
        ]
    }
}
