//! TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04, "Prague" below; the L4S team's
//! Linux `net/ipv4/tcp_prague.c` where the draft leaves a value to the implementation): DCTCP's
//! scalable response to the fraction of CE-marked bytes, made fit for the public Internet.
//!
//! What it keeps from DCTCP (RFC 8257, [`super::dctcp`]):
//! * the estimate: over each round trip of data the sender counts the bytes acknowledged and
//!   those acknowledged by ACKs carrying ECN-Echo; when SND.UNA passes the round's end,
//!   alpha = (1 - g) alpha + g F with F = marked / acked and g = 1/16 (Prague's "congestion
//!   response to CE": the DCTCP EWMA; Linux `PRAGUE_SHIFT_G` = 4);
//! * the response: on ECN-Echo, cwnd = cwnd (1 - alpha / 2), at most once per round trip (the
//!   sender's RFC 3168 guard), at least 2 segments (Linux `MIN_CWND`);
//! * the feedback: per-ACK CE echo, the DCTCP receiver's two-state machine
//!   ([`crate::tcp::ecn_feedback`]), which tells the sender exactly which bytes were marked
//!   when every segment is acknowledged. AccECN (which Prague asks for, and which Linux
//!   negotiates) is not built; with delayed ACKs the two-state machine still gives the marked
//!   bytes exactly (RFC 8257 section 3.2), which is all the estimate needs here (no ACK loss).
//!
//! What Prague changes (each named as the draft or Linux names it):
//! * ECT(1) on every data segment (the L4S identifier, RFC 9331): the configuration refuses
//!   Prague with ECT(0) (`TcpConfig::validate`).
//! * No alpha update before the first CE mark: alpha stays at its initial 1 until the path has
//!   shown an ECN AQM (Linux `saw_ce`), so the first marks halve the window as classic ECN
//!   would.
//! * Additive increase only for unmarked bytes (Linux: `acked -= ece_delta`; the draft's
//!   "unsaturated" increase): an ACK carrying ECN-Echo grows nothing, so the window's increase
//!   per round is proportional to (1 - p), which keeps the controller out of saturation when
//!   the marking probability p is high. The window also keeps growing between reductions
//!   (after an ECN reduction the sender is not in loss recovery), as Linux grows in CWR.
//! * Reduced RTT-dependence, the draft's "RATE" variant, which is Linux's default
//!   (`prague_rtt_scaling` = `RTT_CONTROL_RATE`, `prague_rtt_target` = 25 ms): a flow whose
//!   smoothed RTT R is below the target RTT T adds (R / T)^2 segments per round instead of 1, so
//!   its rate grows by 1 segment / T^2 per second, as a flow with RTT T does; flows at or above
//!   T are unchanged (their additive increase is Reno's). In the same mode the EWMA is updated,
//!   and a CE reduction is made, at most once per T as well as once per round trip
//!   (`prague_target_rtt_elapsed`, `prague_enter_cwr`), so a short-RTT flow reacts as one at T
//!   does. Only after [`RTT_TRANSITION_ROUNDS`] rounds of congestion avoidance (Linux
//!   `DEFAULT_RTT_TRANSITION` = 500): short flows keep their full speed.
//! * Pacing is required (Linux sets `SK_PACING_NEEDED`): 100 % of cwnd / srtt in congestion
//!   avoidance and 200 % in slow start (cwnd < ssthresh / 2), counted, as Linux counts it, in
//!   packets on the wire (mss + 40 bytes) per segment of the window ([`Prague::pacing_rate`]).
//! * Loss: the classic response (Prague's "loss response"): the window halves, RFC 5681
//!   equation (4) as NewReno's here (Linux `prague_enter_loss` halves its window), whatever
//!   alpha is.
//!
//! Choices where the draft is silent or the simulator differs from Linux:
//! * slow start is RFC 5681's (cwnd += min(unmarked bytes acknowledged, SMSS)), as DCTCP's here;
//! * the reduction is applied at once (cwnd = ssthresh), where Linux steps its integer window
//!   down one segment per ACK towards the reduced fractional window; the fractions of a segment
//!   of additive increase are carried between ACKs (Linux keeps a fixed-point window);
//! * the (R / T)^2 factor uses the smoothed RTT of the ACK that grows the window (Linux takes it
//!   once per round; the two differ by one round's change in srtt).
//!
//! Optional, off by default as in Linux (`prague_ecn_fallback` = 0): the detection of a classic
//! ECN AQM and the fall-back to a Reno-friendly reduction there ([`classic_ecn`]).
//! The other RTT-independence heuristics of Linux's `prague_rtt_scaling` (NONE, SCALABLE,
//! ADDITIVE) are [`rtt_scaling`]'s, chosen by `TcpConfig::prague_rtt_scaling` (RATE unless set).

pub mod classic_ecn;
pub mod rtt_scaling;

use super::NewReno;
use super::SSTHRESH_UNSET;
use aqmlab_core::Time;
use classic_ecn::ClassicEcnDetector;
use rtt_scaling::PragueRttScaling;

/// The EWMA gain g = 1/16 (Linux `PRAGUE_SHIFT_G` = 4, as DCTCP's).
pub const PRAGUE_G: f64 = 1.0 / 16.0;
/// The initial alpha (Linux `prague_init`: `PRAGUE_MAX_ALPHA`, i.e. 1).
pub const PRAGUE_INITIAL_ALPHA: f64 = 1.0;
/// The RTT the additive increase is scaled to (Linux `prague_rtt_target` = 25 ms).
pub const PRAGUE_RTT_TARGET: Time = Time::from_millis(25);
/// Rounds of congestion avoidance before RTT independence applies (Linux
/// `DEFAULT_RTT_TRANSITION` = 500).
pub const RTT_TRANSITION_ROUNDS: u64 = 500;
/// Linux does not scale the increase of a flow whose RTT is above 100 ms (`MAX_SCALED_RTT`);
/// with a 25 ms target such a flow is unscaled anyway. Kept for the target as a parameter.
pub const MAX_SCALED_RTT: Time = Time::from_millis(100);
/// Bytes of TCP/IP header per segment on the wire (Linux's pacing rate counts MTU-sized
/// packets, `tcp_mss_to_mtu`).
const HEADER_BYTES: u64 = 40;

/// The Prague sender's state.
#[derive(Clone, Debug)]
pub struct Prague {
    pub(super) reno: NewReno,
    /// The estimated fraction of marked bytes, in [0, 1].
    alpha: f64,
    /// Whether any ACK has carried ECN-Echo (Linux `saw_ce`): alpha moves only after it.
    saw_ce: bool,
    /// Bytes acknowledged in the current round.
    bytes_acked: u64,
    /// Bytes acknowledged by ACKs with ECN-Echo in the current round.
    bytes_marked: u64,
    /// The round ends when SND.UNA passes this sequence.
    round_end: u64,
    /// Rounds ended outside slow start (Linux `round`).
    rounds: u64,
    /// When alpha was last updated (Linux `alpha_stamp`).
    alpha_stamp: Time,
    /// When the last CE reduction was made (Linux `cwr_stamp`); None before any.
    cwr_stamp: Option<Time>,
    /// Whether the last window-growth step found the sender in slow start.
    in_slow_start: bool,
    /// Whether the ACK being processed carried ECN-Echo (its bytes do not grow the window).
    ack_marked: bool,
    /// The time of the ACK being processed.
    now: Time,
    /// Fractions of a byte of additive increase not yet added to the integer cwnd.
    carry: f64,
    /// The RTT the increase is scaled to; None: no RTT independence (Linux
    /// `RTT_CONTROL_NONE`).
    rtt_target: Option<Time>,
    /// The classic ECN AQM detector and fall-back, when on (boxed: most flows run without it).
    classic_ecn: Option<Box<ClassicEcnDetector>>,
    /// The RTT-independence heuristic (Linux `prague_rtt_scaling`; [`rtt_scaling`]); with
    /// `rtt_target` None it is NONE whatever this says.
    scaling: PragueRttScaling,
    /// The smoothed RTT of the last ACK that grew the window (ADDITIVE's target adds it, as
    /// Linux's `prague_dynamic_rtt_target` adds `tp->srtt_us`).
    srtt: Option<Time>,
    /// The last ssthresh this controller returned (Linux's `tp->snd_ssthresh` as
    /// `prague_ssthresh` reads it), which sets the detector's gain at each reduction.
    last_ssthresh: u64,
}

impl Prague {
    pub fn new(mss: u64) -> Prague {
        Prague::with_rtt_target(mss, Some(PRAGUE_RTT_TARGET))
    }

    /// A Prague sender with another RTT target, or none (the tests compare with and without).
    pub fn with_rtt_target(mss: u64, rtt_target: Option<Time>) -> Prague {
        Prague {
            reno: NewReno::new(mss),
            alpha: PRAGUE_INITIAL_ALPHA,
            saw_ce: false,
            bytes_acked: 0,
            bytes_marked: 0,
            round_end: 0,
            rounds: 0,
            alpha_stamp: Time::ZERO,
            cwr_stamp: None,
            in_slow_start: true,
            ack_marked: false,
            now: Time::ZERO,
            carry: 0.0,
            rtt_target,
            classic_ecn: None,
            last_ssthresh: SSTHRESH_UNSET,
            scaling: PragueRttScaling::Rate,
            srtt: None,
        }
    }

    /// With another RTT-independence heuristic (`TcpConfig::prague_rtt_scaling`); NONE drops
    /// the target.
    pub fn with_rtt_scaling(mut self, scaling: PragueRttScaling) -> Prague {
        self.scaling = scaling;
        if scaling == PragueRttScaling::None {
            self.rtt_target = None;
        }
        self
    }

    /// With the classic ECN AQM detection (`TcpConfig::prague_ecn_fallback`): `fallback` on, a
    /// classic score changes the response to CE; off, the score is only computed.
    pub fn with_classic_ecn_detection(mut self, fallback: bool) -> Prague {
        self.classic_ecn = Some(Box::new(ClassicEcnDetector::new(fallback)));
        self
    }

    /// The classic ECN AQM detector, when on.
    pub fn classic_ecn(&self) -> Option<&ClassicEcnDetector> {
        self.classic_ecn.as_deref()
    }

    /// A segment ending at `end` leaves at `now` (the detector's RTT samples).
    pub fn on_sent(&mut self, end: u64, retransmission: bool, now: Time) {
        if let Some(d) = self.classic_ecn.as_mut() {
            d.on_sent(end, retransmission, now);
        }
    }

    /// The current estimate alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Rounds of congestion avoidance so far.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// The EWMA: alpha = (1 - g) alpha + g F.
    pub fn next_alpha(alpha: f64, marked_fraction: f64) -> f64 {
        (1.0 - PRAGUE_G) * alpha + PRAGUE_G * marked_fraction
    }

    /// Whether RTT independence applies now (Linux `prague_is_rtt_indep`): a target is set,
    /// the sender is in congestion avoidance, and the transition rounds are over.
    pub fn rtt_independent(&self) -> bool {
        self.rtt_target.is_some() && !self.in_slow_start && self.rounds >= RTT_TRANSITION_ROUNDS
    }

    /// Whether less than the target RTT has passed since `since` while RTT independence applies.
    /// The target is the heuristic's ([`rtt_scaling::target`]: ADDITIVE adds the srtt).
    fn within_target(&self, since: Time, now: Time) -> bool {
        match self.rtt_target.and_then(|t| rtt_scaling::target(self.scaling, t, self.srtt)) {
            Some(t) if self.rtt_independent() => now.saturating_sub(since) < t,
            _ => false,
        }
    }

    /// The segments added per round of congestion avoidance: (R / T)^2 for a smoothed RTT R
    /// below the target T once RTT independence applies (Linux
    /// `prague_rate_scaled_ai_ack_increase`), else 1 (Reno's).
    /// The other heuristics' rules are [`rtt_scaling::ai_per_round`].
    pub fn ai_per_round(&self, srtt: Option<Time>) -> f64 {
        match (self.rtt_target, srtt) {
            (Some(t), Some(r)) if self.scaling != PragueRttScaling::Rate && self.rtt_independent() && r.0 > 0 && r <= MAX_SCALED_RTT => {
                rtt_scaling::ai_per_round(self.scaling, t, r)
            }
            (Some(t), Some(r)) if self.rtt_independent() && r.0 > 0 && r < t && r <= MAX_SCALED_RTT => {
                let ratio = r.as_secs_f64() / t.as_secs_f64();
                ratio * ratio
            }
            _ => 1.0,
        }
    }

    /// An ACK arrives at `now` with ECN-Echo or not, before the sender grows the window on it.
    pub fn on_ack_start(&mut self, ece: bool, now: Time) {
        self.ack_marked = ece;
        self.now = now;
    }

    /// Every ACK's feedback (after the window growth of that ACK): `acked` bytes newly
    /// acknowledged, its ECN-Echo flag, SND.UNA and SND.NXT after it, at `now`. Closes the round
    /// when SND.UNA passes its end (and, with RTT independence, when the target RTT has also
    /// passed since the last update).
    pub fn on_ack_feedback(&mut self, acked: u64, ece: bool, snd_una: u64, snd_nxt: u64, now: Time) {
        self.now = now;
        if let Some(d) = self.classic_ecn.as_mut() {
            if acked > 0 {
                d.on_ack(snd_una - acked, snd_una, now);
            }
        }
        if ece {
            self.saw_ce = true;
            self.bytes_marked += acked;
        }
        self.bytes_acked += acked;
        if snd_una <= self.round_end || self.within_target(self.alpha_stamp, now) {
            return;
        }
        if self.saw_ce {
            // Linux runs the detection where alpha is updated, after the first CE mark.
            if let Some(d) = self.classic_ecn.as_mut() {
                d.on_round();
            }
        }
        if self.saw_ce && self.bytes_acked > 0 {
            let f = self.bytes_marked as f64 / self.bytes_acked as f64;
            self.alpha = Prague::next_alpha(self.alpha, f);
            self.alpha_stamp = now;
        }
        self.round_end = snd_nxt;
        self.bytes_acked = 0;
        self.bytes_marked = 0;
        if !self.in_slow_start {
            self.rounds += 1;
        }
    }

    /// Window growth on an ACK outside loss recovery: slow start as RFC 5681's, congestion
    /// avoidance by `ai_per_round` segments per round; bytes acknowledged by an ACK with
    /// ECN-Echo add nothing.
    pub(super) fn on_ack(&mut self, cwnd: u64, ssthresh: u64, acked: u64, srtt: Option<Time>) -> u64 {
        self.in_slow_start = cwnd < ssthresh;
        self.srtt = srtt;
        if self.ack_marked {
            return cwnd;
        }
        if self.in_slow_start {
            // With byte counting, the bytes of this ACK beyond ssthresh are not carried into
            // congestion avoidance (less than one ACK's growth, once per slow start).
            return self.reno.slow_start(cwnd, ssthresh, acked).0;
        }
        let mss = self.reno.mss as f64;
        // cwnd / mss ACKs of one segment per round, each adding ai * mss * mss / cwnd bytes.
        self.carry += self.ai_per_round(srtt) * mss * acked as f64 / cwnd as f64;
        let whole = self.carry.floor();
        self.carry -= whole;
        cwnd + whole as u64
    }

    /// The response to ECN-Echo (the sender calls it at most once per round trip): the new
    /// ssthresh cwnd (1 - alpha / 2), at least 2 segments; None when RTT independence applies and
    /// the last reduction is less than the target RTT old (no reduction this time). With the
    /// classic ECN fall-back on and a classic bottleneck detected, alpha is raised to the
    /// detector's (`ClassicEcnDetector::response_alpha`).
    pub fn on_ecn_echo(&mut self, cwnd: u64) -> Option<u64> {
        let now = self.now;
        // Linux calls `prague_ssthresh` (which sets the detector's gain) on entering CWR, also
        // when `prague_enter_cwr` then makes no reduction.
        self.detector_on_reduction();
        if self.cwr_stamp.is_some_and(|t| self.within_target(t, now)) {
            return None;
        }
        self.cwr_stamp = Some(now);
        self.carry = 0.0;
        let alpha = self.classic_ecn.as_ref().map_or(self.alpha, |d| d.response_alpha(self.alpha));
        let ssthresh = ((cwnd as f64 * (1.0 - alpha / 2.0)) as u64).max(2 * self.reno.mss);
        self.last_ssthresh = ssthresh;
        Some(ssthresh)
    }

    /// A reduction starts: the detector's gain follows the ssthresh before it.
    fn detector_on_reduction(&mut self) {
        if let Some(d) = self.classic_ecn.as_mut() {
            d.on_reduction(self.last_ssthresh / self.reno.mss);
        }
    }

    /// A loss (fast retransmit or timeout): the classic response, RFC 5681 equation (4).
    pub(super) fn on_loss(&mut self, flight: u64) -> u64 {
        self.detector_on_reduction();
        self.carry = 0.0;
        self.last_ssthresh = self.reno.reduced(flight);
        self.last_ssthresh
    }

    /// A retransmission timeout: the loss response, and the detector forgets its send times.
    pub(super) fn on_timeout(&mut self, flight: u64) -> u64 {
        if let Some(d) = self.classic_ecn.as_mut() {
            d.on_timeout();
        }
        self.on_loss(flight)
    }

    /// Prague's pacing rate in payload bytes per second: 100 % of cwnd / srtt in congestion
    /// avoidance, 200 % in slow start (cwnd < ssthresh / 2), counting each window segment as a
    /// packet of mss + 40 bytes as Linux's `prague_update_pacing_rate` does; unpaced before the
    /// first RTT sample.
    pub fn pacing_rate(&self, cwnd: u64, ssthresh: u64, srtt: Option<Time>) -> u64 {
        let Some(srtt) = srtt.filter(|s| s.0 > 0) else { return u64::MAX };
        let mss = self.reno.mss as u128;
        let ratio: u128 = if cwnd < ssthresh / 2 { 2 } else { 1 };
        let wire = cwnd as u128 * (mss + HEADER_BYTES as u128) / mss * ratio;
        (wire * 1_000_000_000 / srtt.0 as u128).min(u64::MAX as u128 - 1) as u64
    }
}

#[cfg(test)]
mod tests;
