//! The new/old flow lists of RFC 8290's scheduler (section 4.2), as FQ-CoDel and FQ-PIE
//! (Linux `sch_fq_codel.c`, `sch_fq_pie.c`) share them: bucket indices served new flows
//! first, a bucket that spent its deficit moving to the tail of old flows.

use super::flow_key::splitmix64;
use std::collections::VecDeque;

/// Salt of the bucket hash (any fixed value: Linux perturbs with a random value per qdisc; a
/// fixed salt keeps the same scenario giving the same bytes).
const HASH_SALT: u64 = 0x5eed_f00d_c0de_1e55;

/// The bucket of flow key `key` among `buckets`: the salted key through SplitMix64, scaled as
/// Linux's `reciprocal_scale`.
pub(crate) fn bucket(key: u64, buckets: usize) -> usize {
    let h = splitmix64(key ^ HASH_SALT);
    ((h as u128 * buckets as u128) >> 64) as usize
}

#[derive(Debug, Default)]
pub struct FlowLists {
    pub new_flows: VecDeque<u32>,
    pub old_flows: VecDeque<u32>,
}

impl FlowLists {
    /// The bucket a dequeue serves: the head of new flows, else of old flows; and whether it
    /// came from new flows.
    pub fn front(&self) -> Option<(bool, u32)> {
        match self.new_flows.front() {
            Some(&i) => Some((true, i)),
            None => self.old_flows.front().map(|&i| (false, i)),
        }
    }

    pub fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// Listed buckets, on both lists.
    pub fn len(&self) -> usize {
        self.new_flows.len() + self.old_flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every listed bucket, new flows first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.new_flows.iter().chain(&self.old_flows).copied()
    }
}

/// After a full pass in which every listed queue only received a quantum: how many further
/// quanta each listed queue can be credited at once, because in the passes they stand for no
/// queue could send either (`k - 1`, `k` the fewest refills after which some deficit of
/// `deficits` turns positive). Without it a packet far above the quantum would cost
/// `size / quantum` rotations. 0 when nothing is to be skipped.
pub(crate) fn idle_rounds(deficits: impl Iterator<Item = i64>, quantum: i64) -> i64 {
    let k = deficits.map(|d| if d > 0 { 0 } else { -d / quantum + 1 }).min();
    k.filter(|k| *k > 1).map_or(0, |k| k - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_flows_are_served_first() {
        let mut l = FlowLists::default();
        l.old_flows.push_back(3);
        l.new_flows.push_back(7);
        assert_eq!(l.front(), Some((true, 7)));
        l.pop_front(true);
        assert_eq!(l.front(), Some((false, 3)));
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn idle_rounds_skip_to_the_first_pass_where_a_queue_can_send() {
        // Deficits -3000 and -1000 with a 1000 B quantum: after 2 refills the second turns
        // positive (k = 2), so 1 round is skipped.
        assert_eq!(idle_rounds([-3000, -1000].into_iter(), 1000), 1);
        assert_eq!(idle_rounds([-3000, 5].into_iter(), 1000), 0);
        assert_eq!(idle_rounds(std::iter::empty(), 1000), 0);
    }
}
