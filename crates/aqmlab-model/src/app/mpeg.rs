//! An MPEG-1 video source and sink after the Rb-RIO paper's MPEG_APP (Chung and Claypool,
//! "Better-behaved, better-performing multimedia networking", Euromedia 2000).
//!
//! The source emits one frame every 1/fps seconds following a GOP pattern (default
//! `IBBPBBPBB`), sized per frame type (constant means, a normal spread, or a trace), and
//! fragments each frame into packets of at most `max_packet` bytes (IP size) sent back to back
//! at the frame's time. Every packet carries its frame's id, type, fragment index and count,
//! and the class of its type (I -> 3, P -> 2, B -> 1 by default).
//!
//! **Responsive mode.** MPEG_APP's published description stops at "scales by dropping frames at
//! the sender"; this is our design in that spirit. The sender holds a *level* L in 0..=N where
//! N = (B frames per GOP) + (P frames per GOP):
//! * L <= nB: skip L of the GOP's B frames, chosen evenly spread;
//! * L > nB: skip every B frame and also the last L - nB P frames of the GOP (from the end, so
//!   that every P still sent has its reference chain intact; the B frames that would need a
//!   skipped P are already skipped). At L = N only the I frame is sent.
//!
//! The receiver reports once per feedback interval (default: the flow's base RTT) how many
//! packets it received and the highest sequence number seen. A report showing loss raises L by
//! one and the next report is ignored (it still reflects the old rate); `up_after` consecutive
//! loss-free reports lower L by one. Multiplicative decrease is impossible with so few levels;
//! this additive step per RTT both ways is the MPEG_APP-like rule, and its steps are unit tested.

use crate::headers::UDP_IP_HEADER_BYTES;
use aqmlab_core::{FrameType, SimRng};
use serde::{Deserialize, Serialize};

/// How frame sizes are drawn.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FrameSizes {
    /// Every frame of a type has its mean size.
    Constant,
    /// Normal around the type's mean with coefficient of variation `cv`, at least 1 byte.
    Normal { cv: f64 },
    /// Sizes in bytes, cycled in order (one per frame, in GOP order).
    Trace { sizes: Vec<u32> },
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MpegConfig {
    /// GOP pattern of I, P and B, starting with I.
    pub gop: String,
    pub fps: f64,
    /// Mean sizes of I, P and B frames in bytes.
    pub mean_sizes: [u32; 3],
    pub sizes: FrameSizes,
    /// Largest IP packet, bytes; payload per packet is `max_packet - 28` (IP + UDP headers).
    pub max_packet: u32,
    /// Class marks of I, P and B packets.
    pub classes: [u8; 3],
    pub responsive: bool,
    /// Receiver report period; 0 means the flow's base RTT.
    pub feedback_interval_ns: u64,
    /// Loss-free reports needed before the level is lowered by one.
    pub up_after: u32,
}

pub fn parse_gop(gop: &str) -> Result<Vec<FrameType>, String> {
    if !gop.starts_with('I') {
        return Err(format!("gop {gop:?}: must start with I"));
    }
    gop.chars()
        .map(|c| match c {
            'I' => Ok(FrameType::I),
            'P' => Ok(FrameType::P),
            'B' => Ok(FrameType::B),
            other => Err(format!("gop {gop:?}: letter {other:?} is not one of I, P, B")),
        })
        .collect()
}

impl MpegConfig {
    pub fn validate(&self) -> Result<(), String> {
        parse_gop(&self.gop)?;
        if !(self.fps > 0.0 && self.fps.is_finite()) {
            return Err("fps: must be positive".into());
        }
        if self.max_packet <= UDP_IP_HEADER_BYTES {
            return Err(format!("max_packet: must exceed the {UDP_IP_HEADER_BYTES} B of IP/UDP headers"));
        }
        if self.mean_sizes.contains(&0) {
            return Err("frame_sizes: every mean size must be positive".into());
        }
        if let FrameSizes::Normal { cv } = self.sizes {
            if cv.is_nan() || cv < 0.0 {
                return Err("size_cv: must be >= 0".into());
            }
        }
        if let FrameSizes::Trace { sizes } = &self.sizes {
            if sizes.is_empty() || sizes.contains(&0) {
                return Err("trace: needs at least one positive frame size".into());
            }
        }
        Ok(())
    }
}

/// Index of a frame type in per-type arrays (I, P, B).
pub fn type_index(t: FrameType) -> usize {
    match t {
        FrameType::I | FrameType::None => 0,
        FrameType::P => 1,
        FrameType::B => 2,
    }
}

/// Which GOP positions are skipped at scaling level `level` (see the module docs).
pub fn skipped_positions(gop: &[FrameType], level: usize) -> Vec<bool> {
    let bs: Vec<usize> = (0..gop.len()).filter(|&i| gop[i] == FrameType::B).collect();
    let ps: Vec<usize> = (0..gop.len()).filter(|&i| gop[i] == FrameType::P).collect();
    let mut skip = vec![false; gop.len()];
    let nb = bs.len();
    let drop_b = level.min(nb);
    // Evenly spread: skip B number floor((j + 0.5) * nb / drop_b) for j < drop_b.
    for j in 0..drop_b {
        let idx = ((2 * j + 1) * nb) / (2 * drop_b);
        skip[bs[idx.min(nb - 1)]] = true;
    }
    let drop_p = level.saturating_sub(nb).min(ps.len());
    for &p in ps.iter().rev().take(drop_p) {
        skip[p] = true;
    }
    skip
}

/// One frame the source produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    pub id: u32,
    pub frame_type: FrameType,
    pub gop_position: u32,
    pub size: u32,
    /// False when the scaling level skipped it at the sender.
    pub sent: bool,
}

/// The sending side: frame pattern, sizes, and the scaling level.
#[derive(Clone, Debug)]
pub struct MpegSource {
    cfg: MpegConfig,
    gop: Vec<FrameType>,
    next_id: u32,
    trace_pos: usize,
    pub level: usize,
    max_level: usize,
    ignore_next_report: bool,
    clean_reports: u32,
    last_highest: Option<u64>,
    last_count: u64,
    /// Reports that showed loss, and level changes, for the records.
    pub loss_reports: u64,
    pub level_changes: u64,
}

impl MpegSource {
    pub fn new(cfg: MpegConfig) -> Result<MpegSource, String> {
        cfg.validate()?;
        let gop = parse_gop(&cfg.gop)?;
        let max_level = gop.iter().filter(|t| **t != FrameType::I).count();
        Ok(MpegSource {
            cfg,
            gop,
            next_id: 0,
            trace_pos: 0,
            level: 0,
            max_level,
            ignore_next_report: false,
            clean_reports: 0,
            last_highest: None,
            last_count: 0,
            loss_reports: 0,
            level_changes: 0,
        })
    }

    pub fn config(&self) -> &MpegConfig {
        &self.cfg
    }

    pub fn frame_interval_ns(&self) -> u64 {
        (1e9 / self.cfg.fps).round() as u64
    }

    /// The next frame in display order, sized and marked sent or skipped.
    pub fn next_frame(&mut self, rng: &mut SimRng) -> Frame {
        let pos = self.next_id as usize % self.gop.len();
        let frame_type = self.gop[pos];
        let size = self.draw_size(frame_type, rng);
        let sent = !skipped_positions(&self.gop, self.level)[pos];
        let f = Frame { id: self.next_id, frame_type, gop_position: pos as u32, size, sent };
        self.next_id += 1;
        f
    }

    fn draw_size(&mut self, t: FrameType, rng: &mut SimRng) -> u32 {
        let mean = self.cfg.mean_sizes[type_index(t)] as f64;
        match &self.cfg.sizes {
            FrameSizes::Constant => mean as u32,
            FrameSizes::Normal { cv } => rng.normal(mean, cv * mean).round().max(1.0) as u32,
            FrameSizes::Trace { sizes } => {
                let s = sizes[self.trace_pos % sizes.len()];
                self.trace_pos += 1;
                s
            }
        }
    }

    /// Packet sizes (IP bytes) of a frame of `size` payload bytes.
    pub fn fragments(&self, size: u32) -> Vec<u32> {
        let payload = self.cfg.max_packet - UDP_IP_HEADER_BYTES;
        let n = size.div_ceil(payload).max(1);
        (0..n)
            .map(|i| {
                let chunk = if i + 1 < n { payload } else { size - payload * (n - 1) };
                chunk + UDP_IP_HEADER_BYTES
            })
            .collect()
    }

    pub fn class_of(&self, t: FrameType) -> u8 {
        self.cfg.classes[type_index(t)]
    }

    /// Applies a receiver report (cumulative packets received, highest sequence seen).
    pub fn on_report(&mut self, received_total: u64, highest_seq: Option<u64>) {
        if !self.cfg.responsive {
            return;
        }
        let expected = match (highest_seq, self.last_highest) {
            (Some(h), Some(prev)) => h.saturating_sub(prev),
            (Some(h), None) => h + 1,
            (None, _) => 0,
        };
        let received = received_total - self.last_count;
        self.last_count = received_total;
        if highest_seq.is_some() {
            self.last_highest = highest_seq;
        }
        if self.ignore_next_report {
            self.ignore_next_report = false;
            return;
        }
        if received < expected {
            self.loss_reports += 1;
            self.clean_reports = 0;
            if self.level < self.max_level {
                self.level += 1;
                self.level_changes += 1;
            }
            self.ignore_next_report = true;
        } else if expected > 0 {
            self.clean_reports += 1;
            if self.clean_reports >= self.cfg.up_after.max(1) && self.level > 0 {
                self.level -= 1;
                self.level_changes += 1;
                self.clean_reports = 0;
            }
        }
    }
}

/// The receiving side: packets per frame and the report counters.
#[derive(Clone, Debug, Default)]
pub struct MpegSink {
    /// Packets received per frame id.
    pub received: Vec<u16>,
    pub packets: u64,
    pub bytes: u64,
    pub highest_seq: Option<u64>,
}

impl MpegSink {
    pub fn on_packet(&mut self, frame_id: u32, seq: u64, payload: u32) {
        let i = frame_id as usize;
        if self.received.len() <= i {
            self.received.resize(i + 1, 0);
        }
        self.received[i] = self.received[i].saturating_add(1);
        self.packets += 1;
        self.bytes += payload as u64;
        self.highest_seq = Some(self.highest_seq.map_or(seq, |h| h.max(seq)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(responsive: bool) -> MpegConfig {
        MpegConfig {
            gop: "IBBPBBPBB".into(),
            fps: 30.0,
            mean_sizes: [11_000, 8_000, 2_000],
            sizes: FrameSizes::Constant,
            max_packet: 1000,
            classes: [3, 2, 1],
            responsive,
            feedback_interval_ns: 0,
            up_after: 2,
        }
    }

    fn sent_pattern(level: usize) -> String {
        let gop = parse_gop("IBBPBBPBB").unwrap();
        skipped_positions(&gop, level)
            .iter()
            .zip(&gop)
            .map(|(s, t)| if *s { '-' } else { format!("{t:?}").chars().next().unwrap() })
            .collect()
    }

    #[test]
    fn scaling_levels_drop_b_frames_first_then_p_from_the_end() {
        assert_eq!(sent_pattern(0), "IBBPBBPBB");
        assert_eq!(sent_pattern(1), "IBBPB-PBB");
        // Level k skips k of the 6 B frames, evenly spread; levels 7 and 8 remove P frames
        // from the end of the GOP.
        for level in 0..=6 {
            let s = sent_pattern(level);
            assert_eq!(s.matches('B').count(), 6 - level, "level {level}: {s}");
            assert_eq!(s.matches('P').count(), 2, "level {level}: {s}");
        }
        assert_eq!(sent_pattern(6), "I--P--P--");
        assert_eq!(sent_pattern(7), "I--P-----");
        assert_eq!(sent_pattern(8), "I--------");
        assert_eq!(sent_pattern(3), "IB-PB-PB-");
    }

    #[test]
    fn fragments_respect_the_packet_limit() {
        let s = MpegSource::new(cfg(false)).unwrap();
        let f = s.fragments(11_000);
        assert_eq!(f.len(), 12); // 972 B of payload per 1000 B packet
        assert!(f.iter().all(|p| *p <= 1000));
        assert_eq!(f.iter().map(|p| p - UDP_IP_HEADER_BYTES).sum::<u32>(), 11_000);
        assert_eq!(s.fragments(2_000).len(), 3);
    }

    #[test]
    fn unresponsive_source_ignores_reports() {
        let mut s = MpegSource::new(cfg(false)).unwrap();
        s.on_report(1, Some(100));
        assert_eq!(s.level, 0);
    }

    #[test]
    fn loss_steps_down_once_per_report_and_skips_the_next_one() {
        let mut s = MpegSource::new(cfg(true)).unwrap();
        s.on_report(50, Some(99)); // 100 expected, 50 received: loss
        assert_eq!(s.level, 1);
        s.on_report(60, Some(199)); // ignored: reflects the old rate
        assert_eq!(s.level, 1);
        s.on_report(100, Some(299)); // loss again
        assert_eq!(s.level, 2);
    }

    #[test]
    fn clean_reports_step_back_up_after_up_after_reports() {
        let mut s = MpegSource::new(cfg(true)).unwrap();
        s.level = 3;
        s.on_report(100, Some(99));
        assert_eq!(s.level, 3, "one clean report is not enough with up_after = 2");
        s.on_report(200, Some(199));
        assert_eq!(s.level, 2);
        s.on_report(300, Some(299));
        s.on_report(400, Some(399));
        assert_eq!(s.level, 1);
    }

    #[test]
    fn level_is_bounded_to_i_frames_only() {
        let mut s = MpegSource::new(cfg(true)).unwrap();
        let mut total = 0;
        for k in 0..40u64 {
            total += 1;
            s.on_report(total, Some(k * 10 + 9));
        }
        assert_eq!(s.level, 8);
    }

    #[test]
    fn gop_validation() {
        assert!(parse_gop("BBP").unwrap_err().contains("must start with I"));
        assert!(parse_gop("IBXP").unwrap_err().contains("'X'"));
    }

    #[test]
    fn frames_follow_the_gop_and_skip_by_level() {
        let mut s = MpegSource::new(cfg(true)).unwrap();
        let mut rng = SimRng::stream(1, "t");
        s.level = 6;
        let frames: Vec<Frame> = (0..9).map(|_| s.next_frame(&mut rng)).collect();
        let sent: Vec<bool> = frames.iter().map(|f| f.sent).collect();
        assert_eq!(sent, vec![true, false, false, true, false, false, true, false, false]);
        assert_eq!(frames[3].frame_type, FrameType::P);
        assert_eq!(frames[0].size, 11_000);
    }
}
