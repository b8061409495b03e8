//! BBRv3's min_rtt estimate and ProbeRTT (draft-ietf-ccwg-bbr-06 section 5.3.4): the 10 s
//! min_rtt filter fed by a 5 s probe_rtt_min_delay, ProbeRTT when that expires, its cwnd of
//! half a BDP for 200 ms and a round, and the way out.

use super::{AckInput, AckPhase, Bbr3, State, MIN_RTT_FILTER_LEN, PROBE_RTT_CWND_GAIN, PROBE_RTT_DURATION, PROBE_RTT_INTERVAL};
use aqmlab_core::Time;

impl Bbr3 {
    /// UpdateMinRTT (section 5.3.4.3).
    pub(super) fn update_min_rtt(&mut self, a: &AckInput) {
        let now = a.now;
        let probe_stamp = *self.probe_rtt_min_stamp.get_or_insert(now);
        let min_stamp = *self.min_rtt_stamp.get_or_insert(now);
        self.probe_rtt_expired = now > probe_stamp + PROBE_RTT_INTERVAL;
        if let Some(rtt) = a.rtt {
            if self.probe_rtt_min_delay.is_none_or(|d| rtt < d) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = Some(now);
            }
        }
        let min_rtt_expired = now > min_stamp + MIN_RTT_FILTER_LEN;
        if let Some(d) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| d < m) || min_rtt_expired {
                self.min_rtt = Some(d);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    /// ProbeRTTCwnd (section 5.6.4.5): half a BDP, at least MinPipeCwnd.
    pub fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(self.bw, PROBE_RTT_CWND_GAIN).max(self.min_pipe_cwnd())
    }

    /// CheckProbeRTT with HandleProbeRTT and CheckProbeRTTDone (section 5.3.4.3).
    pub(super) fn check_probe_rtt(&mut self, a: &AckInput) {
        if self.state != State::ProbeRtt && self.probe_rtt_expired {
            self.state = State::ProbeRtt; // EnterProbeRTT
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round(a.delivered);
        }
        if self.state != State::ProbeRtt {
            return;
        }
        match self.probe_rtt_done_stamp {
            None if a.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(a.now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round(a.delivered);
            }
            Some(done) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done && a.now > done {
                    self.probe_rtt_min_stamp = Some(a.now);
                    self.cwnd = self.cwnd.max(self.prior_cwnd); // RestoreCwnd
                    self.exit_probe_rtt(a.now, a.delivered);
                }
            }
            None => {}
        }
    }

    /// ExitProbeRTT (section 5.3.4.4).
    pub(super) fn exit_probe_rtt(&mut self, now: Time, delivered: u64) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down(now, delivered);
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }
}
