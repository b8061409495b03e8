//! The classic ECN AQM detector against Linux's rules: the score's per-round step
//! V lg(mdev / V0) + D lg(max(depth / D0, 1)) and its bounds, the low-gain RTT averages and
//! their gain, the response's alpha in the three bands, and the detector as a whole on a
//! classic queue's swinging RTT against an L4S queue's steady one; then the switch between the
//! scalable and the classic response in Prague and in the sender.

use super::*;
use crate::tcp::cc::prague::tests::prague_config;
use crate::tcp::cc::prague::Prague;
use crate::tcp::tests::sender_with_window_of;
use aqmlab_model::app::tcp_config::TcpConfig;

const MSS: u64 = 1000;

fn us(x: u64) -> Time {
    Time(x * 1000)
}

/// A detector whose averages are set: srtt and mdev in microseconds, min RTT in microseconds.
fn detector_at(score: f64, srtt_us: f64, mdev_us: f64, min_rtt_us: u64) -> ClassicEcnDetector {
    let mut d = ClassicEcnDetector::new(true);
    d.score = score;
    d.srtt_us = Some(srtt_us);
    d.mdev_us = mdev_us;
    d.min_rtt = Some(us(min_rtt_us));
    d
}

fn step(score: f64, srtt_us: f64, mdev_us: f64, min_rtt_us: u64) -> f64 {
    let mut d = detector_at(score, srtt_us, mdev_us, min_rtt_us);
    d.on_round();
    d.score() - score
}

#[test]
fn each_round_the_score_moves_by_half_lg_of_mdev_over_750_us_plus_half_lg_of_depth_over_2_ms() {
    // No queue (srtt = min RTT): only the deviation term, 1/2 lg(mdev / 750 us).
    assert!((step(5.0, 20_000.0, 3000.0, 20_000) - 1.0).abs() < 1e-12, "mdev 4 x V0: +1");
    assert!((step(5.0, 20_000.0, 750.0, 20_000)).abs() < 1e-12, "mdev = V0: no move");
    assert!((step(5.0, 20_000.0, 187.5, 20_000) + 1.0).abs() < 1e-12, "mdev V0 / 4: -1");
    // A queue of 8 ms (4 x D0) adds 1/2 lg 4 = 1 on top.
    assert!((step(5.0, 28_000.0, 750.0, 20_000) - 1.0).abs() < 1e-12);
    assert!((step(5.0, 28_000.0, 3000.0, 20_000) - 2.0).abs() < 1e-12);
    // A queue below D0 never pulls towards L4S.
    assert!((step(5.0, 21_000.0, 750.0, 20_000)).abs() < 1e-12);
    // A deviation under 1 us counts as 1 us (Linux's integer logarithm is at least 0).
    assert!((step(10.0, 20_000.0, 0.0, 20_000) - 0.5 * (1.0 / 750.0f64).log2()).abs() < 1e-12);
}

#[test]
fn the_score_stays_within_zero_and_c_sticky() {
    assert_eq!(step(0.5, 20_000.0, 100.0, 20_000), -0.5, "floored at 0");
    let mut d = detector_at(16.5, 60_000.0, 20_000.0, 20_000);
    d.on_round();
    assert_eq!(d.score(), C_STICKY, "capped at 17");
    // Without an RTT sample the score does not move.
    let mut d = ClassicEcnDetector::new(true);
    d.score = 3.0;
    d.on_round();
    assert_eq!(d.score(), 3.0);
}

#[test]
fn the_averages_move_by_one_over_two_to_the_s_and_s_follows_ssthresh() {
    let mut d = ClassicEcnDetector::new(true);
    assert_eq!(d.shift(), 18, "before any reduction");
    d.sample(us(20_000));
    assert_eq!(d.srtt_mdev_us(), (Some(20_000.0), 1.0), "the first sample sets srtt");
    // W = 64 segments: lg 64 = 6, s = 6 + 3 + 1 = 10.
    d.on_reduction(64);
    assert_eq!(d.shift(), 10);
    d.sample(us(21_024));
    let (srtt, mdev) = d.srtt_mdev_us();
    assert!((srtt.unwrap() - (20_000.0 + 1024.0 / 1024.0)).abs() < 1e-9, "{srtt:?}");
    assert!((mdev - (1.0 + (1024.0 - 1.0) / 2048.0)).abs() < 1e-9, "{mdev}");
    // W = 2: s = 1 + 0 + 1 = 2; W = 10^6: capped at 18.
    d.on_reduction(2);
    assert_eq!(d.shift(), 2);
    d.on_reduction(1_000_000);
    assert_eq!(d.shift(), 18);
}

#[test]
fn the_response_alpha_is_alpha_below_l_sticky_then_blends_to_at_least_0_625() {
    let at = |score: f64, fallback: bool, alpha: f64| {
        let mut d = ClassicEcnDetector::new(fallback);
        d.score = score;
        d.response_alpha(alpha)
    };
    assert_eq!(at(8.0, true, 0.05), 0.05, "pure L4S band: scalable");
    assert!((at(8.5, true, 0.05) - 0.3125).abs() < 1e-12, "half-way: 0.625 / 2");
    assert!((at(9.0, true, 0.05) - 0.625).abs() < 1e-12, "classic");
    assert!((at(17.0, true, 0.05) - 0.625).abs() < 1e-12, "classic, sticky");
    assert_eq!(at(17.0, true, 0.8), 0.8, "a larger alpha stays");
    assert_eq!(at(17.0, false, 0.05), 0.05, "detection only: the response is unchanged");
}

/// `rounds` rounds of `w` ACKs each with the RTT `rtt_us(round, ack)`; the score after each.
fn run(d: &mut ClassicEcnDetector, rounds: u64, w: u64, rtt_us: impl Fn(u64, u64) -> u64) -> Vec<f64> {
    d.on_reduction(w);
    (0..rounds)
        .map(|r| {
            for a in 0..w {
                d.sample(us(rtt_us(r, a)));
            }
            d.on_round();
            d.score()
        })
        .collect()
}

#[test]
fn a_classic_queues_sawtooth_is_detected_and_an_l4s_queues_steady_rtt_is_not() {
    // Classic: a 20 ms path whose queue swings 0..16 ms over a 16-round sawtooth (Reno on a
    // classic AQM); 32 ACKs per round.
    let mut classic = ClassicEcnDetector::new(true);
    let scores = run(&mut classic, 60, 32, |r, a| 20_000 + 1000 * (r % 16) + 31 * a);
    assert!(classic.classic() && scores[59] == C_STICKY, "{scores:?}");
    // L4S: the same path with a queue under 1 ms that hardly varies.
    let mut l4s = ClassicEcnDetector::new(true);
    let scores = run(&mut l4s, 60, 32, |r, a| 20_000 + (r * 37 + a * 101) % 700);
    assert!(scores.iter().all(|&s| s == 0.0), "{scores:?}");
    // And the classic one turns back once the queue settles: the deviation decays and the
    // score falls below L_STICKY again (the shallow queue does not pull; the deviation does).
    let scores = run(&mut classic, 200, 32, |r, a| 20_000 + (r * 37 + a * 101) % 700);
    assert!(!classic.classic(), "{:?}", &scores[150..]);
}

#[test]
fn an_ack_over_retransmitted_data_gives_no_sample() {
    let mut d = ClassicEcnDetector::new(true);
    d.on_sent(1 + MSS, false, us(0));
    d.on_sent(1 + 2 * MSS, false, us(100));
    d.on_sent(1 + MSS, true, us(5000));
    d.on_ack(1, 1 + 2 * MSS, us(20_000));
    assert_eq!(d.srtt_mdev_us().0, None, "covers the retransmitted segment");
    d.on_sent(1 + 3 * MSS, false, us(20_000));
    d.on_ack(1 + 2 * MSS, 1 + 3 * MSS, us(40_500));
    assert_eq!(d.srtt_mdev_us().0, Some(20_500.0));
}

/// A Prague controller with the fall-back (`fallback`) past its first mark, with alpha = 0.05,
/// and its detector's score set.
fn prague_with_score(fallback: bool, score: f64) -> Prague {
    let mut p = Prague::with_rtt_target(MSS, None).with_classic_ecn_detection(fallback);
    p.alpha = 0.05;
    p.classic_ecn.as_mut().unwrap().score = score;
    p
}

#[test]
fn prague_reduces_by_alpha_over_two_on_l4s_and_by_0_3125_on_a_classic_bottleneck() {
    // Scalable: 100 segments x (1 - 0.05 / 2).
    assert_eq!(prague_with_score(true, 0.0).on_ecn_echo(100 * MSS), Some(97_500));
    assert_eq!(prague_with_score(true, L_STICKY).on_ecn_echo(100 * MSS), Some(97_500));
    // Classic: 100 x (1 - 0.625 / 2).
    assert_eq!(prague_with_score(true, C_STICKY).on_ecn_echo(100 * MSS), Some(68_750));
    // Detection only, and no detector: scalable whatever the score.
    assert_eq!(prague_with_score(false, C_STICKY).on_ecn_echo(100 * MSS), Some(97_500));
    let mut plain = Prague::with_rtt_target(MSS, None);
    plain.alpha = 0.05;
    assert_eq!(plain.on_ecn_echo(100 * MSS), Some(97_500));
}

/// One round of 20 ACKs of one segment each, sent 1 ms apart, the ACK of segment `a` taking
/// `rtt_us(a)` (so that it is the detector's sample), the first one marked.
fn prague_round(p: &mut Prague, una: &mut u64, t: &mut Time, rtt_us: &dyn Fn(u64) -> u64) {
    for a in 0..20 {
        p.on_sent(*una + MSS, false, *t);
        p.on_ack_feedback(MSS, a == 0, *una + MSS, *una + 21 * MSS, *t + us(rtt_us(a)));
        *una += MSS;
        *t += us(1000);
    }
}

#[test]
fn prague_switches_to_the_classic_response_and_back_as_the_score_crosses_l_sticky() {
    let mut p = prague_with_score(true, 0.0);
    let (mut una, mut t) = (1, Time::ZERO);
    p.classic_ecn.as_mut().unwrap().on_reduction(20);
    let reduction = |p: &Prague| 1.0 - p.clone().on_ecn_echo(100 * MSS).unwrap() as f64 / (100 * MSS) as f64;
    // A swinging RTT (20 to 31.4 ms within each round): classic.
    for _ in 0..40 {
        prague_round(&mut p, &mut una, &mut t, &|a| 20_000 + 600 * a);
    }
    let d = p.classic_ecn().unwrap();
    assert!(d.classic(), "score {}", d.score());
    assert!(reduction(&p) >= 0.3125 - 1e-3, "{} (alpha {})", reduction(&p), p.alpha());
    // Then a steady one (under 0.3 ms of variation): back to the scalable response.
    for _ in 0..400 {
        prague_round(&mut p, &mut una, &mut t, &|a| 20_000 + (a * 101) % 300);
    }
    let d = p.classic_ecn().unwrap();
    assert!(!d.classic(), "score {}", d.score());
    assert!((reduction(&p) - p.alpha() / 2.0).abs() < 1e-3, "{} vs alpha {}", reduction(&p), p.alpha());
}

#[test]
fn the_config_field_gives_the_sender_a_detector_that_sees_its_segments_and_acks() {
    let c = TcpConfig { prague_ecn_fallback: true, ..prague_config() };
    c.validate().unwrap();
    let mut s = sender_with_window_of(10, &c);
    let mut out = Vec::new();
    s.on_ack(1 + MSS, false, Time::from_millis(100), &mut out);
    let crate::tcp::cc::Controller::Prague(p) = &s.cc else { panic!("not prague") };
    assert!(p.classic_ecn().is_some_and(|d| d.srtt_mdev_us().0.is_some()), "{:?}", p.classic_ecn());
    let off = TcpConfig { prague_ecn_fallback: false, ..c };
    let s = sender_with_window_of(10, &off);
    let crate::tcp::cc::Controller::Prague(p) = &s.cc else { panic!("not prague") };
    assert!(p.classic_ecn().is_none());
}

#[test]
fn before_the_first_ce_mark_the_score_does_not_move() {
    // The swinging RTT that the switch test finds classic, but no ACK is marked: Linux runs the
    // detection only where alpha is updated, after `saw_ce`.
    let mut p = Prague::with_rtt_target(MSS, None).with_classic_ecn_detection(true);
    p.classic_ecn.as_mut().unwrap().on_reduction(20);
    let (mut una, mut t) = (1, Time::ZERO);
    for _ in 0..40 {
        for a in 0..20 {
            p.on_sent(una + MSS, false, t);
            p.on_ack_feedback(MSS, false, una + MSS, una + 21 * MSS, t + us(20_000 + 600 * a));
            una += MSS;
            t += us(1000);
        }
    }
    let d = p.classic_ecn().unwrap();
    assert!(d.srtt_mdev_us().1 > 1000.0, "the samples were taken: {:?}", d.srtt_mdev_us());
    assert_eq!(d.score(), 0.0);
}
