//! The ACK-aggregation estimator alone, at 1 segment per millisecond (1 MB/s, 1000-byte
//! segments), each rule of `bbr_update_ack_aggregation` and `bbr_ack_aggregation_cwnd` seen once.

use super::*;

const MSS: u64 = 1000;
const BW: f64 = 1e6;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

#[test]
fn data_acked_beyond_the_estimate_within_an_epoch_is_the_excess_capped_by_cwnd() {
    let mut a = AckAggregation::default();
    // The first ACK starts an epoch (nothing ACKed yet is <= nothing expected): 10 in excess.
    a.update(ms(0), 10, false, BW, MSS, 100);
    assert_eq!(a.extra_acked(), 10);
    // 5 ms later 10 more: 20 ACKed in the epoch against 5 expected.
    a.update(ms(5), 10, false, BW, MSS, 100);
    assert_eq!(a.extra_acked(), 15);
    // The same burst with a cwnd of 12: the excess counts at most cwnd.
    let mut c = AckAggregation::default();
    c.update(ms(0), 10, false, BW, MSS, 12);
    c.update(ms(5), 10, false, BW, MSS, 12);
    assert_eq!(c.extra_acked(), 12);
}

#[test]
fn an_epoch_restarts_when_the_acks_fall_back_to_the_estimated_rate() {
    let mut a = AckAggregation::default();
    a.update(ms(0), 10, false, BW, MSS, 100);
    // At 30 ms, 10 ACKed <= 30 expected: a new epoch; 1 ms later 40 more are 40 in excess
    // (41 ACKed against 1 expected). Without the restart the epoch from 0 ms would count 51
    // against 31: 20.
    a.update(ms(30), 1, false, BW, MSS, 100);
    a.update(ms(31), 40, false, BW, MSS, 100);
    assert_eq!(a.extra_acked(), 40);
}

#[test]
fn the_max_filter_keeps_a_burst_5_to_10_rounds() {
    let mut a = AckAggregation::default();
    a.update(ms(0), 20, false, BW, MSS, 100); // 20 in the first bucket
                                              // From 100 ms on, ACKs at the estimated rate: each ACK starts an epoch, 10 in excess.
    let mut t = 90;
    // Small ACKs at the estimated rate, one round each: 4 round starts keep the first bucket,
    // the 5th opens the second (the first still counts), the 10th empties the first.
    for round in 1..=10 {
        t += 10;
        a.update(ms(t), 10, true, BW, MSS, 100);
        let expect = if round < 10 { 20 } else { 10 };
        assert_eq!(a.extra_acked(), expect, "round {round}");
    }
}

#[test]
fn the_allowance_waits_for_a_full_pipe_and_is_at_most_100ms_of_data() {
    let mut a = AckAggregation::default();
    a.update(ms(0), 30, false, BW, MSS, 100);
    assert_eq!(a.cwnd_allowance(false, BW, MSS), 0, "not before STARTUP found the pipe full");
    assert_eq!(a.cwnd_allowance(true, BW, MSS), 30);
    // At 100 kB/s, 100 ms of data is 10 segments.
    assert_eq!(a.cwnd_allowance(true, 1e5, MSS), 10);
}
