//! dash.js's ThroughputRule: fetch the highest rung whose bitrate fits within a safety
//! factor of the recent mean throughput.
//!
//! dash.js (`ThroughputRule.getMaxIndex` with `ThroughputHistory.getSafeAverageThroughput`,
//! v3) averages the last `AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD` = 4 segment throughputs of an
//! on-demand stream and multiplies by `bandwidthSafetyFactor` = 0.9. Simplification: dash.js
//! also shrinks that window after a sudden throughput change (its
//! `THROUGHPUT_DECREASE_SCALE`/`INCREASE_SCALE` of 1.3) and sets the estimate aside for
//! responses it judges cached; neither is modelled here. Before any segment has been
//! measured, the lowest rung (dash.js starts from its configured initial bitrate; the lowest is
//! our choice, shared with every algorithm here).

use super::ladder::Ladder;
use super::{highest_rung_within, PlayerState};

/// dash.js `bandwidthSafetyFactor`.
pub const SAFETY_FACTOR: f64 = 0.9;
/// dash.js `AVERAGE_THROUGHPUT_SAMPLE_AMOUNT_VOD`.
pub const WINDOW: u32 = 4;

/// The arithmetic mean of the last `window` throughputs (None before the first).
pub fn mean_throughput(throughputs_bps: &[f64], window: usize) -> Option<f64> {
    let recent = &throughputs_bps[throughputs_bps.len().saturating_sub(window)..];
    (!recent.is_empty()).then(|| recent.iter().sum::<f64>() / recent.len() as f64)
}

pub fn choose(ladder: &Ladder, state: &PlayerState, safety_factor: f64, window: usize) -> usize {
    match mean_throughput(state.throughputs_bps, window) {
        Some(estimate) => highest_rung_within(ladder, safety_factor * estimate),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;

    fn state(throughputs_bps: &[f64]) -> PlayerState<'_> {
        PlayerState { segment: 5, buffer_s: 10.0, last_rung: Some(0), throughputs_bps, prediction_errors: &[] }
    }

    #[test]
    fn safety_factor_on_the_mean_of_the_last_four() {
        let ladder = test_ladder(&[300, 750, 1200, 1850, 2850, 4300], 10, 2.0);
        // Last four: mean 3.5 Mbit/s, times 0.9 = 3.15 Mbit/s: 2850 kbit/s fits, 4300 does not.
        let tput = [1e6, 2e6, 3e6, 4e6, 5e6];
        assert_eq!(choose(&ladder, &state(&tput), SAFETY_FACTOR, 4), 4);
        // Without the safety factor 3.5 Mbit/s still misses 4300; a window of 1 (5 Mbit/s) reaches it.
        assert_eq!(choose(&ladder, &state(&tput), 1.0, 4), 4);
        assert_eq!(choose(&ladder, &state(&tput), SAFETY_FACTOR, 1), 5);
        // 0.9 * 2 Mbit/s = 1.8 Mbit/s: just under 1850.
        assert_eq!(choose(&ladder, &state(&[2e6]), SAFETY_FACTOR, 4), 2);
        // Nothing measured yet, or less than the lowest rung: the lowest.
        assert_eq!(choose(&ladder, &state(&[]), SAFETY_FACTOR, 4), 0);
        assert_eq!(choose(&ladder, &state(&[1e5]), SAFETY_FACTOR, 4), 0);
    }
}
