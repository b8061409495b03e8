//! Proportional Rate Reduction (RFC 6937) with its slow-start reduction bound (PRR-SSRB), the
//! variant Linux runs (`tcp_cwnd_reduction` in net/ipv4/tcp_input.c). It decides how many
//! bytes a sender in SACK-based fast recovery may send on each ACK, so that the window falls
//! smoothly from RecoverFS to ssthresh over one round trip instead of RFC 6675's half-RTT
//! of silence, and climbs back by at most DeliveredData + 1 SMSS per ACK after a burst loss
//! has pushed pipe below ssthresh.
//!
//! The sender ([`super::TcpSender`]) keeps the per-recovery counters here, counts every segment
//! it sends in recovery ([`Prr::on_sent`]), and on each ACK sets cwnd = pipe + sndcnt before
//! RFC 6675's NextSeg loop runs (RFC 6937 section 3: "cwnd = pipe + sndcnt" is the form an
//! RFC 6675 sender applies it in).

/// The PRR state of one recovery episode (RFC 6937 section 3).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// prr_delivered: bytes the receiver got since recovery began.
    delivered: u64,
    /// prr_out: bytes sent (new or retransmitted) since recovery began.
    out: u64,
    /// RecoverFS: the window the reduction starts from.
    recover_fs: u64,
}

impl Prr {
    /// Starts an episode. RFC 6937 takes RecoverFS = snd.nxt - snd.una; Linux takes the cwnd
    /// before the reduction (`tp->prior_cwnd`, `tcp_init_cwnd_reduction`). The two differ by
    /// the two segments Limited Transmit adds; RFC 6937's own worked example (section 3.1, a
    /// window of 20 with ssthresh 10) sends on ack 13, which only RecoverFS = cwnd = 20 gives
    /// (with 22, ceil(11 * 10 / 22) = 5 = prr_out), so the caller passes the cwnd.
    pub fn start(recover_fs: u64) -> Prr {
        Prr { delivered: 0, out: 0, recover_fs: recover_fs.max(1) }
    }

    /// An ACK reported `delivered_data` bytes newly delivered (change in snd.una plus change in
    /// SACKed bytes).
    pub fn on_ack(&mut self, delivered_data: u64) {
        self.delivered += delivered_data;
    }

    /// `bytes` were sent while in recovery.
    pub fn on_sent(&mut self, bytes: u64) {
        self.out += bytes;
    }

    pub fn delivered(&self) -> u64 {
        self.delivered
    }
    pub fn out(&self) -> u64 {
        self.out
    }

    /// RFC 6937 section 3, per ACK: the bytes this ACK lets the sender send (sndcnt), given
    /// this ACK's DeliveredData and pipe before sending.
    /// * pipe > ssthresh: proportional reduction, CEIL(prr_delivered * ssthresh / RecoverFS) -
    ///   prr_out;
    /// * otherwise, PRR-SSRB: MIN(ssthresh - pipe, MAX(prr_delivered - prr_out, DeliveredData)
    ///   + SMSS).
    ///
    /// Negative values are 0 (prr_out may run ahead of the proportional share after an RTO-free
    /// burst of NextSeg's rescue retransmission).
    pub fn sndcnt(&self, delivered_data: u64, pipe: u64, ssthresh: u64, smss: u64) -> u64 {
        if pipe > ssthresh {
            // The RFC's CEIL is over segments (its examples count segments, Linux counts
            // packets): the share is rounded up to whole segments, since only whole segments
            // are sent. Rounding bytes instead sends each segment one ACK late.
            let share = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as u64;
            (share.div_ceil(smss) * smss).saturating_sub(self.out)
        } else {
            let limit = self.delivered.saturating_sub(self.out).max(delivered_data) + smss;
            (ssthresh - pipe).min(limit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// RFC 6937 section 3.1, single loss: RecoverFS 20, ssthresh 10; the proportional part
    /// allows one segment on every second delivered segment.
    #[test]
    fn proportional_part_sends_half_of_what_is_delivered() {
        let mut p = Prr::start(20 * MSS);
        let mut sent = Vec::new();
        for _ in 0..10 {
            p.on_ack(MSS);
            let n = p.sndcnt(MSS, 15 * MSS, 10 * MSS, MSS);
            p.on_sent(n);
            sent.push(n / MSS);
        }
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
    }

    /// RFC 6937 section 3.1, 15 lost of 20: pipe 4 < ssthresh 10, so PRR-SSRB sends
    /// DeliveredData + 1 SMSS = 2 segments per ACK ("2R 2R 2R").
    #[test]
    fn slow_start_bound_sends_delivered_plus_one() {
        let mut p = Prr::start(20 * MSS);
        let mut pipe = 4 * MSS;
        for _ in 0..3 {
            p.on_ack(MSS);
            let n = p.sndcnt(MSS, pipe, 10 * MSS, MSS);
            assert_eq!(n, 2 * MSS);
            p.on_sent(n);
            pipe += n - MSS;
        }
        // Near ssthresh the bound is ssthresh - pipe.
        p.on_ack(MSS);
        assert_eq!(p.sndcnt(MSS, 9 * MSS, 10 * MSS, MSS), MSS);
    }

    use crate::tcp::tests::cfg;
    use crate::tcp::{Segment, TcpReceiver, TcpSender, ISS_DATA};
    use aqmlab_core::Time;
    use aqmlab_model::app::tcp_config::TcpConfig;

    fn stack(prr: bool) -> TcpConfig {
        TcpConfig {
            mss: MSS as u32,
            initial_cwnd_segments: 20,
            min_rto_ns: 1_000_000_000,
            sack: true,
            prr,
            limited_transmit: true,
            ..cfg()
        }
    }

    /// RFC 6937 section 3.1's first round trip: a sender with cwnd = FlightSize = 20 segments
    /// loses segments `lost`; the receiver gets the others (in order) and ACKs each. Returns,
    /// per returning ACK, the segments sent ('N' new, 'R' retransmitted) and pipe after it.
    fn first_round_trip(prr: bool, lost: std::ops::Range<u64>) -> (TcpSender, TcpReceiver, Vec<(String, u64)>) {
        let c = stack(prr);
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        let mut out = Vec::new();
        s.send_available(Time::ZERO, &mut out);
        assert_eq!(out.len(), 20);
        let mut rows = Vec::new();
        for k in (0..20).filter(|k| !lost.contains(k)) {
            r.on_data(ISS_DATA + k * MSS, MSS as u32, false, Time::from_millis(100));
            let (ack, _) = r.take_ack();
            out.clear();
            s.on_ack_sack(ack, false, r.sack_blocks().as_slice(), Time::from_millis(100 + k), &mut out);
            let sent: String = out.iter().map(|x: &Segment| if x.retransmission { 'R' } else { 'N' }).collect();
            rows.push((sent, s.pipe() / MSS));
        }
        (s, r, rows)
    }

    fn sent(rows: &[(String, u64)]) -> Vec<&str> {
        rows.iter().map(|(x, _)| x.as_str()).collect()
    }

    /// RFC 6937 section 3.1, one loss in 20 with Limited Transmit: N N R on the first three
    /// duplicates, then one new segment on every second ACK (the RFC's PRR row), where RFC 6675
    /// sends nothing for half the ACKs and then one on each. ssthresh is NewReno's
    /// FlightSize / 2 = 11 (the 20 segments and Limited Transmit's 2; the RFC's table has 10),
    /// so PRR's share is ceil(prr_delivered * 11 / 20) and the row ends with pipe = ssthresh.
    #[test]
    fn rfc_6937_single_loss_example() {
        let (s, _, rows) = first_round_trip(true, 0..1);
        assert_eq!(s.ssthresh, 11 * MSS);
        let expected: Vec<String> = (1..20u64)
            .map(|ack| match ack {
                1 | 2 => "N".to_string(),
                3 => "R".to_string(),
                // pipe is down to ssthresh: the reduction bound's ssthresh - pipe = 0 (the
                // RFC's "s" rows).
                19 => String::new(),
                // prr_delivered = ack - 2; one segment whenever ceil(d * 11 / 20) steps up.
                _ => {
                    let share = |d: u64| (d * 11).div_ceil(20);
                    "N".repeat((share(ack - 2) - share(ack - 3)) as usize)
                }
            })
            .collect();
        assert_eq!(sent(&rows), expected.iter().map(String::as_str).collect::<Vec<_>>());
        // Never more than one segment per ACK; the reduction ends at ssthresh.
        assert!(rows.iter().all(|(x, _)| x.len() <= 1));
        assert_eq!(rows.last().unwrap().1, 11);
        // RFC 6675 alone: silent until pipe falls below cwnd = ssthresh.
        let (_, _, plain) = first_round_trip(false, 0..1);
        let plain = sent(&plain);
        assert_eq!(&plain[..4], &["N", "N", "R", ""]);
        assert!(plain[3..11].iter().all(|x| x.is_empty()), "{plain:?}");
    }

    /// RFC 6937 section 3.1, segments 0-14 lost: ACKs 15 and 16 send N N (Limited Transmit),
    /// ACK 17 starts recovery, and PRR-SSRB sends 2R on each of ACKs 17-19 with pipe 4, 5, 6
    /// before sending (the RFC's PRR-SSRB row). RFC 6675 alone sends 7R at once.
    #[test]
    fn rfc_6937_burst_loss_example() {
        let (_, _, rows) = first_round_trip(true, 0..15);
        assert_eq!(sent(&rows), ["N", "N", "RR", "RR", "RR"]);
        // pipe after sending: 4 + 2, 5 + 2, 6 + 2.
        assert_eq!(rows.iter().skip(2).map(|x| x.1).collect::<Vec<_>>(), [6, 7, 8]);
        let (_, _, plain) = first_round_trip(false, 0..15);
        assert_eq!(sent(&plain)[2].len(), 7, "{plain:?}");
    }

    /// RFC 6937 section 3: when recovery ends, cwnd = ssthresh, whatever pipe + sndcnt was on
    /// the ACK before (after the burst, 8 segments against ssthresh 11).
    #[test]
    fn cwnd_at_recovery_exit_equals_ssthresh() {
        for lost in [0..1, 0..15, 3..5] {
            let (mut s, mut r, _) = first_round_trip(true, lost.clone());
            assert!(s.in_recovery());
            // Everything sent so far arrives; one cumulative ACK covers RecoveryPoint.
            let mut k = (r.rcv_nxt() - ISS_DATA) / MSS;
            while ISS_DATA + k * MSS < s.snd_max() {
                r.on_data(ISS_DATA + k * MSS, MSS as u32, false, Time::from_millis(200));
                k += 1;
            }
            let (ack, _) = r.take_ack();
            assert_eq!(ack, s.snd_max());
            let mut out = Vec::new();
            s.on_ack_sack(ack, false, &[], Time::from_millis(200), &mut out);
            assert!(!s.in_recovery());
            assert_eq!(s.cwnd, s.ssthresh, "lost {lost:?}");
        }
    }
}
