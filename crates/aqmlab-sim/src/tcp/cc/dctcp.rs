//! DCTCP (RFC 8257): NewReno's growth and loss response, with the ECN response scaled by the
//! fraction of CE-marked bytes.
//!
//! * Section 3.3, the sender's estimate: over each window of data (one RTT) it counts the bytes
//!   acknowledged and those acknowledged by ACKs carrying ECN-Echo; when SND.UNA passes the
//!   window's end, F = marked / acked and alpha = (1 - g) * alpha + g * F.
//! * Section 3.3, the response: on ECN-Echo, cwnd = cwnd * (1 - alpha / 2), at most once per
//!   window of data (the sender keeps RFC 3168 section 6.1.2's once-per-window guard).
//! * Section 3.4: the window grows as conventional TCP's (RFC 5681, as NewReno here).
//! * Section 3.5: a loss (fast retransmit or timeout) is answered as conventional TCP does
//!   (RFC 5681 equation (4), NewReno's rule here).
//!
//! Choices where RFC 8257 is silent or leaves room, each with its source:
//! * g = 1/16: Linux `tcp_dctcp.c`'s `dctcp_shift_g` default of 4 (2^-4), the value RFC 8257
//!   section 4.2 discusses.
//! * alpha starts at 1 (Linux `dctcp_alpha_on_init` default 1024/1024): the first marks of a
//!   new flow halve, as classic ECN would, until the estimate has data.
//! * "bytes acknowledged" is the advance of the cumulative ACK (SACKed bytes count when the
//!   cumulative ACK passes them), so a duplicate ACK with ECN-Echo adds no marked bytes.
//! * The reduced window is at least 2 segments (Linux `dctcp_ssthresh`'s floor, RFC 5681's).

use super::NewReno;

/// RFC 8257 section 3.3's estimation gain g = 1/16 (Linux `dctcp_shift_g` = 4).
pub const DCTCP_G: f64 = 1.0 / 16.0;
/// The initial alpha (Linux `dctcp_alpha_on_init` = DCTCP_MAX_ALPHA, i.e. 1).
pub const DCTCP_INITIAL_ALPHA: f64 = 1.0;

/// The DCTCP sender's state (RFC 8257 section 3.3's variables).
#[derive(Clone, Debug)]
pub struct Dctcp {
    pub(super) reno: NewReno,
    /// DCTCP.Alpha: the estimated fraction of marked bytes, in [0, 1].
    alpha: f64,
    /// DCTCP.BytesAcked in the current observation window.
    bytes_acked: u64,
    /// DCTCP.BytesMarked: bytes acknowledged by ACKs with ECN-Echo in the current window.
    bytes_marked: u64,
    /// DCTCP.WindowEnd: the window ends when SND.UNA passes this sequence.
    window_end: u64,
}

impl Dctcp {
    pub fn new(mss: u64) -> Dctcp {
        Dctcp { reno: NewReno::new(mss), alpha: DCTCP_INITIAL_ALPHA, bytes_acked: 0, bytes_marked: 0, window_end: 0 }
    }

    /// The current estimate DCTCP.Alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// RFC 8257 section 3.3 equation: alpha = (1 - g) * alpha + g * F.
    pub fn next_alpha(alpha: f64, marked_fraction: f64) -> f64 {
        (1.0 - DCTCP_G) * alpha + DCTCP_G * marked_fraction
    }

    /// RFC 8257 section 3.3 steps 1-8 for one ACK: `acked` bytes newly acknowledged, `ece` its
    /// ECN-Echo flag, `snd_una` and `snd_nxt` the sender's after the ACK.
    pub fn on_ack_feedback(&mut self, acked: u64, ece: bool, snd_una: u64, snd_nxt: u64) {
        if ece {
            self.bytes_marked += acked; // step 2
        }
        self.bytes_acked += acked; // step 3
        if snd_una <= self.window_end || self.bytes_acked == 0 {
            return; // step 4: the observation window is not over (F undefined without bytes)
        }
        let f = self.bytes_marked as f64 / self.bytes_acked as f64; // step 5
        self.alpha = Dctcp::next_alpha(self.alpha, f); // step 6
        self.window_end = snd_nxt; // step 7
        self.bytes_acked = 0; // step 8
        self.bytes_marked = 0;
    }

    /// Section 3.4: growth as conventional TCP (NewReno's slow start and congestion avoidance).
    pub(super) fn on_ack(&self, cwnd: u64, ssthresh: u64, acked: u64) -> u64 {
        self.reno.on_ack(cwnd, ssthresh, acked)
    }

    /// Section 3.3 response to ECN-Echo: the new ssthresh cwnd * (1 - alpha / 2), at least two
    /// segments.
    pub fn on_ecn_echo(&self, cwnd: u64) -> u64 {
        ((cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64).max(2 * self.reno.mss)
    }

    /// Section 3.5: a loss is answered as conventional TCP (RFC 5681 equation (4)).
    pub(super) fn on_loss(&self, flight: u64) -> u64 {
        self.reno.reduced(flight)
    }
}

#[cfg(test)]
mod tests;
