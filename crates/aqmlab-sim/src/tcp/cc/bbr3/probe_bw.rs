//! BBRv3's ProbeBW cycle (draft-ietf-ccwg-bbr-06 section 5.3.3): entering each of DOWN, CRUISE,
//! REFILL and UP, the per-ACK phase logic with its timing (sections 5.3.3.8, 5.3.3.9), and the
//! long-term model the probes adapt: inflight_longterm raised while probing succeeds and cut when
//! a probe's round loses more than 2 % (section 5.5.10.2), and the max_bw filter's cycle clock
//! (section 5.5.6).

use super::{AckInput, AckPhase, Bbr3, State, V3Sample, BETA, PROBE_WAIT_BASE, PROBE_WAIT_RAND, RENO_MAX_ROUNDS};
use aqmlab_core::Time;

impl Bbr3 {
    /// StartProbeBW_DOWN (section 5.3.3.9) with PickProbeWait (5.3.3.8.3).
    pub(super) fn start_probe_bw_down(&mut self, now: Time, delivered: u64) {
        self.is_loss_in_round = false; // ResetCongestionSignals
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
        self.probe_up_acked_per_inc = u64::MAX;
        self.rounds_since_probe_up = self.rng.next_u64() % 2;
        self.bw_probe_wait = PROBE_WAIT_BASE + Time(self.rng.next_u64() % PROBE_WAIT_RAND.0);
        self.cycle_stamp = now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round(delivered);
        self.state = State::ProbeBwDown;
    }

    pub(super) fn start_probe_bw_cruise(&mut self) {
        self.state = State::ProbeBwCruise;
    }

    /// StartProbeBW_REFILL (section 5.3.3.9): the short-term model is forgotten.
    pub(super) fn start_probe_bw_refill(&mut self) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round(self.delivered);
        self.state = State::ProbeBwRefill;
    }

    /// StartProbeBW_UP (section 5.3.3.9).
    pub(super) fn start_probe_bw_up(&mut self, rate: f64) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round(self.delivered);
        self.reset_full_bw();
        self.full_bw = rate;
        self.state = State::ProbeBwUp;
        self.raise_inflight_longterm_slope();
    }

    pub(super) fn reset_short_term_model(&mut self) {
        self.bw_shortterm = f64::INFINITY;
        self.inflight_shortterm = u64::MAX;
    }

    /// UpdateProbeBWCyclePhase (section 5.3.3.9), on an ACK that delivered data.
    pub(super) fn update_probe_bw_cycle_phase(&mut self, a: &AckInput, x: &V3Sample, rate: f64) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(a, x) {
            return;
        }
        match self.state {
            State::ProbeBwDown => {
                if self.is_time_to_probe_bw(a.now) {
                    return;
                }
                if self.is_time_to_cruise(a.in_flight) {
                    self.start_probe_bw_cruise();
                }
            }
            State::ProbeBwCruise => {
                self.is_time_to_probe_bw(a.now);
            }
            // After one round of REFILL, UP.
            State::ProbeBwRefill if self.round_start => {
                self.is_bw_probe_sample = true;
                self.start_probe_bw_up(rate);
            }
            State::ProbeBwUp => {
                let down = self.is_time_to_go_down(a.in_flight, rate); // may reset the full-bw estimator
                if down {
                    self.prev_probe_too_high = false;
                    self.start_probe_bw_down(a.now, a.delivered);
                }
            }
            _ => {}
        }
    }

    /// IsTimeToProbeBW (section 5.3.3.8.3): the wall-clock wait is over, or Reno would have
    /// probed by now; then REFILL starts.
    pub(super) fn is_time_to_probe_bw(&mut self, now: Time) -> bool {
        let reno_rounds = (self.target_inflight() / self.mss).min(RENO_MAX_ROUNDS);
        if now > self.cycle_stamp + self.bw_probe_wait || self.rounds_since_probe_up >= reno_rounds {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// IsTimeToCruise (section 5.3.3.9): headroom left and the queue drained.
    pub(super) fn is_time_to_cruise(&self, in_flight: u64) -> bool {
        in_flight <= self.inflight_with_headroom() && in_flight <= self.inflight(self.max_bw(), 1.0)
    }

    /// IsTimeToGoDown (section 5.3.3.9).
    pub(super) fn is_time_to_go_down(&mut self, in_flight: u64, rate: f64) -> bool {
        if self.prev_probe_too_high && in_flight >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_longterm {
            self.reset_full_bw(); // bw is limited by inflight_longterm
            self.full_bw = rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// RaiseInflightLongtermSlope (section 5.3.3.9): 1, 2, 4, ... segments a round.
    pub(super) fn raise_inflight_longterm_slope(&mut self) {
        let growth = 1u64 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth).max(self.mss);
    }

    /// ProbeInflightLongtermUpward (section 5.3.3.9).
    pub(super) fn probe_inflight_longterm_upward(&mut self, newly_acked: u64) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// HandleInflightTooHigh (section 5.5.10.2): inflight_longterm = max(tx_in_flight,
    /// beta * TargetInflight); UP ends.
    pub(super) fn handle_inflight_too_high(&mut self, a: &AckInput, x: &V3Sample) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false; // react once per probe
        if !a.is_app_limited {
            self.inflight_longterm = x.tx_in_flight.max((self.target_inflight() as f64 * BETA) as u64);
        }
        if self.state == State::ProbeBwUp {
            self.undo_state = Some(State::ProbeBwUp);
            self.start_probe_bw_down(a.now, a.delivered);
        }
    }

    /// AdaptLongTermModel (section 5.3.3.9) with the ACK-level loss check (Linux v3's
    /// `bbr_adapt_upper_bounds`); true when it decided a state transition.
    pub(super) fn adapt_long_term_model(&mut self, a: &AckInput, x: &V3Sample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !a.is_app_limited {
                self.cycle_count += 1; // AdvanceMaxBwFilter
                self.bw_slots[(self.cycle_count % 2) as usize] = 0.0;
            }
            if self.state.is_probe_bw() && self.prev_probe_precautionary && !self.prev_probe_too_high {
                self.start_probe_bw_refill();
                return true;
            }
        }
        if Bbr3::is_inflight_too_high(x) {
            if self.is_bw_probe_sample {
                let was_up = self.state == State::ProbeBwUp;
                self.handle_inflight_too_high(a, x);
                return was_up;
            }
            return false;
        }
        if self.inflight_longterm == u64::MAX {
            return false;
        }
        if x.tx_in_flight > self.inflight_longterm {
            self.inflight_longterm = x.tx_in_flight;
        }
        if self.state == State::ProbeBwUp {
            self.probe_inflight_longterm_upward(a.acked_sacked);
        }
        false
    }
}
