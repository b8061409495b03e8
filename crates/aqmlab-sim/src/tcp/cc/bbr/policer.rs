//! BBR v1's long-term bandwidth sampling, which detects a token-bucket policer (Linux
//! `net/ipv4/tcp_bbr.c`: `bbr_lt_bw_sampling`, `bbr_lt_bw_interval_done`,
//! `bbr_reset_lt_bw_sampling`, `bbr_reset_lt_bw_sampling_interval`; the policers are those of
//! Flach et al., "An Internet-Wide Analysis of Traffic Policing", SIGCOMM 2016). A policer
//! passes a burst at any rate, then drops what exceeds its token rate; BBR's max filter would
//! keep the burst's rate and the drops would go on. So BBR watches long intervals:
//!
//! * sampling starts at the first loss (the policer's bucket is then empty);
//! * an interval lasts at least [`INTERVAL_MIN_ROUNDS`] rounds and ends at a loss once the
//!   interval's lost / delivered reaches [`LOSS_THRESH`] (50/256, about 20 %); more than
//!   4 x [`INTERVAL_MIN_ROUNDS`] rounds, or an app-limited sample, restarts the sampling;
//! * two intervals in a row whose delivery rates differ by at most 1/8 of the first, or by at
//!   most [`BW_DIFF`] (4 kbit/s), mean a policer: BBR then uses their mean rate (`lt_bw`) in
//!   place of its max filter, with pacing gain 1, for [`USE_ROUNDS`] rounds of PROBE_BW, then
//!   starts sampling afresh and restarts its gain cycle.
//!
//! Counts in bytes here (Linux's are segments; the ratios are the same); the interval's clock
//! is the delivery time in whole milliseconds, as Linux's `lt_last_stamp`.

use aqmlab_core::Time;

/// Linux `bbr_lt_intvl_min_rtts`: the shortest sampling interval, in rounds.
pub const INTERVAL_MIN_ROUNDS: u32 = 4;
/// Linux `bbr_lt_loss_thresh` = 50 (of 256): an interval this lossy may be policed.
pub const LOSS_THRESH: f64 = 50.0 / 256.0;
/// Linux `bbr_lt_bw_ratio` = 1/8: two intervals this close in rate are consistent...
pub const BW_RATIO: f64 = 1.0 / 8.0;
/// ... as are two within Linux `bbr_lt_bw_diff` = 4000/8 bytes/s (4 kbit/s), compared after
/// the pacing margin as Linux's `bbr_rate_bytes_per_sec` applies it.
pub const BW_DIFF: f64 = 4000.0 / 8.0;
/// Linux `bbr_lt_bw_max_rtts`: rounds of PROBE_BW that use the policed rate.
pub const USE_ROUNDS: u32 = 48;

/// What one call asks of BBR besides its own state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Nothing,
    /// A policer was just found: pace at gain 1 from now (Linux sets `pacing_gain` itself).
    Policed,
    /// The policed rate has been used for [`USE_ROUNDS`] rounds: restart PROBE_BW's cycle.
    Expired,
}

/// What happened to the sampler, one row of the `bbr_intervals` table (docs/tables.md): the
/// `event` column's codes.
pub mod event {
    /// A loss started the sampling (its first interval begins).
    pub const START: u8 = 0;
    /// An interval ended, its rate more than 1/8 from the one before (or the first).
    pub const INTERVAL: u8 = 1;
    /// An interval ended within 1/8 of the one before: a policer, paced at their mean.
    pub const POLICED: u8 = 2;
    /// The sampling restarted: an interval past 4 x [`super::INTERVAL_MIN_ROUNDS`] rounds, an
    /// app-limited sample, or an undo.
    pub const RESTART: u8 = 3;
    /// The policed rate had been used for [`super::USE_ROUNDS`] rounds.
    pub const EXPIRE: u8 = 4;
}

/// One event of the sampler: when, which ([`event`]), the ended interval's delivery rate
/// (INTERVAL and POLICED; 0 otherwise) and the long-term rate after it (`lt_bw`: the
/// interval's, the policed mean, or 0 once restarted or expired), bytes/s of payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LtEvent {
    pub t_ns: u64,
    pub event: u8,
    pub interval_rate: f64,
    pub lt_rate: f64,
}

/// One ACK as the sampler sees it.
#[derive(Clone, Copy, Debug)]
pub struct LtInput {
    /// The delivery time (Linux `tp->delivered_mstamp`).
    pub now: Time,
    pub round_start: bool,
    pub in_probe_bw: bool,
    /// rs.losses > 0.
    pub lossy: bool,
    pub is_app_limited: bool,
    /// C.delivered and C.lost (bytes).
    pub delivered: u64,
    pub lost: u64,
}

/// The sampler's state (Linux's `lt_is_sampling`, `lt_rtt_cnt`, `lt_use_bw`, `lt_bw`,
/// `lt_last_delivered`, `lt_last_stamp`, `lt_last_lost`).
#[derive(Clone, Debug, Default)]
pub struct LtBwSampler {
    is_sampling: bool,
    rounds: u32,
    use_bw: bool,
    /// bytes/s: the last interval's rate, or the policed rate while `use_bw`.
    bw: f64,
    last_delivered: u64,
    /// Milliseconds.
    last_stamp_ms: u64,
    last_lost: u64,
    /// Every event, for the records (an interval lasts four rounds or more; 32 bytes each).
    events: Vec<LtEvent>,
}

impl LtBwSampler {
    /// Whether BBR uses the policed rate (Linux `lt_use_bw`).
    pub fn in_use(&self) -> bool {
        self.use_bw
    }

    /// The long-term rate (bytes/s; the policed rate while [`Self::in_use`]).
    pub fn bw(&self) -> f64 {
        self.bw
    }

    /// The sampler's events so far, in time order.
    pub fn events(&self) -> &[LtEvent] {
        &self.events
    }

    fn log(&mut self, a: &LtInput, event: u8, interval_rate: f64) {
        self.events.push(LtEvent { t_ns: a.now.0, event, interval_rate, lt_rate: self.bw });
    }

    /// Linux `bbr_reset_lt_bw_sampling_interval`.
    fn reset_interval(&mut self, a: &LtInput) {
        self.last_stamp_ms = a.now.0 / 1_000_000;
        self.last_delivered = a.delivered;
        self.last_lost = a.lost;
        self.rounds = 0;
    }

    /// Linux `bbr_reset_lt_bw_sampling`: forget everything (also on an undo, `bbr_undo_cwnd`).
    pub fn reset(&mut self, a: &LtInput) {
        self.forget(a);
        self.log(a, event::RESTART, 0.0);
    }

    fn forget(&mut self, a: &LtInput) {
        self.bw = 0.0;
        self.use_bw = false;
        self.is_sampling = false;
        self.reset_interval(a);
    }

    /// Linux `bbr_lt_bw_interval_done`: compare the interval's rate with the last one.
    fn interval_done(&mut self, bw: f64, a: &LtInput) -> Verdict {
        if self.bw > 0.0 {
            let diff = (bw - self.bw).abs();
            if diff <= BW_RATIO * self.bw || diff * super::PACING_MARGIN <= BW_DIFF {
                self.bw = (bw + self.bw) / 2.0;
                self.use_bw = true;
                self.rounds = 0;
                self.log(a, event::POLICED, bw);
                return Verdict::Policed;
            }
        }
        self.bw = bw;
        self.reset_interval(a);
        self.log(a, event::INTERVAL, bw);
        Verdict::Nothing
    }

    /// Linux `bbr_lt_bw_sampling`, once per ACK with a valid rate sample (and once on a
    /// timeout, as a lossy round start: `bbr_set_state`).
    pub fn on_ack(&mut self, a: &LtInput) -> Verdict {
        if self.use_bw {
            if a.in_probe_bw && a.round_start {
                self.rounds += 1;
                if self.rounds >= USE_ROUNDS {
                    self.forget(a);
                    self.log(a, event::EXPIRE, 0.0);
                    return Verdict::Expired;
                }
            }
            return Verdict::Nothing;
        }
        if !self.is_sampling {
            // Wait for a loss: before it the policer's bucket still lets bursts through.
            if !a.lossy {
                return Verdict::Nothing;
            }
            self.reset_interval(a);
            self.is_sampling = true;
            self.log(a, event::START, 0.0);
        }
        if a.is_app_limited {
            // A sender without data would under-estimate the policed rate.
            self.reset(a);
            return Verdict::Nothing;
        }
        if a.round_start {
            self.rounds += 1;
        }
        if self.rounds < INTERVAL_MIN_ROUNDS {
            return Verdict::Nothing;
        }
        if self.rounds > 4 * INTERVAL_MIN_ROUNDS {
            self.reset(a);
            return Verdict::Nothing;
        }
        // The interval ends at a loss (the bucket is empty again), once lossy enough.
        if !a.lossy {
            return Verdict::Nothing;
        }
        let lost = a.lost - self.last_lost;
        let delivered = a.delivered - self.last_delivered;
        if delivered == 0 || (lost as f64) < LOSS_THRESH * delivered as f64 {
            return Verdict::Nothing;
        }
        let now_ms = a.now.0 / 1_000_000;
        if now_ms < self.last_stamp_ms + 1 {
            return Verdict::Nothing; // shorter than a millisecond: wait
        }
        let bw = delivered as f64 * 1e3 / (now_ms - self.last_stamp_ms) as f64;
        self.interval_done(bw, a)
    }
}

#[cfg(test)]
mod tests;
