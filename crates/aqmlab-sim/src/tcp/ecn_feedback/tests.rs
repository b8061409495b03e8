//! The DCTCP receiver's ECN-Echo (RFC 8257 section 3.2) through [`crate::tcp::TcpReceiver`].

use crate::tcp::tests::cfg;
use crate::tcp::{AckAction, TcpReceiver};
use aqmlab_core::Time;
use aqmlab_model::app::tcp_config::{CongestionControl, TcpConfig};

const MSS: u64 = 1000;

fn receiver(delayed_ack: bool, cc: CongestionControl) -> TcpReceiver {
    TcpReceiver::new(&TcpConfig { mss: MSS as u32, delayed_ack, ecn: true, congestion_control: cc, ..cfg() })
}

fn seq(k: u64) -> u64 {
    1 + k * MSS
}

#[test]
fn without_delayed_acks_ece_is_set_on_exactly_the_acks_of_ce_marked_segments() {
    let mut r = receiver(false, CongestionControl::Dctcp);
    let marks = [false, true, true, false, true, false, false, true];
    for (k, &ce) in marks.iter().enumerate() {
        assert_eq!(r.on_data(seq(k as u64), MSS as u32, ce, Time::ZERO), AckAction::Now);
        assert_eq!(r.take_prior_ack(), None);
        assert_eq!(r.take_ack(), (seq(k as u64 + 1), ce), "segment {k}");
    }
}

#[test]
fn with_delayed_acks_a_ce_change_acks_the_earlier_segments_with_the_old_state_first() {
    let mut r = receiver(true, CongestionControl::Dctcp);
    let t = Time::ZERO;
    // Segment 0 unmarked: held for the delayed ACK.
    assert!(matches!(r.on_data(seq(0), MSS as u32, false, t), AckAction::Delay(_)));
    // Segment 1 marked: the state changes; segment 0 is acknowledged with ECE = 0, then
    // segment 1 at once with ECE = 1.
    assert_eq!(r.on_data(seq(1), MSS as u32, true, t), AckAction::Now);
    assert_eq!(r.take_prior_ack(), Some((seq(1), false)));
    assert_eq!(r.take_ack(), (seq(2), true));
    // Segments 2 and 3 marked: no change, one ACK per two segments, ECE = 1.
    assert!(matches!(r.on_data(seq(2), MSS as u32, true, t), AckAction::Delay(_)));
    assert_eq!(r.on_data(seq(3), MSS as u32, true, t), AckAction::Now);
    assert_eq!(r.take_prior_ack(), None);
    assert_eq!(r.take_ack(), (seq(4), true));
    // Segment 4 unmarked with nothing held: an immediate ACK with ECE = 0, no prior ACK.
    assert_eq!(r.on_data(seq(4), MSS as u32, false, t), AckAction::Now);
    assert_eq!(r.take_prior_ack(), None);
    assert_eq!(r.take_ack(), (seq(5), false));
    // Back to delaying while unmarked; the delayed ACK carries ECE = 0.
    assert!(matches!(r.on_data(seq(5), MSS as u32, false, t), AckAction::Delay(_)));
    assert_eq!(r.take_ack(), (seq(6), false));
}

#[test]
fn the_classic_receiver_echoes_ce_once_and_never_owes_a_prior_ack() {
    let mut r = receiver(true, CongestionControl::NewReno);
    let t = Time::ZERO;
    assert!(matches!(r.on_data(seq(0), MSS as u32, false, t), AckAction::Delay(_)));
    assert_eq!(r.on_data(seq(1), MSS as u32, true, t), AckAction::Now);
    assert_eq!(r.take_prior_ack(), None);
    assert_eq!(r.take_ack(), (seq(2), true));
    assert!(matches!(r.on_data(seq(2), MSS as u32, false, t), AckAction::Delay(_)));
    assert_eq!(r.take_ack(), (seq(3), false), "echo cleared once sent");
}
