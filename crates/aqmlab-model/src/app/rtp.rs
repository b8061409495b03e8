//! RTP-like media sources over UDP for the SQF paper (Bonald, Muscariello, Ostallo, ICC 2011):
//! VBR video, audio, and a Poisson packet source, each with optional source jitter.
//!
//! * **VBR video**: one frame every 1/fps seconds, size drawn around `mean_rate / fps` (a
//!   log-normal spread with the given coefficient of variation, or a trace of frame sizes), cut
//!   into packets of at most `mtu` bytes (IP). By default the packets of a frame are paced
//!   evenly over the frame interval; `burst = true` sends them back to back instead. With a
//!   **shaping window** `shaping_ns > 0` the frames of each window (`round(shaping * fps)`
//!   frames) are sent at one constant rate over the window, as VLC's MPEG-TS muxer does (its
//!   `sout-ts-shaping` option, 200 ms by default: "cut the stream in slices of the given
//!   duration, and ensure a constant bitrate between the two boundaries"). VLC streamed the
//!   SQF paper's testbed video.
//! * **Audio**: one packet every `period`, payload around `rate * period` with the given CV
//!   (VBR around the mean; a CV of 0 is CBR).
//! * **Poisson**: fixed-size packets with exponential gaps at `rate` (the peak rate lambda of
//!   the paper's section IV).
//!
//! Every packet carries an RTP-like sequence number (`Packet::seq`, consecutive from 0) and its
//! send time. **Source jitter** (the paper's Figure 8): with `jitter_sd > 0` each packet leaves
//! `|N(0, jitter_sd)|` after its nominal time (a half-normal delay, so no packet leaves early),
//! which reorders packets and makes them leave in bursts.

use crate::headers::RTP_UDP_IP_HEADER_BYTES;
use aqmlab_core::{Ecn, SimRng, Time};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MediaConfig {
    Video {
        mean_rate_bps: u64,
        fps: f64,
        size_cv: f64,
        trace: Option<Vec<u32>>,
        mtu: u32,
        burst: bool,
        #[serde(default)]
        shaping_ns: u64,
    },
    Audio {
        mean_rate_bps: u64,
        period_ns: u64,
        size_cv: f64,
    },
    Poisson {
        rate_bps: u64,
        packet_size: u32,
    },
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RtpConfig {
    pub media: MediaConfig,
    /// Standard deviation of the half-normal source delay, ns (0 = none).
    pub jitter_sd_ns: u64,
    /// ECN codepoint of every packet (default Not-ECT; ECT(1) makes it L4S traffic, RFC 9331).
    /// The receiver sends no feedback: marks are only counted on the way.
    #[serde(default)]
    pub ecn: Ecn,
    /// Google Congestion Control with the synthetic encoder of `super::synthetic_codec` (video
    /// only): the simulator's `rtc` application runs it instead of this source. Absent (the
    /// default, `congestion_control = "none"`): the open-loop source here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcc: Option<super::gcc::GccConfig>,
    /// SCReAMv2 (`congestion_control = "scream"`) with the same encoder, in place of GCC.
    /// Absent by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scream: Option<super::scream::ScreamConfig>,
    /// A call (GCC or SCReAM) marks each packet's class by its frame's type (`marking.video =
    /// "frame_type"`; [`super::frame_classes`]): key frames class3, the others class2. Off (the
    /// default, left out of the config): class 0, as before the field existed (a call's packets
    /// take no `class_weights`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mark_frames: bool,
}

impl RtpConfig {
    /// The rate controller's name, if the flow has one.
    pub fn rate_control(&self) -> Option<&'static str> {
        match (&self.gcc, &self.scream) {
            (Some(_), _) => Some("gcc"),
            (None, Some(_)) => Some("scream"),
            _ => None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.gcc.is_some() && self.scream.is_some() {
            return Err("congestion_control: gcc or scream, not both".into());
        }
        if let Some(g) = &self.gcc {
            g.validate("gcc")?;
        }
        if let Some(s) = &self.scream {
            s.validate("scream")?;
        }
        if self.mark_frames && self.rate_control().is_none() {
            return Err("marking.video = frame_type: only a call (congestion_control gcc or scream) has frame types to mark".into());
        }
        if let Some(cc) = self.rate_control() {
            match &self.media {
                MediaConfig::Video { trace: None, burst: false, shaping_ns: 0, .. } if self.jitter_sd_ns == 0 => {}
                MediaConfig::Video { .. } => {
                    return Err(format!(
                        "congestion_control = {cc}: the encoder model sets the frame sizes and the pacing; \
                         trace, burst, shaping and jitter are not allowed with it"
                    ))
                }
                _ => return Err(format!("congestion_control = {cc}: only video flows have it")),
            }
        }
        match &self.media {
            MediaConfig::Video { mean_rate_bps, fps, size_cv, trace, mtu, burst, shaping_ns } => {
                if *burst && *shaping_ns > 0 {
                    return Err("burst and shaping: a shaped stream is paced, choose one".into());
                }
                if *mean_rate_bps == 0 && trace.is_none() {
                    return Err("mean_rate: must be positive".into());
                }
                if !(*fps > 0.0 && fps.is_finite()) {
                    return Err("fps: must be positive".into());
                }
                if size_cv.is_nan() || *size_cv < 0.0 {
                    return Err("size_cv: must be >= 0".into());
                }
                if *mtu <= RTP_UDP_IP_HEADER_BYTES {
                    return Err(format!("mtu: must exceed the {RTP_UDP_IP_HEADER_BYTES} B of IP/UDP/RTP headers"));
                }
                if trace.as_ref().is_some_and(|t| t.is_empty() || t.contains(&0)) {
                    return Err("trace: needs positive frame sizes".into());
                }
            }
            MediaConfig::Audio { mean_rate_bps, period_ns, size_cv } => {
                if *mean_rate_bps == 0 || *period_ns == 0 {
                    return Err("rate and period: must be positive".into());
                }
                if size_cv.is_nan() || *size_cv < 0.0 {
                    return Err("size_cv: must be >= 0".into());
                }
            }
            MediaConfig::Poisson { rate_bps, packet_size } => {
                if *rate_bps == 0 {
                    return Err("rate: must be positive".into());
                }
                if *packet_size <= RTP_UDP_IP_HEADER_BYTES {
                    return Err(format!("packet_size: must exceed {RTP_UDP_IP_HEADER_BYTES} B of headers"));
                }
            }
        }
        Ok(())
    }
}

/// A packet the source wants sent: when, its IP size, and its sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Emission {
    pub at: Time,
    pub seq: u64,
    pub size: u32,
}

/// One video frame as sent: its packets are the `packets` sequence numbers from `first_seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaFrame {
    /// When its first packet was due (before source jitter).
    pub at: Time,
    /// Payload bytes.
    pub size: u32,
    pub first_seq: u64,
    pub packets: u32,
}

/// Draws sizes with mean `mean` and coefficient of variation `cv` from a log-normal (positive,
/// right-skewed like video frame sizes); `cv = 0` gives the mean exactly.
fn lognormal(rng: &mut SimRng, mean: f64, cv: f64) -> f64 {
    if cv == 0.0 {
        return mean;
    }
    let s2 = (1.0 + cv * cv).ln();
    let mu = mean.ln() - s2 / 2.0;
    (mu + s2.sqrt() * rng.normal(0.0, 1.0)).exp()
}

pub struct MediaSource {
    cfg: RtpConfig,
    /// Sizes and gaps ([`crate::streams::flow_media`]).
    rng: SimRng,
    /// Source jitter ([`crate::streams::flow_jitter`]).
    jitter_rng: SimRng,
    next_seq: u64,
    trace_pos: usize,
    /// Packets generated but not yet due (only with jitter), earliest first.
    pending: BinaryHeap<Reverse<Emission>>,
    pub sent_packets: u64,
    /// Every video frame generated, in order (empty for audio and Poisson sources).
    pub frames: Vec<MediaFrame>,
}

impl MediaSource {
    pub fn new(cfg: RtpConfig, rng: SimRng, jitter_rng: SimRng) -> Result<MediaSource, String> {
        cfg.validate()?;
        Ok(MediaSource { cfg, rng, jitter_rng, next_seq: 0, trace_pos: 0, pending: BinaryHeap::new(), sent_packets: 0, frames: Vec::new() })
    }

    /// Generates the packets of the event at `now` (a frame, an audio packet, a Poisson
    /// arrival) and returns when the next generation event is due.
    pub fn generate(&mut self, now: Time) -> Time {
        // Offsets of the packets from `now`: spread over the frame interval when paced.
        let mut spacing = Time::ZERO;
        let (sizes, next) = match self.cfg.media.clone() {
            MediaConfig::Video { mean_rate_bps, fps, size_cv, trace, mtu, burst, shaping_ns } => {
                // One frame, or every frame of a shaping window, generated at once.
                let frames = frames_per_window(shaping_ns, fps);
                let mut packets = Vec::new();
                let first_frame = self.frames.len();
                for _ in 0..frames {
                    let frame = match &trace {
                        Some(t) => {
                            let s = t[self.trace_pos % t.len()];
                            self.trace_pos += 1;
                            s as f64
                        }
                        None => lognormal(&mut self.rng, mean_rate_bps as f64 / 8.0 / fps, size_cv),
                    };
                    let size = frame.round().max(1.0) as u64;
                    let first_seq = self.next_seq + packets.len() as u64;
                    packets.extend(packetize(size, mtu));
                    let count = (self.next_seq + packets.len() as u64 - first_seq) as u32;
                    self.frames.push(MediaFrame { at: now, size: size as u32, first_seq, packets: count });
                }
                let window = frames as f64 / fps;
                if !burst {
                    spacing = Time::from_secs_f64(window / packets.len() as f64);
                }
                for fr in &mut self.frames[first_frame..] {
                    fr.at = now + Time(spacing.as_nanos() * (fr.first_seq - self.next_seq));
                }
                (packets, now + Time::from_secs_f64(window))
            }
            MediaConfig::Audio { mean_rate_bps, period_ns, size_cv } => {
                let payload_mean = mean_rate_bps as f64 / 8.0 * period_ns as f64 * 1e-9 - RTP_UDP_IP_HEADER_BYTES as f64;
                let payload = lognormal(&mut self.rng, payload_mean.max(1.0), size_cv).round().max(1.0) as u32;
                (vec![payload + RTP_UDP_IP_HEADER_BYTES], now + Time(period_ns))
            }
            MediaConfig::Poisson { rate_bps, packet_size } => {
                let mean_gap = packet_size as f64 * 8.0 / rate_bps as f64;
                (vec![packet_size], now + Time::from_secs_f64(self.rng.exponential(mean_gap)))
            }
        };
        for (i, size) in sizes.into_iter().enumerate() {
            let nominal = now + Time(spacing.as_nanos() * i as u64);
            let delay = if self.cfg.jitter_sd_ns > 0 {
                Time::from_secs_f64(self.jitter_rng.normal(0.0, self.cfg.jitter_sd_ns as f64 * 1e-9).abs())
            } else {
                Time::ZERO
            };
            self.pending.push(Reverse(Emission { at: nominal + delay, seq: self.next_seq, size }));
            self.next_seq += 1;
        }
        next
    }

    /// Removes and returns every packet due at or before `now`, in due-time order.
    pub fn due(&mut self, now: Time, out: &mut Vec<Emission>) {
        while let Some(Reverse(e)) = self.pending.peek() {
            if e.at > now {
                break;
            }
            out.push(*e);
            self.pending.pop();
        }
        self.sent_packets += out.len() as u64;
    }

    /// When the earliest pending packet is due.
    pub fn next_due(&self) -> Option<Time> {
        self.pending.peek().map(|Reverse(e)| e.at)
    }
}

/// Frames sent together at one rate: 1 without shaping, else the frames of one window (at least 1).
fn frames_per_window(shaping_ns: u64, fps: f64) -> u32 {
    if shaping_ns == 0 {
        return 1;
    }
    (shaping_ns as f64 * 1e-9 * fps).round().max(1.0) as u32
}

/// IP sizes of the packets of a `frame`-byte payload with at most `mtu`-byte packets.
pub fn packetize(frame: u64, mtu: u32) -> Vec<u32> {
    let payload = (mtu - RTP_UDP_IP_HEADER_BYTES) as u64;
    let n = frame.div_ceil(payload).max(1);
    (0..n).map(|i| (if i + 1 < n { payload } else { frame - payload * (n - 1) }) as u32 + RTP_UDP_IP_HEADER_BYTES).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(media: MediaConfig, jitter_sd_ns: u64) -> MediaSource {
        MediaSource::new(
            RtpConfig { media, jitter_sd_ns, ecn: Ecn::NotEct, gcc: None, scream: None, mark_frames: false },
            SimRng::stream(1, "m"),
            SimRng::stream(1, "j"),
        )
        .unwrap()
    }

    /// Runs a source for `secs` and returns (bytes at IP level, packets) emitted.
    fn drive(s: &mut MediaSource, secs: u64) -> (u64, Vec<Emission>) {
        let end = Time::from_secs(secs);
        let mut now = Time::ZERO;
        let mut all = Vec::new();
        while now < end {
            now = s.generate(now);
        }
        s.due(Time::MAX, &mut all);
        let bytes = all.iter().filter(|e| e.at < end).map(|e| e.size as u64).sum();
        (bytes, all)
    }

    #[test]
    fn vbr_video_meets_its_mean_rate_with_mtu_packets() {
        let mut s = source(
            MediaConfig::Video { mean_rate_bps: 5_000_000, fps: 25.0, size_cv: 0.5, trace: None, mtu: 1500, burst: false, shaping_ns: 0 },
            0,
        );
        let (bytes, pkts) = drive(&mut s, 200);
        let payload_rate = (bytes - pkts.len() as u64 * RTP_UDP_IP_HEADER_BYTES as u64) as f64 * 8.0 / 200.0;
        assert!((payload_rate / 5e6 - 1.0).abs() < 0.03, "{payload_rate}");
        assert!(pkts.iter().all(|p| p.size <= 1500));
        // Sequence numbers are consecutive.
        assert!(pkts.iter().enumerate().all(|(i, p)| p.seq == i as u64));
    }

    #[test]
    fn audio_sends_one_packet_per_period_at_its_rate() {
        let mut s = source(MediaConfig::Audio { mean_rate_bps: 64_000, period_ns: 20_000_000, size_cv: 0.2 }, 0);
        let (bytes, pkts) = drive(&mut s, 100);
        assert_eq!(pkts.len(), 5000);
        let rate = bytes as f64 * 8.0 / 100.0;
        assert!((rate / 64_000.0 - 1.0).abs() < 0.03, "{rate}");
    }

    #[test]
    fn poisson_gaps_are_exponential() {
        let mut s = source(MediaConfig::Poisson { rate_bps: 1_000_000, packet_size: 1250 }, 0);
        let (_, pkts) = drive(&mut s, 200);
        // 100 packets/s: count near 20000, and the gaps' CV near 1.
        assert!((pkts.len() as f64 - 20_000.0).abs() < 600.0, "{}", pkts.len());
        let gaps: Vec<f64> = pkts.windows(2).map(|w| (w[1].at - w[0].at).as_secs_f64()).collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / m - 1.0).abs() < 0.05, "cv {}", sd / m);
    }

    #[test]
    fn jitter_delays_never_advances_and_reorders() {
        let cfg = MediaConfig::Audio { mean_rate_bps: 64_000, period_ns: 20_000_000, size_cv: 0.0 };
        let mut plain = source(cfg.clone(), 0);
        let mut jittered = source(cfg, 30_000_000);
        let (_, a) = drive(&mut plain, 20);
        let (_, b) = drive(&mut jittered, 20);
        let nominal: std::collections::HashMap<u64, Time> = a.iter().map(|e| (e.seq, e.at)).collect();
        assert!(b.iter().all(|e| e.at >= nominal[&e.seq]));
        let reordered = b.windows(2).filter(|w| w[1].seq < w[0].seq).count();
        assert!(reordered > 10, "30 ms of jitter on 20 ms spacing must reorder, got {reordered}");
        // Half-normal mean = sd * sqrt(2/pi) = 23.9 ms.
        let mean_delay = b.iter().map(|e| (e.at - nominal[&e.seq]).as_secs_f64()).sum::<f64>() / b.len() as f64;
        assert!((mean_delay - 0.0239).abs() < 0.003, "{mean_delay}");
    }

    #[test]
    fn video_packets_are_paced_over_the_frame_interval_unless_bursty() {
        let frame = |burst| {
            let mut s = source(
                MediaConfig::Video { mean_rate_bps: 2_920_000, fps: 25.0, size_cv: 0.0, trace: None, mtu: 1500, burst, shaping_ns: 0 },
                0,
            );
            s.generate(Time::ZERO);
            let mut out = Vec::new();
            s.due(Time::MAX, &mut out);
            out.iter().map(|e| e.at.as_nanos()).collect::<Vec<_>>()
        };
        // 2.92 Mbit/s at 25 fps: 14600 B frames, ten 1460 B payloads, one every 4 ms.
        assert_eq!(frame(false), (0..10).map(|i| i * 4_000_000).collect::<Vec<u64>>());
        assert_eq!(frame(true), vec![0; 10]);
    }

    #[test]
    fn a_shaping_window_sends_its_frames_at_one_constant_rate() {
        // 200 ms at 25 fps = 5 frames per window; frame sizes vary (cv 0.5) but inside a
        // window every gap is the same, and windows start every 200 ms.
        let cfg = MediaConfig::Video {
            mean_rate_bps: 5_000_000,
            fps: 25.0,
            size_cv: 0.5,
            trace: None,
            mtu: 1500,
            burst: false,
            shaping_ns: 200_000_000,
        };
        let mut s = source(cfg, 0);
        assert_eq!(s.generate(Time::ZERO), Time::from_millis(200));
        let mut out = Vec::new();
        s.due(Time::MAX, &mut out);
        let gaps: Vec<u64> = out.windows(2).map(|w| (w[1].at - w[0].at).as_nanos()).collect();
        assert!(gaps.iter().all(|g| g.abs_diff(gaps[0]) <= 1), "uneven gaps {gaps:?}");
        assert!(out.last().unwrap().at < Time::from_millis(200));
        // About 5 frames of 25 kB: far more packets than one frame's 17.
        assert!(out.len() > 50, "{}", out.len());
    }

    #[test]
    fn video_frames_record_their_runs_of_sequence_numbers() {
        let cfg = MediaConfig::Video {
            mean_rate_bps: 5_000_000,
            fps: 25.0,
            size_cv: 0.5,
            trace: None,
            mtu: 1356,
            burst: false,
            shaping_ns: 200_000_000,
        };
        let mut s = source(cfg, 0);
        let (_, pkts) = drive(&mut s, 2);
        assert_eq!(s.frames.len(), 50);
        // The frames tile the sequence numbers, each run sized by packetize.
        let mut next = 0;
        for f in &s.frames {
            assert_eq!(f.first_seq, next);
            assert_eq!(f.packets as usize, packetize(f.size as u64, 1356).len());
            assert_eq!(pkts[f.first_seq as usize].at, f.at, "a frame starts when its first packet is due");
            next += f.packets as u64;
        }
        assert_eq!(next as usize, pkts.len());
    }

    #[test]
    fn shaping_and_burst_are_exclusive() {
        let cfg = MediaConfig::Video {
            mean_rate_bps: 5_000_000,
            fps: 25.0,
            size_cv: 0.5,
            trace: None,
            mtu: 1500,
            burst: true,
            shaping_ns: 200_000_000,
        };
        let err = RtpConfig { media: cfg, jitter_sd_ns: 0, ecn: Ecn::NotEct, gcc: None, scream: None, mark_frames: false }
            .validate()
            .unwrap_err();
        assert!(err.contains("burst and shaping"), "{err}");
    }

    #[test]
    fn packetize_splits_at_the_mtu() {
        assert_eq!(packetize(2920, 1500), vec![1500, 1500]);
        assert_eq!(packetize(3000, 1500), vec![1500, 1500, 120]);
        assert_eq!(packetize(10, 1500), vec![50]);
    }
}
