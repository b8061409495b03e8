//! HyStart++ (RFC 9406): a modified slow start that leaves exponential growth when the RTT of
//! a round rises by a threshold over the last round's, grows a quarter as fast for at most
//! five rounds (Conservative Slow Start, CSS), returns to slow start if the RTT falls back
//! below where CSS began, and enters congestion avoidance with ssthresh = cwnd once the five
//! CSS rounds are over. Any loss or ECN-Echo ends it: the controller's own reduction applies,
//! as in standard slow start.
//!
//! This is RFC 9406, not Linux's `tcp_cubic.c` HyStart (Ha and Rhee's ACK-train and delay
//! heuristics, which leave slow start at once with ssthresh = cwnd and have no CSS): issue 27
//! asks for HyStart++, the IETF's standards-track slow start that RFC 9438 section 4.10
//! recommends for CUBIC. docs/tcp.md says more.
//!
//! The sender ([`super::TcpSender`]) calls [`HyStart::on_sent`] for every first transmission
//! and [`HyStart::on_ack`] in place of the controller's slow-start rule for each ACK of new
//! data while cwnd < ssthresh, and [`HyStart::end`] on any congestion signal. HyStart++ runs
//! in the initial slow start only (section 4.3: "An implementation SHOULD use HyStart++ only
//! for the initial slow start ... and fall back to using standard slow start for the remainder
//! of the connection lifetime"); after [`HyStart::end`] the sender's slow start is the
//! controller's again.
//!
//! RTT samples: section 4.2 takes "currRTT", the RTT sampled from each arriving ACK. The
//! sender's RFC 6298 estimator times one segment per RTT, which would give one sample a round
//! and never the N_RTT_SAMPLE = 8 the exit test needs; so HyStart++ keeps the send time of each
//! segment it sees sent and samples every ACK that newly acknowledges data: now minus the send
//! time of the highest segment the ACK covers. Until HyStart++ ends nothing has been
//! retransmitted (a retransmission follows a loss or timeout, which ends it), so every sample
//! satisfies Karn's rule.

use super::send_times::SendTimes;
use aqmlab_core::Time;

/// Section 4.3: MIN_RTT_THRESH = 4 msec.
pub const MIN_RTT_THRESH: Time = Time(4_000_000);
/// Section 4.3: MAX_RTT_THRESH = 16 msec.
pub const MAX_RTT_THRESH: Time = Time(16_000_000);
/// Section 4.3: MIN_RTT_DIVISOR = 8.
pub const MIN_RTT_DIVISOR: u64 = 8;
/// Section 4.3: N_RTT_SAMPLE = 8.
pub const N_RTT_SAMPLE: u32 = 8;
/// Section 4.3: CSS_GROWTH_DIVISOR = 4.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// Section 4.3: CSS_ROUNDS = 5.
pub const CSS_ROUNDS: u32 = 5;
/// Section 4.3: L = 8 if non-paced (L = infinity if paced).
pub const L_NON_PACED: u64 = 8;

/// Where HyStart++ stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Standard slow start with HyStart++'s RTT checks.
    SlowStart,
    /// Conservative Slow Start since the RTT rose.
    Css,
    /// Over: CSS_ROUNDS rounds of CSS completed (ssthresh = cwnd), or a congestion signal.
    Done,
}

/// What one ACK did (returned by [`HyStart::on_ack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Bytes to add to cwnd.
    pub increase: u64,
    /// CSS_ROUNDS rounds of CSS are complete: the sender sets ssthresh = cwnd (after adding
    /// `increase`) and continues in congestion avoidance.
    pub enter_congestion_avoidance: bool,
}

/// HyStart++'s state for one sender (section 4.2's variables; `None` stands for infinity).
#[derive(Clone, Debug)]
pub struct HyStart {
    mss: u64,
    /// L in segments; None: infinity (a paced sender, section 4.3).
    limit_segments: Option<u64>,
    phase: Phase,
    /// windowEnd: the round ends when this sequence number is acknowledged.
    window_end: u64,
    last_round_min_rtt: Option<Time>,
    current_round_min_rtt: Option<Time>,
    rtt_sample_count: u32,
    css_baseline_min_rtt: Option<Time>,
    /// Rounds of CSS completed (the partial round CSS started in counts, section 4.2).
    css_rounds: u32,
    /// The bytes of growth CSS's division left over, carried to the next ACK so that CSS grows
    /// exactly 1/CSS_GROWTH_DIVISOR as fast as slow start over any run of ACKs.
    css_remainder: u64,
    /// The send times of the segments sent and not yet acknowledged.
    sent: SendTimes,
    /// Times the RTT rise sent it into CSS, and times CSS went back to slow start.
    pub css_entries: u32,
    pub css_resumes: u32,
}

impl HyStart {
    /// HyStart++ at connection start: `snd_nxt` is SND.NXT then (section 4.2: "windowEnd ...
    /// initialized to SND.NXT"); `paced` chooses L.
    pub fn new(mss: u64, paced: bool, snd_nxt: u64) -> HyStart {
        HyStart {
            mss,
            limit_segments: (!paced).then_some(L_NON_PACED),
            phase: Phase::SlowStart,
            window_end: snd_nxt,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            css_baseline_min_rtt: None,
            css_rounds: 0,
            css_remainder: 0,
            sent: SendTimes::default(),
            css_entries: 0,
            css_resumes: 0,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether HyStart++ still shapes slow start.
    pub fn active(&self) -> bool {
        self.phase != Phase::Done
    }

    pub fn css_baseline_min_rtt(&self) -> Option<Time> {
        self.css_baseline_min_rtt
    }

    pub fn css_rounds(&self) -> u32 {
        self.css_rounds
    }

    /// The segment ending at `end` was sent for the first time at `now`.
    pub fn on_sent(&mut self, end: u64, now: Time) {
        if self.active() {
            self.sent.on_sent(end, now);
        }
    }

    /// A loss, timeout or ECN-Echo: HyStart++ is over for this connection (section 4.2, "If
    /// loss or ECN-marking is observed anytime during standard slow start or CSS", congestion
    /// avoidance follows the controller's reduction; section 4.3, HyStart++ only in the initial
    /// slow start).
    pub fn end(&mut self) {
        self.phase = Phase::Done;
        self.sent.clear();
    }

    /// An ACK in slow start (cwnd < ssthresh, outside loss recovery) that acknowledged `acked`
    /// new bytes, up to `ack`, at `now`; `snd_nxt` is the highest sequence sent so far.
    pub fn on_ack(&mut self, ack: u64, acked: u64, snd_nxt: u64, now: Time) -> Step {
        let mut step = Step { increase: 0, enter_congestion_avoidance: false };
        if !self.active() {
            return step;
        }
        let rtt = self.sent.rtt_sample(ack, now);
        // Section 4.2, "For each arriving ACK in slow start ...: cwnd = cwnd + min(N, L*SMSS)";
        // "... in CSS ...: cwnd = cwnd + (min(N, L*SMSS) / CSS_GROWTH_DIVISOR)".
        let n = self.limit_segments.map_or(acked, |l| acked.min(l * self.mss));
        step.increase = match self.phase {
            Phase::Css => {
                let total = n + self.css_remainder;
                self.css_remainder = total % CSS_GROWTH_DIVISOR;
                total / CSS_GROWTH_DIVISOR
            }
            _ => n,
        };
        if let Some(rtt) = rtt {
            // Section 4.2: currentRoundMinRTT = min(currentRoundMinRTT, currRTT);
            // rttSampleCount += 1.
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        match self.phase {
            Phase::SlowStart => self.check_exit(),
            Phase::Css => self.check_resume(),
            Phase::Done => {}
        }
        if ack > self.window_end {
            // Section 4.2: "When windowEnd is ACKed, the current round ends and windowEnd is set
            // to SND.NXT." (windowEnd ACKed: the byte numbered windowEnd is acknowledged.)
            if self.phase == Phase::Css {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    // Section 4.2: "If CSS_ROUNDS rounds are complete, enter congestion avoidance
                    // by setting the ssthresh to the current cwnd."
                    step.enter_congestion_avoidance = true;
                    self.end();
                    return step;
                }
            }
            self.start_round(snd_nxt);
        }
        step
    }

    /// Section 4.2, at the start of each round: lastRoundMinRTT = currentRoundMinRTT;
    /// currentRoundMinRTT = infinity; rttSampleCount = 0.
    fn start_round(&mut self, snd_nxt: u64) {
        self.window_end = snd_nxt;
        self.last_round_min_rtt = self.current_round_min_rtt;
        self.current_round_min_rtt = None;
        self.rtt_sample_count = 0;
    }

    /// Section 4.2, in slow start: with at least N_RTT_SAMPLE samples this round and both
    /// minima valid, RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
    /// MAX_RTT_THRESH)); if currentRoundMinRTT >= lastRoundMinRTT + RttThresh, then
    /// cssBaselineMinRtt = currentRoundMinRTT and CSS begins.
    fn check_exit(&mut self) {
        let (Some(current), Some(last)) = (self.current_round_min_rtt, self.last_round_min_rtt) else { return };
        if self.rtt_sample_count < N_RTT_SAMPLE {
            return;
        }
        if current >= last + rtt_thresh(last) {
            self.css_baseline_min_rtt = Some(current);
            self.phase = Phase::Css;
            // "If the transition into CSS happens in the middle of a round, that partial round
            // counts towards the limit": this round is CSS's first when it ends.
            self.css_rounds = 0;
            self.css_remainder = 0;
            self.css_entries += 1;
        }
    }

    /// Section 4.2, in CSS: with at least N_RTT_SAMPLE samples this round, if
    /// currentRoundMinRTT < cssBaselineMinRtt the exit was spurious: cssBaselineMinRtt =
    /// infinity and slow start resumes, HyStart++ included.
    fn check_resume(&mut self) {
        let (Some(current), Some(baseline)) = (self.current_round_min_rtt, self.css_baseline_min_rtt) else { return };
        if self.rtt_sample_count >= N_RTT_SAMPLE && current < baseline {
            self.css_baseline_min_rtt = None;
            self.phase = Phase::SlowStart;
            self.css_rounds = 0;
            self.css_resumes += 1;
        }
    }
}

/// Section 4.2: RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
/// MAX_RTT_THRESH)).
pub fn rtt_thresh(last_round_min_rtt: Time) -> Time {
    Time(last_round_min_rtt.0 / MIN_RTT_DIVISOR).min(MAX_RTT_THRESH).max(MIN_RTT_THRESH)
}

#[cfg(test)]
mod tests;
