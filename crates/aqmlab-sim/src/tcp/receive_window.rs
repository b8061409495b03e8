//! The receive window a Linux receiver advertises (`TcpConfig::rwnd_autotuning`): it starts
//! near 64 kB and grows as the application reads, by receive-buffer autotuning ("dynamic
//! right-sizing", DRS). Without this model the simulator's receiver advertises the fixed `rwnd`
//! from the first segment; a kernel's window holds senders back in their first round trips
//! (docs/fidelity.md, "The 8-flow FQ-CoDel cubic cell": 4 of 8 kernel senders limited by the
//! receiver between 0.8 and 1.6 s).
//!
//! Read from Linux's net/ipv4/tcp_input.c (`tcp_init_buffer_space`, `tcp_grow_window`,
//! `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`, `tcp_rcv_rtt_update`, `tcp_data_queue_ofo`) and
//! net/ipv4/tcp_output.c (`tcp_select_initial_window`, `__tcp_select_window`) as of the 2025
//! receive-side series and its fix "tcp: fix too slow tcp_rcvbuf_grow() action"; the code below
//! is written from the rules, not from the kernel's code. Checked against this machine's kernel
//! (6.18) through the emulator: one cubic flow, 100 Mbit/s, 40 ms, the sender's `tcpi_snd_wnd`
//! every 10 ms (docs/fidelity.md, "The receive window").
//!
//! Modelled:
//! * The first window (`tcp_select_initial_window`): the default receive buffer, tcp_rmem[1] =
//!   128 KiB, of which half is window before the kernel has measured any packet
//!   (TCP_DEFAULT_SCALING_RATIO), rounded down to a multiple of the MSS and at most 65535 (a
//!   SYN's window is not scaled): 65160 B at a 1448 B MSS, as the kernel advertised here.
//! * The window clamp (`window_clamp`) starts at the buffer's share once packets are measured:
//!   128 KiB x 5/8 = 80 KiB. Choice: 5/8 is the ratio of payload to buffer memory this machine's
//!   kernel showed (its second window was 80,896 B, one 1 KiB scaling step under 80 KiB); a
//!   kernel measures it per packet from the driver's buffers (`tcp_measure_rcv_mss`).
//! * The window the receiver is willing to advertise (`rcv_ssthresh`) grows by twice each
//!   in-order segment's length, at least two MSS (`tcp_grow_window`), up to the clamp; with SACK
//!   an out-of-order segment's new bytes grow it too (`tcp_data_queue_ofo`), which keeps a lossy
//!   flow's window growing while its holes are repaired.
//! * DRS (`tcp_rcv_space_adjust`): once a receiver RTT has passed since the last measurement,
//!   the bytes the application read in it (`copied`; it reads at once here) are compared with the
//!   last such count (`space`, first 10 MSS: `tcp_init_buffer_space`). When they grew, the clamp
//!   rises to rcvwin = 2 copied + 4 copied (copied - space) / space (one RTT late, and allowing
//!   the sender to double its rate: `tcp_rcvbuf_grow`) plus the span of out-of-order data held,
//!   at most `TcpConfig::rwnd` (the buffer's ceiling, tcp_rmem[2]'s share). Out-of-order data
//!   raises the clamp too, to 2 space plus its span (`tcp_data_queue_ofo`).
//! * The receiver's RTT (`tcp_rcv_rtt_update`): a sample below the estimate replaces it, a
//!   larger one moves it by an eighth.
//! * Out-of-order data held takes buffer space (`tcp_space`): the window offered on an ACK is
//!   at most the clamp less the out-of-order bytes held, and `rcv_ssthresh` grows only up to
//!   that (`tcp_grow_window`'s room). The right edge of the window is never moved back
//!   (`tcp_select_window`: "never shrink the offered window"), so while a loss's hole is being
//!   filled the window the sender sees shrinks as the edge of in-order data moves up to it. The
//!   buffer counts the packets' memory (`truesize`) and the window its payload: the two differ by
//!   the scaling ratio that the clamp already stands for, so the bytes held count as they are.
//!
//! Choices and what is left out:
//! * The receiver's RTT samples are the sender's. A kernel with timestamps times, at the
//!   receiver, an ACK to the data it released (`tcp_rcv_rtt_measure_ts`), the same loop of the
//!   path as the sender's data-to-ACK sample; the simulator's segments carry no timestamps, so
//!   the connection hands each of the sender's samples to its receiver when it is taken (a
//!   half round trip before a kernel receiver would have its own).
//! * The window is not rounded to the window-scale unit (1 KiB here, from tcp_rmem[2] =
//!   32 MiB); a zero window (`__tcp_select_window` offers 0 below a sixteenth of the buffer or
//!   one MSS) is not offered: the window never falls under what the right edge leaves.
//! * Memory pressure (`tcp_under_memory_pressure`, `tcp_clamp_window`): none in a simulation.

use super::sack::RangeSet;
use aqmlab_core::Time;

/// tcp_rmem[1]: the receive buffer a connection starts with (bytes).
const INITIAL_BUFFER: u64 = 131_072;
/// The largest unscaled window, the one a SYN carries.
const UNSCALED_MAX: u64 = 65_535;
/// TCP_INIT_CWND: the first `space` is ten segments (`tcp_init_buffer_space`).
const INITIAL_SPACE_SEGMENTS: u64 = 10;

#[derive(Clone, Debug)]
pub struct ReceiveWindow {
    mss: u64,
    /// `TcpConfig::rwnd`: no window grows past it.
    ceiling: u64,
    /// The largest window the buffer allows now (`window_clamp`).
    clamp: u64,
    /// The window the receiver is willing to advertise (`rcv_ssthresh`).
    willing: u64,
    /// The bytes read in the last measured RTT that raised the clamp (`rcvq_space.space`).
    space: u64,
    /// Where and when the current measurement started (`rcvq_space.seq`, `rcvq_space.time`);
    /// None until the first in-order data.
    mark: Option<(u64, Time)>,
    /// The connection's first data sequence number, where the first measurement starts.
    first_seq: u64,
    /// The receiver's RTT estimate (`rcv_rtt_est`); None until the first sample.
    rtt: Option<Time>,
    /// The right edge of the window last offered, a sequence number (`rcv_wup + rcv_wnd`); 0
    /// before the first ACK.
    edge: u64,
}

impl ReceiveWindow {
    /// The receiver's window for a connection whose data starts at `first_seq`.
    pub fn new(rwnd: u64, mss: u64, first_seq: u64) -> ReceiveWindow {
        let first = Self::first_window(rwnd, mss);
        ReceiveWindow {
            mss,
            ceiling: rwnd,
            clamp: (INITIAL_BUFFER * 5 / 8).min(rwnd).max(first),
            willing: first,
            space: first.min(INITIAL_SPACE_SEGMENTS * mss),
            mark: None,
            first_seq,
            rtt: None,
            edge: 0,
        }
    }

    /// The window of the SYN-ACK, which the sender starts from (`tcp_select_initial_window`).
    pub fn first_window(rwnd: u64, mss: u64) -> u64 {
        let half_buffer = INITIAL_BUFFER / 2;
        let rounded = if half_buffer > mss { half_buffer / mss * mss } else { half_buffer };
        rounded.min(UNSCALED_MAX).min(rwnd)
    }

    /// The window to put on the ACK sent now, from the receive edge `rcv_nxt`, with the
    /// out-of-order data `held` in the buffer: what free space and `rcv_ssthresh` allow, or
    /// what keeps the last right edge where it was if that is more.
    pub fn offer(&mut self, rcv_nxt: u64, held: &RangeSet) -> u64 {
        let free = self.clamp.saturating_sub(held.bytes());
        self.edge = self.edge.max(rcv_nxt + self.willing.min(free));
        self.edge - rcv_nxt
    }

    /// One of the sender's RTT samples (module docs: the receiver's own, in a kernel).
    pub fn on_rtt_sample(&mut self, sample: Time) {
        self.rtt = Some(match self.rtt {
            Some(rtt) if sample >= rtt => Time(rtt.0 - rtt.0 / 8 + sample.0 / 8),
            _ => sample,
        });
    }

    /// An in-order segment brought `len` new bytes and moved the receive edge to `rcv_nxt`
    /// (further than `len` when it filled a hole), and everything in order was read at once;
    /// `held` is the out-of-order data still held. True when the window the receiver is willing
    /// to offer grew (where `tcp_grow_window` asks for a quick ACK, `quickack.rs`).
    pub fn on_in_order(&mut self, len: u64, rcv_nxt: u64, held: &RangeSet, now: Time) -> bool {
        let grew = self.grow(len, held.bytes());
        let Some((seq, since)) = self.mark else {
            // The first measurement counts from the connection's start (`tcp_init_buffer_space`
            // at the handshake's end; here, the first data).
            self.mark = Some((self.first_seq, now));
            return grew;
        };
        let Some(rtt) = self.rtt else { return grew };
        if now - since < rtt {
            return grew;
        }
        let copied = rcv_nxt - seq;
        if copied > self.space {
            let base = 2 * copied;
            let slow_start = (2 * base as u128 * (copied - self.space) as u128 / self.space as u128) as u64;
            self.raise_clamp(base.saturating_add(slow_start).saturating_add(span(held, rcv_nxt)));
            self.space = copied;
        }
        self.mark = Some((rcv_nxt, now));
        grew
    }

    /// A segment brought `len` new bytes above a hole at the receive edge `rcv_nxt`; `held` is
    /// the out-of-order data held, the segment's included. With SACK the window the receiver is
    /// willing to offer grows as for an in-order segment, in the room the data held before it
    /// left (`tcp_data_queue_ofo` calls `tcp_grow_window` before it charges the segment to the
    /// buffer, for SACK flows only: without SACK the window stays, "to force DUPACK and trigger
    /// fast retransmit"); then the clamp makes room for the data held (`tcp_rcvbuf_grow`).
    /// True when the window the receiver is willing to offer grew.
    pub fn on_out_of_order(&mut self, len: u64, rcv_nxt: u64, held: &RangeSet, sack: bool) -> bool {
        let grew = sack && len > 0 && self.grow(len, held.bytes().saturating_sub(len));
        self.raise_clamp((2 * self.space).saturating_add(span(held, rcv_nxt)));
        grew
    }

    /// `tcp_grow_window`: a segment of `len` bytes raises `rcv_ssthresh` by twice its length, at
    /// least two MSS, within the room the clamp leaves beside the `held_bytes` in the buffer.
    /// True when it grew.
    fn grow(&mut self, len: u64, held_bytes: u64) -> bool {
        let room = self.clamp.saturating_sub(held_bytes);
        let grew = self.willing < room;
        if grew {
            self.willing = (self.willing + (2 * len).max(2 * self.mss)).min(room);
        }
        grew
    }

    fn raise_clamp(&mut self, window: u64) {
        self.clamp = self.clamp.max(window.min(self.ceiling));
    }
}

/// How far the out-of-order data `held` reaches past the receive edge `rcv_nxt` (0 without
/// any): the room DRS adds for it (`tcp_rcvbuf_grow`'s ooo_last_skb end).
fn span(held: &RangeSet, rcv_nxt: u64) -> u64 {
    if held.is_empty() {
        0
    } else {
        held.end().saturating_sub(rcv_nxt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn ms(v: u64) -> Time {
        Time(v * 1_000_000)
    }

    /// Out-of-order data held from segment `from` to segment `to`.
    fn held(from: u64, to: u64) -> RangeSet {
        let mut r = RangeSet::default();
        r.insert(from * MSS, to * MSS);
        r
    }

    fn none() -> RangeSet {
        RangeSet::default()
    }

    #[test]
    fn the_first_window_is_a_kernels() {
        // 65160 at a 1448 B MSS (measured on this machine's kernel), 64240 at 1460 B (the
        // SYN-ACK window of a Linux server seen on the wire), and never above rwnd.
        assert_eq!(ReceiveWindow::first_window(6_291_456, 1448), 65_160);
        assert_eq!(ReceiveWindow::first_window(6_291_456, 1460), 64_240);
        assert_eq!(ReceiveWindow::first_window(19_200, 960), 19_200);
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        assert_eq!(w.offer(0, &none()), 65_160);
        assert_eq!(w.space, 14_480);
    }

    #[test]
    fn a_fixed_small_window_stays_fixed() {
        // A scenario's own small rwnd (Rb-RIO's 20 segments) is the ceiling from the start.
        let mut w = ReceiveWindow::new(19_200, 960, 0);
        w.on_rtt_sample(ms(40));
        for k in 0..200 {
            w.on_in_order(960, (k + 1) * 960, &none(), ms(k * 5));
            assert_eq!(w.offer((k + 1) * 960, &none()), 19_200);
        }
    }

    #[test]
    fn the_clamp_rises_by_drs_once_a_receiver_rtt_has_passed() {
        // The kernel's trace (docs/fidelity.md): 40 segments read in a round trip after 20 the
        // round trip before give 2c + 4c(c - old)/old = 115,840 + 231,680 = 347,520 B; the kernel
        // advertised 346,112 B (its 1 KiB scaling step below) one round trip later.
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.on_rtt_sample(ms(40));
        w.space = 20 * MSS;
        w.mark = Some((0, ms(0)));
        w.on_in_order(MSS, 39 * MSS, &none(), ms(39));
        assert_eq!(w.clamp, 81_920, "less than a receiver RTT: no measurement");
        w.on_in_order(MSS, 40 * MSS, &none(), ms(40));
        assert_eq!(w.clamp, 347_520);
        assert_eq!((w.space, w.mark), (40 * MSS, Some((40 * MSS, ms(40)))));
        // As many bytes in the next round trip: no growth; out-of-order data held adds its span.
        w.on_in_order(40 * MSS, 80 * MSS, &none(), ms(80));
        assert_eq!(w.clamp, 347_520);
        w.on_in_order(100 * MSS, 180 * MSS, &held(209, 210), ms(120));
        let (c, old) = (100 * MSS, 40 * MSS);
        assert_eq!(w.clamp, 2 * c + 4 * c * (c - old) / old + 30 * MSS);
        // A slower round trip never lowers it.
        w.on_in_order(10 * MSS, 190 * MSS, &none(), ms(160));
        assert_eq!(w.clamp, 2 * c + 4 * c * (c - old) / old + 30 * MSS);
    }

    #[test]
    fn the_first_round_trip_leaves_the_clamp_where_it_starts() {
        // Ten segments in the first round trip are the first space: the clamp stays 80 KiB, and
        // the advertised window stops there (the kernel's 80,896 B at 0.85-0.92 s).
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.on_rtt_sample(ms(40));
        for i in 0..10 {
            w.on_in_order(MSS, (i + 1) * MSS, &none(), ms(i * 4));
        }
        assert_eq!((w.clamp, w.offer(10 * MSS, &none())), (81_920, 81_920));
    }

    #[test]
    fn the_advertised_window_grows_two_bytes_per_byte_received() {
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.clamp = 1_000_000;
        let before = w.willing;
        w.on_in_order(MSS, MSS, &none(), ms(1));
        assert_eq!(w.willing, before + 2 * MSS);
        w.on_in_order(100, MSS + 100, &none(), ms(2)); // a small segment still grows it by two MSS
        assert_eq!(w.willing, before + 4 * MSS);
    }

    #[test]
    fn out_of_order_data_takes_room_and_the_right_edge_never_moves_back() {
        // 80 KiB clamp, 65,160 B offered from sequence 0: edge 65,160.
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        assert_eq!(w.offer(0, &none()), 65_160);
        // 40 segments held above a hole at 0: free space 81,920 - 57,920 = 24,000 B, less than
        // the window the edge leaves, so the edge stays and the window is what it was.
        assert_eq!(w.offer(0, &held(1, 41)), 65_160);
        // The hole filled partly: rcv_nxt moves up to the next hole, the edge stays, the window
        // the sender sees shrinks (the kernel's dips below 64 KiB in docs/fidelity.md's figure).
        // With 30 segments still held, free space (38,480 B) reaches only to 52,960 < 65,160.
        assert_eq!(w.offer(10 * MSS, &held(11, 41)), 65_160 - 10 * MSS);
        // Everything in order again: free space is the clamp, the window is rcv_ssthresh's.
        assert_eq!(w.offer(60 * MSS, &none()), 65_160);
        // rcv_ssthresh does not grow past the free space while data is held.
        w.on_in_order(MSS, 61 * MSS, &held(62, 112), ms(1));
        assert_eq!(w.willing, 65_160, "81,920 - 72,400 of room is less than rcv_ssthresh");
        w.on_in_order(MSS, 62 * MSS, &none(), ms(2));
        assert_eq!(w.willing, 65_160 + 2 * MSS);
    }

    #[test]
    fn filling_a_hole_grows_the_window_by_the_filling_segment_alone() {
        // Segment 0 lost, 1-20 held, then 0 arrives: rcv_nxt jumps 21 segments, the window the
        // receiver will offer grows by two MSS (the arriving skb's, `tcp_grow_window`).
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.clamp = 1_000_000;
        let before = w.willing;
        w.on_in_order(MSS, 21 * MSS, &none(), ms(1));
        assert_eq!(w.willing, before + 2 * MSS);
        assert_eq!(w.mark, Some((0, ms(1))), "the first measurement counts from the first byte");
    }

    #[test]
    fn with_sack_an_out_of_order_segment_grows_the_window_as_an_in_order_one() {
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.clamp = 1_000_000;
        let before = w.willing;
        // Segment 5 above a hole at 0: room is the clamp less the data held before it.
        assert!(w.on_out_of_order(MSS, 0, &held(5, 6), true));
        assert_eq!(w.willing, before + 2 * MSS);
        // Without SACK the window stays (the kernel keeps it to force duplicate ACKs).
        let mut plain = ReceiveWindow::new(6_291_456, MSS, 0);
        plain.clamp = 1_000_000;
        assert!(!plain.on_out_of_order(MSS, 0, &held(5, 6), false));
        assert_eq!(plain.willing, before);
        // A segment already held brings no new bytes and grows nothing.
        assert!(!w.on_out_of_order(0, 0, &held(5, 6), true));
        assert_eq!(w.willing, before + 2 * MSS);
        // Growth stops at the room the data held before the segment leaves in the 80 KiB clamp:
        // 10 segments, 67,440 B, less than 65,160 + 2 MSS; with 11 held, no room is left.
        let mut tight = ReceiveWindow::new(6_291_456, MSS, 0);
        assert!(tight.on_out_of_order(MSS, 0, &held(1, 12), true));
        assert_eq!(tight.willing, 81_920 - 10 * MSS);
        assert!(!tight.on_out_of_order(MSS, 0, &held(1, 13), true));
        assert_eq!(tight.willing, 81_920 - 10 * MSS);
    }

    #[test]
    fn out_of_order_data_makes_room_for_itself() {
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.on_out_of_order(MSS, 0, &held(99, 100), true);
        assert_eq!(w.clamp, 2 * 10 * MSS + 100 * MSS);
        let mut small = ReceiveWindow::new(100_000, MSS, 0);
        small.on_out_of_order(MSS, 0, &held(999, 1000), true);
        assert_eq!(small.clamp, 100_000, "never past rwnd");
    }

    #[test]
    fn the_receivers_rtt_takes_a_lower_sample_at_once_and_a_higher_by_an_eighth() {
        let mut w = ReceiveWindow::new(6_291_456, MSS, 0);
        w.on_rtt_sample(ms(80));
        w.on_rtt_sample(ms(40));
        assert_eq!(w.rtt, Some(ms(40)));
        w.on_rtt_sample(ms(120));
        assert_eq!(w.rtt, Some(ms(50)));
    }
}
