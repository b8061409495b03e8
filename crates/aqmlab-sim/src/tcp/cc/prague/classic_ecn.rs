//! Prague's detection of a classic ECN AQM at the bottleneck, and its fall-back to a
//! Reno-friendly response there (draft-briscoe-iccrg-prague-congestion-control, "Fall-back to
//! Reno-friendly on Classic ECN bottleneck"; Briscoe and Ahmed, "TCP Prague Fall-back on
//! Detection of a Classic ECN AQM", arXiv:1911.00710; the L4S team's Linux
//! `net/ipv4/tcp_prague.c`, `prague_classic_ecn_detection`, `prague_classic_ecn_fallback`,
//! `prague_rtt_estimator`, `prague_update_rtt_scaling`).
//!
//! Why: a classic (RFC 3168) AQM marks as it would drop, a few marks per sawtooth, with a
//! queue of a few milliseconds that the marks keep standing. DCTCP's response to such sparse
//! marks is a small reduction (alpha / 2 with alpha near the small marked fraction), so a
//! scalable flow sharing that queue with CUBIC or Reno takes most of the link. An L4S AQM marks
//! a shallow queue that hardly varies; a classic one lets the queue swing with every flow's
//! sawtooth. The detector tells the two apart from the variation of the RTT and the queue depth.
//!
//! The detection, as Linux runs it:
//! * a smoothed RTT and mean deviation of the per-ACK RTT samples (the newest first
//!   transmission each ACK covers), with a gain far below RFC 6298's, 1 / 2^s for srtt and
//!   1 / 2^(s+1) for mdev, s = lg(W) + lg(W) / 2 + 1 (integer parts) at most 18, W the
//!   ssthresh in segments when a reduction starts (`prague_update_rtt_scaling`), so the
//!   averages see past one sawtooth;
//! * once per round in which Prague updates alpha (after the first CE mark), a score c moves
//!   by V lg(mdev / V0) + D lg(max(depth / D0, 1)), depth = srtt - min RTT, with V = D = 1/2,
//!   V0 = 750 us, D0 = 2 ms, and is kept in [0, 17] (`C_STICKY`): a deviation above 750 us
//!   pushes towards classic, one below pulls back; a queue deeper than 2 ms pushes towards
//!   classic, never back (the paper's "self-limited" term S is commented out in Linux and
//!   absent here);
//! * c up to 8 (`L_STICKY`) is pure L4S, from 9 (`CLASSIC_ECN`) pure classic, in between a
//!   linear blend. The response to CE uses max(alpha, 0.625 min(c - 8, 1)) in place of alpha
//!   (`prague_classic_ecn_fallback`): a classic bottleneck gets a reduction of at least
//!   0.3125, about CUBIC's 0.3, whatever the fraction of marks.
//!
//! What is unchanged: the additive increase, the loss response, RTT independence, the
//! alpha estimate itself. Linux's module parameter `prague_ecn_fallback` defaults to 0 (no
//! detection), so the scenario field defaults to off (`TcpConfig::prague_ecn_fallback`).
//!
//! Choices where the simulator differs from Linux:
//! * Linux takes the logarithms in integers and carries the remainder of each into the next
//!   round so that their floor is unbiased over time (`rest_mdev_us`, `rest_depth_us`); here
//!   they are f64 `log2`, with the deviation and the depth taken as at least 1 us (Linux's
//!   integer logarithm is at least 0 too);
//! * the ssthresh that sets the gain is the one the sender held before this reduction (the
//!   last one Prague returned, unset before any: gain 1 / 2^18), as Linux's
//!   `prague_ssthresh` reads `tp->snd_ssthresh` before the reduction;
//! * an ACK that covers a retransmitted segment gives no sample (Karn), and a timeout forgets
//!   every send time; the minimum RTT is the minimum of the samples (Linux's windowed minimum
//!   spans 300 s, longer than any run here).

use crate::tcp::send_times::SendTimes;
use aqmlab_core::Time;

/// The weight V of lg(mdev / V0) (Linux `V` = 1: 1/2).
pub const WEIGHT_V: f64 = 0.5;
/// The weight D of lg(depth / D0) (Linux `D` = 1: 1/2).
pub const WEIGHT_D: f64 = 0.5;
/// The reference deviation V0 in microseconds (Linux `V0_LG`: lg(750 us)).
pub const V0_US: f64 = 750.0;
/// The reference queue depth D0 in microseconds (Linux `D0_LG`: lg(2 ms)).
pub const D0_US: f64 = 2000.0;
/// The top of the pure-L4S band of the score (Linux `L_STICKY`: 16 / 2 in alpha units).
pub const L_STICKY: f64 = 8.0;
/// The score from which the response is fully classic (Linux `CLASSIC_ECN` = L_STICKY + 1).
pub const CLASSIC_ECN: f64 = L_STICKY + 1.0;
/// The top of the score (Linux `C_STICKY` = CLASSIC_ECN + L_STICKY).
pub const C_STICKY: f64 = CLASSIC_ECN + L_STICKY;
/// The effective alpha at a fully classic score (Linux: c / 2 + c / 8).
pub const CLASSIC_ALPHA: f64 = 0.625;
/// The largest gain shift of the RTT averages (Linux `PRAGUE_MAX_SRTT_BITS`).
pub const MAX_SRTT_SHIFT: u32 = 18;

/// The detector's state.
#[derive(Clone, Debug)]
pub struct ClassicEcnDetector {
    /// Whether a classic score changes the response (Linux `prague_ecn_fallback` = 1) or only
    /// is computed (= 2, the tests' use).
    fallback: bool,
    sent: SendTimes,
    /// Retransmissions have been sent up to this sequence: ACKs that reach above the data
    /// acknowledged before them up to it give no sample.
    retransmitted_end: u64,
    /// The smoothed RTT and mean deviation in microseconds; None before the first sample.
    srtt_us: Option<f64>,
    mdev_us: f64,
    min_rtt: Option<Time>,
    /// The gain shift s of srtt (mdev's is s + 1).
    shift: u32,
    /// The score c in [0, C_STICKY].
    score: f64,
}

/// The integer part of lg(x), x >= 1.
fn ilog2(x: u64) -> u32 {
    63 - x.max(1).leading_zeros()
}

impl ClassicEcnDetector {
    pub fn new(fallback: bool) -> ClassicEcnDetector {
        ClassicEcnDetector {
            fallback,
            sent: SendTimes::default(),
            retransmitted_end: 0,
            srtt_us: None,
            // Linux `prague_init`: mdev_pace_us = 1 << g_mdev_shift, i.e. 1 us.
            mdev_us: 1.0,
            min_rtt: None,
            shift: MAX_SRTT_SHIFT,
            score: 0.0,
        }
    }

    /// The score c.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// The smoothed RTT and mean deviation of the detector, in microseconds.
    pub fn srtt_mdev_us(&self) -> (Option<f64>, f64) {
        (self.srtt_us, self.mdev_us)
    }

    /// The gain shift s.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// A segment ending at `end` leaves at `now`, for the first time or again.
    pub fn on_sent(&mut self, end: u64, retransmission: bool, now: Time) {
        if retransmission {
            self.retransmitted_end = self.retransmitted_end.max(end);
        } else {
            self.sent.on_sent(end, now);
        }
    }

    /// A retransmission timeout: every send time is forgotten.
    pub fn on_timeout(&mut self) {
        self.sent.clear();
    }

    /// An ACK moved SND.UNA from `una_before` to `ack` at `now`: one RTT sample, unless the ACK
    /// covers retransmitted data.
    pub fn on_ack(&mut self, una_before: u64, ack: u64, now: Time) {
        let Some(rtt) = self.sent.rtt_sample(ack, now) else { return };
        if una_before < self.retransmitted_end {
            return;
        }
        self.sample(rtt);
    }

    /// One RTT sample (Linux `prague_rtt_estimator`): srtt += (m - srtt) / 2^s, then
    /// mdev += (|m - srtt before| - mdev) / 2^(s+1); the first sample sets srtt.
    pub fn sample(&mut self, rtt: Time) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        let m = rtt.0 as f64 / 1e3;
        match self.srtt_us {
            None => self.srtt_us = Some(m),
            Some(s) => {
                let err = m - s;
                self.srtt_us = Some(s + err / (1u64 << self.shift) as f64);
                self.mdev_us += (err.abs() - self.mdev_us) / (1u64 << (self.shift + 1)) as f64;
            }
        }
    }

    /// A reduction starts (CE or loss) with `ssthresh_segments` the sender's ssthresh before it:
    /// the gain shift becomes lg(W) + lg(W) / 2 + 1, at most 18 (Linux
    /// `prague_update_rtt_scaling`). Linux rescales its fixed-point averages to the new shift;
    /// in floating point they stay as they are.
    pub fn on_reduction(&mut self, ssthresh_segments: u64) {
        let k = ilog2(ssthresh_segments);
        self.shift = (k + k / 2 + 1).min(MAX_SRTT_SHIFT);
    }

    /// One round's update of the score (Linux `prague_classic_ecn_detection`, called where
    /// alpha is updated, after the first CE mark).
    pub fn on_round(&mut self) {
        let (Some(srtt), Some(min_rtt)) = (self.srtt_us, self.min_rtt) else { return };
        let mut c = self.score + WEIGHT_V * (self.mdev_us.max(1.0) / V0_US).log2();
        let depth = srtt - min_rtt.0 as f64 / 1e3;
        if depth > 0.0 {
            // Queue build-up only ever pushes towards classic.
            c += WEIGHT_D * (depth.max(1.0) / D0_US).log2().max(0.0);
        }
        self.score = c.clamp(0.0, C_STICKY);
    }

    /// Whether the score is past the pure-L4S band (the response starts to blend).
    pub fn classic(&self) -> bool {
        self.score > L_STICKY
    }

    /// The alpha the response to CE uses: with the fall-back on and a score above L_STICKY,
    /// at least CLASSIC_ALPHA x min(c - L_STICKY, 1); else alpha itself.
    pub fn response_alpha(&self, alpha: f64) -> f64 {
        if !self.fallback || !self.classic() {
            return alpha;
        }
        let blend = (self.score.min(CLASSIC_ECN) - L_STICKY) * CLASSIC_ALPHA;
        alpha.max(blend)
    }
}

#[cfg(test)]
mod tests;
