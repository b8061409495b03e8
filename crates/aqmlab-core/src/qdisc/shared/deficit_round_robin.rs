//! Deficit Round Robin over the flows of a flow table (`FlowTable`), after M. Shreedhar and G.
//! Varghese, "Efficient Fair Queuing using Deficit Round Robin", ACM SIGCOMM 1995 (S&V): the
//! scheduler of DRR (`drr.rs`, whose module docs describe it) and of PFQ's fair queue
//! (`pfq.rs`).

use super::flow_table::{FlowTable, Slot, NIL};
use crate::packet::Packet;

/// One MTU: the largest packet on an Ethernet path, so that S&V's condition for O(1) work per
/// packet (quantum >= largest packet) holds.
pub const DEFAULT_QUANTUM: u32 = 1500;

pub(crate) fn default_quantum() -> u32 {
    DEFAULT_QUANTUM
}

/// Per-flow DRR state: the deficit counter and the links of the intrusive active list.
pub(crate) struct RrFlow {
    pub deficit: u64,
    prev: Slot,
    next: Slot,
    pub linked: bool,
}

impl Default for RrFlow {
    fn default() -> Self {
        RrFlow { deficit: 0, prev: NIL, next: NIL, linked: false }
    }
}

/// S&V's ActiveList, threaded through the flows' [`RrFlow`] links.
pub(crate) struct ActiveList {
    head: Slot,
    tail: Slot,
    len: usize,
}

impl ActiveList {
    pub fn new() -> Self {
        ActiveList { head: NIL, tail: NIL, len: 0 }
    }

    pub fn front(&self) -> Option<Slot> {
        (self.head != NIL).then_some(self.head)
    }

    /// Appends flow `s` (not linked) with a fresh deficit of one quantum.
    pub fn activate(&mut self, t: &mut FlowTable<RrFlow>, s: Slot, quantum: u64) {
        self.push_tail(t, s);
        t.x_mut(s).deficit = quantum;
    }

    fn push_tail(&mut self, t: &mut FlowTable<RrFlow>, s: Slot) {
        if t.flow(s).x.linked {
            return;
        }
        let tail = self.tail;
        {
            let x = t.x_mut(s);
            x.prev = tail;
            x.next = NIL;
            x.linked = true;
        }
        if tail == NIL {
            self.head = s;
        } else {
            t.x_mut(tail).next = s;
        }
        self.tail = s;
        self.len += 1;
    }

    pub fn unlink(&mut self, t: &mut FlowTable<RrFlow>, s: Slot) {
        let (prev, next) = {
            let x = t.x_mut(s);
            if !x.linked {
                return;
            }
            x.linked = false;
            (std::mem::replace(&mut x.prev, NIL), std::mem::replace(&mut x.next, NIL))
        };
        if prev == NIL {
            self.head = next;
        } else {
            t.x_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            t.x_mut(next).prev = prev;
        }
        self.len -= 1;
    }

    /// Moves the head flow to the tail (the end of its turn).
    fn rotate(&mut self, t: &mut FlowTable<RrFlow>) {
        let s = self.head;
        if s != NIL && s != self.tail {
            self.unlink(t, s);
            self.push_tail(t, s);
        }
    }

    #[cfg(test)]
    pub fn members(&self, t: &FlowTable<RrFlow>) -> Vec<Slot> {
        let mut v = Vec::new();
        let mut s = self.head;
        while s != NIL && v.len() <= self.len {
            v.push(s);
            s = t.flow(s).x.next;
        }
        v
    }
}

/// Whether flow `s` has a packet for the fair-queueing scheduler: its tail is not a priority
/// packet (PFQ keeps a flow's priority packets ahead of its others; DRR has none).
pub(crate) fn has_fq_packets(t: &FlowTable<RrFlow>, s: Slot) -> bool {
    t.flow(s).q.back().is_some_and(|e| !e.prio)
}

/// After packets left flow `s`: if it has nothing left for the fair queue it leaves the active
/// list with its deficit reset (S&V: "DC = 0 when the queue empties"); if it is empty its state
/// is freed. Harmless on a flow already freed.
pub(crate) fn settle(t: &mut FlowTable<RrFlow>, list: &mut ActiveList, s: Slot) {
    if t.flow(s).x.linked && !has_fq_packets(t, s) {
        list.unlink(t, s);
        t.x_mut(s).deficit = 0;
    }
    t.release_if_empty(s);
}

/// After a full pass of the active list in which no flow could send: gives every flow at once
/// the `k - 1` quanta of the further passes in which none could send either (`k` the fewest
/// passes after which some flow's deficit covers its head), so that the next pass sends
/// exactly as walking all those rounds would. Without it a packet much larger than the
/// quantum (a 64 KB packet under a 1-byte quantum) would cost `size / quantum` rotations.
fn skip_idle_rounds(t: &mut FlowTable<RrFlow>, list: &ActiveList, quantum: u64) {
    let mut k = u64::MAX;
    let mut s = list.head;
    while s != NIL {
        let f = t.flow(s);
        if let Some(e) = f.q.front().filter(|e| !e.prio) {
            k = k.min((e.pkt.size as u64).saturating_sub(f.x.deficit).div_ceil(quantum));
        }
        s = f.x.next;
    }
    if k == u64::MAX || k <= 1 {
        return;
    }
    let credit = (k - 1).saturating_mul(quantum);
    let mut s = list.head;
    while s != NIL {
        let x = t.x_mut(s);
        x.deficit = x.deficit.saturating_add(credit);
        s = x.next;
    }
}

/// One DRR departure (module docs). `quantum` must be at least 1.
pub(crate) fn drr_dequeue(t: &mut FlowTable<RrFlow>, list: &mut ActiveList, quantum: u64) -> Option<Packet> {
    let mut rotations = 0;
    loop {
        let s = list.front()?;
        let head = t.flow(s).q.front().filter(|e| !e.prio).map(|e| e.pkt.size as u64);
        let Some(size) = head else {
            // Not reachable while the list holds exactly the flows with FQ packets at the head;
            // recover rather than spin.
            list.unlink(t, s);
            t.release_if_empty(s);
            continue;
        };
        if t.flow(s).x.deficit >= size {
            t.x_mut(s).deficit -= size;
            let e = t.pop_front(s);
            settle(t, list, s);
            return e.map(|e| e.pkt);
        }
        let x = t.x_mut(s);
        x.deficit = x.deficit.saturating_add(quantum);
        list.rotate(t);
        rotations += 1;
        if rotations == list.len {
            skip_idle_rounds(t, list, quantum);
            rotations = 0;
        }
    }
}

/// Internal consistency of the active list against the table, for tests: the list holds exactly
/// the flows with FQ packets, each once, with consistent links.
#[cfg(test)]
pub(crate) fn check_list(t: &FlowTable<RrFlow>, list: &ActiveList, live: &[Slot]) -> Result<(), String> {
    let members = list.members(t);
    if members.len() != list.len {
        return Err(format!("active list walks {} flows but counts {}", members.len(), list.len));
    }
    let mut expected: Vec<Slot> = live.iter().copied().filter(|s| has_fq_packets(t, *s)).collect();
    let mut got = members.clone();
    expected.sort();
    got.sort();
    if expected != got {
        return Err(format!("active list {got:?} != flows with FQ packets {expected:?}"));
    }
    for (i, s) in members.iter().enumerate() {
        let x = &t.flow(*s).x;
        let prev = if i == 0 { NIL } else { members[i - 1] };
        if !x.linked || x.prev != prev {
            return Err(format!("bad links at slot {s}"));
        }
    }
    Ok(())
}
