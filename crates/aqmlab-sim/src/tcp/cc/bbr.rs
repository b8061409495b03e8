//! BBR v1 as Linux's `net/ipv4/tcp_bbr.c` runs it (Cardwell et al., "BBR: Congestion-Based
//! Congestion Control", ACM Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00). It
//! builds a model of the path from the delivery-rate samples (`tcp::rate_sample`) and sets
//! both a pacing rate and a window from it, on every ACK:
//!
//! * BtlBw: a windowed maximum of the delivery rate over [`BW_WINDOW_ROUNDS`] round trips
//!   (Kathleen Nichols' three-sample running max, Linux `lib/minmax.c`); app-limited samples
//!   count only when they raise it (`bbr_update_bw`).
//! * RTprop: the minimum RTT over [`MIN_RTT_WINDOW`] (`bbr_update_min_rtt`).
//! * STARTUP: pacing and cwnd gain [`HIGH_GAIN`] = 2/ln 2; it ends when the bandwidth estimate
//!   grew less than 25 % in [`FULL_BW_COUNT`] rounds that were not app-limited
//!   (`bbr_check_full_bw_reached`). DRAIN: pacing gain 1/[`HIGH_GAIN`] until the data in
//!   flight is down to one BDP (`bbr_check_drain`). PROBE_BW: the pacing gain cycles through
//!   [`PACING_GAIN_CYCLE`] from a random phase (never the 0.75 one), a phase lasting one
//!   RTprop (the 1.25 phase longer until inflight reaches 1.25 BDP or a loss, the 0.75 phase
//!   shorter once inflight is down to one BDP: `bbr_is_next_cycle_phase`); cwnd gain 2.
//!   PROBE_RTT: when RTprop has not been refreshed for 10 s, cwnd goes to [`CWND_MIN_TARGET`]
//!   segments for [`PROBE_RTT_DURATION`] and at least one round, then back to the cwnd before
//!   (`bbr_check_probe_rtt_done`).
//! * cwnd (`bbr_set_cwnd`): target = cwnd_gain * BDP + the quantization budget (3 TSO goals,
//!   rounded up to even, + 2 in the 1.25 phase: `bbr_quantization_budget`); it grows by the
//!   data ACKed towards the target, never below [`CWND_MIN_TARGET`].
//! * Loss (`bbr_set_cwnd_to_recover_or_restore`): cwnd drops by the data newly marked lost; the
//!   first round of a fast recovery is packet-conserving (cwnd = in flight + ACKed); leaving
//!   recovery or a timeout's loss state restores the cwnd before it. ssthresh is not used
//!   (Linux leaves it at TCP_INFINITE_SSTHRESH), except that entering DRAIN records one BDP
//!   there, as Linux does for its statistics.
//!
//! * ACK aggregation ([`ack_aggregation`], `bbr_update_ack_aggregation`): the recent maximum
//!   of data ACKed beyond what the bandwidth estimate explains is added to the cwnd target
//!   once STARTUP found the pipe full. Switch: [`BbrParts::ack_aggregation`].
//! * Policer detection ([`policer`], `bbr_lt_bw_sampling`): two lossy long intervals of the
//!   same delivery rate mean a token-bucket policer; BBR then uses that rate, at pacing gain
//!   1, for 48 rounds. Switch: [`BbrParts::policer_detection`].
//!
//! Windows are in segments as in Linux; rates in payload bytes per second (Linux uses
//! segments per microsecond scaled by 2^24: the same numbers up to its rounding).
//!
//! Not built (in the kernel's tcp_bbr.c, left out here): the restart after idle
//! (`CA_EVENT_TX_START`, `idle_restart`), the ACK-delay check of the min-RTT filter
//! (`rs->is_ack_delayed` in `bbr_update_min_rtt`), and the EDT correction of inflight
//! (`bbr_packets_in_net_at_edt`; a patched build with it moved the 50-flow FQ-CoDel case's
//! held share and median delay by less than their spread: docs/fidelity.md, "BBR's policer
//! mode").

mod ack_aggregation;
mod policer;

pub use ack_aggregation::AckAggregation;
pub use policer::LtEvent;
use policer::{LtBwSampler, LtInput, Verdict};

use aqmlab_core::{SimRng, Time};

/// 2/ln 2 (Linux `bbr_high_gain` = 2885/1000): the smallest gain that doubles the sending rate
/// each round, as slow start does.
pub const HIGH_GAIN: f64 = 2885.0 / 1000.0;
/// Linux `bbr_drain_gain` = 1000/2885: drains in one round the queue STARTUP made.
pub const DRAIN_GAIN: f64 = 1000.0 / 2885.0;
/// Linux `bbr_cwnd_gain`: cwnd = 2 BDP in PROBE_BW.
pub const CWND_GAIN: f64 = 2.0;
/// Linux `bbr_pacing_gain[]`: probe for more, drain what that queued, cruise six phases.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux `bbr_cycle_rand`: the start phase is drawn among the 7 that are not the 0.75 one.
pub const CYCLE_RAND: u64 = 7;
/// Linux `bbr_bw_rtts` = CYCLE_LEN + 2: the bandwidth filter's window in round trips.
pub const BW_WINDOW_ROUNDS: u64 = 10;
/// Linux `bbr_min_rtt_win_sec`.
pub const MIN_RTT_WINDOW: Time = Time::from_secs(10);
/// Linux `bbr_probe_rtt_mode_ms`.
pub const PROBE_RTT_DURATION: Time = Time::from_millis(200);
/// Linux `bbr_cwnd_min_target`: the window in PROBE_RTT and the floor elsewhere (segments).
pub const CWND_MIN_TARGET: u64 = 4;
/// Linux `bbr_full_bw_thresh` = 5/4: STARTUP's bandwidth must grow 25 % a round...
pub const FULL_BW_THRESH: f64 = 1.25;
/// ... or STARTUP ends after this many rounds (Linux `bbr_full_bw_cnt`).
pub const FULL_BW_COUNT: u32 = 3;
/// Linux `bbr_pacing_margin_percent`: pace 1 % below the rate, to keep queues small.
pub const PACING_MARGIN: f64 = 0.99;
/// Linux `TCP_INIT_CWND`: the BDP before any RTT sample, and cwnd grows freely until this
/// many segments are delivered.
pub const TCP_INIT_CWND: u64 = 10;
// These three and `tso_segs_goal`'s floor are `tcp::tso`'s too (tcp_tso_autosize, the pacer's
// bursts). Taking them from there gave the same results but moved the compiler's code
// partitioning: the rfc profile, which never runs BBR, cost 2.2 % more instructions in
// untouched link code (benches/README.md, "Linux's skb bursts"), so each module keeps its own.
/// Linux `bbr_min_tso_rate` (bit/s): below it the TSO goal is one segment, else two.
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
/// Linux `sk_pacing_shift` = 10: the TSO goal is about 1 ms of data at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// Linux's `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (65536 - 1 - 320).
const GSO_MAX_BYTES: u64 = 65_215;

/// The parts of tcp_bbr.c that can be switched off to test what each does (both on in the
/// kernel, and by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BbrParts {
    /// The ACK-aggregation allowance (`bbr_update_ack_aggregation`, `bbr_ack_aggregation_cwnd`).
    pub ack_aggregation: bool,
    /// The long-term bandwidth sampling that detects policers (`bbr_lt_bw_sampling`).
    pub policer_detection: bool,
}

impl Default for BbrParts {
    fn default() -> BbrParts {
        BbrParts { ack_aggregation: true, policer_detection: true }
    }
}

/// BBR's modes (Linux `enum bbr_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The sender's loss state, as Linux's `icsk_ca_state` orders it (Open < Recovery < Loss;
/// Disorder and CWR are not distinguished here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    /// Fast recovery (RFC 5681 / RFC 6675).
    Recovery,
    /// After a retransmission timeout, until what was outstanding then is acknowledged.
    Loss,
}

/// One ACK, as BBR sees it (Linux's `struct rate_sample` plus the socket fields it reads).
#[derive(Clone, Copy, Debug)]
pub struct AckInput {
    pub now: Time,
    /// The rate sample's rate (bytes/s), None when the sample is invalid.
    pub rate: Option<f64>,
    /// rs.prior_delivered (bytes).
    pub prior_delivered: u64,
    pub is_app_limited: bool,
    /// rs.rtt.
    pub rtt: Option<Time>,
    /// rs.acked_sacked (bytes).
    pub acked_sacked: u64,
    /// rs.losses: bytes newly marked lost by this ACK.
    pub losses: u64,
    /// rs.prior_in_flight: bytes in flight before the ACK.
    pub prior_in_flight: u64,
    /// C.delivered after the ACK (bytes).
    pub delivered: u64,
    /// Bytes in flight after the ACK (Linux `tcp_packets_in_flight`).
    pub in_flight: u64,
    /// The sender's loss state after the ACK.
    pub state: CaState,
    /// The smoothed RTT, for the initial pacing rate.
    pub srtt: Option<Time>,
}

/// Kathleen Nichols' windowed running maximum over three samples (the algorithm of Linux's
/// `lib/minmax.c`): the best, second-best and third-best values in the window, each with its
/// time (here: the round count).
#[derive(Clone, Copy, Debug, Default)]
struct WindowedMax {
    s: [(u64, f64); 3],
}

impl WindowedMax {
    fn get(&self) -> f64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [(t, v); 3];
        v
    }

    fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        let sample = (t, v);
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            return self.reset(t, v); // a new maximum, or nothing left in the window
        }
        if v >= self.s[1].1 {
            self.s[2] = sample;
            self.s[1] = sample;
        } else if v >= self.s[2].1 {
            self.s[2] = sample;
        }
        // Age the samples: the best expires after `win`; the second and third are refreshed
        // after a quarter and half of the window so that the best is replaced by a recent one.
        let dt = t - self.s[0].0;
        if dt > win {
            self.s = [self.s[1], self.s[2], sample];
            if t - self.s[0].0 > win {
                self.s = [self.s[1], self.s[2], sample];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[2] = sample;
            self.s[1] = sample;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = sample;
        }
        self.s[0].1
    }
}

/// One BBR sender's state (Linux `struct bbr`).
#[derive(Clone, Debug)]
pub struct Bbr {
    mss: u64,
    mode: Mode,
    /// cwnd in segments (Linux `snd_cwnd`, which BBR owns).
    cwnd: u64,
    /// Pacing rate, payload bytes per second (Linux `sk_pacing_rate`).
    pacing_rate: u64,
    bw: WindowedMax,
    /// Round trips counted (Linux `rtt_cnt`), the bandwidth filter's clock.
    rtt_cnt: u64,
    /// C.delivered at which the next round starts.
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt: Option<Time>,
    /// When min_rtt was last set (None until the first ACK: Linux stamps it when the
    /// connection starts).
    min_rtt_stamp: Option<Time>,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    /// cwnd before a loss or PROBE_RTT, restored after (segments).
    prior_cwnd: u64,
    full_bw: f64,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    /// When the current gain phase began (Linux `cycle_mstamp`, a delivered_mstamp).
    cycle_stamp: Time,
    pacing_gain: f64,
    cwnd_gain: f64,
    has_seen_rtt: bool,
    /// ssthresh as Linux reports it (segments; set on entering DRAIN).
    ssthresh: Option<u64>,
    /// The random start phase of PROBE_BW (`aqmlab_model::streams::flow_bbr`).
    rng: SimRng,
    parts: BbrParts,
    ack_aggregation: AckAggregation,
    lt: LtBwSampler,
    /// C.lost as BBR sees it: the sum of every ACK's rs.losses and what timeouts marked lost
    /// (Linux `tp->lost`), bytes.
    lost: u64,
    /// C.delivered and the time of the last ACK that delivered data (Linux `tp->delivered`,
    /// `tp->delivered_mstamp`), for the samplers called outside an ACK.
    last_delivered: u64,
    last_delivered_time: Time,
}

impl Bbr {
    /// A sender with an initial window of `initial_cwnd` segments (Linux `bbr_init`), every
    /// part on as in the kernel.
    pub fn new(mss: u64, initial_cwnd: u64, rng: SimRng) -> Bbr {
        Bbr::with_parts(mss, initial_cwnd, rng, BbrParts::default())
    }

    /// As [`Self::new`], with the switchable parts as `parts` says.
    pub fn with_parts(mss: u64, initial_cwnd: u64, rng: SimRng, parts: BbrParts) -> Bbr {
        let mut b = Bbr {
            mss,
            mode: Mode::Startup,
            cwnd: initial_cwnd.max(1),
            pacing_rate: 0,
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: None,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            prior_cwnd: 0,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            has_seen_rtt: false,
            ssthresh: None,
            rng,
            parts,
            ack_aggregation: AckAggregation::default(),
            lt: LtBwSampler::default(),
            lost: 0,
            last_delivered: 0,
            last_delivered_time: Time::ZERO,
        };
        b.init_pacing_rate_from_rtt(None);
        b
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    /// cwnd in bytes.
    pub fn cwnd_bytes(&self) -> u64 {
        self.cwnd * self.mss
    }
    /// cwnd in segments.
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn pacing_rate(&self) -> u64 {
        self.pacing_rate
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    /// BtlBw: the windowed maximum delivery rate (bytes/s).
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }
    /// Linux `bbr_bw`: the rate BBR paces and sizes cwnd from: the policed rate while policer
    /// detection uses it, else [`Self::max_bw`] (bytes/s).
    pub fn bw(&self) -> f64 {
        if self.lt.in_use() {
            self.lt.bw()
        } else {
            self.max_bw()
        }
    }
    /// Whether policer detection found a policer and paces at its rate (Linux `lt_use_bw`).
    pub fn policed(&self) -> bool {
        self.lt.in_use()
    }
    /// The long-term sampler's rate (bytes/s): the last interval's, or the policed rate.
    pub fn lt_bw(&self) -> f64 {
        self.lt.bw()
    }
    /// The long-term sampler's events so far (the `bbr_intervals` table).
    pub fn lt_events(&self) -> &[LtEvent] {
        self.lt.events()
    }
    /// The ACK-aggregation estimator.
    pub fn ack_aggregation(&self) -> &AckAggregation {
        &self.ack_aggregation
    }
    /// The switchable parts this sender runs.
    pub fn parts(&self) -> BbrParts {
        self.parts
    }
    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn round_count(&self) -> u64 {
        self.rtt_cnt
    }
    /// ssthresh in bytes once DRAIN set it.
    pub fn ssthresh_bytes(&self) -> Option<u64> {
        self.ssthresh.map(|s| s * self.mss)
    }

    /// Linux `bbr_rate_bytes_per_sec`: bw * gain, less the pacing margin.
    fn rate(bw: f64, gain: f64) -> u64 {
        (bw * gain * PACING_MARGIN) as u64
    }

    /// Linux `bbr_init_pacing_rate_from_rtt`: high_gain * cwnd / srtt (1 ms without a sample).
    fn init_pacing_rate_from_rtt(&mut self, srtt: Option<Time>) {
        let rtt = match srtt {
            Some(s) if s.0 > 0 => {
                self.has_seen_rtt = true;
                s
            }
            _ => Time::from_millis(1),
        };
        let bw = (self.cwnd * self.mss) as f64 * 1e9 / rtt.0 as f64;
        self.pacing_rate = Bbr::rate(bw, HIGH_GAIN);
    }

    /// Linux `bbr_bdp`: gain * bw * min_rtt in segments, rounded up; TCP_INIT_CWND before any
    /// RTT sample.
    pub fn bdp(&self, bw: f64, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else { return TCP_INIT_CWND };
        let bytes = bw * min_rtt.0 as f64 / 1e9 * gain;
        (bytes / self.mss as f64).ceil() as u64
    }

    /// Linux `bbr_tso_segs_goal`: about 1 ms of data at the pacing rate, 1 or 2 segments at
    /// least, at most 127.
    fn tso_segs_goal(&self) -> u64 {
        let min_segs = if self.pacing_rate < MIN_TSO_RATE_BPS / 8 { 1 } else { 2 };
        let bytes = (self.pacing_rate >> PACING_SHIFT).min(GSO_MAX_BYTES);
        (bytes / self.mss).max(min_segs).min(0x7f)
    }

    /// Linux `bbr_quantization_budget`: room for 3 TSO bursts, an even cwnd, and 2 more in the
    /// 1.25 phase so that it can actually probe.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut c = cwnd + 3 * self.tso_segs_goal();
        c = (c + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            c += 2;
        }
        c
    }

    /// Linux `bbr_inflight`: the data in flight that `gain` times the BDP allows.
    pub fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_save_cwnd`: the cwnd to restore after a loss episode or PROBE_RTT.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// ssthresh in bytes: what DRAIN set, else "unset" (Linux's TCP_INFINITE_SSTHRESH).
    pub fn ssthresh_or_unset(&self) -> u64 {
        self.ssthresh_bytes().unwrap_or(super::SSTHRESH_UNSET)
    }

    /// Fast recovery begins: Linux calls `bbr_ssthresh`, which saves cwnd and leaves ssthresh
    /// as it is; returns that ssthresh.
    pub fn on_congestion_event(&mut self) -> u64 {
        self.save_cwnd();
        self.ssthresh_or_unset()
    }

    /// A retransmission timeout (Linux `tcp_enter_loss`: `bbr_ssthresh` saves cwnd, cwnd =
    /// in flight + 1 = 1 segment, then `bbr_set_state(TCP_CA_Loss)`: the full-bandwidth
    /// estimate restarts and a new round starts).
    pub fn on_timeout(&mut self) {
        self.save_cwnd();
        self.cwnd = 1;
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
    }

    /// What a timeout marked lost (`marked_lost` bytes: `tcp_enter_loss` marks every
    /// segment not SACKed), heard after [`Self::on_timeout`]: Linux's `bbr_set_state` for
    /// TCP_CA_Loss feeds the policer detection a lossy round start.
    pub fn on_timeout_marked_lost(&mut self, marked_lost: u64) {
        self.lost += marked_lost;
        if !self.parts.policer_detection {
            return;
        }
        let input = LtInput { round_start: true, lossy: true, is_app_limited: false, ..self.lt_input() };
        self.apply_lt_verdict(input);
    }

    /// The policer detection's view of the connection now (between ACKs: the last one's).
    fn lt_input(&self) -> LtInput {
        LtInput {
            now: self.last_delivered_time,
            round_start: self.round_start,
            in_probe_bw: self.mode == Mode::ProbeBw,
            lossy: false,
            is_app_limited: false,
            delivered: self.last_delivered,
            lost: self.lost,
        }
    }

    fn apply_lt_verdict(&mut self, input: LtInput) {
        match self.lt.on_ack(&input) {
            Verdict::Nothing => {}
            // Linux bbr_lt_bw_interval_done sets pacing_gain itself: the cycle-phase check of
            // this ACK already sees gain 1.
            Verdict::Policed => self.pacing_gain = 1.0,
            Verdict::Expired => self.reset_probe_bw_mode(input.now),
        }
    }

    /// A timeout found spurious (F-RTO): Linux's undo (`bbr_undo_cwnd`) keeps cwnd and
    /// restarts the full-bandwidth estimate and the policer detection.
    pub fn on_spurious_timeout(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        let input = self.lt_input();
        self.lt.reset(&input);
    }

    /// Whether PROBE_RTT asks the estimator to mark the connection app-limited (Linux sets
    /// `tp->app_limited` there so that its low-rate samples do not lower the estimate).
    pub fn in_probe_rtt(&self) -> bool {
        self.mode == Mode::ProbeRtt
    }

    /// Linux `bbr_main`: update the model from one ACK, then set the pacing rate and cwnd.
    pub fn on_ack(&mut self, a: &AckInput) {
        self.lost += a.losses;
        if a.acked_sacked > 0 {
            self.last_delivered_time = a.now;
        }
        self.last_delivered = a.delivered;
        self.update_bw(a);
        self.update_ack_aggregation(a);
        self.update_cycle_phase(a);
        self.check_full_bw_reached(a);
        self.check_drain(a);
        self.update_min_rtt(a);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(bw, a.srtt);
        self.set_cwnd(a, bw);
    }

    /// Linux `bbr_update_ack_aggregation` (a valid rate sample with data (S)ACKed).
    fn update_ack_aggregation(&mut self, a: &AckInput) {
        if !self.parts.ack_aggregation || a.rate.is_none() {
            return;
        }
        let acked = a.acked_sacked.div_ceil(self.mss);
        let bw = self.bw();
        self.ack_aggregation.update(a.now, acked, self.round_start, bw, self.mss, self.cwnd);
    }

    /// Linux `bbr_update_bw`: count rounds and feed the bandwidth filter.
    fn update_bw(&mut self, a: &AckInput) {
        self.round_start = false;
        let Some(bw) = a.rate else { return };
        if a.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = a.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        if self.parts.policer_detection {
            let input = LtInput {
                now: a.now,
                round_start: self.round_start,
                in_probe_bw: self.mode == Mode::ProbeBw,
                lossy: a.losses > 0,
                is_app_limited: a.is_app_limited,
                delivered: a.delivered,
                lost: self.lost,
            };
            self.apply_lt_verdict(input);
        }
        if !a.is_app_limited || bw >= self.max_bw() {
            self.bw.update(BW_WINDOW_ROUNDS, self.rtt_cnt, bw);
        }
    }

    /// Linux `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, a: &AckInput) -> bool {
        let is_full_length = self.min_rtt.is_none_or(|m| a.now - self.cycle_stamp > m);
        let bw = self.max_bw();
        let gain = self.pacing_gain;
        if gain == 1.0 {
            return is_full_length;
        }
        let inflight = a.prior_in_flight.div_ceil(self.mss);
        if gain > 1.0 {
            return is_full_length && (a.losses > 0 || inflight >= self.inflight(bw, gain));
        }
        is_full_length || inflight <= self.inflight(bw, 1.0)
    }

    fn advance_cycle_phase(&mut self, now: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % PACING_GAIN_CYCLE.len();
        self.cycle_stamp = now;
    }

    /// Linux `bbr_update_cycle_phase` (the phase clock is the time of the last delivery, here
    /// the ACK's).
    fn update_cycle_phase(&mut self, a: &AckInput) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(a) {
            self.advance_cycle_phase(a.now);
        }
    }

    /// Linux `bbr_reset_probe_bw_mode`: a random start phase among the 7 that follow
    /// 1..=7, so never the 0.75 phase.
    fn reset_probe_bw_mode(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = PACING_GAIN_CYCLE.len() - 1 - (self.rng.next_u64() % CYCLE_RAND) as usize;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: Time) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(now);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Linux `bbr_check_full_bw_reached`: once per round that is not app-limited, has the
    /// estimate grown 25 % since the last growth? Three rounds without: the pipe is full.
    fn check_full_bw_reached(&mut self, a: &AckInput) {
        if self.full_bw_reached || !self.round_start || a.is_app_limited {
            return;
        }
        let bw = self.max_bw();
        if bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_COUNT;
    }

    /// Linux `bbr_check_drain`.
    fn check_drain(&mut self, a: &AckInput) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = Some(self.inflight(self.max_bw(), 1.0));
        }
        if self.mode == Mode::Drain && a.in_flight.div_ceil(self.mss) <= self.inflight(self.max_bw(), 1.0) {
            self.reset_probe_bw_mode(a.now);
        }
    }

    /// Linux `bbr_update_min_rtt`, with PROBE_RTT's entry and exit (the ACK-delay check is not
    /// modelled: every RTT sample may refresh an expired minimum).
    fn update_min_rtt(&mut self, a: &AckInput) {
        let stamp = *self.min_rtt_stamp.get_or_insert(a.now);
        let filter_expired = a.now > stamp + MIN_RTT_WINDOW;
        if let Some(rtt) = a.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || filter_expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = Some(a.now);
            }
        }
        if filter_expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done_stamp {
                None if a.in_flight.div_ceil(self.mss) <= CWND_MIN_TARGET => {
                    // Hold the small window for 200 ms and at least one round.
                    self.probe_rtt_done_stamp = Some(a.now + PROBE_RTT_DURATION);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = a.delivered;
                }
                Some(done) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done && a.now > done {
                        // Linux `bbr_check_probe_rtt_done`.
                        self.min_rtt_stamp = Some(a.now);
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        self.reset_mode(a.now);
                    }
                }
                None => {}
            }
        }
    }

    /// Linux `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            // A policer found: pace at its rate, without probing above it.
            Mode::ProbeBw if self.lt.in_use() => (1.0, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// Linux `bbr_set_pacing_rate`: in STARTUP the rate only rises.
    fn set_pacing_rate(&mut self, bw: f64, srtt: Option<Time>) {
        let rate = Bbr::rate(bw, self.pacing_gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate_from_rtt(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore`: Some(cwnd) while packet conservation holds.
    fn recover_or_restore(&mut self, a: &AckInput) -> (u64, bool) {
        let (acked, in_flight) = (a.acked_sacked.div_ceil(self.mss), a.in_flight.div_ceil(self.mss));
        let mut cwnd = self.cwnd;
        if a.losses > 0 {
            cwnd = cwnd.saturating_sub(a.losses.div_ceil(self.mss)).max(1);
        }
        if a.state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            // The first round of recovery: send one segment per segment delivered.
            self.packet_conservation = true;
            self.next_rtt_delivered = a.delivered;
            cwnd = in_flight + acked;
        } else if self.prev_ca_state >= CaState::Recovery && a.state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = a.state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd`.
    fn set_cwnd(&mut self, a: &AckInput, bw: f64) {
        let acked = a.acked_sacked.div_ceil(self.mss);
        if acked > 0 {
            let (mut cwnd, conserving) = self.recover_or_restore(a);
            if !conserving {
                let mut target = self.bdp(bw, self.cwnd_gain);
                if self.parts.ack_aggregation {
                    // Room for the data that arrives ACKed in bursts (bbr_ack_aggregation_cwnd).
                    target += self.ack_aggregation.cwnd_allowance(self.full_bw_reached, bw, self.mss);
                }
                let target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || a.delivered < TCP_INIT_CWND * self.mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
            self.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(CWND_MIN_TARGET);
        }
    }
}

#[cfg(test)]
mod tests;
