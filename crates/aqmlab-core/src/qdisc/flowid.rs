//! Flow identification and the bounded per-flow state shared by the per-flow disciplines
//! ([`super::sqf`], [`super::drr`], [`super::pfq`]).
//!
//! **Flow key.** Bonald, Muscariello and Ostallo ("Self-Prioritization of Audio and Video
//! Traffic", ICC 2011, section III-A) identify a flow "either through the 5-tuple of the IP
//! header, or through some pre-defined part of it", e.g. the source port alone on a user's
//! upstream so that all packets of one application (all peers of a P2P swarm) form one flow.
//! [`FlowKeyConfig`] lists the header fields that form the key; the default is the full
//! 5-tuple (src, dst, sport, dport, proto). The key is a `u64`. When the chosen fields total
//! at most 64 bits (addresses and `flow` count 32, ports 16, proto 8: e.g. `["sport"]`,
//! `["src", "dst"]`, `["dst", "sport", "dport"]`) they are packed exactly, so distinct
//! tuples never share a queue; wider keys such as the full 5-tuple (104 bits) are folded with a
//! fixed SplitMix64 chain, so two flows share a queue only on a 64-bit collision (about
//! n^2 / 2^65 for n simultaneously active flows, 3e-12 for n = 10 000). The order in which
//! fields are listed does not matter.
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

use crate::packet::{Packet, Proto};
use crate::units::Limit;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A header field that can be part of a flow key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowField {
    /// Source address (the engine's node id).
    Src,
    /// Destination address.
    Dst,
    /// Source port.
    Sport,
    /// Destination port.
    Dport,
    /// Transport protocol.
    Proto,
    /// The engine's own flow index ([`Packet::flow`]): exact in the simulator, but not a header
    /// field a real router could see.
    Flow,
}

impl FlowField {
    pub const ALL: [FlowField; 6] =
        [FlowField::Src, FlowField::Dst, FlowField::Sport, FlowField::Dport, FlowField::Proto, FlowField::Flow];

    pub fn name(self) -> &'static str {
        match self {
            FlowField::Src => "src",
            FlowField::Dst => "dst",
            FlowField::Sport => "sport",
            FlowField::Dport => "dport",
            FlowField::Proto => "proto",
            FlowField::Flow => "flow",
        }
    }

    fn bits(self) -> u32 {
        match self {
            FlowField::Src | FlowField::Dst | FlowField::Flow => 32,
            FlowField::Sport | FlowField::Dport => 16,
            FlowField::Proto => 8,
        }
    }

    fn value(self, p: &Packet) -> u64 {
        match self {
            FlowField::Src => p.src as u64,
            FlowField::Dst => p.dst as u64,
            FlowField::Sport => p.sport as u64,
            FlowField::Dport => p.dport as u64,
            FlowField::Proto => match p.proto {
                Proto::Tcp => 6,
                Proto::Udp => 17,
            },
            FlowField::Flow => p.flow as u64,
        }
    }
}

/// Which header fields identify a flow. Scenario form: `flow_key = { fields = ["sport"] }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowKeyConfig {
    /// Fields forming the key, in any order; default the 5-tuple src, dst, sport, dport, proto.
    pub fields: Vec<FlowField>,
}

impl Default for FlowKeyConfig {
    fn default() -> Self {
        FlowKeyConfig {
            fields: vec![FlowField::Src, FlowField::Dst, FlowField::Sport, FlowField::Dport, FlowField::Proto],
        }
    }
}

impl FlowKeyConfig {
    /// The 5-tuple (the default).
    pub fn five_tuple() -> Self {
        Self::default()
    }

    /// Any subset of the fields, e.g. `FlowKeyConfig::of(&[FlowField::Sport])`.
    pub fn of(fields: &[FlowField]) -> Self {
        FlowKeyConfig { fields: fields.to_vec() }
    }

    /// Errors start with `flow_key.fields` so that a discipline can return them unchanged.
    pub fn validate(&self) -> Result<(), String> {
        if self.fields.is_empty() {
            return Err("flow_key.fields: must list at least one of src, dst, sport, dport, proto, flow".into());
        }
        for (i, f) in self.fields.iter().enumerate() {
            if self.fields[..i].contains(f) {
                return Err(format!("flow_key.fields: {:?} is listed twice", f.name()));
            }
        }
        Ok(())
    }
}

/// [`FlowKeyConfig`] compiled for per-packet use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKeyer {
    /// Bit i set when `FlowField::ALL[i]` is part of the key.
    mask: u8,
    /// Whether the chosen fields fit in 64 bits and are packed without hashing.
    exact: bool,
}

impl FlowKeyer {
    pub fn new(cfg: &FlowKeyConfig) -> FlowKeyer {
        let mut mask = 0u8;
        for f in &cfg.fields {
            mask |= 1 << (*f as u8);
        }
        let bits: u32 = FlowField::ALL.iter().filter(|f| mask & (1 << (**f as u8)) != 0).map(|f| f.bits()).sum();
        FlowKeyer { mask, exact: bits <= 64 }
    }

    /// The flow key of `p`.
    pub fn key(&self, p: &Packet) -> u64 {
        let mut k: u64 = 0;
        for (i, f) in FlowField::ALL.iter().enumerate() {
            if self.mask & (1 << i) == 0 {
                continue;
            }
            let v = f.value(p);
            k = if self.exact {
                // Shifting by the width keeps the packing injective; `checked_shl` only guards
                // the 64-bit case where k is still 0.
                k.checked_shl(f.bits()).unwrap_or(0) | v
            } else {
                splitmix64(k ^ v ^ ((i as u64) << 56))
            };
        }
        k
    }
}

/// The flow key of `p` under `cfg` (see the module docs for exactness).
pub fn flow_key(cfg: &FlowKeyConfig, p: &Packet) -> u64 {
    FlowKeyer::new(cfg).key(p)
}

pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A deterministic hasher for flow keys (exactly packed keys are not well spread on their own).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = splitmix64(self.0 ^ *b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = splitmix64(self.0 ^ v);
    }
}

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
pub(crate) mod tests {
    use super::*;
    use crate::qdisc::drr::{Drr, DrrConfig};
    use crate::qdisc::fq_codel::{FqCodel, FqCodelConfig};
    use crate::qdisc::pfq::{Pfq, PfqConfig};
    use crate::qdisc::sqf::{Sqf, SqfConfig};
    use crate::qdisc::{Evicted, Qdisc, Queue, Verdict};
    use crate::rng::SimRng;
    use crate::units::Time;
    use proptest::prelude::*;
    use std::sync::{Arc, Mutex};

    fn tuple(src: u32, dst: u32, sport: u16, dport: u16, proto: Proto) -> Packet {
        Packet { src, dst, sport, dport, proto, size: 100, ..Packet::default() }
    }

    #[test]
    fn five_tuple_is_the_default_and_tells_every_field_apart() {
        let k = FlowKeyer::new(&FlowKeyConfig::default());
        let base = tuple(1, 2, 3, 4, Proto::Tcp);
        let variants = [
            tuple(9, 2, 3, 4, Proto::Tcp),
            tuple(1, 9, 3, 4, Proto::Tcp),
            tuple(1, 2, 9, 4, Proto::Tcp),
            tuple(1, 2, 3, 9, Proto::Tcp),
            tuple(1, 2, 3, 4, Proto::Udp),
            tuple(2, 1, 4, 3, Proto::Tcp), // the reverse direction is another flow
        ];
        for v in variants {
            assert_ne!(k.key(&base), k.key(&v), "{v:?}");
        }
        // Fields outside the key do not matter.
        let mut same = base;
        same.flow = 77;
        same.size = 1500;
        same.class = 3;
        assert_eq!(k.key(&base), k.key(&same));
    }

    #[test]
    fn source_port_aggregates_all_destinations() {
        let cfg = FlowKeyConfig::of(&[FlowField::Sport]);
        let a = tuple(1, 2, 5000, 80, Proto::Tcp);
        let b = tuple(1, 7, 5000, 6881, Proto::Udp);
        let c = tuple(1, 2, 5001, 80, Proto::Tcp);
        assert_eq!(flow_key(&cfg, &a), flow_key(&cfg, &b));
        assert_ne!(flow_key(&cfg, &a), flow_key(&cfg, &c));
        // Packed exactly: the key is the port itself.
        assert_eq!(flow_key(&cfg, &a), 5000);
    }

    #[test]
    fn field_order_does_not_matter_and_small_keys_are_exact() {
        let a = FlowKeyConfig::of(&[FlowField::Dport, FlowField::Sport, FlowField::Src]);
        let b = FlowKeyConfig::of(&[FlowField::Src, FlowField::Sport, FlowField::Dport]);
        let p = tuple(0xdead_beef, 5, 0x1234, 0x5678, Proto::Tcp);
        assert_eq!(flow_key(&a, &p), flow_key(&b, &p));
        assert_eq!(flow_key(&a, &p), (0xdead_beef << 32) | (0x1234 << 16) | 0x5678);
        // src + dst is exactly 64 bits: still packed, injective.
        let sd = FlowKeyConfig::of(&[FlowField::Src, FlowField::Dst]);
        assert_eq!(flow_key(&sd, &tuple(u32::MAX, 1, 0, 0, Proto::Tcp)), (u32::MAX as u64) << 32 | 1);
    }

    #[test]
    fn hashed_five_tuple_keys_do_not_collide_on_a_dense_grid() {
        let k = FlowKeyer::new(&FlowKeyConfig::default());
        let mut seen = std::collections::HashSet::new();
        for src in 0..20u32 {
            for dst in 0..20u32 {
                for sport in 0..25u16 {
                    for proto in [Proto::Tcp, Proto::Udp] {
                        assert!(seen.insert(k.key(&tuple(src, dst, 10_000 + sport, 80, proto))));
                    }
                }
            }
        }
    }

    #[test]
    fn key_config_validation_names_the_field() {
        let e = FlowKeyConfig { fields: vec![] }.validate().unwrap_err();
        assert!(e.starts_with("flow_key.fields"), "{e}");
        let e = FlowKeyConfig::of(&[FlowField::Sport, FlowField::Sport]).validate().unwrap_err();
        assert!(e.starts_with("flow_key.fields") && e.contains("sport"), "{e}");
        assert!(FlowKeyConfig::default().validate().is_ok());
    }

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

    // ---- property test over all three per-flow disciplines ----------------------------

    /// What the property test needs from a per-flow discipline besides `Qdisc`.
    pub(crate) trait Inspect: Qdisc {
        fn active_flows(&self) -> usize;
        fn check(&self) -> Result<(), String>;
    }

    /// Forwards to a discipline inside `Queue` and checks, after every operation, its internal
    /// consistency and that it holds no more flow entries than packets.
    struct Probe<Q> {
        inner: Q,
        fault: Fault,
    }

    impl<Q: Inspect> Probe<Q> {
        fn audit(&self) {
            let r = self.inner.check().and_then(|_| {
                if self.inner.active_flows() > self.inner.len_packets() {
                    Err(format!("{} flow entries for {} packets", self.inner.active_flows(), self.inner.len_packets()))
                } else {
                    Ok(())
                }
            });
            if let Err(e) = r {
                self.fault.lock().unwrap().get_or_insert(e);
            }
        }
    }

    impl<Q: Inspect> Qdisc for Probe<Q> {
        fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, ev: &mut Vec<Evicted>) -> Verdict {
            let v = self.inner.enqueue(pkt, now, rng, ev);
            self.audit();
            v
        }
        fn dequeue(&mut self, now: Time) -> Option<Packet> {
            let p = self.inner.dequeue(now);
            self.audit();
            p
        }
        fn take_dequeue_drops(&mut self, out: &mut Vec<Evicted>) {
            self.inner.take_dequeue_drops(out)
        }
        fn dequeue_marked(&self) -> bool {
            self.inner.dequeue_marked()
        }
        fn len_packets(&self) -> usize {
            self.inner.len_packets()
        }
        fn len_bytes(&self) -> u64 {
            self.inner.len_bytes()
        }
        fn kind(&self) -> &'static str {
            self.inner.kind()
        }
    }

    fn probed<Q: Inspect + 'static>(q: Q) -> (Queue, Fault) {
        let fault = Arc::new(Mutex::new(None));
        (Queue::new(Box::new(Probe { inner: q, fault: fault.clone() })), fault)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Arrive { size: u32, flow: u16, port: u16 },
        Depart,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (prop_oneof![Just(40u32), Just(1500u32), 1u32..1600], 0u16..60, 0u16..3)
                .prop_map(|(size, flow, port)| Op::Arrive { size, flow, port }),
            3 => Just(Op::Depart),
        ]
    }

    type Fault = Arc<Mutex<Option<String>>>;
    type Make = Box<dyn Fn() -> (Queue, Fault)>;

    fn disciplines() -> Vec<(String, Limit, Make)> {
        let mut v: Vec<(String, Limit, Make)> = Vec::new();
        let sport = FlowKeyConfig::of(&[FlowField::Sport]);
        for limit in [Limit::Packets(1), Limit::Packets(7), Limit::Packets(25), Limit::Bytes(1600), Limit::Bytes(9000)] {
            for key in [FlowKeyConfig::default(), sport.clone()] {
                let k = key.clone();
                v.push((format!("sqf {limit:?} {key:?}"), limit, Box::new(move || {
                    probed(Sqf::new(SqfConfig { limit, flow_key: k.clone() }))
                })));
                for quantum in [1500u32, 300] {
                    let k = key.clone();
                    v.push((format!("drr {limit:?} q{quantum} {key:?}"), limit, Box::new(move || {
                        probed(Drr::new(DrrConfig { limit, quantum, flow_key: k.clone() }))
                    })));
                    for threshold in [0u32, 1500, 3000] {
                        let k = key.clone();
                        v.push((format!("pfq {limit:?} q{quantum} t{threshold} {key:?}"), limit, Box::new(move || {
                            probed(Pfq::new(PfqConfig { limit, quantum, priority_threshold: threshold, flow_key: k.clone() }))
                        })));
                    }
                    for flows in [4u32, 1024] {
                        let k = key.clone();
                        v.push((format!("fq_codel {limit:?} q{quantum} {flows} buckets {key:?}"), limit, Box::new(move || {
                            probed(FqCodel::new(FqCodelConfig { limit, quantum, flows, drop_batch: 3, flow_key: k.clone(), ..FqCodelConfig::default() }))
                        })));
                    }
                }
            }
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn per_flow_disciplines_keep_books_limits_and_bounded_state(ops in prop::collection::vec(op(), 1..400)) {
            for (name, limit, make) in disciplines() {
                let (mut q, fault) = make();
                let mut rng = SimRng::stream(1, "prop");
                let mut last_out: HashMap<u64, u64> = HashMap::new();
                // A clock of 2 ms per operation, so that FQ-CoDel's CoDel drops at the head.
                let at = |i: usize| Time::from_millis(2 * i as u64);
                for (uid, op) in ops.iter().enumerate() {
                    match *op {
                        Op::Arrive { size, flow, port } => {
                            let p = Packet {
                                uid: uid as u64, size, flow: flow as u32,
                                src: (flow % 7) as u32, dst: 100, sport: 1000 + flow, dport: 80 + port,
                                ecn: if port == 2 { crate::packet::Ecn::Ect0 } else { crate::packet::Ecn::NotEct },
                                ..Packet::default()
                            };
                            q.enqueue(p, at(uid), &mut rng);
                        }
                        Op::Depart => {
                            if let Some(p) = q.dequeue(at(uid)) {
                                // Packets of one 5-tuple never overtake each other.
                                let k = ((p.flow as u64) << 16) | p.dport as u64;
                                if let Some(prev) = last_out.insert(k, p.uid) {
                                    prop_assert!(prev < p.uid, "{}: reordered {} after {}", name, p.uid, prev);
                                }
                            }
                        }
                    }
                    prop_assert!(q.check_invariants().is_ok(), "{}: {}", name, q.check_invariants().unwrap_err());
                    prop_assert!(within(limit, q.len_packets(), q.len_bytes()), "{} over its limit", name);
                    let f = fault.lock().unwrap().clone();
                    prop_assert!(f.is_none(), "{}: {:?}", name, f);
                }
                // Work conserving: everything queued can be served, then no state remains.
                let mut n = 0;
                while q.dequeue(at(ops.len())).is_some() {
                    n += 1;
                    prop_assert!(n <= 100_000, "{}: dequeue does not terminate", name);
                }
                prop_assert_eq!((q.len_packets(), q.len_bytes()), (0, 0), "{}", name);
                prop_assert!(q.check_invariants().is_ok());
                let fault = fault.lock().unwrap().clone();
                prop_assert!(fault.is_none(), "{}: {:?}", name, fault);
            }
        }
    }
}
