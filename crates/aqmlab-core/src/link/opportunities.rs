//! The opportunity times a delivery trace stands for, looping without end.
//!
//! Pass `k` (from 0) of a trace with timestamps `s[0..n]` and period `P = s[n-1]` offers its
//! opportunities at `origin + (k * P + s[i]) ms`, as mahimahi's `LinkQueue::next_delivery_time`
//! (`schedule_.at(next_delivery_) + base_timestamp_`, the base growing by `schedule_.back()` at
//! each wrap). A trace that starts at 0 therefore offers two opportunities at each pass
//! boundary (the last of one pass, the first of the next), as mahimahi does.

use super::trace::DeliveryTrace;
use crate::units::Time;
use std::sync::Arc;

/// A cursor on the opportunities of a trace: the next one not yet used or burned.
#[derive(Clone, Debug)]
pub struct OpportunityClock {
    times_ms: Arc<[u64]>,
    period_ms: u64,
    origin: Time,
    pass: u64,
    index: usize,
}

impl OpportunityClock {
    /// The opportunities of `trace`, the first pass starting at `origin`.
    pub fn new(trace: &DeliveryTrace, origin: Time) -> OpportunityClock {
        trace.validate().expect("a validated trace");
        let times_ms: Arc<[u64]> = trace.opportunities_ms.as_slice().into();
        let period_ms = *times_ms.last().expect("validated: not empty");
        OpportunityClock { times_ms, period_ms, origin, pass: 0, index: 0 }
    }

    /// Starts over: the first pass begins at `origin` (the emulator's run epoch, known only once
    /// the router runs).
    pub fn restart(&mut self, origin: Time) {
        self.origin = origin;
        self.pass = 0;
        self.index = 0;
    }

    /// When the next opportunity falls (`Time::MAX` once the run's clock could not hold it).
    pub fn peek(&self) -> Time {
        self.time_of(self.pass, self.index)
    }

    /// Takes the next opportunity: its time.
    pub fn take(&mut self) -> Time {
        let t = self.peek();
        self.index += 1;
        if self.index == self.times_ms.len() {
            self.index = 0;
            self.pass += 1;
        }
        t
    }

    /// Burns every opportunity at or before `t` (an idle link's opportunities are lost, see
    /// `TraceServer`), in O(log n) however many that is.
    pub fn skip_through(&mut self, t: Time) {
        if self.peek() > t {
            return;
        }
        let Some(since) = t.checked_sub(self.origin) else { return };
        let period_ns = self.period_ms.saturating_mul(1_000_000);
        // The passes before `pass` end at pass * P <= t - origin: all of them are burned.
        let pass = since.as_nanos() / period_ns;
        let base_ns = pass * period_ns;
        let index = self.times_ms.partition_point(|&ms| base_ns.saturating_add(ms * 1_000_000) <= since.as_nanos());
        // If the whole pass is burned, the next one starts after t: (pass + 1) * P > t - origin.
        let (pass, index) = if index == self.times_ms.len() { (pass + 1, 0) } else { (pass, index) };
        if (pass, index) > (self.pass, self.index) {
            self.pass = pass;
            self.index = index;
        }
    }

    fn time_of(&self, pass: u64, index: usize) -> Time {
        let ms = pass.checked_mul(self.period_ms).and_then(|b| b.checked_add(self.times_ms[index]));
        match ms.and_then(|ms| ms.checked_mul(1_000_000)) {
            Some(ns) => self.origin + Time(ns),
            None => Time::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(ms: &[u64]) -> OpportunityClock {
        OpportunityClock::new(&DeliveryTrace { opportunities_ms: ms.to_vec() }, Time::ZERO)
    }

    fn first(c: &mut OpportunityClock, n: usize) -> Vec<u64> {
        (0..n).map(|_| c.take().as_nanos() / 1_000_000).collect()
    }

    #[test]
    fn passes_repeat_with_the_last_timestamp_as_period() {
        assert_eq!(first(&mut clock(&[1, 1, 3]), 7), vec![1, 1, 3, 4, 4, 6, 7]);
        // Starting at 0: the boundary of two passes holds two opportunities.
        assert_eq!(first(&mut clock(&[0, 2]), 6), vec![0, 2, 2, 4, 4, 6]);
        let mut late = OpportunityClock::new(&DeliveryTrace { opportunities_ms: vec![5] }, Time::from_millis(100));
        assert_eq!(first(&mut late, 2), vec![105, 110]);
    }

    #[test]
    fn skipping_burns_exactly_the_opportunities_at_or_before_the_time() {
        let trace = [0, 3, 3, 3, 5, 9, 9, 10];
        // Against taking one at a time, from every start and to every time in four passes.
        for start in 0..12 {
            for until_us in (0..45_000).step_by(250) {
                let until = Time::from_micros(until_us);
                let mut fast = clock(&trace);
                let mut slow = clock(&trace);
                for _ in 0..start {
                    fast.take();
                    slow.take();
                }
                fast.skip_through(until);
                while slow.peek() <= until {
                    slow.take();
                }
                assert_eq!((fast.pass, fast.index), (slow.pass, slow.index), "start {start}, until {until}");
            }
        }
    }

    #[test]
    fn skipping_never_goes_back() {
        let mut c = clock(&[1, 2, 3]);
        first(&mut c, 5);
        let before = c.peek();
        c.skip_through(Time::from_millis(1));
        assert_eq!(c.peek(), before);
    }
}
