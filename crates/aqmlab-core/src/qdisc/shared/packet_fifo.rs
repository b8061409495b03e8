//! The FIFO with a byte count under every single-queue discipline.

use crate::packet::Packet;
use crate::units::Limit;
use std::collections::VecDeque;

/// A FIFO of packets that keeps its byte count: the storage of every single-queue discipline
/// (Drop-Tail, RED, Rb-RED, Rb-RIO, RIO), so that the byte accounting lives in one place.
#[derive(Debug, Default)]
pub struct PacketFifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl PacketFifo {
    /// Whether one more packet of `size` bytes fits within `limit`.
    pub fn admits(&self, limit: Limit, size: u32) -> bool {
        limit.admits(self.q.len(), self.bytes, size)
    }
    pub fn push(&mut self, p: Packet) {
        self.bytes += p.size as u64;
        self.q.push_back(p);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }
    /// The oldest packet, which `pop` would return.
    pub fn front(&self) -> Option<&Packet> {
        self.q.front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// The packets, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Packet> + '_ {
        self.q.iter()
    }
    /// Removes and returns the packet at position `i` (0 = oldest), as CAKE's ACK filter
    /// takes a queued ACK out of the middle of its flow.
    pub fn remove(&mut self, i: usize) -> Option<Packet> {
        let p = self.q.remove(i)?;
        self.bytes -= p.size as u64;
        Some(p)
    }
}
