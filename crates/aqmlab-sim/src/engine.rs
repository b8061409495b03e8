//! The event list: events pop in (time, insertion order). Ties at the same nanosecond are
//! broken by the order events were scheduled, which makes runs deterministic without any
//! reliance on the list's internals: (time, order) is a total order (orders are unique), so
//! every correct priority queue pops the same sequence.
//!
//! Structure: a hierarchical timing wheel (Varghese and Lauck's hashed wheels, two levels).
//! Time is cut into buckets of 2^12 ns (4.1 us). The bucket being drained is a sorted vector
//! (`current`); the rest of its millisecond (a "round", 2^8 buckets) is on the fine wheel, one
//! unsorted vector per bucket; the next `ROUNDS` rounds (134 ms: propagation and sampling
//! events) are on the coarse wheel, one unsorted vector per round, whose events move onto the
//! fine wheel when their round begins; events further ahead (RTO timers, flow stops) wait in
//! an overflow heap and move to the coarse wheel as it turns. Found through bitmaps of
//! non-empty slots. A pop then costs a share of sorting the few events of one 4 us bucket
//! instead of a heap operation on every pending event, which is what grows with the number of
//! flows (callgrind on the 60-flow Rb-RIO dumbbell put a third of all instructions in
//! `BinaryHeap::pop`).
//!
//! Why two levels: a scheduled event is written at the end of its slot's vector, and what
//! that costs is whether the vector's last cache line is still cached. With one wheel of 2^14
//! bucket-wide slots (the earlier design), a slot was last written a wheel's turn (67 ms)
//! before, and at 10,000 flows that store was the costliest instruction of the run: a miss on
//! nearly every event (benches/README.md, "Fifth round ...: the event list in two levels").
//! The two wheels' 384 vectors, of which only the few dozen rounds ahead are busy, keep their
//! ends in cache; an event more than its round ahead is written twice, both times to a cached
//! line. Results are the same either way: only the cost of keeping the order changed.

use aqmlab_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// log2 of a bucket's width in ns.
const BUCKET_SHIFT: u32 = 12;
/// log2 of the buckets in a round (the fine wheel's slots): a round is 2^20 ns, 1.05 ms.
const ROUND_SHIFT: u32 = 8;
/// Slots of the fine wheel: one per bucket of a round.
const FINE_SLOTS: usize = 1 << ROUND_SHIFT;
/// Slots of the coarse wheel, one per round (a multiple of 64 for the bitmap): 134 ms ahead.
const ROUNDS: u64 = 128;

#[derive(Clone, Copy)]
struct Scheduled<E> {
    at: Time,
    order: u64,
    event: E,
}

impl<E> Scheduled<E> {
    fn bucket(&self) -> u64 {
        self.at.as_nanos() >> BUCKET_SHIFT
    }
    fn round(&self) -> u64 {
        self.bucket() >> ROUND_SHIFT
    }
    fn key(&self) -> (Time, u64) {
        (self.at, self.order)
    }
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Scheduled<E> {}
impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Scheduled<E> {
    /// Reversed so that `BinaryHeap` (a max-heap) pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// One level of the wheel: an unsorted vector of events per slot (`N` slots, a multiple of
/// 64, a constant so that going round is a mask), and a bit per slot that is set when the slot
/// holds any.
struct Wheel<E, const N: usize> {
    slots: Vec<Vec<Scheduled<E>>>,
    occupied: Vec<u64>,
    len: usize,
}

impl<E, const N: usize> Wheel<E, N> {
    const WORDS: usize = N / 64;

    fn new() -> Self {
        const { assert!(N.is_power_of_two() && N >= 64) };
        Wheel { slots: (0..N).map(|_| Vec::new()).collect(), occupied: vec![0; Self::WORDS], len: 0 }
    }

    #[inline]
    fn push(&mut self, slot: usize, s: Scheduled<E>) {
        self.slots[slot].push(s);
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.len += 1;
    }

    /// Moves slot `slot`'s events into `into`, which must be empty: the two vectors swap, so
    /// the slot keeps `into`'s allocation for its next turn.
    fn take(&mut self, slot: usize, into: &mut Vec<Scheduled<E>>) {
        debug_assert!(into.is_empty());
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        std::mem::swap(into, &mut self.slots[slot]);
        self.len -= into.len();
    }

    /// Whether slot `slot` holds events.
    fn is_occupied(&self, slot: usize) -> bool {
        self.occupied[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// The first occupied slot at or after `from` (taken modulo the slot count), going round
    /// the wheel once.
    fn first_occupied_from(&self, from: usize) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let from = from % N;
        for i in 0..=Self::WORDS {
            let w = (from / 64 + i) % Self::WORDS;
            let mut bits = self.occupied[w];
            if i == 0 {
                bits &= !0u64 << (from % 64); // slots before `from` in its word come last
            }
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
        }
        unreachable!("len > 0 but no occupied slot")
    }
}

pub struct EventList<E> {
    /// Events of bucket `cur`, and any scheduled before it (never after it), sorted by
    /// (time, order); `current[head..]` are pending. A sorted vector rather than a heap: a
    /// bucket holds one event at 60 flows and a few dozen at 10,000, which one sort orders
    /// more cheaply than a heap's push and pop per event, and popping is reading the next one.
    current: Vec<Scheduled<E>>,
    head: usize,
    /// The bucket being drained; every event outside `current` is in a later bucket.
    cur: u64,
    /// Slot `b % FINE_SLOTS` holds the events of bucket b, for the buckets after `cur` in its
    /// round.
    fine: Wheel<E, FINE_SLOTS>,
    /// Slot `r % ROUNDS` holds the events of round r, for cur's round < r < cur's round + ROUNDS.
    coarse: Wheel<E, { ROUNDS as usize }>,
    /// Events of rounds >= cur's round + ROUNDS at the time they were scheduled.
    overflow: BinaryHeap<Scheduled<E>>,
    /// Empty between calls: the events of a round on their way from the coarse wheel to the
    /// fine one.
    cascade: Vec<Scheduled<E>>,
    next_order: u64,
    /// (time, order) of the event popped last: the one being handled.
    last_popped: (Time, u64),
}

impl<E> Default for EventList<E> {
    fn default() -> Self {
        EventList {
            current: Vec::new(),
            head: 0,
            cur: 0,
            fine: Wheel::new(),
            coarse: Wheel::new(),
            overflow: BinaryHeap::new(),
            cascade: Vec::new(),
            next_order: 0,
            last_popped: (Time::ZERO, 0),
        }
    }
}

impl<E: Copy> EventList<E> {
    #[inline]
    pub fn schedule(&mut self, at: Time, event: E) {
        let order = self.reserve_order();
        self.schedule_reserved(at, order, event);
    }

    /// Takes the insertion order the next `schedule` would use, without scheduling anything:
    /// an event that may never be needed keeps its place in the tie order, and
    /// `schedule_reserved` inserts it later exactly where `schedule` would have put it now.
    #[inline]
    pub fn reserve_order(&mut self) -> u64 {
        self.next_order += 1;
        self.next_order - 1
    }

    /// Schedules `event` with an order from `reserve_order` (each used once).
    #[inline]
    pub fn schedule_reserved(&mut self, at: Time, order: u64, event: E) {
        let s = Scheduled { at, order, event };
        if s.bucket() <= self.cur {
            self.insert_current(s);
        } else {
            self.put_ahead(s);
        }
    }

    /// Files an event of a bucket after `cur`: on the fine wheel if it is in cur's round, on
    /// the coarse wheel if its round is close enough, in the overflow heap otherwise.
    #[inline]
    fn put_ahead(&mut self, s: Scheduled<E>) {
        let (round, cur_round) = (s.round(), self.cur >> ROUND_SHIFT);
        if round == cur_round {
            self.fine.push(s.bucket() as usize % FINE_SLOTS, s);
        } else if round < cur_round + ROUNDS {
            self.coarse.push((round % ROUNDS) as usize, s);
        } else {
            self.overflow.push(s);
        }
    }

    /// Whether the event being handled (the last one popped) comes before (`at`, `order`) in
    /// the list's total order, i.e. whether an event with that key would still be pending.
    #[inline]
    pub fn handling_before(&self, at: Time, order: u64) -> bool {
        self.last_popped < (at, order)
    }

    /// Removes the earliest event if it is due no later than `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, E)> {
        if self.head == self.current.len() && !self.advance() {
            return None;
        }
        let s = self.current[self.head];
        if s.at > until {
            return None;
        }
        self.head += 1;
        self.last_popped = s.key();
        Some((s.at, s.event))
    }

    /// The event `k` places after the next one `pop_until` returns, if it is in the bucket
    /// being drained (None beyond it). For looking ahead only: an event scheduled later may
    /// still come before it.
    #[inline]
    pub fn peek_ahead(&self, k: usize) -> Option<E> {
        self.current.get(self.head + k).map(|s| s.event)
    }

    pub fn len(&self) -> usize {
        self.current.len() - self.head + self.fine.len + self.coarse.len + self.overflow.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts into the sorted pending part of `current`. A new event has the largest order so
    /// far, so it goes after every pending event due no later than it: usually at the end.
    fn insert_current(&mut self, s: Scheduled<E>) {
        let pending = &self.current[self.head..];
        let at = pending.partition_point(|p| p.key() < s.key());
        self.current.insert(self.head + at, s);
    }

    /// With `current` drained: moves `cur` to the earliest pending bucket and makes its events,
    /// sorted, the current ones. False when nothing is pending.
    fn advance(&mut self) -> bool {
        self.current.clear();
        self.head = 0;
        loop {
            // The rest of cur's round: every event on the fine wheel is in a later bucket of
            // it, so the first occupied slot after cur's is the earliest.
            let cur_slot = self.cur as usize % FINE_SLOTS;
            if let Some(slot) = self.fine.first_occupied_from(cur_slot + 1) {
                debug_assert!(slot > cur_slot);
                self.cur = (self.cur & !(FINE_SLOTS as u64 - 1)) | slot as u64;
                // The emptied vector goes back on the wheel for the slot's next round.
                self.fine.take(slot, &mut self.current);
                if self.current.len() > 1 {
                    self.current.sort_unstable_by_key(Scheduled::key);
                }
                return true;
            }
            if !self.enter_next_round() {
                return false;
            }
            if !self.current.is_empty() {
                // Events of the round's first bucket (`enter_next_round` put them here).
                self.current.sort_unstable_by_key(Scheduled::key);
                return true;
            }
        }
    }

    /// With the fine wheel empty: moves `cur` to the first bucket of the next round that has
    /// events (on the coarse wheel or in the overflow heap), and files that round's events by
    /// bucket: those of its first bucket in `current`, the others on the fine wheel. The
    /// coarse wheel then reaches ROUNDS - 1 rounds further: the overflow events it now covers
    /// move onto it. False when nothing is pending.
    fn enter_next_round(&mut self) -> bool {
        let cur_round = self.cur >> ROUND_SHIFT;
        let on_coarse = self.coarse.first_occupied_from(((cur_round + 1) % ROUNDS) as usize).map(|slot| {
            let ahead = (slot as u64 + ROUNDS - cur_round % ROUNDS) % ROUNDS; // 1 ..= ROUNDS - 1
            cur_round + ahead
        });
        let in_overflow = self.overflow.peek().map(Scheduled::round);
        let round = match (on_coarse, in_overflow) {
            (Some(c), Some(o)) => c.min(o),
            (Some(c), None) => c,
            (None, Some(o)) => o,
            (None, None) => return false,
        };
        self.cur = round << ROUND_SHIFT;
        let slot = (round % ROUNDS) as usize;
        if self.coarse.is_occupied(slot) {
            let mut cascade = std::mem::take(&mut self.cascade);
            self.coarse.take(slot, &mut cascade);
            for s in cascade.drain(..) {
                self.file_on_entry(s);
            }
            self.cascade = cascade;
        }
        while self.overflow.peek().is_some_and(|s| s.round() < round + ROUNDS) {
            let s = self.overflow.pop().expect("peeked");
            self.file_on_entry(s);
        }
        true
    }

    /// Files an event moved from the coarse wheel or the overflow heap on entering a round
    /// (`cur` is its first bucket): in `current` (unsorted, `advance` sorts it) if it is of
    /// that bucket, else where `put_ahead` files a later one.
    #[inline]
    fn file_on_entry(&mut self, s: Scheduled<E>) {
        debug_assert!(s.bucket() >= self.cur);
        if s.bucket() == self.cur {
            self.current.push(s);
        } else {
            self.put_ahead(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_insertion_order() {
        let mut l = EventList::default();
        l.schedule(Time(5), "c");
        l.schedule(Time(1), "a");
        l.schedule(Time(5), "d");
        l.schedule(Time(1), "b");
        let order: Vec<_> = std::iter::from_fn(|| l.pop_until(Time::MAX)).map(|(_, e)| e).collect();
        assert_eq!(order, vec!["a", "b", "c", "d"]);
    }

    #[test]
    fn peek_ahead_shows_the_next_pops_within_the_bucket_only() {
        let mut l = EventList::default();
        for (t, e) in [(30, "c"), (10, "a"), (20, "b"), (1 << 20, "later bucket")] {
            l.schedule(Time(t), e);
        }
        assert_eq!(l.pop_until(Time::MAX), Some((Time(10), "a")));
        assert_eq!((l.peek_ahead(0), l.peek_ahead(1), l.peek_ahead(2)), (Some("b"), Some("c"), None));
        assert_eq!(l.pop_until(Time::MAX), Some((Time(20), "b")));
        assert_eq!(l.peek_ahead(0), Some("c"));
    }

    #[test]
    fn pop_until_leaves_later_events() {
        let mut l = EventList::default();
        l.schedule(Time(10), 1);
        assert!(l.pop_until(Time(9)).is_none());
        assert_eq!(l.pop_until(Time(10)), Some((Time(10), 1)));
    }

    /// Against a sorted reference: interleaved schedules and pops with delays from ties (same
    /// nanosecond) through one bucket, both wheels and the overflow heap (seconds), must come out
    /// in (time, insertion order), as the binary heap this list replaced gave them. Scheduling
    /// 3 times in 5, the list fills up and every level stays busy.
    #[test]
    fn matches_sorted_order_at_every_horizon() {
        check_against_sorted_order(12345, 3);
    }

    /// The same with one schedule in 5: the list holds a few events, most far apart, so rounds
    /// and whole turns of the coarse wheel go by empty and the next event often comes from the
    /// overflow heap.
    #[test]
    fn matches_sorted_order_when_events_are_sparse() {
        check_against_sorted_order(678, 1);
    }

    /// 200,000 steps, each a schedule (`schedules_in_5` times in 5, or when the list is empty)
    /// or a pop, compared with a `BTreeSet` of (time, order).
    fn check_against_sorted_order(seed: u64, schedules_in_5: u64) {
        let mut l = EventList::default();
        let mut reference = std::collections::BTreeSet::new();
        let (mut popped, mut expected) = (Vec::new(), Vec::new());
        let mut x: u64 = seed;
        let mut now = 0u64;
        for order in 0..200_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = x >> 16;
            if r % 5 < schedules_in_5 || l.is_empty() {
                let delay = match r % 9 {
                    0 | 1 => (r >> 8) % 8,                   // ties and the current bucket
                    2 | 3 => (r >> 8) % 100_000,             // the next buckets
                    4 => (r >> 8) % 2_200_000,               // this round, the next, the one after
                    5 => (r >> 8) % 130_000_000,             // the whole coarse wheel
                    6 => (r >> 8) % 3_000_000_000,           // the overflow heap
                    7 => 133_000_000 + (r >> 8) % 3_000_000, // either side of the coarse wheel's end
                    _ => 1_048_576 * ((r >> 8) % 200),       // whole rounds ahead
                };
                l.schedule(Time(now + delay), order);
                reference.insert((now + delay, order));
            } else {
                let (t, e) = l.pop_until(Time::MAX).unwrap();
                now = t.as_nanos();
                popped.push((now, e));
                expected.push(reference.pop_first().unwrap());
            }
            assert_eq!(l.len(), reference.len());
        }
        while let Some((t, e)) = l.pop_until(Time::MAX) {
            popped.push((t.as_nanos(), e));
            expected.push(reference.pop_first().unwrap());
        }
        assert_eq!(popped.len(), expected.len());
        assert!(popped == expected, "pop order differs from (time, order)");
    }

    /// An event scheduled late with an order reserved early (a transmission's end that turned
    /// out to need its event) comes out where `schedule` at reservation time would have put it:
    /// before a same-time event scheduled in between, whether it lands in the bucket being
    /// drained, on the wheel or in the overflow heap.
    #[test]
    fn a_reserved_order_keeps_its_place_among_ties() {
        for at in [Time(5), Time(50_000), Time(5_000_000_000)] {
            let mut l = EventList::default();
            l.schedule(Time(1), "now");
            let reserved = l.reserve_order();
            l.schedule(at, "scheduled after the reservation");
            assert_eq!(l.pop_until(Time::MAX), Some((Time(1), "now")));
            assert!(l.handling_before(at, reserved), "{at:?}: still pending");
            l.schedule_reserved(at, reserved, "reserved");
            let rest: Vec<_> = std::iter::from_fn(|| l.pop_until(Time::MAX)).map(|(_, e)| e).collect();
            assert_eq!(rest, vec!["reserved", "scheduled after the reservation"], "{at:?}");
            assert!(!l.handling_before(at, reserved), "{at:?}: handled");
        }
    }

    /// An event scheduled before the bucket the list has advanced to (after a pop_until that
    /// looked ahead and returned None) still comes out first.
    #[test]
    fn schedule_before_advanced_bucket() {
        let mut l = EventList::default();
        l.schedule(Time(1_000_000_000), "late");
        assert!(l.pop_until(Time(10)).is_none());
        l.schedule(Time(20), "early");
        assert_eq!(l.pop_until(Time::MAX), Some((Time(20), "early")));
        assert_eq!(l.pop_until(Time::MAX), Some((Time(1_000_000_000), "late")));
        assert!(l.pop_until(Time::MAX).is_none());
    }
}
