//! BBRv3 after draft-ietf-ccwg-bbr-06 ("BBR Congestion Control", Cardwell, Swett, Beshay, July
//! 2026; section numbers below are that version's), with Google's v3 code (github.com/google/bbr,
//! branch v3, `net/ipv4/tcp_bbr.c`) read to check defaults. It shares the delivery-rate
//! estimator (`tcp::rate_sample`) and the pacer (`tcp::pacing`) with BBR v1 (`cc::bbr`) and is
//! fed by the same per-ACK step of the sender (`TcpSender::bbr_on_ack`).
//!
//! Files: this one holds the state, the per-ACK order (section 5.2.3), Startup, Drain, the
//! short-term loss response and the control parameters (pacing rate, cwnd); `bbr3/probe_bw.rs`
//! the ProbeBW cycle and the long-term model; `bbr3/probe_rtt.rs` min_rtt and ProbeRTT.
//!
//! What differs from v1, as built here:
//! * the model has a long-term and a short-term part (section 3.4.2): `max_bw` (a max filter
//!   over the last 2 ProbeBW cycles, section 5.5.3) and `inflight_longterm` (raised when
//!   probing succeeds, cut when a probe's loss rate exceeds 2 %, section 5.5.10.2), and
//!   `bw_shortterm` / `inflight_shortterm` (cut by beta = 0.7 once per round with loss outside
//!   probing, reset when the next probe starts, section 5.5.10.3);
//! * Startup also ends on loss (section 5.3.1.3), Drain after 3 rounds at most (5.3.2);
//! * ProbeBW is four states, DOWN, CRUISE, REFILL and UP (section 5.3.3), with the next
//!   probe 2-3 s away (drawn from the flow's stream, `aqmlab_model::streams::flow_bbr`) or
//!   sooner after min(BDP in segments, 63) rounds (section 5.3.3.8.3);
//! * ProbeRTT every 5 s without a new minimum, at half a BDP (section 5.3.4);
//! * loss recovery keeps the window (no v1 packet conservation): the bounds do the slowing,
//!   and leaving recovery restores the cwnd from before it (section 5.6.4.4);
//! * a recovery or timeout later found spurious restores the model (section 5.5.11).
//!
//! Units: bytes, bytes per second and nanoseconds (section 2 recommends bytes).
//!
//! Choices where the draft is silent or its pseudocode does not fit this simulator:
//! * the loss-rate check is made per ACK, on the rate sample's packet (RS.lost and
//!   RS.tx_in_flight, section 2.3), as Linux v3's `bbr_adapt_upper_bounds` does; the draft's
//!   per-lost-packet refinement (`HandleLostPacket` / `InflightAtLoss`, section 5.5.10.2) is
//!   not built, so inflight_longterm is set from the delivered packet's tx_in_flight;
//! * Startup's loss exit counts ACKs that newly mark loss in the round (Linux v3's
//!   `loss_events_in_round`) for the draft's "discontiguous sequence ranges lost";
//! * `IsRenoCoexistenceProbeTime` compares rounds with TargetInflight in segments (the draft's
//!   pseudocode compares bytes with rounds; Linux counts packets);
//! * C.is_cwnd_limited: the data in flight before an ACK reached cwnd less one segment at some
//!   ACK of the current round or the last;
//! * the initial pacing rate is set again from the first smoothed RTT (Linux's `has_seen_rtt`;
//!   section 5.6.2's InitPacingRate only runs at initialization, before any RTT);
//! * the max_bw filter is two slots, one per ProbeBW cycle (Linux v3's `bw_hi[2]`), which is
//!   what a windowed max over `cycle_count` with window 2 keeps.
//!
//! Not built: ACK-aggregation allowance (BBR.extra_acked, section 5.5.9), restart from idle
//! (section 5.4), the ECN response (Linux v3's `ecn_alpha`, the draft's section 3.7 leaves it
//! out of the algorithm: a bbr3 sender ignores ECN-Echo as v1 does), the per-lost-packet
//! inflight_at_loss refinement (above), and losses declared by a timeout's go-back-N in
//! C.lost (a timeout saves the state and cuts cwnd, section 5.6.4.4, and nothing more).

use super::bbr::{AckInput, CaState};
use aqmlab_core::{SimRng, Time};

/// Section 2.5: BBR.StartupPacingGain = 4 ln 2 ~= 2.77 (Linux v3 `bbr_startup_pacing_gain`).
pub const STARTUP_PACING_GAIN: f64 = 2.77;
/// Sections 2.5 and 5.3.2: BBR.DrainPacingGain = 0.5 in draft -05 and -06 (drafts -01 to -04
/// and Linux v3's `bbr_drain_gain` have 1/2.885 ~= 0.35).
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// Section 2.6: BBR.DefaultCwndGain = 2.
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// Section 5.3.3.1: ProbeBW_DOWN paces at 0.90 (Linux v3: 0.91).
pub const DOWN_PACING_GAIN: f64 = 0.90;
/// Section 5.3.3.5: ProbeBW_UP paces at 1.25 ...
pub const UP_PACING_GAIN: f64 = 1.25;
/// ... with a cwnd gain of 2.25 (Linux v3 `bbr_bw_probe_cwnd_gain` = 0.25 on top of 2).
pub const UP_CWND_GAIN: f64 = 2.25;
/// Section 2.5: BBR.PacingMarginPercent = 1 %.
pub const PACING_MARGIN: f64 = 0.99;
/// Section 2.8: BBR.LossThresh, the highest loss rate per round a probe may cause.
pub const LOSS_THRESH: f64 = 0.02;
/// Section 2.8: BBR.Beta, the multiplicative decrease per round with loss.
pub const BETA: f64 = 0.7;
/// Section 2.8: BBR.Headroom, the share of inflight_longterm left free in CRUISE.
pub const HEADROOM: f64 = 0.15;
/// Section 2.8: BBR.MinPipeCwnd = 4 SMSS.
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// Section 5.3.1.2: a round's bandwidth must grow by 25 % ...
pub const FULL_BW_THRESH: f64 = 1.25;
/// ... or after 3 such rounds the pipe is full.
pub const FULL_BW_COUNT: u32 = 3;
/// Section 5.3.1.3: BBRStartupFullLossCnt, loss events in a round for Startup's loss exit.
pub const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// Section 5.3.2: Drain ends after this many rounds at the latest.
pub const DRAIN_MAX_ROUNDS: u64 = 3;
/// Section 2.16.1: BBR.MinRTTFilterLen.
pub const MIN_RTT_FILTER_LEN: Time = Time::from_secs(10);
/// Section 2.16.2: BBR.ProbeRTTInterval.
pub const PROBE_RTT_INTERVAL: Time = Time::from_secs(5);
/// Section 2.16.2: BBR.ProbeRTTDuration.
pub const PROBE_RTT_DURATION: Time = Time::from_millis(200);
/// Section 2.16.2: BBR.ProbeRTTCwndGain.
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Section 5.3.3.8.3 (PickProbeWait): the wall-clock wait is 2 s plus a uniform 0-1 s.
pub const PROBE_WAIT_BASE: Time = Time::from_secs(2);
/// The random part of the wait, drawn uniformly in [0, this).
pub const PROBE_WAIT_RAND: Time = Time::from_secs(1);
/// Section 5.3.3.8.3 (IsRenoCoexistenceProbeTime): at most this many rounds between probes.
pub const RENO_MAX_ROUNDS: u64 = 63;
/// Section 5.6.3: the send quantum is 1 ms at the pacing rate, at most 64 KB ...
pub const SEND_QUANTUM_MAX: u64 = 64 * 1024;
/// Section 5.5.8.1: the TCP offload budget is 3 send quanta.
pub const OFFLOAD_QUANTA: u64 = 3;

/// The state machine's states (section 5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl State {
    /// Section 5.6.1's table: (pacing gain, cwnd gain).
    pub fn gains(self) -> (f64, f64) {
        match self {
            State::Startup => (STARTUP_PACING_GAIN, DEFAULT_CWND_GAIN),
            State::Drain => (DRAIN_PACING_GAIN, DEFAULT_CWND_GAIN),
            State::ProbeBwDown => (DOWN_PACING_GAIN, DEFAULT_CWND_GAIN),
            State::ProbeBwCruise | State::ProbeBwRefill => (1.0, DEFAULT_CWND_GAIN),
            State::ProbeBwUp => (UP_PACING_GAIN, UP_CWND_GAIN),
            State::ProbeRtt => (1.0, PROBE_RTT_CWND_GAIN),
        }
    }

    /// IsInAProbeBWState (section 5.3.3.9).
    pub fn is_probe_bw(self) -> bool {
        matches!(self, State::ProbeBwDown | State::ProbeBwCruise | State::ProbeBwRefill | State::ProbeBwUp)
    }
}

/// BBR.ack_phase (section 2.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// What v3 reads from an ACK beyond v1's [`AckInput`].
#[derive(Clone, Copy, Debug, Default)]
pub struct V3Sample {
    /// RS.delivered: bytes delivered over the sample's interval (0 when invalid).
    pub delivered: u64,
    /// RS.tx_in_flight: bytes in flight when the sample's packet was sent (with it).
    pub tx_in_flight: u64,
    /// RS.lost: bytes marked lost between that packet's send and this ACK.
    pub lost: u64,
    /// C.has_selective_acks.
    pub has_sack: bool,
}

/// One BBRv3 sender's state (section 2's BBR.* variables).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    mss: u64,
    initial_cwnd: u64,
    state: State,
    /// C.cwnd (bytes), which BBR owns.
    cwnd: u64,
    /// C.pacing_rate, payload bytes per second.
    pacing_rate: u64,
    has_seen_rtt: bool,
    // Bandwidth (section 2.9.1, 2.11).
    bw_slots: [f64; 2],
    cycle_count: u64,
    bw_shortterm: f64,
    bw: f64,
    // Round counting (section 5.5.1).
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    rounds_since_probe_up: u64,
    // Volumes (section 2.9.2), bytes; u64::MAX is "Infinity".
    inflight_longterm: u64,
    inflight_shortterm: u64,
    // Congestion signals (section 2.10, 5.5.10.3).
    bw_latest: f64,
    inflight_latest: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    loss_events_in_round: u32,
    // Startup (section 2.13).
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    drain_start_round: u64,
    // ProbeBW (section 2.14).
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    bw_probe_up_rounds: u32,
    bw_probe_wait: Time,
    cycle_stamp: Time,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,
    // Undo (section 2.15).
    undo_state: Option<State>,
    undo_bw_shortterm: f64,
    undo_inflight_shortterm: u64,
    undo_inflight_longterm: u64,
    // min_rtt and ProbeRTT (section 2.16); None until the first ACK stamps them.
    min_rtt: Option<Time>,
    min_rtt_stamp: Option<Time>,
    probe_rtt_min_delay: Option<Time>,
    probe_rtt_min_stamp: Option<Time>,
    probe_rtt_expired: bool,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    prev_ca_state: CaState,
    /// C.is_cwnd_limited: cwnd was reached in this round (first) or the last (second).
    cwnd_limited: (bool, bool),
    /// C.delivered at the last ACK (StartRound's mark outside the per-ACK steps).
    delivered: u64,
    /// The flow's random stream (PickProbeWait).
    rng: SimRng,
}

impl Bbr3 {
    /// OnInit (section 5.2.1) with an initial window of `initial_cwnd` segments.
    pub fn new(mss: u64, initial_cwnd: u64, rng: SimRng) -> Bbr3 {
        let initial_cwnd = initial_cwnd.max(1) * mss;
        let mut b = Bbr3 {
            mss,
            initial_cwnd,
            state: State::Startup,
            cwnd: initial_cwnd,
            pacing_rate: 0,
            has_seen_rtt: false,
            bw_slots: [0.0; 2],
            cycle_count: 0,
            bw_shortterm: f64::INFINITY,
            bw: 0.0,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            rounds_since_probe_up: 0,
            inflight_longterm: u64::MAX,
            inflight_shortterm: u64::MAX,
            bw_latest: 0.0,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: u64::MAX,
            bw_probe_up_rounds: 0,
            bw_probe_wait: Time::ZERO,
            cycle_stamp: Time::ZERO,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            undo_state: None,
            undo_bw_shortterm: 0.0,
            undo_inflight_shortterm: 0,
            undo_inflight_longterm: 0,
            min_rtt: None,
            min_rtt_stamp: None,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: None,
            probe_rtt_expired: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            prev_ca_state: CaState::Open,
            cwnd_limited: (false, false),
            delivered: 0,
            rng,
        };
        b.init_pacing_rate(None);
        b
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// C.cwnd in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }
    pub fn pacing_gain(&self) -> f64 {
        self.state.gains().0
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.state.gains().1
    }
    /// BBR.max_bw (bytes/s).
    pub fn max_bw(&self) -> f64 {
        self.bw_slots[0].max(self.bw_slots[1])
    }
    /// BBR.bw = min(max_bw, bw_shortterm) (bytes/s).
    pub fn bw(&self) -> f64 {
        self.bw
    }
    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn round_count(&self) -> u64 {
        self.round_count
    }
    /// BBR.inflight_longterm in bytes (None while "Infinity").
    pub fn inflight_longterm(&self) -> Option<u64> {
        (self.inflight_longterm != u64::MAX).then_some(self.inflight_longterm)
    }
    /// BBR.inflight_shortterm in bytes (None while "Infinity").
    pub fn inflight_shortterm(&self) -> Option<u64> {
        (self.inflight_shortterm != u64::MAX).then_some(self.inflight_shortterm)
    }
    /// BBR.bw_shortterm (None while "Infinity").
    pub fn bw_shortterm(&self) -> Option<f64> {
        self.bw_shortterm.is_finite().then_some(self.bw_shortterm)
    }
    /// The wall-clock wait PickProbeWait drew for the current cycle.
    pub fn bw_probe_wait(&self) -> Time {
        self.bw_probe_wait
    }
    /// Whether the sender must mark the connection app-limited (HandleProbeRTT, section
    /// 5.3.4.3: ProbeRTT's low-rate samples must not lower the model).
    pub fn in_probe_rtt(&self) -> bool {
        self.state == State::ProbeRtt
    }
    /// BBR v3 sets no ssthresh; the sender's stays "unset".
    pub fn ssthresh_or_unset(&self) -> u64 {
        super::SSTHRESH_UNSET
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_CWND_SEGMENTS * self.mss
    }

    /// InitPacingRate (section 5.6.2): StartupPacingGain * InitialCwnd / (srtt or 1 ms).
    fn init_pacing_rate(&mut self, srtt: Option<Time>) {
        let rtt = match srtt {
            Some(s) if s.0 > 0 => {
                self.has_seen_rtt = true;
                s
            }
            _ => Time::from_millis(1),
        };
        let nominal = self.initial_cwnd as f64 * 1e9 / rtt.0 as f64;
        self.pacing_rate = (STARTUP_PACING_GAIN * nominal * PACING_MARGIN) as u64;
    }

    /// BDPMultiple (section 5.6.4.2): gain * bw * min_rtt, InitialCwnd before any RTT sample.
    pub fn bdp_multiple(&self, bw: f64, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else { return self.initial_cwnd };
        (gain * bw * min_rtt.0 as f64 / 1e9) as u64
    }

    /// BBR.bdp = BBR.bw * BBR.min_rtt.
    pub fn bdp(&self) -> u64 {
        self.bdp_multiple(self.bw, 1.0)
    }

    /// SetSendQuantum (section 5.6.3): 1 ms at the pacing rate, within [2 SMSS, 64 KB].
    fn send_quantum(&self) -> u64 {
        (self.pacing_rate / 1000).min(SEND_QUANTUM_MAX).max(2 * self.mss)
    }

    /// QuantizationBudget (section 5.6.4.2) with the TCP offload budget (section 5.5.8.1).
    fn quantization_budget(&self, cap: u64) -> u64 {
        let mut cap = cap.max(OFFLOAD_QUANTA * self.send_quantum()).max(self.min_pipe_cwnd());
        if self.state == State::ProbeBwUp {
            cap += 2 * self.mss;
        }
        cap
    }

    /// Inflight(bw, gain) (section 5.6.4.2).
    pub fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(bw, gain))
    }

    /// TargetInflight (section 5.3.3.8.3): the BDP, unless congestion cut cwnd.
    fn target_inflight(&self) -> u64 {
        self.bdp().min(self.cwnd)
    }

    /// InflightWithHeadroom (section 5.3.3.9).
    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_longterm == u64::MAX {
            return u64::MAX;
        }
        let headroom = ((HEADROOM * self.inflight_longterm as f64) as u64).max(self.mss);
        self.inflight_longterm.saturating_sub(headroom).max(self.min_pipe_cwnd())
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited.0 || self.cwnd_limited.1
    }

    /// IsInflightTooHigh (section 5.5.10.2).
    fn is_inflight_too_high(x: &V3Sample) -> bool {
        x.lost as f64 > x.tx_in_flight as f64 * LOSS_THRESH || (x.lost > 0 && !x.has_sack)
    }

    // ---- Loss recovery hooks (sections 5.5.11, 5.6.4.4) ----

    /// SaveCwnd (section 5.6.4.4).
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.state != State::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// SaveStateUponLoss (section 5.5.11.1).
    fn save_state_upon_loss(&mut self) {
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
    }

    /// OnEnterFastRecovery (section 5.6.4.4); returns the (unchanged) ssthresh.
    pub fn on_congestion_event(&mut self) -> u64 {
        self.save_cwnd();
        self.save_state_upon_loss();
        self.ssthresh_or_unset()
    }

    /// OnEnterRTO (section 5.6.4.4): cwnd = inflight + 1 segment, where nothing is in flight
    /// once the timeout's go-back-N starts.
    pub fn on_timeout(&mut self) {
        self.save_cwnd();
        self.save_state_upon_loss();
        self.cwnd = self.mss;
        self.prev_ca_state = CaState::Loss;
    }

    /// HandleSpuriousLossDetection (section 5.5.11.2).
    pub fn on_spurious_loss(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.is_loss_in_round = false;
        self.reset_full_bw();
        self.bw_shortterm = self.bw_shortterm.max(self.undo_bw_shortterm);
        self.inflight_shortterm = self.inflight_shortterm.max(self.undo_inflight_shortterm);
        self.inflight_longterm = self.inflight_longterm.max(self.undo_inflight_longterm);
        match self.undo_state {
            Some(State::Startup) if self.state != State::Startup => {
                self.full_bw_reached = false;
                if self.state != State::ProbeRtt {
                    self.enter_startup();
                }
            }
            Some(State::ProbeBwUp) if self.state != State::ProbeBwUp && self.state != State::ProbeRtt => {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
    }

    // ---- Per-ACK steps (section 5.2.3) ----

    /// UpdateOnACK: the model and state machine, then the pacing rate and cwnd.
    pub fn on_ack(&mut self, a: &AckInput, x: &V3Sample) {
        let delivered_some = a.acked_sacked > 0;
        self.delivered = a.delivered;
        if a.prior_in_flight + self.mss > self.cwnd {
            self.cwnd_limited.0 = true;
        }
        if a.losses > 0 {
            self.note_loss(a.delivered);
        }
        let rate = a.rate.unwrap_or(0.0);
        if delivered_some {
            self.update_latest_delivery_signals(a, x, rate);
        } else {
            self.loss_round_start = false;
        }
        self.update_congestion_signals(a, rate, delivered_some);
        self.check_full_bw_reached(a, rate);
        self.check_startup_done(a, x);
        self.check_drain_done(a);
        if delivered_some {
            self.update_probe_bw_cycle_phase(a, x, rate);
        }
        self.update_min_rtt(a);
        self.check_probe_rtt(a);
        if self.loss_round_start {
            // AdvanceLatestDeliverySignals.
            self.bw_latest = rate;
            self.inflight_latest = x.delivered;
        }
        self.bw = self.max_bw().min(self.bw_shortterm); // BoundBWForModel
        self.set_pacing_rate(a.srtt);
        self.set_cwnd(a);
        self.prev_ca_state = a.state;
    }

    /// NoteLoss (section 5.5.10.2), for an ACK that newly marked data lost.
    fn note_loss(&mut self, delivered: u64) {
        if !self.is_loss_in_round {
            self.loss_round_delivered = delivered;
        }
        self.is_loss_in_round = true;
        if self.loss_events_in_round < 15 {
            self.loss_events_in_round += 1;
        }
    }

    /// UpdateLatestDeliverySignals (section 5.5.10.3).
    fn update_latest_delivery_signals(&mut self, a: &AckInput, x: &V3Sample, rate: f64) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rate);
        self.inflight_latest = self.inflight_latest.max(x.delivered);
        if a.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = a.delivered;
            self.loss_round_start = true;
        }
    }

    /// UpdateCongestionSignals (section 5.5.10.3) with UpdateMaxBw / UpdateRound (5.5.1,
    /// 5.5.5).
    fn update_congestion_signals(&mut self, a: &AckInput, rate: f64, delivered_some: bool) {
        self.round_start = false;
        if delivered_some && a.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = a.delivered; // StartRound
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited = (false, self.cwnd_limited.0);
        }
        if rate > 0.0 && (rate >= self.max_bw() || !a.is_app_limited) {
            let slot = (self.cycle_count % 2) as usize;
            self.bw_slots[slot] = self.bw_slots[slot].max(rate);
        }
        if !self.loss_round_start {
            return;
        }
        // AdaptLowerBoundsFromCongestion: once per round, outside probing.
        let probing = matches!(self.state, State::Startup | State::ProbeBwRefill | State::ProbeBwUp);
        if !probing && self.is_loss_in_round {
            if self.bw_shortterm.is_infinite() {
                self.bw_shortterm = self.max_bw();
            }
            if self.inflight_shortterm == u64::MAX {
                self.inflight_shortterm = self.cwnd;
            }
            self.bw_shortterm = self.bw_latest.max(BETA * self.bw_shortterm);
            self.inflight_shortterm = self.inflight_latest.max((BETA * self.inflight_shortterm as f64) as u64);
        }
        self.is_loss_in_round = false;
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// CheckFullBWReached (section 5.3.1.2).
    fn check_full_bw_reached(&mut self, a: &AckInput, rate: f64) {
        if self.full_bw_now || !self.round_start || a.is_app_limited {
            return;
        }
        if rate >= self.full_bw * FULL_BW_THRESH {
            self.reset_full_bw();
            self.full_bw = rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_COUNT;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// CheckStartupDone with CheckStartupHighLoss (section 5.3.1.3).
    fn check_startup_done(&mut self, a: &AckInput, x: &V3Sample) {
        if self.state == State::Startup && !self.full_bw_reached {
            let high_loss = if x.has_sack {
                self.loss_round_start
                    && a.state == CaState::Recovery
                    && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
                    && Bbr3::is_inflight_too_high(x)
            } else {
                a.state == CaState::Recovery && a.losses > 0
            };
            if high_loss {
                self.undo_state = Some(State::Startup);
                self.full_bw_reached = true;
                self.inflight_longterm = self.bdp().max(self.inflight_latest);
            }
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
        if self.state == State::Startup && self.full_bw_reached {
            self.state = State::Drain; // EnterDrain (section 5.3.2)
            self.drain_start_round = self.round_count;
        }
    }

    fn enter_startup(&mut self) {
        self.state = State::Startup;
    }

    /// CheckDrainDone (section 5.3.2).
    fn check_drain_done(&mut self, a: &AckInput) {
        if self.state == State::Drain
            && (a.in_flight <= self.inflight(self.bw, 1.0) || self.round_count > self.drain_start_round + DRAIN_MAX_ROUNDS)
        {
            self.start_probe_bw_down(a.now, a.delivered); // EnterProbeBW
        }
    }

    /// StartRound (section 5.5.1): the round ends when what is sent from now is delivered.
    fn start_round(&mut self, delivered: u64) {
        self.next_round_delivered = delivered;
    }

    /// SetPacingRate (section 5.6.2): in Startup the rate only rises.
    fn set_pacing_rate(&mut self, srtt: Option<Time>) {
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        let rate = (self.pacing_gain() * self.bw * PACING_MARGIN) as u64;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// SetCwnd (section 5.6.4.6) after the recovery rule (section 5.6.4.4): leaving recovery
    /// restores the cwnd from before it.
    fn set_cwnd(&mut self, a: &AckInput) {
        if self.prev_ca_state >= CaState::Recovery && a.state < CaState::Recovery {
            self.cwnd = self.cwnd.max(self.prior_cwnd);
        }
        let max_inflight = self.quantization_budget(self.bdp_multiple(self.bw, self.cwnd_gain()));
        let acked = a.acked_sacked;
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + acked).min(max_inflight);
        } else if self.cwnd < max_inflight || a.delivered < self.initial_cwnd {
            self.cwnd += acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == State::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd()); // BoundCwndForProbeRTT
        }
        self.cwnd = self.cwnd.min(self.model_cap());
    }

    /// BoundCwndForModel's cap (section 5.6.4.7).
    fn model_cap(&self) -> u64 {
        let cap = if self.state.is_probe_bw() && self.state != State::ProbeBwCruise {
            self.inflight_longterm
        } else if matches!(self.state, State::ProbeRtt | State::ProbeBwCruise) {
            self.inflight_with_headroom()
        } else {
            u64::MAX
        };
        cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd())
    }
}

mod probe_bw;
mod probe_rtt;
#[cfg(test)]
mod tests;
