//! SCReAMv2 (draft-johansson-ccwg-rfc8298bis-screamv2, the L4S-capable update that obsoletes
//! RFC 8298) for the RTP video sender, in place of GCC (`congestion_control = "scream"`).
//!
//! SCReAM is self-clocked: the encoder's packets queue at the sender ([`rtp_queue`]) and leave
//! only while the bytes in flight stay under the reference window times its overhead, paced
//! ([`send_window`]). Each feedback report ([`feedback`], the GCC path's report with the
//! CE-marked arrivals added) updates the queue delay and RTT ([`queue_delay`]), the L4S marked
//! fraction ([`l4s_alpha`]), the reference window ([`ref_wnd`]) and from it the encoder's target
//! ([`media_rate`]).
//!
//! ECN: a sender marking ECT(1) runs in L4S mode (IS_L4S, the back-off proportional to
//! l4s_alpha); ECT(0), classic ECN (BETA_ECN); Not-ECT, loss and delay only.

pub mod feedback;
pub mod l4s_alpha;
pub mod media_rate;
pub mod queue_delay;
pub mod ref_wnd;
pub mod rtp_queue;
pub mod send_window;

use super::gcc::FeedbackReport;
use aqmlab_core::Time;
use l4s_alpha::L4sAlpha;
use media_rate::MediaRate;
use queue_delay::QueueDelay;
use ref_wnd::{RefWnd, Signals};
use rtp_queue::{Queued, RtpQueue};

/// SCReAM's settings for an RTP video flow (`congestion_control = "scream"`): the call's
/// shared settings.
pub type ScreamConfig = super::call_config::CallConfig;

/// How the sender reads CE marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMode {
    /// Not-ECT: no marks expected.
    Off,
    /// ECT(0): classic ECN, BETA_ECN.
    Classic,
    /// ECT(1): L4S.
    L4s,
}

/// The sender's state after one report, for the `scream_rate` table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScreamSample {
    pub t: Time,
    pub target_bps: f64,
    pub ref_wnd: f64,
    pub bytes_in_flight: u64,
    pub s_rtt: f64,
    pub qdelay: f64,
    pub qdelay_avg: f64,
    pub l4s_alpha: f64,
    /// 0 none, 1 loss, 2 CE, 3 queue delay (virtual CE).
    pub reaction: u8,
    pub lost: u64,
    pub ce: u64,
    pub rtp_queue_delay: f64,
}

/// What the sender may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Send this packet now (its sequence number, IP size and frame).
    Send { seq: u64, size: u32, frame: u32 },
    /// The pacer holds the next packet until then.
    WaitUntil(Time),
    /// The send window is full: wait for feedback.
    Blocked,
    /// Nothing queued.
    Empty,
}

pub struct ScreamSender {
    cfg: ScreamConfig,
    mss: f64,
    frame_period: f64,
    ecn: EcnMode,
    /// Send time and IP size of every packet sent, by sequence number.
    sent: Vec<(Time, u32)>,
    highest_acked: Option<u64>,
    pub bytes_in_flight: u64,
    max_bif: u64,
    max_bif_prev: u64,
    last_bif_rotate: Time,
    next_send_at: Time,
    delay: QueueDelay,
    alpha: L4sAlpha,
    pub wnd: RefWnd,
    media: MediaRate,
    pub queue: RtpQueue,
    pub target_bps: f64,
    pub samples: Vec<ScreamSample>,
}

impl ScreamSender {
    /// `mss`: the largest packet (the call's MTU; the draft's MSS, 1000 by default, is the
    /// largest data unit); `fps`: the encoder's frame rate.
    pub fn new(cfg: ScreamConfig, mss: u32, fps: f64, ecn: EcnMode) -> Result<ScreamSender, String> {
        cfg.validate("scream")?;
        let target = cfg.start_rate_bps as f64;
        Ok(ScreamSender {
            cfg,
            mss: mss as f64,
            frame_period: 1.0 / fps,
            ecn,
            sent: Vec::new(),
            highest_acked: None,
            bytes_in_flight: 0,
            max_bif: 0,
            max_bif_prev: 0,
            last_bif_rotate: Time::ZERO,
            next_send_at: Time::ZERO,
            delay: QueueDelay::default(),
            alpha: L4sAlpha::default(),
            wnd: RefWnd::new(mss as f64, ecn == EcnMode::L4s),
            media: MediaRate::default(),
            queue: RtpQueue::default(),
            target_bps: target,
            samples: Vec::new(),
        })
    }

    /// The encoder made a frame of `payload` bytes cut into packets of `sizes` (IP bytes).
    pub fn on_frame(&mut self, frame: u32, payload: u64, sizes: &[u32], now: Time) {
        self.media.on_frame(self.queue.delay(now), self.frame_period, payload as f64, self.target_bps);
        for &size in sizes {
            self.queue.push(Queued { at: now, size, frame });
        }
    }

    /// The next packet to send at `now`, if the queue, the pacer and the window allow.
    pub fn poll(&mut self, now: Time) -> Poll {
        self.queue.discard_stale(now);
        let Some(&head) = self.queue.front() else { return Poll::Empty };
        if now < self.next_send_at {
            return Poll::WaitUntil(self.next_send_at);
        }
        let overhead = send_window::ref_wnd_overhead(QueueDelay::dev_norm_th(self.wnd.ratio()), self.delay.qdelay_dev_norm);
        if !send_window::may_send(self.wnd.ref_wnd, overhead, self.bytes_in_flight as f64) {
            return Poll::Blocked;
        }
        self.queue.pop();
        let seq = self.sent.len() as u64;
        self.sent.push((now, head.size));
        self.bytes_in_flight += head.size as u64;
        self.max_bif = self.max_bif.max(self.bytes_in_flight);
        let pace = send_window::t_pace(head.size, self.target_bps, self.cfg.max_rate_bps as f64);
        self.next_send_at = now + Time::from_secs_f64(pace);
        Poll::Send { seq, size: head.size, frame: head.frame }
    }

    /// A report reached the sender at `now`: updates the window and returns the new target.
    pub fn on_feedback(&mut self, r: &FeedbackReport, now: Time) -> f64 {
        let d = feedback::digest(r, &self.sent, self.highest_acked);
        for &(sent, at) in &d.delays {
            self.delay.on_owd(sent, at);
        }
        if let Some(top) = d.highest {
            // RTT from the newest packet acknowledged, the report's wait included (the self-clock
            // runs on it too).
            self.delay.on_rtt(now.saturating_sub(self.sent[top as usize].0).as_secs_f64());
            self.highest_acked = Some(top);
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(d.bytes_newly_acked);
        }
        let Some(s_rtt) = self.delay.s_rtt else { return self.target_bps };
        if now.saturating_sub(self.last_bif_rotate).as_secs_f64() >= s_rtt {
            self.max_bif_prev = self.max_bif;
            self.max_bif = self.bytes_in_flight;
            self.last_bif_rotate = now;
        }
        let ratio = self.wnd.ratio();
        self.delay.update_avg(now, ratio);
        let ce = self.ecn != EcnMode::Off && d.packets_ce > 0;
        if self.ecn == EcnMode::L4s {
            self.alpha.on_feedback(d.packets_acked, d.packets_ce, now, s_rtt);
        }
        let max = self.cfg.max_rate_bps as f64;
        let signals = Signals {
            now: now.as_secs_f64(),
            s_rtt,
            loss: d.lost > 0,
            ce,
            l4s_alpha: self.alpha.alpha,
            qdelay: self.delay.qdelay,
            qdelay_avg: self.delay.qdelay_avg,
            dev_scale: self.delay.dev_scale(ratio),
            bytes_newly_acked: d.bytes_newly_acked as f64,
            bytes_newly_acked_ce: d.bytes_newly_acked_ce as f64,
            max_bytes_in_flight: self.max_bif as f64,
            max_bytes_in_flight_prev: self.max_bif_prev as f64,
            target_at_max: self.target_bps >= max,
        };
        let reaction = self.wnd.update(&signals);
        self.target_bps = self.media.target(self.wnd.ref_wnd, self.wnd.ratio(), self.mss, s_rtt, self.cfg.min_rate_bps as f64, max);
        self.samples.push(ScreamSample {
            t: now,
            target_bps: self.target_bps,
            ref_wnd: self.wnd.ref_wnd,
            bytes_in_flight: self.bytes_in_flight,
            s_rtt,
            qdelay: self.delay.qdelay,
            qdelay_avg: self.delay.qdelay_avg,
            l4s_alpha: self.alpha.alpha,
            reaction: reaction as u8,
            lost: d.lost,
            ce: d.packets_ce,
            rtp_queue_delay: self.queue.delay(now),
        });
        self.target_bps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::gcc::FeedbackBuilder;

    fn cfg() -> ScreamConfig {
        ScreamConfig {
            start_rate_bps: 300_000,
            min_rate_bps: 100_000,
            max_rate_bps: 10_000_000,
            feedback_interval_ns: 40_000_000,
            key_interval: 0,
            key_ratio: 1.0,
            fluctuation: 0.0,
            reaction_lag_ns: 0,
            deadline_ns: 150_000_000,
        }
    }

    #[test]
    fn bad_rates_are_refused_by_name() {
        let mut c = cfg();
        c.min_rate_bps = 400_000;
        assert!(ScreamSender::new(c, 1200, 30.0, EcnMode::Off).err().unwrap().contains("min_rate"));
    }

    #[test]
    fn the_window_and_the_pacer_hold_packets_back() {
        let mut c = cfg();
        c.start_rate_bps = 3_000_000;
        let mut s = ScreamSender::new(c, 1000, 30.0, EcnMode::Off).unwrap();
        s.on_frame(0, 20_000, &[1000; 20], Time::ZERO);
        let mut now = Time::ZERO;
        let mut sent = 0;
        loop {
            match s.poll(now) {
                Poll::Send { .. } => sent += 1,
                Poll::WaitUntil(t) => now = t,
                Poll::Blocked | Poll::Empty => break,
            }
        }
        // 3000 B window x 3.0 overhead: 9 packets of 1000 B, then blocked.
        assert_eq!(sent, 9);
        assert_eq!(s.poll(now), Poll::Blocked);
        // Paced at 1.5 x 3 Mbit/s: 1000 B every 1.78 ms; the 9th packet's gap passes before
        // the window is checked.
        assert!((now.as_secs_f64() - 9.0 * 8000.0 / 4.5e6).abs() < 1e-6, "{now:?}");
        // With no feedback the other 11 wait; past 100 ms in the queue they are discarded.
        assert_eq!(s.poll(Time::from_millis(100)), Poll::Blocked);
        assert_eq!(s.poll(Time::from_millis(101)), Poll::Empty);
        assert_eq!(s.queue.discarded, 11);
    }

    /// CE marks cut the window only when the flow is ECN-capable: classic mode by BETA_ECN,
    /// a Not-ECT sender not at all (a CE mark there would be a network bug).
    #[test]
    fn ce_acts_by_the_ecn_mode() {
        let run = |mode| {
            let mut s = ScreamSender::new(cfg(), 1000, 30.0, mode).unwrap();
            s.on_frame(0, 2000, &[1000, 1000], Time::ZERO);
            assert!(matches!(s.poll(Time::ZERO), Poll::Send { .. }));
            assert!(matches!(s.poll(Time::from_millis(50)), Poll::Send { .. }));
            let r = FeedbackReport {
                base: 0,
                end: 2,
                arrivals: vec![(0, Time::from_millis(70)), (1, Time::from_millis(71))],
                ce: vec![1],
                made: Time::from_millis(75),
            };
            s.on_feedback(&r, Time::from_millis(100));
            (s.wnd.ref_wnd, s.samples[0].reaction)
        };
        // From MIN_REF_WND (3000 B) with 2000 B acknowledged: the plain sender grows, the
        // classic one is cut to 2400 B before its increase (at most one MSS).
        let (plain, r0) = run(EcnMode::Off);
        assert_eq!(r0, 0);
        assert!(plain > 3000.0, "{plain}");
        let (classic, r2) = run(EcnMode::Classic);
        assert_eq!(r2, 2);
        assert!(classic < 3000.0 * 0.8 + 1000.0, "{classic}");
    }

    /// A sender whose packets cross a 2 Mbit/s path with 20 ms one-way delay: the window and
    /// the target climb while the queue stays empty, and a standing queue above 30 ms brings
    /// the window down.
    #[test]
    fn a_free_path_raises_the_target_and_queue_delay_cuts_it() {
        let mut s = ScreamSender::new(cfg(), 1200, 30.0, EcnMode::Off).unwrap();
        let mut fb = FeedbackBuilder::default();
        let mut now = Time::ZERO;
        let mut next_frame = Time::ZERO;
        let mut next_fb = Time::from_millis(40);
        let mut link_free = Time::ZERO;
        let mut frame = 0;
        let mut extra = Time::ZERO;
        let mut reports = Vec::new();
        let mut in_flight: Vec<(Time, u64)> = Vec::new();
        while now < Time::from_secs(20) {
            if now >= next_frame {
                let bytes = (s.target_bps / 8.0 / 30.0) as u64;
                let sizes = crate::app::rtp::packetize(bytes, 1200);
                s.on_frame(frame, bytes, &sizes, now);
                frame += 1;
                next_frame += Time::from_nanos(33_333_333);
            }
            while let Poll::Send { seq, size, .. } = s.poll(now) {
                // A 2 Mbit/s bottleneck (FIFO, no loss), 20 ms each way; from 10 s a standing
                // 60 ms of extra delay.
                let start = link_free.max(now);
                link_free = start + Time::from_secs_f64(size as f64 * 8.0 / 2e6);
                in_flight.push((link_free + Time::from_millis(20) + extra, seq));
            }
            while in_flight.first().is_some_and(|&(t, _)| t <= now) {
                let (t, seq) = in_flight.remove(0);
                fb.on_packet(seq, t);
            }
            if now >= next_fb {
                if let Some(r) = fb.take(now) {
                    reports.push((now + Time::from_millis(20), r));
                }
                next_fb += Time::from_millis(40);
            }
            while reports.first().is_some_and(|(t, _)| *t <= now) {
                let (_, r) = reports.remove(0);
                s.on_feedback(&r, now);
            }
            if now >= Time::from_secs(10) {
                extra = Time::from_millis(60);
            }
            now += Time::from_millis(1);
        }
        let at = |t: u64| s.samples.iter().rfind(|x| x.t < Time::from_secs(t)).unwrap();
        // Near the link rate before 10 s (the target excludes the 1.2 headroom and overheads).
        assert!(at(10).target_bps > 1.2e6, "{:?}", at(10));
        assert!(s.samples.iter().filter(|x| x.t > Time::from_secs(10)).any(|x| x.reaction == 3));
    }
}
