//! COBALT: CoDel and BLUE in parallel on one FIFO, as the `cobalt_*` functions of Linux
//! `net/sched/sch_cake.c` (J. Morton, T. Høiland-Jørgensen, D. Täht, "Piece of CAKE: A
//! Comprehensive Queue Management Solution for Home Gateways", LANMAN 2018, section 3.2)
//! run them in each CAKE flow queue; on its own, one queue, as ns-3's `CobaltQueueDisc`.
//!
//! * **CoDel half** (`cobalt_should_drop`): on each dequeued packet, a sojourn time above
//!   `target` enters the dropping state with the first signal due one `interval` later; while
//!   dropping, each packet dequeued at or after `drop_next` is CE-marked (if `ecn` and the
//!   packet is ECN-capable) or dropped, `count` grows by one and the next signal is scheduled
//!   at `drop_next + interval / sqrt(count)` (the CoDel control law, [`control_law`]). Unlike
//!   RFC 8289's CoDel, `count` is not reset when the state is left: while not dropping it
//!   decays by one per elapsed schedule step, so that re-entry starts near the rate that
//!   controlled the queue last time. `drop_next` doubles as an activity timeout: `now +
//!   interval` while `count` is 0, `now` when the schedule lies ahead and nothing was dropped.
//! * **BLUE half** (`cobalt_queue_full`, `cobalt_queue_empty`): `p_drop` rises by `p_inc` when
//!   the buffer overflows and falls by `p_dec` when a dequeue finds the queue empty, at most
//!   once per `target` each; every dequeued packet not already dropped is then dropped with
//!   probability `p_drop`, ECN or not ("Lack of ECN is deliberate", Linux). An overflow also
//!   puts the CoDel half into its dropping state with a signal due at once. ns-3's
//!   `CobaltQueueDisc` also raises `p_drop` when a dequeued packet waited more than
//!   `blue_threshold` (400 ms), so that an unresponsive flow is caught before the buffer fills
//!   (Linux has no such threshold; set it very high to get Linux's behaviour).
//! * **Dequeue loop** (ns-3 `CobaltQueueDisc::DoDequeue`): dropped packets are skipped until
//!   one is sent or the queue is empty. (Inside CAKE, Linux never drops a flow's last packet;
//!   standalone COBALT has no flows, so it follows ns-3.)
//!
//! `interval / sqrt(count)` is computed in floating point (Linux keeps `1/sqrt(count)` in fixed
//! point: a cached value below 16, one Newton step per change above).
//!
//! Random numbers: BLUE's rolls at dequeue come from a generator forked at the first arrival
//! from the `rng` the engine passes to `enqueue` ([`SimRng::fork`]).

use super::codel::control_law;
use super::shared::packet_fifo::PacketFifo;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CobaltConfig {
    /// Physical capacity, packets or bytes (ns-3 `CobaltQueueDisc` MaxSize: 1000 x 1500 B).
    #[serde(default = "default_limit")]
    pub limit: Limit,
    /// Acceptable standing sojourn time, and BLUE's update spacing (Linux cake and ns-3: 5 ms).
    #[serde(default = "default_target")]
    pub target_ns: u64,
    /// CoDel's interval (Linux cake and ns-3: 100 ms).
    #[serde(default = "default_interval")]
    pub interval_ns: u64,
    /// BLUE's increment of p_drop (Linux `cake_set_rate`: 1/256; ns-3 the same).
    #[serde(default = "default_p_inc")]
    pub p_inc: f64,
    /// BLUE's decrement of p_drop (Linux: 1/4096; ns-3 the same).
    #[serde(default = "default_p_dec")]
    pub p_dec: f64,
    /// Sojourn time above which a dequeue raises p_drop like an overflow (ns-3: 400 ms).
    #[serde(default = "default_blue_threshold")]
    pub blue_threshold_ns: u64,
    /// CE-mark ECN-capable packets instead of the CoDel drop (ns-3 default off; Linux cake
    /// always marks). BLUE always drops.
    #[serde(default)]
    pub ecn: bool,
}

fn default_limit() -> Limit {
    Limit::Bytes(1_500_000)
}
fn default_target() -> u64 {
    5_000_000
}
fn default_interval() -> u64 {
    100_000_000
}
fn default_p_inc() -> f64 {
    1.0 / 256.0
}
fn default_p_dec() -> f64 {
    1.0 / 4096.0
}
fn default_blue_threshold() -> u64 {
    400_000_000
}

impl Default for CobaltConfig {
    fn default() -> CobaltConfig {
        CobaltConfig {
            limit: default_limit(),
            target_ns: default_target(),
            interval_ns: default_interval(),
            p_inc: default_p_inc(),
            p_dec: default_p_dec(),
            blue_threshold_ns: default_blue_threshold(),
            ecn: false,
        }
    }
}

impl CobaltConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if self.target_ns == 0 {
            return Err("target_ns: must be > 0 (default 5 ms)".into());
        }
        if self.interval_ns == 0 {
            return Err("interval_ns: must be > 0 (default 100 ms)".into());
        }
        for (name, v) in [("p_inc", self.p_inc), ("p_dec", self.p_dec)] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return Err(format!("{name}: must be in (0, 1], got {v}"));
            }
        }
        Ok(())
    }

    pub(crate) fn params(&self) -> CobaltParams {
        CobaltParams {
            target: Time(self.target_ns),
            interval: Time(self.interval_ns),
            p_inc: self.p_inc,
            p_dec: self.p_dec,
            blue_threshold: Time(self.blue_threshold_ns),
            ecn: self.ecn,
            mtu_time: Time::ZERO,
            bulk_flows: 0,
        }
    }
}

/// The parameters of one COBALT instance (Linux `struct cobalt_params`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CobaltParams {
    pub target: Time,
    pub interval: Time,
    pub p_inc: f64,
    pub p_dec: f64,
    pub blue_threshold: Time,
    pub ecn: bool,
    /// Serialization time of one MTU at the shaped rate (Linux `mtu_time`): inside CAKE a
    /// sojourn counts as over target only above 4 of them too, so that a slow link's own
    /// packet time is not taken for a standing queue. Zero on its own (no rate).
    pub mtu_time: Time,
    /// Bulk flows of the CAKE tin in ingress mode (Linux `cobalt_should_drop`'s `bulk_flows`):
    /// a sojourn counts as over target only above 2 MTU times per bulk flow. 0 otherwise.
    pub bulk_flows: u32,
}

/// COBALT's state for one queue (Linux `struct cobalt_vars`).
#[derive(Clone, Debug, Default)]
pub struct CobaltVars {
    pub count: u32,
    pub dropping: bool,
    /// When the next CoDel signal is due, or the activity timeout (module docs).
    drop_next: Time,
    /// When BLUE last changed p_drop.
    blue_timer: Time,
    /// BLUE's drop probability.
    pub p_drop: f64,
}

/// `a - b` in signed nanoseconds (Linux `ktime_sub`): COBALT's schedule may lie ahead of now.
fn signed(a: Time, b: Time) -> i128 {
    a.0 as i128 - b.0 as i128
}

/// What [`CobaltVars::should_drop`] decided for a dequeued packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Signal {
    pub drop: bool,
    pub marked: bool,
}

impl CobaltVars {
    /// When the next CoDel signal is due, or the activity timeout (module docs).
    pub(crate) fn drop_next(&self) -> Time {
        self.drop_next
    }

    /// BLUE's update spacing: more than `target` since the last change (Linux compares with
    /// `>`).
    fn blue_due(&self, now: Time, p: &CobaltParams) -> bool {
        signed(now, self.blue_timer) > p.target.0 as i128
    }

    fn raise_blue(&mut self, now: Time, p: &CobaltParams) {
        if self.blue_due(now, p) {
            self.p_drop = (self.p_drop + p.p_inc).min(1.0);
            self.blue_timer = now;
        }
    }

    /// Linux `cobalt_queue_full`: the buffer overflowed at `now`.
    pub(crate) fn queue_full(&mut self, now: Time, p: &CobaltParams) {
        self.raise_blue(now, p);
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
    }

    /// Linux `cobalt_queue_empty`: a dequeue found the queue empty at `now`.
    pub(crate) fn queue_empty(&mut self, now: Time, p: &CobaltParams) {
        if self.p_drop > 0.0 && self.blue_due(now, p) {
            self.p_drop = (self.p_drop - p.p_dec).max(0.0);
            self.blue_timer = now;
        }
        self.dropping = false;
        if self.count > 0 && signed(now, self.drop_next) >= 0 {
            self.count -= 1;
            self.drop_next = control_law(self.drop_next, p.interval, self.count);
        }
    }

    /// Linux `cobalt_should_drop` (with ns-3's BLUE threshold) for `pkt`, just dequeued at
    /// `now`; may CE-mark it.
    pub(crate) fn should_drop(&mut self, pkt: &mut Packet, now: Time, p: &CobaltParams, rng: &mut SimRng) -> Signal {
        let sojourn = now.saturating_sub(pkt.enqueued_at);
        let mut schedule = signed(now, self.drop_next);
        let over_target = sojourn > p.target
            && sojourn.0 > p.mtu_time.0.saturating_mul(4)
            && sojourn.0 > p.mtu_time.0.saturating_mul(2).saturating_mul(p.bulk_flows as u64);
        let mut next_due = self.count > 0 && schedule >= 0;
        let mut signal = Signal { drop: false, marked: false };
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = control_law(now, p.interval, self.count);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            if p.ecn && pkt.ecn != Ecn::NotEct {
                pkt.ecn = Ecn::Ce;
                signal.marked = true;
            } else {
                signal.drop = true;
            }
            self.count = self.count.saturating_add(1);
            self.drop_next = control_law(self.drop_next, p.interval, self.count);
            schedule = signed(now, self.drop_next);
        } else {
            while next_due {
                self.count -= 1;
                self.drop_next = control_law(self.drop_next, p.interval, self.count);
                schedule = signed(now, self.drop_next);
                next_due = self.count > 0 && schedule >= 0;
            }
        }
        if sojourn > p.blue_threshold {
            self.raise_blue(now, p);
        }
        // BLUE, without ECN; rolled only for a packet not already dropped (Linux).
        if self.p_drop > 0.0 && !signal.drop && rng.uniform() < self.p_drop {
            signal.drop = true;
        }
        if self.count == 0 {
            self.drop_next = now + p.interval;
        } else if schedule > 0 && !signal.drop {
            self.drop_next = now;
        }
        signal
    }
}

/// COBALT on one FIFO.
pub struct Cobalt {
    limit: Limit,
    params: CobaltParams,
    q: PacketFifo,
    vars: CobaltVars,
    /// BLUE's rolls (module docs); `None` until the first arrival.
    dequeue_rng: Option<SimRng>,
}

impl Cobalt {
    pub fn new(cfg: CobaltConfig) -> Cobalt {
        Cobalt { limit: cfg.limit, params: cfg.params(), q: PacketFifo::default(), vars: CobaltVars::default(), dequeue_rng: None }
    }

    /// The control state, for inspection.
    pub fn vars(&self) -> &CobaltVars {
        &self.vars
    }
}

impl Qdisc for Cobalt {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        if self.dequeue_rng.is_none() {
            self.dequeue_rng = Some(rng.fork());
        }
        if !self.q.admits(self.limit, pkt.size) {
            self.vars.queue_full(now, &self.params);
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.q.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        loop {
            let Some(mut packet) = self.q.pop() else {
                self.vars.queue_empty(now, &self.params);
                return None;
            };
            // A packet is queued, so the first arrival has forked the generator.
            let rng = self.dequeue_rng.as_mut().expect("forked at the first arrival");
            let signal = self.vars.should_drop(&mut packet, now, &self.params, rng);
            if signal.drop {
                dropped.push(Evicted { packet, reason: DropReason::Early });
                continue;
            }
            return Some(Dequeued { packet, marked: signal.marked });
        }
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    fn kind(&self) -> &'static str {
        "cobalt"
    }
    /// BLUE's drop probability, and the CoDel half's state and count.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        out.push(NamedStat { name: "drop_probability", value: self.vars.p_drop });
        out.push(NamedStat { name: "dropping", value: self.vars.dropping as u8 as f64 });
        out.push(NamedStat { name: "drop_count", value: self.vars.count as f64 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    /// A link serving one 1000 B packet per ms, fed by an unresponsive Not-ECT flow of
    /// `per_ms` packets per ms for `seconds`; returns the overflow drops and the head drops of
    /// each second.
    fn unresponsive(q: &mut Cobalt, per_ms: u64, seconds: u64) -> Vec<(u32, u32)> {
        let mut rng = SimRng::stream(3, "cobalt-test");
        let mut ev = Vec::new();
        let mut out = vec![(0, 0); seconds as usize];
        let mut uid = 0;
        for t in 0..seconds * 1000 {
            let now = ms(t);
            let sec = (t / 1000) as usize;
            for _ in 0..per_ms {
                let mut p = pkt(uid, 1, 1000);
                p.enqueued_at = now;
                uid += 1;
                if q.enqueue(p, now, &mut rng, &mut ev) == Verdict::Dropped(DropReason::Overflow) {
                    out[sec].0 += 1;
                }
            }
            let mut dropped = Vec::new();
            q.dequeue(now, &mut dropped);
            out[sec].1 += dropped.len() as u32;
        }
        out
    }

    #[test]
    fn blue_stops_an_unresponsive_flow_from_filling_the_buffer() {
        // Twice the link rate into a 50-packet buffer: BLUE's p_drop climbs by 1/256 per 5 ms
        // of overflow until about half the arrivals are dropped at the head, and the buffer
        // stops overflowing.
        let mut q = Cobalt::new(CobaltConfig { limit: Limit::Packets(50), ..CobaltConfig::default() });
        let per_sec = unresponsive(&mut q, 2, 10);
        let p = q.vars().p_drop;
        assert!((0.4..0.7).contains(&p), "p_drop {p}");
        let late_overflow: u32 = per_sec[5..].iter().map(|s| s.0).sum();
        let late_head: u32 = per_sec[5..].iter().map(|s| s.1).sum();
        assert!(per_sec[0].0 > 100, "the first second overflows: {per_sec:?}");
        assert!(late_overflow < 50, "overflow after BLUE settles: {per_sec:?}");
        assert!(late_head > 4000, "head drops do the work instead: {per_sec:?}");
        // The mechanism: with BLUE's step made negligible, CoDel alone leaves the buffer
        // overflowing for seconds (its drop rate grows only with sqrt(count)).
        let mut q = Cobalt::new(CobaltConfig { limit: Limit::Packets(50), p_inc: 1e-9, ..CobaltConfig::default() });
        let per_sec = unresponsive(&mut q, 2, 10);
        let late_overflow: u32 = per_sec[5..].iter().map(|s| s.0).sum();
        assert!(late_overflow > 1000, "CoDel alone: {per_sec:?}");
    }

    #[test]
    fn blue_rises_on_overflow_and_falls_on_empty_at_most_once_per_target() {
        let p = CobaltConfig::default().params();
        let mut v = CobaltVars::default();
        v.queue_full(ms(6), &p);
        v.queue_full(ms(8), &p); // within target of the last change: no step
        assert_eq!(v.p_drop, 1.0 / 256.0);
        assert!(v.dropping && v.count == 1);
        v.queue_full(ms(12), &p);
        assert_eq!(v.p_drop, 2.0 / 256.0);
        v.queue_empty(ms(15), &p); // within target: no step
        assert_eq!(v.p_drop, 2.0 / 256.0);
        v.queue_empty(ms(18), &p);
        assert_eq!(v.p_drop, 2.0 / 256.0 - 1.0 / 4096.0);
        assert!(!v.dropping);
        // Decays to exactly 0, never below.
        for t in 1..100 {
            v.queue_empty(ms(18 + 6 * t), &p);
        }
        assert_eq!(v.p_drop, 0.0);
    }

    #[test]
    fn a_long_sojourn_raises_blue_without_an_overflow() {
        // ns-3's threshold: a packet that waited more than 400 ms raises p_drop.
        let p = CobaltConfig::default().params();
        let mut rng = SimRng::stream(1, "t");
        let mut v = CobaltVars::default();
        let mut head = pkt(1, 1, 1000);
        v.should_drop(&mut head, ms(399), &p, &mut rng);
        assert_eq!(v.p_drop, 0.0);
        let mut head = pkt(2, 1, 1000);
        v.should_drop(&mut head, ms(401), &p, &mut rng);
        assert_eq!(v.p_drop, 1.0 / 256.0);
    }

    #[test]
    fn the_codel_half_follows_the_control_law() {
        // A standing queue: signals one interval after the first packet above target, then
        // interval / sqrt(count) apart.
        let mut q = Cobalt::new(CobaltConfig { limit: Limit::Packets(1000), ..CobaltConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        let mut uid = 0;
        let mut fill = |q: &mut Cobalt, now: Time, uid: &mut u64| {
            while q.len_packets() < 200 {
                let mut p = pkt(*uid, 1, 1000);
                p.enqueued_at = now.saturating_sub(ms(20));
                *uid += 1;
                q.enqueue(p, now, &mut rng, &mut ev);
            }
        };
        let mut drops = Vec::new();
        for t in 0..600 {
            fill(&mut q, ms(t), &mut uid);
            let mut dropped = Vec::new();
            q.dequeue(ms(t), &mut dropped);
            drops.extend(dropped.iter().map(|_| t));
        }
        // The packets of time 0 exceed the 5 ms target first at 6 ms: the first signal is due
        // at 106 ms.
        assert_eq!(drops[0], 106, "{drops:?}");
        for (k, w) in drops.windows(2).enumerate() {
            let want = 100.0 / ((k + 2) as f64).sqrt();
            assert!(((w[1] - w[0]) as f64 - want).abs() <= 1.0, "gap {k}: {drops:?}");
        }
        assert!(q.vars().p_drop == 0.0, "no overflow, no long sojourn: BLUE stays off");
    }

    #[test]
    fn ecn_marks_the_codel_signal_but_blue_still_drops() {
        let p = CobaltConfig { ecn: true, ..CobaltConfig::default() }.params();
        let mut rng = SimRng::stream(1, "t");
        let mut v = CobaltVars { count: 3, dropping: true, ..CobaltVars::default() };
        let mut head = pkt(1, 1, 1000);
        head.ecn = Ecn::Ect0;
        let s = v.should_drop(&mut head, ms(20), &p, &mut rng);
        assert_eq!(s, Signal { drop: false, marked: true });
        assert_eq!(head.ecn, Ecn::Ce);
        v.p_drop = 1.0;
        let mut head = pkt(2, 1, 1000);
        head.ecn = Ecn::Ect0;
        assert!(v.should_drop(&mut head, ms(21), &p, &mut rng).drop);
    }

    #[test]
    fn validation_names_the_field() {
        let d = CobaltConfig::default;
        assert!(d().validate().is_ok());
        assert!(CobaltConfig { target_ns: 0, ..d() }.validate().unwrap_err().starts_with("target_ns"));
        assert!(CobaltConfig { interval_ns: 0, ..d() }.validate().unwrap_err().starts_with("interval_ns"));
        assert!(CobaltConfig { p_inc: 0.0, ..d() }.validate().unwrap_err().starts_with("p_inc"));
        assert!(CobaltConfig { p_dec: 2.0, ..d() }.validate().unwrap_err().starts_with("p_dec"));
    }
}
