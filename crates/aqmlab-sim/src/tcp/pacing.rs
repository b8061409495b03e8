//! Sender pacing, as Linux paces inside TCP when no fq qdisc does it (`tcp_output.c`'s
//! internal pacing, the earliest-departure-time model since Linux 4.20):
//!
//! * the sender keeps the earliest time its next segment may leave (Linux's `tcp_wstamp_ns`);
//!   a send loop stops when that time is in the future and a pacing timer wakes it then
//!   (`tcp_pacing_check`, the pacing hrtimer);
//! * each segment sent moves that time on by `len / rate` from `max(that time, now)`
//!   (`tcp_update_skb_after_send`), where `len` is the segment's payload (the skb Linux paces
//!   carries no headers yet) and `rate` the pacing rate in payload bytes per second;
//! * the first [`UNPACED_SEGMENTS`] data segments of a connection are not paced (Linux:
//!   `tp->data_segs_out >= 10` before any gap is added);
//! * a sender that wakes late (after an idle period, or an ACK that arrives after the
//!   departure time) is credited at most half a gap (Linux: `len_ns -= min(len_ns / 2,
//!   credit)`), so a segment after idle leaves half a gap early rather than a burst;
//! * with a burst limit above 1 (`TcpConfig::tso_autosize`, the segments of one skb: `tso.rs`),
//!   up to that many segments leave back to back at one instant, and the departure time
//!   moves on by the whole burst's length over the rate, with the credit counted once, as
//!   Linux paces an skb of several segments. A limit of 1 (the default) is the rule above.
//!
//! The pacing rate comes from the controller: BBR sets it (`cc::bbr`); the others, when
//! `TcpConfig::pacing` asks for it, get Linux's `tcp_update_pacing_rate`: 200 % of cwnd / srtt
//! in slow start (cwnd < ssthresh / 2), 120 % after, unpaced before the first RTT sample.
//! Retransmissions a timeout or a fast retransmit sends at once (the first of a recovery) are
//! not held back, as Linux's `tcp_retransmit_skb` from the RTO handler is not; the send loops
//! (new data, go-back-N, RFC 6675's NextSeg) are paced.

use aqmlab_core::Time;

/// Linux paces a connection's data segments only from its 10th on (`tcp_update_skb_after_send`).
pub const UNPACED_SEGMENTS: u64 = 10;
/// Linux's `sysctl_tcp_pacing_ss_ratio` (percent of cwnd / srtt in slow start).
pub const PACING_SS_RATIO: u64 = 200;
/// Linux's `sysctl_tcp_pacing_ca_ratio` (percent of cwnd / srtt in congestion avoidance).
pub const PACING_CA_RATIO: u64 = 120;

/// One connection's pacing state.
#[derive(Clone, Debug)]
pub struct Pacer {
    /// Payload bytes per second; `u64::MAX` leaves segments unpaced.
    rate: u64,
    /// The earliest time the next segment may leave.
    next_send: Time,
    /// Data segments sent so far (first transmissions and retransmissions).
    segments: u64,
    /// The most segments one burst (one Linux skb) may carry; 1 paces each segment alone.
    burst_limit: u64,
    /// The burst under way: when it left, how many segments and bytes it has so far, the
    /// departure time it started from and the credit it was granted.
    burst: Burst,
}

/// The segments sent back to back at one instant (one skb), paced as one.
#[derive(Clone, Copy, Debug, Default)]
struct Burst {
    at: Time,
    segments: u64,
    bytes: u64,
    start: Time,
    credit: u64,
}

impl Default for Pacer {
    fn default() -> Pacer {
        Pacer { rate: u64::MAX, next_send: Time::ZERO, segments: 0, burst_limit: 1, burst: Burst::default() }
    }
}

impl Pacer {
    /// The pacing rate in payload bytes per second (`u64::MAX`: unpaced).
    pub fn rate(&self) -> u64 {
        self.rate
    }

    pub fn set_rate(&mut self, bytes_per_sec: u64) {
        self.rate = bytes_per_sec;
    }

    /// The earliest time the next segment may leave.
    pub fn next_send(&self) -> Time {
        self.next_send
    }

    /// The most segments one burst may carry (at least 1): Linux's skb size, `tso.rs`.
    pub fn set_burst_limit(&mut self, segments: u64) {
        self.burst_limit = segments.max(1);
    }

    /// Whether a segment may leave at `now`: its departure time has come, or it joins the
    /// burst that left at this instant while the burst has room.
    pub fn may_send(&self, now: Time) -> bool {
        self.next_send <= now || self.joins_burst(now)
    }

    fn joins_burst(&self, now: Time) -> bool {
        self.burst.segments > 0 && self.burst.at == now && self.burst.segments < self.burst_limit
    }

    /// The gap a segment of `len` bytes takes at `rate` bytes per second: len / rate, in whole
    /// nanoseconds (Linux: `skb->len * NSEC_PER_SEC / rate`, truncated).
    pub fn gap(len: u64, rate: u64) -> Time {
        if rate == u64::MAX || rate == 0 {
            return Time::ZERO;
        }
        Time((len as u128 * 1_000_000_000 / rate as u128) as u64)
    }

    /// A segment of `len` payload bytes left at `now`: the next may leave one gap later, or, when
    /// this segment joined the burst that left at `now`, the whole burst's gap after its start.
    pub fn on_sent(&mut self, now: Time, len: u64) {
        self.segments += 1;
        if self.joins_burst(now) {
            // One skb of several segments: its gap is the whole skb's (tcp_update_skb_after_send).
            self.burst.segments += 1;
            self.burst.bytes += len;
            self.next_send = self.burst_departure();
            return;
        }
        let prior = self.next_send;
        let start = prior.max(now);
        if self.segments <= UNPACED_SEGMENTS || self.rate == u64::MAX || self.rate == 0 {
            self.burst = Burst::default();
            self.next_send = start;
            return;
        }
        self.burst = Burst { at: now, segments: 1, bytes: len, start, credit: start.0 - prior.0 };
        self.next_send = self.burst_departure();
    }

    /// The departure time after the burst so far: its start plus its length over the rate,
    /// less the late sender's credit, at most half of that (Linux: `len_ns -= min(len_ns / 2,
    /// credit)`).
    fn burst_departure(&self) -> Time {
        let gap = Pacer::gap(self.burst.bytes, self.rate).0;
        Time(self.burst.start.0 + gap - (gap / 2).min(self.burst.credit))
    }

    /// Linux's `tcp_update_pacing_rate` for a controller that does not set its own: `ratio` % of
    /// max(cwnd, flight) / srtt, 200 % in slow start (cwnd < ssthresh / 2), 120 % after; unpaced
    /// without an RTT sample. Bytes per second.
    pub fn linux_default_rate(cwnd: u64, ssthresh: u64, flight: u64, srtt: Option<Time>) -> u64 {
        let Some(srtt) = srtt.filter(|s| s.0 > 0) else { return u64::MAX };
        let ratio = if cwnd < ssthresh / 2 { PACING_SS_RATIO } else { PACING_CA_RATIO };
        let bytes = cwnd.max(flight) as u128 * ratio as u128 / 100;
        (bytes * 1_000_000_000 / srtt.0 as u128).min(u64::MAX as u128 - 1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_segments_are_spaced_by_size_over_rate() {
        let mut p = Pacer::default();
        // 1.25 MB/s (10 Mbit/s of payload): a 1460-byte segment every 1.168 ms.
        p.set_rate(1_250_000);
        let mut now = Time::ZERO;
        let mut departures = Vec::new();
        for _ in 0..20 {
            now = now.max(p.next_send());
            departures.push(now);
            p.on_sent(now, 1460);
        }
        // The first 10 leave unpaced (Linux's data_segs_out >= 10 rule).
        assert!(departures[..10].iter().all(|t| *t == Time::ZERO));
        for w in departures[10..].windows(2) {
            assert_eq!(w[1] - w[0], Time(1_168_000), "{departures:?}");
        }
        assert_eq!(Pacer::gap(1460, 1_250_000), Time(1_168_000));
    }

    #[test]
    fn a_burst_leaves_at_one_instant_and_is_paced_as_one() {
        let mut p = Pacer { segments: UNPACED_SEGMENTS, ..Pacer::default() };
        p.set_rate(1_000_000); // 1 ms per 1000 bytes
        p.set_burst_limit(3);
        for i in 0..3 {
            assert!(p.may_send(Time::ZERO), "segment {i} of the burst");
            p.on_sent(Time::ZERO, 1000);
        }
        // Three segments' gap, and no fourth in the same burst.
        assert_eq!(p.next_send(), Time::from_millis(3));
        assert!(!p.may_send(Time::ZERO));
        // A burst cut short (two segments) and the next instant starts a new one.
        p.on_sent(Time::from_millis(3), 1000);
        p.on_sent(Time::from_millis(3), 1000);
        assert_eq!(p.next_send(), Time::from_millis(5));
        assert!(!p.may_send(Time::from_millis(4)), "a later instant does not join the burst");
    }

    #[test]
    fn a_late_burst_is_credited_once_at_most_half_its_gap() {
        let mut p = Pacer { segments: UNPACED_SEGMENTS, ..Pacer::default() };
        p.set_rate(1_000_000);
        p.set_burst_limit(2);
        p.on_sent(Time::ZERO, 1000);
        p.on_sent(Time::ZERO, 1000);
        assert_eq!(p.next_send(), Time::from_millis(2));
        // 10 ms late: the two-segment skb's 2 ms gap less min(1 ms, 10 ms), as Linux credits an
        // skb (paced segment by segment the credit would be half a segment's gap, 0.5 ms).
        p.on_sent(Time::from_millis(12), 1000);
        p.on_sent(Time::from_millis(12), 1000);
        assert_eq!(p.next_send(), Time::from_millis(13));
    }

    #[test]
    fn a_late_sender_is_credited_at_most_half_a_gap() {
        let mut p = Pacer { segments: UNPACED_SEGMENTS, ..Pacer::default() };
        p.set_rate(1_000_000); // 1 ms per 1000 bytes
        p.on_sent(Time::ZERO, 1000);
        assert_eq!(p.next_send(), Time::from_millis(1));
        // Sent 10 ms after it could have: credit 10 ms, capped at half the 1 ms gap.
        p.on_sent(Time::from_millis(11), 1000);
        assert_eq!(p.next_send(), Time::from_micros(11_500));
        // On time: a whole gap.
        p.on_sent(Time::from_micros(11_500), 1000);
        assert_eq!(p.next_send(), Time::from_micros(12_500));
    }

    #[test]
    fn linux_default_rate_is_200_or_120_percent_of_cwnd_over_srtt() {
        let srtt = Some(Time::from_millis(100));
        // 100 kB / 100 ms = 1 MB/s.
        assert_eq!(Pacer::linux_default_rate(100_000, u64::MAX / 2, 0, srtt), 2_000_000);
        assert_eq!(Pacer::linux_default_rate(100_000, 150_000, 0, srtt), 1_200_000);
        assert_eq!(Pacer::linux_default_rate(100_000, 150_000, 200_000, srtt), 2_400_000);
        assert_eq!(Pacer::linux_default_rate(100_000, 150_000, 0, None), u64::MAX);
    }
}
