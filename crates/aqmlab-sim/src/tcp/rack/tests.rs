//! RACK's rules (RFC 8985 section 6.2) on hand-made deliveries, without a sender.

use super::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

fn seg(k: u64) -> u64 {
    1 + k * MSS
}

/// Segments 0..n sent at `k` ms each.
fn sent(n: u64) -> Rack {
    let mut r = Rack::new(MSS, seg(0));
    for k in 0..n {
        r.on_sent(seg(k), ms(k), false);
    }
    r
}

#[test]
fn reordering_window_is_a_quarter_of_min_rtt_capped_by_srtt_and_zero_in_recovery_without_reordering() {
    let mut r = sent(4);
    r.on_delivered(seg(1), seg(2), ms(101)); // RTT 100 ms
    assert_eq!(r.min_rtt(), Some(ms(100)));
    // Section 6.2 step 4: min_RTT / 4 outside recovery with fewer than DupThresh SACKed...
    assert_eq!(r.reo_wnd(false, 1, Some(ms(100))), ms(25));
    // ... capped by SRTT ...
    assert_eq!(r.reo_wnd(false, 1, Some(ms(10))), ms(10));
    // ... and 0 before any reordering was seen, in recovery or with DupThresh SACKed.
    assert_eq!(r.reo_wnd(true, 1, Some(ms(100))), Time::ZERO);
    assert_eq!(r.reo_wnd(false, 3, Some(ms(100))), Time::ZERO);
    // Once a never-retransmitted segment is delivered below RACK.fack, the window stays.
    assert!(!r.reordering_seen());
    r.on_delivered(seg(0), seg(1), ms(103));
    assert!(r.reordering_seen());
    assert_eq!(r.reo_wnd(true, 3, Some(ms(100))), ms(25));
}

#[test]
fn a_segment_is_lost_only_once_reo_wnd_has_passed_after_a_later_sent_segment_was_delivered() {
    let mut r = sent(3);
    // Segment 1 (sent at 1 ms) is delivered at 101 ms: RACK.rtt = 100 ms, reo_wnd 25 ms.
    r.on_delivered(seg(1), seg(2), ms(101));
    let w = r.reo_wnd(false, 1, None);
    assert_eq!(w, ms(25));
    // Segment 0, sent at 0 ms, is lost at 0 + 100 + 25 = 125 ms, not a nanosecond before.
    let before = r.detect_loss(seg(0), w, ms(125) - Time(1));
    assert_eq!(before, Detection { lost_until: seg(0), timer: Some(ms(125)) });
    let at = r.detect_loss(seg(0), w, ms(125));
    assert_eq!(at, Detection { lost_until: seg(1), timer: None });
    // Segment 2 was sent after the delivered one: never judged lost, however late.
    assert_eq!(r.detect_loss(seg(0), w, ms(10_000)).lost_until, seg(1));
}

#[test]
fn the_reorder_timer_waits_for_the_last_segment_within_its_window() {
    let mut r = sent(4);
    // Segment 3 (sent at 3 ms) delivered at 53 ms: RACK.rtt 50 ms; window 12.5 ms.
    r.on_delivered(seg(3), seg(4), ms(53));
    let w = r.reo_wnd(false, 1, None);
    assert_eq!(w, Time(12_500_000));
    // Segments 0-2 expire at 62.5, 63.5 and 64.5 ms; the timer is the latest (RFC's max).
    let d = r.detect_loss(seg(0), w, ms(60));
    assert_eq!(d, Detection { lost_until: seg(0), timer: Some(Time(64_500_000)) });
    let d = r.detect_loss(seg(0), w, Time(63_500_000));
    assert_eq!(d, Detection { lost_until: seg(2), timer: Some(Time(64_500_000)) });
}

#[test]
fn a_retransmission_acked_faster_than_min_rtt_does_not_move_rack() {
    let mut r = sent(3);
    r.on_delivered(seg(0), seg(1), ms(100)); // min_RTT 100 ms, RACK.xmit_ts 0
    r.on_sent(seg(1), ms(150), true);
    // The original of segment 1 arrives 10 ms after its retransmission: RFC 8985 section 6.2
    // step 2 ignores it (it acknowledges the original, sent at 1 ms).
    r.on_delivered(seg(1), seg(2), ms(160));
    assert_eq!(r.detect_loss(seg(2), ms(25), ms(10_000)).lost_until, seg(2), "segment 2 was sent after RACK.xmit_ts");
    // A delivery of segment 2 itself moves RACK to 2 ms.
    r.on_delivered(seg(2), seg(3), ms(200));
    assert_eq!(r.detect_loss(seg(2), ms(25), ms(10_000)).lost_until, seg(2));
}

#[test]
fn a_retransmission_is_lost_once_a_segment_sent_after_it_is_delivered_and_its_window_passed() {
    let mut r = sent(6);
    // Segment 1 is delivered at 101 ms (RACK.rtt 100 ms); segment 0 is retransmitted
    // at 150 ms; segment 5 (sent at 5 ms) is delivered at 160 ms.
    r.on_delivered(seg(1), seg(2), ms(101));
    r.on_sent(seg(0), ms(150), true);
    r.on_delivered(seg(5), seg(6), ms(160));
    let mut lost = Vec::new();
    let timer = r.detect_lost_retransmissions(seg(0), seg(1), Time::ZERO, ms(1_000), |s| lost.push(s));
    assert!(lost.is_empty() && timer.is_none(), "sent after every delivered segment: not judged");
    // Segments 6 and 7 leave at 155 and 170 ms; 6 is delivered at 250 ms (RACK.rtt 95 ms): the
    // retransmission (150 ms) was sent before it and is lost at 150 + 95 + reo_wnd.
    r.on_sent(seg(6), ms(155), false);
    r.on_sent(seg(7), ms(170), false);
    r.on_delivered(seg(6), seg(7), ms(250));
    let w = ms(10);
    let timer = r.detect_lost_retransmissions(seg(0), seg(1), w, ms(254), |s| lost.push(s));
    assert!(lost.is_empty());
    assert_eq!(timer, Some(ms(255)), "the reorder timer waits for the retransmission's window");
    let timer = r.detect_lost_retransmissions(seg(0), seg(1), w, ms(255), |s| lost.push(s));
    assert_eq!((lost.as_slice(), timer), (&[seg(0)][..], None));
    // Only `[una, until)` is examined: segments 2-4, not retransmitted, are detect_loss's.
    lost.clear();
    r.detect_lost_retransmissions(seg(0), seg(1), w, ms(10_000), |s| lost.push(s));
    assert_eq!(lost, vec![seg(0)]);
    // A delivered retransmission is never lost.
    r.on_delivered(seg(0), seg(1), ms(300));
    lost.clear();
    assert_eq!(r.detect_lost_retransmissions(seg(0), seg(1), w, ms(10_000), |s| lost.push(s)), None);
    assert!(lost.is_empty());
}
