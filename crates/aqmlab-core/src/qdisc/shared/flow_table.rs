//! The bounded per-flow state shared by the per-flow disciplines ([`crate::qdisc::sqf`],
//! [`crate::qdisc::drr`], [`crate::qdisc::pfq`]); flows are told apart by [`super::flow_key`].
//!
//! **Bounded state.** "A flow is said to be active if it has at least one packet in the
//! buffer" (section III-B), and only active flows have state: the flow table removes a flow's
//! entry when its last packet leaves (served, or pushed out by longest queue drop), so there are
//! never more entries than packets queued, however many flows have been seen, and "the number
//! of active flows is upper bounded by the buffer size, which makes the scheduler perfectly
//! scalable". Entries live in a slab whose free slots are reused, and a per-flow buffer shrinks
//! as its flow drains, so memory is linear in the most packets the buffer has held.
//!
//! **Ordered index.** Every active flow is ranked by `(bytes queued, arrival number of its head
//! packet)`, a key no two flows share. The smallest is the flow SQF serves (fewest bytes; among
//! equals the flow whose head packet has waited longest, i.e. FIFO among equals), the largest
//! the victim of longest queue drop (most bytes; among equals the flow whose head packet
//! arrived last). The table keeps a min-heap and a max-heap of active flows on that key, each
//! flow knowing its position in both, so reading either end is O(1) and every change to a
//! flow is O(log n) in the number n of active flows. (An ordered set gives the same answers,
//! as the keys are unique, but measured three to five times slower per packet.)
//!
//! **Longest queue drop (LQD).** Algorithm 1 of the paper first enqueues the arrival in its
//! flow's virtual queue and then, if the buffer is over its size, drops from the longest
//! virtual queue. The table's `lqd` does exactly that, counting the arrival in its own flow:
//! it takes the *tail* of the longest flow (its most recent packet, as Linux `sfq`'s LQD does
//! by default) until the buffer is within its limit. When the longest flow is the arrival's own,
//! its tail is the arrival itself: the arrival is refused (`Overflow`) and any packet chosen
//! before it (possible only with a byte limit, where several packets may be needed) is put
//! back, so an arrival either gets in, pushing out only what is needed, or is refused with
//! nothing else touched. Arrival numbers and the per-flow order are restored exactly.
//!
//! Nothing here iterates a hash map, so no decision depends on hash order; the map's hasher is
//! a fixed SplitMix64 finalizer, not a per-process random seed.

use super::flow_key::KeyHasher;
use crate::packet::Packet;
use crate::units::Limit;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

/// Slot index in a [`FlowTable`]; `NIL` is "none" in intrusive lists.
pub(crate) type Slot = u32;
pub(crate) const NIL: Slot = Slot::MAX;

/// A queued packet with its arrival number (unique, increasing) and, for PFQ, whether it sits
/// in the priority queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub pkt: Packet,
    pub seq: u64,
    pub prio: bool,
}

/// One active flow: its virtual FIFO and the discipline's own per-flow state `x`.
pub(crate) struct Flow<X> {
    pub key: u64,
    pub bytes: u64,
    pub q: VecDeque<Entry>,
    pub x: X,
    live: bool,
    /// Arrival number of the head packet (meaningful while `q` is not empty).
    head_seq: u64,
    /// Positions in the min- and max-heaps (`NIL` while empty).
    pos: [u32; 2],
}

/// The set of active flows (see the module docs). Disciplines change queues only through it,
/// so that the byte counts, the totals and the heaps always agree.
pub(crate) struct FlowTable<X> {
    flows: Vec<Flow<X>>,
    free: Vec<Slot>,
    by_key: HashMap<u64, Slot, BuildHasherDefault<KeyHasher>>,
    /// Non-empty flows, heap-ordered by (bytes, head arrival number): `heaps[MIN]` has the
    /// smallest on top, `heaps[MAX]` the largest.
    heaps: [Vec<Slot>; 2],
    next_seq: u64,
    packets: usize,
    bytes: u64,
}

const MIN: usize = 0;
const MAX: usize = 1;

/// Per-flow buffers above this many packets are given back when the flow goes idle.
const KEEP_CAPACITY: usize = 16;

impl<X> FlowTable<X> {
    pub fn new() -> Self {
        FlowTable {
            flows: Vec::new(),
            free: Vec::new(),
            by_key: HashMap::default(),
            heaps: [Vec::new(), Vec::new()],
            next_seq: 0,
            packets: 0,
            bytes: 0,
        }
    }

    pub fn packets(&self) -> usize {
        self.packets
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Number of flows holding state (always <= `packets()` between operations).
    pub fn active_flows(&self) -> usize {
        self.by_key.len()
    }

    pub fn flow(&self, s: Slot) -> &Flow<X> {
        &self.flows[s as usize]
    }
    pub fn x_mut(&mut self, s: Slot) -> &mut X {
        &mut self.flows[s as usize].x
    }

    /// The slot of `key`, creating the flow with state `init()` if it has none.
    pub fn get_or_insert(&mut self, key: u64, init: impl FnOnce() -> X) -> Slot {
        if let Some(&s) = self.by_key.get(&key) {
            return s;
        }
        let s = match self.free.pop() {
            Some(s) => {
                let f = &mut self.flows[s as usize];
                f.key = key;
                f.bytes = 0;
                f.x = init();
                f.live = true;
                f.pos = [NIL; 2];
                s
            }
            None => {
                self.flows.push(Flow { key, bytes: 0, q: VecDeque::new(), x: init(), live: true, head_seq: 0, pos: [NIL; 2] });
                (self.flows.len() - 1) as Slot
            }
        };
        self.by_key.insert(key, s);
        s
    }

    /// Applies `change` to flow `s`, keeping the heaps in step.
    fn reindex<R>(&mut self, s: Slot, change: impl FnOnce(&mut Flow<X>) -> R) -> R {
        let f = &mut self.flows[s as usize];
        let was_queued = !f.q.is_empty();
        let r = change(f);
        let now_queued = match f.q.front() {
            Some(e) => {
                f.head_seq = e.seq;
                true
            }
            None => false,
        };
        for h in [MIN, MAX] {
            match (was_queued, now_queued) {
                (false, true) => self.heap_push(h, s),
                (true, false) => self.heap_remove(h, s),
                (true, true) => self.heap_fix(h, s),
                (false, false) => {}
            }
        }
        r
    }

    // ---- indexed binary heaps -----------------------------------------------------------

    /// Whether flow `a` belongs above flow `b` in heap `h`.
    fn above(&self, h: usize, a: Slot, b: Slot) -> bool {
        let (fa, fb) = (&self.flows[a as usize], &self.flows[b as usize]);
        let (ka, kb) = ((fa.bytes, fa.head_seq), (fb.bytes, fb.head_seq));
        if h == MIN {
            ka < kb
        } else {
            ka > kb
        }
    }

    fn heap_swap(&mut self, h: usize, i: usize, j: usize) {
        self.heaps[h].swap(i, j);
        let (a, b) = (self.heaps[h][i], self.heaps[h][j]);
        self.flows[a as usize].pos[h] = i as u32;
        self.flows[b as usize].pos[h] = j as u32;
    }

    fn sift_up(&mut self, h: usize, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.above(h, self.heaps[h][i], self.heaps[h][parent]) {
                break;
            }
            self.heap_swap(h, i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, h: usize, mut i: usize) {
        let n = self.heaps[h].len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let mut child = left;
            if left + 1 < n && self.above(h, self.heaps[h][left + 1], self.heaps[h][left]) {
                child = left + 1;
            }
            if !self.above(h, self.heaps[h][child], self.heaps[h][i]) {
                break;
            }
            self.heap_swap(h, i, child);
            i = child;
        }
    }

    fn heap_push(&mut self, h: usize, s: Slot) {
        let i = self.heaps[h].len();
        self.heaps[h].push(s);
        self.flows[s as usize].pos[h] = i as u32;
        self.sift_up(h, i);
    }

    fn heap_remove(&mut self, h: usize, s: Slot) {
        let i = self.flows[s as usize].pos[h] as usize;
        let last = self.heaps[h].len() - 1;
        self.heap_swap(h, i, last);
        self.heaps[h].pop();
        self.flows[s as usize].pos[h] = NIL;
        if i < last {
            // The former last element now sits at i: it may belong higher or lower.
            let moved = self.heaps[h][i];
            self.heap_fix(h, moved);
        }
    }

    fn heap_fix(&mut self, h: usize, s: Slot) {
        self.sift_up(h, self.flows[s as usize].pos[h] as usize);
        self.sift_down(h, self.flows[s as usize].pos[h] as usize);
    }

    fn push_entry(&mut self, s: Slot, e: Entry) {
        let size = e.pkt.size as u64;
        self.reindex(s, |f| {
            f.bytes += size;
            f.q.push_back(e);
        });
        self.packets += 1;
        self.bytes += size;
    }

    /// Appends `pkt` to flow `s`; returns its arrival number.
    pub fn push_back(&mut self, s: Slot, pkt: Packet, prio: bool) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.push_entry(s, Entry { pkt, seq, prio });
        seq
    }

    fn take(&mut self, s: Slot, front: bool) -> Option<Entry> {
        let e = self.reindex(s, |f| {
            let e = if front { f.q.pop_front() } else { f.q.pop_back() }?;
            f.bytes -= e.pkt.size as u64;
            // Halve a buffer that is three quarters empty: amortized O(1), and capacity stays
            // below 4 x length + KEEP_CAPACITY x 4.
            if f.q.capacity() > 4 * KEEP_CAPACITY && 4 * f.q.len() < f.q.capacity() {
                f.q.shrink_to(f.q.capacity() / 2);
            }
            Some(e)
        })?;
        self.packets -= 1;
        self.bytes -= e.pkt.size as u64;
        Some(e)
    }

    /// Removes the head of flow `s`. The flow keeps its slot until [`Self::release_if_empty`].
    pub fn pop_front(&mut self, s: Slot) -> Option<Entry> {
        self.take(s, true)
    }

    /// Removes the tail of flow `s`.
    pub fn pop_back(&mut self, s: Slot) -> Option<Entry> {
        self.take(s, false)
    }

    /// Frees flow `s` if it is live and has no packet left; true if it did.
    pub fn release_if_empty(&mut self, s: Slot) -> bool {
        let f = &mut self.flows[s as usize];
        if !f.live || !f.q.is_empty() {
            return false;
        }
        f.live = false;
        if f.q.capacity() > KEEP_CAPACITY {
            f.q = VecDeque::new();
        }
        self.by_key.remove(&f.key);
        self.free.push(s);
        true
    }

    /// The flow with the fewest bytes queued; among equals, the one whose head arrived first.
    pub fn shortest(&self) -> Option<Slot> {
        self.heaps[MIN].first().copied()
    }

    /// The flow with the most bytes queued; among equals, the one whose head arrived last.
    pub fn longest(&self) -> Option<Slot> {
        self.heaps[MAX].first().copied()
    }

    /// Longest queue drop after the arrival has been appended to flow `arrival` (module docs).
    ///
    /// Returns true if the arrival stays; `victims` then holds the packets pushed out, each
    /// with its flow, in the order they were chosen. Returns false if the arrival itself was
    /// chosen: it has been removed again, `victims` is empty and every other flow is as before.
    /// Victim flows (and a refused arrival's flow) may be left empty and still hold their slot:
    /// the caller settles its own per-flow state, then calls [`Self::release_if_empty`].
    pub fn lqd(&mut self, limit: Limit, arrival: Slot, victims: &mut Vec<(Slot, Entry)>) -> bool {
        victims.clear();
        while !within(limit, self.packets, self.bytes) {
            let Some(v) = self.longest() else { break };
            if v == arrival {
                while let Some((s, e)) = victims.pop() {
                    self.push_entry(s, e);
                }
                self.pop_back(arrival);
                return false;
            }
            match self.pop_back(v) {
                Some(e) => victims.push((v, e)),
                None => break,
            }
        }
        true
    }

    /// Slots of the live flows, for tests.
    #[cfg(test)]
    pub fn live_slots(&self) -> Vec<Slot> {
        self.flows.iter().enumerate().filter(|(_, f)| f.live).map(|(i, _)| i as Slot).collect()
    }

    /// Internal consistency, for tests: totals, per-flow bytes, heaps, key map, no idle state.
    #[cfg(test)]
    pub fn check(&self) -> Result<(), String> {
        let (mut packets, mut bytes, mut live) = (0usize, 0u64, 0usize);
        for (i, f) in self.flows.iter().enumerate() {
            if !f.live {
                if !f.q.is_empty() {
                    return Err(format!("free slot {i} holds packets"));
                }
                continue;
            }
            live += 1;
            if f.q.is_empty() {
                return Err(format!("flow {:#x} is live with no packet", f.key));
            }
            let b: u64 = f.q.iter().map(|e| e.pkt.size as u64).sum();
            if b != f.bytes {
                return Err(format!("flow {:#x}: bytes {} != sum {}", f.key, f.bytes, b));
            }
            if !f.q.iter().zip(f.q.iter().skip(1)).all(|(a, b)| a.seq < b.seq) {
                return Err(format!("flow {:#x} out of arrival order", f.key));
            }
            if self.by_key.get(&f.key) != Some(&(i as Slot)) {
                return Err(format!("flow {:#x} missing from the key map", f.key));
            }
            if f.head_seq != f.q[0].seq {
                return Err(format!("flow {:#x}: stale head arrival number", f.key));
            }
            for h in [MIN, MAX] {
                if self.heaps[h].get(f.pos[h] as usize) != Some(&(i as Slot)) {
                    return Err(format!("flow {:#x} misplaced in heap {h}", f.key));
                }
            }
            packets += f.q.len();
            bytes += b;
        }
        if live != self.by_key.len() || live != self.heaps[MIN].len() || live != self.heaps[MAX].len() {
            return Err(format!("{} live, {} keys, {:?} in heaps", live, self.by_key.len(), self.heaps.each_ref().map(|h| h.len())));
        }
        for h in [MIN, MAX] {
            for i in 1..self.heaps[h].len() {
                if self.above(h, self.heaps[h][i], self.heaps[h][(i - 1) / 2]) {
                    return Err(format!("heap {h} out of order at {i}"));
                }
            }
        }
        if packets != self.packets || bytes != self.bytes {
            return Err(format!("totals {}p/{}B != {}p/{}B", self.packets, self.bytes, packets, bytes));
        }
        if live > packets {
            return Err(format!("{live} flows hold state for {packets} packets"));
        }
        Ok(())
    }
}

/// Whether a buffer holding `packets`/`bytes` respects `limit` (the arrival already counted).
pub(crate) fn within(limit: Limit, packets: usize, bytes: u64) -> bool {
    match limit {
        Limit::Packets(n) => packets as u64 <= n,
        Limit::Bytes(b) => bytes <= b,
    }
}

/// Whether a packet of `size` bytes can never fit under `limit`, even in an empty buffer.
pub(crate) fn never_fits(limit: Limit, size: u32) -> bool {
    !limit.admits(0, 0, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of<X>(t: &FlowTable<X>, s: Slot) -> Vec<(u64, u32)> {
        t.flow(s).q.iter().map(|e| (e.seq, e.pkt.size)).collect()
    }

    /// A = 4 x 400 B, B = 700 B: 2300 B under a 2500 B limit.
    fn two_flows() -> (FlowTable<()>, Slot, Slot) {
        let mut t: FlowTable<()> = FlowTable::new();
        let a = t.get_or_insert(1, || ());
        let b = t.get_or_insert(2, || ());
        for _ in 0..4 {
            t.push_back(a, Packet { size: 400, ..Packet::default() }, false);
        }
        t.push_back(b, Packet { size: 700, ..Packet::default() }, false);
        (t, a, b)
    }

    #[test]
    fn lqd_evicts_tails_of_the_longest_until_the_arrival_fits() {
        let (mut t, a, _) = two_flows();
        let a_seqs: Vec<u64> = t.flow(a).q.iter().map(|e| e.seq).collect();
        // 900 B for a new flow C: 3200 B. A (1600) loses its tail -> 1200, still 2800 over;
        // A (1200) is still longest (C 900, B 700) -> 800; 2400 fits.
        let c = t.get_or_insert(3, || ());
        t.push_back(c, Packet { size: 900, ..Packet::default() }, false);
        let mut victims = Vec::new();
        assert!(t.lqd(Limit::Bytes(2500), c, &mut victims));
        let got: Vec<(Slot, u64)> = victims.iter().map(|(s, e)| (*s, e.seq)).collect();
        assert_eq!(got, vec![(a, a_seqs[3]), (a, a_seqs[2])]);
        assert_eq!((t.packets(), t.bytes()), (4, 2400));
        t.check().unwrap();
    }

    #[test]
    fn lqd_refusal_puts_earlier_victims_back() {
        let (mut t, a, b) = two_flows();
        let a_before = bytes_of(&t, a);
        let b_before = bytes_of(&t, b);
        // 700 B for B: B = 1400, total 3000. A (1600) is longest: its tail goes (A 1200, total
        // 2600, still over). Now B (1400, the arrival's flow) is longest: the arrival is refused
        // and A's packet is put back where it was.
        t.push_back(b, Packet { size: 700, ..Packet::default() }, false);
        let mut victims = Vec::new();
        assert!(!t.lqd(Limit::Bytes(2500), b, &mut victims));
        assert!(victims.is_empty());
        assert_eq!(bytes_of(&t, a), a_before);
        assert_eq!(bytes_of(&t, b), b_before);
        assert_eq!((t.packets(), t.bytes()), (5, 2300));
        t.check().unwrap();
    }

    #[test]
    fn lqd_refuses_at_once_when_the_arrival_flow_is_longest() {
        let (mut t, a, _) = two_flows();
        let a_before = bytes_of(&t, a);
        t.push_back(a, Packet { size: 400, ..Packet::default() }, false); // A = 2000, total 2700
        let mut victims = Vec::new();
        assert!(!t.lqd(Limit::Bytes(2500), a, &mut victims));
        assert_eq!(bytes_of(&t, a), a_before);
        // In packet mode too: 5 packets over a limit of 5 with A longest.
        t.push_back(a, Packet { size: 400, ..Packet::default() }, false);
        assert!(!t.lqd(Limit::Packets(5), a, &mut victims));
        assert_eq!(t.packets(), 5);
        t.check().unwrap();
    }

    #[test]
    fn a_draining_flow_gives_memory_back() {
        let mut t: FlowTable<()> = FlowTable::new();
        let s = t.get_or_insert(1, || ());
        for _ in 0..10_000 {
            t.push_back(s, Packet { size: 40, ..Packet::default() }, false);
        }
        while t.packets() > 1 {
            t.pop_front(s);
        }
        assert!(t.flow(s).q.capacity() <= 4 * KEEP_CAPACITY * 2, "{}", t.flow(s).q.capacity());
        t.check().unwrap();
    }

    #[test]
    fn idle_flows_leave_no_state_and_slots_are_reused() {
        let mut t: FlowTable<u8> = FlowTable::new();
        for key in 0..1000u64 {
            let s = t.get_or_insert(key, || 7);
            t.push_back(s, Packet { size: 100, ..Packet::default() }, false);
            t.pop_front(s);
            assert!(t.release_if_empty(s));
        }
        assert_eq!(t.active_flows(), 0);
        assert_eq!(t.flows.len(), 1, "one slot reused for all 1000 flows");
        t.check().unwrap();
    }
}
