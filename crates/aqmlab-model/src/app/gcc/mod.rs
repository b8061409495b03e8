//! Google Congestion Control (draft-ietf-rmcat-gcc-02) for the RTP video source: the
//! send-side estimator driven by transport-wide feedback, as WebRTC runs it.
//!
//! The receiver records each packet's transport-wide sequence number and arrival time and
//! reports them every `feedback_interval` ([`FeedbackBuilder`]; the report is what
//! draft-holmer-rmcat-transport-wide-cc-extensions-01 section 3.1 carries). The sender
//! ([`GccSender`]) keeps each packet's send time and size; on each report it:
//! 1. groups the reported packets and takes the inter-group delay variation ([`inter_arrival`],
//!    draft sections 5.1-5.2);
//! 2. estimates its trend ([`trendline`], in place of section 5.3's Kalman filter);
//! 3. detects over-use against the adaptive threshold ([`overuse`], section 5.4);
//! 4. updates the delay-based rate A_hat ([`aimd`], section 5.5) with the incoming rate R_hat,
//!    the bytes the receiver got over the last 500 ms of arrivals (section 5.5 asks for a
//!    window of 0.5-1 s);
//! 5. applies the reports' losses to the loss-based rate As_hat ([`loss_based`], section 6).
//!
//! The target rate is `min(A_hat, As_hat)` within [min, max]; the encoder
//! ([`super::synthetic_codec`]) follows it.

pub mod aimd;
pub mod inter_arrival;
pub mod loss_based;
pub mod overuse;
pub mod trendline;

use crate::headers::UDP_IP_HEADER_BYTES;
use crate::record::{Column, Table};
use aimd::AimdRateControl;
use aqmlab_core::Time;
use inter_arrival::InterArrival;
use loss_based::LossBased;
use overuse::{OveruseDetector, Signal};
use std::collections::VecDeque;
use trendline::Trendline;

/// The window of arrivals R_hat is measured over (section 5.5: 0.5 to 1 s).
pub const INCOMING_WINDOW: Time = Time::from_millis(500);

/// GCC's settings for an RTP video flow (`congestion_control = "gcc"`): the call's
/// shared settings.
pub type GccConfig = super::call_config::CallConfig;

/// One transport-wide feedback report: the sequence numbers `[base, end)` it covers and the
/// arrivals among them (and any earlier, reordered ones), with when it was made.
#[derive(Clone, Debug, PartialEq)]
pub struct FeedbackReport {
    pub base: u64,
    pub end: u64,
    pub arrivals: Vec<(u64, Time)>,
    /// Those of `arrivals` that came ECN-CE marked (SCReAM's L4S and ECN responses need them,
    /// as RFC 8888 reports them; GCC ignores them).
    pub ce: Vec<u64>,
    pub made: Time,
}

impl FeedbackReport {
    /// IP size of the report: IP/UDP, the 20-byte transport-wide feedback header (RTCP header,
    /// SSRCs, base sequence, count, reference time, feedback count: draft-holmer section 3.1),
    /// one 2-byte status chunk per 7 packets and one byte of receive delta per packet received
    /// (the small-delta case), rounded up to 4 bytes.
    pub fn size(&self) -> u32 {
        let covered = (self.end - self.base) as u32;
        let body = 20 + covered.div_ceil(7) * 2 + self.arrivals.len() as u32;
        UDP_IP_HEADER_BYTES + body.div_ceil(4) * 4
    }

    /// IP size of the same report as RFC 8888 congestion control feedback (section 3.1): IP/UDP,
    /// the 8-byte RTCP header with the sender's SSRC, one report block of SSRC, begin and
    /// count (8 bytes) with a 2-byte metric per packet covered (received flag, ECN, arrival
    /// time offset) padded to 4 bytes, and the 4-byte report timestamp.
    pub fn size_rfc8888(&self) -> u32 {
        let covered = (self.end - self.base) as u32;
        UDP_IP_HEADER_BYTES + 8 + 8 + (2 * covered).div_ceil(4) * 4 + 4
    }
}

/// The receiver's side: arrivals since the last report.
#[derive(Clone, Debug, Default)]
pub struct FeedbackBuilder {
    next_base: u64,
    end: u64,
    arrivals: Vec<(u64, Time)>,
    ce: Vec<u64>,
}

impl FeedbackBuilder {
    pub fn on_packet(&mut self, seq: u64, now: Time) {
        self.arrivals.push((seq, now));
        self.end = self.end.max(seq + 1);
    }

    /// A packet arrived with its ECN field CE (`ce`) or not.
    pub fn on_packet_ecn(&mut self, seq: u64, now: Time, ce: bool) {
        self.on_packet(seq, now);
        if ce {
            self.ce.push(seq);
        }
    }

    /// The report due at `now`, if anything arrived since the last one.
    pub fn take(&mut self, now: Time) -> Option<FeedbackReport> {
        if self.arrivals.is_empty() {
            return None;
        }
        let r = FeedbackReport {
            base: self.next_base,
            end: self.end,
            arrivals: std::mem::take(&mut self.arrivals),
            ce: std::mem::take(&mut self.ce),
            made: now,
        };
        self.next_base = self.end;
        Some(r)
    }
}

/// The estimator's state after one report, for the `gcc_rate` table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    pub t: Time,
    pub target_bps: f64,
    pub delay_based_bps: f64,
    pub loss_based_bps: f64,
    pub incoming_bps: f64,
    pub state: u8,
    /// 0 normal, 1 over-use, 2 under-use.
    pub signal: u8,
    pub trend: f64,
    pub threshold_ms: f64,
    pub loss: f64,
    pub rtt: Time,
}

pub struct GccSender {
    cfg: GccConfig,
    /// Send time and IP size of every packet, by sequence number (numbered from 0).
    sent: Vec<(Time, u32)>,
    inter_arrival: InterArrival,
    trendline: Trendline,
    detector: OveruseDetector,
    aimd: AimdRateControl,
    loss: LossBased,
    /// Arrivals reported in the last `INCOMING_WINDOW`: (arrival, IP bytes).
    received: VecDeque<(Time, u32)>,
    received_bytes: u64,
    rtt: Time,
    pub target_bps: f64,
    pub samples: Vec<RateSample>,
}

impl GccSender {
    pub fn new(cfg: GccConfig) -> Result<GccSender, String> {
        cfg.validate("gcc")?;
        let start = cfg.start_rate_bps as f64;
        let aimd = AimdRateControl::new(start, cfg.min_rate_bps as f64, cfg.max_rate_bps as f64);
        Ok(GccSender {
            cfg,
            sent: Vec::new(),
            inter_arrival: InterArrival::default(),
            trendline: Trendline::default(),
            detector: OveruseDetector::default(),
            aimd,
            loss: LossBased::new(start),
            received: VecDeque::new(),
            received_bytes: 0,
            rtt: Time::from_millis(100),
            target_bps: start,
            samples: Vec::new(),
        })
    }

    /// Packet `seq` (the next number) leaves at `now` with `size` IP bytes.
    pub fn on_sent(&mut self, seq: u64, size: u32, now: Time) {
        debug_assert_eq!(seq, self.sent.len() as u64);
        self.sent.push((now, size));
    }

    /// R_hat: bytes reported received over the last window of arrivals, bit/s (None until the
    /// arrivals span 100 ms).
    fn incoming_bps(&self) -> Option<f64> {
        let (first, last) = (self.received.front()?.0, self.received.back()?.0);
        let span = last.saturating_sub(first);
        (span >= Time::from_millis(100)).then(|| self.received_bytes as f64 * 8.0 / span.as_secs_f64())
    }

    /// A report reached the sender at `now`: runs the estimator and returns the new target.
    pub fn on_feedback(&mut self, r: &FeedbackReport, now: Time) -> f64 {
        let mut arrivals: Vec<(u64, Time)> = r.arrivals.iter().copied().filter(|(s, _)| (*s as usize) < self.sent.len()).collect();
        arrivals.sort_by_key(|&(s, t)| (t, s));
        for &(seq, at) in &arrivals {
            let (sent_at, size) = self.sent[seq as usize];
            if let Some(d) = self.inter_arrival.on_packet(sent_at, at) {
                let m = self.trendline.update(&d);
                self.detector.detect(m, d.send_delta_ms, d.arrival_ms);
            }
            self.received.push_back((at, size));
            self.received_bytes += size as u64;
        }
        if let Some(&(last, _)) = self.received.back() {
            while self.received.front().is_some_and(|&(t, _)| t + INCOMING_WINDOW < last) {
                let (_, s) = self.received.pop_front().unwrap();
                self.received_bytes -= s as u64;
            }
        }
        // RTT from the newest packet reported, less the time it waited for the report.
        if let Some(&(seq, at)) = arrivals.iter().max_by_key(|&&(s, _)| s) {
            let sent_at = self.sent[seq as usize].0;
            self.rtt = now.saturating_sub(sent_at).saturating_sub(r.made.saturating_sub(at));
        }
        let incoming = self.incoming_bps();
        let signal = self.detector.signal;
        let a_hat = self.aimd.update(signal, incoming, self.rtt, now);
        let covered = r.end.saturating_sub(r.base);
        let got = r.arrivals.iter().filter(|(s, _)| (r.base..r.end).contains(s)).count() as u64;
        let as_hat = self.loss.on_feedback(covered, covered - got.min(covered), a_hat);
        self.target_bps = a_hat.min(as_hat).clamp(self.cfg.min_rate_bps as f64, self.cfg.max_rate_bps as f64);
        self.samples.push(RateSample {
            t: now,
            target_bps: self.target_bps,
            delay_based_bps: a_hat,
            loss_based_bps: as_hat,
            incoming_bps: incoming.unwrap_or(f64::NAN),
            state: self.aimd.state.code(),
            signal: match signal {
                Signal::Normal => 0,
                Signal::Overuse => 1,
                Signal::Underuse => 2,
            },
            trend: self.trendline.modified(),
            threshold_ms: self.detector.threshold_ms,
            loss: self.loss.last_loss,
            rtt: self.rtt,
        });
        self.target_bps
    }
    /// `gcc_rate`: one row per report applied (`samples`), of call `f`.
    pub fn rate_table(&self, f: u32) -> Table {
        let s = &self.samples;
        let col = |g: &dyn Fn(&RateSample) -> f64| Column::F64(s.iter().map(g).collect());
        vec![
            ("flow", Column::U32(vec![f; s.len()])),
            ("t_ns", Column::U64(s.iter().map(|x| x.t.as_nanos()).collect())),
            ("target_bps", col(&|x| x.target_bps)),
            ("delay_based_bps", col(&|x| x.delay_based_bps)),
            ("loss_based_bps", col(&|x| x.loss_based_bps)),
            ("incoming_bps", col(&|x| x.incoming_bps)),
            ("state", Column::U8(s.iter().map(|x| x.state).collect())),
            ("signal", Column::U8(s.iter().map(|x| x.signal).collect())),
            ("trend", col(&|x| x.trend)),
            ("threshold_ms", col(&|x| x.threshold_ms)),
            ("loss", col(&|x| x.loss)),
            ("rtt_ns", Column::U64(s.iter().map(|x| x.rtt.as_nanos()).collect())),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> GccConfig {
        GccConfig {
            start_rate_bps: 300_000,
            min_rate_bps: 100_000,
            max_rate_bps: 10_000_000,
            feedback_interval_ns: 50_000_000,
            key_interval: 0,
            key_ratio: 1.0,
            fluctuation: 0.0,
            reaction_lag_ns: 0,
            deadline_ns: 150_000_000,
        }
    }

    #[test]
    fn reports_cover_consecutive_ranges_and_count_losses() {
        let mut b = FeedbackBuilder::default();
        assert_eq!(b.take(Time::ZERO), None);
        b.on_packet(0, Time::from_millis(10));
        b.on_packet(2, Time::from_millis(12));
        let r = b.take(Time::from_millis(50)).unwrap();
        assert_eq!((r.base, r.end, r.arrivals.len()), (0, 3, 2));
        b.on_packet(1, Time::from_millis(60)); // reordered, reported later
        b.on_packet(3, Time::from_millis(61));
        let r2 = b.take(Time::from_millis(100)).unwrap();
        assert_eq!((r2.base, r2.end), (3, 4));
        assert_eq!(r2.arrivals, vec![(1, Time::from_millis(60)), (3, Time::from_millis(61))]);
        // 28 + (20 + 2 + 2) = 52 bytes.
        assert_eq!(r.size(), 52);
    }

    #[test]
    fn bad_rates_are_refused_by_name() {
        let mut c = cfg();
        c.min_rate_bps = 400_000;
        assert!(GccSender::new(c).err().unwrap().contains("min_rate"));
        let mut c = cfg();
        c.fluctuation = 1.5;
        assert!(GccSender::new(c).err().unwrap().contains("fluctuation"));
    }

    /// A sender at 1 Mbit/s (1000 B packets every 8 ms) whose packets cross a path with a
    /// constant delay: no over-use, the target climbs 8 % a second; then a queue building 1 ms
    /// per packet: over-use within the window, the target falls to 0.85 of the incoming rate.
    #[test]
    fn a_steady_path_raises_the_target_and_a_growing_queue_cuts_it() {
        let mut g = GccSender::new(cfg()).unwrap();
        let mut fb = FeedbackBuilder::default();
        let mut queue_ms = 0.0;
        let mut last_report = Time::ZERO;
        let mut saw_overuse_at = None;
        for i in 0..1000u64 {
            let now = Time::from_millis(8 * i);
            if i >= 500 {
                queue_ms += 1.0;
            }
            g.on_sent(i, 1000, now);
            fb.on_packet(i, now + Time::from_millis(20) + Time::from_secs_f64(queue_ms / 1000.0));
            if now >= last_report + Time::from_millis(50) {
                last_report = now;
                if let Some(r) = fb.take(now + Time::from_millis(20)) {
                    g.on_feedback(&r, now + Time::from_millis(40));
                }
                let s = g.samples.last().unwrap();
                if s.signal == 1 && saw_overuse_at.is_none() {
                    saw_overuse_at = Some(i);
                }
            }
        }
        let before = g.samples.iter().rfind(|s| s.t < Time::from_millis(4000)).unwrap();
        // Rises from 300 kbit/s (capped at 1.5 x the 1 Mbit/s incoming rate).
        assert!(before.target_bps > 300_000.0 * 1.08f64.powf(3.0), "{before:?}");
        assert_eq!(g.samples.iter().filter(|s| s.t < Time::from_millis(4000)).filter(|s| s.signal == 1).count(), 0);
        let at = saw_overuse_at.expect("the growing queue must be detected");
        // Detected within 20 groups plus a feedback interval of the onset (packet 500).
        assert!(at < 500 + 30, "{at}");
        let last = g.samples.last().unwrap();
        assert!(last.target_bps <= 0.85 * 1.04e6, "{last:?}");
    }
}
