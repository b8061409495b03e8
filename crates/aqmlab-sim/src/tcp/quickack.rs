//! Linux's quick-ACK start at a delayed-ACK receiver (`TcpConfig::quickack`): while a budget
//! of "quick" ACKs lasts, every data segment is acknowledged at once instead of every second
//! one, so that a sender in slow start is not held back by the receiver at the start of a
//! connection or after a pause. Read from Linux's net/ipv4/tcp_input.c, include/net/tcp.h and
//! net/ipv4/tcp_output.c (torvalds/linux; tcp_input.c as of commit 35e02583, tcp.h as of
//! 003e07a1); the code below is written from the rules, not from the kernel's code.
//!
//! Modelled:
//! * The budget (`tcp_incr_quickack`): the receive window over two receive MSS,
//!   rcv_wnd / (2 rcv_mss), taken as 2 when that is 0, and capped at TCP_MAX_QUICKACKS = 16
//!   (include/net/tcp.h). A grant never lowers a budget left over (the kernel keeps the
//!   larger). The simulator's receive window is the fixed `rwnd`, its receive MSS the `mss`
//!   (Linux measures rcv_mss from the segments, `tcp_measure_rcv_mss`, which for a bulk sender
//!   is its MSS); so the default 1 MB window gets 16, as a kernel's initial window of about
//!   64 kB does (`tcp_select_initial_window`, net/ipv4/tcp_output.c: from the receive buffer,
//!   tcp_rmem[1] = 128 kB, at least 10 MSS).
//! * Where the budget is granted:
//!   - the first in-order data segment of the connection (`tcp_event_data_recv`, when the
//!     delayed-ACK engine is not yet initialised, `icsk_ack.ato == 0`);
//!   - in-order data arriving more than the receiver's RTO after the previous in-order data
//!     (`tcp_event_data_recv`, "too long gap": the sender probably failed to restart its window);
//!   - a segment wholly below the receive edge, i.e. a retransmission of data already received
//!     (`tcp_data_queue`, which calls `tcp_enter_quickack_mode` with TCP_MAX_QUICKACKS).
//! * While budget is left, the ACK decision sends at once (`__tcp_ack_snd_check` with
//!   `tcp_in_quickack_mode`). Every ACK the receiver sends spends one (`tcp_event_ack_sent` ->
//!   `tcp_dec_quickack_mode`), the duplicate ACKs for out-of-order data and the delayed-ACK
//!   timer's ACK included; DCTCP's extra ACK for the segments before a CE change does not (the
//!   kernel returns before the decrement when that ACK's rcv_nxt is not the current one).
//!
//! Out-of-order data does not grant a budget in Linux (`tcp_data_queue_ofo` schedules an ACK
//! but does not enter quick-ACK mode); the receiver acknowledges it at once by its own rule, as
//! without this option.
//!
//! Left out, each for a stated reason:
//! * The receiver's RTO for the idle-gap test. A kernel receiver's `icsk_rto` comes from the
//!   handshake's RTT sample (RTT + max(2 RTT, rto_min), `tcp_rtt_estimator`, `__tcp_set_rto`)
//!   and, with no data of its own to time, stays there. The simulator's receiver takes no RTT
//!   sample (its handshake, `TcpConfig::handshake`, times the SYN at the client), so it uses the
//!   configured `min_rto` (200 ms in the linux profile): a gap is "long" one
//!   path RTT sooner than in the kernel when the RTT is below 100 ms.
//! * `tcp_grow_window`'s `icsk_ack.quick |= 1`: whenever the kernel raises rcv_ssthresh (the
//!   window it is willing to advertise, growing with receive-buffer autotuning), the next ACK is
//!   quick too (`on_window_grown`). Modelled with `TcpConfig::rwnd_autotuning`
//!   (`receive_window.rs`), which is where the window grows; with a fixed window it never does.
//!   Through a slow start the receiver then ACKs most segments at once, well past the budget,
//!   and CUBIC's HyStart sees ACK trains it does not see behind delayed ACKs (two 1500-byte
//!   segments take 2.4 ms at 10 Mbit/s, more than its 2 ms train spacing): docs/fidelity.md,
//!   "The receive window".
//! * ECN: a CE mark enters quick-ACK mode with a budget of 2 when the receiver is not already
//!   demanding CWR (`__tcp_ecn_check_ce`, latch TCP_ECN_DEMAND_CWR cleared by the sender's CWR,
//!   `tcp_ecn_accept_cwr`), and so does a Not-ECT segment after ECT ones (taken for a
//!   retransmission). The simulator's receiver sees CE but not CWR (it echoes a CE mark on the
//!   next ACK only, RFC 3168 6.1.3 simplified), so the latch cannot be kept; the CE segment
//!   itself is acknowledged at once already (`TcpReceiver::on_data`).
//! * Out-of-window data and data arriving at a zero window (`tcp_data_queue`'s
//!   `out_of_window`): the simulator's sender never sends beyond the receive window.
//! * Interactive (pingpong) mode (`inet_csk_in_pingpong_mode` in `tcp_in_quickack_mode`,
//!   `tcp_enter_quickack_mode` leaving it): a receiver that sends no data never enters it.
//! * The route's RTAX_QUICKACK metric (`ip route ... quickack 1`) and the TCP_QUICKACK socket
//!   option: settings, not defaults.
//! * The adaptive delayed-ACK timeout (`icsk_ack.ato` between TCP_ATO_MIN and the RTO,
//!   `tcp_event_data_recv`, `tcp_delack_timer_handler`): the simulator's timer is the fixed
//!   `delayed_ack_timeout`.
//! * SACK compression of the ACKs for out-of-order data after the third (`__tcp_ack_snd_check`,
//!   `tcp_comp_sack_delay_ns`): a rule of its own, not part of the quick-ACK start.

use aqmlab_core::Time;

/// TCP_MAX_QUICKACKS (include/net/tcp.h): the most quick ACKs one grant gives.
pub const MAX_QUICKACKS: u32 = 16;

/// The quick-ACK state of one receiver.
#[derive(Clone, Debug)]
pub struct QuickAck {
    /// Quick ACKs left (Linux's `icsk_ack.quick`).
    left: u32,
    /// What one grant gives: min(rwnd / (2 mss), 16), 2 when the division gives 0.
    grant: u32,
    /// In-order data this long after the previous in-order data grants again (the receiver's
    /// RTO, taken as the configured minimum RTO: see the module notes).
    idle_after: Time,
    /// When the last in-order data arrived (Linux's `icsk_ack.lrcvtime`); None before any.
    last_in_order: Option<Time>,
    /// Grants after the first (idle gaps and duplicate data), for tests and the fuzzer.
    pub regrants: u64,
}

impl QuickAck {
    pub fn new(rwnd: u64, mss: u32, idle_after: Time) -> QuickAck {
        let per_window = rwnd / (2 * mss.max(1) as u64);
        let grant = if per_window == 0 { 2 } else { per_window.min(MAX_QUICKACKS as u64) as u32 };
        QuickAck { left: 0, grant, idle_after, last_in_order: None, regrants: 0 }
    }

    /// What one grant gives.
    pub fn grant(&self) -> u32 {
        self.grant
    }

    /// Quick ACKs left.
    pub fn left(&self) -> u32 {
        self.left
    }

    /// A data segment `[seq, end)` arrived with the receive edge at `rcv_nxt` (before the
    /// segment moves it): grants a budget where Linux does, and says whether the ACK decision
    /// must send at once. Not inlined: the receivers without the option pay only its test.
    #[inline(never)]
    pub fn on_segment(&mut self, seq: u64, end: u64, rcv_nxt: u64, now: Time) -> bool {
        if end <= rcv_nxt {
            // Data already received: the sender is retransmitting what arrived.
            self.regrant();
        } else if seq <= rcv_nxt {
            match self.last_in_order {
                None => self.left = self.left.max(self.grant),
                Some(t) if now.0.saturating_sub(t.0) > self.idle_after.0 => self.regrant(),
                Some(_) => {}
            }
            self.last_in_order = Some(now);
        }
        self.left > 0
    }

    fn regrant(&mut self) {
        self.left = self.left.max(self.grant);
        self.regrants += 1;
    }

    /// The receiver raised the window it is willing to offer (`tcp_grow_window`, with
    /// `TcpConfig::rwnd_autotuning`): `icsk_ack.quick |= 1`, so the next ACK goes at once.
    pub fn on_window_grown(&mut self) {
        self.left = self.left.max(1);
    }

    /// The receiver sent an ACK of the current edge: one quick ACK spent.
    pub fn on_ack_sent(&mut self) {
        self.left = self.left.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::tests::cfg;
    use crate::tcp::{AckAction, TcpReceiver, ISS_DATA};
    use aqmlab_model::app::tcp_config::TcpConfig;

    const MSS: u64 = 1000;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    /// A delayed-ACK receiver (200 ms timer, minimum RTO 200 ms, MSS 1000 B) with the quick-ACK
    /// start on or off and a receive window of `rwnd` bytes.
    fn receiver(quickack: bool, rwnd: u64) -> TcpReceiver {
        TcpReceiver::new(&TcpConfig { delayed_ack: true, quickack, rwnd, ..cfg() })
    }

    fn seg(k: u64) -> u64 {
        ISS_DATA + k * MSS
    }

    /// Feeds segment `k` at `t` ms; true when the receiver ACKs at once (the ACK is then
    /// taken, as the simulator sends it).
    fn immediate(r: &mut TcpReceiver, k: u64, t: u64) -> bool {
        let now = r.on_data(seg(k), MSS as u32, false, ms(t)) == AckAction::Now;
        if now {
            r.take_ack();
        }
        now
    }

    /// Feeds in-order segments `from..to`, one per ms from `t0`; which were ACKed at once.
    fn run(r: &mut TcpReceiver, from: u64, to: u64, t0: u64) -> Vec<bool> {
        (from..to).map(|k| immediate(r, k, t0 + (k - from))).collect()
    }

    fn alternating(n: usize) -> Vec<bool> {
        (0..n).map(|i| i % 2 == 1).collect()
    }

    #[test]
    fn an_autotuning_receiver_acks_at_once_while_its_window_grows() {
        // `tcp_grow_window`'s quick flag: with `rwnd_autotuning`, each in-order segment that
        // raises the window the receiver will offer is ACKed at once, past the 16-ACK budget.
        // A slow start seen from the receiver: 10, 20, 40, 80, 160 segments in round trips of
        // 10 ms, so that DRS keeps raising the clamp and the window keeps growing into it.
        let immediate_after_budget = |autotuning: bool| {
            let mut r =
                TcpReceiver::new(&TcpConfig { delayed_ack: true, quickack: true, rwnd_autotuning: autotuning, rwnd: 6_000_000, ..cfg() });
            r.on_rtt_sample(ms(10));
            let (mut k, mut acks) = (0, vec![]);
            for round in 0..5u64 {
                let n = 10 << round;
                for i in 0..n {
                    let now = Time(ms(10 * round).0 + i * ms(10).0 / n);
                    let at_once = r.on_data(seg(k), MSS as u32, false, now) == AckAction::Now;
                    if at_once {
                        r.take_ack();
                    }
                    acks.push(at_once);
                    k += 1;
                }
            }
            acks[16..].iter().filter(|&&q| q).count() as f64 / (acks.len() - 16) as f64
        };
        let (on, off) = (immediate_after_budget(true), immediate_after_budget(false));
        // 84 % of them here: the window reaches the clamp a little before each DRS step raises
        // it, and the segments in between are ACKed every second one.
        assert!(on > 0.75, "{on}");
        assert!((off - 0.5).abs() < 0.01, "{off}: every second segment once the budget is spent");
    }

    #[test]
    fn the_first_sixteen_segments_each_get_an_ack_then_every_second_one() {
        let mut r = receiver(true, 1_000_000);
        let acks = run(&mut r, 0, 40, 0);
        assert_eq!(acks[..16], [true; 16], "{acks:?}");
        assert_eq!(acks[16..], alternating(24)[..], "{acks:?}");
        // Without it a delayed-ACK receiver holds the first segment.
        let mut plain = receiver(false, 1_000_000);
        assert_eq!(run(&mut plain, 0, 40, 0), alternating(40));
    }

    #[test]
    fn the_budget_is_the_receive_window_over_two_segments_at_most_sixteen() {
        // tcp_incr_quickack: rcv_wnd / (2 rcv_mss), 2 when that is 0, capped at 16.
        for (rwnd, quick) in [(1_000_000, 16), (32 * MSS, 16), (10 * MSS, 5), (3 * MSS, 1), (MSS, 2)] {
            let mut r = receiver(true, rwnd);
            let acks = run(&mut r, 0, 24, 0);
            let leading = acks.iter().take_while(|&&a| a).count();
            assert_eq!(leading, quick, "rwnd {rwnd}: {acks:?}");
            assert_eq!(acks[quick..], alternating(24 - quick)[..], "rwnd {rwnd}: {acks:?}");
        }
    }

    #[test]
    fn an_idle_gap_longer_than_the_rto_restarts_the_quick_acks() {
        let mut r = receiver(true, 1_000_000);
        run(&mut r, 0, 40, 0); // budget spent; 40 is even, so no ACK is held
                               // A gap of exactly the RTO (200 ms) is not "longer" (tcp_event_data_recv: m > rto).
        let acks = run(&mut r, 40, 44, 39 + 200);
        assert_eq!(acks, alternating(4));
        // A gap of 201 ms grants 16 again.
        let acks = run(&mut r, 44, 70, 242 + 201);
        assert_eq!(acks[..16], [true; 16], "{acks:?}");
        assert_eq!(acks[16..], alternating(10)[..], "{acks:?}");
        assert_eq!(r.quickack().unwrap().regrants, 1);
    }

    #[test]
    fn duplicate_data_restarts_the_quick_acks() {
        let mut r = receiver(true, 1_000_000);
        run(&mut r, 0, 40, 0);
        // A retransmission of segment 10, already received, is ACKed at once and grants 16:
        // that ACK spends one, 15 in-order segments follow with immediate ACKs.
        assert!(immediate(&mut r, 10, 40));
        let acks = run(&mut r, 40, 60, 41);
        assert_eq!(acks[..15], [true; 15], "{acks:?}");
        assert_eq!(acks[15..], alternating(5)[..], "{acks:?}");
    }

    #[test]
    fn out_of_order_data_is_acked_at_once_and_every_ack_spends_one() {
        // A window of 10 segments grants 5. Segment 0 (one spent), two out-of-order segments
        // whose duplicate ACKs spend two more, the gap fill one more, segment 4 the last.
        let mut r = receiver(true, 10 * MSS);
        assert!(immediate(&mut r, 0, 0));
        assert!(immediate(&mut r, 2, 1));
        assert!(immediate(&mut r, 3, 2));
        assert!(immediate(&mut r, 1, 3));
        assert_eq!(r.quickack().unwrap().left(), 1);
        assert!(immediate(&mut r, 4, 4));
        // Budget spent, and out-of-order data did not grant more: back to every second one.
        assert!(!immediate(&mut r, 5, 5));
        assert!(immediate(&mut r, 6, 6));
        // Out-of-order data still gets its immediate duplicate ACK, without a new budget.
        assert!(immediate(&mut r, 8, 7));
        assert!(immediate(&mut r, 7, 8), "the gap fill");
        assert!(!immediate(&mut r, 9, 9));
        assert_eq!(r.quickack().unwrap().regrants, 0);
    }
}
