//! HyStart++'s rules from RFC 9406 section 4, driven through a [`TcpSender`] by a synthetic
//! path: every segment is acknowledged alone, after the RTT of its flight (flight 0 is the
//! initial window; the segments an ACK of flight k releases form flight k + 1). A list of
//! per-flight RTTs is the "synthetic RTT sequence".

use super::*;
use crate::tcp::cc::SSTHRESH_UNSET;
use crate::tcp::{Segment, TcpSender};
use aqmlab_model::app::tcp_config::{CongestionControl, TcpConfig};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

fn cfg(hystart: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_cwnd_segments: 10,
        min_rto_ns: 1_000_000_000,
        rwnd: 1_000_000_000,
        hystart,
        ..crate::tcp::tests::cfg()
    }
}

/// The sender's state after one ACK.
#[derive(Clone, Copy, Debug)]
struct After {
    flight: usize,
    cwnd: u64,
    ssthresh: u64,
    phase: Phase,
}

/// Runs `rtts.len()` flights through `s` (flight k's RTT is `rtts[k]`); returns the state after
/// every ACK, in time order.
fn run_flights(s: &mut TcpSender, rtts: &[u64]) -> Vec<After> {
    let mut out = Vec::new();
    // (ack time, segment end, flight)
    let mut acks = BinaryHeap::new();
    let schedule = |out: &mut Vec<Segment>, acks: &mut BinaryHeap<Reverse<(Time, u64, usize)>>, now: Time, flight: usize| {
        for seg in out.drain(..) {
            if flight < rtts.len() {
                acks.push(Reverse((now + ms(rtts[flight]), seg.seq + seg.len as u64, flight)));
            }
        }
    };
    s.send_available(Time::ZERO, &mut out);
    schedule(&mut out, &mut acks, Time::ZERO, 0);
    let mut log = Vec::new();
    while let Some(Reverse((now, end, flight))) = acks.pop() {
        s.on_ack(end, false, now, &mut out);
        schedule(&mut out, &mut acks, now, flight + 1);
        let phase = s.hystart().map_or(Phase::Done, HyStart::phase);
        log.push(After { flight, cwnd: s.cwnd, ssthresh: s.ssthresh, phase });
    }
    log
}

/// The state after the last ACK of `flight`.
fn end_of(log: &[After], flight: usize) -> After {
    *log.iter().rev().find(|a| a.flight == flight).expect("flight ran")
}

#[test]
fn rtt_thresh_is_an_eighth_of_the_last_rounds_min_rtt_clamped_to_4_and_16_ms() {
    // Section 4.2: RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR,
    // MAX_RTT_THRESH)).
    assert_eq!(rtt_thresh(ms(20)), ms(4));
    assert_eq!(rtt_thresh(ms(40)), ms(5));
    assert_eq!(rtt_thresh(ms(80)), ms(10));
    assert_eq!(rtt_thresh(ms(200)), ms(16));
}

#[test]
fn exits_slow_start_into_css_when_the_round_min_rtt_rises_by_rtt_thresh() {
    // 40 ms for five flights, then 46 ms: a rise of 6 ms >= RttThresh = 40/8 = 5 ms.
    let mut s = TcpSender::new(&cfg(true));
    let log = run_flights(&mut s, &[40, 40, 40, 40, 40, 46, 46]);
    for f in 0..5 {
        assert_eq!(end_of(&log, f).phase, Phase::SlowStart, "flight {f}");
    }
    // Slow start doubled cwnd every flight up to there: 10 segments, then 20, 40, ...
    assert_eq!(end_of(&log, 4).cwnd, 10 * 32 * MSS);
    let h = s.hystart().unwrap();
    assert_eq!(h.phase(), Phase::Css);
    assert_eq!(h.css_baseline_min_rtt(), Some(ms(46)));
    assert_eq!(h.css_entries, 1);
    // The exit came on the eighth sample of the 46 ms round (N_RTT_SAMPLE), not before.
    let first_css = log.iter().position(|a| a.phase == Phase::Css).unwrap();
    let first_46 = log.iter().position(|a| a.flight == 5).unwrap();
    // The first ACK of flight 5 ends the round of flight 4 (it acknowledges windowEnd), so the
    // 46 ms round's samples start with the second; the eighth is at index first_46 + 8.
    assert_eq!(first_css, first_46 + 8);
}

#[test]
fn does_not_exit_while_the_rtt_stays_flat_or_rises_less_than_rtt_thresh() {
    // Flat at 40 ms, then jitter of +4 ms on alternate flights (below the 5 ms threshold).
    let rtts = [40, 40, 44, 40, 44, 40, 44, 40, 44, 40];
    let mut s = TcpSender::new(&cfg(true));
    let log = run_flights(&mut s, &rtts);
    assert!(log.iter().all(|a| a.phase == Phase::SlowStart));
    assert_eq!(s.hystart().unwrap().css_entries, 0);
    assert_eq!(s.ssthresh, SSTHRESH_UNSET);
    // Slow start went on doubling: 10 x 2^10 segments after ten flights.
    assert_eq!(s.cwnd, 10 * 1024 * MSS);
    // At 120 ms the threshold is 15 ms: a 14 ms rise stays, a 15 ms rise exits.
    let mut s = TcpSender::new(&cfg(true));
    run_flights(&mut s, &[120, 120, 120, 134, 134]);
    assert_eq!(s.hystart().unwrap().phase(), Phase::SlowStart);
    let mut s = TcpSender::new(&cfg(true));
    run_flights(&mut s, &[120, 120, 120, 135, 135]);
    assert_eq!(s.hystart().unwrap().phase(), Phase::Css);
}

#[test]
fn css_grows_cwnd_a_quarter_as_fast_as_slow_start() {
    // Two HyStart++ states that differ only in the phase, fed the same ACKs inside one round.
    let mut ss = HyStart::new(MSS, false, 1);
    ss.window_end = u64::MAX; // no round ends during the test
    let mut css = ss.clone();
    css.phase = Phase::Css;
    css.css_baseline_min_rtt = Some(ms(50));
    let acked = [MSS, MSS, 2 * MSS, MSS, 3 * MSS, 500, 1500, MSS, 20 * MSS];
    let (mut grown_ss, mut grown_css) = (0, 0);
    for (i, &a) in acked.iter().enumerate() {
        let now = ms(100 + i as u64);
        grown_ss += ss.on_ack(1 + i as u64, a, 1_000_000, now).increase;
        grown_css += css.on_ack(1 + i as u64, a, 1_000_000, now).increase;
    }
    // Section 4.2: min(N, L*SMSS) with L = 8 unpaced caps the 20-segment ACK at 8 segments.
    let limited: u64 = acked.iter().map(|&a| a.min(8 * MSS)).sum();
    assert_eq!(grown_ss, limited);
    // CSS: the same divided by CSS_GROWTH_DIVISOR = 4 (the remainder carried between ACKs).
    assert_eq!(grown_css, limited / 4);
    assert_eq!(css.phase(), Phase::Css);
    // Paced (L = infinity): no cap.
    let mut paced = HyStart::new(MSS, true, 1);
    paced.window_end = u64::MAX;
    assert_eq!(paced.on_ack(1, 20 * MSS, 1_000_000, ms(1)).increase, 20 * MSS);

    // Through the sender, per flight: x2 in slow start, x1.25 in CSS (each ACK of one segment
    // adds a quarter segment).
    let mut s = TcpSender::new(&cfg(true));
    let log = run_flights(&mut s, &[40, 40, 40, 40, 40, 46, 46, 46, 46]);
    let (c6, c7) = (end_of(&log, 6).cwnd, end_of(&log, 7).cwnd);
    assert_eq!((end_of(&log, 6).phase, end_of(&log, 7).phase), (Phase::Css, Phase::Css));
    let ratio = c7 as f64 / c6 as f64;
    assert!((ratio - 1.25).abs() < 0.01, "CSS grew x{ratio} over a flight");
}

#[test]
fn returns_to_slow_start_when_the_rtt_falls_below_the_css_baseline() {
    // Into CSS at 46 ms (baseline 46), then the RTT falls back to 42 ms: currentRoundMinRTT <
    // cssBaselineMinRtt once the round has N_RTT_SAMPLE samples.
    let mut s = TcpSender::new(&cfg(true));
    let log = run_flights(&mut s, &[40, 40, 40, 40, 40, 46, 42, 42, 42]);
    assert_eq!(end_of(&log, 5).phase, Phase::Css);
    let h = s.hystart().unwrap();
    assert_eq!(h.css_resumes, 1);
    assert_eq!(h.phase(), Phase::SlowStart);
    assert_eq!(h.css_baseline_min_rtt(), None);
    assert_eq!(s.ssthresh, SSTHRESH_UNSET);
    // Slow start again: the last flight doubled cwnd.
    let (c7, c8) = (end_of(&log, 7).cwnd, end_of(&log, 8).cwnd);
    assert_eq!(c8, 2 * c7);
    // An RTT that stays at the baseline does not resume slow start (strictly below only).
    let mut s = TcpSender::new(&cfg(true));
    run_flights(&mut s, &[40, 40, 40, 40, 40, 46, 46, 46]);
    assert_eq!(s.hystart().unwrap().css_resumes, 0);
}

#[test]
fn css_rounds_end_in_congestion_avoidance_with_ssthresh_equal_to_cwnd() {
    let rtts = [40, 40, 40, 40, 40, 46, 46, 46, 46, 46, 46, 46, 46];
    let mut s = TcpSender::new(&cfg(true));
    let log = run_flights(&mut s, &rtts);
    let exit = log.iter().position(|a| a.phase == Phase::Done).expect("CSS ended");
    let at_exit = log[exit];
    // Section 4.2: ssthresh = cwnd when CSS_ROUNDS rounds are complete.
    assert_eq!(at_exit.ssthresh, at_exit.cwnd);
    assert!(log[..exit].iter().all(|a| a.ssthresh == SSTHRESH_UNSET));
    // CSS began in the round of flight 5 (that partial round counts) and lasted CSS_ROUNDS
    // rounds: it ends with the round of flight 9, at the ACK of windowEnd, flight 10's first.
    assert_eq!(log.iter().filter(|a| a.phase == Phase::Css).map(|a| a.flight).min(), Some(5));
    assert_eq!(at_exit.flight, 10);
    assert_eq!(log[exit - 1].flight, 9);
    // Afterwards NewReno's congestion avoidance: about one segment per flight.
    let (c11, c12) = (end_of(&log, 11).cwnd, end_of(&log, 12).cwnd);
    assert!(c12 - c11 <= 2 * MSS && c12 > c11, "congestion avoidance grew {c11} -> {c12}");
    assert!(!s.hystart().unwrap().active());
}

#[test]
fn a_loss_during_css_ends_hystart_with_the_controllers_reduction() {
    let mut s = TcpSender::new(&cfg(true));
    run_flights(&mut s, &[40, 40, 40, 40, 40, 46, 46]);
    assert_eq!(s.hystart().unwrap().phase(), Phase::Css);
    // Three duplicate ACKs for the head: fast retransmit (RFC 5681 section 3.2).
    let (una, flight) = (s.snd_una(), s.snd_max() - s.snd_una());
    let mut out = Vec::new();
    for i in 0..3 {
        s.on_ack(una, false, ms(10_000 + i), &mut out);
    }
    assert_eq!(s.stats.fast_retransmits, 1);
    assert_eq!(s.hystart().unwrap().phase(), Phase::Done);
    // NewReno's own reduction, FlightSize / 2 (RFC 5681 equation (4)), not HyStart++'s cwnd.
    assert_eq!(s.ssthresh, flight / 2);
}

#[test]
fn off_by_default_the_sender_has_no_hystart_and_slow_start_is_unchanged() {
    let rtts = [40, 40, 40, 40, 40, 46, 46, 46];
    let mut plain = TcpSender::new(&cfg(false));
    let log = run_flights(&mut plain, &rtts);
    assert!(plain.hystart().is_none());
    assert_eq!(end_of(&log, 7).cwnd, 10 * 256 * MSS);
    // BBR never gets HyStart++ (the config refuses the pair; the sender ignores it anyway).
    let bbr = TcpConfig { congestion_control: CongestionControl::Bbr, pacing: true, ..cfg(true) };
    assert!(TcpSender::new(&bbr).hystart().is_none());
}
