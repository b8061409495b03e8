//! CoDel: Controlled Delay, after RFC 8289 (K. Nichols, V. Jacobson, A. McGregor, J. Iyengar,
//! "Controlled Delay Active Queue Management", 2018), following its pseudocode (section 5) and
//! Linux `include/net/codel_impl.h`, which the RFC's pseudocode says it follows where they differ.
//!
//! CoDel acts at dequeue, on the *sojourn time* of the head packet (now minus its enqueue time):
//! * **Detection** (section 5.3, `dodequeue`): when the sojourn time has stayed at or above
//!   `target` for at least `interval` (and more than one MTU is queued behind the head), it is
//!   "OK to drop". Any packet below `target`, or a queue of at most one MTU, resets the timer.
//! * **Control law** (section 3.3, 5.5): in the dropping state the head is dropped (or, with
//!   `ecn` and an ECN-capable packet, CE-marked and sent) each time `now >= drop_next`, and the
//!   next drop is scheduled at `drop_next + interval / sqrt(count)`, `count` being the drops of
//!   this dropping state. The state is left as soon as a head packet is below `target`.
//! * **Re-entry** (section 5.6): entering the dropping state again soon after leaving it (within
//!   16 intervals of the last scheduled drop), `count` restarts at the number of drops of the
//!   previous cycle beyond its start count (`count - lastcount`) if that is more than 1, else 1,
//!   so the drop rate that controlled the queue last time is the starting point.
//!
//! `sqrt` is computed in floating point; Linux approximates `1/sqrt(count)` with a Newton step per
//! drop, which the RFC allows (section 5.5).
//!
//! [`CodelVars`] is the per-queue state machine, shared with [`super::fq_codel`], which runs one
//! per flow queue.

use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

/// RFC 8289 section 4.3: a 5 ms target "works well" over a wide range of RTTs.
pub const DEFAULT_TARGET_NS: u64 = 5_000_000;
/// RFC 8289 section 4.4: 100 ms, a worst-case RTT of the paths through the queue.
pub const DEFAULT_INTERVAL_NS: u64 = 100_000_000;
/// The "more than one MTU queued" test (RFC 8289 section 5.3's MAXPACKET): an Ethernet IP MTU.
pub const DEFAULT_MTU: u32 = 1500;

fn default_limit() -> Limit {
    // Linux sch_codel's default limit (RFC 8289 leaves the buffer size to the implementation).
    Limit::Packets(1000)
}
pub(crate) fn default_target_ns() -> u64 {
    DEFAULT_TARGET_NS
}
pub(crate) fn default_interval_ns() -> u64 {
    DEFAULT_INTERVAL_NS
}
pub(crate) fn default_mtu() -> u32 {
    DEFAULT_MTU
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Physical capacity, packets or bytes (default 1000 packets, as Linux).
    #[serde(default = "default_limit")]
    pub limit: Limit,
    /// Acceptable standing sojourn time (RFC 8289 section 4.3, default 5 ms).
    #[serde(default = "default_target_ns")]
    pub target_ns: u64,
    /// Sliding window the sojourn time must stay above target in (section 4.4, default 100 ms).
    #[serde(default = "default_interval_ns")]
    pub interval_ns: u64,
    /// Largest packet: no drop while at most this many bytes are queued (section 5.3).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// CE-mark ECN-capable packets instead of dropping them (Linux sch_codel default: off).
    #[serde(default)]
    pub ecn: bool,
}

impl Default for CodelConfig {
    fn default() -> CodelConfig {
        CodelConfig { limit: default_limit(), target_ns: DEFAULT_TARGET_NS, interval_ns: DEFAULT_INTERVAL_NS, mtu: DEFAULT_MTU, ecn: false }
    }
}

impl CodelConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        self.params().validate()
    }

    pub(crate) fn params(&self) -> CodelParams {
        CodelParams { target: Time(self.target_ns), interval: Time(self.interval_ns), mtu: self.mtu as u64, ecn: self.ecn }
    }
}

/// The parameters of one CoDel instance (shared by all flow queues of FQ-CoDel).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CodelParams {
    pub target: Time,
    pub interval: Time,
    pub mtu: u64,
    pub ecn: bool,
}

impl CodelParams {
    pub fn validate(&self) -> Result<(), String> {
        if self.target == Time::ZERO {
            return Err("target_ns: must be > 0 (RFC 8289 default 5 ms)".into());
        }
        if self.interval == Time::ZERO {
            return Err("interval_ns: must be > 0 (RFC 8289 default 100 ms)".into());
        }
        if self.target >= self.interval {
            return Err(format!(
                "target_ns ({}) must be smaller than interval_ns ({}); RFC 8289 suggests target 5-10 % of interval",
                self.target.0, self.interval.0
            ));
        }
        if self.mtu == 0 {
            return Err("mtu: must be at least 1 byte".into());
        }
        Ok(())
    }
}

/// CoDel's state for one queue (RFC 8289 section 5.2, Linux `struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (or marks) since entering the dropping state, with the re-entry carry-over.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    pub dropping: bool,
    /// When the sojourn time will have been above target for an interval; `None` while below.
    first_above_time: Option<Time>,
    /// When the next drop is due in the dropping state.
    pub drop_next: Time,
}

/// What one [`CodelVars::dequeue`] did besides returning a packet.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct HeadActions {
    pub dropped: u32,
    pub marked: bool,
}

/// RFC 8289 section 5.5's control law, `t + interval / sqrt(count)` (count 0 counts as 1), shared
/// with COBALT ([`super::cobalt`]), whose CoDel half schedules its signals the same way.
pub(crate) fn control_law(t: Time, interval: Time, count: u32) -> Time {
    t + Time::from_secs_f64(interval.as_secs_f64() / (count.max(1) as f64).sqrt())
}

impl CodelVars {
    /// RFC 8289 section 5.5: `t + interval / sqrt(count)`.
    fn control_law(&self, t: Time, interval: Time) -> Time {
        control_law(t, interval, self.count)
    }

    /// RFC 8289 section 5.3 (`dodequeue`'s ok_to_drop), Linux `codel_should_drop`: `backlog` is
    /// what stays queued behind `head`.
    fn should_drop(&mut self, head: Option<&Packet>, backlog: u64, now: Time, p: &CodelParams) -> bool {
        let Some(head) = head else {
            self.first_above_time = None;
            return false;
        };
        let sojourn = now.saturating_sub(head.enqueued_at);
        if sojourn < p.target || backlog <= p.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// Marks `pkt` CE when ECN is on and the packet can carry it (Linux `INET_ECN_set_ce`: ECT(0),
    /// ECT(1), or already CE).
    fn try_mark(pkt: &mut Packet, p: &CodelParams) -> bool {
        if p.ecn && pkt.ecn != Ecn::NotEct {
            pkt.ecn = Ecn::Ce;
            return true;
        }
        false
    }

    /// One CoDel dequeue from `q` (RFC 8289 section 5.4, Linux `codel_dequeue`): returns the
    /// packet to send, if any; packets dropped at the head are appended to `drops`. `others` is
    /// the bytes queued elsewhere that count toward the one-MTU test (FQ-CoDel's other queues).
    pub(crate) fn dequeue_behind(
        &mut self,
        q: &mut PacketFifo,
        others: u64,
        now: Time,
        p: &CodelParams,
        drops: &mut Vec<Evicted>,
        acts: &mut HeadActions,
    ) -> Option<Packet> {
        let mut drop_head = |q: &mut PacketFifo, pkt: Packet, acts: &mut HeadActions| {
            drops.push(Evicted { packet: pkt, reason: DropReason::Early });
            acts.dropped += 1;
            q.pop()
        };
        let Some(mut pkt) = q.pop() else {
            self.dropping = false;
            return None;
        };
        let ok_to_drop = self.should_drop(Some(&pkt), q.bytes() + others, now, p);
        if self.dropping {
            if !ok_to_drop {
                self.dropping = false; // sojourn below target: leave the dropping state
            } else {
                // Several drops may be due at once when the backlog is large (the RFC's while).
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.saturating_add(1);
                    if Self::try_mark(&mut pkt, p) {
                        acts.marked = true;
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                        return Some(pkt);
                    }
                    match drop_head(q, pkt, acts) {
                        Some(next) => pkt = next,
                        None => {
                            self.should_drop(None, 0, now, p);
                            self.dropping = false;
                            return None;
                        }
                    }
                    if self.should_drop(Some(&pkt), q.bytes() + others, now, p) {
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if ok_to_drop {
            if Self::try_mark(&mut pkt, p) {
                acts.marked = true;
            } else {
                match drop_head(q, pkt, acts) {
                    Some(next) => {
                        pkt = next;
                        self.should_drop(Some(&pkt), q.bytes() + others, now, p);
                    }
                    None => {
                        self.should_drop(None, 0, now, p);
                        self.enter_dropping(now, p);
                        return None;
                    }
                }
            }
            self.enter_dropping(now, p);
        }
        Some(pkt)
    }

    /// RFC 8289 section 5.6: the re-entry rule for `count`, then the first scheduled drop.
    fn enter_dropping(&mut self, now: Time, p: &CodelParams) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.lastcount);
        // `now - drop_next` may be negative (the last schedule lies ahead): signed, as Linux.
        let since_last = now.0 as i128 - self.drop_next.0 as i128;
        self.count = if delta > 1 && since_last < 16 * p.interval.0 as i128 { delta } else { 1 };
        self.lastcount = self.count;
        self.drop_next = self.control_law(now, p.interval);
    }
}

/// CoDel on one FIFO.
pub struct Codel {
    limit: Limit,
    params: CodelParams,
    q: PacketFifo,
    vars: CodelVars,
}

impl Codel {
    pub fn new(cfg: CodelConfig) -> Codel {
        Codel { limit: cfg.limit, params: cfg.params(), q: PacketFifo::default(), vars: CodelVars::default() }
    }

    /// The control state, for inspection.
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn enqueue(&mut self, pkt: Packet, _now: Time, _rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        // RFC 8289 section 5.1: CoDel itself never drops on arrival; only a full buffer does.
        if !self.q.admits(self.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.q.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        let mut acts = HeadActions::default();
        let packet = self.vars.dequeue_behind(&mut self.q, 0, now, &self.params, dropped, &mut acts)?;
        Some(Dequeued { packet, marked: acts.marked })
    }
    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn kind(&self) -> &'static str {
        "codel"
    }
    /// RFC 8289 section 5: whether CoDel is in its dropping state (1) or not (0), and its
    /// `count` of drops or marks since entering it.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        out.push(NamedStat { name: "dropping", value: self.vars.dropping as u8 as f64 });
        out.push(NamedStat { name: "drop_count", value: self.vars.count as f64 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::Queue;

    const MS: u64 = 1_000_000;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn queue(limit: Limit, ecn: bool) -> Queue {
        Queue::new(Box::new(Codel::new(CodelConfig { limit, ecn, ..CodelConfig::default() })))
    }

    /// A standing queue: 200 packets of 1000 B arrive at time 0; then one packet is dequeued every
    /// `gap` and the queue is refilled to 200 right after, so the head waits about 200 gaps.
    /// Returns the times of head drops (and of marks, with ECN) up to `until`.
    fn standing_queue(mut q: Queue, gap: Time, until: Time, ecn: Ecn) -> (Vec<Time>, Queue) {
        let mut rng = SimRng::stream(1, "t");
        let mut uid = 0;
        for _ in 0..200 {
            let mut p = pkt(uid, 0, 1000);
            p.ecn = ecn;
            q.enqueue(p, Time::ZERO, &mut rng);
            uid += 1;
        }
        let mut events = Vec::new();
        let mut now = Time::ZERO;
        while now <= until {
            let out = q.dequeue(now);
            for _ in out.dropped {
                events.push(now);
            }
            if out.marked {
                events.push(now);
            }
            // Refill what left so the backlog stays above one MTU.
            while q.len_packets() < 200 {
                let mut p = pkt(uid, 0, 1000);
                p.ecn = ecn;
                q.enqueue(p, now, &mut rng);
                uid += 1;
            }
            now += gap;
        }
        (events, q)
    }

    #[test]
    fn no_drop_while_sojourn_is_below_target() {
        // One arrival and one departure per ms behind a 4-packet backlog: every packet waits
        // 4 ms < 5 ms target, with 6000 B (more than an MTU) queued, however long it lasts.
        let mut q = queue(Limit::Packets(100), false);
        let mut rng = SimRng::stream(1, "t");
        for i in 0..5000u64 {
            let t = Time(i * MS);
            q.enqueue(pkt(i, 0, 1500), t, &mut rng);
            if i >= 4 {
                let out = q.dequeue(t);
                assert!(out.packet.is_some());
                assert!(out.dropped.is_empty(), "drop at {i} ms");
            }
        }
        assert_eq!(q.len_packets(), 4);
        q.check_invariants().unwrap();
    }

    #[test]
    fn no_drop_above_target_for_less_than_an_interval() {
        // The head's sojourn grows past target at ~5 ms; first drop one interval later.
        let (drops, q) = standing_queue(queue(Limit::Packets(300), false), ms(1), ms(400), Ecn::NotEct);
        let first = drops[0];
        // Sojourn reaches 5 ms at the first dequeue >= 5 ms, so the drop is at that + 100 ms.
        assert!(first >= ms(105) && first <= ms(106), "first drop at {first:?}");
        q.check_invariants().unwrap();
    }

    #[test]
    fn drop_spacing_follows_interval_over_sqrt_count() {
        // A backlog that never drains: successive drops at interval / sqrt(count), count = 1, 2, ...
        let (drops, _) = standing_queue(queue(Limit::Packets(300), false), Time(100_000), ms(1500), Ecn::NotEct);
        assert!(drops.len() > 10, "{} drops", drops.len());
        for (k, w) in drops.windows(2).enumerate().take(10) {
            let count = (k + 1) as f64;
            let expect = 100.0 / count.sqrt();
            let got = (w[1].0 - w[0].0) as f64 / MS as f64;
            // The dequeue clock ticks every 0.1 ms: a drop falls at most one tick late.
            assert!((got - expect).abs() <= 0.11, "gap {k}: {got} ms, want {expect} ms");
        }
    }

    #[test]
    fn byte_limit_queue_behaves_the_same() {
        let (pk, _) = standing_queue(queue(Limit::Packets(300), false), Time(100_000), ms(800), Ecn::NotEct);
        let (by, q) = standing_queue(queue(Limit::Bytes(300_000), false), Time(100_000), ms(800), Ecn::NotEct);
        assert_eq!(pk, by);
        q.check_invariants().unwrap();
        // A byte limit refuses what does not fit.
        let mut q = queue(Limit::Bytes(2500), false);
        let mut rng = SimRng::stream(1, "t");
        assert_eq!(q.enqueue(pkt(0, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Enqueued);
        assert_eq!(q.enqueue(pkt(1, 0, 1500), Time::ZERO, &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
    }

    #[test]
    fn ecn_marks_instead_of_dropping_on_the_same_schedule() {
        let (drops, _) = standing_queue(queue(Limit::Packets(300), false), Time(100_000), ms(800), Ecn::Ect0);
        let (marks, q) = standing_queue(queue(Limit::Packets(300), true), Time(100_000), ms(800), Ecn::Ect0);
        assert_eq!(q.stats().evicted_packets.iter().sum::<u64>(), 0);
        assert_eq!(q.stats().marked_packets as usize, marks.len());
        // A mark does not remove the packet, so the backlog (and the schedule) match only for the
        // first marks, which fall at the drop times.
        assert_eq!(marks[..3], drops[..3]);
        q.check_invariants().unwrap();
    }

    #[test]
    fn small_backlog_is_never_dropped() {
        // One packet of at most an MTU behind the head: no drop however long it waits.
        let mut q = queue(Limit::Packets(300), false);
        let mut rng = SimRng::stream(1, "t");
        q.enqueue(pkt(0, 0, 1500), Time::ZERO, &mut rng);
        q.enqueue(pkt(1, 0, 1500), Time::ZERO, &mut rng);
        q.enqueue(pkt(2, 0, 1500), Time::ZERO, &mut rng);
        for t in [300, 600, 900] {
            let out = q.dequeue(ms(t));
            assert!(out.packet.is_some());
            assert!(out.dropped.is_empty());
        }
    }

    #[test]
    fn count_decays_on_re_entry() {
        // Drive a dropping cycle to a high count, let the queue drain below target briefly, then
        // build it again within 16 intervals: count restarts at count - lastcount, not at 1.
        let params = CodelConfig::default().params();
        let mut v = CodelVars::default();
        let mut q = PacketFifo::default();
        let mut drops = Vec::new();
        let fill = |q: &mut PacketFifo, at: Time, n: u64| {
            for i in 0..n {
                let mut p = pkt(i, 0, 1000);
                p.enqueued_at = at;
                q.push(p);
            }
        };
        let mut acts = HeadActions::default();
        // First cycle: old packets, dequeued every 1 ms for 1 s.
        let mut now = Time::ZERO;
        fill(&mut q, Time::ZERO, 5000);
        while now < ms(1000) {
            v.dequeue_behind(&mut q, 0, now, &params, &mut drops, &mut acts);
            now += ms(1);
        }
        assert!(v.dropping);
        let first_count = v.count;
        assert!(first_count > 5, "count {first_count}");
        // A fresh packet (sojourn 0) leaves the dropping state.
        let mut q = PacketFifo::default();
        fill(&mut q, now, 5);
        v.dequeue_behind(&mut q, 0, now, &params, &mut drops, &mut acts);
        assert!(!v.dropping);
        // Old packets again shortly after: the re-entry keeps count - lastcount.
        let mut q = PacketFifo::default();
        fill(&mut q, now, 500);
        let start = now;
        while !v.dropping {
            now += ms(1);
            v.dequeue_behind(&mut q, 0, now, &params, &mut drops, &mut acts);
        }
        assert!(now - start <= ms(106), "re-entry took {:?}", now - start);
        assert_eq!(v.count, first_count - 1, "lastcount was 1 on the first entry");
        // Long after (> 16 intervals since the last drop): count starts at 1 again.
        let mut v2 = v.clone();
        v2.dropping = false;
        v2.lastcount = 1;
        let later = v2.drop_next + Time(16 * DEFAULT_INTERVAL_NS) + ms(1);
        v2.enter_dropping(later, &params);
        assert_eq!(v2.count, 1);
        let mut v3 = v.clone();
        v3.dropping = false;
        v3.lastcount = 1;
        let soon = v3.drop_next + ms(10);
        v3.enter_dropping(soon, &params);
        assert_eq!(v3.count, first_count - 2);
    }

    #[test]
    fn leaves_dropping_state_when_the_head_is_below_target() {
        let (_, mut q) = standing_queue(queue(Limit::Packets(300), false), ms(1), ms(300), Ecn::NotEct);
        // Drain and serve fresh packets: no more drops.
        while q.dequeue(ms(301)).packet.is_some() {}
        let mut rng = SimRng::stream(1, "t");
        for i in 0..10 {
            q.enqueue(pkt(10_000 + i, 0, 1000), ms(400), &mut rng);
        }
        for _ in 0..10 {
            let out = q.dequeue(ms(401));
            assert!(out.packet.is_some());
            assert!(out.dropped.is_empty());
        }
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let e = CodelConfig { target_ns: 200 * MS, ..CodelConfig::default() }.validate().unwrap_err();
        assert!(e.starts_with("target_ns") && e.contains("interval_ns"), "{e}");
        assert!(CodelConfig { target_ns: 0, ..CodelConfig::default() }.validate().unwrap_err().starts_with("target_ns"));
        assert!(CodelConfig { interval_ns: 0, ..CodelConfig::default() }.validate().unwrap_err().starts_with("interval_ns"));
        assert!(CodelConfig { mtu: 0, ..CodelConfig::default() }.validate().unwrap_err().starts_with("mtu"));
        assert!(CodelConfig { limit: Limit::Packets(0), ..CodelConfig::default() }.validate().unwrap_err().starts_with("limit"));
    }
}
