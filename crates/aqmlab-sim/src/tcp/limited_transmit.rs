//! Limited Transmit (RFC 3042, also RFC 5681 section 3.2's note): on each of the first two
//! duplicate ACKs a sender not yet in loss recovery sends one segment of new data, so that a
//! small window or a loss near the end of a transfer still produces the three duplicates fast
//! retransmit needs. Linux does this on by default (`tcp_try_to_open` letting
//! `tcp_cwnd_test` pass the segments the duplicates report as gone).

/// Whether RFC 3042 section 2 lets one new segment of `mss` bytes go out on the duplicate ACK
/// numbered `dupacks` (1 or 2): the receiver's advertised window allows it, the amount
/// outstanding stays within cwnd + 2 SMSS, and the segment is new data (`next_new` is the first
/// unsent byte, `data_end` where the application's data ends). cwnd is not changed.
pub fn allows(dupacks: u32, snd_una: u64, next_new: u64, cwnd: u64, rwnd: u64, mss: u64, data_end: Option<u64>) -> bool {
    let end = next_new + mss;
    (1..=2).contains(&dupacks) && end <= snd_una + rwnd && end - snd_una <= cwnd + 2 * mss && data_end.is_none_or(|e| next_new < e)
}

#[cfg(test)]
mod tests {
    use super::allows;

    const MSS: u64 = 1000;

    #[test]
    fn first_two_duplicates_only() {
        // cwnd 4 segments, all outstanding.
        assert!(allows(1, 0, 4 * MSS, 4 * MSS, 100 * MSS, MSS, None));
        assert!(allows(2, 0, 5 * MSS, 4 * MSS, 100 * MSS, MSS, None));
        assert!(!allows(3, 0, 6 * MSS, 4 * MSS, 100 * MSS, MSS, None));
        assert!(!allows(0, 0, 4 * MSS, 4 * MSS, 100 * MSS, MSS, None));
    }

    #[test]
    fn bounded_by_cwnd_plus_two_receiver_window_and_data() {
        // A third extra segment would make cwnd + 3.
        assert!(!allows(2, 0, 6 * MSS, 4 * MSS, 100 * MSS, MSS, None));
        // Receiver window of 4 segments.
        assert!(!allows(1, 0, 4 * MSS, 4 * MSS, 4 * MSS, MSS, None));
        // No new data.
        assert!(!allows(1, 0, 4 * MSS, 4 * MSS, 100 * MSS, MSS, Some(4 * MSS)));
    }

    use crate::tcp::tests::cfg;
    use crate::tcp::{TcpReceiver, TcpSender, ISS_DATA};
    use aqmlab_core::Time;
    use aqmlab_model::app::tcp_config::TcpConfig;

    fn stack(sack: bool, limited_transmit: bool) -> TcpConfig {
        TcpConfig { mss: MSS as u32, initial_cwnd_segments: 3, min_rto_ns: 1_000_000_000, sack, limited_transmit, ..cfg() }
    }

    /// RFC 3042 section 1's case: a window of 3 segments loses its first. The two segments
    /// behind it bring only two duplicate ACKs; with Limited Transmit each sends a new segment,
    /// whose ACKs are the third and fourth duplicates, and fast retransmit repairs the loss.
    /// Without it the sender waits for the timeout.
    fn repairs_by_fast_retransmit(sack: bool, limited_transmit: bool) -> (bool, Vec<u64>) {
        let c = stack(sack, limited_transmit);
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        let mut out = Vec::new();
        s.send_available(Time::ZERO, &mut out);
        let mut wire: std::collections::VecDeque<u64> = out.drain(..).map(|x| x.seq).skip(1).collect();
        let mut new_sent = Vec::new();
        let mut t = 100;
        while let Some(seq) = wire.pop_front() {
            r.on_data(seq, MSS as u32, false, Time::from_millis(t));
            let (ack, _) = r.take_ack();
            s.on_ack_sack(ack, false, r.sack_blocks().as_slice(), Time::from_millis(t), &mut out);
            for x in out.drain(..) {
                if !x.retransmission {
                    new_sent.push((x.seq - ISS_DATA) / MSS);
                }
                wire.push_back(x.seq);
            }
            t += 1;
            if s.stats.fast_retransmits > 0 {
                break;
            }
        }
        (s.stats.fast_retransmits == 1 && s.stats.timeouts == 0, new_sent)
    }

    #[test]
    fn a_window_of_three_recovers_without_a_timeout_only_with_limited_transmit() {
        for sack in [false, true] {
            let (repaired, new) = repairs_by_fast_retransmit(sack, true);
            assert!(repaired, "sack {sack}");
            assert_eq!(&new[..2], &[3, 4], "one new segment on each of the first two duplicates");
            let (repaired, new) = repairs_by_fast_retransmit(sack, false);
            assert!(!repaired && new.is_empty(), "sack {sack}: {new:?}");
        }
    }
}
