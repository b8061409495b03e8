//! The estimator on a hand-computed ACK sequence (MSS 1000 bytes; times in ms). Each expected
//! value is worked out in the comment above it from draft-cheng-iccrg-delivery-rate-estimation
//! section 3's formulas.

use super::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

fn seg(i: u64) -> u64 {
    1 + i * MSS
}

#[test]
fn rate_samples_of_a_hand_computed_ack_sequence() {
    let mut e = DeliveryRate::new(MSS, seg(0));
    // t=0: A (seg 0) starts a flight: first_sent_time = delivered_time = 0.
    e.on_sent(seg(0), ms(0), true, 0);
    // t=10: B with A in flight: snapshot {delivered 0, delivered_time 0, first_sent 0, sent 10}.
    e.on_sent(seg(1), ms(10), false, 0);
    assert_eq!(
        *e.record(seg(1)).unwrap(),
        TxRecord {
            delivered: 0,
            delivered_time: ms(0),
            first_sent_time: ms(0),
            sent_time: ms(10),
            is_app_limited: false,
            retransmitted: false,
            delivered_already: false,
            tx_in_flight: 0,
            lost: 0,
        }
    );

    // t=100: ACK of A. delivered = 1000; P = A: send_elapsed 0 - 0, ack_elapsed 100 - 0:
    // 1000 bytes over 100 ms = 10 kB/s; RTT 100 ms.
    e.begin_ack();
    e.on_cumulative_ack(seg(1));
    let rs = e.finish_ack(ms(100));
    assert_eq!((rs.delivered, rs.interval, rs.rtt, rs.acked_sacked), (1000, ms(100), Some(ms(100)), 1000));
    assert_eq!(rs.rate(), Some(10_000.0));
    // The reported rate (tcpi_delivery_rate) is that first valid sample: 80 kbit/s.
    assert_eq!(e.reported_rate_bps(), 80_000);

    // t=100: C with B in flight: {delivered 1000, delivered_time 100, first_sent 0 (A's send
    // time, the last delivered), sent 100}.
    e.on_sent(seg(2), ms(100), false, 0);
    assert_eq!((e.record(seg(2)).unwrap().delivered, e.record(seg(2)).unwrap().delivered_time), (1000, ms(100)));

    // t=110: ACK of B. delivered = 2000; P = B {0, 0, 0, 10}: send_elapsed 10, ack_elapsed
    // 110 -> interval 110 ms, rs.delivered 2000: 18181.8 B/s.
    e.begin_ack();
    e.on_cumulative_ack(seg(2));
    let rs = e.finish_ack(ms(110));
    assert_eq!((rs.delivered, rs.interval, rs.prior_delivered), (2000, ms(110), 0));
    assert!((rs.rate().unwrap() - 2000.0 / 0.110).abs() < 1e-6);
    assert_eq!(e.reported_rate_bps(), 16_000_000_000_000 / 110_000_000); // bits, floored

    // t=200: ACK of C. P = C {1000, 100, 0, 100}: send_elapsed 100 - 0, ack_elapsed 200 - 100:
    // interval 100, rs.delivered 3000 - 1000 = 2000: 20 kB/s.
    e.begin_ack();
    e.on_cumulative_ack(seg(3));
    let rs = e.finish_ack(ms(200));
    assert_eq!((rs.delivered, rs.interval, rs.is_app_limited), (2000, ms(100), false));
    assert_eq!(rs.rate(), Some(20_000.0));
    assert_eq!(e.reported_rate_bps(), 160_000);

    // The application has nothing more: app_limited = delivered + in flight = 3000.
    e.mark_app_limited(0);
    assert_eq!(e.app_limited(), 3000);
    // t=300: D starts a new flight (nothing in flight): first_sent = delivered_time = 300,
    // marked app-limited.
    e.on_sent(seg(3), ms(300), true, 0);
    assert!(e.record(seg(3)).unwrap().is_app_limited);
    // t=400: ACK of D: delivered 4000 passes the mark, which clears; the sample is app-limited:
    // 1000 bytes over max(0, 400 - 300) = 10 kB/s.
    e.begin_ack();
    e.on_cumulative_ack(seg(4));
    let rs = e.finish_ack(ms(400));
    assert_eq!((rs.delivered, rs.interval, rs.is_app_limited), (1000, ms(100), true));
    assert_eq!(e.app_limited(), 0);
    // An app-limited 10 kB/s is slower than the 20 kB/s kept: the report keeps 160 kbit/s
    // (tcp_rate_gen replaces it with an app-limited sample only if that is at least as fast).
    assert_eq!(e.reported_rate_bps(), 160_000);

    // t=400: E, F, G in a new flight (first_sent = delivered_time = 400, delivered 4000).
    e.on_sent(seg(4), ms(400), true, 0);
    e.on_sent(seg(5), ms(400), false, 0);
    e.on_sent(seg(6), ms(400), false, 0);
    // t=500: E lost; SACK of F. delivered 5000; P = F {4000, 400, 400, 400}: interval
    // max(0, 100) = 100 ms, 1000 bytes.
    e.begin_ack();
    e.on_cumulative_ack(seg(4));
    e.on_sacked(seg(5), seg(6));
    let rs = e.finish_ack(ms(500));
    assert_eq!((rs.delivered, rs.interval, rs.acked_sacked), (1000, ms(100), 1000));
    // Not app-limited: reported whatever its rate, 10 kB/s.
    assert_eq!((rs.is_app_limited, e.reported_rate_bps()), (false, 80_000));
    // t=510: SACK of F and G: only G is new. delivered 6000; P = G {4000, 400, 400, 400}:
    // interval max(0, 110) = 110 ms, rs.delivered 2000.
    e.begin_ack();
    e.on_sacked(seg(5), seg(7));
    let rs = e.finish_ack(ms(510));
    assert_eq!((rs.delivered, rs.interval, rs.acked_sacked), (2000, ms(110), 1000));
    // t=510: E retransmitted: {delivered 6000, delivered_time 510, first_sent 400 (G's send
    // time), sent 510}, flagged retransmitted.
    e.on_sent(seg(4), ms(510), false, 0);
    let r = *e.record(seg(4)).unwrap();
    assert_eq!((r.delivered, r.delivered_time, r.first_sent_time, r.retransmitted), (6000, ms(510), ms(400), true));
    // t=610: cumulative ACK past G: only E is new (F and G were SACKed). P = E: send_elapsed
    // 510 - 400 = 110, ack_elapsed 610 - 510 = 100: interval 110, 1000 bytes; no RTT sample
    // (E was retransmitted, Karn).
    e.begin_ack();
    e.on_cumulative_ack(seg(7));
    let rs = e.finish_ack(ms(610));
    assert_eq!((rs.delivered, rs.interval, rs.rtt, rs.acked_sacked), (1000, ms(110), None, 1000));
    assert_eq!(e.delivered(), 7000);
}

#[test]
fn an_interval_shorter_than_the_minimum_rtt_is_no_rate() {
    // As Linux's tcp_rate_gen notes, with consistent RTTs the interval is below the minimum
    // RTT only after spurious retransmissions (no RTT sample vouches for them).
    let mut e = DeliveryRate::new(MSS, seg(0));
    e.on_sent(seg(0), ms(0), true, 0);
    e.begin_ack();
    e.on_cumulative_ack(seg(1));
    assert!(e.finish_ack(ms(100)).valid); // min RTT 100 ms; first_sent 0, delivered_time 100
                                          // B and C start a new flight at 100 (first_sent = delivered_time = 100).
    e.on_sent(seg(1), ms(100), true, 0);
    e.on_sent(seg(2), ms(100), false, 0);
    // B resent at 190; the original's ACK at 200: P = B {1000, 100, 100, sent 190}:
    // send_elapsed 90, ack_elapsed 100: interval 100, valid; first_sent becomes 190.
    e.on_sent(seg(1), ms(190), false, 0);
    e.begin_ack();
    e.on_cumulative_ack(seg(2));
    let rs = e.finish_ack(ms(200));
    assert!(rs.valid && rs.rtt.is_none(), "{rs:?}");
    assert_eq!(rs.interval, ms(100));
    // C resent at 201: {2000, 200, 190, sent 201}; the original's ACK at 205: send_elapsed
    // 11 ms, ack_elapsed 5 ms: interval 11 ms < 100 ms, no rate.
    e.on_sent(seg(2), ms(201), false, 0);
    e.begin_ack();
    e.on_cumulative_ack(seg(3));
    let rs = e.finish_ack(ms(205));
    assert!(!rs.valid && rs.rate().is_none(), "{rs:?}");
    assert_eq!(rs.acked_sacked, MSS);
    // No rate, so the report keeps the last valid sample's: 1000 bytes over 100 ms.
    assert_eq!(e.reported_rate_bps(), 80_000);
}

#[test]
fn without_sack_duplicate_acks_count_one_segment_each() {
    let mut e = DeliveryRate::new(MSS, seg(0));
    for i in 0..4 {
        e.on_sent(seg(i), ms(0), i == 0, 0);
    }
    // Seg 0 lost; three duplicate ACKs each count a segment delivered.
    for _ in 0..3 {
        e.begin_ack();
        e.on_duplicate_ack(4 * MSS);
        let rs = e.finish_ack(ms(100));
        assert_eq!((rs.acked_sacked, rs.valid), (MSS, false));
    }
    assert_eq!(e.delivered(), 3000);
    // The cumulative ACK of all four counts only the one not counted yet.
    e.on_sent(seg(0), ms(100), false, 0);
    e.begin_ack();
    e.on_cumulative_ack(seg(4));
    let rs = e.finish_ack(ms(200));
    assert_eq!((rs.acked_sacked, e.delivered()), (MSS, 4000));
}

/// BBRv3's fields (draft-ietf-ccwg-bbr section 2.3): RS.tx_in_flight is the sample segment's
/// P.tx_in_flight, RS.lost the bytes marked lost (C.lost) since that segment was sent.
#[test]
fn sample_carries_tx_in_flight_and_losses_since_send() {
    let mut e = DeliveryRate::new(MSS, 0);
    e.on_sent(seg(0), ms(0), true, MSS);
    e.on_lost(3 * MSS); // losses before seg 1 was sent do not count for it
    e.on_sent(seg(1), ms(10), false, 2 * MSS);
    e.on_lost(MSS);
    e.begin_ack();
    e.on_cumulative_ack(seg(2));
    let rs = e.finish_ack(ms(110));
    assert_eq!((rs.tx_in_flight, rs.lost), (2 * MSS, MSS));
    assert_eq!(e.lost(), 4 * MSS);
}
