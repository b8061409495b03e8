//! The socket's send buffer (`TcpConfig::send_buffer`): an application writing bulk data into
//! a Linux socket can have no more queued, sent but unacknowledged plus not yet sent, than the
//! buffer holds, so a window larger than the buffer is never filled. Without this model the
//! simulator's bulk senders always have data, as if the buffer were unlimited.
//!
//! Read from Linux's net/core/stream.c and include/net/sock.h (`sk_stream_memory_free`,
//! `sk_stream_is_writeable`, `sk_stream_wspace`, `sk_stream_min_wspace`) and net/ipv4/tcp.c
//! (`tcp_sendmsg_locked`, `tcp_poll`); the code below is written from the rules. Checked against
//! this machine's kernel (6.18) through the emulator, whose sender writes 256 KiB at a time from
//! a socket with a timeout (`aqmlab.emu.endpoints`): one reno flow, 100 Mbit/s, 40 ms, a 4 BDP
//! FIFO, `ss -tmi` every 50 ms in the sender's namespace (docs/fidelity.md, "The send buffer").
//!
//! Modelled:
//! * A writer that blocks (or polls, as the emulator's does) until the socket is writeable
//!   writes again only when the memory queued is at most two thirds of the buffer (`tcp_poll`
//!   and the wake-up in `sk_stream_write_space` ask for free space of at least half the memory
//!   queued), and then writes one application write, `WRITE_BYTES`. So the data the sender may
//!   send ends between two thirds of the buffer and that plus one write above SND.UNA. The
//!   kernel measured here kept 2.78-3.05 MB queued of its 4 MiB buffer.
//! * The buffer counts memory, not payload (`sk_wmem_queued`, each skb's `truesize`): 1,499-1,510
//!   bytes per 1,448-byte segment here (3.7 % more; the emulator's veths run without
//!   segmentation offloads, so each skb holds one segment), `MEMORY_PER_1000_PAYLOAD`.
//!
//! Choices and what is left out:
//! * The buffer is its ceiling from the first segment. A kernel starts at tcp_wmem[1] (16 KiB)
//!   and grows it to twice the window's memory at each ACK that frees room
//!   (`tcp_sndbuf_expand`, 2 x cwnd x 2,304 B here: 46,080 B at ten segments), three times what
//!   the window's segments take, so the growing buffer never holds the window back.
//! * Whole segments: the end of the data written is rounded up to a segment boundary.
//! * An application that writes what it produces (`TcpSender::write_until`) is limited by the
//!   buffer the same way: the lower of its end and the buffer's.

use super::TcpSender;

/// The application's write size (bytes): the emulator's sender writes 256 KiB per call.
pub const WRITE_BYTES: u64 = 256 * 1024;

/// Buffer memory per 1000 bytes of payload queued (`truesize` over payload, measured: 1,501
/// bytes per 1,448-byte segment).
pub const MEMORY_PER_1000_PAYLOAD: u64 = 1037;

/// A send buffer of `limit` bytes of memory and the end (exclusive sequence number) of the data
/// the application has written into it.
#[derive(Debug, Clone)]
pub struct SendBuffer {
    limit: u64,
    written: u64,
}

impl SendBuffer {
    /// An empty buffer of `limit` bytes (`limit > 0`) whose data starts at `first_seq`.
    pub fn new(limit: u64, first_seq: u64) -> SendBuffer {
        SendBuffer { limit, written: first_seq }
    }

    /// The application writes while the socket is writeable: memory queued above `snd_una` at
    /// most two thirds of the buffer (`sk_stream_is_writeable`), one write at a time, each
    /// ending on a segment boundary (`mss`). Returns the end of the data written.
    /// A write takes what fits (`tcp_sendmsg_locked` copies while `sk_stream_memory_free`), at
    /// least one segment.
    pub fn refill(&mut self, snd_una: u64, mss: u64) -> u64 {
        loop {
            let queued = Self::memory(self.written - snd_una);
            if queued * 3 > self.limit * 2 {
                return self.written;
            }
            let room = (self.limit - queued) * 1000 / MEMORY_PER_1000_PAYLOAD;
            self.written += WRITE_BYTES.min(room).div_ceil(mss).max(1) * mss;
        }
    }

    /// The end of the data written.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The memory `payload` bytes take in the buffer.
    fn memory(payload: u64) -> u64 {
        payload * MEMORY_PER_1000_PAYLOAD / 1000
    }
}

impl TcpSender {
    /// The application writes into the send buffer what its rule lets it; the data the sender
    /// may send ends at the lower of that and the application's own end.
    pub(super) fn refill_send_buffer(&mut self) {
        if let Some(b) = self.send_buffer.as_mut() {
            let written = b.refill(self.snd_una, self.mss);
            self.data_end = Some(self.app_end.map_or(written, |end| end.min(written)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const FOUR_MIB: u64 = 4 * 1024 * 1024;

    #[test]
    fn the_writer_fills_past_two_thirds_of_the_buffer_by_one_write() {
        let mut b = SendBuffer::new(FOUR_MIB, 1);
        let end = b.refill(1, MSS);
        let write = 182 * MSS; // 256 KiB rounded up to whole segments
        let queued = end - 1;
        // The last write started at or below two thirds (in memory) and ended above.
        assert!((queued - write) * MEMORY_PER_1000_PAYLOAD / 1000 * 3 <= FOUR_MIB * 2);
        assert!(queued * MEMORY_PER_1000_PAYLOAD / 1000 * 3 > FOUR_MIB * 2);
        assert_eq!(queued % MSS, 0);
        // 2/3 of 4 MiB is 2,796,203 B of memory, 2,696,435 B of payload (1,862.2 segments):
        // after ten writes of 182 (1,820 segments) the writer writes an eleventh.
        assert_eq!(queued / MSS, 11 * 182);
    }

    #[test]
    fn nothing_more_is_written_until_acknowledgments_free_a_third() {
        let mut b = SendBuffer::new(FOUR_MIB, 1);
        let end = b.refill(1, MSS);
        // An ACK of one segment leaves the queue above two thirds: no write.
        assert_eq!(b.refill(1 + MSS, MSS), end);
        // Once SND.UNA has moved by one write, the queue is back where the last write began.
        assert_eq!(b.refill(1 + 182 * MSS, MSS), end + 182 * MSS);
    }

    #[test]
    fn a_write_larger_than_the_room_left_takes_what_fits() {
        // 64 KiB: two thirds is 43,690 B of memory; a 256 KiB write would overfill it.
        let mut b = SendBuffer::new(64 * 1024, 1);
        let queued = b.refill(1, MSS) - 1;
        // 64 KiB of memory is 63,196 B of payload: 44 segments rounded up.
        assert_eq!(queued / MSS, 44);
    }

    #[test]
    fn the_cap_is_the_kernels_two_thousand_segments_at_most() {
        // Measured in the kernel's run: 1,881-2,048 segments outstanding at the cap.
        let mut b = SendBuffer::new(FOUR_MIB, 1);
        let mut most = 0;
        for una in (1..10_000 * MSS).step_by(MSS as usize) {
            most = most.max((b.refill(una, MSS) - una) / MSS);
        }
        assert!((2_002..=2_048).contains(&most), "{most}");
    }

    use crate::tcp::tests::cfg;
    use crate::tcp::{TcpReceiver, TcpSender, ISS_DATA};
    use aqmlab_core::Time;
    use aqmlab_model::app::tcp_config::TcpConfig;

    /// The most segments outstanding (SND.MAX - SND.UNA) in `rounds` lossless round trips of
    /// slow start from ten segments, every segment acknowledged at once, and the segments sent
    /// in all; with `write_until`, an application whose data ends there.
    fn most_outstanding(send_buffer: u64, rounds: usize, write_until: Option<u64>) -> (u64, u64) {
        let c = TcpConfig { mss: MSS as u32, initial_cwnd_segments: 10, rwnd: 1 << 40, send_buffer, ..cfg() };
        let (mut s, mut r) = (TcpSender::new(&c), TcpReceiver::new(&c));
        if let Some(end) = write_until {
            s.write_until(end);
        }
        let mut out = Vec::new();
        s.send_available(Time::ZERO, &mut out);
        let mut most = 0;
        for round in 1..=rounds {
            let now = Time::from_millis(40 * round as u64);
            let wire: Vec<u64> = out.drain(..).map(|x| x.seq).collect();
            most = most.max((s.snd_max - s.snd_una) / MSS);
            for seq in wire {
                r.on_data(seq, MSS as u32, false, now);
                let (ack, _) = r.take_ack();
                s.on_ack_sack(ack, false, r.sack_blocks().as_slice(), now, &mut out);
            }
        }
        (most, (s.snd_max - ISS_DATA) / MSS)
    }

    #[test]
    fn a_sender_keeps_what_the_buffer_holds_in_flight_and_no_more() {
        // Unlimited, the window doubles each round: 10 x 2^10 segments by the eleventh.
        assert_eq!(most_outstanding(0, 11, None).0, 10 << 10);
        // With Linux's 4 MiB the writer's two thirds and one write: 2,002 segments, then the
        // refills after each third.
        let (most, sent) = most_outstanding(FOUR_MIB, 11, None);
        assert!((2_002..=2_048).contains(&most), "{most}");
        // The writer keeps writing as ACKs free the buffer: a window of it every round.
        assert!(sent > 3 * 2_048, "{sent}");
        // An application whose own data ends below the buffer's sends as it would without one,
        // and all of it.
        let end = Some(ISS_DATA + 500 * MSS);
        assert_eq!(most_outstanding(FOUR_MIB, 11, end), most_outstanding(0, 11, end));
        assert_eq!(most_outstanding(FOUR_MIB, 11, end).1, 500);
    }
}
