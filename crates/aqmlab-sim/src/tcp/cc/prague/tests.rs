//! Prague against the draft's equations: the alpha EWMA (g = 1/16, only after the first CE),
//! the window reduction cwnd (1 - alpha / 2), the RTT-independent additive increase
//! ((R / T)^2 segments per round below the 25 ms target), the pacing rate, and the classic
//! loss response, alone and in the sender.

use super::*;
use crate::tcp::tests::{cfg, sender_with_window_of};
use crate::tcp::{TcpSender, ISS_DATA};
use aqmlab_model::app::tcp_config::{CongestionControl, EcnCodepoint, TcpConfig};

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// One round of `segments` ACKs of one segment each, the first `marked` with ECN-Echo, one
/// `rtt` long, starting at SND.UNA `una` and time `t`; returns SND.UNA and the time after it.
fn round(p: &mut Prague, una: u64, t: Time, rtt: Time, segments: u64, marked: u64) -> (u64, Time) {
    let mut una = una;
    for i in 0..segments {
        una += MSS;
        let now = t + Time(rtt.0 * (i + 1) / segments);
        p.on_ack_feedback(MSS, i < marked, una, una + (segments - 1) * MSS, now);
    }
    (una, t + rtt)
}

#[test]
fn alpha_stays_at_one_until_the_first_mark_then_follows_the_ewma_with_g_one_sixteenth() {
    let mut p = Prague::new(MSS);
    let (mut una, mut t) = (ISS_DATA, Time::ZERO);
    // 10 rounds without a mark: no AQM seen yet, alpha stays 1 (DCTCP's would decay).
    for _ in 0..10 {
        (una, t) = round(&mut p, una, t, ms(20), 20, 0);
    }
    assert_eq!(p.alpha(), 1.0);
    // Then rounds of 20 ACKs with the first 5 marked. Rounds close on the first ACK of each
    // call (the first ACK closed the initial empty round): the first round with data about
    // marks holds that one marked ACK of 20 (F = 1/20), every later one 5 of 20 (F = 0.25).
    (una, t) = round(&mut p, una, t, ms(20), 20, 5);
    let mut expected = Prague::next_alpha(1.0, 1.0 / 20.0);
    assert!((p.alpha() - expected).abs() < 1e-12, "{} vs {expected}", p.alpha());
    for n in 0..200 {
        (una, t) = round(&mut p, una, t, ms(20), 20, 5);
        expected = (1.0 - PRAGUE_G) * expected + PRAGUE_G * 0.25;
        assert!((p.alpha() - expected).abs() < 1e-12, "round {n}: {} vs {expected}", p.alpha());
    }
    assert!((p.alpha() - 0.25).abs() < 1e-5, "alpha {} after 200 rounds of F = 0.25", p.alpha());
    assert!((Prague::next_alpha(1.0, 0.0) - 15.0 / 16.0).abs() < 1e-15);
}

#[test]
fn the_reduction_is_cwnd_times_one_minus_alpha_over_two_at_least_two_segments() {
    let mut p = Prague::with_rtt_target(MSS, None);
    assert_eq!(p.on_ecn_echo(40 * MSS), Some(20 * MSS), "alpha = 1 halves, as classic ECN");
    // Marks in one ACK of 10 per round for 100 rounds: alpha -> 0.1.
    let (mut una, mut t) = (ISS_DATA, Time::ZERO);
    for _ in 0..300 {
        (una, t) = round(&mut p, una, t, ms(20), 10, 1);
    }
    let alpha = p.alpha();
    assert!((alpha - 0.1).abs() < 1e-6, "{alpha}");
    assert_eq!(p.on_ecn_echo(40 * MSS), Some((40.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64));
    assert_eq!(p.on_ecn_echo(2 * MSS), Some(2 * MSS), "never below two segments");
}

/// A Prague sender in congestion avoidance past the transition rounds, with smoothed RTT `rtt`:
/// the returned growth in bytes over one round of `w` one-segment ACKs.
fn growth_per_round(rtt_target: Option<Time>, rtt: Time, w: u64, rounds_done: u64) -> f64 {
    let mut p = Prague::with_rtt_target(MSS, rtt_target);
    p.in_slow_start = false;
    p.rounds = rounds_done;
    let (cwnd, ssthresh) = (w * MSS, MSS);
    let mut c = cwnd;
    for _ in 0..w {
        // The window the increase is divided by stays cwnd within the round (Reno's 1/W).
        c += p.on_ack(cwnd, ssthresh, MSS, Some(rtt)) - cwnd;
    }
    (c - cwnd) as f64 + p.carry
}

#[test]
fn additive_increase_is_r_over_t_squared_segments_per_round_below_the_target() {
    // Reno's one segment per round for RTTs at or above the 25 ms target, and without a target.
    for rtt in [25, 40, 80] {
        assert!((growth_per_round(Some(PRAGUE_RTT_TARGET), ms(rtt), 50, RTT_TRANSITION_ROUNDS) - MSS as f64).abs() < 1e-6);
    }
    assert!((growth_per_round(None, ms(10), 50, RTT_TRANSITION_ROUNDS) - MSS as f64).abs() < 1e-6);
    // Below it: (R / T)^2 of a segment, so that the rate grows by MSS / T^2 per second at any R.
    for rtt in [1u64, 5, 10, 20] {
        let g = growth_per_round(Some(PRAGUE_RTT_TARGET), ms(rtt), 50, RTT_TRANSITION_ROUNDS);
        let expected = MSS as f64 * (rtt as f64 / 25.0).powi(2);
        assert!((g - expected).abs() < 1e-6, "R = {rtt} ms: {g} vs {expected}");
        let rate_growth = g / (rtt as f64 / 1e3) / (rtt as f64 / 1e3); // bytes/s per second
        assert!((rate_growth - MSS as f64 / 0.025f64.powi(2)).abs() < 1e-3 * rate_growth);
    }
    // Not before the 500 transition rounds of congestion avoidance (Linux's default).
    assert!((growth_per_round(Some(PRAGUE_RTT_TARGET), ms(10), 50, RTT_TRANSITION_ROUNDS - 1) - MSS as f64).abs() < 1e-6);
}

#[test]
fn acks_with_ecn_echo_grow_nothing() {
    let mut p = Prague::new(MSS);
    p.on_ack_start(true, ms(1));
    assert_eq!(p.on_ack(10 * MSS, MSS, MSS, Some(ms(10))), 10 * MSS, "congestion avoidance");
    assert_eq!(p.on_ack(10 * MSS, 100 * MSS, MSS, Some(ms(10))), 10 * MSS, "slow start");
    p.on_ack_start(false, ms(2));
    assert_eq!(p.on_ack(10 * MSS, 100 * MSS, MSS, Some(ms(10))), 11 * MSS, "slow start, unmarked");
}

#[test]
fn in_the_sender_a_marked_ack_of_new_data_grows_nothing_and_an_unmarked_one_grows() {
    // Congestion avoidance (cwnd = ssthresh) with 10 segments of 1 kB: Reno's growth would be
    // SMSS^2 / cwnd = 100 B per ACK of one segment.
    let mut s = prague_sender(10);
    let mut out = Vec::new();
    // The first mark reduces (alpha = 1: to 5 segments) and opens the once-per-window guard.
    s.on_ack(1 + MSS, true, ms(100), &mut out);
    assert_eq!(s.cwnd, 5 * MSS);
    // Further marked ACKs of new data in that window: no reduction (the guard) and no growth.
    s.on_ack(1 + 2 * MSS, true, ms(101), &mut out);
    s.on_ack(1 + 3 * MSS, true, ms(102), &mut out);
    assert_eq!((s.cwnd, s.stats.ecn_reductions), (5 * MSS, 1));
    // An unmarked ACK grows by SMSS^2 / cwnd = 200 B.
    s.on_ack(1 + 4 * MSS, false, ms(103), &mut out);
    assert_eq!(s.cwnd, 5 * MSS + 200);
}

#[test]
fn with_rtt_independence_alpha_and_reductions_wait_for_the_target_rtt() {
    let mut p = Prague::new(MSS);
    p.in_slow_start = false;
    p.rounds = RTT_TRANSITION_ROUNDS;
    let (mut una, mut t) = (ISS_DATA, Time::ZERO);
    // 10 ms rounds with every ACK marked (F = 1: alpha stays 1), then unmarked ones: alpha
    // moves once per 25 ms, not once per round.
    (una, t) = round(&mut p, una, t, ms(10), 10, 10);
    let a0 = p.alpha();
    let mut updates = 0;
    let mut last = a0;
    for _ in 0..30 {
        (una, t) = round(&mut p, una, t, ms(10), 10, 10);
        if p.alpha() != last {
            updates += 1;
            last = p.alpha();
        }
    }
    assert_eq!(updates, 0);
    for _ in 0..30 {
        (una, t) = round(&mut p, una, t, ms(10), 10, 0);
        if p.alpha() != last {
            updates += 1;
            last = p.alpha();
        }
    }
    // ACKs every 1 ms: the first ACK 25 ms after the last update closes the round, so 300 ms
    // hold 12 updates (30 without RTT independence, one per 10 ms round).
    assert_eq!(updates, 12, "updates in 300 ms of 10 ms rounds");
    // Reductions: one at t, none 10 ms later, one again 25 ms after the first.
    p.on_ack_feedback(0, true, una, una + 10 * MSS, t);
    assert!(p.on_ecn_echo(40 * MSS).is_some());
    p.on_ack_feedback(0, true, una, una + 10 * MSS, t + ms(10));
    assert_eq!(p.on_ecn_echo(40 * MSS), None);
    p.on_ack_feedback(0, true, una, una + 10 * MSS, t + ms(25));
    assert!(p.on_ecn_echo(40 * MSS).is_some());
    // Without RTT independence (before the transition) every call reduces.
    let mut q = Prague::new(MSS);
    assert!(q.on_ecn_echo(40 * MSS).is_some() && q.on_ecn_echo(40 * MSS).is_some());
}

#[test]
fn pacing_is_100_percent_of_the_window_in_packets_over_srtt_and_200_in_slow_start() {
    let p = Prague::new(MSS);
    // 100 segments of 1000 B (1040 B on the wire) per 100 ms: 1.04 MB/s.
    assert_eq!(p.pacing_rate(100 * MSS, 50 * MSS, Some(ms(100))), 1_040_000);
    assert_eq!(p.pacing_rate(100 * MSS, 400 * MSS, Some(ms(100))), 2_080_000);
    assert_eq!(p.pacing_rate(100 * MSS, 50 * MSS, None), u64::MAX, "unpaced before an RTT sample");
}

/// A valid Prague sender's config (ECN with ECT(1), paced), the rest as the tests' `cfg()`; the
/// classic ECN detector's tests build on it too.
pub(super) fn prague_config() -> TcpConfig {
    let c = TcpConfig {
        mss: MSS as u32,
        ecn: true,
        congestion_control: CongestionControl::Prague,
        ecn_codepoint: EcnCodepoint::Ect1,
        pacing: true,
        ..cfg()
    };
    c.validate().unwrap();
    c
}

fn prague_sender(n: u64) -> TcpSender {
    sender_with_window_of(n, &prague_config())
}

#[test]
fn the_sender_reduces_by_alpha_on_ecn_echo_and_halves_on_loss() {
    let mut s = prague_sender(20);
    let mut out = Vec::new();
    // A marked duplicate ACK: the first mark, alpha still 1: the window halves.
    s.on_ack(1, true, ms(100), &mut out);
    assert_eq!((s.ssthresh, s.cwnd), (10 * MSS, 10 * MSS));
    assert_eq!(s.stats.ecn_reductions, 1);
    // The loss response is the classic halving of FlightSize whatever alpha is (three
    // duplicate ACKs: fast retransmit).
    let mut s = prague_sender(20);
    s.on_ack(1 + MSS, false, ms(100), &mut out);
    let flight_after = s.snd_max() - s.snd_una();
    for i in 0..3 {
        s.on_ack(1 + MSS, false, ms(101 + i), &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh, flight_after / 2, "RFC 5681 equation (4)");
    assert_eq!(s.stats.ecn_reductions, 0);
}

#[test]
fn each_rtt_scaling_heuristic_sets_the_growth_and_additive_waits_target_plus_rtt() {
    use super::rtt_scaling::PragueRttScaling::{Additive, None as NoScaling, Rate, Scalable};
    // One round of 50 one-segment ACKs at R = 10 ms after the transition rounds.
    let grow = |scaling| {
        let mut p = Prague::new(MSS).with_rtt_scaling(scaling);
        p.in_slow_start = false;
        p.rounds = RTT_TRANSITION_ROUNDS;
        let mut c = 50 * MSS;
        for _ in 0..50 {
            c += p.on_ack(50 * MSS, MSS, MSS, Some(ms(10))) - 50 * MSS;
        }
        ((c - 50 * MSS) as f64 + p.carry) / MSS as f64
    };
    assert!((grow(Rate) - 0.16).abs() < 1e-9, "{}", grow(Rate));
    assert!((grow(Additive) - 100.0 / 1225.0).abs() < 1e-9, "{}", grow(Additive));
    assert!((grow(Scalable) - (2.048 + 8.464) * 10.0 / 268.435456).abs() < 1e-9, "{}", grow(Scalable));
    assert!((grow(NoScaling) - 1.0).abs() < 1e-9, "{}", grow(NoScaling));
    // ADDITIVE: a reduction waits 25 + 10 ms after the last; RATE 25 ms; NONE nothing.
    for (scaling, wait) in [(Additive, 35), (Rate, 25), (NoScaling, 0)] {
        let mut p = Prague::new(MSS).with_rtt_scaling(scaling);
        p.in_slow_start = false;
        p.rounds = RTT_TRANSITION_ROUNDS;
        p.on_ack_start(false, ms(1000));
        p.on_ack(50 * MSS, MSS, MSS, Some(ms(10)));
        assert!(p.on_ecn_echo(40 * MSS).is_some());
        if wait > 0 {
            p.on_ack_start(true, ms(1000 + wait - 1));
            assert_eq!(p.on_ecn_echo(40 * MSS), None, "{scaling:?}");
        }
        p.on_ack_start(true, ms(1000 + wait));
        assert!(p.on_ecn_echo(40 * MSS).is_some(), "{scaling:?}");
    }
}

#[test]
fn the_config_field_chooses_the_heuristic_and_none_is_never_rtt_independent() {
    use super::rtt_scaling::PragueRttScaling;
    for scaling in [PragueRttScaling::None, PragueRttScaling::Rate, PragueRttScaling::Scalable, PragueRttScaling::Additive] {
        let c = TcpConfig { prague_rtt_scaling: scaling, ..prague_config() };
        c.validate().unwrap();
        let s = sender_with_window_of(10, &c);
        let crate::tcp::cc::Controller::Prague(p) = &s.cc else { panic!("not prague") };
        assert_eq!(p.scaling, scaling);
        let mut p = p.clone();
        p.in_slow_start = false;
        p.rounds = RTT_TRANSITION_ROUNDS;
        // Linux `prague_is_rtt_indep`: never with RTT_CONTROL_NONE.
        assert_eq!(p.rtt_independent(), scaling != PragueRttScaling::None, "{scaling:?}");
    }
}
