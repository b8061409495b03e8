//! An RTT sample from every ACK that newly acknowledges data, as Linux takes it
//! (`tcp_ack_update_rtt` in `net/ipv4/tcp_input.c`, with TCP timestamps on, the kernel's
//! default `net.ipv4.tcp_timestamps = 1`), instead of RFC 6298's one timed segment a round
//! with Karn's rule (`TcpConfig::rtt_sample_every_ack`).
//!
//! Why it matters: under RFC 6298 a sender whose retransmissions keep being acknowledged never
//! gets a valid sample, so the RTO keeps its exponential backoff (section 5.7 clears it only
//! with a new sample). Linux clears it (`icsk_backoff = 0`) on every valid sample, and with
//! timestamps nearly every ACK of new data is one. Per ACK, the first of these that exists is
//! the sample (the kernel's order of preference):
//!
//! 1. the cumulative ACK: now minus the send time of the oldest newly acknowledged segment not
//!    SACKed before, if no newly acknowledged segment was ever retransmitted
//!    (`tcp_clean_rtx_queue`'s `first_ackt`, void under `FLAG_RETRANS_DATA_ACKED`);
//! 2. the SACK blocks: now minus the send time of the oldest segment this ACK SACKs for the
//!    first time that was never retransmitted (`tcp_sacktag_one`'s `first_sackt`);
//! 3. the echoed timestamp, for an ACK that advanced SND.UNA: the receiver echoes the TSval of
//!    the segment that moved its receive edge (RFC 7323 section 4.3), i.e. the last
//!    transmission of the first newly acknowledged segment, in the timestamp clock's whole
//!    milliseconds and at least one (`tcp_rtt_tsopt_us`, TCP_TS_HZ = 1000).
//!
//! Left out: a spurious retransmission whose original arrived first makes the receiver echo
//! the original's TSval, where rule 3 takes the retransmission's send time; SACK blocks are
//! kept through a timeout here (as Linux keeps SACKED_ACKED), so a segment SACKed before the
//! timeout gives no sample when it is SACKed again.

use aqmlab_core::Time;
use std::collections::VecDeque;

/// One segment since it was first sent.
#[derive(Clone, Copy, Debug)]
struct Seg {
    /// Its latest transmission.
    xmit: Time,
    retransmitted: bool,
    sacked: bool,
}

/// The send record of every segment above SND.UNA, for [`EveryAckRtt::on_ack`].
#[derive(Clone, Debug)]
pub struct EveryAckRtt {
    mss: u64,
    /// The sequence number of `segs[0]`.
    base: u64,
    segs: VecDeque<Seg>,
}

/// The timestamp clock's tick (TCP_TS_HZ = 1000).
const TS_TICK_NS: u64 = 1_000_000;

impl EveryAckRtt {
    pub fn new(mss: u64, first_seq: u64) -> EveryAckRtt {
        EveryAckRtt { mss, base: first_seq, segs: VecDeque::new() }
    }

    fn index(&self, seq: u64) -> Option<usize> {
        (seq >= self.base).then(|| ((seq - self.base) / self.mss) as usize)
    }

    /// The segment at `seq` left at `now`: its first transmission or a retransmission.
    pub fn on_sent(&mut self, seq: u64, now: Time, retransmission: bool) {
        let Some(i) = self.index(seq) else { return };
        while self.segs.len() <= i {
            self.segs.push_back(Seg { xmit: now, retransmitted: false, sacked: false });
        }
        let s = &mut self.segs[i];
        s.xmit = now;
        s.retransmitted |= retransmission;
    }

    /// An ACK arriving at `now` that acknowledges up to `ack` (SND.UNA was `una`) and carries
    /// `blocks` (clipped here to `[una, snd_max)`): the RTT sample it gives, if any, by the
    /// three rules of the module's notes. Forgets the segments below `ack`.
    pub fn on_ack(&mut self, una: u64, ack: u64, blocks: &[(u64, u64)], snd_max: u64, now: Time) -> Option<Time> {
        let lo = ack.max(una);
        let mut first_sackt: Option<Time> = None;
        for &(left, right) in blocks {
            let (mut seq, right) = (left.max(lo), right.min(snd_max));
            while seq + self.mss <= right {
                let Some(s) = self.index(seq).and_then(|i| self.segs.get_mut(i)) else { break };
                seq += self.mss;
                if !s.sacked {
                    s.sacked = true;
                    if !s.retransmitted {
                        first_sackt = Some(first_sackt.map_or(s.xmit, |t| t.min(s.xmit)));
                    }
                }
            }
        }
        let mut first_ackt: Option<Time> = None;
        let mut retrans_acked = false;
        let mut head_xmit: Option<Time> = None;
        while self.base + self.mss <= ack {
            let Some(s) = self.segs.pop_front() else { break };
            self.base += self.mss;
            head_xmit.get_or_insert(s.xmit);
            if s.retransmitted {
                retrans_acked = true;
            } else if !s.sacked {
                first_ackt.get_or_insert(s.xmit);
            }
        }
        if self.segs.is_empty() {
            self.base = self.base.max(ack);
        }
        if let (Some(t), false) = (first_ackt, retrans_acked) {
            return Some(now - t);
        }
        if let Some(t) = first_sackt {
            return Some(now - t);
        }
        head_xmit.map(|t| {
            let ticks = (now.as_nanos() / TS_TICK_NS).saturating_sub(t.as_nanos() / TS_TICK_NS).max(1);
            Time(ticks * TS_TICK_NS)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    /// Segments 0..n sent 1 ms apart from t = 0.
    fn sent(n: u64) -> EveryAckRtt {
        let mut r = EveryAckRtt::new(MSS, 0);
        for k in 0..n {
            r.on_sent(k * MSS, ms(k), false);
        }
        r
    }

    #[test]
    fn a_cumulative_ack_times_the_oldest_segment_it_acknowledges() {
        let mut r = sent(4);
        assert_eq!(r.on_ack(0, 2 * MSS, &[], 4 * MSS, ms(50)), Some(ms(50)));
        assert_eq!(r.on_ack(2 * MSS, 3 * MSS, &[], 4 * MSS, ms(60)), Some(ms(58)));
        // Nothing new acknowledged, nothing SACKed: no sample.
        assert_eq!(r.on_ack(3 * MSS, 3 * MSS, &[], 4 * MSS, ms(61)), None);
    }

    #[test]
    fn an_ack_of_a_retransmission_falls_back_to_the_echoed_timestamp_in_whole_milliseconds() {
        let mut r = sent(4);
        r.on_sent(0, Time(300_400_000), true); // 300.4 ms
                                               // Under Karn's rule this ACK gives nothing; here the retransmission's echoed TSval:
                                               // 351 - 300 ticks of 1 ms.
        assert_eq!(r.on_ack(0, MSS, &[], 4 * MSS, Time(351_200_000)), Some(ms(51)));
        // The rest were never retransmitted: the sequence rule again.
        assert_eq!(r.on_ack(MSS, 2 * MSS, &[], 4 * MSS, ms(400)), Some(ms(399)));
    }

    #[test]
    fn the_echoed_timestamp_counts_at_least_one_tick() {
        let mut r = EveryAckRtt::new(MSS, 0);
        r.on_sent(0, Time(5_100_000), false);
        r.on_sent(0, Time(5_200_000), true);
        assert_eq!(r.on_ack(0, MSS, &[], MSS, Time(5_900_000)), Some(ms(1)));
    }

    #[test]
    fn a_cumulative_ack_covering_any_retransmission_takes_no_sequence_sample() {
        let mut r = sent(3);
        r.on_sent(MSS, ms(100), true);
        // Segment 0 was sent once, but segment 1 is a retransmission: the timestamp echoed is
        // segment 0's (it moved the receive edge), 150 - 0.
        assert_eq!(r.on_ack(0, 2 * MSS, &[], 3 * MSS, ms(150)), Some(ms(150)));
    }

    #[test]
    fn sack_blocks_time_the_oldest_segment_sacked_for_the_first_time() {
        let mut r = sent(6);
        r.on_sent(3 * MSS, ms(20), true);
        // Segment 0 lost; 1..5 SACKed, 3 a retransmission: the oldest never retransmitted is 1.
        assert_eq!(r.on_ack(0, 0, &[(MSS, 5 * MSS)], 6 * MSS, ms(70)), Some(ms(69)));
        // The same block again SACKs nothing new; the next one times segment 5.
        assert_eq!(r.on_ack(0, 0, &[(MSS, 5 * MSS)], 6 * MSS, ms(71)), None);
        assert_eq!(r.on_ack(0, 0, &[(MSS, 6 * MSS)], 6 * MSS, ms(72)), Some(ms(67)));
    }

    #[test]
    fn segments_sacked_before_are_skipped_by_the_sequence_rule() {
        let mut r = sent(3);
        assert!(r.on_ack(0, 0, &[(MSS, 3 * MSS)], 3 * MSS, ms(40)).is_some());
        // The cumulative ACK covers 0 (oldest not SACKed before, sent at 0) and 1-2.
        assert_eq!(r.on_ack(0, 3 * MSS, &[], 3 * MSS, ms(90)), Some(ms(90)));
    }

    #[test]
    fn a_cumulative_ack_takes_precedence_over_sack_blocks() {
        let mut r = sent(4);
        // Segment 0 acknowledged (sent at 0), segment 2 SACKed (sent at 2): the cumulative rule wins.
        assert_eq!(r.on_ack(0, MSS, &[(2 * MSS, 3 * MSS)], 4 * MSS, ms(30)), Some(ms(30)));
    }
}
