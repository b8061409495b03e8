//! The receiver's log of a media flow (RTP-like, MPEG, adaptive stream over UDP): one row per
//! packet received, which becomes that flow's rows of the `media` table.

use aqmlab_core::{Packet, Time};
use aqmlab_model::record::{MediaPackets, Table};

/// One row per packet the receiver got: sequence number, size, send and receive times.
#[derive(Default)]
pub(super) struct ReceiveLog {
    seq: Vec<u64>,
    size: Vec<u32>,
    sent_ns: Vec<u64>,
    recv_ns: Vec<u64>,
    pub(super) bytes: u64,
}

impl ReceiveLog {
    pub(super) fn push(&mut self, p: &Packet, now: Time) {
        self.seq.push(p.seq);
        self.size.push(p.size);
        self.sent_ns.push(p.sent_at.as_nanos());
        self.recv_ns.push(now.as_nanos());
        self.bytes += p.payload as u64;
    }

    /// Flow `f`'s rows of the `media` table (as the emulator records them): flow, sequence
    /// number, size, send and receive times. Loss, one-way delay and jitter are computed from
    /// it.
    pub(super) fn media_table(&self, f: u32) -> (&'static str, Table) {
        let mut table = MediaPackets::default();
        for i in 0..self.seq.len() {
            table.push(f, self.seq[i], self.size[i], self.sent_ns[i], self.recv_ns[i]);
        }
        ("media", table.into_table())
    }
}
