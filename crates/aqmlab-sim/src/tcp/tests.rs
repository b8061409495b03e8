//! State-machine tests of the NewReno sender and the receiver, without a network: the tests
//! play the network by hand, so each RFC rule is checked in isolation.

use super::*;

fn cfg() -> TcpConfig {
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
    let mut s = TcpSender::new(&cfg());
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
    use std::collections::BinaryHeap;
    use std::cmp::Reverse;
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
