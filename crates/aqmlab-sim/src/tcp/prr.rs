//! Proportional Rate Reduction (RFC 6937) as Linux runs it (`tcp_cwnd_reduction` in
//! net/ipv4/tcp_input.c): the slow-start reduction bound (PRR-SSRB) on safe ACKs, the
//! conservative one (PRR-CRB) on the others ([`Prr::sndcnt`]). It decides how many
//! bytes a sender in SACK-based fast recovery may send on each ACK, so that the window falls
//! smoothly from RecoverFS to ssthresh over one round trip instead of RFC 6675's half-RTT
//! of silence, and climbs back by at most DeliveredData + 1 SMSS per safe ACK after a burst
//! loss has pushed pipe below ssthresh.
//!
//! The sender ([`super::TcpSender`]) keeps the per-recovery counters here, counts every segment
//! it sends in recovery ([`Prr::on_sent`]), and on each ACK sets cwnd = pipe + sndcnt before
//! RFC 6675's NextSeg loop runs (RFC 6937 section 3: "cwnd = pipe + sndcnt" is the form an
//! RFC 6675 sender applies it in).
//!
//! A second variant, [`Prr::ns3_on_ack`], is ns-3 3.44's `TcpPrrRecovery` (tag ns-3.44,
//! src/internet/model/tcp-prr-recovery.cc, as `TcpSocketBase` calls it), so that the "ns3"
//! profile recovers as ns-3 does. Its rules, where they differ from the above:
//! * RecoverFS is the pipe when recovery starts, before the fast retransmission (`EnterRecovery`
//!   takes `m_bytesInFlight`); later ns-3 takes FlightSize (its issue #1351).
//! * `DoRecovery` runs on an ACK that SACKs new data (ns-3's duplicate ACK with SACK) and, again,
//!   on an ACK that advances snd.una by at least a segment below the recovery point (its partial
//!   ACK); an ACK that does neither leaves cwnd as it was.
//! * On the duplicate-ACK call it adds one SMSS to DeliveredData while prr_delivered is below
//!   RecoverFS, as RFC 6937 does for a sender without SACK, although with SACK DeliveredData
//!   already counts the SACKed segment (fixed after 3.44, ns-3 issue #1350).
//! * Below ssthresh the bound is PRR-CRB, MAX(prr_delivered - prr_out, DeliveredData), plus one
//!   SMSS only on an ACK that cumulatively acknowledges a retransmission (`m_isRetransDataAcked`);
//!   the maximum is taken in unsigned 32-bit arithmetic, so when prr_out is ahead of
//!   prr_delivered the bound is that (negative) difference, not DeliveredData (ns-3 issue #1282).
//! * The proportional share is rounded up in bytes, not segments (ns-3 sends a segment once a
//!   whole one fits).
//! * The fast retransmission is counted in prr_out after the first ACK's send count, which is at
//!   least one SMSS.

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

    /// ns-3 3.44's PRR on one ACK in recovery (`ack` says how `TcpSocketBase` classifies it):
    /// the bytes cwnd may exceed the pipe by (`cwnd = m_bytesInFlight + sendCount`), or None when
    /// ns-3 leaves cwnd as it was. Each call is one `TcpPrrRecovery::DoRecovery`.
    pub fn ns3_on_ack(&mut self, delivered_data: u64, ack: Ns3Ack, pipe: u64, ssthresh: u64, smss: u64) -> Option<u64> {
        let mut send = None;
        if ack.duplicate {
            send = self.ns3_do_recovery(delivered_data, true, ack.retransmission_acked, pipe, ssthresh, smss).or(send);
        }
        if ack.partial {
            send = self.ns3_do_recovery(delivered_data, false, ack.retransmission_acked, pipe, ssthresh, smss).or(send);
        }
        send
    }

    /// `TcpPrrRecovery::DoRecovery` (ns-3.44): the send count of one call, None when its
    /// DeliveredData is 0 (it returns before touching cwnd).
    fn ns3_do_recovery(
        &mut self,
        delivered_data: u64,
        duplicate_ack: bool,
        retransmission_acked: bool,
        pipe: u64,
        ssthresh: u64,
        smss: u64,
    ) -> Option<u64> {
        let mut delivered = delivered_data;
        if duplicate_ack && self.delivered < self.recover_fs {
            delivered += smss; // ns-3 issue #1350: counted again with SACK
        }
        if delivered == 0 {
            return None;
        }
        self.delivered += delivered;
        let send = if pipe > ssthresh {
            let share = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as i64;
            share - self.out as i64
        } else {
            let behind = self.delivered as i64 - self.out as i64;
            // The unsigned maximum of ns-3.44 (issue #1282): a negative difference wraps above
            // any DeliveredData and wins.
            let mut limit = if behind >= 0 { behind.max(delivered as i64) } else { behind };
            if retransmission_acked {
                limit += smss as i64; // PRR-SSRB's segment, on a "safe" ACK only
            }
            limit.min(ssthresh as i64 - pipe as i64)
        };
        // "Force a fast retransmit upon entering fast recovery": at least one SMSS until
        // something was sent; never negative after that.
        let floor = if self.out > 0 { 0 } else { smss as i64 };
        Some(send.max(floor) as u64)
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
    /// * otherwise MIN(ssthresh - pipe, MAX(prr_delivered - prr_out, DeliveredData)), PRR-CRB,
    ///   plus SMSS (PRR-SSRB) only on a `safe_ack`: one that advanced SND.UNA and marked no
    ///   segment lost. That is Linux's `tcp_cwnd_reduction` (`FLAG_SND_UNA_ADVANCED &&
    ///   !newly_lost`; older kernels asked for an ACK of a retransmission and no lost
    ///   retransmission, never every ACK) and RFC 6937bis's SafeACK; RFC 6937 added the segment
    ///   on every ACK, which let a recovery whose head stayed lost slow-start its window back to
    ///   ssthresh on SACKs alone (issue 27, docs/fidelity.md, "PRR's extra segment only on a
    ///   safe ACK").
    ///
    /// Negative values are 0 (prr_out may run ahead of the proportional share after an RTO-free
    /// burst of NextSeg's rescue retransmission).
    pub fn sndcnt(&self, delivered_data: u64, pipe: u64, ssthresh: u64, smss: u64, safe_ack: bool) -> u64 {
        if pipe > ssthresh {
            // The RFC's CEIL is over segments (its examples count segments, Linux counts
            // packets): the share is rounded up to whole segments, since only whole segments
            // are sent. Rounding bytes instead sends each segment one ACK late.
            let share = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as u64;
            (share.div_ceil(smss) * smss).saturating_sub(self.out)
        } else {
            let conservative = self.delivered.saturating_sub(self.out).max(delivered_data);
            let limit = if safe_ack { conservative + smss } else { conservative };
            (ssthresh - pipe).min(limit)
        }
    }
}

/// How ns-3's `TcpSocketBase::ProcessAck` classifies an ACK in recovery, which decides its PRR
/// calls ([`Prr::ns3_on_ack`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ns3Ack {
    /// The ACK SACKed data not SACKed before (ns-3's duplicate ACK with SACK: `DupAck`).
    pub duplicate: bool,
    /// The ACK advanced snd.una by at least one segment and stays below the recovery point
    /// (the partial-ACK branch).
    pub partial: bool,
    /// The ACK cumulatively acknowledged a retransmitted segment (`m_isRetransDataAcked`).
    pub retransmission_acked: bool,
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
            let n = p.sndcnt(MSS, 15 * MSS, 10 * MSS, MSS, false);
            p.on_sent(n);
            sent.push(n / MSS);
        }
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
    }

    /// RFC 6937 section 3.1, 15 lost of 20: pipe 4 < ssthresh 10, so on safe ACKs PRR-SSRB sends
    /// DeliveredData + 1 SMSS = 2 segments per ACK ("2R 2R 2R"); on the others PRR-CRB sends
    /// what was delivered.
    #[test]
    fn slow_start_bound_sends_delivered_plus_one_on_a_safe_ack_only() {
        for (safe, per_ack) in [(true, 2 * MSS), (false, MSS)] {
            let mut p = Prr::start(20 * MSS);
            let mut pipe = 4 * MSS;
            for _ in 0..3 {
                p.on_ack(MSS);
                let n = p.sndcnt(MSS, pipe, 10 * MSS, MSS, safe);
                assert_eq!(n, per_ack, "safe ACK: {safe}");
                p.on_sent(n);
                pipe += n - MSS;
            }
        }
        // Near ssthresh the bound is ssthresh - pipe.
        let mut p = Prr::start(20 * MSS);
        p.on_ack(MSS);
        assert_eq!(p.sndcnt(MSS, 9 * MSS, 10 * MSS, MSS, true), MSS);
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
        first_round_trip_of(stack(prr), lost)
    }

    fn first_round_trip_of(c: TcpConfig, lost: std::ops::Range<u64>) -> (TcpSender, TcpReceiver, Vec<(String, u64)>) {
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
    /// ACK 17 starts recovery, and pipe is 4 before sending. The RFC's PRR-SSRB row sends 2R on
    /// each of ACKs 17-19; Linux (and RFC 6937bis) adds SSRB's segment only on a safe ACK, one
    /// that advances snd.una with no new loss, and these only SACK (segment 0 stays lost), so
    /// PRR-CRB sends 1R on each, what each delivered. RFC 6675 alone sends 7R at once.
    #[test]
    fn rfc_6937_burst_loss_example_with_linux_safe_ack() {
        let (_, _, rows) = first_round_trip(true, 0..15);
        assert_eq!(sent(&rows), ["N", "N", "R", "R", "R"]);
        // pipe after sending: 4 + 1 each time, one segment out for each one delivered.
        assert_eq!(rows.iter().skip(2).map(|x| x.1).collect::<Vec<_>>(), [5, 5, 5]);
        let (_, _, plain) = first_round_trip(false, 0..15);
        assert_eq!(sent(&plain)[2].len(), 7, "{plain:?}");
    }

    /// ns-3 3.44's PRR on the RFC's single loss (`prr_variant` ns3): RecoverFS is the pipe at
    /// the third duplicate ACK (22 sent, 3 SACKed, the head lost: 18), and every duplicate ACK
    /// counts two segments delivered while prr_delivered is below 18, so the proportional part
    /// sends 2 x 11 / 18 = 1.22 segments per ACK: the pipe rises above RecoverFS (RFC 6937's
    /// PRR sends 0.55 and takes it down to ssthresh). Computed by hand from tcp-prr-recovery.cc:
    /// at ACK k (k >= 3) prr_delivered = 2 (k - 2) segments and the share is
    /// ceil(prr_delivered x 11000 / 18000) bytes; the retransmission is counted after ACK 3's
    /// send count (1223 B, at least a segment).
    #[test]
    fn ns3_single_loss_example() {
        let c = TcpConfig { prr_variant: aqmlab_model::app::tcp_config::PrrVariant::Ns3, ..stack(true) };
        let (s, _, rows) = first_round_trip_of(c, 0..1);
        assert_eq!(s.ssthresh, 11 * MSS);
        // ACK 4: share ceil(4000 x 11 / 18) = 2445 - prr_out 1000: one segment; ACK 5: 3667 -
        // 2000; ACK 6: 4889 - 3000; ACK 7: 6112 - 4000 = 2112: two; ...
        assert_eq!(&sent(&rows)[..7], ["N", "N", "R", "N", "N", "N", "NN"]);
        // Nine duplicate ACKs (4-12) bring prr_delivered to RecoverFS; by then ceil(18 x 11 /
        // 18) = 11 segments are out against RFC 6937's ceil(9 x 11 / 20) = 5 after the same ACKs.
        let after_12: usize = rows[2..12].iter().map(|(x, _)| x.len()).sum();
        assert_eq!(after_12, 11, "{rows:?}");
        // The round trip ends with 17 segments in flight against ssthresh 11 (RFC 6937: 11).
        assert_eq!(rows.last().unwrap().1, 17, "{rows:?}");
        assert!(rows[3..12].iter().all(|(_, pipe)| *pipe >= 19), "{rows:?}");
        let (_, _, rfc) = first_round_trip(true, 0..1);
        assert_eq!(rfc[2..12].iter().map(|(x, _)| x.len()).sum::<usize>(), 6);
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

/// ns-3 3.44's PRR ([`Prr::ns3_on_ack`]): ns-3's own test vectors (src/internet/test/
/// tcp-prr-recovery-test.cc at tag ns-3.44, which assert only the direction of cwnd; the values
/// here follow from tcp-prr-recovery.cc), and the rules in which it differs from Linux's.
#[cfg(test)]
mod ns3_tests {
    use super::*;

    const SEG: u64 = 500;
    const DUP: Ns3Ack = Ns3Ack { duplicate: true, partial: false, retransmission_acked: false };
    const PARTIAL: Ns3Ack = Ns3Ack { duplicate: false, partial: true, retransmission_acked: false };

    /// ns-3's two vectors (ssthresh 2500, segments of 500 B): EnterRecovery with DeliveredData 0
    /// and `pipe` forces at least one segment, 1000 B are sent, then an ACK delivers 500 B.
    /// "bytesInFlight is greater than ssThresh" (pipe 3000): ceil(500 x 2500 / 3000) = 417 on
    /// entry, raised to a segment; then ceil(1000 x 2500 / 3000) - 1000 < 0: nothing, and cwnd
    /// stays at the pipe, 3500. "lower than ssThresh" (pipe 1000): RecoverFS is that pipe, not
    /// the 3000 B unacknowledged; PRR-CRB allows a segment on entry and, prr_out having caught
    /// up (1000 - 1000 = 0), DeliveredData: MIN(2500 - 1500, MAX(0, 500)).
    #[test]
    fn ns3_vectors() {
        for (pipe, entry, later) in [(3000, 500, 0), (1000, 500, 500)] {
            let mut p = Prr::start(pipe);
            assert_eq!(p.ns3_on_ack(0, DUP, pipe, 2500, SEG), Some(entry), "pipe {pipe}");
            p.on_sent(1000);
            assert_eq!(p.ns3_on_ack(500, PARTIAL, pipe + entry, 2500, SEG), Some(later), "pipe {pipe}");
        }
    }

    /// With SACK a duplicate ACK's DeliveredData already counts the SACKed segment; ns-3 3.44
    /// adds one more while prr_delivered is below RecoverFS (its issue #1350), so the
    /// proportional part sends 2 x ssthresh / RecoverFS segments per delivered one: with CUBIC's
    /// 0.7 the window grows in recovery, where RFC 6937 shrinks it.
    #[test]
    fn ns3_counts_a_sacked_segment_twice_until_recover_fs() {
        let (rfs, ss) = (10 * SEG, 7 * SEG);
        let mut ns3 = Prr::start(rfs);
        let mut rfc = Prr::start(rfs);
        let (mut ns3_sent, mut rfc_sent) = (0, 0);
        for _ in 0..5 {
            // The pipe stays above ssthresh: one segment SACKed per ACK.
            let n = ns3.ns3_on_ack(SEG, DUP, rfs, ss, SEG).unwrap() / SEG * SEG;
            ns3.on_sent(n);
            ns3_sent += n;
            rfc.on_ack(SEG);
            let r = rfc.sndcnt(SEG, rfs, ss, SEG, false);
            rfc.on_sent(r);
            rfc_sent += r;
        }
        assert_eq!(ns3.delivered(), rfs, "two segments per ACK until RecoverFS");
        assert_eq!(rfc.delivered(), 5 * SEG);
        assert_eq!(ns3_sent, 7 * SEG, "ceil(10 * 0.7) segments for 5 delivered");
        assert_eq!(rfc_sent, 4 * SEG, "ceil(5 * 0.7) = 4 segments, rounded up per segment");
        // From RecoverFS on, one segment per ACK again.
        ns3.ns3_on_ack(SEG, DUP, rfs, ss, SEG);
        assert_eq!(ns3.delivered(), rfs + SEG);
    }

    /// Below ssthresh: PRR-CRB, with SSRB's extra segment only on an ACK of a retransmission;
    /// and when prr_out is ahead of prr_delivered ns-3's unsigned maximum yields the negative
    /// difference (its issue #1282), so nothing is sent although the ACK delivered data, where
    /// Linux's PRR-SSRB sends DeliveredData + 1 SMSS (on a safe ACK).
    #[test]
    fn ns3_below_ssthresh_bound() {
        let (ss, pipe) = (10 * SEG, 4 * SEG);
        let mut p = Prr::start(20 * SEG);
        p.on_sent(SEG); // the fast retransmission
        assert_eq!(p.ns3_on_ack(SEG, PARTIAL, pipe, ss, SEG), Some(SEG), "MAX(500 - 500, 500), no SSRB segment");
        let mut p = Prr::start(20 * SEG);
        p.on_sent(SEG);
        let safe = Ns3Ack { retransmission_acked: true, ..PARTIAL };
        assert_eq!(p.ns3_on_ack(2 * SEG, safe, pipe, ss, SEG), Some(3 * SEG), "MAX(1000 - 500, 1000) + 500");
        let mut p = Prr::start(20 * SEG);
        p.on_sent(4 * SEG);
        assert_eq!(p.ns3_on_ack(SEG, PARTIAL, pipe, ss, SEG), Some(0), "prr_out ahead by 3 segments");
        assert_eq!(p.ns3_on_ack(SEG, safe, pipe, ss, SEG), Some(0), "still ahead by 2, plus one: negative");
        let mut linux = Prr::start(20 * SEG);
        linux.on_sent(4 * SEG);
        linux.on_ack(SEG);
        assert_eq!(linux.sndcnt(SEG, pipe, ss, SEG, true), 2 * SEG);
    }

    /// An ACK that neither SACKs new data nor advances snd.una makes no `DoRecovery` call, and
    /// one that does both makes two.
    #[test]
    fn ns3_calls_per_ack() {
        let mut p = Prr::start(10 * SEG);
        assert_eq!(p.ns3_on_ack(0, Ns3Ack::default(), 9 * SEG, 5 * SEG, SEG), None);
        assert_eq!(p.delivered(), 0);
        let both = Ns3Ack { duplicate: true, partial: true, retransmission_acked: false };
        p.ns3_on_ack(SEG, both, 9 * SEG, 5 * SEG, SEG);
        assert_eq!(p.delivered(), 3 * SEG, "the ACK's segment twice, and the duplicate ACK's one");
    }
}
