//! The event list: a binary min-heap on (time, insertion order). Ties at the same nanosecond
//! are broken by the order events were scheduled, which makes runs deterministic without any
//! reliance on heap internals.

use aqmlab_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Scheduled<E> {
    at: Time,
    order: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.order == other.order
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
        (other.at, other.order).cmp(&(self.at, self.order))
    }
}

pub struct EventList<E> {
    heap: BinaryHeap<Scheduled<E>>,
    next_order: u64,
}

impl<E> Default for EventList<E> {
    fn default() -> Self {
        EventList { heap: BinaryHeap::new(), next_order: 0 }
    }
}

impl<E> EventList<E> {
    pub fn schedule(&mut self, at: Time, event: E) {
        self.heap.push(Scheduled { at, order: self.next_order, event });
        self.next_order += 1;
    }

    /// Removes the earliest event if it is due no later than `until`.
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, E)> {
        if self.heap.peek()?.at > until {
            return None;
        }
        self.heap.pop().map(|s| (s.at, s.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    fn pop_until_leaves_later_events() {
        let mut l = EventList::default();
        l.schedule(Time(10), 1);
        assert!(l.pop_until(Time(9)).is_none());
        assert_eq!(l.pop_until(Time(10)), Some((Time(10), 1)));
    }
}
