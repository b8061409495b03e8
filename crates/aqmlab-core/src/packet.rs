//! The packet that flows through every discipline and both engines.
//!
//! A packet is a plain `Copy` value: disciplines move it around by value and never allocate
//! per packet. Only the fields a discipline, a classifier or an application needs are here;
//! payload bytes are never simulated.

use crate::units::Time;
use serde::{Deserialize, Serialize};

/// Transport protocol of a packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Proto {
    #[default]
    Tcp,
    Udp,
}

/// The two ECN bits of the IP header (RFC 3168 section 5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl Ecn {
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
}

/// Video frame type of the application data a packet carries, if any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrameType {
    #[default]
    None,
    I,
    P,
    B,
}

/// TCP header flags the simulator uses.
pub mod tcp_flags {
    pub const ACK: u8 = 0x10;
    pub const PSH: u8 = 0x08;
    pub const SYN: u8 = 0x02;
}

/// The SACK option of a TCP ACK (RFC 2018 section 3): up to three blocks of data the receiver
/// holds above its cumulative ACK, each `[left, right)` in byte sequence numbers, the block of
/// the most recently received segment first (RFC 2018 section 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    len: u8,
    blocks: [(u64, u64); SackBlocks::MAX],
}

impl SackBlocks {
    /// At most three blocks: the option's room beside a timestamp option (RFC 2018 section 3).
    pub const MAX: usize = 3;

    /// Appends a block; false (and ignored) when the option is full or the block is empty.
    pub fn push(&mut self, left: u64, right: u64) -> bool {
        if (self.len as usize) >= Self::MAX || left >= right {
            return false;
        }
        self.blocks[self.len as usize] = (left, right);
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the option adds to the TCP header: two NOPs for alignment, kind and length, and
    /// 8 bytes per block; 0 without blocks.
    pub fn option_bytes(&self) -> u32 {
        if self.len == 0 {
            0
        } else {
            4 + 8 * self.len as u32
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Packet {
    /// Unique id within a run, assigned by the engine at creation.
    pub uid: u64,
    /// Size on the wire at the IP layer, headers included, in bytes.
    pub size: u32,
    /// Engine-wide flow index (one per transport connection / stream and direction group).
    pub flow: u32,
    /// Source and destination node addresses (the engine's node ids).
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: Proto,
    /// Priority class for class-based disciplines: 0 = unclassified, 1 = lowest ... 3 = highest.
    pub class: u8,
    /// DiffServ code point (6 bits).
    pub dscp: u8,
    pub ecn: Ecn,
    /// Transport sequence number: first payload byte for TCP data, RTP-like sequence for UDP.
    pub seq: u64,
    /// Cumulative acknowledgment number (TCP ACKs only).
    pub ack: u64,
    /// Transport payload bytes (TCP/UDP data, excluding headers).
    pub payload: u32,
    pub tcp_flags: u8,
    /// ECN-Echo flag on a TCP ACK (RFC 3168 section 6.1.3).
    pub ece: bool,
    /// Number of SACK blocks this TCP ACK carries (0 unless the connection uses SACK). The
    /// blocks themselves travel beside the packet, in the engine, keyed by `uid`: they exist
    /// only on ACKs during loss recovery, and keeping them out of every packet keeps `Packet`
    /// at 80 bytes instead of 136 (the copies dominate the simulator's per-packet cost).
    pub sack_blocks: u8,
    /// When the sender created this packet.
    pub sent_at: Time,
    /// Set by the queue wrapper when the packet enters a discipline; used for sojourn times.
    pub enqueued_at: Time,
    /// Application metadata: frame number, type, fragment index and count.
    pub frame_id: u32,
    pub frame_type: FrameType,
    pub frag_index: u16,
    pub frag_count: u16,
}

impl Packet {
    pub fn is_tcp_data(&self) -> bool {
        self.proto == Proto::Tcp && self.payload > 0
    }
}

#[cfg(test)]
mod tests {
    use super::Packet;

    #[test]
    fn packet_stays_small() {
        // Every hop copies packets several times; growing this struct costs speed directly
        // (SACK blocks travel beside the packet for that reason).
        assert!(std::mem::size_of::<Packet>() <= 80, "{}", std::mem::size_of::<Packet>());
    }
}
