//! PIE: Proportional Integral controller Enhanced, after RFC 8033 (R. Pan, P. Natarajan, F. Baker,
//! G. White, "Proportional Integral Controller Enhanced (PIE): A Lightweight Control Scheme to
//! Address the Bufferbloat Problem", 2017) and Linux `net/sched/sch_pie.c` / `include/net/pie.h`.
//!
//! * **Drop on arrival** (section 4.1): an arrival is dropped with probability `drop_prob`,
//!   except during the burst allowance, or while the latest delay estimate is below half the
//!   target with `drop_prob` < 20 %, or while at most two `mtu` are queued (Appendix A,
//!   `drop_early`). In `bytemode` the probability is scaled by `size / mtu`.
//! * **Probability update every `t_update`** (section 4.2): `p = alpha (qdelay - target) +
//!   beta (qdelay - qdelay_old)` (alpha, beta in 1/s, delays in s), auto-tuned by the size of
//!   `drop_prob`: divided by 2048, 512, 128, 32, 8, 2 below 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1
//!   (section 4.2's scaling table; Linux the same), capped at 0.02 once `drop_prob` >= 10 %
//!   (section 5.5, cap drop adjustment), plus 0.02 while qdelay exceeds 250 ms (Linux's
//!   non-linear boost). With no delay in this or the last update, `drop_prob` decays by 2 %
//!   (section 4.2). The update is a timer in Linux; here it runs lazily, every elapsed
//!   `t_update` boundary being processed in order at the next arrival or departure, which is
//!   the same as a timer because nothing changes between packets.
//! * **Queue delay** (section 4.3): with `estimator = "timestamp"` (Linux's and ns-3's default),
//!   the sojourn time of the last departed packet (0 when the queue emptied); with `"rate"`,
//!   Little's law on the backlog and a departure rate measured over cycles of `dq_threshold`
//!   bytes (section 5.2, Linux `pie_process_dequeue`; averaged with weight 1/8 as Linux).
//! * **Burst allowance** (section 4.4): starts at `max_burst`, decreases by `t_update` each
//!   update, and is restored when `drop_prob` is 0 and the delay was below target/2 in this and
//!   the last update; while positive, nothing is dropped early.
//! * **ECN** (section 5.1): with `ecn`, an ECN-capable packet selected for dropping is CE-marked
//!   instead while `drop_prob` <= `mark_ecn_threshold` (10 %).
//! * **Derandomization** (section 5.4, optional, off by default as ns-3; Linux always uses it):
//!   `accu_prob` sums the probabilities since the last drop; no drop while it is below 0.85, a
//!   certain drop once it reaches 8.5, so drops are neither too close nor too far apart.
//!
//! Random numbers come only from the `rng` the engine passes to `enqueue`.

use super::shared::lazy_timer::LazyTimer;
use super::shared::packet_fifo::PacketFifo;
use super::shared::pi_controller::pi_increment;
use super::{Dequeued, DropReason, Evicted, NamedStat, Qdisc, Verdict};
use crate::packet::{Ecn, Packet};
use crate::rng::SimRng;
use crate::units::{Limit, Time};
use serde::{Deserialize, Serialize};

/// How PIE estimates the queue delay (module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PieEstimator {
    #[default]
    Timestamp,
    Rate,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Physical capacity, packets or bytes (default 1000 packets, as Linux).
    #[serde(default = "default_limit")]
    pub limit: Limit,
    /// Target queue delay, QDELAY_REF (RFC 8033 section 4.2: 15 ms).
    #[serde(default = "default_15ms")]
    pub target_ns: u64,
    /// Update period of the drop probability, T_UPDATE (section 4.2: 15 ms).
    #[serde(default = "default_15ms")]
    pub t_update_ns: u64,
    /// Weight of the delay error, 1/s (section 4.2: 0.125).
    #[serde(default = "default_alpha")]
    pub alpha: f64,
    /// Weight of the delay trend, 1/s (section 4.2: 1.25).
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Burst allowance, MAX_BURST (section 4.4: 150 ms).
    #[serde(default = "default_max_burst")]
    pub max_burst_ns: u64,
    /// CE-mark ECN-capable packets instead of dropping while drop_prob <= mark_ecn_threshold.
    #[serde(default)]
    pub ecn: bool,
    /// Highest drop probability at which ECN marks instead of drops (section 5.1: 10 %).
    #[serde(default = "default_mark_threshold")]
    pub mark_ecn_threshold: f64,
    /// Scale the drop probability by packet size / mtu (Linux `bytemode`, default off).
    #[serde(default)]
    pub bytemode: bool,
    /// Largest (mean, in RFC 8033's pseudocode) packet: the 2-packet no-drop floor and the
    /// bytemode unit (default 1500 B).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Spread drops with the accumulated probability (section 5.4, default off).
    #[serde(default)]
    pub derandomize: bool,
    /// Queue delay from packet timestamps (default, as Linux and ns-3) or the departure rate.
    #[serde(default)]
    pub estimator: PieEstimator,
    /// Bytes per departure-rate measurement cycle (section 5.2 / Linux: 16 KiB).
    #[serde(default = "default_dq_threshold")]
    pub dq_threshold: u32,
}

fn default_limit() -> Limit {
    Limit::Packets(1000)
}
pub(crate) fn default_15ms() -> u64 {
    15_000_000
}
pub(crate) fn default_alpha() -> f64 {
    0.125
}
pub(crate) fn default_beta() -> f64 {
    1.25
}
pub(crate) fn default_max_burst() -> u64 {
    150_000_000
}
fn default_mark_threshold() -> f64 {
    0.1
}
pub(crate) fn default_mtu() -> u32 {
    1500
}
pub(crate) fn default_dq_threshold() -> u32 {
    16_384
}

impl Default for PieConfig {
    fn default() -> PieConfig {
        PieConfig {
            limit: default_limit(),
            target_ns: default_15ms(),
            t_update_ns: default_15ms(),
            alpha: default_alpha(),
            beta: default_beta(),
            max_burst_ns: default_max_burst(),
            ecn: false,
            mark_ecn_threshold: default_mark_threshold(),
            bytemode: false,
            mtu: default_mtu(),
            derandomize: false,
            estimator: PieEstimator::Timestamp,
            dq_threshold: default_dq_threshold(),
        }
    }
}

impl PieConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if self.target_ns == 0 {
            return Err("target_ns: must be > 0 (RFC 8033 default 15 ms)".into());
        }
        if self.t_update_ns == 0 {
            return Err("t_update_ns: must be > 0 (RFC 8033 default 15 ms)".into());
        }
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return Err(format!("alpha: must be >= 0 (RFC 8033 default 0.125), got {}", self.alpha));
        }
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(format!("beta: must be >= 0 (RFC 8033 default 1.25), got {}", self.beta));
        }
        if !(self.mark_ecn_threshold >= 0.0 && self.mark_ecn_threshold <= 1.0) {
            return Err(format!("mark_ecn_threshold: must be in [0, 1], got {}", self.mark_ecn_threshold));
        }
        if self.mtu == 0 {
            return Err("mtu: must be at least 1 byte".into());
        }
        if self.dq_threshold == 0 {
            return Err("dq_threshold: must be at least 1 byte (default 16384)".into());
        }
        Ok(())
    }
}

/// Section 4.2's auto-tuning: the step is scaled down while the probability is small.
fn tune(p: f64, drop_prob: f64) -> f64 {
    const TABLE: [(f64, f64); 6] = [(1e-6, 2048.0), (1e-5, 512.0), (1e-4, 128.0), (1e-3, 32.0), (1e-2, 8.0), (0.1, 2.0)];
    TABLE.iter().find(|(below, _)| drop_prob < *below).map_or(p, |(_, div)| p / div)
}

/// The departure-rate measurement of section 5.2.
#[derive(Clone, Debug, Default, PartialEq)]
struct RateEstimator {
    /// Bytes departed in the current cycle; `None` while no cycle runs.
    count: Option<u64>,
    started: Time,
    /// Average departure rate, bytes per second (0 until the first cycle ends).
    avg: f64,
}

impl RateEstimator {
    /// After a departure of `size` bytes leaving `backlog` bytes queued.
    fn on_dequeue(&mut self, size: u64, backlog: u64, now: Time, threshold: u64) {
        // A cycle starts once the backlog is large enough to measure a drain rate.
        if self.count.is_none() && backlog + size >= threshold {
            self.count = Some(0);
            self.started = now;
        }
        let Some(count) = self.count.as_mut() else { return };
        *count += size;
        if *count < threshold {
            return;
        }
        let elapsed = (now - self.started).as_secs_f64();
        if elapsed <= 0.0 {
            return;
        }
        let rate = *count as f64 / elapsed;
        self.avg = if self.avg == 0.0 { rate } else { self.avg * 7.0 / 8.0 + rate / 8.0 };
        // Continue measuring while the backlog allows it; otherwise keep the last rate.
        if backlog < threshold {
            self.count = None;
        } else {
            self.count = Some(0);
            self.started = now;
        }
    }
}

/// PIE's state for one queue (Linux `struct pie_vars`): shared with [`super::fq_pie`], which
/// runs one per flow queue with the parameters of one [`PieConfig`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PieVars {
    /// The drop probability, in [0, 1].
    pub drop_prob: f64,
    /// Delay estimate of the last update (RFC 8033's `qdelay_old` once the next update runs).
    pub qdelay: Time,
    pub burst_allowance: Time,
    accu_prob: f64,
    /// Sojourn time of the last departure (timestamp estimator).
    last_sojourn: Time,
    rate: RateEstimator,
}

impl PieVars {
    pub fn new(cfg: &PieConfig) -> PieVars {
        PieVars {
            burst_allowance: Time(cfg.max_burst_ns),
            drop_prob: 0.0,
            qdelay: Time::ZERO,
            accu_prob: 0.0,
            last_sojourn: Time::ZERO,
            rate: RateEstimator::default(),
        }
    }

    /// The delay estimate of a queue holding `backlog` bytes.
    fn current_delay(&self, cfg: &PieConfig, backlog: u64) -> Time {
        match cfg.estimator {
            PieEstimator::Timestamp => self.last_sojourn,
            // Little's law (section 4.3): backlog / departure rate.
            PieEstimator::Rate if self.rate.avg > 0.0 => Time::from_secs_f64(backlog as f64 / self.rate.avg),
            PieEstimator::Rate => Time::ZERO,
        }
    }

    /// Section 4.2 (and 4.4 for the burst allowance): one probability update of a queue
    /// holding `backlog` bytes.
    pub fn update(&mut self, cfg: &PieConfig, backlog: u64) {
        let (qdelay, old) = (self.current_delay(cfg, backlog), self.qdelay);
        let target = Time(cfg.target_ns);
        let mut p = tune(pi_increment(cfg.alpha, cfg.beta, qdelay, old, target), self.drop_prob);
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02; // section 5.5: at most 2 % per step at high probability
        }
        if qdelay > Time::from_millis(250) {
            p += 0.02; // Linux: faster response to a very long queue
        }
        self.drop_prob += p;
        if qdelay == Time::ZERO && old == Time::ZERO {
            self.drop_prob *= 0.98; // section 4.2: decay while idle
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance = self.burst_allowance.saturating_sub(Time(cfg.t_update_ns));
        let half = Time(cfg.target_ns / 2);
        if self.drop_prob == 0.0 && qdelay < half && old < half {
            self.burst_allowance = Time(cfg.max_burst_ns);
        }
        self.qdelay = qdelay;
    }

    /// Appendix A `drop_early` for an arrival of `size` bytes to a queue holding `backlog`
    /// bytes, with section 5.4's derandomization when enabled.
    pub fn drop_early(&mut self, cfg: &PieConfig, backlog: u64, size: u32, rng: &mut SimRng) -> bool {
        if self.burst_allowance > Time::ZERO {
            return false;
        }
        let low_delay = self.qdelay < Time(cfg.target_ns / 2) && self.drop_prob < 0.2;
        if low_delay || backlog <= 2 * cfg.mtu as u64 {
            return false;
        }
        let mut p = self.drop_prob;
        if cfg.bytemode {
            p *= size as f64 / cfg.mtu as f64;
        }
        if cfg.derandomize {
            if self.drop_prob == 0.0 {
                self.accu_prob = 0.0;
            }
            self.accu_prob += p;
            if self.accu_prob < 0.85 {
                return false;
            }
            if self.accu_prob >= 8.5 {
                self.accu_prob = 0.0;
                return true;
            }
        }
        if rng.uniform() < p {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// Whether an update of a queue holding `backlog` bytes would change nothing: a queue
    /// at rest need not be updated until a packet arrives or leaves (FQ-PIE's idle buckets).
    pub fn at_rest(&self, cfg: &PieConfig, backlog: u64) -> bool {
        let mut next = self.clone();
        next.update(cfg, backlog);
        next == *self
    }

    /// After a drop of an arrival (Linux `fq_pie_qdisc_enqueue`: the derandomization sum
    /// restarts).
    pub fn on_drop(&mut self) {
        self.accu_prob = 0.0;
    }

    /// Linux `pie_process_dequeue`: `p` left at `now`, `backlog` bytes stay queued behind it
    /// (none at all if `emptied`).
    pub fn on_dequeue(&mut self, cfg: &PieConfig, p: &Packet, backlog: u64, emptied: bool, now: Time) {
        // An emptied queue has no delay.
        self.last_sojourn = if emptied { Time::ZERO } else { now.saturating_sub(p.enqueued_at) };
        if cfg.estimator == PieEstimator::Rate {
            self.rate.on_dequeue(p.size as u64, backlog, now, cfg.dq_threshold as u64);
        }
    }
}

pub struct Pie {
    cfg: PieConfig,
    q: PacketFifo,
    vars: PieVars,
    /// When the next probability update is due.
    timer: LazyTimer,
}

impl Pie {
    pub fn new(cfg: PieConfig) -> Pie {
        Pie { timer: LazyTimer::new(cfg.t_update_ns), vars: PieVars::new(&cfg), cfg, q: PacketFifo::default() }
    }

    pub fn drop_prob(&self) -> f64 {
        self.vars.drop_prob
    }
    pub fn burst_allowance(&self) -> Time {
        self.vars.burst_allowance
    }
    /// The latest queue-delay estimate.
    pub fn qdelay(&self) -> Time {
        self.vars.qdelay
    }

    /// Runs every update due by `now` (module docs: a lazy timer, [`LazyTimer`]).
    fn catch_up(&mut self, now: Time) {
        let mut timer = self.timer;
        timer.catch_up(now, |_| self.update());
        self.timer = timer;
    }

    #[cfg(test)]
    fn current_delay(&self) -> Time {
        self.vars.current_delay(&self.cfg, self.q.bytes())
    }

    fn update(&mut self) {
        self.vars.update(&self.cfg, self.q.bytes());
    }

    fn drop_early(&mut self, size: u32, rng: &mut SimRng) -> bool {
        self.vars.drop_early(&self.cfg, self.q.bytes(), size, rng)
    }
}

impl Qdisc for Pie {
    fn enqueue(&mut self, mut pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        self.catch_up(now);
        if !self.q.admits(self.cfg.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        if self.drop_early(pkt.size, rng) {
            let markable = self.cfg.ecn && pkt.ecn.is_ect() && self.vars.drop_prob <= self.cfg.mark_ecn_threshold;
            if !markable {
                return Verdict::Dropped(DropReason::Early);
            }
            pkt.ecn = Ecn::Ce;
            self.q.push(pkt);
            return Verdict::Marked;
        }
        self.q.push(pkt);
        Verdict::Enqueued
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<Evicted>) -> Option<Dequeued> {
        self.catch_up(now);
        let p = self.q.pop()?;
        self.vars.on_dequeue(&self.cfg, &p, self.q.bytes(), self.q.is_empty(), now);
        Some(Dequeued::unmarked(p))
    }

    fn len_packets(&self) -> usize {
        self.q.len()
    }
    fn len_bytes(&self) -> u64 {
        self.q.bytes()
    }
    /// PIE keeps no average queue length; its state is its drop probability (RFC 8033
    /// section 4.2), reported under that name.
    fn named_stats(&self, out: &mut Vec<NamedStat>) {
        out.push(NamedStat { name: "drop_probability", value: self.vars.drop_prob });
    }
    fn kind(&self) -> &'static str {
        "pie"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::testutil::PopPacket;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    /// A link serving one 1000 B packet per ms (8 Mbit/s) fed at `arrivals_per_ms`, from `from`
    /// to `until`; returns the drop probability after each update period and the verdicts.
    fn drive(pie: &mut Pie, from: u64, until: u64, arrivals_per_ms: u32, limit_pkts: usize) -> (Vec<f64>, Vec<Verdict>) {
        let mut rng = SimRng::stream(7, "pie");
        let mut ev = Vec::new();
        let mut probs = Vec::new();
        let mut verdicts = Vec::new();
        for t in from..until {
            let now = ms(t);
            for k in 0..arrivals_per_ms {
                let mut p = pkt(t * 100 + k as u64, 0, 1000);
                p.enqueued_at = now;
                if pie.len_packets() < limit_pkts {
                    verdicts.push(pie.enqueue(p, now, &mut rng, &mut ev));
                }
            }
            pie.pop_packet(now);
            if t % 15 == 14 {
                probs.push(pie.drop_prob());
            }
        }
        (probs, verdicts)
    }

    #[test]
    fn probability_rises_under_a_standing_queue_and_decays_when_it_empties() {
        for limit in [Limit::Packets(10_000), Limit::Bytes(10_000_000)] {
            let mut pie = Pie::new(PieConfig { limit, ..PieConfig::default() });
            // 2 arrivals per departure: the queue and its delay grow well above 15 ms.
            let (probs, _) = drive(&mut pie, 0, 600, 2, 10_000);
            assert!(probs.last().unwrap() > &0.05, "{limit:?}: {probs:?}");
            let rising = probs.windows(2).skip(12).filter(|w| w[1] >= w[0]).count();
            assert!(rising * 10 >= 9 * (probs.len() - 13), "{limit:?}: not rising {probs:?}");
            // Arrivals stop: the queue drains, the delay falls to 0 and the probability to 0.
            let peak = pie.drop_prob();
            let (after, _) = drive(&mut pie, 600, 8000, 0, 10_000);
            assert!(after.iter().any(|p| *p < peak / 2.0), "{limit:?}");
            assert_eq!(*after.last().unwrap(), 0.0, "{limit:?}: {:?}", &after[after.len() - 5..]);
            // And once at 0 with a low delay, the burst allowance is back.
            assert_eq!(pie.burst_allowance(), Time(150_000_000));
        }
    }

    #[test]
    fn the_burst_allowance_lets_an_initial_burst_through() {
        // 150 ms of 2x overload from an idle start: nothing dropped while the allowance lasts,
        // although the delay is far above target.
        let mut pie = Pie::new(PieConfig::default());
        let (_, verdicts) = drive(&mut pie, 0, 140, 2, 10_000);
        assert!(verdicts.iter().all(|v| *v == Verdict::Enqueued));
        assert!(pie.qdelay() > ms(15), "{:?}", pie.qdelay());
        // Without a burst allowance the same load is dropped early.
        let mut pie = Pie::new(PieConfig { max_burst_ns: 0, ..PieConfig::default() });
        let (_, verdicts) = drive(&mut pie, 0, 600, 2, 10_000);
        assert!(verdicts.contains(&Verdict::Dropped(DropReason::Early)));
    }

    #[test]
    fn update_follows_the_rfc_formula_and_scaling() {
        let mut pie = Pie::new(PieConfig::default());
        pie.vars.burst_allowance = Time::ZERO;
        pie.vars.last_sojourn = ms(45); // 30 ms above target, from 0
        pie.update();
        // p = 0.125 * 0.030 + 1.25 * 0.045 = 0.06, scaled by 1/2048 at drop_prob 0.
        assert!((pie.vars.drop_prob - 0.06 / 2048.0).abs() < 1e-12, "{}", pie.vars.drop_prob);
        pie.vars.drop_prob = 0.05;
        pie.update(); // qdelay 45 again: p = 0.125 * 0.030 = 0.00375, /2 at 1e-2 <= prob < 0.1
        assert!((pie.vars.drop_prob - (0.05 + 0.00375 / 2.0)).abs() < 1e-12, "{}", pie.vars.drop_prob);
        pie.vars.drop_prob = 0.5;
        pie.vars.last_sojourn = ms(300);
        pie.update(); // a big step is capped at 0.02, plus 0.02 above 250 ms
        assert!((pie.vars.drop_prob - 0.54).abs() < 1e-12, "{}", pie.vars.drop_prob);
        assert_eq!(tune(1.0, 0.0), 1.0 / 2048.0);
        assert_eq!(tune(1.0, 0.5), 1.0);
    }

    #[test]
    fn derandomization_bounds_the_gap_between_drops() {
        // Fixed drop_prob: with derandomization no two drops are closer than 0.85 / p arrivals
        // and none further apart than 8.5 / p.
        let p = 0.1;
        let mut pie = Pie::new(PieConfig { derandomize: true, t_update_ns: u64::MAX / 4, ..PieConfig::default() });
        pie.vars.burst_allowance = Time::ZERO;
        pie.vars.qdelay = ms(30);
        let mut rng = SimRng::stream(3, "t");
        let mut gaps = Vec::new();
        let mut since = 0;
        for i in 0..20_000 {
            pie.vars.drop_prob = p;
            while pie.q.len() < 5 {
                pie.q.push(pkt(1_000_000 + i, 1, 1000));
            }
            since += 1;
            if pie.drop_early(1000, &mut rng) {
                gaps.push(since);
                since = 0;
            }
        }
        let (lo, hi) = (*gaps.iter().min().unwrap(), *gaps.iter().max().unwrap());
        assert!(lo >= 9 && hi <= 86, "gaps {lo}..{hi}");
        // Without it, gaps are geometric: some are shorter than 9 and the spread is larger.
        let mut pie2 = Pie::new(PieConfig { t_update_ns: u64::MAX / 4, ..PieConfig::default() });
        pie2.vars.burst_allowance = Time::ZERO;
        pie2.vars.qdelay = ms(30);
        let mut gaps2 = Vec::new();
        since = 0;
        for i in 0..20_000 {
            pie2.vars.drop_prob = p;
            while pie2.q.len() < 5 {
                pie2.q.push(pkt(1_000_000 + i, 1, 1000));
            }
            since += 1;
            if pie2.drop_early(1000, &mut rng) {
                gaps2.push(since);
                since = 0;
            }
        }
        assert!(*gaps2.iter().min().unwrap() < 9);
    }

    #[test]
    fn bytemode_drops_large_packets_more_often() {
        let count = |size: u32| {
            let mut pie =
                Pie::new(PieConfig { bytemode: true, limit: Limit::Bytes(1_000_000), t_update_ns: u64::MAX / 4, ..PieConfig::default() });
            pie.vars.burst_allowance = Time::ZERO;
            pie.vars.qdelay = ms(30);
            for i in 0..10 {
                pie.q.push(pkt(i, 1, 1000));
            }
            let mut rng = SimRng::stream(5, "t");
            (0..20_000)
                .filter(|_| {
                    pie.vars.drop_prob = 0.05;
                    pie.drop_early(size, &mut rng)
                })
                .count()
        };
        let (small, large) = (count(150), count(1500));
        assert!(large as f64 > 5.0 * small as f64, "small {small} large {large}");
    }

    #[test]
    fn ecn_marks_below_the_threshold_and_drops_above() {
        let mut rng = SimRng::stream(5, "t");
        for (prob, want) in [(0.08, Verdict::Marked), (0.3, Verdict::Dropped(DropReason::Early))] {
            let mut pie = Pie::new(PieConfig { ecn: true, t_update_ns: u64::MAX / 4, ..PieConfig::default() });
            pie.vars.burst_allowance = Time::ZERO;
            pie.vars.qdelay = ms(30);
            let mut ev = Vec::new();
            let mut seen = false;
            for i in 0..500 {
                pie.vars.drop_prob = prob;
                let mut p = pkt(i, 0, 1000);
                p.ecn = Ecn::Ect0;
                let v = pie.enqueue(p, Time::ZERO, &mut rng, &mut ev);
                assert!(v == Verdict::Enqueued || v == want, "{prob}: {v:?}");
                seen |= v == want;
            }
            assert!(seen, "{prob}");
        }
    }

    #[test]
    fn rate_estimator_measures_the_departure_rate() {
        // 1000 B per ms departing: 1 MB/s; a 50-packet backlog is then 50 ms of delay.
        let mut pie = Pie::new(PieConfig { estimator: PieEstimator::Rate, ..PieConfig::default() });
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..400 {
            pie.enqueue(pkt(i, 0, 1000), Time::ZERO, &mut rng, &mut ev);
        }
        for t in 1..=300 {
            pie.pop_packet(ms(t));
        }
        assert!((pie.vars.rate.avg - 1e6).abs() / 1e6 < 0.01, "{}", pie.vars.rate.avg);
        let d = pie.current_delay();
        assert!((d.as_secs_f64() - 0.1).abs() < 0.002, "{d:?}"); // 100 packets left
    }

    #[test]
    fn a_leap_of_the_clock_costs_bounded_work_and_settles_the_state() {
        let mut pie = Pie::new(PieConfig::default());
        pie.vars.drop_prob = 0.5;
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        // 10^6 s of silence is 6.7e7 update periods: the catch-up stops after 10^4.
        pie.enqueue(pkt(0, 0, 1000), Time::from_secs(1_000_000), &mut rng, &mut ev);
        assert_eq!(pie.drop_prob(), 0.0);
        assert!(pie.timer.next() > Time::from_secs(1_000_000));
        assert!(pie.timer.next() <= Time::from_secs(1_000_000) + Time(15_000_000));
        // At the end of time the timer saturates instead of spinning.
        pie.pop_packet(Time(u64::MAX - 1));
        pie.enqueue(pkt(1, 0, 1000), Time::MAX, &mut rng, &mut ev);
        assert_eq!(pie.len_packets(), 1);
    }

    #[test]
    fn validation_names_the_field() {
        let d = PieConfig::default;
        assert!(PieConfig { target_ns: 0, ..d() }.validate().unwrap_err().starts_with("target_ns"));
        assert!(PieConfig { t_update_ns: 0, ..d() }.validate().unwrap_err().starts_with("t_update_ns"));
        assert!(PieConfig { alpha: -1.0, ..d() }.validate().unwrap_err().starts_with("alpha"));
        assert!(PieConfig { beta: f64::NAN, ..d() }.validate().unwrap_err().starts_with("beta"));
        assert!(PieConfig { mark_ecn_threshold: 2.0, ..d() }.validate().unwrap_err().starts_with("mark_ecn_threshold"));
        assert!(PieConfig { dq_threshold: 0, ..d() }.validate().unwrap_err().starts_with("dq_threshold"));
    }
}
