//! Selective acknowledgments: the byte-range set both ends keep, the receiver's choice of SACK
//! blocks (RFC 2018 section 4) and the scoreboard queries of RFC 6675 section 4 (IsLost, the
//! pieces of SetPipe and NextSeg). The sender's use of them is in the parent module.

use aqmlab_core::SackBlocks;
use std::collections::{BTreeMap, VecDeque};

/// RFC 6675 section 2, DupThresh: duplicate ACKs (and SACKed segments above a hole) that
/// signal a loss.
pub const DUP_THRESH: u64 = 3;

/// Disjoint, non-adjacent byte ranges `[start, end)`: the receiver's out-of-order data, or the
/// sender's SACKed data above `snd_una` (the scoreboard).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
    bytes: u64,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.bytes = 0;
    }

    /// Bytes covered.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The ranges in order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.first_key_value().map(|(&s, &e)| (s, e))
    }

    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        let (s, e) = self.map.pop_first()?;
        self.bytes -= e - s;
        Some((s, e))
    }

    /// Adds `[s, e)`, merging it with every range it overlaps or touches; returns the number
    /// of bytes that were not covered before.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let (mut lo, mut hi) = (s, e);
        let mut already = 0;
        if let Some((&ps, &pe)) = self.map.range(..=s).next_back() {
            if pe >= s {
                already += pe.min(e).saturating_sub(s);
                lo = ps;
                hi = hi.max(pe);
                self.map.remove(&ps);
            }
        }
        // Every remaining range starting at or before the union's end touches it.
        while let Some((&qs, &qe)) = self.map.range(lo..=hi).next() {
            already += qe.min(e).saturating_sub(qs.max(s));
            hi = hi.max(qe);
            self.map.remove(&qs);
        }
        self.map.insert(lo, hi);
        let added = (e - s) - already;
        self.bytes += added;
        added
    }

    /// Forgets everything below `x`.
    #[inline]
    pub fn remove_below(&mut self, x: u64) {
        while let Some((&s, &e)) = self.map.first_key_value() {
            if s >= x {
                break;
            }
            self.map.pop_first();
            if e > x {
                self.map.insert(x, e);
                self.bytes -= x - s;
                break;
            }
            self.bytes -= e - s;
        }
    }

    /// The range holding byte `x`.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        self.map.range(..=x).next_back().filter(|(_, &e)| e > x).map(|(&s, &e)| (s, e))
    }

    /// Whether all of `[a, b)` is covered.
    pub fn covers(&self, a: u64, b: u64) -> bool {
        self.containing(a).is_some_and(|(_, e)| e >= b)
    }

    /// Covered bytes within `[a, b)`.
    pub fn covered_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut n = 0;
        for (&s, &e) in self.map.range(..b).rev() {
            if e <= a {
                break;
            }
            n += e.min(b) - s.max(a);
        }
        n
    }

    /// Uncovered bytes within `[a, b)`.
    pub fn uncovered_in(&self, a: u64, b: u64) -> u64 {
        b.saturating_sub(a) - self.covered_in(a, b)
    }

    /// The first uncovered byte at or above `x`.
    pub fn next_uncovered(&self, x: u64) -> u64 {
        self.containing(x).map_or(x, |(_, e)| e)
    }

    /// The last uncovered byte below `x` (`x > 0`).
    pub fn prev_uncovered(&self, x: u64) -> u64 {
        let y = x - 1;
        self.containing(y).map_or(y, |(s, _)| s.saturating_sub(1))
    }

    /// One past the highest covered byte, 0 when empty.
    pub fn end(&self) -> u64 {
        self.map.last_key_value().map_or(0, |(_, &e)| e)
    }

    /// RFC 6675 section 4, IsLost(seq): more than (DupThresh - 1) * SMSS bytes above `seq` are
    /// SACKed. (The RFC's other test, DupThresh discontiguous SACKed sequences above `seq`,
    /// implies this one when every segment is a full SMSS, as here.)
    pub fn is_lost(&self, seq: u64, smss: u64) -> bool {
        self.covered_in(seq.saturating_add(1), u64::MAX) > (DUP_THRESH - 1) * smss
    }

    /// The boundary of IsLost for un-SACKed bytes: an un-SACKed byte `b` is lost exactly when
    /// `b < lost_boundary()`. Walking down from the highest range, it is the start of the range
    /// at which the SACKed bytes counted so far first exceed (DupThresh - 1) * SMSS; 0 if never.
    pub fn lost_boundary(&self, smss: u64) -> u64 {
        let mut above = 0;
        for (&s, &e) in self.map.iter().rev() {
            above += e - s;
            if above > (DUP_THRESH - 1) * smss {
                return s;
            }
        }
        0
    }
}

/// The receiver's SACK state (RFC 2018 section 4): which held blocks were most recently
/// changed by an arriving segment. One entry per held block, a byte inside it, most recent
/// first, so the first block reported is the one holding the segment that triggered the ACK
/// and the others repeat the most recently reported ones.
#[derive(Clone, Debug, Default)]
pub struct SackReporter {
    recent: VecDeque<u64>,
}

impl SackReporter {
    /// An out-of-order segment starting at `seq` has been merged into `held`.
    pub fn on_out_of_order(&mut self, seq: u64, held: &RangeSet) {
        if let Some((s, e)) = held.containing(seq) {
            // Blocks merged into this one lose their own entries.
            self.recent.retain(|r| !(s..e).contains(r));
            self.recent.push_front(seq);
        }
    }

    /// The left edge advanced to `rcv_nxt`: blocks it swallowed are no longer reported.
    #[inline]
    pub fn on_advance(&mut self, rcv_nxt: u64) {
        if !self.recent.is_empty() {
            self.recent.retain(|&r| r >= rcv_nxt);
        }
    }

    /// The blocks for the next ACK: the first `SackBlocks::MAX` held blocks, most recent first.
    pub fn blocks(&self, held: &RangeSet) -> SackBlocks {
        let mut out = SackBlocks::default();
        for &r in self.recent.iter().take(SackBlocks::MAX) {
            if let Some((s, e)) = held.containing(r) {
                out.push(s, e);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts_new_bytes() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 25), 5);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        assert_eq!(r.insert(25, 30), 5, "adjacent on both sides");
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(r.insert(0, 50), 20);
        assert_eq!(r.insert(5, 45), 0);
        assert_eq!(r.bytes(), 50);
        r.remove_below(20);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(20, 50)]);
        assert_eq!(r.bytes(), 30);
    }

    #[test]
    fn queries() {
        let mut r = RangeSet::default();
        r.insert(10, 20);
        r.insert(30, 40);
        assert_eq!(r.covered_in(15, 35), 10);
        assert_eq!(r.uncovered_in(0, 50), 30);
        assert_eq!(r.next_uncovered(12), 20);
        assert_eq!(r.next_uncovered(25), 25);
        assert_eq!(r.prev_uncovered(40), 29);
        assert_eq!(r.prev_uncovered(45), 44);
        assert!(r.covers(30, 40) && !r.covers(30, 41) && !r.covers(25, 31));
        assert_eq!(r.end(), 40);
    }

    #[test]
    fn lost_boundary_matches_is_lost_for_unsacked_bytes() {
        let smss = 10;
        let mut r = RangeSet::default();
        for (s, e) in [(20, 30), (40, 60), (70, 80), (100, 110)] {
            r.insert(s, e);
        }
        let b = r.lost_boundary(smss);
        for x in 0..120 {
            if r.containing(x).is_none() {
                assert_eq!(r.is_lost(x, smss), x < b, "byte {x}");
            }
        }
        assert_eq!(b, 40, "20 bytes are SACKed above the hole at 60..70 (not lost), 40 above 30..40");
    }
}
