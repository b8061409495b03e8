//! A periodic timer run lazily: the probability updates of PIE and DualPI2.
//!
//! Linux runs these updates from a timer every `t_update`. A discipline sees time only when a
//! packet arrives or leaves, and nothing it holds changes between packets, so running every
//! elapsed boundary in order at the next arrival or departure gives the same states as the
//! timer would have.

use crate::units::Time;

/// The next boundary of a timer of a fixed period, first due one period after time 0.
#[derive(Clone, Copy, Debug)]
pub struct LazyTimer {
    next: Time,
    period: u64,
}

impl LazyTimer {
    /// After this many updates in one catch-up the state has long settled (a probability
    /// decays to its rest value in far fewer), so the timer skips to its next boundary after
    /// `now`: a leap of the clock then costs bounded work.
    pub const MAX_CATCH_UP: u32 = 10_000;

    pub fn new(period_ns: u64) -> LazyTimer {
        LazyTimer { next: Time(period_ns), period: period_ns }
    }

    /// When the next update is due.
    pub fn next(&self) -> Time {
        self.next
    }

    /// Calls `update(at)` for every boundary `at <= now` not yet run, oldest first (at most
    /// [`Self::MAX_CATCH_UP`], then the rest are skipped). At the end of time the boundary
    /// saturates at `Time::MAX` and stops.
    pub fn catch_up(&mut self, now: Time, mut update: impl FnMut(Time)) {
        let mut ran = 0;
        while self.next <= now && self.next != Time::MAX {
            if ran == Self::MAX_CATCH_UP {
                let missed = (now.0 - self.next.0) / self.period + 1;
                self.next = Time(self.next.0.saturating_add(missed.saturating_mul(self.period)));
                return;
            }
            update(self.next);
            self.next += Time(self.period);
            ran += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_elapsed_boundary_runs_once_in_order() {
        let mut t = LazyTimer::new(10);
        let mut seen = Vec::new();
        t.catch_up(Time(9), |at| seen.push(at.0));
        assert!(seen.is_empty());
        t.catch_up(Time(35), |at| seen.push(at.0));
        t.catch_up(Time(35), |at| seen.push(at.0));
        t.catch_up(Time(40), |at| seen.push(at.0));
        assert_eq!(seen, vec![10, 20, 30, 40]);
        assert_eq!(t.next(), Time(50));
    }

    #[test]
    fn a_leap_is_cut_short_and_the_end_of_time_stops_the_timer() {
        let mut t = LazyTimer::new(10);
        let mut n = 0u64;
        t.catch_up(Time(1_000_000_000), |_| n += 1);
        assert_eq!(n, LazyTimer::MAX_CATCH_UP as u64);
        assert!(t.next() > Time(1_000_000_000) && t.next() <= Time(1_000_000_010));
        t.catch_up(Time::MAX, |_| n += 1);
        t.catch_up(Time::MAX, |_| n += 1);
        assert_eq!(t.next(), Time::MAX);
    }
}
