//! PELS streaming (S. Kang, Y. Zhang, M. Dai and D. Loguinov, "Multi-layer Active Queue
//! Management and Congestion Control for Scalable Video Streaming", ICDCS 2004): an MPEG-4 FGS
//! source whose enhancement layer is partitioned into yellow and red packets by the gamma
//! controller, rate-controlled by Max-min Kelly Control (MKC) on router feedback, and a
//! receiver that echoes that feedback and accounts for every frame.
//!
//! * **Frames** (section 4.2, 6.1): one frame every 1/fps. A frame is `base_packets` green
//!   packets (the base layer) plus the enhancement layer cut to x_i bytes by the current rate r:
//!   x_i = r/fps - base, in whole packets of `packet_size` bytes (IP size), the fractional
//!   remainder carried to the next frame so that the long-run rate is exactly r. At most
//!   `max_packets` packets per frame (the full-rate frame). The lower (1 - gamma) share of the
//!   enhancement packets is yellow, the upper gamma share red (whole packets, the fraction
//!   carried to the next frame so that the red share over frames is gamma). Packets go out in order green,
//!   yellow, red (bottom of the frame first), evenly paced over the frame interval.
//! * **Best-effort mode** (`partition = false`, section 6.5): every enhancement packet is yellow
//!   (the router then drops enhancement packets without regard to their position) and gamma is
//!   not used; MKC still runs on the router's feedback.
//! * **Feedback** (section 5.2): the receiver answers every data packet with an ACK carrying the
//!   packet's label (router id, epoch z, loss p) and sequence number. The source acts on a label
//!   only when its epoch is newer than the last it acted on from that router id, once per
//!   fresh epoch: MKC (eq. 8) and the gamma controller (eq. 5).
//! * **MKC** (eq. 8): r(k) = r(k - D) + alpha - beta r(k - D) p(k - D), where r(k - D) is the
//!   rate at which the packet that carried the label was sent (one round trip ago), clamped to
//!   [base-layer rate, full-frame rate].
//! * **Gamma** (eq. 5): gamma(k) = gamma(k - D) + sigma (p(k - D)/p_thr - gamma(k - D)),
//!   clamped to [gamma_low, 1], with gamma(k - D) the gamma in effect when that packet was sent.
//!   The paper's p_i in eq. (4) is the loss of the FGS (enhancement) layer; the router's p is
//!   the loss of all PELS bytes, which strict priority makes fall entirely on the enhancement
//!   layer, so the controller uses p_fgs = p r / (r - r_base), clamped to [0, 1] (our reading;
//!   written in docs/reproductions/pels.md).

use aqmlab_core::qdisc::pels_feedback::FeedbackLabel;
use aqmlab_core::Time;
use aqmlab_model::app::pels_config::{PelsConfig, MAX_FRAME_PACKETS};
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use std::collections::VecDeque;

/// The receiver's ACK: IP + UDP headers and the echoed label (router id 4, epoch 4, loss 4).
pub const ACK_SIZE: u32 = UDP_IP_HEADER_BYTES + 12;
/// Class marks of the three colours (PELS packets are the coloured ones, see
/// `aqmlab_core::qdisc::pels_feedback::is_pels_packet`).
pub const GREEN: u8 = 3;
pub const YELLOW: u8 = 2;
pub const RED: u8 = 1;

/// MKC, eq. (8): the new rate from the rate one round trip ago and the router's loss.
pub fn mkc_step(rate_then: f64, loss: f64, alpha: f64, beta: f64) -> f64 {
    rate_then + alpha - beta * rate_then * loss
}

/// The gamma controller, eq. (5), clamped to [gamma_low, 1].
pub fn gamma_step(gamma_then: f64, fgs_loss: f64, sigma: f64, p_thr: f64, gamma_low: f64) -> f64 {
    (gamma_then + sigma * (fgs_loss / p_thr - gamma_then)).clamp(gamma_low, 1.0)
}

/// The loss of the enhancement layer when the router's loss `p` of all PELS bytes falls on it
/// alone (green is never dropped before it): p r / (r - r_base), within [0, 1].
pub fn fgs_loss(p: f64, rate: f64, base_rate: f64) -> f64 {
    let enh = rate - base_rate;
    let scaled = if enh > 0.0 { p * rate / enh } else { p };
    scaled.clamp(0.0, 1.0)
}

/// How many of a frame's packets are green, yellow and red.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FramePlan {
    pub green: u32,
    pub yellow: u32,
    pub red: u32,
}

impl FramePlan {
    pub fn total(&self) -> u32 {
        self.green + self.yellow + self.red
    }
    /// Colour of the packet at position `i` (bottom of the frame first).
    pub fn class_of(&self, i: u32) -> u8 {
        if i < self.green {
            GREEN
        } else if i < self.green + self.yellow {
            YELLOW
        } else {
            RED
        }
    }
}

/// One packet the source sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Emission {
    pub seq: u64,
    pub frame_id: u32,
    pub index: u16,
    pub count: u16,
    pub class: u8,
    pub size: u32,
}

/// One frame as sent, for the frames table.
#[derive(Clone, Copy, Debug)]
pub struct SentFrame {
    pub t: Time,
    pub id: u32,
    pub plan: FramePlan,
    pub rate_bps: f64,
    pub gamma: f64,
}

/// One applied (fresh) feedback, for the control table.
#[derive(Clone, Copy, Debug)]
pub struct ControlStep {
    pub t: Time,
    pub label: FeedbackLabel,
    pub rate_bps: f64,
    pub gamma: f64,
}

/// The FGS source with its two controllers.
pub struct PelsSender {
    cfg: PelsConfig,
    rate: f64,
    gamma: f64,
    /// Last epoch acted on, per router id.
    seen: Vec<(u32, u64)>,
    /// (first sequence number, rate, gamma) from which each setting was in effect.
    settings: VecDeque<(u64, f64, f64)>,
    plan: FramePlan,
    /// Next packet of the current frame to send.
    pos: u32,
    frame_start: Time,
    next_frame_id: u32,
    next_seq: u64,
    /// Enhancement bytes owed to the next frame (fractional packets).
    carry: f64,
    /// Fraction of a red packet owed to the next frame.
    red_carry: f64,
    pub frames: Vec<SentFrame>,
    pub control: Vec<ControlStep>,
    pub packets_sent: u64,
    pub stale_labels: u64,
}

/// Settings kept for looking up r(k - D): far more than a round trip's worth.
const SETTINGS_KEPT: usize = 4096;

impl PelsSender {
    pub fn new(cfg: PelsConfig) -> Result<PelsSender, String> {
        cfg.validate()?;
        let rate = cfg.initial_rate_bps.clamp(cfg.min_rate_bps(), cfg.max_rate_bps());
        let gamma = cfg.gamma_init;
        Ok(PelsSender {
            cfg,
            rate,
            gamma,
            seen: Vec::new(),
            settings: VecDeque::from([(0, rate, gamma)]),
            plan: FramePlan::default(),
            pos: 0,
            frame_start: Time::ZERO,
            next_frame_id: 0,
            next_seq: 0,
            carry: 0.0,
            red_carry: 0.0,
            frames: Vec::new(),
            control: Vec::new(),
            packets_sent: 0,
            stale_labels: 0,
        })
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate
    }
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
    pub fn config(&self) -> &PelsConfig {
        &self.cfg
    }

    /// The split of the next frame at the current rate and gamma (section 4.2).
    fn plan_frame(&mut self) -> FramePlan {
        let c = &self.cfg;
        let budget = self.rate / 8.0 / c.fps - (c.base_packets * c.packet_size) as f64 + self.carry;
        let room = (c.max_packets - c.base_packets) as f64;
        let enh = (budget / c.packet_size as f64).floor().clamp(0.0, room);
        self.carry = (budget - enh * c.packet_size as f64).clamp(0.0, c.packet_size as f64);
        let enh = enh as u32;
        let (partition, green) = (c.partition, c.base_packets);
        let red = if partition { self.red_packets(enh) } else { 0 };
        FramePlan { green, yellow: enh - red, red }
    }

    /// The red share gamma of `enh` enhancement packets, in whole packets. Frames at our rates
    /// carry a few enhancement packets (the paper's carry up to 105), so rounding each frame
    /// alone would make the red share a staircase of gamma (1 of 4 packets for any gamma in
    /// [0.125, 0.375)); the fraction is carried to the next frame instead, so that over frames
    /// the red share is gamma.
    fn red_packets(&mut self, enh: u32) -> u32 {
        let want = self.gamma * enh as f64 + self.red_carry;
        let red = (want.floor() as u32).min(enh);
        self.red_carry = (want - red as f64).clamp(0.0, 1.0);
        red
    }

    /// Sends the next packet (starting a new frame when the last one is complete) and returns
    /// it with the time of the following packet.
    pub fn next_packet(&mut self, now: Time) -> (Emission, Time) {
        if self.pos >= self.plan.total() {
            self.plan = self.plan_frame();
            self.pos = 0;
            self.frame_start = now;
            self.frames.push(SentFrame { t: now, id: self.next_frame_id, plan: self.plan, rate_bps: self.rate, gamma: self.gamma });
            self.next_frame_id += 1;
        }
        let total = self.plan.total();
        let e = Emission {
            seq: self.next_seq,
            frame_id: self.next_frame_id - 1,
            index: self.pos as u16,
            count: total as u16,
            class: self.plan.class_of(self.pos),
            size: self.cfg.packet_size,
        };
        self.next_seq += 1;
        self.pos += 1;
        self.packets_sent += 1;
        let interval = self.cfg.frame_interval().as_nanos();
        // Evenly paced: packet i of n leaves at frame_start + i/n of the interval.
        let next = self.frame_start + Time(interval * self.pos as u64 / total as u64);
        (e, next)
    }

    /// The rate and gamma in effect when packet `seq` was sent.
    fn setting_at(&self, seq: u64) -> (f64, f64) {
        let i = self.settings.partition_point(|&(first, _, _)| first <= seq);
        let (_, r, g) = self.settings[i.saturating_sub(1)];
        (r, g)
    }

    /// Whether `label` is newer than anything acted on from its router (section 5.2); records it.
    fn fresh(&mut self, label: &FeedbackLabel) -> bool {
        match self.seen.iter_mut().find(|(id, _)| *id == label.router_id) {
            Some((_, z)) if *z >= label.epoch => false,
            Some((_, z)) => {
                *z = label.epoch;
                true
            }
            None => {
                self.seen.push((label.router_id, label.epoch));
                label.epoch > 0
            }
        }
    }

    /// An ACK echoed `label` for data packet `seq`. Applies MKC and the gamma controller once
    /// per fresh epoch; returns whether it did.
    pub fn on_feedback(&mut self, label: FeedbackLabel, seq: u64, now: Time) -> bool {
        if !self.fresh(&label) {
            self.stale_labels += 1;
            return false;
        }
        let c = &self.cfg;
        let (rate_then, gamma_then) = self.setting_at(seq);
        self.rate = mkc_step(rate_then, label.loss, c.alpha_bps, c.beta).clamp(c.min_rate_bps(), c.max_rate_bps());
        if c.partition {
            let p = fgs_loss(label.loss, rate_then, c.min_rate_bps());
            self.gamma = gamma_step(gamma_then, p, c.sigma, c.p_thr, c.gamma_low);
        }
        if self.settings.len() >= SETTINGS_KEPT {
            self.settings.pop_front();
        }
        self.settings.push_back((self.next_seq, self.rate, self.gamma));
        self.control.push(ControlStep { t: now, label, rate_bps: self.rate, gamma: self.gamma });
        true
    }
}

/// The receiver: which packets of each frame arrived, and every packet's delay.
#[derive(Default)]
pub struct PelsReceiver {
    /// Bit i of frame f's mask: packet i of frame f arrived.
    masks: Vec<u128>,
    pub bytes: u64,
    pub packets: u64,
    /// Per received packet: flow-local frame, index, colour, send and receive times.
    pub log_frame: Vec<u32>,
    pub log_class: Vec<u8>,
    pub log_sent_ns: Vec<u64>,
    pub log_recv_ns: Vec<u64>,
}

impl PelsReceiver {
    pub fn on_data(&mut self, frame_id: u32, index: u16, class: u8, size: u32, sent: Time, now: Time) {
        let f = frame_id as usize;
        if self.masks.len() <= f {
            self.masks.resize(f + 1, 0);
        }
        if (index as u32) < MAX_FRAME_PACKETS {
            self.masks[f] |= 1u128 << index;
        }
        self.bytes += (size - UDP_IP_HEADER_BYTES) as u64;
        self.packets += 1;
        self.log_frame.push(frame_id);
        self.log_class.push(class);
        self.log_sent_ns.push(sent.as_nanos());
        self.log_recv_ns.push(now.as_nanos());
    }

    pub fn mask(&self, frame_id: u32) -> u128 {
        self.masks.get(frame_id as usize).copied().unwrap_or(0)
    }
}

/// Per-frame receiver accounting (section 3.1): what arrived of each colour, the useful
/// enhancement packets (the run received from the bottom of the enhancement layer before its
/// first loss) and the utility U = useful / received enhancement packets (eq. 3; NaN when no
/// enhancement packet arrived).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameAccount {
    pub green: u32,
    pub yellow: u32,
    pub red: u32,
    pub useful: u32,
    pub utility: f64,
}

pub fn account(plan: FramePlan, mask: u128) -> FrameAccount {
    let bits = |from: u32, n: u32| -> u32 {
        if n == 0 {
            return 0;
        }
        let m = if n >= 128 { u128::MAX } else { (1u128 << n) - 1 };
        ((mask >> from) & m).count_ones()
    };
    let (g, y, r) = (plan.green, plan.yellow, plan.red);
    let enh = y + r;
    let enh_mask = if g >= 128 { 0 } else { mask >> g };
    let useful = enh_mask.trailing_ones().min(enh);
    let received = bits(g, enh);
    FrameAccount {
        green: bits(0, g),
        yellow: bits(g, y),
        red: bits(g + y, r),
        useful,
        utility: if received > 0 { useful as f64 / received as f64 } else { f64::NAN },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PelsConfig {
        PelsConfig {
            fps: 10.0,
            packet_size: 500,
            base_packets: 3,
            max_packets: 126,
            initial_rate_bps: 128_000.0,
            alpha_bps: 20_000.0,
            beta: 0.5,
            sigma: 0.5,
            p_thr: 0.75,
            gamma_low: 0.05,
            gamma_init: 0.5,
            partition: true,
        }
    }

    fn label(router_id: u32, epoch: u64, loss: f64) -> FeedbackLabel {
        FeedbackLabel { router_id, epoch, loss }
    }

    /// Sends whole frames until `frames` are complete; returns the emissions.
    fn send_frames(s: &mut PelsSender, frames: usize) -> Vec<(Time, Emission)> {
        let mut out = Vec::new();
        let mut t = Time::ZERO;
        let target = s.frames.len() + frames;
        loop {
            let (e, next) = s.next_packet(t);
            out.push((t, e));
            t = next;
            if s.frames.len() == target && s.pos >= s.plan.total() {
                return out;
            }
        }
    }

    #[test]
    fn frames_follow_the_rate_and_split_by_gamma() {
        let mut c = cfg();
        c.initial_rate_bps = 1_000_000.0; // 12 500 B per frame: 3 green + 22 enhancement
        let mut s = PelsSender::new(c).unwrap();
        let sent = send_frames(&mut s, 10);
        let f = &s.frames[0];
        assert_eq!(f.plan, FramePlan { green: 3, yellow: 11, red: 11 }, "gamma 0.5 splits 22 evenly");
        // Colours go bottom up: green, then yellow, then red.
        let classes: Vec<u8> = sent.iter().take(25).map(|(_, e)| e.class).collect();
        assert_eq!(&classes[..3], &[GREEN; 3]);
        assert!(classes[3..14].iter().all(|&c| c == YELLOW) && classes[14..].iter().all(|&c| c == RED));
        // Paced over the 100 ms frame; the next frame starts 100 ms later.
        assert_eq!(sent[1].0, Time(100_000_000 / 25));
        assert_eq!(sent[25].0, Time::from_millis(100));
        // The long-run rate is r exactly: 10 frames of 12 500 bytes.
        let bytes: u64 = sent.iter().map(|(_, e)| e.size as u64).sum();
        assert_eq!(bytes, 125_000);
        // A rate that is not a whole number of packets carries the remainder over.
        let mut c = cfg();
        c.initial_rate_bps = 130_000.0; // 1625 B/frame: 3 green (1500 B) + 125 B owed
        let mut s = PelsSender::new(c).unwrap();
        send_frames(&mut s, 8);
        let enh: Vec<u32> = s.frames.iter().map(|f| f.plan.yellow + f.plan.red).collect();
        assert_eq!(enh, vec![0, 0, 0, 1, 0, 0, 0, 1]);
    }

    #[test]
    fn the_red_share_over_frames_is_gamma_even_for_small_frames() {
        let mut c = cfg();
        c.initial_rate_bps = 280_000.0; // 3500 B per frame: 3 green + 4 enhancement packets
        c.gamma_init = 0.3;
        let mut s = PelsSender::new(c).unwrap();
        send_frames(&mut s, 100);
        let (red, enh) = s.frames.iter().fold((0, 0), |(r, e), f| (r + f.plan.red, e + f.plan.red + f.plan.yellow));
        assert_eq!(enh, 400);
        // 30 % of the enhancement packets (to within the one packet still owed), not
        // round(0.3 x 4) = 1 of every 4.
        assert!((119..=120).contains(&red), "{red}");
        assert!(s.frames.iter().all(|f| f.plan.red <= 2));
    }

    #[test]
    fn best_effort_sends_no_red() {
        let mut c = cfg();
        c.partition = false;
        c.initial_rate_bps = 2_000_000.0;
        let mut s = PelsSender::new(c).unwrap();
        send_frames(&mut s, 2);
        assert_eq!(s.frames[0].plan, FramePlan { green: 3, yellow: 47, red: 0 });
        // MKC still runs; gamma is untouched.
        assert!(s.on_feedback(label(1, 1, 0.2), 10, Time::ZERO));
        assert_eq!(s.gamma(), 0.5);
        assert!((s.rate_bps() - (2e6 + 20e3 - 0.5 * 2e6 * 0.2)).abs() < 1e-6);
    }

    #[test]
    fn mkc_once_per_fresh_epoch_per_router() {
        let mut s = PelsSender::new(cfg()).unwrap();
        send_frames(&mut s, 1);
        // Epoch 0 is the router's "nothing measured yet": ignored.
        assert!(!s.on_feedback(label(1, 0, -3.0), 0, Time::ZERO));
        assert_eq!(s.rate_bps(), 128_000.0);
        // p = -1: r = 128k + 20k + 0.5 * 128k.
        assert!(s.on_feedback(label(1, 5, -1.0), 0, Time::ZERO));
        assert!((s.rate_bps() - 212_000.0).abs() < 1e-6);
        // The same epoch again (another packet of the same interval), and an older one: ignored.
        assert!(!s.on_feedback(label(1, 5, -1.0), 1, Time::ZERO));
        assert!(!s.on_feedback(label(1, 4, -1.0), 2, Time::ZERO));
        assert!((s.rate_bps() - 212_000.0).abs() < 1e-6);
        assert_eq!(s.stale_labels, 3);
        // Another router's epochs are tracked on their own (a bottleneck shift).
        assert!(s.on_feedback(label(2, 3, 0.0), 3, Time::ZERO));
        assert_eq!(s.control.len(), 2);
    }

    #[test]
    fn mkc_uses_the_rate_the_labelled_packet_was_sent_at() {
        let mut s = PelsSender::new(cfg()).unwrap();
        send_frames(&mut s, 1); // seqs 0..=2 at 128 kb/s
        assert!(s.on_feedback(label(1, 1, -1.0), 0, Time::ZERO)); // r = 212 kb/s from seq 3
        send_frames(&mut s, 1);
        // A label echoed for seq 1 (sent at 128 kb/s): r(k - D) = 128 kb/s, not 212.
        assert!(s.on_feedback(label(1, 2, 0.0), 1, Time::ZERO));
        assert!((s.rate_bps() - 148_000.0).abs() < 1e-6, "{}", s.rate_bps());
        // For a packet sent after the change, the newer setting.
        let seq = s.next_seq - 1;
        assert!(s.on_feedback(label(1, 3, 0.0), seq, Time::ZERO));
        assert!((s.rate_bps() - 232_000.0).abs() < 1e-6, "{}", s.rate_bps());
    }

    #[test]
    fn mkc_converges_to_c_over_n_plus_alpha_over_beta() {
        // Eq. (8) with eq. (9) in closed loop, two flows, no delay: r* = C/N + alpha/beta.
        let c = 2e6;
        // Fairness converges by (1 - beta p*) per step, p* = 3.8 %: slowly, hence 2000 steps.
        let mut r = [128e3, 900e3];
        for _ in 0..2000 {
            let total: f64 = r.iter().sum();
            let p = (total - c) / total;
            r = r.map(|ri| mkc_step(ri, p, 20e3, 0.5));
        }
        for ri in r {
            assert!((ri - 1.04e6).abs() < 1.0, "{ri}");
        }
    }

    #[test]
    fn gamma_converges_to_p_over_p_thr_and_is_clamped() {
        let mut g = 0.5;
        for _ in 0..60 {
            g = gamma_step(g, 0.5, 0.5, 0.75, 0.05);
        }
        assert!((g - 0.5 / 0.75).abs() < 1e-9);
        assert_eq!(gamma_step(0.5, 0.0, 0.5, 0.75, 0.05), 0.25);
        assert_eq!(gamma_step(0.06, 0.0, 0.5, 0.75, 0.05), 0.05, "floor gamma_low");
        assert_eq!(gamma_step(0.9, 1.0, 0.5, 0.75, 0.05), 1.0, "ceiling 1");
        // sigma = 3 diverges (Lemma 2): the unclamped error grows each step.
        let (mut g, target) = (0.5f64, 0.5 / 0.75);
        let mut err = (g - target).abs();
        for _ in 0..5 {
            g += 3.0 * (0.5 / 0.75 - g);
            let e = (g - target).abs();
            assert!(e > err);
            err = e;
        }
    }

    #[test]
    fn the_enhancement_layer_bears_the_routers_loss() {
        // 1 Mb/s with a 120 kb/s base: 10 % of all PELS bytes is 11.36 % of the enhancement.
        assert!((fgs_loss(0.1, 1e6, 120e3) - 0.1 / 0.88).abs() < 1e-12);
        assert_eq!(fgs_loss(-2.0, 1e6, 120e3), 0.0);
        assert_eq!(fgs_loss(0.95, 1e6, 120e3), 1.0);
    }

    #[test]
    fn feedback_moves_gamma_with_the_fgs_loss() {
        let mut c = cfg();
        c.initial_rate_bps = 1_200_000.0;
        let mut s = PelsSender::new(c).unwrap();
        send_frames(&mut s, 1);
        // p = 0.09 of all bytes at 1.2 Mb/s with a 120 kb/s base: 0.1 of the FGS layer.
        assert!(s.on_feedback(label(1, 1, 0.09), 0, Time::ZERO));
        let want = 0.5 + 0.5 * (0.1 / 0.75 - 0.5);
        assert!((s.gamma() - want).abs() < 1e-12, "{}", s.gamma());
    }

    #[test]
    fn receiver_accounting_per_frame() {
        let plan = FramePlan { green: 3, yellow: 5, red: 4 };
        // All green, enhancement 0, 1, 2 then a gap at 3, then 4 and two reds.
        let mask: u128 = 0b111 | (0b10111 << 3) | (0b0101 << 8);
        let a = account(plan, mask);
        assert_eq!((a.green, a.yellow, a.red, a.useful), (3, 4, 2, 3));
        assert!((a.utility - 3.0 / 6.0).abs() < 1e-12);
        let full = account(plan, (1u128 << 12) - 1);
        assert_eq!((full.useful, full.utility), (9, 1.0));
        let none = account(plan, 0b111);
        assert_eq!(none.useful, 0);
        assert!(none.utility.is_nan());
        // The mask's top bits belong to a frame of 128 packets.
        let big = FramePlan { green: 21, yellow: 100, red: 7 };
        assert_eq!(account(big, u128::MAX).useful, 107);
        let mut r = PelsReceiver::default();
        r.on_data(2, 5, YELLOW, 500, Time::ZERO, Time::from_millis(20));
        assert_eq!(r.mask(2), 1 << 5);
        assert_eq!((r.mask(0), r.mask(9)), (0, 0));
        assert_eq!(r.bytes, 472);
    }
}
