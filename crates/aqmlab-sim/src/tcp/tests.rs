//! State-machine tests of the NewReno sender and the receiver, without a network: the tests
//! play the network by hand, so each RFC rule is checked in isolation.

use super::*;
use aqmlab_model::app::tcp_config::{CongestionControl, RtoEstimator, SsthreshBasis};

/// The base configuration of the sender tests (NewReno, no option on, MSS 1000 B, IW 2, minimum
/// RTO 200 ms); other modules' tests change what they test with `..cfg()`.
pub(crate) fn cfg() -> TcpConfig {
    TcpConfig {
        mss: 1000,
        initial_cwnd_segments: 2,
        initial_rto_ns: 1_000_000_000,
        min_rto_ns: 200_000_000,
        max_rto_ns: 60_000_000_000,
        clock_granularity_ns: 1_000_000,
        delayed_ack: false,
        delayed_ack_timeout_ns: 200_000_000,
        rwnd: 10_000_000,
        ecn: false,
        sack: false,
        frto: false,
        prr: false,
        limited_transmit: false,
        rack: false,
        rto_restart_on_head_retransmit: false,
        rtt_sample_every_ack: false,
        rto_estimator: Default::default(),
        hystart: false,
        cubic_hystart: false,
        rate_estimator: false,
        rwnd_autotuning: false,
        send_buffer: 0,
        cwnd_limited_growth: false,
        cubic_alpha_to_one: true,
        congestion_control: Default::default(),
        ecn_codepoint: Default::default(),
        pacing: false,
        tso_autosize: false,
        byte_counting: false,
        quickack: false,
        bbr_ack_aggregation: true,
        bbr_policer_detection: true,
        prague_ecn_fallback: false,
        prague_rtt_scaling: Default::default(),
        ssthresh_basis: Default::default(),
        prr_variant: Default::default(),
        handshake: false,
    }
}

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

#[test]
fn slow_start_doubles_the_window_every_round_trip() {
    let mut s = TcpSender::new(&cfg());
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    let mut t = 0;
    for round in 0..6u32 {
        assert_eq!(out.len() as u64, 2u64 << round, "round {round}");
        t += 100;
        let acks: Vec<u64> = out.iter().map(|seg| seg.seq + seg.len as u64).collect();
        out.clear();
        for a in acks {
            s.on_ack(a, false, ms(t), &mut out);
        }
    }
    assert_eq!(s.cwnd, 128 * MSS);
}

#[test]
fn congestion_avoidance_adds_about_one_segment_per_round_trip() {
    let mut s = TcpSender::new(&cfg());
    s.ssthresh = 10 * MSS;
    s.cwnd = 10 * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    let acks: Vec<u64> = out.iter().map(|seg| seg.seq + seg.len as u64).collect();
    out.clear();
    for a in acks {
        s.on_ack(a, false, ms(100), &mut out);
    }
    // Ten ACKs of cwnd += MSS*MSS/cwnd: just under one MSS in total.
    assert!(s.cwnd > 10 * MSS + 900 && s.cwnd <= 11 * MSS, "{}", s.cwnd);
}

/// Sends a window of `n` segments from a fresh sender with a large window.
fn sender_with_window(n: u64) -> TcpSender {
    sender_with_window_of(n, &cfg())
}

/// [`sender_with_window`] with configuration `c` (also the DCTCP and Prague tests' sender).
pub(crate) fn sender_with_window_of(n: u64, c: &TcpConfig) -> TcpSender {
    let mut s = TcpSender::new(c);
    s.cwnd = n * MSS;
    s.ssthresh = n * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len() as u64, n);
    s
}

#[test]
fn three_duplicate_acks_trigger_exactly_one_fast_retransmit() {
    let mut s = sender_with_window(10);
    let mut out = Vec::new();
    // Segment 1 (seq 1) arrives, segment 2 (seq 1001) is lost, segments 3.. arrive.
    s.on_ack(1 + MSS, false, ms(100), &mut out);
    out.clear();
    for i in 0..2 {
        s.on_ack(1 + MSS, false, ms(101 + i), &mut out);
        assert!(out.iter().all(|seg| !seg.retransmission), "no retransmit before the 3rd dup");
    }
    s.on_ack(1 + MSS, false, ms(103), &mut out);
    let retx: Vec<_> = out.iter().filter(|seg| seg.retransmission).collect();
    assert_eq!(retx.len(), 1);
    assert_eq!(retx[0].seq, 1 + MSS);
    assert!(s.in_recovery());
    // ssthresh = FlightSize/2 = 10 segments / 2; cwnd = ssthresh + 3 SMSS.
    assert_eq!(s.ssthresh, 5 * MSS);
    out.clear();
    for i in 0..5 {
        s.on_ack(1 + MSS, false, ms(104 + i), &mut out);
    }
    assert!(out.iter().all(|seg| !seg.retransmission), "further dups must not retransmit again");
    assert_eq!(s.stats.fast_retransmits, 1);
}

/// Plays a lossless-except-`lost` network between a sender and a receiver, one-way delay
/// `owd`, until all `total` bytes are delivered or `limit` passes. Returns the finish time.
fn transfer(s: &mut TcpSender, r: &mut TcpReceiver, lost: &[u64], total: u64, owd: Time) -> Option<Time> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    // (time, order, is_ack, seq_or_ack)
    let mut events: BinaryHeap<Reverse<(Time, u64, bool, u64)>> = BinaryHeap::new();
    let mut order = 0;
    let mut dropped: Vec<u64> = lost.to_vec();
    let mut out = Vec::new();
    s.send_available(Time::ZERO, &mut out);
    let mut now = Time::ZERO;
    loop {
        for seg in out.drain(..) {
            if let Some(i) = dropped.iter().position(|d| *d == seg.seq) {
                dropped.remove(i); // lose only the first transmission
                continue;
            }
            order += 1;
            events.push(Reverse((now + owd, order, false, seg.seq)));
        }
        if r.rcv_nxt() >= ISS_DATA + total {
            return Some(now);
        }
        let next_timer = s.rto_deadline();
        let next_event = events.peek().map(|Reverse(e)| e.0);
        match (next_event, next_timer) {
            (Some(e), Some(t)) if t < e => {
                now = t;
                s.on_timer(now, &mut out);
            }
            (None, Some(t)) => {
                now = t;
                s.on_timer(now, &mut out);
            }
            (Some(_), _) => {
                let Reverse((t, _, is_ack, v)) = events.pop().unwrap();
                now = t;
                if is_ack {
                    s.on_ack(v, false, now, &mut out);
                } else {
                    r.on_data(v, MSS as u32, false, now);
                    let (ack, _) = r.take_ack();
                    order += 1;
                    events.push(Reverse((now + owd, order, true, ack)));
                }
            }
            (None, None) => return None,
        }
        if now > Time::from_secs(100) {
            return None;
        }
    }
}

#[test]
fn newreno_repairs_several_losses_in_one_window_without_a_timeout() {
    let mut s = TcpSender::new(&cfg());
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    let mut r = TcpReceiver::new(&cfg());
    // Three segments of the first window are lost.
    let lost = [1 + 3 * MSS, 1 + 7 * MSS, 1 + 12 * MSS];
    let done = transfer(&mut s, &mut r, &lost, 60 * MSS, ms(25));
    assert!(done.is_some(), "transfer did not finish");
    assert_eq!(s.stats.timeouts, 0, "NewReno must not need a timeout");
    assert_eq!(s.stats.fast_retransmits, 1, "one recovery episode for one window");
    assert_eq!(s.stats.retransmissions, 3);
}

#[test]
fn three_holes_in_one_window_take_about_three_round_trips_to_repair() {
    // The first hole is repaired by the fast retransmit, each later one by a partial ACK's
    // retransmission one round trip later (RFC 6582): about three 50 ms round trips.
    let mut s = TcpSender::new(&cfg());
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    let mut r = TcpReceiver::new(&cfg());
    let lost = [1 + 3 * MSS, 1 + 7 * MSS, 1 + 12 * MSS];
    let done = transfer(&mut s, &mut r, &lost, 20 * MSS, ms(25)).unwrap();
    assert!(done >= ms(150) && done < ms(400), "{done}");
}

#[test]
fn retransmission_timer_backs_off_exponentially() {
    let mut s = TcpSender::new(&cfg());
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    let mut fired = Vec::new();
    let mut now = ms(0);
    for _ in 0..5 {
        now = s.rto_deadline().unwrap();
        out.clear();
        s.on_timer(now, &mut out);
        fired.push(now);
        assert_eq!(out.len(), 1, "one segment (loss window) after a timeout");
        assert_eq!(out[0].seq, ISS_DATA);
        assert!(out[0].retransmission);
    }
    let gaps: Vec<u64> = fired.windows(2).map(|w| (w[1] - w[0]).as_nanos() / 1_000_000).collect();
    assert_eq!(gaps, vec![2000, 4000, 8000, 16000]);
    assert_eq!(s.cwnd, MSS);
    assert_eq!(s.stats.timeouts, 5);
    let _ = now;
}

#[test]
fn timer_is_not_fired_early() {
    let mut s = TcpSender::new(&cfg());
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    out.clear();
    s.on_timer(ms(999), &mut out);
    assert!(out.is_empty());
    assert_eq!(s.stats.timeouts, 0);
}

#[test]
fn receiver_acks_out_of_order_at_once_and_fills_gaps() {
    let mut r = TcpReceiver::new(&TcpConfig { delayed_ack: true, ..cfg() });
    assert_eq!(r.on_data(1, 1000, false, ms(0)), AckAction::Delay(ms(200)));
    assert_eq!(r.on_data(2001, 1000, false, ms(1)), AckAction::Now);
    assert_eq!(r.take_ack().0, 1001);
    assert_eq!(r.on_data(1001, 1000, false, ms(2)), AckAction::Now, "a gap fill is acked at once");
    assert_eq!(r.take_ack().0, 3001);
    assert_eq!(r.delivered_bytes, 3000);
}

#[test]
fn delayed_ack_every_second_segment() {
    let mut r = TcpReceiver::new(&TcpConfig { delayed_ack: true, ..cfg() });
    assert!(matches!(r.on_data(1, 1000, false, ms(0)), AckAction::Delay(_)));
    assert_eq!(r.on_data(1001, 1000, false, ms(1)), AckAction::Now);
}

#[test]
fn ecn_echo_halves_the_window_once_per_window() {
    let mut s = TcpSender::new(&TcpConfig { ecn: true, ..cfg() });
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    s.on_ack(1 + MSS, true, ms(100), &mut out);
    assert_eq!(s.stats.ecn_reductions, 1);
    let after = s.cwnd;
    s.on_ack(1 + 2 * MSS, true, ms(101), &mut out);
    assert_eq!(s.stats.ecn_reductions, 1, "second echo in the same window ignored");
    assert!(after <= 11 * MSS);
}

// ---- SACK (RFC 2018, RFC 6675) -----------------------------------------------------------

fn sack_cfg() -> TcpConfig {
    TcpConfig { sack: true, ..cfg() }
}

/// A SACK sender (RACK-TLP on or off) with a window and ssthresh of 20 segments and `total`
/// bytes to send, and its receiver: the start of the RACK-TLP transfer tests.
fn sack_pair_with_window_of_20(rack: bool, total: u64) -> (TcpSender, TcpReceiver) {
    let c = TcpConfig { rack, ..sack_cfg() };
    let mut s = TcpSender::new(&c);
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    s.write_until(ISS_DATA + total);
    (s, TcpReceiver::new(&c))
}

/// The first byte of segment `k` (segments are full-sized and aligned).
fn seg(k: u64) -> u64 {
    ISS_DATA + k * MSS
}

fn blocks(r: &TcpReceiver) -> Vec<(u64, u64)> {
    r.sack_blocks().as_slice().to_vec()
}

#[test]
fn receiver_sack_blocks_follow_rfc_2018() {
    let mut r = TcpReceiver::new(&sack_cfg());
    let arrive = |r: &mut TcpReceiver, k: u64| {
        r.on_data(seg(k), MSS as u32, false, ms(k));
        r.take_ack().0
    };
    assert_eq!(arrive(&mut r, 0), seg(1));
    assert_eq!(blocks(&r), vec![], "nothing held, no blocks");
    arrive(&mut r, 2);
    assert_eq!(blocks(&r), vec![(seg(2), seg(3))]);
    arrive(&mut r, 4);
    arrive(&mut r, 6);
    // The first block holds the segment that triggered the ACK, then the most recent others.
    assert_eq!(blocks(&r), vec![(seg(6), seg(7)), (seg(4), seg(5)), (seg(2), seg(3))]);
    arrive(&mut r, 8);
    assert_eq!(blocks(&r), vec![(seg(8), seg(9)), (seg(6), seg(7)), (seg(4), seg(5))], "at most three");
    // A duplicate of held data: its block is reported first again.
    assert_eq!(arrive(&mut r, 2), seg(1));
    assert_eq!(blocks(&r), vec![(seg(2), seg(3)), (seg(8), seg(9)), (seg(6), seg(7))]);
    // Merging: segment 3 joins blocks 2 and 4 into one, reported first, once.
    arrive(&mut r, 3);
    assert_eq!(blocks(&r), vec![(seg(2), seg(5)), (seg(8), seg(9)), (seg(6), seg(7))]);
    arrive(&mut r, 5);
    assert_eq!(blocks(&r), vec![(seg(2), seg(7)), (seg(8), seg(9))]);
    // The left edge advances over the merged block: it is no longer reported.
    assert_eq!(arrive(&mut r, 1), seg(7));
    assert_eq!(blocks(&r), vec![(seg(8), seg(9))]);
    arrive(&mut r, 10);
    arrive(&mut r, 9);
    assert_eq!(blocks(&r), vec![(seg(8), seg(11))]);
    assert_eq!(arrive(&mut r, 7), seg(11));
    assert_eq!(blocks(&r), vec![]);
    assert_eq!(r.delivered_bytes, 11 * MSS);
    // Without SACK the same receiver reports nothing.
    let mut plain = TcpReceiver::new(&cfg());
    plain.on_data(seg(2), MSS as u32, false, ms(0));
    assert!(plain.sack_blocks().is_empty());
}

#[test]
fn receiver_blocks_are_right_after_a_left_edge_advance_into_a_block() {
    let mut r = TcpReceiver::new(&sack_cfg());
    for k in [1, 3, 5, 7] {
        r.on_data(seg(k), MSS as u32, false, ms(0));
    }
    assert_eq!(blocks(&r), vec![(seg(7), seg(8)), (seg(5), seg(6)), (seg(3), seg(4))]);
    r.on_data(seg(0), MSS as u32, false, ms(1)); // fills the first hole: ACK 2, block 1 gone
    assert_eq!(r.take_ack().0, seg(2));
    assert_eq!(blocks(&r), vec![(seg(7), seg(8)), (seg(5), seg(6)), (seg(3), seg(4))]);
    r.on_data(seg(2), MSS as u32, false, ms(2));
    assert_eq!(r.take_ack().0, seg(4));
    assert_eq!(blocks(&r), vec![(seg(7), seg(8)), (seg(5), seg(6))]);
}

fn sack_sender_with_window(n: u64) -> TcpSender {
    let mut s = TcpSender::new(&sack_cfg());
    s.cwnd = n * MSS;
    s.ssthresh = n * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len() as u64, n);
    s
}

#[test]
fn sack_recovery_sets_cwnd_to_ssthresh_and_sends_only_while_the_pipe_allows() {
    let mut s = sack_sender_with_window(10);
    let mut out = Vec::new();
    // Segment 1 is lost. Segment 0's ACK lets segment 10 out (congestion avoidance).
    s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(10)]);
    out.clear();
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(3))], ms(101), &mut out);
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(4))], ms(102), &mut out);
    assert!(out.is_empty() && !s.in_recovery());
    assert!(!s.is_lost(seg(1)), "two SACKed segments above are not enough");
    // Third duplicate ACK: RFC 6675 (4).
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(5))], ms(103), &mut out);
    assert!(s.in_recovery() && s.is_lost(seg(1)));
    assert_eq!(out, vec![Segment { seq: seg(1), len: MSS as u32, retransmission: true }]);
    // FlightSize = 10 segments: ssthresh = cwnd = 5 segments, no inflation.
    assert_eq!((s.ssthresh, s.cwnd), (5 * MSS, 5 * MSS));
    // pipe: segment 1 retransmitted (lost, so counted once), 5..10 not lost: 7 segments.
    assert_eq!(s.pipe(), 7 * MSS);
    out.clear();
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(6))], ms(104), &mut out);
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(7))], ms(105), &mut out);
    assert!(out.is_empty(), "pipe 6 then 5 segments: cwnd - pipe < 1 SMSS");
    assert_eq!(s.pipe(), 5 * MSS);
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(8))], ms(106), &mut out);
    // pipe 4: one segment, new data (nothing else is lost: NextSeg rule 2).
    assert_eq!(out, vec![Segment { seq: seg(11), len: MSS as u32, retransmission: false }]);
    assert_eq!(s.pipe(), 5 * MSS);
    assert_eq!(s.cwnd, 5 * MSS);
    out.clear();
    // The retransmission arrives: a partial ACK (RecoveryPoint is the end of segment 10).
    s.on_ack_sack(seg(8), false, &[], ms(150), &mut out);
    assert!(s.in_recovery());
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(12)]);
    out.clear();
    s.on_ack_sack(seg(11), false, &[], ms(151), &mut out);
    assert!(!s.in_recovery(), "a cumulative ACK covering RecoveryPoint ends recovery");
    assert_eq!(s.cwnd, 5 * MSS);
    assert_eq!((s.stats.fast_retransmits, s.stats.retransmissions, s.stats.timeouts), (1, 1, 0));
}

/// The ssthresh a SACK sender of a 10-segment window sets when segment 1 is lost and the
/// third duplicate ACK SACKs segments 2-4, with `basis` (segment 0's ACK first lets segment 10
/// out, so segments 1-10 are outstanding).
fn ssthresh_at_fast_retransmit(basis: SsthreshBasis) -> u64 {
    let c = TcpConfig { ssthresh_basis: basis, ..sack_cfg() };
    let mut s = TcpSender::new(&c);
    s.cwnd = 10 * MSS;
    s.ssthresh = 10 * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
    for (k, t) in [(3, 101), (4, 102), (5, 103)] {
        s.on_ack_sack(seg(1), false, &[(seg(2), seg(k))], ms(t), &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.cwnd, s.ssthresh, "RFC 6675 (4.2): cwnd = ssthresh");
    s.ssthresh
}

#[test]
fn sack_recovery_halves_flightsize_or_with_ssthresh_basis_pipe_the_pipe() {
    // FlightSize: segments 1-10, 10 segments.
    assert_eq!(ssthresh_at_fast_retransmit(SsthreshBasis::FlightSize), 5 * MSS);
    // The pipe before the retransmission: 10 outstanding, less 3 SACKed and segment 1 lost.
    assert_eq!(ssthresh_at_fast_retransmit(SsthreshBasis::Pipe), 3 * MSS);
}

/// With `ssthresh_basis = cwnd`, Linux's reno halves the window, not what was sent: an
/// application that has written 11 segments (0-10) holds FlightSize at 10 while cwnd is 40.
#[test]
fn sack_recovery_with_ssthresh_basis_cwnd_halves_the_window_however_little_was_sent() {
    let reduce = |basis: SsthreshBasis| {
        let c = TcpConfig { ssthresh_basis: basis, ..sack_cfg() };
        let mut s = TcpSender::new(&c);
        s.write_until(seg(11));
        s.cwnd = 40 * MSS;
        s.ssthresh = 10 * MSS;
        let mut out = Vec::new();
        s.send_available(ms(0), &mut out);
        s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
        for (k, t) in [(3, 101), (4, 102)] {
            s.on_ack_sack(seg(1), false, &[(seg(2), seg(k))], ms(t), &mut out);
        }
        let cwnd_before = s.cwnd;
        s.on_ack_sack(seg(1), false, &[(seg(2), seg(5))], ms(103), &mut out);
        assert!(s.in_recovery());
        (s.ssthresh, cwnd_before)
    };
    let (halved, cwnd_before) = reduce(SsthreshBasis::Cwnd);
    assert!(cwnd_before >= 40 * MSS);
    assert_eq!(halved, cwnd_before / 2);
    assert_eq!(reduce(SsthreshBasis::FlightSize).0, 5 * MSS);
}

#[test]
fn sack_recovery_starts_when_islost_before_three_duplicate_acks() {
    // One ACK SACKing three segments (e.g. after lost ACKs): IsLost(HighACK + 1), DupAcks = 1.
    let mut s = sack_sender_with_window(10);
    let mut out = Vec::new();
    s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
    out.clear();
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(5))], ms(101), &mut out);
    assert!(s.in_recovery());
    assert_eq!(out[0], Segment { seq: seg(1), len: MSS as u32, retransmission: true });
}

#[test]
fn sack_retransmits_every_lost_segment_it_can_then_new_data() {
    // Holes at 1, 4 and 6; everything else of segments 0..=12 SACKed.
    let mut s = sack_sender_with_window(13);
    let mut out = Vec::new();
    s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
    out.clear();
    let sacks = [(seg(2), seg(4)), (seg(5), seg(6)), (seg(7), seg(13))];
    s.on_ack_sack(seg(1), false, &sacks, ms(101), &mut out);
    assert!(s.in_recovery());
    // FlightSize 13 -> cwnd 6.5 segments; pipe after retransmitting 1: 1 + 1 (segment 13, sent
    // after 12 and not lost) = 2, so NextSeg retransmits 4 and 6 (lost: 3+ SACKed segments
    // above each), then sends new data until cwnd - pipe < 1 SMSS.
    let seqs: Vec<(u64, bool)> = out.iter().map(|x| (x.seq, x.retransmission)).collect();
    assert_eq!(seqs, vec![(seg(1), true), (seg(4), true), (seg(6), true), (seg(14), false), (seg(15), false)]);
    assert_eq!((s.cwnd, s.pipe()), (6500, 6 * MSS));
}

/// Plays a one-path network for SACK and NewReno senders until all `total` bytes are delivered
/// (or 100 s pass): data segments leave a bottleneck `gap` apart, then travel `owd`; ACKs (with
/// the receiver's SACK blocks) travel `owd` back. `drop(seq, n)` loses the n-th transmission
/// (0 = the first) of `seq`. `check` sees the sender and the segments after every event.
struct Outcome {
    done: Option<Time>,
    /// (time, seq) of every retransmission.
    retransmissions: Vec<(Time, u64)>,
    transmissions: std::collections::HashMap<u64, u32>,
}

fn play(
    s: &mut TcpSender,
    r: &mut TcpReceiver,
    total: u64,
    owd: Time,
    gap: Time,
    drop: impl FnMut(u64, u32) -> bool,
    check: impl FnMut(&TcpSender, &[Segment], bool),
) -> Outcome {
    play_on_path(s, r, total, owd, gap, |t| t, drop, check)
}

/// `play` with `arrival` mapping every packet's (data or ACK) nominal arrival time to the time
/// it arrives, e.g. holding it through a delay spike.
#[allow(clippy::too_many_arguments)]
fn play_on_path(
    s: &mut TcpSender,
    r: &mut TcpReceiver,
    total: u64,
    owd: Time,
    gap: Time,
    arrival: impl Fn(Time) -> Time,
    mut drop: impl FnMut(u64, u32) -> bool,
    mut check: impl FnMut(&TcpSender, &[Segment], bool),
) -> Outcome {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    // (time, order, is_ack, seq or ack); an ACK's blocks are kept by order.
    let mut events: BinaryHeap<Reverse<(Time, u64, bool, u64)>> = BinaryHeap::new();
    let mut ack_blocks: HashMap<u64, SackBlocks> = HashMap::new();
    let mut order = 0;
    let mut link_free = Time::ZERO;
    let mut outcome = Outcome { done: None, retransmissions: Vec::new(), transmissions: HashMap::new() };
    let mut out = Vec::new();
    let mut now = Time::ZERO;
    s.send_available(now, &mut out);
    loop {
        for seg in out.drain(..) {
            let n = outcome.transmissions.entry(seg.seq).or_insert(0);
            let nth = *n;
            *n += 1;
            if seg.retransmission {
                outcome.retransmissions.push((now, seg.seq));
            }
            if drop(seg.seq, nth) {
                continue;
            }
            link_free = link_free.max(now) + gap;
            order += 1;
            events.push(Reverse((arrival(link_free + owd), order, false, seg.seq)));
        }
        if r.rcv_nxt() >= ISS_DATA + total {
            outcome.done = Some(now);
            return outcome;
        }
        let next_event = events.peek().map(|Reverse(e)| e.0);
        let fr_before = s.stats.fast_retransmits;
        match (next_event, s.rto_deadline()) {
            (e, Some(t)) if e.is_none_or(|e| t < e) => {
                now = t;
                s.on_timer(now, &mut out);
            }
            (Some(_), _) => {
                let Reverse((t, o, is_ack, v)) = events.pop().unwrap();
                now = t;
                if is_ack {
                    let b = ack_blocks.remove(&o).unwrap_or_default();
                    s.on_ack_sack(v, false, b.as_slice(), now, &mut out);
                } else {
                    r.on_data(v, MSS as u32, false, now);
                    let (ack, _) = r.take_ack();
                    order += 1;
                    ack_blocks.insert(order, r.sack_blocks());
                    events.push(Reverse((arrival(now + owd), order, true, ack)));
                }
            }
            _ => return outcome,
        }
        check(s, &out, s.stats.fast_retransmits > fr_before);
        if now > Time::from_secs(100) {
            return outcome;
        }
    }
}

fn no_check(_: &TcpSender, _: &[Segment], _: bool) {}

#[test]
fn sack_repairs_three_losses_in_one_round_trip_where_newreno_needs_three() {
    let lost = [seg(3), seg(7), seg(12)];
    let mut results = Vec::new();
    for sack in [false, true] {
        let c = TcpConfig { sack, ..cfg() };
        let mut s = TcpSender::new(&c);
        s.cwnd = 20 * MSS;
        s.ssthresh = 20 * MSS;
        let mut r = TcpReceiver::new(&c);
        // Done when the first window (segments 0..20) is delivered: every hole is repaired.
        let o = play(&mut s, &mut r, 20 * MSS, ms(25), ms(1), |seq, n| n == 0 && lost.contains(&seq), no_check);
        assert!(o.done.is_some(), "sack={sack}: transfer did not finish");
        assert_eq!(s.stats.timeouts, 0, "sack={sack}: no timeout");
        assert_eq!(s.stats.fast_retransmits, 1, "sack={sack}: one recovery for one window");
        let mut retx: Vec<u64> = o.retransmissions.iter().map(|x| x.1).collect();
        retx.sort();
        assert_eq!(retx, lost.to_vec(), "sack={sack}: exactly the lost segments, once each");
        let first = o.retransmissions.first().unwrap().0;
        let last = o.retransmissions.last().unwrap().0;
        results.push((last - first, o.done.unwrap()));
    }
    let (newreno_span, newreno_done) = results[0];
    let (sack_span, sack_done) = results[1];
    // RTT = 50 ms plus up to 20 ms of serialization: NewReno retransmits one hole per round trip.
    assert!(newreno_span >= ms(100), "NewReno: {newreno_span}");
    assert!(sack_span < ms(50), "SACK: all holes within one RTT of entering recovery, took {sack_span}");
    // The window is repaired about two round trips sooner.
    assert!(sack_done + ms(80) <= newreno_done, "SACK {sack_done} vs NewReno {newreno_done}");
    assert!(sack_done < ms(150), "SACK: first loss seen at about 55 ms, repaired one RTT later: {sack_done}");
}

#[test]
fn sack_lost_retransmission_is_repaired_by_the_timeout() {
    let mut s = TcpSender::new(&sack_cfg());
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    let mut r = TcpReceiver::new(&sack_cfg());
    // Segment 5 and its fast retransmission are both lost.
    let o = play(&mut s, &mut r, 60 * MSS, ms(25), ms(1), |seq, n| seq == seg(5) && n < 2, no_check);
    assert!(o.done.is_some(), "transfer did not finish");
    assert_eq!(s.stats.fast_retransmits, 1);
    assert_eq!(s.stats.timeouts, 1, "HighRxt forbids a second fast retransmission: the RTO repairs it");
    assert_eq!(o.transmissions[&seg(5)], 3);
    assert_eq!(r.delivered_bytes, r.rcv_nxt() - ISS_DATA);
    // After the timeout go-back-N skips what the receiver SACKs: far fewer than the 20-odd
    // segments outstanding are sent again.
    assert!(s.stats.retransmissions <= 6, "{} retransmissions", s.stats.retransmissions);
}

/// A small deterministic generator for loss patterns.
fn lcg(state: &mut u64) -> f64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

#[test]
fn sack_pipe_never_lets_the_sender_exceed_cwnd() {
    let mut recovery_sends = 0;
    for seed in 1..=40u64 {
        // Half the runs with a receiver window of 8 segments, where NextSeg often has no new
        // data to send (rules 3 and 4).
        let c = TcpConfig { rwnd: if seed % 2 == 0 { 8 * MSS } else { 10_000_000 }, ..sack_cfg() };
        let mut s = TcpSender::new(&c);
        let mut r = TcpReceiver::new(&c);
        let mut rng = seed;
        let total = 400 * MSS;
        let o = play(
            &mut s,
            &mut r,
            total,
            ms(20),
            Time::from_micros(500),
            |_, _| lcg(&mut rng) < 0.06,
            |s, out, entered| {
                if !s.in_recovery() {
                    return;
                }
                assert_eq!(s.cwnd, s.ssthresh, "no window inflation during SACK recovery");
                // Besides the entry's retransmission, a segment goes out only while
                // cwnd - pipe >= 1 SMSS, so afterwards pipe <= cwnd.
                if out.len() > entered as usize {
                    recovery_sends += out.len() - entered as usize;
                    assert!(s.pipe() <= s.cwnd, "seed {seed}: pipe {} > cwnd {}", s.pipe(), s.cwnd);
                }
            },
        );
        assert!(o.done.is_some(), "seed {seed}: transfer did not finish");
        assert_eq!(r.delivered_bytes, r.rcv_nxt() - ISS_DATA);
        assert!(s.stats.fast_retransmits > 0, "seed {seed}: losses must cause recoveries");
    }
    assert!(recovery_sends > 100, "the check must have been exercised: {recovery_sends}");
}

#[test]
fn sack_without_losses_sends_exactly_like_newreno() {
    let mut traces = Vec::new();
    for sack in [false, true] {
        let c = TcpConfig { sack, ..cfg() };
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        let mut trace = Vec::new();
        let o = play(
            &mut s,
            &mut r,
            300 * MSS,
            ms(20),
            ms(1),
            |_, _| false,
            |s, out, _| {
                trace.extend(out.iter().map(|x| x.seq));
                trace.push(s.cwnd);
            },
        );
        assert!(o.done.is_some());
        traces.push((trace, o.done));
    }
    assert_eq!(traces[0], traces[1]);
}

#[test]
fn sack_timeout_forgets_the_scoreboard_and_skips_only_data_sacked_after_it() {
    let mut s = sack_sender_with_window(10);
    let mut out = Vec::new();
    // Segment 0 arrives (segment 10 goes out); 1 and 5 are lost, the rest SACKed.
    s.on_ack_sack(seg(1), false, &[], ms(100), &mut out);
    s.on_ack_sack(seg(1), false, &[(seg(2), seg(5)), (seg(6), seg(11))], ms(101), &mut out);
    assert!(s.in_recovery());
    // cwnd 5, pipe 1 after retransmitting 1: retransmit 5 (lost), then new 11-13.
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(10), seg(1), seg(5), seg(11), seg(12), seg(13)]);
    out.clear();
    // Both retransmissions are lost too: the timer fires.
    let t = s.rto_deadline().unwrap();
    s.on_timer(t, &mut out);
    assert!(!s.in_recovery() && s.scoreboard().is_empty(), "RFC 2018 section 8: forget the SACKs");
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(1)]);
    out.clear();
    // Had the receiver reneged, the old SACKs would be wrong: with nothing SACKed since the
    // timeout, go-back-N resends 2 and 3 (cwnd 2 segments).
    s.on_ack_sack(seg(2), false, &[], t + ms(50), &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(2), seg(3)]);
    out.clear();
    // SACK information arriving after the timeout is used: 6.. are skipped, 5 is resent.
    s.on_ack_sack(seg(5), false, &[(seg(6), seg(11))], t + ms(100), &mut out);
    assert_eq!(out.iter().map(|x| x.seq).collect::<Vec<_>>(), vec![seg(5)]);
    assert!(!s.in_recovery(), "no new recovery before RecoveryPoint is acknowledged");
    out.clear();
    // Segments 11-13, new data sent during the recovery before the timeout, are presumed lost
    // too: resent, then new data.
    s.on_ack_sack(seg(11), false, &[], t + ms(150), &mut out);
    let sent: Vec<(u64, bool)> = out.iter().map(|x| (x.seq, x.retransmission)).collect();
    assert_eq!(sent, vec![(seg(11), true), (seg(12), true), (seg(13), true), (seg(14), false)]);
    assert_eq!(s.stats.timeouts, 1);
}

// ---- F-RTO (RFC 5682) ----------------------------------------------------------------------

fn frto_cfg(sack: bool) -> TcpConfig {
    TcpConfig { frto: true, sack, ..cfg() }
}

/// A network with one-way delay `owd` (no bottleneck) in which every packet - data and ACK -
/// that would arrive during [spike_from, spike_to) is held until `spike_to` (in its order), a
/// delay spike such as a link outage or a starved queue. Nothing is lost unless `drop(seq, n)`.
/// Runs until `total` bytes are delivered, then returns the sender's transmissions.
fn play_spike(
    s: &mut TcpSender,
    r: &mut TcpReceiver,
    total: u64,
    owd: Time,
    spike: (Time, Time),
    drop: impl FnMut(u64, u32) -> bool,
) -> Outcome {
    let arrival = |t: Time| if t >= spike.0 && t < spike.1 { spike.1 } else { t };
    play_on_path(s, r, total, owd, Time::ZERO, arrival, drop, no_check)
}

/// A 350 ms delay spike without loss. RTT 50 ms, so the RTO is at its 200 ms minimum when
/// the spike starts at 1 s; the receiver window (20 segments) keeps the transfer going for
/// about 5 s. Every packet in flight during the spike is late, none is lost.
fn spike_run(c: &TcpConfig) -> (TcpSender, Outcome) {
    let c = &TcpConfig { rwnd: 20 * MSS, ..c.clone() };
    let mut s = TcpSender::new(c);
    let mut r = TcpReceiver::new(c);
    let o = play_spike(&mut s, &mut r, 2000 * MSS, ms(25), (ms(1000), ms(1350)), |_, _| false);
    assert!(o.done.is_some(), "transfer did not finish");
    assert_eq!(r.delivered_bytes, 2000 * MSS);
    (s, o)
}

#[test]
fn frto_detects_a_delay_spike_as_spurious_and_does_not_go_back_n() {
    for sack in [false, true] {
        let (plain, po) = spike_run(&TcpConfig { sack, ..cfg() });
        let (frto, fo) = spike_run(&frto_cfg(sack));
        assert_eq!(plain.stats.timeouts, 1, "sack={sack}: the spike causes one timeout");
        assert_eq!(frto.stats.timeouts, 1, "sack={sack}");
        assert_eq!(plain.stats.spurious_timeouts, 0, "sack={sack}: detection is off without F-RTO");
        assert_eq!(frto.stats.spurious_timeouts, 1, "sack={sack}: F-RTO must detect the spurious timeout");
        // Without F-RTO the sender resends the whole window that was in flight (go-back-N);
        // with F-RTO only the one RTO retransmission.
        assert!(plain.stats.retransmissions >= 10, "sack={sack}: go-back-N resent {}", plain.stats.retransmissions);
        assert_eq!(frto.stats.retransmissions, 1, "sack={sack}: F-RTO resent {:?}", fo.retransmissions);
        assert!(po.transmissions.values().any(|&n| n > 1));
        // The conservative response: cwnd = ssthresh = half the FlightSize at the timeout,
        // not one segment, so the transfer finishes sooner.
        assert!(fo.done.unwrap() < po.done.unwrap(), "sack={sack}: {:?} vs {:?}", fo.done, po.done);
    }
}

#[test]
fn frto_does_not_call_a_real_loss_spurious_and_repairs_it() {
    for sack in [false, true] {
        for (first, last, data_end) in [(9, 9, Some(10)), (6, 9, Some(10)), (5, 14, None), (5, 20, None), (3, 12, None)] {
            // Segments first..=last (first transmissions) are lost: too few duplicate ACKs for
            // a fast retransmit, so only the timeout can repair them. With `data_end` the
            // application has no more data (step 2b cannot send new data); otherwise step 2b's
            // new segments are lost too (5..=20) or arrive and cause duplicate ACKs (step 3a).
            let c = frto_cfg(sack);
            let mut s = TcpSender::new(&c);
            s.cwnd = 10 * MSS;
            s.ssthresh = 10 * MSS;
            s.data_end = data_end.map(seg);
            let mut r = TcpReceiver::new(&c);
            let total = if data_end.is_some() { 10 * MSS } else { 60 * MSS };
            let lost = first..=last;
            let o = play(&mut s, &mut r, total, ms(25), ms(1), |q, n| n == 0 && lost.contains(&((q - ISS_DATA) / MSS)), no_check);
            let case = format!("sack={sack} lost {first}..={last}");
            assert!(o.done.is_some(), "{case}: not repaired");
            assert!(s.stats.timeouts >= 1, "{case}");
            assert_eq!(s.stats.spurious_timeouts, 0, "{case}: a real loss is not spurious");
            assert_eq!(r.delivered_bytes, total);
            for k in first..=last {
                assert!(o.transmissions[&seg(k)] >= 2, "{case}: segment {k} must be retransmitted");
            }
        }
    }
}

#[test]
fn frto_reverts_to_go_back_n_when_the_second_ack_is_a_duplicate() {
    // Step-by-step RFC 5682 section 2.1: segments 0..10 sent, 1 and 2 lost, 3..9 delayed.
    let mut s = sender_with_window(10);
    s.frto = true;
    let mut out = Vec::new();
    s.on_ack(seg(1), false, ms(50), &mut out); // segment 0 acked, segment 10 sent
    out.clear();
    let t = s.rto_deadline().unwrap();
    s.on_timer(t, &mut out);
    // (1) retransmit the first unacknowledged segment only.
    assert_eq!(out.iter().map(|x| (x.seq, x.retransmission)).collect::<Vec<_>>(), vec![(seg(1), true)]);
    out.clear();
    // (2b) the retransmission of 1 is acked (2 is lost too): two new segments, no retransmission.
    s.on_ack(seg(2), false, t + ms(50), &mut out);
    assert_eq!(out.iter().map(|x| (x.seq, x.retransmission)).collect::<Vec<_>>(), vec![(seg(11), false), (seg(12), false)]);
    out.clear();
    // (3a) a duplicate ACK (caused by segment 11): conventional recovery, cwnd 3 SMSS.
    s.on_ack(seg(2), false, t + ms(100), &mut out);
    assert_eq!(s.cwnd, 2 * MSS, "cwnd 1 SMSS after the RTO plus one ACK, at most 3 SMSS");
    assert_eq!(out.iter().map(|x| (x.seq, x.retransmission)).collect::<Vec<_>>(), vec![(seg(2), true), (seg(3), true)]);
    assert_eq!(s.stats.spurious_timeouts, 0);
}

#[test]
fn frto_off_sends_exactly_as_before() {
    // The per-step traces of the spike run agree between a sender without F-RTO and the same
    // sender with F-RTO until the timeout: F-RTO changes nothing outside a timeout.
    let mut traces = Vec::new();
    for frto in [false, true] {
        let c = TcpConfig { frto, ..cfg() };
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        let mut trace = Vec::new();
        let o = play(
            &mut s,
            &mut r,
            300 * MSS,
            ms(20),
            ms(1),
            |_, _| false,
            |s, out, _| {
                trace.extend(out.iter().map(|x| x.seq));
                trace.push(s.cwnd);
            },
        );
        assert!(o.done.is_some() && s.stats.timeouts == 0);
        traces.push(trace);
    }
    assert_eq!(traces[0], traces[1]);
}

/// A CUBIC sender with `n` segments in flight.
fn cubic_sender_with_window(n: u64, c: TcpConfig) -> TcpSender {
    sender_with_window_of(n, &TcpConfig { congestion_control: aqmlab_model::app::tcp_config::CongestionControl::Cubic, ..c })
}

#[test]
fn cubic_sender_reduces_by_beta_0_7_on_loss_timeout_and_ecn() {
    // Fast retransmit (RFC 9438 section 4.6): ssthresh = 0.7 FlightSize, and NewReno's fast
    // recovery (RFC 6582) inflates from there: cwnd = ssthresh + 3 SMSS.
    let mut s = cubic_sender_with_window(20, cfg());
    let mut out = Vec::new();
    s.on_ack(1 + MSS, false, ms(100), &mut out); // and one new segment: 20 in flight
    for i in 0..3 {
        s.on_ack(1 + MSS, false, ms(101 + i), &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh, 20 * MSS * 7 / 10);
    assert_eq!(s.cwnd, s.ssthresh + 3 * MSS);
    // A timeout (section 4.8): the loss window of one segment, ssthresh from beta_cubic.
    let mut s = cubic_sender_with_window(20, cfg());
    s.on_timer(ms(5000), &mut out);
    assert_eq!((s.cwnd, s.ssthresh), (MSS, 20 * MSS * 7 / 10));
    // ECN-Echo (section 4.6 treats it as a congestion event): cwnd = ssthresh = 0.7 FlightSize
    // (19 segments: the reduction comes before the ACK's new segment is sent).
    let mut s = cubic_sender_with_window(20, TcpConfig { ecn: true, ..cfg() });
    s.on_ack(1 + MSS, true, ms(100), &mut out);
    assert_eq!((s.cwnd, s.ssthresh), (19 * MSS * 7 / 10, 19 * MSS * 7 / 10));
}

/// A SACK sender (controller `cc`) with a window of 20 segments whose segment 0 is lost, and
/// so is every retransmission of it: all the other segments arrive and are SACKed, so RFC
/// 6675's NextSeg (2) keeps sending new data while HighACK stays at segment 0, and only the
/// timer can repair the hole. Returns the sender when its timer is due.
fn sack_recovery_held_by_a_lost_retransmission(cc: CongestionControl) -> (TcpSender, Time) {
    let c = TcpConfig { congestion_control: cc, ..sack_cfg() };
    let mut s = TcpSender::new(&c);
    (s.cwnd, s.ssthresh) = (20 * MSS, 20 * MSS);
    let mut r = TcpReceiver::new(&c);
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    for round in 1..=5 {
        let now = ms(10 * round); // round trips of 10 ms, far inside the 1 s RTO
        for seg in std::mem::take(&mut out) {
            if seg.seq == ISS_DATA {
                continue;
            }
            r.on_data(seg.seq, seg.len, false, now);
            let (ack, _) = r.take_ack();
            s.on_ack_sack(ack, false, &blocks(&r), now, &mut out);
        }
    }
    assert!(s.in_recovery());
    let deadline = s.rto_deadline().unwrap();
    (s, deadline)
}

#[test]
fn a_cubic_timeout_in_sack_recovery_keeps_the_reduction_already_made() {
    // Issue 27: CUBIC with SACK timed out after each such stall and took ssthresh from 0.7 x
    // HighData - HighACK, which counts the SACKed bytes and the new data sent during the
    // stall (here over 4 times cwnd): ssthresh rose far above the window in use, the next slow
    // start overshot the path and the cycle repeated. The reduction for this window of data
    // was made when recovery began (Linux's tcp_enter_loss: "reduce ssthresh if it has not
    // yet been made inside this window"); the timeout keeps it.
    let (mut s, deadline) = sack_recovery_held_by_a_lost_retransmission(CongestionControl::Cubic);
    let (cwnd_before, ssthresh_before) = (s.cwnd, s.ssthresh);
    assert!(s.snd_max() - s.snd_una() > 4 * cwnd_before, "the stall must have sent new data");
    let mut out = Vec::new();
    s.on_timer(deadline, &mut out);
    assert_eq!(s.stats.timeouts, 1);
    assert!(s.ssthresh <= cwnd_before, "ssthresh {} above the window before {}", s.ssthresh, cwnd_before);
    assert_eq!((s.cwnd, s.ssthresh), (MSS, ssthresh_before));
    // The backed-off timer fires again with the hole still open: still the same reduction
    // (RFC 5681 section 3.1 asks for one only when the segment "has not yet been resent by
    // way of the retransmission timer").
    let again = s.rto_deadline().unwrap();
    s.on_timer(again, &mut out);
    assert_eq!((s.stats.timeouts, s.cwnd, s.ssthresh), (2, MSS, ssthresh_before));
}

#[test]
fn a_newreno_timeout_in_sack_recovery_still_halves_flightsize() {
    // NewReno keeps RFC 5681's equation (4) on FlightSize at every timeout, SACK or not (the
    // head-to-head reproduction runs NewReno with SACK): here that is above the window in use.
    let (mut s, deadline) = sack_recovery_held_by_a_lost_retransmission(CongestionControl::NewReno);
    let flight = s.snd_max() - s.snd_una();
    s.on_timer(deadline, &mut Vec::new());
    assert_eq!((s.cwnd, s.ssthresh), (MSS, flight / 2));
}

#[test]
fn a_cubic_sack_reduction_starts_from_at_most_the_window_in_use() {
    // CUBIC with SACK reduces from FlightSize but never from more than cwnd (RFC 9438 section
    // 4.6 allows cwnd; Linux uses it), at a timeout and at an ECN-Echo alike. FlightSize
    // exceeds cwnd when a recovery ended with data SACKed above the new HighACK, or after a
    // reduction; here set by hand: 20 segments in flight, a window of 5.
    let beta = |w: u64| ((w as f64 * cc::CUBIC_BETA) as u64).max(2 * MSS);
    let c = TcpConfig { congestion_control: CongestionControl::Cubic, ecn: true, ..sack_cfg() };
    let mut s = sender_with_window_of(20, &c);
    (s.cwnd, s.ssthresh) = (5 * MSS, 5 * MSS);
    s.on_timer(s.rto_deadline().unwrap(), &mut Vec::new());
    assert_eq!((s.cwnd, s.ssthresh), (MSS, beta(5 * MSS)));
    let mut s = sender_with_window_of(20, &c);
    (s.cwnd, s.ssthresh) = (5 * MSS, 5 * MSS);
    s.on_ack_sack(ISS_DATA, true, &[], ms(100), &mut Vec::new()); // a duplicate ACK echoing CE
    assert_eq!((s.cwnd, s.ssthresh), (beta(5 * MSS), beta(5 * MSS)), "an ECN-Echo must not raise cwnd");
    // Without SACK, and for NewReno, the rule is RFC 5681's equation (4) on FlightSize.
    let mut s = sender_with_window_of(20, &TcpConfig { congestion_control: CongestionControl::Cubic, ..cfg() });
    (s.cwnd, s.ssthresh) = (5 * MSS, 5 * MSS);
    s.on_timer(s.rto_deadline().unwrap(), &mut Vec::new());
    assert_eq!(s.ssthresh, beta(20 * MSS));
    let mut s = sender_with_window_of(20, &sack_cfg());
    (s.cwnd, s.ssthresh) = (5 * MSS, 5 * MSS);
    s.on_timer(s.rto_deadline().unwrap(), &mut Vec::new());
    assert_eq!(s.ssthresh, 10 * MSS);
}

// ---- pacing ---------------------------------------------------------------------------------

#[test]
fn a_paced_sender_spaces_segments_by_size_over_rate() {
    let c = TcpConfig { initial_cwnd_segments: 20, congestion_control: CongestionControl::Bbr, pacing: true, ..cfg() };
    let mut s = TcpSender::new(&c);
    let rate = s.pacer().unwrap().rate();
    // BBR's initial rate: 20 segments per 1 ms at 2.885, less 1 % (tcp_bbr.c before any RTT).
    assert_eq!(rate, (20.0 * 1000.0 * 1000.0 * 2.885 * 0.99) as u64);
    let gap = pacing::Pacer::gap(MSS, rate);
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    // The first 10 segments are not paced (Linux), the 11th leaves with them and sets the gap.
    assert_eq!(out.len(), 11);
    let mut at = s.pacing_deadline().expect("the pacer holds the 12th");
    assert_eq!(at, Time::ZERO + gap);
    for i in 12..=20 {
        out.clear();
        s.on_pacing_timer(at, &mut out);
        assert_eq!(out.len(), 1, "segment {i} alone at {at:?}");
        match s.pacing_deadline() {
            Some(next) => {
                assert_eq!(next - at, gap, "segment {i}");
                at = next;
            }
            None => assert_eq!(i, 20, "cwnd (20 segments) is full only after the 20th"),
        }
    }
    // A timer event before the deadline sends nothing.
    let mut u = TcpSender::new(&c);
    u.send_available(ms(0), &mut out);
    out.clear();
    u.on_pacing_timer(Time(gap.0 - 1), &mut out);
    assert!(out.is_empty());
}

#[test]
fn without_pacing_the_window_leaves_at_once_as_before() {
    let c = TcpConfig { initial_cwnd_segments: 20, congestion_control: CongestionControl::Cubic, ..cfg() };
    let mut s = TcpSender::new(&c);
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len(), 20);
    assert!(s.pacer().is_none() && s.pacing_deadline().is_none());
}

#[test]
fn cubic_with_pacing_paces_at_linux_default_ratio_after_the_first_rtt_sample() {
    let c = TcpConfig { initial_cwnd_segments: 20, congestion_control: CongestionControl::Cubic, pacing: true, ..cfg() };
    let mut s = TcpSender::new(&c);
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len(), 20, "unpaced before an RTT sample (Linux divides by srtt only once it has one)");
    out.clear();
    s.on_ack(ISS_DATA + MSS, false, ms(100), &mut out);
    // srtt 100 ms, cwnd 21 segments in slow start: 200 % x 21,000 B / 0.1 s = 420,000 B/s.
    assert_eq!(s.pacer().unwrap().rate(), 420_000);
}

/// A paced CUBIC sender after its first ACK (srtt 100 ms; ten segments acknowledged, so the
/// window has room for eleven), with or without `tso_autosize`: what leaves at the ACK and at
/// each of the next two pacing deadlines, and the gaps between those instants.
fn paced_departures(tso_autosize: bool) -> (Vec<usize>, Vec<Time>, u64) {
    let c = TcpConfig { initial_cwnd_segments: 20, congestion_control: CongestionControl::Cubic, pacing: true, tso_autosize, ..cfg() };
    let mut s = TcpSender::new(&c);
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    out.clear();
    s.on_ack(ISS_DATA + 10 * MSS, false, ms(100), &mut out);
    let rate = s.pacer().unwrap().rate();
    let mut counts = vec![out.len()];
    let mut gaps = Vec::new();
    let mut at = ms(100);
    for _ in 0..2 {
        let next = s.pacing_deadline().expect("the pacer holds the next segment back");
        gaps.push(next - at);
        at = next;
        out.clear();
        s.on_pacing_timer(at, &mut out);
        counts.push(out.len());
    }
    (counts, gaps, rate)
}

#[test]
fn with_tso_autosize_a_paced_sender_sends_two_segment_skbs_a_gap_of_two_apart() {
    // 200 % of 21 segments over 100 ms: 420,000 B/s, 410 bytes a millisecond, so Linux's skb
    // holds its floor of 2 segments (tcp_tso_autosize, net.ipv4.tcp_min_tso_segs).
    // The first burst leaves 100 ms after the departure time the unpaced start left, so it is
    // credited half its gap; the next a whole gap.
    let (counts, gaps, rate) = paced_departures(true);
    assert_eq!(rate, 420_000);
    assert_eq!(counts, vec![2, 2, 2]);
    let skb = pacing::Pacer::gap(2 * MSS, rate);
    assert_eq!(gaps, vec![Time(skb.0 - skb.0 / 2), skb]);
    // Without it, the same sender paces one segment at a time, a gap of one apart.
    let (counts, gaps, rate) = paced_departures(false);
    assert_eq!(counts, vec![1, 1, 1]);
    let one = pacing::Pacer::gap(MSS, rate);
    assert_eq!(gaps, vec![Time(one.0 - one.0 / 2), one]);
}

// ---- RACK-TLP (RFC 8985) ----------------------------------------------------------------

/// A paced BBR sender with SACK and RACK-TLP whose window has room for `cwnd_segments`, whose
/// pacer holds the 12th segment back 1.5 s (11 leave at 0: Linux's 10 unpaced and the one that
/// sets the gap), and whose tail loss probe fires at 1 s (the PTO before any RTT sample, capped
/// by the 1 s RTO): the probe sends the held segment as new data.
fn probe_while_the_pacer_holds_a_segment(cwnd_segments: u32) -> TcpSender {
    let c = TcpConfig { initial_cwnd_segments: cwnd_segments, congestion_control: CongestionControl::Bbr, pacing: true, ..rack_cfg() };
    let mut s = TcpSender::new(&c);
    s.pacer.as_mut().unwrap().set_rate(666); // 1000 B in 1.5015 s
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len(), 11);
    let held = s.pacing_deadline().expect("the pacer holds the 12th");
    assert_eq!(s.rto_deadline(), Some(ms(1000)), "the PTO comes before the pacer's {held:?}");
    out.clear();
    s.on_timer(ms(1000), &mut out);
    assert_eq!(s.stats.tlp_probes, 1);
    assert_eq!(out, vec![Segment { seq: seg(11), len: MSS as u32, retransmission: false }], "the probe sends the held segment");
    s
}

/// Issue 27's `bbr+sack+rack` fuzz failure ("the pacing timer ... sent nothing", episode
/// 10487915173045290760): a tail loss probe sends new data outside the send loops, so the
/// pacing timer the loop had asked for is due only if the window still admits a segment.
#[test]
fn a_tail_loss_probe_that_fills_the_window_cancels_the_pacing_timer() {
    // cwnd 12: the probe's segment fills the window; nothing waits for the pacer.
    let s = probe_while_the_pacer_holds_a_segment(12);
    assert_eq!(s.snd_max() - s.snd_una(), 12 * MSS);
    assert_eq!(s.pacing_deadline(), None, "a pacing wake-up with a full window would send nothing");
    // cwnd 13: the 13th still fits; the pacer releases it one gap after the held segment's time.
    let mut s = probe_while_the_pacer_holds_a_segment(13);
    let at = s.pacing_deadline().expect("the 13th waits for the pacer");
    let mut out = Vec::new();
    s.on_pacing_timer(at, &mut out);
    assert_eq!(out, vec![Segment { seq: seg(12), len: MSS as u32, retransmission: false }]);
}

fn rack_cfg() -> TcpConfig {
    TcpConfig { sack: true, rack: true, ..cfg() }
}

#[test]
fn rack_reorder_timer_fires_reo_wnd_after_the_delivered_segments_rtt_and_retransmits() {
    for rack in [false, true] {
        let c = TcpConfig { rack, ..sack_cfg() };
        let mut s = TcpSender::new(&c);
        s.cwnd = 4 * MSS;
        let mut out = Vec::new();
        s.send_available(ms(0), &mut out);
        assert_eq!(out.len(), 4);
        out.clear();
        // Segment 0 is held up; segment 1 is SACKed at 100 ms (RTT 100 ms, reo_wnd 25 ms).
        s.on_ack_sack(seg(0), false, &[(seg(1), seg(2))], ms(100), &mut out);
        assert!(out.is_empty() && !s.in_recovery());
        if !rack {
            // RFC 6675 alone waits for more duplicates or the RTO (1 s).
            assert_eq!(s.rto_deadline(), Some(ms(1000)));
            continue;
        }
        // Section 6.2 step 5: the timer is due at 0 + 100 + 25 ms.
        assert_eq!(s.rto_deadline(), Some(ms(125)));
        s.on_timer(ms(124), &mut out);
        assert!(out.is_empty(), "not before it is due");
        s.on_timer(ms(125), &mut out);
        assert_eq!(s.stats.rack_reorder_timeouts, 1);
        assert_eq!(s.stats.timeouts, 0);
        assert!(s.in_recovery());
        assert_eq!(out.first(), Some(&Segment { seq: seg(0), len: MSS as u32, retransmission: true }));
    }
}

#[test]
fn tlp_probe_timeout_is_two_srtt_after_an_ack() {
    let mut s = TcpSender::new(&rack_cfg());
    s.cwnd = 4 * MSS;
    let mut out = Vec::new();
    s.write_until(seg(4));
    s.send_available(ms(0), &mut out);
    // Before any RTT sample: 1 s, here the same as the initial RTO.
    assert_eq!(s.rto_deadline(), Some(ms(1000)));
    out.clear();
    s.on_ack(seg(1), false, ms(100), &mut out); // first sample: SRTT 100 ms
    assert_eq!(s.rtt().srtt(), Some(ms(100)));
    assert_eq!(s.rto_deadline(), Some(ms(300)), "PTO = 2 SRTT with three segments in flight");
    s.on_ack(seg(3), false, ms(110), &mut out);
    // One segment in flight: plus WCDelAckT (200 ms); the RTO (110 + 300 ms) comes first.
    assert_eq!(s.rtt().rto(), ms(300));
    assert_eq!(s.rto_deadline(), Some(ms(410)));
    s.on_timer(ms(410), &mut out);
    assert_eq!((s.stats.tlp_probes, s.stats.timeouts), (1, 0), "the capped PTO fires in place of the RTO");
    assert_eq!(out, vec![Segment { seq: seg(3), len: MSS as u32, retransmission: true }], "no new data: the last segment");
}

#[test]
fn tlp_repairs_a_tail_loss_without_a_timeout() {
    let total = 20 * MSS;
    let tail = [seg(17), seg(18), seg(19)];
    let mut done = Vec::new();
    for rack in [false, true] {
        let (mut s, mut r) = sack_pair_with_window_of_20(rack, total);
        let o = play(&mut s, &mut r, total, ms(25), ms(1), |seq, n| n == 0 && tail.contains(&seq), no_check);
        assert!(o.done.is_some(), "rack={rack}: transfer did not finish");
        if rack {
            assert_eq!(s.stats.timeouts, 0, "rack: {:?}", s.stats);
            assert_eq!(s.stats.tlp_probes, 1, "rack: {:?}", s.stats);
            assert_eq!(s.stats.fast_retransmits, 1, "the probe's SACK starts recovery: {:?}", s.stats);
        } else {
            assert_eq!(s.stats.timeouts, 1, "without TLP the tail waits for the RTO: {:?}", s.stats);
        }
        done.push(o.done.unwrap());
    }
    assert!(done[1] < done[0], "with TLP {} vs without {}", done[1], done[0]);
}

/// Issue 27: a fast retransmission that is itself lost. RFC 6675 never resends below HighRxt, so
/// without RACK's detection of lost retransmissions (RFC 8985 section 6.2 step 5 on the
/// retransmission's own send time) the segment waits for the RTO; with it, the new data sent
/// after the retransmission and SACKed shows it lost, and recovery resends it at once.
#[test]
fn rack_resends_a_lost_fast_retransmission_without_a_timeout() {
    let total = 40 * MSS;
    for rack in [false, true] {
        let (mut s, mut r) = sack_pair_with_window_of_20(rack, total);
        // Segment 5's first transmission and its fast retransmission are lost.
        let o = play(&mut s, &mut r, total, ms(25), ms(1), |seq, n| seq == seg(5) && n < 2, no_check);
        assert!(o.done.is_some(), "rack={rack}: transfer did not finish");
        assert_eq!(o.transmissions[&seg(5)], 3, "rack={rack}: {:?}", s.stats);
        if rack {
            assert_eq!(s.stats.timeouts, 0, "rack: {:?}", s.stats);
            assert_eq!(s.stats.fast_retransmits, 1, "one recovery: {:?}", s.stats);
        } else {
            assert_eq!(s.stats.timeouts, 1, "RFC 6675 alone waits for the RTO: {:?}", s.stats);
        }
    }
}

/// Issue 27: segments 0, 15 and 20 are lost once each; 20 is new data, sent in the recovery that
/// segment 0 starts, above its RecoveryPoint. RACK finds 20 lost and it is resent while 15's
/// retransmission still holds SND.UNA below that point; when the recovery ends, 20's
/// retransmission is in flight, and 20's loss starts a second recovery at once. Linux sends no
/// segment again while its retransmission is in flight (`tcp_xmit_retransmit_queue` skips
/// `TCPCB_SACKED_RETRANS`) until RACK finds that retransmission lost; with HighRxt set afresh
/// for each recovery (RFC 6675), the second recovery sent 20 a third time.
#[test]
fn a_new_recovery_does_not_resend_a_retransmission_still_in_flight() {
    let total = 100 * MSS;
    let (mut s, mut r) = sack_pair_with_window_of_20(true, total);
    let lost = [seg(0), seg(15), seg(20)];
    let o = play(&mut s, &mut r, total, ms(25), ms(1), |seq, n| n == 0 && lost.contains(&seq), no_check);
    assert!(o.done.is_some(), "transfer did not finish");
    assert_eq!((s.stats.fast_retransmits, s.stats.timeouts), (2, 0), "two recoveries: {:?}", s.stats);
    for seq in lost {
        assert_eq!(o.transmissions[&seq], 2, "segment {}: sent, lost, resent once", (seq - ISS_DATA) / MSS);
    }
    let resent: std::collections::BTreeSet<u64> = o.retransmissions.iter().map(|&(_, seq)| seq).collect();
    assert!(resent.iter().all(|seq| lost.contains(seq) || *seq == seg(99)), "only the lost (and a tail probe): {resent:?}");
}

/// Issue 27: Linux's PRR adds SSRB's extra segment only on a safe ACK, one that advances
/// snd.una with no new loss (`Prr::sndcnt`). Segments 0-14 of a window of 20 are lost, and
/// segment 0's first two retransmissions too: while snd.una stays at segment 0 the ACKs only
/// SACK, and PRR-CRB sends one segment for each one delivered, so the data in flight stays
/// where the losses left it; with SSRB's segment on every ACK (RFC 6937) it grew by a segment
/// per ACK towards ssthresh while the head stayed lost.
#[test]
fn while_the_head_stays_lost_prr_sends_only_what_is_delivered() {
    let c = TcpConfig { prr: true, ..rack_cfg() };
    let mut s = TcpSender::new(&c);
    s.cwnd = 20 * MSS;
    s.ssthresh = 20 * MSS;
    let mut r = TcpReceiver::new(&c);
    let total = 200 * MSS;
    s.write_until(ISS_DATA + total);
    let mut pipes = Vec::new();
    let lost = |seq: u64, n: u32| (seq < seg(15) && n == 0) || (seq == seg(0) && n < 3);
    let o = play(&mut s, &mut r, total, ms(25), ms(1), lost, |s, _, _| {
        if s.in_recovery() && s.snd_una == seg(0) {
            pipes.push(s.pipe() / MSS);
        }
    });
    assert!(o.done.is_some(), "transfer did not finish");
    assert!(pipes.len() >= 5, "the head stays lost for several ACKs: {pipes:?}");
    let first = pipes[0];
    assert!(pipes.iter().all(|&p| p <= first + 1), "pipe {first} at first, then {pipes:?}");
}

/// Linux's restart of the RTO at each retransmission of the head
/// (`rto_restart_on_head_retransmit`): segment 5 and its first three retransmissions are lost.
/// RACK finds each lost retransmission about one RTT plus its reordering window after it was
/// sent, so the fourth attempt leaves about 190 ms after the last advance of SND.UNA and its
/// ACK arrives after the 200 ms RTO: RFC 6298's timer fires first; a timer restarted by each
/// attempt lets RACK finish the repair.
#[test]
fn restarting_the_rto_at_each_head_retransmission_lets_rack_repair_a_thrice_lost_retransmission() {
    let total = 60 * MSS;
    let mut timeouts = Vec::new();
    for restart in [false, true] {
        let c = TcpConfig { rto_restart_on_head_retransmit: restart, ..rack_cfg() };
        let mut s = TcpSender::new(&c);
        s.cwnd = 20 * MSS;
        s.ssthresh = 20 * MSS;
        let mut r = TcpReceiver::new(&c);
        let o = play(&mut s, &mut r, total, ms(25), ms(1), |seq, n| seq == seg(5) && n < 4, no_check);
        assert!(o.done.is_some(), "restart={restart}: transfer did not finish");
        assert_eq!(r.delivered_bytes, total, "restart={restart}");
        timeouts.push(s.stats.timeouts);
    }
    assert_eq!(timeouts, vec![1, 0], "timeouts without and with the restart");
}

/// The lost retransmission leaves the pipe at once (Linux's `tcp_mark_skb_lost`), and an
/// acknowledgment of it before it was sent again takes it off the list.
#[test]
fn a_retransmission_rack_finds_lost_leaves_the_pipe_and_is_forgotten_once_acknowledged() {
    let mut s = TcpSender::new(&rack_cfg());
    s.cwnd = 10 * MSS;
    let mut out = Vec::new();
    s.send_available(ms(0), &mut out);
    assert_eq!(out.len(), 10);
    out.clear();
    // Segment 0 is lost; 1, 2, 3 are SACKed at 100 ms: DupThresh, recovery, segment 0 resent.
    for k in 1..4 {
        s.on_ack_sack(seg(0), false, &[(seg(1), seg(k + 1))], ms(100), &mut out);
    }
    assert!(s.in_recovery());
    assert!(out.contains(&Segment { seq: seg(0), len: MSS as u32, retransmission: true }));
    assert!(s.rack_lost_rxt.is_empty());
    // Room for one more segment: new data, segment 10, sent at 100 ms after the retransmission.
    out.clear();
    s.cwnd = s.pipe() + MSS;
    s.send_available(ms(100), &mut out);
    assert_eq!(out, vec![Segment { seq: seg(10), len: MSS as u32, retransmission: false }]);
    out.clear();
    let pipe_before = s.pipe();
    // Segment 10 is SACKed at 150 ms: RACK.xmit_ts is now later than the retransmission's send
    // time, and RACK.rtt (50 ms) has passed since it.
    s.cwnd = 0; // nothing goes out: the state stays to look at
    s.on_ack_sack(seg(0), false, &[(seg(10), seg(11)), (seg(1), seg(4))], ms(150), &mut out);
    assert!(s.rack_lost_rxt.contains(&seg(0)), "the retransmission of segment 0 is lost");
    assert!(s.is_lost(seg(0)));
    // Nothing is in flight: segment 10 is SACKed, segments 4-9 (sent before it) are lost by
    // RACK's boundary, and the retransmission of segment 0 is lost too (it counted before).
    assert_eq!(pipe_before, 8 * MSS);
    assert_eq!(s.pipe(), 0);
    assert!(out.is_empty());
    // The retransmission was late, not lost: the cumulative ACK covers it before it is resent.
    s.on_ack_sack(seg(4), false, &[(seg(10), seg(11))], ms(160), &mut out);
    assert!(s.rack_lost_rxt.is_empty());
}

/// The handshake's outcome (`TcpSender::on_handshake`): the SYN's RTT seeds the estimator (RFC
/// 6298 section 2.2: SRTT = R, RTTVAR = R / 2, RTO = SRTT + 4 RTTVAR, at least the minimum),
/// and a lost SYN leaves one segment to send instead of the initial window.
#[test]
fn the_handshake_seeds_the_rtt_estimator_and_a_lost_syn_leaves_one_segment() {
    let mut s = TcpSender::new(&cfg());
    s.on_handshake(Some(ms(80)), false);
    assert_eq!(s.rtt().srtt(), Some(ms(80)));
    assert_eq!(s.rtt().rto(), ms(80 + 4 * 40));
    let mut out = Vec::new();
    s.send_available(ms(100), &mut out);
    assert_eq!(out.len(), 2, "the initial window");

    let mut lost = TcpSender::new(&cfg());
    lost.on_handshake(None, true);
    assert_eq!(lost.rtt().srtt(), None, "no sample from a retransmitted SYN");
    assert_eq!(lost.rtt().rto(), ms(1000), "still the initial RTO");
    let mut out = Vec::new();
    lost.send_available(ms(100), &mut out);
    assert_eq!(out.len(), 1, "RFC 5681 section 3.1: one segment");
}

/// RTT samples from every ACK (`rtt_sample_every_ack`, Linux's `tcp_ack_update_rtt` with
/// timestamps): segment 1 and what follows are lost until its second retransmission, whose ACK
/// arrives 100 ms after it left. Under Karn's rule that ACK gives no sample and the RTO keeps its
/// two doublings (300 -> 1,200 ms); the echoed timestamp gives a 100 ms sample that clears them
/// (RFC 6298 (2.3): SRTT 100 ms, RTTVAR 37.5 ms, RTO 250 ms).
#[test]
fn an_ack_of_a_retransmission_clears_the_rto_backoff_only_with_samples_from_every_ack() {
    let mut rto_after = Vec::new();
    for every_ack in [false, true] {
        let c = TcpConfig { rtt_sample_every_ack: every_ack, ..cfg() };
        let mut s = TcpSender::new(&c);
        let mut out = Vec::new();
        s.send_available(ms(0), &mut out);
        assert_eq!(out.len(), 2);
        out.clear();
        s.on_ack(seg(1), false, ms(100), &mut out); // segment 0's RTT: 100 ms, RTO 300 ms
        assert_eq!(s.rtt.rto(), ms(300), "every_ack={every_ack}");
        out.clear();
        // Everything in flight is lost: two timeouts, each resending segment 1.
        s.on_timer(ms(400), &mut out);
        assert_eq!(out[0].seq, seg(1));
        out.clear();
        s.on_timer(ms(1000), &mut out);
        assert_eq!((out[0].seq, s.rtt.rto()), (seg(1), ms(1200)), "every_ack={every_ack}");
        out.clear();
        s.on_ack(seg(2), false, ms(1100), &mut out);
        rto_after.push(s.rtt.rto());
    }
    assert_eq!(rto_after, vec![ms(1200), ms(250)], "RTO after the ACK of the retransmission: Karn, every ACK");
}

/// Linux's estimator (`rto_estimator = Linux`) in a sender: RTO = SRTT + max(deviation term,
/// min_rto), so a steady 100 ms path gives 300 ms where RFC 6298 gives max(SRTT + 4 RTTVAR,
/// 200 ms) = 200 ms.
#[test]
fn linux_rto_estimator_keeps_the_minimum_above_srtt_in_a_sender() {
    let mut rtos = Vec::new();
    for estimator in [RtoEstimator::Rfc6298, RtoEstimator::Linux] {
        let c = TcpConfig { rtt_sample_every_ack: true, rto_estimator: estimator, ..cfg() };
        let mut s = TcpSender::new(&c);
        s.cwnd = 4 * MSS;
        s.ssthresh = 4 * MSS; // congestion avoidance: a steady window of about 4 segments
        let mut out = Vec::new();
        s.send_available(ms(0), &mut out);
        let mut t = 0;
        for _ in 0..200 {
            t += 100;
            let acks: Vec<u64> = out.iter().map(|seg| seg.seq + seg.len as u64).collect();
            out.clear();
            for a in acks {
                s.on_ack(a, false, ms(t), &mut out);
            }
        }
        assert_eq!(s.rtt.srtt(), Some(ms(100)), "{estimator:?}");
        rtos.push(s.rtt.rto());
    }
    assert_eq!(rtos, vec![ms(200), ms(300)], "RFC 6298, Linux");
}

/// The window a receiver with `rwnd_autotuning` and a 1448 B MSS offers after segment 0 in
/// order and segments 2-4 above the hole at 1: the right edge (rcv_nxt + window) after the
/// in-order segment and after the out-of-order ones.
fn edges_around_a_hole(sack: bool) -> (u64, u64) {
    let c = TcpConfig { mss: 1448, rwnd: 6_291_456, rwnd_autotuning: true, sack, ..cfg() };
    let mut r = TcpReceiver::new(&c);
    r.on_data(ISS_DATA, 1448, false, ms(1));
    let first = r.rcv_nxt() + r.offer_window().unwrap();
    for k in 2..5 {
        r.on_data(ISS_DATA + k * 1448, 1448, false, ms(1 + k));
    }
    (first, r.rcv_nxt() + r.offer_window().unwrap())
}

#[test]
fn with_sack_segments_held_above_a_hole_grow_the_offered_window() {
    // tcp_data_queue_ofo calls tcp_grow_window for each segment it queues in a SACK connection:
    // 2 MSS each, within the room the held data leaves in the 80 KiB clamp (receive_window.rs).
    let (first, later) = edges_around_a_hole(true);
    assert_eq!(later - first, 3 * 2 * 1448);
    // Without SACK the kernel leaves the window alone, to force duplicate ACKs.
    let (first, later) = edges_around_a_hole(false);
    assert_eq!(later, first);
}
