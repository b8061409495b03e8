//! The delivery-rate estimator (draft-cheng-iccrg-delivery-rate-estimation, as Linux's
//! `tcp_rate.c` runs it): on every ACK a rate sample, the data delivered over the interval
//! between a segment's transmission and its acknowledgment, which BBR (`cc::bbr`) filters into
//! its bandwidth estimate.
//!
//! * Per connection: C.delivered (bytes delivered so far), C.delivered_time (when the last
//!   delivery was acknowledged), C.first_sent_time (the send time of the most recently
//!   delivered segment, so the start of the current send "flight"), C.app_limited (the
//!   C.delivered mark until which samples are application-limited, 0 when not).
//! * Per segment, on each transmission (first or retransmission): a snapshot of those
//!   (`TxRecord`); when no data is in flight the send starts a new flight and
//!   C.first_sent_time = C.delivered_time = now (draft section 3.2, "OnPacketSent").
//! * On an ACK, for each segment it newly delivers (cumulatively or by SACK): C.delivered +=
//!   its length; the sample takes the snapshot of the most recently *sent* of them
//!   (draft "UpdateRateSample", Linux `tcp_skb_sent_after`); then (draft "GenerateRateSample")
//!   rs.delivered = C.delivered - P.delivered, send_elapsed = P.sent_time -
//!   P.first_sent_time, ack_elapsed = now - P.delivered_time, rs.interval = max(send_elapsed,
//!   ack_elapsed), and the sample is invalid when the interval is shorter than the
//!   connection's minimum RTT (Linux `tcp_rate_gen`: ACK compression).
//! * App-limited (draft "CheckIfApplicationLimited"): when the sender has nothing to send, is
//!   not cwnd-limited and has no loss to repair, C.app_limited = max(C.delivered + in flight,
//!   1); segments sent while it is set are marked app-limited, and it clears once C.delivered
//!   passes it.
//!
//! Choices where the draft is silent: lengths are bytes (Linux counts segments; every segment
//! here is one MSS, so rates differ only by that factor); a retransmission takes a fresh
//! snapshot (Linux `tcp_rate_skb_sent` on every transmission) but a segment already counted as
//! delivered (SACKed, then resent after a timeout forgot the scoreboard) is not counted twice;
//! without SACK each duplicate ACK counts one segment delivered and the cumulative ACK that
//! follows counts the rest, at least one segment (Linux's Reno "SACK" emulation,
//! `tcp_add_reno_sack` / `tcp_remove_reno_sacks`); the RTT of a sample is that of the most
//! recently sent segment it delivers that was never retransmitted (Karn), and the minimum RTT
//! that invalidates short intervals is the minimum over the connection's life (Linux's
//! `tcp_min_rtt` window is 5 minutes, longer than the runs here).

use aqmlab_core::Time;
use std::collections::VecDeque;

/// The per-segment snapshot taken at each transmission (draft section 3.1's P.* fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxRecord {
    /// C.delivered when the segment was sent.
    pub delivered: u64,
    /// C.delivered_time when the segment was sent.
    pub delivered_time: Time,
    /// C.first_sent_time when the segment was sent.
    pub first_sent_time: Time,
    /// When the segment was (last) sent.
    pub sent_time: Time,
    /// Sent while the connection was application-limited.
    pub is_app_limited: bool,
    /// Sent more than once (no RTT sample from it).
    pub retransmitted: bool,
    /// Already counted in C.delivered (SACKed).
    pub delivered_already: bool,
    /// P.tx_in_flight: bytes in flight when it was sent, itself included (draft-ietf-ccwg-bbr
    /// section 2.3; BBRv3 only, 0 when the sender does not track it).
    pub tx_in_flight: u64,
    /// P.lost: C.lost when it was sent (BBRv3).
    pub lost: u64,
}

/// One ACK's rate sample (draft section 3.1's rs.*, Linux's `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (0 when invalid).
    pub delivered: u64,
    /// max(send_elapsed, ack_elapsed); zero when the sample is invalid.
    pub interval: Time,
    /// P.delivered of the segment the sample is taken from.
    pub prior_delivered: u64,
    /// Whether the sample's segment was sent app-limited.
    pub is_app_limited: bool,
    /// Bytes this ACK newly delivered (cumulatively or by SACK).
    pub acked_sacked: u64,
    /// RTT of the most recently sent, never retransmitted, segment this ACK delivered.
    pub rtt: Option<Time>,
    /// Whether `delivered` / `interval` is a rate (a segment was delivered and the interval is
    /// at least the minimum RTT).
    pub valid: bool,
    /// RS.tx_in_flight: P.tx_in_flight of the sample's segment (draft-ietf-ccwg-bbr section 2.3).
    pub tx_in_flight: u64,
    /// RS.lost: C.lost - P.lost of the sample's segment, the bytes marked lost since it was sent.
    pub lost: u64,
}

impl RateSample {
    /// The sample's delivery rate in bytes per second, when valid.
    pub fn rate(&self) -> Option<f64> {
        (self.valid && self.interval.0 > 0).then(|| self.delivered as f64 * 1e9 / self.interval.0 as f64)
    }
}

/// The connection's estimator state (draft's C.*), with one record per segment outstanding.
#[derive(Clone, Debug)]
pub struct DeliveryRate {
    mss: u64,
    /// Sequence of `records[0]`; records are consecutive whole segments.
    base: u64,
    records: VecDeque<TxRecord>,
    delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    app_limited: u64,
    /// C.lost: bytes marked lost so far (kept by the sender for BBRv3, [`Self::on_lost`]).
    lost: u64,
    /// Bytes counted delivered by duplicate ACKs (no SACK) and not yet cumulatively acked.
    reno_sacked: u64,
    min_rtt: Option<Time>,
    /// The sample of the ACK being processed.
    rs: RateSample,
    /// P of the sample being built: (sent_time, seq) of the chosen segment, its snapshot.
    chosen: Option<(Time, u64, TxRecord)>,
    /// Send time of the newest never-retransmitted segment this ACK delivered.
    rtt_sent: Option<Time>,
    /// The sample the connection reports as its delivery rate (Linux's tp->rate_delivered and
    /// tp->rate_interval_us, what TCP_INFO's tcpi_delivery_rate divides): (delivered bytes,
    /// interval, app-limited), see [`Self::reported_rate_bps`].
    reported: (u64, Time, bool),
}

impl DeliveryRate {
    pub fn new(mss: u64, first_seq: u64) -> DeliveryRate {
        DeliveryRate {
            mss,
            base: first_seq,
            records: VecDeque::new(),
            delivered: 0,
            delivered_time: Time::ZERO,
            first_sent_time: Time::ZERO,
            app_limited: 0,
            lost: 0,
            reno_sacked: 0,
            min_rtt: None,
            rs: RateSample::default(),
            chosen: None,
            rtt_sent: None,
            reported: (0, Time::ZERO, false),
        }
    }

    /// The delivery rate the connection reports, bits per second (0 before its first valid
    /// sample): Linux's tcpi_delivery_rate (`tcp_compute_delivery_rate`, in bytes per second
    /// there). It is the last valid sample that was not application-limited, or an
    /// application-limited one at least as fast as the one kept (`tcp_rate_gen`: "record the
    /// last non-app-limited or the highest app-limited bw").
    pub fn reported_rate_bps(&self) -> u64 {
        let (delivered, interval, _) = self.reported;
        if interval.0 == 0 {
            return 0;
        }
        (u128::from(delivered) * 8 * 1_000_000_000 / u128::from(interval.0)) as u64
    }

    /// The smallest RTT sampled so far (Linux's `tcp_min_rtt`, over the connection's life here).
    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    /// C.delivered: bytes delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// C.delivered_time: when the last delivery was acknowledged.
    pub fn delivered_time(&self) -> Time {
        self.delivered_time
    }

    /// Bytes duplicate ACKs counted delivered and no cumulative ACK covered yet (no SACK).
    pub fn reno_sacked(&self) -> u64 {
        self.reno_sacked
    }

    /// C.app_limited (0 when the connection is not application-limited).
    pub fn app_limited(&self) -> u64 {
        self.app_limited
    }

    /// The snapshot of the segment at `seq`, if it is outstanding.
    pub fn record(&self, seq: u64) -> Option<&TxRecord> {
        self.index(seq).and_then(|i| self.records.get(i))
    }

    fn index(&self, seq: u64) -> Option<usize> {
        (seq >= self.base).then(|| ((seq - self.base) / self.mss) as usize)
    }

    /// C.lost: bytes marked lost so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// `bytes` newly marked lost (C.lost += bytes).
    pub fn on_lost(&mut self, bytes: u64) {
        self.lost += bytes;
    }

    /// Draft "OnPacketSent": the segment at `seq` leaves at `now`; `nothing_in_flight` when no
    /// data was outstanding before it (a new flight starts); `tx_in_flight` the bytes in
    /// flight with it (P.tx_in_flight, 0 when not tracked).
    pub fn on_sent(&mut self, seq: u64, now: Time, nothing_in_flight: bool, tx_in_flight: u64) {
        if nothing_in_flight {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        if self.records.is_empty() {
            self.base = seq;
        }
        let snapshot = TxRecord {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            is_app_limited: self.app_limited != 0,
            retransmitted: false,
            delivered_already: false,
            tx_in_flight,
            lost: self.lost,
        };
        let Some(i) = self.index(seq) else { return };
        if i < self.records.len() {
            let r = &mut self.records[i];
            *r = TxRecord { retransmitted: true, delivered_already: r.delivered_already, ..snapshot };
        } else {
            // New data is sent in order; a gap (never expected) is filled with empty records.
            while self.records.len() < i {
                self.records.push_back(TxRecord { delivered_already: true, ..snapshot });
            }
            self.records.push_back(snapshot);
        }
    }

    /// Draft "CheckIfApplicationLimited", when the sender found it app-limited with `in_flight`
    /// bytes outstanding: C.app_limited = max(C.delivered + in_flight, 1).
    pub fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }

    /// Starts the sample of one ACK.
    pub fn begin_ack(&mut self) {
        self.rs = RateSample::default();
        self.chosen = None;
        self.rtt_sent = None;
    }

    /// Draft "UpdateRateSample" for one segment newly delivered; `count` adds it to
    /// C.delivered (false when a duplicate ACK counted it already).
    fn deliver(&mut self, seq: u64, r: TxRecord, count: bool) {
        if count {
            self.delivered += self.mss;
            self.rs.acked_sacked += self.mss;
        }
        // The most recently sent (ties: the highest sequence, Linux's tcp_skb_sent_after).
        if self.chosen.is_none_or(|(t, s, _)| (r.sent_time, seq) > (t, s)) {
            self.chosen = Some((r.sent_time, seq, r));
        }
        if !r.retransmitted && self.rtt_sent.is_none_or(|t| r.sent_time > t) {
            self.rtt_sent = Some(r.sent_time);
        }
    }

    /// The cumulative ACK moved to `una`: every record below it is delivered (those not
    /// SACKed before) and dropped.
    pub fn on_cumulative_ack(&mut self, una: u64) {
        let mut acked = 0;
        while self.base + self.mss <= una {
            let Some(r) = self.records.pop_front() else {
                self.base = una;
                break;
            };
            let seq = self.base;
            self.base += self.mss;
            if r.delivered_already {
                continue;
            }
            acked += 1;
            // Without SACK, a segment a duplicate ACK counted already keeps its snapshot.
            let counted = self.reno_sacked >= self.mss;
            if counted {
                self.reno_sacked -= self.mss;
            }
            self.deliver(seq, r, !counted);
        }
        // Linux's tcp_remove_reno_sacks: a cumulative ACK counts at least one segment.
        if acked > 0 && self.rs.acked_sacked == 0 {
            self.delivered += self.mss;
            self.rs.acked_sacked += self.mss;
        }
    }

    /// `[left, right)` is SACKed: its whole segments are delivered if not counted before.
    pub fn on_sacked(&mut self, left: u64, right: u64) {
        let from = left.max(self.base);
        let mut i = (from - self.base).div_ceil(self.mss) as usize;
        while i < self.records.len() {
            let seq = self.base + i as u64 * self.mss;
            if seq + self.mss > right {
                break;
            }
            let r = self.records[i];
            if !r.delivered_already {
                self.records[i].delivered_already = true;
                self.deliver(seq, r, true);
            }
            i += 1;
        }
    }

    /// A duplicate ACK without SACK: one segment counts as delivered (Linux's Reno
    /// emulation), up to what is outstanding.
    pub fn on_duplicate_ack(&mut self, outstanding: u64) {
        if self.reno_sacked + self.mss <= outstanding {
            self.reno_sacked += self.mss;
            self.delivered += self.mss;
            self.rs.acked_sacked += self.mss;
        }
    }

    /// A timeout: the Reno emulation's count restarts (Linux `tcp_enter_loss` resets
    /// sacked_out without SACK).
    pub fn on_timeout(&mut self) {
        self.reno_sacked = 0;
    }

    /// Draft "GenerateRateSample" at the end of the ACK's processing, at `now`.
    pub fn finish_ack(&mut self, now: Time) -> RateSample {
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if self.rs.acked_sacked > 0 {
            self.delivered_time = now;
        }
        if let Some(sent) = self.rtt_sent {
            let rtt = now - sent;
            self.rs.rtt = Some(rtt);
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        let Some((_, _, p)) = self.chosen else { return self.rs };
        // C.first_sent_time: the send time of the most recently delivered segment.
        self.first_sent_time = p.sent_time;
        self.rs.prior_delivered = p.delivered;
        self.rs.is_app_limited = p.is_app_limited;
        self.rs.tx_in_flight = p.tx_in_flight;
        self.rs.lost = self.lost - p.lost;
        self.rs.delivered = self.delivered - p.delivered;
        let send_elapsed = p.sent_time - p.first_sent_time;
        let ack_elapsed = now - p.delivered_time;
        let interval = send_elapsed.max(ack_elapsed);
        // Linux tcp_rate_gen: an interval below the minimum RTT is ACK compression; no rate.
        if self.min_rtt.is_some_and(|m| interval < m) || interval.0 == 0 {
            self.rs.delivered = 0;
            return self.rs;
        }
        self.rs.interval = interval;
        self.rs.valid = true;
        let (kept_delivered, kept_interval, _) = self.reported;
        // rs.delivered / rs.interval >= kept, cross-multiplied as tcp_rate_gen does.
        if !self.rs.is_app_limited
            || u128::from(self.rs.delivered) * u128::from(kept_interval.0) >= u128::from(kept_delivered) * u128::from(interval.0)
        {
            self.reported = (self.rs.delivered, interval, self.rs.is_app_limited);
        }
        self.rs
    }
}

#[cfg(test)]
mod tests;
