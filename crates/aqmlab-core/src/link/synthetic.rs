//! Synthetic delivery traces: a capacity that is constant, a square wave, or a Markov chain of
//! two or three capacity states (the simplest model of a cellular link's varying capacity),
//! written as mahimahi traces so that both engines, and mahimahi itself, can run them.
//!
//! Each model gives a capacity for every millisecond of one loop; the capacity is turned into
//! opportunities by a bit counter: every millisecond adds its capacity's bits, and each 12 000
//! bits (one 1500-byte packet, `MTU_BYTES`) become an opportunity in that millisecond. The
//! arithmetic is in integers (milli-bits), so a constant 12 Mbit/s is exactly one line per
//! millisecond and the loop's mean rate is the model's up to less than one packet per loop.
//!
//! A mahimahi trace's loop ends at its last opportunity (its period is the last timestamp),
//! so a generated loop always has one in its last millisecond: when the counter did not put
//! one there, one is added. That is at most one packet per loop more than the model (12 kbit
//! over a 1 s loop), the price of keeping the loop as long as asked. Choice: the format cannot
//! say "silent until the end of the loop" otherwise.

use super::trace::{DeliveryTrace, MTU_BYTES};
use crate::rng::SimRng;
use serde::{Deserialize, Serialize};

/// Most opportunities one generated loop may hold (a 1 Gbit/s loop of 2 minutes); a loop is
/// kept in memory, once per link.
pub const MAX_OPPORTUNITIES: u64 = 10_000_000;

/// One state of a Markov capacity model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovState {
    pub rate_bps: u64,
    /// Mean time spent in the state before the chain moves, in ms (at least 1).
    pub mean_dwell_ms: f64,
}

/// A capacity model, as the engines' configs and `_core.synthetic_trace` spell it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SyntheticTrace {
    /// The same capacity throughout a loop of `length_ms`.
    Constant { rate_bps: u64, length_ms: u64 },
    /// `high_bps` for the first `high_ms` of each `period_ms`, `low_bps` for the rest; one loop
    /// is one period.
    Square { high_bps: u64, low_bps: u64, period_ms: u64, high_ms: u64 },
    /// A Markov chain over `states`, one step per millisecond: in state `s` the chain leaves
    /// with probability `1 / mean_dwell_ms` (a geometric dwell of that mean) for one of the
    /// other states, chosen uniformly; it starts in a state drawn from its stationary
    /// distribution (proportional to the mean dwells, since every jump is uniform). One loop
    /// of `length_ms` is drawn, then repeated like any trace.
    Markov { states: Vec<MarkovState>, length_ms: u64 },
}

impl SyntheticTrace {
    /// Checks the parameters; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            SyntheticTrace::Constant { rate_bps, length_ms } => {
                positive("rate", *rate_bps)?;
                positive("length", *length_ms)?;
                fits(*rate_bps as f64, *length_ms)
            }
            SyntheticTrace::Square { high_bps, low_bps, period_ms, high_ms } => {
                positive("high", *high_bps)?;
                if !(0 < *high_ms && high_ms < period_ms) {
                    return Err(format!("high time {high_ms} ms must be within the period ({period_ms} ms): 0 < high < period"));
                }
                if low_bps > high_bps {
                    return Err(format!("low ({low_bps} bit/s) must not exceed high ({high_bps} bit/s)"));
                }
                fits(*high_bps as f64, *period_ms)
            }
            SyntheticTrace::Markov { states, length_ms } => {
                if !(2..=3).contains(&states.len()) {
                    return Err(format!("states: {} given; a Markov model has 2 or 3 states", states.len()));
                }
                for (i, s) in states.iter().enumerate() {
                    if !(s.mean_dwell_ms.is_finite() && s.mean_dwell_ms >= 1.0) {
                        return Err(format!("states.{i}.mean_dwell: {} ms; at least 1 ms", s.mean_dwell_ms));
                    }
                }
                if states.iter().all(|s| s.rate_bps == 0) {
                    return Err("states: every rate is 0; at least one state must carry packets".into());
                }
                positive("length", *length_ms)?;
                let top = states.iter().map(|s| s.rate_bps).max().unwrap_or(0);
                fits(top as f64, *length_ms)
            }
        }
    }

    /// One loop of the model as a trace; `rng` is drawn from only by the Markov model (its
    /// stream is `aqmlab_model::streams::link_trace`).
    pub fn generate(&self, rng: &mut SimRng) -> Result<DeliveryTrace, String> {
        self.validate()?;
        let trace = match self {
            SyntheticTrace::Constant { rate_bps, length_ms } => from_rates((0..*length_ms).map(|_| *rate_bps)),
            SyntheticTrace::Square { high_bps, low_bps, period_ms, high_ms } => {
                from_rates((0..*period_ms).map(|ms| if ms < *high_ms { *high_bps } else { *low_bps }))
            }
            SyntheticTrace::Markov { states, length_ms } => {
                let dwell: Vec<f64> = states.iter().map(|s| s.mean_dwell_ms).collect();
                let mut state = rng.weighted_index(&dwell);
                let mut rates = Vec::with_capacity(*length_ms as usize);
                for _ in 0..*length_ms {
                    rates.push(states[state].rate_bps);
                    if rng.bernoulli(1.0 / states[state].mean_dwell_ms) {
                        // Uniform among the others: skip over the current state.
                        let k = (rng.uniform() * (states.len() - 1) as f64) as usize;
                        let k = k.min(states.len() - 2);
                        state = if k >= state { k + 1 } else { k };
                    }
                }
                from_rates(rates.into_iter())
            }
        };
        Ok(trace)
    }
}

fn positive(field: &str, v: u64) -> Result<(), String> {
    if v == 0 {
        return Err(format!("{field} must be positive"));
    }
    Ok(())
}

/// A loop at most at `rate` for `length_ms` stays within `MAX_OPPORTUNITIES`.
fn fits(rate_bps: f64, length_ms: u64) -> Result<(), String> {
    let most = rate_bps * length_ms as f64 / 1000.0 / (MTU_BYTES * 8) as f64;
    if most > MAX_OPPORTUNITIES as f64 {
        return Err(format!(
            "one loop would hold about {most:.0} opportunities, more than {MAX_OPPORTUNITIES}: shorten the loop or lower the rate"
        ));
    }
    Ok(())
}

/// Opportunities from one capacity per millisecond of a loop (see the module's comment).
fn from_rates(rates: impl Iterator<Item = u64>) -> DeliveryTrace {
    // Capacity in milli-bits: `rate_bps` bit/s is `rate_bps` milli-bits per millisecond.
    const PACKET_MILLIBITS: u128 = MTU_BYTES as u128 * 8 * 1000;
    let mut credit: u128 = 0;
    let mut times = Vec::new();
    let mut length = 0;
    for (i, rate) in rates.enumerate() {
        let ms = i as u64 + 1;
        credit += rate as u128;
        while credit >= PACKET_MILLIBITS {
            credit -= PACKET_MILLIBITS;
            times.push(ms);
        }
        length = ms;
    }
    if times.last() != Some(&length) {
        times.push(length);
    }
    DeliveryTrace { opportunities_ms: times }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Rate;

    fn rng() -> SimRng {
        SimRng::stream(1, "test")
    }

    #[test]
    fn twelve_megabits_is_one_line_per_millisecond() {
        let t = SyntheticTrace::Constant { rate_bps: 12_000_000, length_ms: 100 }.generate(&mut rng()).unwrap();
        assert_eq!(t.opportunities_ms, (1..=100).collect::<Vec<_>>());
        let t = SyntheticTrace::Constant { rate_bps: 48_000_000, length_ms: 2 }.generate(&mut rng()).unwrap();
        assert_eq!(t.opportunities_ms, vec![1, 1, 1, 1, 2, 2, 2, 2]);
    }

    #[test]
    fn a_constant_rate_is_met_to_within_one_packet_per_loop() {
        // 5 Mbit/s: an opportunity every 2.4 ms, 416 2/3 in a second; the last millisecond
        // gets the 417th.
        let t = SyntheticTrace::Constant { rate_bps: 5_000_000, length_ms: 1000 }.generate(&mut rng()).unwrap();
        assert_eq!(t.opportunities_ms.len(), 417);
        assert_eq!(&t.opportunities_ms[..3], &[3, 5, 8]);
        assert_eq!(t.period().as_nanos(), 1_000_000_000);
        assert!((t.mean_rate().0 as f64 - 5e6).abs() <= 12_000.0, "{:?}", t.mean_rate());
    }

    #[test]
    fn a_square_wave_is_high_then_low_with_the_loop_ending_on_an_opportunity() {
        let t = SyntheticTrace::Square { high_bps: 24_000_000, low_bps: 0, period_ms: 10, high_ms: 4 }.generate(&mut rng()).unwrap();
        assert_eq!(t.opportunities_ms, vec![1, 1, 2, 2, 3, 3, 4, 4, 10]);
        let t = SyntheticTrace::Square { high_bps: 24_000_000, low_bps: 6_000_000, period_ms: 1000, high_ms: 500 }
            .generate(&mut rng())
            .unwrap();
        assert_eq!(t.mean_rate(), Rate(15_000_000));
        assert_eq!(t.opportunities_ms.iter().filter(|&&ms| ms <= 500).count(), 1000);
    }

    #[test]
    fn a_markov_model_spends_its_time_as_its_dwells_say_and_is_seeded() {
        let states = vec![MarkovState { rate_bps: 24_000_000, mean_dwell_ms: 300.0 }, MarkovState { rate_bps: 0, mean_dwell_ms: 100.0 }];
        let model = SyntheticTrace::Markov { states, length_ms: 600_000 };
        let t = model.generate(&mut rng()).unwrap();
        // Stationary: 3/4 of the time at 24 Mbit/s, so 18 Mbit/s on average; over 600 s with
        // ~1500 state changes the mean is within a few percent.
        let mean = t.mean_rate().0 as f64;
        assert!((mean / 18e6 - 1.0).abs() < 0.05, "mean {mean}");
        // Outages: gaps of more than 1 ms between opportunities, with a mean near 100 ms.
        let gaps: Vec<u64> = t.opportunities_ms.windows(2).map(|w| w[1] - w[0]).filter(|&g| g > 1).collect();
        let mean_gap = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((80.0..120.0).contains(&mean_gap), "mean outage {mean_gap} ms over {} outages", gaps.len());
        assert_eq!(model.generate(&mut rng()).unwrap(), t, "same stream, same trace");
        assert_ne!(model.generate(&mut SimRng::stream(2, "test")).unwrap(), t);
    }

    #[test]
    fn three_states_visit_each_state() {
        let states = vec![
            MarkovState { rate_bps: 36_000_000, mean_dwell_ms: 50.0 },
            MarkovState { rate_bps: 12_000_000, mean_dwell_ms: 50.0 },
            MarkovState { rate_bps: 0, mean_dwell_ms: 50.0 },
        ];
        let t = SyntheticTrace::Markov { states, length_ms: 300_000 }.generate(&mut rng()).unwrap();
        let mean = t.mean_rate().0 as f64;
        assert!((mean / 16e6 - 1.0).abs() < 0.05, "mean {mean}");
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let e = |m: SyntheticTrace| m.generate(&mut rng()).unwrap_err();
        assert!(e(SyntheticTrace::Constant { rate_bps: 0, length_ms: 5 }).starts_with("rate"));
        assert!(e(SyntheticTrace::Square { high_bps: 1, low_bps: 0, period_ms: 10, high_ms: 10 }).starts_with("high time"));
        assert!(e(SyntheticTrace::Square { high_bps: 1, low_bps: 2, period_ms: 10, high_ms: 5 }).starts_with("low"));
        let one = vec![MarkovState { rate_bps: 1, mean_dwell_ms: 5.0 }];
        assert!(e(SyntheticTrace::Markov { states: one, length_ms: 5 }).starts_with("states"));
        let short = vec![MarkovState { rate_bps: 1, mean_dwell_ms: 0.5 }, MarkovState { rate_bps: 1, mean_dwell_ms: 5.0 }];
        assert!(e(SyntheticTrace::Markov { states: short, length_ms: 5 }).starts_with("states.0.mean_dwell"));
        assert!(e(SyntheticTrace::Constant { rate_bps: 10_000_000_000, length_ms: 60_000 }).contains("opportunities"));
    }
}
