//! DCTCP against RFC 8257's equations: the estimate alpha (section 3.3), the ECN reduction
//! (section 3.3) and the conventional loss response (section 3.5), alone and in the sender.

use super::*;
use crate::tcp::tests::{cfg, sender_with_window_of};
use crate::tcp::{TcpSender, ISS_DATA};
use aqmlab_core::Time;
use aqmlab_model::app::tcp_config::{CongestionControl, TcpConfig};

const MSS: u64 = 1000;

/// One observation window of `segments` ACKs of one segment each, the first `marked` of
/// them with ECN-Echo, after a window that closed at `start` with WindowEnd = start +
/// (segments - 1) MSS: the window closes at its last ACK. Returns SND.UNA then.
fn window(d: &mut Dctcp, start: u64, segments: u64, marked: u64) -> u64 {
    let mut una = start;
    for i in 0..segments {
        una += MSS;
        // SND.NXT as it is when this window's last ACK arrives: the next window is again
        // `segments` ACKs long.
        d.on_ack_feedback(MSS, i < marked, una, una + (segments - 1) * MSS);
    }
    una
}

#[test]
fn alpha_follows_the_ewma_with_g_one_sixteenth_and_converges_to_the_marked_fraction() {
    let mut d = Dctcp::new(MSS);
    assert_eq!(d.alpha(), 1.0, "alpha starts at 1");
    // The first ACK closes the (empty) initial window: F = 0 there, then one window per
    // 20 ACKs, 5 of them marked: F = 0.25.
    let mut una = ISS_DATA;
    d.on_ack_feedback(MSS, false, una + MSS, una + 20 * MSS);
    una += MSS;
    let mut expected = (1.0 - DCTCP_G) * 1.0;
    assert!((d.alpha() - expected).abs() < 1e-12);
    for n in 0..200 {
        una = window(&mut d, una, 20, 5);
        expected = (1.0 - DCTCP_G) * expected + DCTCP_G * 0.25;
        assert!((d.alpha() - expected).abs() < 1e-12, "window {n}: {} vs {expected}", d.alpha());
    }
    // Closed form of the EWMA: F + (alpha_0 - F) (1 - g)^n -> F.
    assert!((d.alpha() - 0.25).abs() < 1e-5, "alpha {} after 200 windows of F = 0.25", d.alpha());
}

#[test]
fn alpha_changes_only_when_snd_una_passes_the_window_end() {
    let mut d = Dctcp::new(MSS);
    // Close the initial window: alpha = 15/16, WindowEnd = 1 + 10 MSS.
    d.on_ack_feedback(MSS, false, 1 + MSS, 1 + 10 * MSS);
    let a0 = d.alpha();
    // ACKs up to SND.UNA = WindowEnd do not update: 3 of 9 marked.
    for i in 2..=10 {
        d.on_ack_feedback(MSS, i <= 4, 1 + i * MSS, 1 + 20 * MSS);
        assert_eq!(d.alpha(), a0, "ACK {i} inside the window");
    }
    // The next ACK passes it: F = 3 / 10 over the window's ten ACKs.
    d.on_ack_feedback(MSS, false, 1 + 11 * MSS, 1 + 20 * MSS);
    assert!((d.alpha() - Dctcp::next_alpha(a0, 0.3)).abs() < 1e-12);
    assert!((Dctcp::next_alpha(1.0, 0.0) - 15.0 / 16.0).abs() < 1e-15);
}

#[test]
fn ecn_reduction_is_cwnd_times_one_minus_alpha_over_two_and_loss_halves() {
    let mut d = Dctcp::new(MSS);
    assert_eq!(d.on_ecn_echo(40 * MSS), 20 * MSS, "alpha = 1 halves, as classic ECN");
    // 100 windows without a mark: alpha = (15/16)^101.
    let mut una = ISS_DATA;
    d.on_ack_feedback(MSS, false, una + MSS, una + 10 * MSS);
    una += MSS;
    for _ in 0..100 {
        una = window(&mut d, una, 10, 0);
    }
    let alpha = (15.0f64 / 16.0).powi(101);
    assert!((d.alpha() - alpha).abs() < 1e-12);
    assert_eq!(d.on_ecn_echo(40 * MSS), (40.0 * MSS as f64 * (1.0 - alpha / 2.0)) as u64);
    assert_eq!(d.on_ecn_echo(2 * MSS), 2 * MSS, "never below two segments");
    // Section 3.5: a loss is conventional TCP's halving of FlightSize, whatever alpha is.
    assert_eq!(d.on_loss(40 * MSS), 20 * MSS);
}

fn dctcp_sender(n: u64) -> TcpSender {
    let c = TcpConfig { mss: MSS as u32, ecn: true, congestion_control: CongestionControl::Dctcp, ..cfg() };
    sender_with_window_of(n, &c)
}

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

#[test]
fn sender_reduces_by_alpha_once_per_window() {
    let mut s = dctcp_sender(20);
    let mut out = Vec::new();
    // An unmarked ACK closes the first observation window: alpha = 15/16.
    s.on_ack(1 + MSS, false, ms(100), &mut out);
    let cwnd = s.cwnd;
    // A duplicate ACK with ECN-Echo (no growth, no bytes acked): the reduction uses that alpha.
    s.on_ack(1 + MSS, true, ms(101), &mut out);
    let expected = (cwnd as f64 * (1.0 - 15.0 / 32.0)) as u64;
    assert_eq!((s.ssthresh, s.cwnd), (expected, expected));
    assert_eq!(s.stats.ecn_reductions, 1);
    // A second echo in the same window of data is ignored (RFC 3168 section 6.1.2's guard).
    s.on_ack(1 + 2 * MSS, true, ms(102), &mut out);
    assert_eq!(s.stats.ecn_reductions, 1);
}

#[test]
fn sender_answers_loss_as_conventional_tcp() {
    let mut s = dctcp_sender(20);
    let mut out = Vec::new();
    s.on_ack(1 + MSS, false, ms(100), &mut out); // alpha = 15/16 now
    let flight = s.snd_max() - s.snd_una();
    for i in 0..3 {
        s.on_ack(1 + MSS, false, ms(101 + i), &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.ssthresh, flight / 2, "RFC 5681 equation (4), not cwnd (1 - alpha / 2)");
}

#[test]
fn an_ece_ack_of_new_data_reduces_the_window_before_that_ack_grew_it() {
    let mut s = dctcp_sender(20);
    let mut out = Vec::new();
    s.on_ack(1 + MSS, false, ms(100), &mut out); // alpha = 15/16
    let before = s.cwnd;
    // This ACK acknowledges a new segment (growth by SMSS^2 / cwnd) and carries ECN-Echo:
    // alpha stays (the window is not over) and the reduction starts from `before`.
    s.on_ack(1 + 2 * MSS, true, ms(101), &mut out);
    let expected = (before as f64 * (1.0 - 15.0 / 32.0)) as u64;
    assert_eq!((s.ssthresh, s.cwnd), (expected, expected));
}
