//! Where the packets on exclusive links' wires wait (issue 22: cache misses per packet).
//!
//! An exclusive link (`exclusive.rs`) holds each accepted packet from its placement until it
//! reaches the far node, 1-40 ms later in the dumbbells. Kept in the link's own delay line, as a
//! shared link keeps them, each packet was written at the end of a line that the link had last
//! used one packet earlier, milliseconds before: at 10,000 flows (40,000 such links) nearly
//! every one of those writes missed the cache, and they were 56 % of the run's last-level write
//! misses (cachegrind, benches/README.md "Sixth round"); and a line that had emptied and shrunk
//! to save memory grew again by copying its 88-byte entries.
//!
//! So the packets of all exclusive links share one store, and each link's line keeps only the
//! arrival time and the packet's slot. A slot freed by an arrival is the next one handed out
//! (a stack of free slots): arrivals and placements alternate (a packet reaching its host is
//! answered by an ACK at once; one reaching a router is often followed by the next hop's
//! placement), so a packet is mostly written to the slot its predecessor was just read from,
//! which is in cache. Which slot a packet occupies changes no result: the lines keep their
//! order, and the events are the same.

use aqmlab_core::Packet;

/// Packets by slot; the free slots on a stack, the last freed on top.
#[derive(Debug, Default)]
pub(crate) struct PacketStore {
    packets: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketStore {
    /// Stores `p` and returns its slot: the last slot freed, or a new one.
    #[inline]
    pub(crate) fn put(&mut self, p: Packet) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.packets[slot as usize] = p;
                slot
            }
            None => {
                self.packets.push(p);
                u32::try_from(self.packets.len() - 1).expect("fewer than 2^32 packets in flight")
            }
        }
    }

    /// Takes the packet out of `slot`, which becomes the next one `put` hands out.
    #[inline]
    pub(crate) fn take(&mut self, slot: u32) -> Packet {
        self.free.push(slot);
        self.packets[slot as usize]
    }

    /// The packet in `slot`, for looking ahead (prefetching) only.
    #[inline]
    pub(crate) fn peek(&self, slot: u32) -> &Packet {
        &self.packets[slot as usize]
    }

    /// Packets stored and not yet taken.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.packets.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(uid: u64) -> Packet {
        Packet { uid, ..Packet::default() }
    }

    /// Each slot gives back what was put in it, however puts and takes interleave.
    #[test]
    fn gives_back_each_packet_from_its_slot() {
        let mut store = PacketStore::default();
        let a = store.put(packet(1));
        let b = store.put(packet(2));
        let c = store.put(packet(3));
        assert_eq!(store.take(b).uid, 2);
        let d = store.put(packet(4));
        assert_eq!((store.take(a).uid, store.take(d).uid, store.take(c).uid), (1, 4, 3));
        assert_eq!(store.len(), 0);
    }

    /// The slot freed last is handed out first (it is the one in cache), and the store grows
    /// only when no slot is free.
    #[test]
    fn reuses_the_slot_freed_last() {
        let mut store = PacketStore::default();
        let slots: Vec<u32> = (0..4).map(|i| store.put(packet(i))).collect();
        store.take(slots[1]);
        store.take(slots[3]);
        assert_eq!(store.put(packet(10)), slots[3]);
        assert_eq!(store.put(packet(11)), slots[1]);
        assert_eq!(store.put(packet(12)), 4, "a new slot once none is free");
        assert_eq!(store.len(), 5);
    }
}
