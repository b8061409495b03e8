//! Impairments of a link's wire as netem defines them (Linux `net/sched/sch_netem.c`, and the
//! `tc-netem(8)` man page): random loss (Bernoulli, or the Gilbert-Elliott model of `loss
//! gemodel p r 1-h 1-k`), duplication, and delay jitter with or without reordering. Each draws
//! from its own stream, so that turning one on changes no draw of another.
//!
//! They act where a packet leaves the link for the delay line (after the discipline and the
//! link's serialization): what netem does to a packet it is given, the wire does here to each
//! packet the link sends. Per packet, in `netem_enqueue`'s order: a duplication draw (`count`
//! becomes 2), a loss draw (`count` drops by one; none left means the packet is lost, so a
//! duplicated packet that is "lost" still sends one copy), then the delay of each copy sent.
//! netem re-enqueues the copy at the root with duplication off, where it meets the loss model
//! again; here the copy gets its own loss draw and its own delay, drawn after the original's.
//!
//! Jitter: netem's delay without a distribution table is uniform in `[delay - jitter, delay +
//! jitter]` (`tabledist`, "default uniform distribution"), never below zero extra here. netem's
//! time-ordered queue (`tfifo_enqueue`) then sends packets by due time, which reorders them
//! when the jitter exceeds their spacing; `tc-netem(8)` says to replace it by a plain FIFO
//! (`pfifo`) to keep their order, where a packet leaves at its due time or right after the
//! packet ahead, whichever is later. `reorder = false` is that FIFO (the default here: no
//! reordering unless asked), `reorder = true` the time-ordered queue.

use crate::rng::SimRng;
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// A loss model, as configs spell it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    /// Each packet lost with probability `p`, independently (`loss random PERCENT`).
    Bernoulli { p: f64 },
    /// netem's `loss gemodel p r 1-h 1-k` (`loss_gilb_ell`): a Good and a Bad state; per
    /// packet, the state it finds decides its loss (`loss_good` = 1-k in Good, `loss_bad` = 1-h
    /// in Bad), and the chain moves Good -> Bad with probability `p`, Bad -> Good with `r`.
    GilbertElliott { p: f64, r: f64, loss_bad: f64, loss_good: f64 },
}

/// The impairments of one link; every part optional.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImpairmentsConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossConfig>,
    /// Probability that a packet is sent twice (`duplicate PERCENT`).
    #[serde(default)]
    pub duplicate: f64,
    /// Half-width of the uniform delay jitter (`delay TIME JITTER`), added to the link's delay.
    #[serde(default)]
    pub jitter_ns: u64,
    /// Whether jitter may reorder packets (netem's tfifo) or not (pfifo, the default).
    #[serde(default)]
    pub reorder: bool,
}

impl ImpairmentsConfig {
    /// Checks the parameters; the error names the field and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        let probability = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(format!("{name}: {v} is not a probability in [0, 1]"))
            }
        };
        match &self.loss {
            Some(LossConfig::Bernoulli { p }) => probability("loss.p", *p)?,
            Some(LossConfig::GilbertElliott { p, r, loss_bad, loss_good }) => {
                probability("loss.p", *p)?;
                probability("loss.r", *r)?;
                probability("loss.loss_bad", *loss_bad)?;
                probability("loss.loss_good", *loss_good)?;
            }
            None => {}
        }
        probability("duplicate", self.duplicate)?;
        if self.reorder && self.jitter_ns == 0 {
            return Err("reorder: only jitter reorders packets; set a jitter too".into());
        }
        Ok(())
    }
}

/// The random streams impairments draw from, one per kind (see `aqmlab_model::streams`).
pub struct ImpairmentStreams {
    pub loss: SimRng,
    pub duplicate: SimRng,
    pub jitter: SimRng,
}

/// The due times of a packet's copies (at most two).
#[derive(Clone, Copy, Debug)]
pub struct Copies {
    len: usize,
    due: [Time; 2],
}

impl Copies {
    pub fn as_slice(&self) -> &[Time] {
        &self.due[..self.len]
    }
}

/// The state of one link's impairments.
pub struct Impairments {
    cfg: ImpairmentsConfig,
    rng: ImpairmentStreams,
    /// Gilbert-Elliott: whether the chain is in its Bad state (it starts Good, as netem's).
    bad: bool,
    /// Without reordering: when the last copy sent is due (a later one is never due before).
    last_due: Time,
}

impl Impairments {
    pub fn new(cfg: ImpairmentsConfig, rng: ImpairmentStreams) -> Result<Impairments, String> {
        cfg.validate()?;
        Ok(Impairments { cfg, rng, bad: false, last_due: Time::ZERO })
    }

    /// Whether jitter may reorder packets (so the delay line must be ordered by due time).
    pub fn reorders(&self) -> bool {
        self.cfg.reorder
    }

    /// Whether the next packet is lost, by the loss model (and moves its chain).
    pub fn lose(&mut self) -> bool {
        match self.cfg.loss {
            None => false,
            Some(LossConfig::Bernoulli { p }) => self.rng.loss.bernoulli(p),
            Some(LossConfig::GilbertElliott { p, r, loss_bad, loss_good }) => {
                // `loss_gilb_ell`: the transition draw, then the loss draw of the state found.
                let found_bad = self.bad;
                let (leave, loss) = if found_bad { (r, loss_bad) } else { (p, loss_good) };
                if self.rng.loss.bernoulli(leave) {
                    self.bad = !found_bad;
                }
                self.rng.loss.bernoulli(loss)
            }
        }
    }

    /// The due times at the far end of the copies of a packet the link finished sending at
    /// `sent`, with propagation delay `delay`: none (lost), one, or two (duplicated).
    pub fn transmit(&mut self, sent: Time, delay: Time) -> Copies {
        let twice = self.cfg.duplicate > 0.0 && self.rng.duplicate.bernoulli(self.cfg.duplicate);
        let copies = if self.lose() { usize::from(twice) } else { 1 + usize::from(twice) };
        // The copy meets the loss model again (netem re-enqueues it at the root).
        let copies = if copies == 2 && self.lose() { 1 } else { copies };
        let mut out = Copies { len: 0, due: [Time::ZERO; 2] };
        for _ in 0..copies {
            let t = sent + self.jittered(delay);
            let t = if self.cfg.reorder { t } else { t.max(self.last_due) };
            self.last_due = self.last_due.max(t);
            out.due[out.len] = t;
            out.len += 1;
        }
        out
    }

    /// `delay` plus a uniform draw in [-jitter, jitter] (netem's `tabledist` without a table),
    /// at least zero.
    fn jittered(&mut self, delay: Time) -> Time {
        let j = self.cfg.jitter_ns;
        if j == 0 {
            return delay;
        }
        let offset = (self.rng.jitter.uniform() * 2.0 * j as f64) as u64; // in [0, 2j)
        (delay + Time(offset)).saturating_sub(Time(j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 1_000_000;

    fn streams(seed: u64) -> ImpairmentStreams {
        ImpairmentStreams {
            loss: SimRng::stream(seed, "loss"),
            duplicate: SimRng::stream(seed, "duplicate"),
            jitter: SimRng::stream(seed, "jitter"),
        }
    }

    fn with_loss(loss: LossConfig) -> Impairments {
        Impairments::new(ImpairmentsConfig { loss: Some(loss), ..Default::default() }, streams(1)).unwrap()
    }

    /// Loss pattern of N packets.
    fn pattern(imp: &mut Impairments) -> Vec<bool> {
        (0..N).map(|_| imp.lose()).collect()
    }

    /// Lengths of the runs of consecutive losses.
    fn bursts(lost: &[bool]) -> Vec<usize> {
        lost.split(|l| !l).map(|run| run.len()).filter(|&n| n > 0).collect()
    }

    #[test]
    fn bernoulli_loss_rate_is_within_its_95_percent_interval() {
        let p = 0.03;
        let lost = pattern(&mut with_loss(LossConfig::Bernoulli { p }));
        let rate = lost.iter().filter(|&&l| l).count() as f64 / N as f64;
        let half = 1.96 * (p * (1.0 - p) / N as f64).sqrt();
        assert!((rate - p).abs() < half, "rate {rate}, expected {p} +- {half}");
        // Independent losses: bursts are geometric with mean 1 / (1 - p).
        let b = bursts(&lost);
        let mean = b.iter().sum::<usize>() as f64 / b.len() as f64;
        let expected = 1.0 / (1.0 - p);
        let half = 1.96 * (p.sqrt() / (1.0 - p)) / (b.len() as f64).sqrt();
        assert!((mean - expected).abs() < half, "mean burst {mean}, expected {expected} +- {half}");
    }

    #[test]
    fn gilbert_elliott_loss_rate_and_burst_length_are_within_their_95_percent_intervals() {
        // Losses only in Bad: rate p / (p + r), bursts geometric with mean 1 / r.
        let (p, r) = (0.01, 0.25);
        let lost = pattern(&mut with_loss(LossConfig::GilbertElliott { p, r, loss_bad: 1.0, loss_good: 0.0 }));
        let rate = lost.iter().filter(|&&l| l).count() as f64 / N as f64;
        let pi = p / (p + r);
        // The indicator of a two-state chain is correlated: its sample mean's variance is
        // pi (1 - pi) (1 + l) / ((1 - l) n), with l = 1 - p - r the chain's second eigenvalue.
        let l = 1.0 - p - r;
        let half = 1.96 * (pi * (1.0 - pi) * (1.0 + l) / ((1.0 - l) * N as f64)).sqrt();
        assert!((rate - pi).abs() < half, "rate {rate}, expected {pi} +- {half}");
        let b = bursts(&lost);
        let mean = b.iter().sum::<usize>() as f64 / b.len() as f64;
        let half = 1.96 * ((1.0 - r).sqrt() / r) / (b.len() as f64).sqrt();
        assert!((mean - 1.0 / r).abs() < half, "mean burst {mean}, expected {} +- {half}", 1.0 / r);
    }

    #[test]
    fn gilbert_elliott_with_loss_in_both_states_follows_netem_s_stationary_rate() {
        // 1-h = 0.8 in Bad, 1-k = 0.02 in Good: rate = pi_bad * 0.8 + pi_good * 0.02.
        let (p, r, lb, lg) = (0.02, 0.3, 0.8, 0.02);
        let lost = pattern(&mut with_loss(LossConfig::GilbertElliott { p, r, loss_bad: lb, loss_good: lg }));
        let rate = lost.iter().filter(|&&l| l).count() as f64 / N as f64;
        let pi = p / (p + r);
        let expected = pi * lb + (1.0 - pi) * lg;
        // Bounded by the chain's variance plus the independent coin's.
        let l = 1.0 - p - r;
        let var = (lb - lg).powi(2) * pi * (1.0 - pi) * (1.0 + l) / (1.0 - l) + expected * (1.0 - expected);
        let half = 1.96 * (var / N as f64).sqrt();
        assert!((rate - expected).abs() < half, "rate {rate}, expected {expected} +- {half}");
    }

    fn dues(cfg: ImpairmentsConfig, n: usize) -> Vec<Time> {
        let mut imp = Impairments::new(cfg, streams(3)).unwrap();
        let mut due = Vec::new();
        for i in 0..n {
            // One packet every 100 us, 10 ms of delay, jitter up to 2 ms: far apart enough to
            // reorder under a time-ordered queue.
            due.extend_from_slice(imp.transmit(Time::from_micros(100 * i as u64), Time::from_millis(10)).as_slice());
        }
        due
    }

    #[test]
    fn jitter_reorders_only_when_asked() {
        let jitter = ImpairmentsConfig { jitter_ns: 2_000_000, ..Default::default() };
        let kept = dues(jitter.clone(), 100_000);
        assert!(kept.windows(2).all(|w| w[0] <= w[1]), "no reordering by default");
        let reordered = dues(ImpairmentsConfig { reorder: true, ..jitter }, 100_000);
        let inversions = reordered.windows(2).filter(|w| w[1] < w[0]).count();
        assert!(inversions > 10_000, "reordering asked for, {inversions} inversions");
        // Reordering jitter is netem's uniform delay around the mean delay.
        let mean_extra = reordered.iter().enumerate().map(|(i, t)| (t.as_nanos() - 100_000 * i as u64) as f64).sum::<f64>() / 1e5;
        let half = 1.96 * (2e6 / 3f64.sqrt()) / 1e5f64.sqrt();
        assert!((mean_extra - 10e6).abs() < half, "mean delay {mean_extra} ns");
    }

    #[test]
    fn duplication_sends_a_second_copy_at_its_rate() {
        let d = 0.05;
        let due = dues(ImpairmentsConfig { duplicate: d, ..Default::default() }, N);
        let extra = (due.len() - N) as f64 / N as f64;
        let half = 1.96 * (d * (1.0 - d) / N as f64).sqrt();
        assert!((extra - d).abs() < half, "duplicated {extra}, expected {d} +- {half}");
    }

    #[test]
    fn no_impairment_draws_nothing_and_changes_nothing() {
        let due = dues(ImpairmentsConfig::default(), 5);
        assert_eq!(due, (0..5).map(|i| Time::from_micros(100 * i) + Time::from_millis(10)).collect::<Vec<_>>());
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let bad = ImpairmentsConfig { loss: Some(LossConfig::Bernoulli { p: 1.5 }), ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("loss.p"));
        let bad = ImpairmentsConfig { reorder: true, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("reorder"));
        let bad = ImpairmentsConfig { duplicate: -0.1, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("duplicate"));
    }
}
