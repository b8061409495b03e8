//! The event list: events pop in (time, insertion order). Ties at the same nanosecond are
//! broken by the order events were scheduled, which makes runs deterministic without any
//! reliance on the list's internals: (time, order) is a total order (orders are unique), so
//! every correct priority queue pops the same sequence.
//!
//! Structure: a timing wheel (a calendar queue with a fixed year). Time is cut into buckets of
//! 2^12 ns (4.1 us). The bucket being drained is a sorted vector (`current`); the next 2^14
//! buckets (67 ms: propagation, serialization and sampling
//! events) are unsorted vectors on a wheel, found through a bitmap of non-empty slots; events
//! further ahead (RTO timers, flow stops) wait in an overflow heap and move to the wheel as
//! it turns. A pop then costs a share of sorting the few events of one 4 us bucket instead of a
//! heap operation on every pending event, which is what grows with the number of flows (callgrind on the
//! 60-flow Rb-RIO dumbbell put a third of all instructions in `BinaryHeap::pop`).

use aqmlab_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// log2 of a bucket's width in ns.
const BUCKET_SHIFT: u32 = 12;
/// Slots on the wheel (a power of two, a multiple of 64 for the bitmap).
const SLOTS: u64 = 1 << 14;
/// 64-bit words of the occupancy bitmap.
const WORDS: usize = (SLOTS / 64) as usize;

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

pub struct EventList<E> {
    /// Events of bucket `cur`, and any scheduled before it (never after it), sorted by
    /// (time, order); `current[head..]` are pending. A sorted vector rather than a heap: a
    /// bucket holds one event at 60 flows and a few dozen at 10,000, which one sort orders
    /// more cheaply than a heap's push and pop per event, and popping is reading the next one.
    current: Vec<Scheduled<E>>,
    head: usize,
    /// The bucket being drained; every event outside `current` is in a later bucket.
    cur: u64,
    /// Slot `b % SLOTS` holds the events of bucket b, for cur < b < cur + SLOTS.
    wheel: Vec<Vec<Scheduled<E>>>,
    /// Bit s set when wheel slot s is non-empty.
    occupied: Vec<u64>,
    on_wheel: usize,
    /// Events of buckets >= cur + SLOTS at the time they were scheduled.
    overflow: BinaryHeap<Scheduled<E>>,
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
            wheel: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: vec![0; WORDS],
            on_wheel: 0,
            overflow: BinaryHeap::new(),
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
        let b = s.bucket();
        if b <= self.cur {
            self.insert_current(s);
        } else if b < self.cur + SLOTS {
            self.put_on_wheel(s);
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
        self.current.len() - self.head + self.on_wheel + self.overflow.len()
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

    fn put_on_wheel(&mut self, s: Scheduled<E>) {
        let slot = (s.bucket() % SLOTS) as usize;
        self.wheel[slot].push(s);
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.on_wheel += 1;
    }

    /// With `current` drained: moves `cur` to the earliest pending bucket and makes its events,
    /// sorted, the current ones. False when nothing is pending.
    fn advance(&mut self) -> bool {
        let on_wheel = self.next_wheel_bucket();
        let in_overflow = self.overflow.peek().map(|s| s.bucket());
        self.cur = match (on_wheel, in_overflow) {
            (Some(w), Some(o)) => w.min(o),
            (Some(w), None) => w,
            (None, Some(o)) => o,
            (None, None) => return false,
        };
        self.current.clear();
        self.head = 0;
        let slot = (self.cur % SLOTS) as usize;
        if self.occupied[slot / 64] & (1 << (slot % 64)) != 0 {
            self.occupied[slot / 64] &= !(1 << (slot % 64));
            // The emptied vector goes back on the wheel for the slot's next year.
            std::mem::swap(&mut self.current, &mut self.wheel[slot]);
            self.on_wheel -= self.current.len();
        }
        // The wheel now reaches cur + SLOTS: bring the overflow events it covers onto it.
        while self.overflow.peek().is_some_and(|s| s.bucket() < self.cur + SLOTS) {
            let s = self.overflow.pop().expect("peeked");
            if s.bucket() == self.cur {
                self.current.push(s);
            } else {
                self.put_on_wheel(s);
            }
        }
        if self.current.len() > 1 {
            self.current.sort_unstable_by_key(Scheduled::key);
        }
        true
    }

    /// The earliest bucket on the wheel: the first occupied slot after `cur`'s, circularly.
    fn next_wheel_bucket(&self) -> Option<u64> {
        if self.on_wheel == 0 {
            return None;
        }
        let start = (self.cur + 1) % SLOTS;
        let first_word = (start / 64) as usize;
        for i in 0..=WORDS {
            let w = (first_word + i) % WORDS; // a constant power of two: a mask, not a division
            let mut bits = self.occupied[w];
            if i == 0 {
                bits &= !0u64 << (start % 64); // slots before `start` in its word come last
            }
            if bits != 0 {
                let slot = (w * 64) as u64 + bits.trailing_zeros() as u64;
                let ahead = (slot + SLOTS - self.cur % SLOTS) % SLOTS;
                return Some(self.cur + ahead);
            }
        }
        unreachable!("on_wheel > 0 but no occupied slot")
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
    /// nanosecond) through one bucket, the wheel and the overflow heap (seconds), must come out
    /// in (time, insertion order), as the binary heap this list replaced gave them.
    #[test]
    fn matches_sorted_order_at_every_horizon() {
        let mut l = EventList::default();
        let mut reference = std::collections::BTreeSet::new();
        let (mut popped, mut expected) = (Vec::new(), Vec::new());
        let mut x: u64 = 12345;
        let mut now = 0u64;
        for order in 0..200_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = x >> 16;
            if r % 5 < 3 || l.is_empty() {
                let delay = match r % 7 {
                    0 | 1 => (r >> 8) % 8,                  // ties and the current bucket
                    2 | 3 => (r >> 8) % 100_000,            // the next buckets
                    4 => (r >> 8) % 60_000_000,             // the whole wheel
                    5 => (r >> 8) % 3_000_000_000,          // the overflow heap
                    _ => 70_000_000 + (r >> 8) % 1_000_000, // just past the wheel
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
