//! tcp_cubic.c's two HyStart tests, each on a hand-made ACK sequence.

use super::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time(x * 1_000_000)
}

/// A sender that sent segments 0..n back to back at time 0 (`n` first transmissions of MSS).
fn sent(n: u64, paced: bool) -> CubicHyStart {
    let mut h = CubicHyStart::new(MSS, paced, 0, Time::ZERO);
    for i in 0..n {
        h.on_sent((i + 1) * MSS, Time::ZERO);
    }
    h
}

#[test]
fn an_ack_train_longer_than_half_the_min_rtt_ends_slow_start() {
    // 40 segments, cwnd 40; the first ACK (segment 1) at 20 ms sets delay_min = 20 ms and opens
    // the round (SND.UNA passed end_seq 0); ACKs then follow every 1 ms. The unpaced threshold
    // is (20 + 1) / 2 = 10.5 ms after the round's start: the 12th ACK (at 31 ms) is the first
    // past it. The delay test cannot fire: the samples rise (now minus a send time of 0), but
    // the round's minimum stays at delay_min, 20 ms.
    let mut h = sent(40, false);
    let mut exit_at = None;
    for k in 1..=40u64 {
        let now = ms(19 + k);
        if let Some(e) = h.on_ack(k * MSS, 40 * MSS, 40 * MSS, true, now) {
            exit_at = Some((k, e));
            break;
        }
    }
    assert_eq!(exit_at, Some((12, Exit::AckTrain)));
    assert_eq!((h.ack_train_exits, h.delay_exits), (1, 0));
    // Found: nothing more fires until a timeout.
    assert_eq!(h.on_ack(13 * MSS, 40 * MSS, 40 * MSS, true, ms(32)), None);
}

#[test]
fn acks_more_than_2_ms_apart_form_no_train_and_a_paced_sender_waits_a_whole_min_rtt() {
    // ACKs 3 ms apart: never a train.
    let mut h = sent(40, false);
    for k in 1..=8u64 {
        assert_eq!(h.on_ack(k * MSS, 40 * MSS, 40 * MSS, true, ms(20 + 3 * (k - 1))), None, "ack {k}");
    }
    // Paced: threshold (20 + 1) ms, not half; 1 ms spacing fires at the 23rd ACK (42 ms > 21 ms
    // after the round's start at 20 ms), after the delay test has had its eight samples with a
    // round minimum of 20 ms (no delay exit).
    let mut h = sent(40, true);
    let fired = (1..=40u64).find_map(|k| h.on_ack(k * MSS, 40 * MSS, 40 * MSS, true, ms(19 + k)).map(|e| (k, e)));
    assert_eq!(fired, Some((23, Exit::AckTrain)));
}

#[test]
fn the_delay_test_fires_on_the_ninth_sample_of_a_round_whose_minimum_rose() {
    // Round 1: segments 1..=20 sent at 0, ACKed 3 ms apart from 20 ms: delay_min 20 ms.
    let mut h = CubicHyStart::new(MSS, false, 0, Time::ZERO);
    for i in 0..20 {
        h.on_sent((i + 1) * MSS, Time::ZERO);
    }
    for k in 1..=10u64 {
        assert_eq!(h.on_ack(k * MSS, 20 * MSS, 20 * MSS, true, ms(20 + 3 * (k - 1))), None);
    }
    // Round 2 begins with the ACK that passes end_seq (20 * MSS, set when round 1 began at the
    // first ACK): segments 21..=60 sent at 50 ms, each ACKed 3 ms apart with an RTT of 25 ms,
    // 5 ms above delay_min, above the 4 ms margin (20 / 8 = 2.5 clamped to 4).
    for i in 20..60 {
        h.on_sent((i + 1) * MSS, ms(50));
    }
    for k in 11..=20u64 {
        assert_eq!(h.on_ack(k * MSS, 20 * MSS, 60 * MSS, true, ms(47 + 3 * (k - 11))), None);
    }
    let mut fired = None;
    for (n, k) in (21..=40u64).enumerate() {
        if let Some(e) = h.on_ack(k * MSS, 30 * MSS, 60 * MSS, true, ms(75 + 3 * n as u64)) {
            fired = Some((n + 1, e));
            break;
        }
    }
    // Eight samples are collected first, the ninth sample of the round tests.
    assert_eq!(fired, Some((9, Exit::Delay)));
    assert_eq!(delay_threshold(ms(20)), ms(4));
    assert_eq!(delay_threshold(ms(80)), ms(10));
    assert_eq!(delay_threshold(ms(200)), ms(16));
}

#[test]
fn nothing_fires_below_16_segments_or_outside_slow_start() {
    let mut h = sent(40, false);
    for k in 1..=40u64 {
        assert_eq!(h.on_ack(k * MSS, 15 * MSS, 40 * MSS, true, ms(19 + k)), None, "cwnd 15, ack {k}");
    }
    let mut h = sent(40, false);
    for k in 1..=40u64 {
        assert_eq!(h.on_ack(k * MSS, 40 * MSS, 40 * MSS, false, ms(19 + k)), None, "congestion avoidance, ack {k}");
    }
}

#[test]
fn a_timeout_starts_over_with_a_new_min_rtt() {
    let mut h = sent(40, false);
    let fired = (1..=40u64).find_map(|k| h.on_ack(k * MSS, 40 * MSS, 40 * MSS, true, ms(19 + k)));
    assert_eq!(fired, Some(Exit::AckTrain));
    h.on_timeout(40 * MSS, ms(100));
    // A longer path now (min RTT 60 ms): the train threshold follows the new minimum, 30.5 ms.
    for i in 40..100 {
        h.on_sent((i + 1) * MSS, ms(100));
    }
    let fired = (41..=100u64).find_map(|k| h.on_ack(k * MSS, 40 * MSS, 100 * MSS, true, ms(119 + k)).map(|e| (k, e)));
    // First ACK at 160 ms (delay 60 ms) opens the round; 1 ms spacing passes 30.5 ms at the
    // 32nd ACK after it.
    assert_eq!(fired, Some((72, Exit::AckTrain)));
}
