//! Rb-RED: rate-based RED, after S. De Cnodder, K. Pauwels and O. Elloumi, "A Rate Based RED
//! Mechanism", NOSSDAV 2000 (cited as \[7\] by J. Chung and M. Claypool, "Rate-Based Active Queue
//! Management with Priority Classes for Better Video Transmission", ISCC 2002, cited C&C below).
//!
//! \[7\] is not available to us. C&C section 2 gives only its principle: keep an estimated
//! arrival rate EAR (a weighted average of the incoming rate), compare it with the service
//! rate SR (the link rate) and drop probabilistically when EAR > SR, with a probability
//! "calculated using EAR and SR, adjusted considering the average queue length and the
//! aggressiveness parameter (AP) to keep the average queue within a target range (the middle
//! of the physical queue, by default), and applied with a uniform drop distribution". C&C
//! section 3 adds that AP = 2.5 "instead of 2.0" kept the average queue near 40 packets of a
//! 100-packet buffer. The estimator, the adjustment rule and the defaults below are therefore
//! aqmlab's design; each is chosen so that it satisfies those statements.
//!
//! On every arrival of a packet of `size` bytes at `now`:
//!
//! * **Estimated arrival rate** (the exponential averaging of I. Stoica, S. Shenker and H.
//!   Zhang, "Core-Stateless Fair Queueing", SIGCOMM 1998, section 2.3), with `dt` the time since
//!   the previous arrival and `tau` the time constant:
//!   `EAR <- (1 - e^{-dt/tau}) (8 size / dt) + e^{-dt/tau} EAR`  (bit/s).
//!   For `dt -> 0` the first term tends to `8 size / tau`, which is used for simultaneous
//!   arrivals. Chosen over a fixed-weight EWMA of `size/dt` because the weight grows with the
//!   gap: a packet counts for the time it stands for, so the estimate hardly depends on how
//!   the bytes are cut into packets or spaced (CSFQ's argument; for Poisson arrivals its mean
//!   is high by only about `1/(2 lambda tau)`), it decays properly over silences, and it is
//!   exact for a constant rate (the fixed point of the update with constant `size/dt = r` is
//!   `r`). Chosen over TSW's sliding window (Clark and Fang 1998) because it is the same single
//!   multiply-add with a clean time-constant meaning. Every arrival counts, dropped or not: it
//!   is the *offered* rate that is compared with SR.
//!   Default `tau` = 100 ms: much longer than a packet time (0.32 ms for 1000 B at 25 Mbit/s;
//!   the relative noise of the estimate is about `1/sqrt(2 lambda tau)`, 4 % for 312 packets
//!   per `tau`), and about one round-trip time (44-122 ms in the C&C scenario), so that TCP's
//!   once-per-RTT window bursts are averaged out while a load change (flows joining) is still
//!   followed within a few RTTs.
//! * **Average queue**, as RED's (Floyd and Jacobson 1993, section 4, see `red.rs`):
//!   `avg <- (1 - w_q) avg + w_q q`, after an idle period first `avg <- (1 - w_q)^m avg`, `m` =
//!   idle time / transmission time of a `mean_pkt_size` packet. Unlike `red.rs`, the idle clock
//!   restarts at each decay, so an arrival that is dropped while the queue is empty does not
//!   make the next arrival decay the same idle time twice.
//! * **Rate-based probability**: when `EAR > SR`, `P = (EAR - SR) / EAR`. Dropping that fraction
//!   of the arrivals brings the accepted rate `EAR (1 - P)` down to exactly SR. No drop at all
//!   while `EAR <= SR`.
//! * **Queue adjustment by AP**:
//!   `P_adj = min(1, P * AP * avg / (2 target))`, `target` defaulting to half the physical
//!   limit. At a steady overload the queue is stable only where the accepted rate equals SR,
//!   i.e. where `P_adj = P`: the average queue settles at `q* = 2 target / AP`. AP = 2, the
//!   default of \[7\] (C&C: "2.5 instead of 2.0"), holds the average at the target; AP = 2.5
//!   holds it at 0.8 of the target, 40 of 100 packets, which is exactly the C&C observation. A
//!   larger AP is more aggressive: it drops more at any given queue. When the average is below
//!   `q*` fewer packets are dropped than the excess rate (the queue grows), above `q*` more
//!   (it drains). While the average queue is 0 nothing is dropped: a rate excess that has not
//!   built a queue costs nothing yet.
//!   The seemingly natural `P (avg/target)^AP` and `P AP^{(avg - target)/target}` were rejected:
//!   both equal `P` at `avg = target` whatever AP, so the queue would settle at the target for
//!   every AP, and AP would change only how stiffly it is held there, contradicting C&C.
//! * **Uniform spreading**, RED's count method (F&J section 7): `count` arrivals since the last
//!   drop, `p_a = p_b / (1 - count p_b)`. With `p_b = 1/(n+1)` this is the hazard `1/(n+1-j)`
//!   at the `j`-th arrival after a drop, so the gap between drops is uniform on 1 .. n when `n`
//!   is an integer, mean `(n+1)/2` = `1/(2 p_b)`: the long-run drop fraction is `2 p_b`, not
//!   `p_b` (see `red.rs`'s count test). RED's p_b is only a control signal, but `P_adj` is meant
//!   as the fraction of arrivals to drop, so `p_b` is chosen to make the mean gap exactly
//!   `g = 1/P_adj` arrivals. For a real `n` the gap is uniform on 1 .. m (probability `1/n`
//!   each) with the rest of the mass at `m + 1`, `m = ceil(n) - 1`, mean `(m+1)(n - m/2)/n`;
//!   solving for `n`: `m = ceil(2g) - 2`, `n = m (m+1) / (2 (m + 1 - g))`, `p_b = 1/(n+1)`.
//!   That is `p_b = P_adj / 2` whenever `2 / P_adj` is an integer, and differs from it only for
//!   large `P_adj` (0.4 instead of 0.375 for `P_adj` = 0.75); `P_adj = 1` drops every arrival.
//!
//! Drops decided by the rate test are `Early`; an arrival that passes it but does not fit in
//! the physical limit is an `Overflow` drop. With a byte limit the queue (`avg`, `target`) is
//! measured in `mean_pkt_size` packets, as in RED's byte mode.

use super::fifo::PacketFifo;
use super::{DropReason, Evicted, Qdisc, Verdict};
use crate::packet::Packet;
use crate::rng::SimRng;
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RbRedConfig {
    /// Physical capacity (packets or bytes).
    pub limit: Limit,
    /// Time constant `tau` of the arrival-rate estimator, in nanoseconds (default 100 ms).
    pub time_constant_ns: u64,
    /// Aggressiveness parameter AP, > 0 (default 2.0): the average queue settles at
    /// `2 target / AP` under steady overload.
    pub aggressiveness: f64,
    /// Queue that AP = 2 holds the average at, in packets (in mean-size packets with a byte
    /// limit); `None` is half the physical limit (C&C: "the middle of the physical queue").
    #[serde(default)]
    pub target_queue: Option<f64>,
    /// EWMA weight of the average queue, in (0, 1] (default 0.002, as RED).
    pub w_q: f64,
    /// Typical packet size in bytes: the byte-limit queue unit and the idle-decay packet time
    /// (default 1000).
    pub mean_pkt_size: u32,
}

impl Default for RbRedConfig {
    /// The defaults argued in the module docs, for a 100-packet buffer.
    fn default() -> RbRedConfig {
        RbRedConfig {
            limit: Limit::Packets(100),
            time_constant_ns: 100_000_000,
            aggressiveness: 2.0,
            target_queue: None,
            w_q: 0.002,
            mean_pkt_size: 1000,
        }
    }
}

impl RbRedConfig {
    pub fn validate(&self) -> Result<(), String> {
        validate_rate_based(
            self.limit,
            self.time_constant_ns,
            self.aggressiveness,
            self.target_queue,
            self.w_q,
            self.mean_pkt_size,
        )
    }

    /// The target in queue units (`target_queue`, or half the limit).
    pub fn target(&self) -> f64 {
        self.target_queue.unwrap_or_else(|| limit_in_units(self.limit, self.mean_pkt_size) / 2.0)
    }
}

/// The checks Rb-RED and Rb-RIO share; the error starts with the field name.
pub(crate) fn validate_rate_based(
    limit: Limit,
    time_constant_ns: u64,
    aggressiveness: f64,
    target_queue: Option<f64>,
    w_q: f64,
    mean_pkt_size: u32,
) -> Result<(), String> {
    limit.validate()?;
    if time_constant_ns == 0 {
        return Err("time_constant_ns: must be > 0".into());
    }
    if !(aggressiveness > 0.0 && aggressiveness.is_finite()) {
        return Err(format!("aggressiveness: must be > 0, got {aggressiveness}"));
    }
    if !(w_q > 0.0 && w_q <= 1.0) {
        return Err(format!("w_q: must be in (0, 1], got {w_q}"));
    }
    if mean_pkt_size == 0 {
        return Err("mean_pkt_size: must be at least 1 byte".into());
    }
    if let Some(t) = target_queue {
        let max = limit_in_units(limit, mean_pkt_size);
        if !(t > 0.0 && t <= max) {
            return Err(format!("target_queue: must be in (0, {max}] (the limit in packets), got {t}"));
        }
    }
    Ok(())
}

/// The physical limit in the unit the average queue uses: packets, or `mean_pkt_size` packets.
pub(crate) fn limit_in_units(limit: Limit, mean_pkt_size: u32) -> f64 {
    match limit {
        Limit::Packets(n) => n as f64,
        Limit::Bytes(b) => b as f64 / mean_pkt_size as f64,
    }
}

/// A backlog in the unit the average queue uses.
pub(crate) fn queue_in_units(limit: Limit, packets: usize, bytes: u64, mean_pkt_size: u32) -> f64 {
    match limit {
        Limit::Packets(_) => packets as f64,
        Limit::Bytes(_) => bytes as f64 / mean_pkt_size as f64,
    }
}

/// The CSFQ arrival-rate estimator of the module docs, in bit/s.
#[derive(Clone, Debug)]
pub struct RateEstimator {
    tau_s: f64,
    rate_bps: f64,
    /// Time of the previous arrival (the start of the run before the first).
    last: Time,
    /// Size of the previous arrival, bits.
    last_bits: f64,
}

impl RateEstimator {
    pub fn new(tau: Time) -> RateEstimator {
        RateEstimator { tau_s: tau.as_secs_f64(), rate_bps: 0.0, last: Time::ZERO, last_bits: 0.0 }
    }

    /// Accounts for an arrival of `size` bytes at `now` and returns the new estimate.
    pub fn update(&mut self, size: u32, now: Time) -> f64 {
        let dt = (now - self.last).as_secs_f64();
        let bits = 8.0 * size as f64;
        let x = dt / self.tau_s;
        // (1 - e^{-x}) bits / dt, written with expm1 so that small x keeps its precision; its
        // limit for dt -> 0 is bits / tau.
        let fresh = if dt > 0.0 { -(-x).exp_m1() * bits / dt } else { bits / self.tau_s };
        self.rate_bps = (-x).exp() * self.rate_bps + fresh;
        self.last = now;
        self.last_bits = bits;
        self.rate_bps
    }

    /// The estimate as of the last arrival.
    pub fn rate(&self) -> f64 {
        self.rate_bps
    }

    /// The estimate as read at `now` without an arrival: what Rb-RIO uses for the classes
    /// other than the arriving one. Until the next arrival is overdue (the time since the last
    /// one exceeds the gap its own rate implies, `8 size / EAR`) nothing says the rate changed
    /// and the estimate is read as it is; after that it decays with `tau`, `EAR
    /// e^{-(age - gap)/tau}`, so that a class that fell silent stops counting within a few
    /// `tau` instead of keeping its last rate forever. (Decaying from the last arrival instead
    /// would read every class low by about `gap / (2 tau)`, and by a whole `gap / tau` for
    /// classes arriving in lock step just before the one deciding.)
    pub fn rate_at(&self, now: Time) -> f64 {
        if self.rate_bps <= 0.0 {
            return 0.0;
        }
        let overdue = (now - self.last).as_secs_f64() - self.last_bits / self.rate_bps;
        if overdue <= 0.0 {
            self.rate_bps
        } else {
            self.rate_bps * (-overdue / self.tau_s).exp()
        }
    }
}

/// RED's average queue with idle-time decay (F&J section 4).
#[derive(Clone, Debug)]
pub(crate) struct QueueAverage {
    w_q: f64,
    avg: f64,
    /// Since when the measured queue has been empty (the decay is accounted up to here).
    idle_since: Option<Time>,
    /// Transmission time of one `mean_pkt_size` packet, F&J's `s`.
    pkt_time: Time,
}

impl QueueAverage {
    pub(crate) fn new(w_q: f64, pkt_time: Time) -> QueueAverage {
        QueueAverage { w_q, avg: 0.0, idle_since: Some(Time::ZERO), pkt_time }
    }

    /// Folds in the instantaneous queue `q` seen by an arrival at `now`.
    pub(crate) fn update(&mut self, now: Time, q: f64) -> f64 {
        if let Some(since) = self.idle_since {
            if self.pkt_time > Time::ZERO {
                let m = (now - since).as_nanos() as f64 / self.pkt_time.as_nanos() as f64;
                self.avg *= (1.0 - self.w_q).powf(m);
            } else {
                self.avg = 0.0;
            }
            // Still idle until a packet is accepted; the decay is accounted up to now.
            self.idle_since = Some(now);
        }
        self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
        self.avg
    }

    /// The measured queue became empty at `now` (keeps an earlier start if already idle).
    pub(crate) fn set_idle(&mut self, now: Time) {
        if self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
    }

    /// A packet counted by this average was accepted.
    pub(crate) fn set_busy(&mut self) {
        self.idle_since = None;
    }

    pub(crate) fn value(&self) -> f64 {
        self.avg
    }

    #[cfg(test)]
    pub(crate) fn force(&mut self, avg: f64) {
        self.avg = avg;
        self.idle_since = None;
    }
}

/// The AP rule of the module docs: `min(1, P * AP * avg / (2 target))`.
pub fn adjust_probability(p: f64, avg: f64, target: f64, aggressiveness: f64) -> f64 {
    (p * aggressiveness * avg / (2.0 * target)).clamp(0.0, 1.0)
}

/// The queue at which a steady overload settles under [`adjust_probability`]: `2 target / AP`.
pub fn equilibrium_queue(target: f64, aggressiveness: f64) -> f64 {
    2.0 * target / aggressiveness
}

/// RED's count method used to drop a *fraction* `p` of arrivals, spaced uniformly (module docs).
#[derive(Clone, Debug)]
pub(crate) struct DropSpreader {
    /// Arrivals since the last drop; -1 while not dropping (F&J Fig. 2).
    count: i64,
}

impl DropSpreader {
    pub(crate) fn new() -> DropSpreader {
        DropSpreader { count: -1 }
    }

    /// Not in a dropping state: the next drop period starts afresh.
    pub(crate) fn reset(&mut self) {
        self.count = -1;
    }

    /// RED's `p_b` whose count method drops a fraction `p` in (0, 1) (module docs).
    pub(crate) fn red_probability(p: f64) -> f64 {
        let g = 1.0 / p;
        let m = ((2.0 * g).ceil() - 2.0).max(1.0);
        let n = m * (m + 1.0) / (2.0 * (m + 1.0 - g));
        1.0 / (n + 1.0)
    }

    /// One arrival under drop fraction `p`; true when it is to be dropped.
    pub(crate) fn coin(&mut self, p: f64, rng: &mut SimRng) -> bool {
        if !(p > 0.0) {
            self.reset();
            return false;
        }
        if p >= 1.0 {
            self.count = 0;
            return true;
        }
        let p_b = Self::red_probability(p);
        self.count += 1;
        let denom = 1.0 - self.count as f64 * p_b;
        let p_a = if denom <= 0.0 { 1.0 } else { (p_b / denom).min(1.0) };
        if rng.bernoulli(p_a) {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

/// The FIFO of the rate-based disciplines together with its average: an accepted packet marks
/// the average busy and the queue emptying marks it idle (the idle-time decay depends on
/// both), so Rb-RED and Rb-RIO keep that coupling in one place.
pub(crate) struct AveragedFifo {
    q: PacketFifo,
    avg: QueueAverage,
    limit: Limit,
    mean_pkt_size: u32,
}

impl AveragedFifo {
    pub(crate) fn new(limit: Limit, w_q: f64, mean_pkt_size: u32, link_rate: Rate) -> AveragedFifo {
        let pkt_time = link_rate.tx_time(mean_pkt_size as u64);
        AveragedFifo { q: PacketFifo::default(), avg: QueueAverage::new(w_q, pkt_time), limit, mean_pkt_size }
    }

    /// Folds the queue an arrival sees at `now` into the average and returns the average.
    pub(crate) fn observe_arrival(&mut self, now: Time) -> f64 {
        let q = queue_in_units(self.limit, self.q.len(), self.q.bytes(), self.mean_pkt_size);
        self.avg.update(now, q)
    }

    /// Queues `pkt` if it fits in the physical limit, else an Overflow drop.
    pub(crate) fn admit(&mut self, pkt: Packet) -> Verdict {
        if !self.q.admits(self.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.q.push(pkt);
        self.avg.set_busy();
        Verdict::Enqueued
    }

    pub(crate) fn pop(&mut self, now: Time) -> Option<Packet> {
        let p = self.q.pop()?;
        if self.q.is_empty() {
            self.avg.set_idle(now);
        }
        Some(p)
    }

    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.q.bytes()
    }
    pub(crate) fn average(&self) -> f64 {
        self.avg.value()
    }
}

pub struct RbRed {
    cfg: RbRedConfig,
    fifo: AveragedFifo,
    ear: RateEstimator,
    /// Service rate in bit/s (infinite for an infinitely fast link: never early-drops).
    sr: f64,
    target: f64,
    spread: DropSpreader,
}

impl RbRed {
    pub fn new(cfg: RbRedConfig, link_rate: Rate) -> RbRed {
        let sr = if link_rate.0 == 0 { f64::INFINITY } else { link_rate.as_bps_f64() };
        RbRed {
            ear: RateEstimator::new(Time(cfg.time_constant_ns)),
            fifo: AveragedFifo::new(cfg.limit, cfg.w_q, cfg.mean_pkt_size, link_rate),
            target: cfg.target(),
            spread: DropSpreader::new(),
            sr,
            cfg,
        }
    }

    /// The estimated arrival rate as of the last arrival, bit/s.
    pub fn estimated_arrival_rate(&self) -> f64 {
        self.ear.rate()
    }

    /// The adjusted drop fraction for an estimated arrival rate `ear` and the current average.
    fn drop_fraction(&self, ear: f64) -> f64 {
        if ear <= self.sr {
            return 0.0;
        }
        let p = (ear - self.sr) / ear;
        adjust_probability(p, self.fifo.average(), self.target, self.cfg.aggressiveness)
    }
}

impl Qdisc for RbRed {
    fn enqueue(&mut self, pkt: Packet, now: Time, rng: &mut SimRng, _ev: &mut Vec<Evicted>) -> Verdict {
        let ear = self.ear.update(pkt.size, now);
        self.fifo.observe_arrival(now);
        let p = self.drop_fraction(ear);
        if self.spread.coin(p, rng) {
            return Verdict::Dropped(DropReason::Early);
        }
        self.fifo.admit(pkt)
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        self.fifo.pop(now)
    }

    fn len_packets(&self) -> usize {
        self.fifo.len()
    }
    fn len_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn average_queue(&self) -> Option<f64> {
        Some(self.fifo.average())
    }
    fn kind(&self) -> &'static str {
        "rb_red"
    }
}

/// A single-bottleneck queue model in simulated time for the tests of the rate-based and RIO
/// disciplines: arrivals from a list of sources, departures at the link rate.
#[cfg(test)]
pub(crate) mod model {
    use crate::packet::Packet;
    use crate::qdisc::{Queue, Verdict};
    use crate::rng::SimRng;
    use crate::units::{Rate, Time};

    /// One traffic source: `rate_bps` of `size`-byte packets of class `class`, evenly spaced or
    /// with exponential gaps.
    #[derive(Clone, Copy, Debug)]
    pub struct Source {
        pub rate_bps: f64,
        pub size: u32,
        pub class: u8,
        pub poisson: bool,
    }

    /// Per-class counts over the measured part of a run (index = class 0..=3).
    #[derive(Clone, Debug, Default)]
    pub struct Tally {
        pub arrivals: [u64; 4],
        pub drops: [u64; 4],
        pub verdicts: Vec<(u8, Verdict)>,
        /// Mean of the discipline's average queue sampled at every arrival.
        pub mean_avg: f64,
        pub mean_queue: f64,
    }

    impl Tally {
        pub fn drop_fraction(&self, class: usize) -> f64 {
            self.drops[class] as f64 / self.arrivals[class].max(1) as f64
        }
    }

    /// Runs `sources` into `q` on a link of `link` for `duration`; counts from `warmup` on.
    pub fn run(q: &mut Queue, link: Rate, sources: &[Source], duration: Time, warmup: Time, seed: u64) -> Tally {
        let mut rng = SimRng::stream(seed, "qdisc");
        let mut src_rng = SimRng::stream(seed, "sources");
        let gap = |s: &Source, r: &mut SimRng| {
            let mean = 8.0 * s.size as f64 / s.rate_bps;
            Time::from_secs_f64(if s.poisson { r.exponential(mean) } else { mean })
        };
        let mut next: Vec<Time> = sources.iter().map(|s| gap(s, &mut src_rng)).collect();
        let mut busy_until: Option<Time> = None;
        let mut tally = Tally::default();
        let (mut n_avg, mut uid) = (0u64, 0u64);
        loop {
            let (i, t_arr) = next.iter().copied().enumerate().min_by_key(|(_, t)| *t).unwrap();
            // Departures due before the next arrival.
            while let Some(done) = busy_until {
                if done > t_arr {
                    break;
                }
                q.dequeue(done).unwrap();
                busy_until = if q.len_packets() > 0 { Some(done + link.tx_time(head_size(q))) } else { None };
            }
            if t_arr >= duration {
                break;
            }
            let s = sources[i];
            let pkt = Packet { uid, size: s.size, class: s.class, ..Packet::default() };
            uid += 1;
            let verdict = q.enqueue(pkt, t_arr, &mut rng).verdict;
            if busy_until.is_none() && q.len_packets() > 0 {
                busy_until = Some(t_arr + link.tx_time(s.size as u64));
            }
            if t_arr >= warmup {
                let c = s.class.min(3) as usize;
                tally.arrivals[c] += 1;
                if let Verdict::Dropped(_) = verdict {
                    tally.drops[c] += 1;
                }
                tally.verdicts.push((s.class, verdict));
                n_avg += 1;
                tally.mean_avg += (q.average_queue().unwrap_or(0.0) - tally.mean_avg) / n_avg as f64;
                tally.mean_queue += (q.len_packets() as f64 - tally.mean_queue) / n_avg as f64;
            }
            next[i] = t_arr + gap(&s, &mut src_rng);
            q.check_invariants().unwrap();
        }
        tally
    }

    /// All tests use one packet size per run, so the head's size is the source's size; the
    /// wrapper does not expose the head, so peek through the byte backlog.
    fn head_size(q: &Queue) -> u64 {
        q.len_bytes() / q.len_packets() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::model::{run, Source};
    use super::*;
    use crate::qdisc::testutil::pkt;
    use crate::qdisc::Queue;

    const LINK: Rate = Rate::mbps(10);

    fn cbr(rate_bps: f64) -> Source {
        Source { rate_bps, size: 1000, class: 0, poisson: false }
    }

    #[test]
    fn ear_converges_to_a_constant_rate() {
        // 1000 B every 1 ms is 8 Mbit/s; after 10 tau the start-up transient is e^-10 away.
        let mut e = RateEstimator::new(Time::from_millis(100));
        for i in 1..=1000 {
            e.update(1000, Time::from_millis(i));
        }
        assert!((e.rate() - 8e6).abs() < 8e6 * 1e-4, "{}", e.rate());
        // After a step down to 4 Mbit/s the error shrinks by e^-1 per tau.
        for i in 1..=100 {
            e.update(500, Time::from_millis(1000 + i));
        }
        let expect = 4e6 + 4e6 * (-1.0f64).exp();
        assert!((e.rate() - expect).abs() < 1e4, "{} vs {}", e.rate(), expect);
        // Poisson arrivals of 200 or 1800 B at 6 Mbit/s (75 packets per tau): the estimate is
        // noisy, relative sd about sqrt((1 + cv_size^2) / (2 * 75)) = 10 %, but its mean is
        // within its 1/(2 lambda tau) = 0.7 % bias of the true rate.
        let mut e = RateEstimator::new(Time::from_millis(100));
        let mut rng = SimRng::stream(4, "t");
        let (mut t, mut n, mut sum, mut sq) = (0.0, 0.0, 0.0, 0.0);
        while t < 100.0 {
            let size = if rng.bernoulli(0.5) { 200 } else { 1800 };
            // Mean size 1000 B: mean gap 1000 * 8 / 6e6 s.
            t += rng.exponential(8000.0 / 6e6);
            let r = e.update(size, Time::from_secs_f64(t)) / 6e6 - 1.0;
            if t > 1.0 {
                n += 1.0;
                sum += r;
                sq += r * r;
            }
        }
        let (mean, sd) = (sum / n, (sq / n - (sum / n).powi(2)).sqrt());
        assert!(mean.abs() < 0.015, "mean relative error {mean}");
        assert!(sd > 0.07 && sd < 0.13, "relative sd {sd}");
    }

    #[test]
    fn simultaneous_arrivals_use_the_limit_of_the_update() {
        let mut e = RateEstimator::new(Time::from_millis(100));
        e.update(1000, Time::from_millis(5));
        let before = e.rate();
        let after = e.update(1000, Time::from_millis(5));
        assert!(after.is_finite());
        assert!((after - (before + 8000.0 / 0.1)).abs() < 1e-6, "{after}");
        // Read as is for one gap of its own rate (8000 bit / after), then decaying with tau.
        let gap = Time::from_secs_f64(8000.0 / after);
        assert_eq!(e.rate_at(Time::from_millis(5) + gap.mul_f64(0.99)), after);
        let later = e.rate_at(Time::from_millis(105) + gap);
        assert!((later - after * (-1.0f64).exp()).abs() < 1e-3 * after, "{later}");
    }

    #[test]
    fn ap_rule_settles_at_two_target_over_ap() {
        assert_eq!(adjust_probability(0.2, 50.0, 50.0, 2.0), 0.2);
        assert_eq!(adjust_probability(0.2, 40.0, 50.0, 2.5), 0.2);
        assert!(adjust_probability(0.2, 50.0, 50.0, 2.5) > 0.2);
        assert_eq!(adjust_probability(0.5, 100.0, 10.0, 2.0), 1.0);
        assert_eq!(adjust_probability(0.5, 0.0, 10.0, 2.0), 0.0);
        assert_eq!(equilibrium_queue(50.0, 2.5), 40.0);
    }

    #[test]
    fn spreader_probability_is_half_the_fraction_when_two_over_it_is_whole() {
        for p in [0.5, 0.4, 0.2, 0.1, 0.02, 2.0 / 3.0] {
            assert!((DropSpreader::red_probability(p) - p / 2.0).abs() < 1e-12, "{p}");
        }
        assert!((DropSpreader::red_probability(0.75) - 0.4).abs() < 1e-12);
        // Continuous across the boundaries of m.
        let (a, b) = (DropSpreader::red_probability(0.2 - 1e-12), DropSpreader::red_probability(0.2 + 1e-12));
        assert!((a - b).abs() < 1e-9, "{a} {b}");
    }

    #[test]
    fn spreader_drops_the_requested_fraction_uniformly() {
        for &p in &[0.95, 0.9, 0.75, 0.6, 0.5, 0.3, 0.2, 0.1, 0.05, 0.01, 0.003] {
            let mut s = DropSpreader::new();
            let mut rng = SimRng::stream(2, "t");
            let n = 400_000;
            let (mut drops, mut since, mut max_gap) = (0, 0, 0);
            for _ in 0..n {
                since += 1;
                if s.coin(p, &mut rng) {
                    // The first gap runs from the reset (count -1), one arrival longer.
                    if drops > 0 {
                        max_gap = max_gap.max(since);
                    }
                    drops += 1;
                    since = 0;
                }
            }
            let frac = drops as f64 / n as f64;
            assert!((frac - p).abs() < 0.02 * p.min(1.0 - p) + 2e-4, "p {p}: dropped {frac}");
            // Uniform gaps: never more than ceil(2/p - 1) arrivals apart.
            assert!(max_gap as f64 <= (2.0 / p - 1.0 - 1e-9).ceil(), "p {p}: gap {max_gap}");
        }
    }

    #[test]
    fn no_drops_while_ear_is_below_sr() {
        // Evenly spaced 80 % load through the queue model: nothing is ever dropped.
        let mut q = Queue::new(Box::new(RbRed::new(RbRedConfig::default(), LINK)));
        let t = run(&mut q, LINK, &[cbr(8e6)], Time::from_secs(20), Time::ZERO, 1);
        assert_eq!(q.stats().total_dropped_packets(), 0);
        assert!(t.arrivals[0] > 19_000);
        let mut r = RbRed::new(RbRedConfig::default(), LINK);
        r.fifo.avg.force(90.0);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..20_000u64 {
            // 9.9 Mbit/s: just under SR, with a nearly full average queue.
            let now = Time::from_secs_f64(i as f64 * 8000.0 / 9.9e6);
            assert_eq!(r.enqueue(pkt(i, 0, 1000), now, &mut rng, &mut ev), Verdict::Enqueued, "packet {i}");
            r.dequeue(now);
            r.fifo.avg.force(90.0);
        }
    }

    #[test]
    fn steady_overload_at_the_target_drops_the_excess_fraction() {
        // Average held at the target (AP 2 gives factor 1): the drop fraction must be
        // (EAR - SR) / EAR for several overloads.
        for &load in &[1.25, 2.0, 4.0] {
            let mut r = RbRed::new(RbRedConfig { w_q: 1e-9, ..RbRedConfig::default() }, LINK);
            let mut rng = SimRng::stream(7, "t");
            let mut ev = Vec::new();
            let gap = 8000.0 / (load * 1e7);
            let (mut n, mut drops) = (0u64, 0u64);
            for i in 0..100_000u64 {
                let now = Time::from_secs_f64(i as f64 * gap);
                r.fifo.avg.force(50.0);
                let v = r.enqueue(pkt(i, 0, 1000), now, &mut rng, &mut ev);
                r.dequeue(now);
                if now >= Time::from_secs(1) {
                    n += 1;
                    drops += matches!(v, Verdict::Dropped(DropReason::Early)) as u64;
                }
            }
            let expect = (load - 1.0) / load;
            let frac = drops as f64 / n as f64;
            assert!((frac - expect).abs() < 0.02 * expect + 0.002, "load {load}: {frac} vs {expect}");
        }
    }

    #[test]
    fn queue_model_at_default_ap_holds_the_target_and_drops_the_excess() {
        let mut q = Queue::new(Box::new(RbRed::new(RbRedConfig::default(), LINK)));
        let t = run(&mut q, LINK, &[cbr(12.5e6)], Time::from_secs(60), Time::from_secs(20), 1);
        let frac = t.drop_fraction(0);
        println!("rb_red AP 2.0 at 1.25x: avg {:.2} queue {:.2} drops {:.4}", t.mean_avg, t.mean_queue, frac);
        assert!((t.mean_avg - 50.0).abs() < 3.0, "avg {}", t.mean_avg);
        assert!((frac - 0.2).abs() < 0.01, "drop fraction {frac}");
        assert_eq!(q.stats().dropped_packets[DropReason::Overflow as usize], 0, "{:?}", q.stats());
    }

    #[test]
    fn larger_ap_holds_the_average_queue_lower() {
        // C&C section 3: AP 2.5 instead of 2.0 kept the average queue near 40 of 100 packets.
        // Fixed 25 % overload into the discipline, departures at the link rate, Poisson arrivals.
        let settle = |ap: f64| {
            let cfg = RbRedConfig { aggressiveness: ap, ..RbRedConfig::default() };
            let mut q = Queue::new(Box::new(RbRed::new(cfg, LINK)));
            let src = Source { poisson: true, ..cbr(12.5e6) };
            let t = run(&mut q, LINK, &[src], Time::from_secs(60), Time::from_secs(20), 3);
            println!(
                "rb_red AP {ap}: avg queue {:.2} (instantaneous {:.2}), drop fraction {:.4}",
                t.mean_avg, t.mean_queue, t.drop_fraction(0)
            );
            t.mean_avg
        };
        let a20 = settle(2.0);
        let a25 = settle(2.5);
        let a30 = settle(3.0);
        assert!(a25 < a20 - 7.0 && a30 < a25 - 4.0, "AP 2.0 {a20}, 2.5 {a25}, 3.0 {a30}");
        assert!((a20 - 50.0).abs() < 4.0, "AP 2.0 settles at {a20}");
        assert!((a25 - 40.0).abs() < 4.0, "AP 2.5 settles at {a25}");
    }

    #[test]
    fn byte_limit_measures_the_queue_in_mean_packets() {
        let cfg = RbRedConfig { limit: Limit::Bytes(100_000), w_q: 1.0, ..RbRedConfig::default() };
        assert_eq!(cfg.target(), 50.0);
        let mut r = RbRed::new(cfg, LINK);
        let mut rng = SimRng::stream(1, "t");
        let mut ev = Vec::new();
        for i in 0..4 {
            r.enqueue(pkt(i, 0, 500), Time::ZERO, &mut rng, &mut ev);
        }
        assert!((r.fifo.average() - 1.5).abs() < 1e-12, "{}", r.fifo.average());
    }

    #[test]
    fn idle_decay_is_not_applied_twice_after_a_drop() {
        let mut a = QueueAverage::new(0.002, Time::from_micros(800));
        a.force(10.0);
        a.set_idle(Time::ZERO);
        // Two arrivals on an empty queue, at 40 and 80 ms, neither accepted: 80 ms of idleness
        // in all, 100 packet times (decaying from 0 again at 80 ms would make it 150).
        a.update(Time::from_millis(40), 0.0);
        a.update(Time::from_millis(80), 0.0);
        let w: f64 = 0.002;
        let expect = 10.0 * (1.0 - w).powf(100.0) * (1.0 - w) * (1.0 - w);
        assert!((a.value() - expect).abs() < 1e-9, "{} vs {expect}", a.value());
    }

    #[test]
    fn physical_limit_is_an_overflow() {
        let cfg = RbRedConfig { limit: Limit::Packets(3), ..RbRedConfig::default() };
        let mut q = Queue::new(Box::new(RbRed::new(cfg, LINK)));
        let mut rng = SimRng::stream(1, "t");
        for i in 0..3 {
            assert_eq!(q.enqueue(pkt(i, 0, 1000), Time::from_secs(i), &mut rng).verdict, Verdict::Enqueued);
        }
        assert_eq!(q.enqueue(pkt(3, 0, 1000), Time::from_secs(3), &mut rng).verdict, Verdict::Dropped(DropReason::Overflow));
        q.check_invariants().unwrap();
    }

    #[test]
    fn validation_names_the_field() {
        let c = RbRedConfig::default();
        assert!(c.validate().is_ok());
        assert!(RbRedConfig { limit: Limit::Packets(0), ..c.clone() }.validate().unwrap_err().starts_with("limit"));
        assert!(RbRedConfig { time_constant_ns: 0, ..c.clone() }.validate().unwrap_err().starts_with("time_constant_ns"));
        for ap in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(RbRedConfig { aggressiveness: ap, ..c.clone() }.validate().unwrap_err().starts_with("aggressiveness"));
        }
        for t in [0.0, 101.0, f64::NAN] {
            assert!(RbRedConfig { target_queue: Some(t), ..c.clone() }.validate().unwrap_err().starts_with("target_queue"));
        }
        assert!(RbRedConfig { target_queue: Some(100.0), ..c.clone() }.validate().is_ok());
        assert!(RbRedConfig { w_q: 0.0, ..c.clone() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RbRedConfig { w_q: 1.5, ..c.clone() }.validate().unwrap_err().starts_with("w_q"));
        assert!(RbRedConfig { mean_pkt_size: 0, ..c.clone() }.validate().unwrap_err().starts_with("mean_pkt_size"));
    }
}
