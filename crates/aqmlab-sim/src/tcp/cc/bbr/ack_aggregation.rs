//! BBR v1's ACK-aggregation allowance (Linux `net/ipv4/tcp_bbr.c`: `bbr_update_ack_aggregation`,
//! `bbr_extra_acked`, `bbr_ack_aggregation_cwnd`). When ACKs arrive in bursts (a delayed-ACK
//! receiver, a link that serves in batches, a queue that released several flows' ACKs at
//! once), more data is acknowledged in a short time than the bandwidth estimate explains; a
//! window of exactly cwnd_gain * BDP would then stall the sender between bursts. BBR measures
//! the excess and adds its recent maximum to the cwnd target.
//!
//! The measure: an epoch starts whenever the data ACKed since its start falls to or below what
//! the estimated bandwidth would have delivered in the time elapsed; within an epoch, the
//! excess ACKed = ACKed - bw * elapsed. The maximum excess is kept in two buckets of
//! [`EXTRA_ACKED_WIN_ROUNDS`] rounds each, the older one forgotten when a new bucket starts, so
//! the filter covers the last 5 to 10 rounds. Each sample is capped by cwnd; the allowance by
//! [`EXTRA_ACKED_MAX`] of data at the estimated bandwidth, and it counts only once STARTUP
//! found the pipe full (`bbr_ack_aggregation_cwnd` tests `bbr_full_bw_reached`). Linux's gain
//! on the allowance, `bbr_extra_acked_gain`, is 1 (256/256), so there is no gain here.
//!
//! Units as Linux's: segments, a segment per `mss` bytes ACKed rounded up (as `bbr_set_cwnd`'s
//! acked count here); the expected count rounds down.

use aqmlab_core::Time;

/// Linux `bbr_extra_acked_win_rtts`: rounds per bucket of the max filter.
pub const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
/// Linux `bbr_extra_acked_max_us`: the allowance is at most this much data at the estimated
/// bandwidth.
pub const EXTRA_ACKED_MAX: Time = Time::from_millis(100);
/// Linux `bbr_ack_epoch_acked_reset_thresh` (2^20 segments): an epoch this long restarts.
pub const EPOCH_ACKED_RESET: u64 = 1 << 20;

/// The estimator's state (Linux's `ack_epoch_mstamp`, `ack_epoch_acked`, `extra_acked[2]`,
/// `extra_acked_win_rtts`, `extra_acked_win_idx`).
#[derive(Clone, Debug, Default)]
pub struct AckAggregation {
    /// When the epoch started (a delivery time; Linux stamps the connection's start first).
    epoch_start: Time,
    /// Segments ACKed since the epoch started.
    epoch_acked: u64,
    /// The largest excess of each bucket (segments).
    extra_acked: [u64; 2],
    /// Rounds since the current bucket started.
    win_rounds: u32,
    /// The current bucket.
    win_idx: usize,
}

impl AckAggregation {
    /// Linux `bbr_extra_acked`: the maximum excess over the last 5 to 10 rounds (segments).
    pub fn extra_acked(&self) -> u64 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// Linux `bbr_update_ack_aggregation`, for an ACK at `now` (the delivery time) that
    /// (S)ACKed `acked` segments, with the round clock's `round_start`, the bandwidth estimate
    /// `bw` (bytes/s) and cwnd `cwnd` (segments). Called only for a valid rate sample.
    pub fn update(&mut self, now: Time, acked: u64, round_start: bool, bw: f64, mss: u64, cwnd: u64) {
        if acked == 0 {
            return;
        }
        if round_start {
            self.win_rounds = (self.win_rounds + 1).min(0x1f);
            if self.win_rounds >= EXTRA_ACKED_WIN_ROUNDS {
                // A new bucket: the older of the two is forgotten.
                self.win_rounds = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let elapsed = now.0.saturating_sub(self.epoch_start.0);
        let mut expected = (bw * elapsed as f64 / 1e9 / mss as f64) as u64;
        if self.epoch_acked <= expected || self.epoch_acked + acked >= EPOCH_ACKED_RESET {
            // ACKs came no faster than the estimate: nothing aggregated, a new epoch.
            self.epoch_acked = 0;
            self.epoch_start = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(EPOCH_ACKED_RESET - 1);
        let extra = (self.epoch_acked - expected).min(cwnd);
        if extra > self.extra_acked[self.win_idx] {
            self.extra_acked[self.win_idx] = extra;
        }
    }

    /// Linux `bbr_ack_aggregation_cwnd`: the segments to add to the cwnd target, none before
    /// STARTUP found the pipe full, at most [`EXTRA_ACKED_MAX`] of data at `bw`.
    pub fn cwnd_allowance(&self, full_bw_reached: bool, bw: f64, mss: u64) -> u64 {
        if !full_bw_reached {
            return 0;
        }
        let cap = (bw * EXTRA_ACKED_MAX.0 as f64 / 1e9 / mss as f64) as u64;
        self.extra_acked().min(cap)
    }
}

#[cfg(test)]
mod tests;
