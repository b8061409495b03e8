//! CUBIC's own HyStart, as a Linux kernel's `tcp_cubic.c` runs it by default (Ha and Rhee,
//! "Taming the elephants: new TCP slow start", Computer Networks 2011): two tests on each ACK
//! of slow start that end it at once with ssthresh = cwnd, with no Conservative Slow Start.
//! This is not RFC 9406's HyStart++ ([`super::hystart`]); the two are exclusive.
//!
//! * **ACK train** (`HYSTART_ACK_TRAIN`): ACKs that follow each other within 2 ms
//!   (`hystart_ack_delta_us`) form a train; once the train of the current round has lasted
//!   longer than half the minimum RTT, the round's data filled the path, and slow start ends.
//!   The threshold is (delay_min + ack_delay) / 2 for an unpaced sender, delay_min + ack_delay
//!   for a paced one (pacing spreads a round over up to an RTT); ack_delay is
//!   `hystart_ack_delay`'s TSO/GRO cushion, min(1 ms, 4 x 64 KB / pacing rate), which is 1 ms at
//!   every rate below 2 Gbit/s, so the simulator uses 1 ms.
//! * **Delay** (`HYSTART_DELAY`): the minimum RTT of the round's first eight samples
//!   (`HYSTART_MIN_SAMPLES`); once eight are in, a minimum above delay_min + clamp(delay_min /
//!   8, 4 ms, 16 ms) (`HYSTART_DELAY_THRESH`) ends slow start.
//!
//! Both run only while cwnd >= 16 segments (`hystart_low_window`) and until one fires
//! (`found`). A round ends when SND.UNA passes the SND.NXT recorded at its start
//! (`bictcp_hystart_reset`). A timeout resets everything, delay_min included (`cubictcp_state`
//! on TCP_CA_Loss), so the slow start after a timeout runs HyStart again.
//!
//! RTT samples: Linux times every ACK (`cubictcp_acked`'s `rtt_us`); the sender's RFC 6298
//! estimator times one segment a round, so, as for HyStart++, this module keeps the send time of
//! each first transmission and samples each ACK as now minus the send time of the newest
//! segment it covers. The queue is cleared at a timeout, so no sample spans a retransmission.
//! Not modelled: Linux's discarding of samples in the first second after a recovery
//! (`epoch_start`), which concerns congestion avoidance, not slow start.

use super::send_times::SendTimes;
use aqmlab_core::Time;

/// `hystart_low_window`: HyStart acts only once cwnd has reached 16 segments.
pub const LOW_WINDOW_SEGMENTS: u64 = 16;
/// `hystart_ack_delta_us`: ACKs at most 2 ms apart belong to one train.
pub const ACK_DELTA: Time = Time(2_000_000);
/// `hystart_ack_delay`'s cap, min(1 ms, 4 x GSO size / pacing rate): 1 ms below 2 Gbit/s.
pub const ACK_DELAY: Time = Time(1_000_000);
/// `HYSTART_MIN_SAMPLES`: samples per round before the delay test.
pub const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX`: the delay test's margin is delay_min / 8
/// clamped to [4 ms, 16 ms].
pub const DELAY_MIN: Time = Time(4_000_000);
pub const DELAY_MAX: Time = Time(16_000_000);

/// Which test ended slow start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    AckTrain,
    Delay,
}

/// CUBIC's HyStart state for one sender (`struct bictcp`'s HyStart fields).
#[derive(Clone, Debug)]
pub struct CubicHyStart {
    mss: u64,
    paced: bool,
    /// `found`: slow start has been ended; nothing more until a timeout resets it.
    found: bool,
    round_start: Time,
    last_ack: Time,
    /// `end_seq`: the round ends when SND.UNA passes it.
    end_seq: u64,
    /// `curr_rtt`: the minimum of this round's samples (None: none yet).
    curr_rtt: Option<Time>,
    sample_cnt: u32,
    /// `delay_min`: the minimum RTT sample since the start or the last timeout.
    delay_min: Option<Time>,
    /// The send times of first transmissions not yet acknowledged.
    sent: SendTimes,
    /// How often each test ended slow start.
    pub ack_train_exits: u32,
    pub delay_exits: u32,
}

/// `HYSTART_DELAY_THRESH(delay_min >> 3)`.
pub fn delay_threshold(delay_min: Time) -> Time {
    Time(delay_min.0 >> 3).max(DELAY_MIN).min(DELAY_MAX)
}

impl CubicHyStart {
    /// At connection start (`cubictcp_init`): the first round ends at `snd_nxt`.
    pub fn new(mss: u64, paced: bool, snd_nxt: u64, now: Time) -> CubicHyStart {
        let mut h = CubicHyStart {
            mss,
            paced,
            found: false,
            round_start: now,
            last_ack: now,
            end_seq: snd_nxt,
            curr_rtt: None,
            sample_cnt: 0,
            delay_min: None,
            sent: SendTimes::default(),
            ack_train_exits: 0,
            delay_exits: 0,
        };
        h.reset_round(snd_nxt, now);
        h
    }

    /// The segment ending at `end` was sent for the first time at `now`.
    pub fn on_sent(&mut self, end: u64, now: Time) {
        self.sent.on_sent(end, now);
    }

    /// A retransmission timeout (`cubictcp_state(TCP_CA_Loss)`): everything starts over, the
    /// minimum RTT included; samples of data sent before it are dropped.
    pub fn on_timeout(&mut self, snd_nxt: u64, now: Time) {
        self.found = false;
        self.delay_min = None;
        self.sent.clear();
        self.reset_round(snd_nxt, now);
    }

    /// `bictcp_hystart_reset`: a new round from `now`, ending when SND.UNA passes `snd_nxt`.
    fn reset_round(&mut self, snd_nxt: u64, now: Time) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// An ACK of new data up to `ack` (SND.UNA after it) at `now`, with `cwnd` bytes and
    /// `snd_nxt` the highest sequence sent; `in_slow_start`: cwnd < ssthresh. Returns the test
    /// that ends slow start on this ACK (the sender then sets ssthresh = cwnd), if one does.
    pub fn on_ack(&mut self, ack: u64, cwnd: u64, snd_nxt: u64, in_slow_start: bool, now: Time) -> Option<Exit> {
        let delay = self.sent.rtt_sample(ack, now)?;
        // `cubictcp_acked`: delay_min is the minimum of every sample.
        let delay_min = *self.delay_min.get_or_insert(delay);
        let delay_min = delay_min.min(delay);
        self.delay_min = Some(delay_min);
        if self.found || !in_slow_start {
            return None;
        }
        // `hystart_update`.
        if ack > self.end_seq {
            self.reset_round(snd_nxt, now);
        }
        if cwnd < LOW_WINDOW_SEGMENTS * self.mss {
            return None;
        }
        if now - self.last_ack <= ACK_DELTA {
            self.last_ack = now;
            let mut threshold = delay_min + ACK_DELAY;
            if !self.paced {
                threshold = Time(threshold.0 >> 1);
            }
            if now - self.round_start > threshold {
                self.found = true;
                self.ack_train_exits += 1;
                return Some(Exit::AckTrain);
            }
        }
        self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt.is_some_and(|c| c > delay_min + delay_threshold(delay_min)) {
            self.found = true;
            self.delay_exits += 1;
            return Some(Exit::Delay);
        }
        None
    }
}

#[cfg(test)]
mod tests;
