//! MPC and RobustMPC, Yin, Jindal, Sekar and Sinopoli, SIGCOMM 2015 (section 4 and 5).
//!
//! At each segment the player predicts the throughput C of the next [`HORIZON`] segments as
//! the harmonic mean of the last 5 measured (their section 6.1); RobustMPC uses the lower
//! bound C / (1 + e), with e the largest relative prediction error |C_pred - C| / C of the
//! last 5 segments. It then searches every rung sequence over the horizon (at most the
//! segments left), simulating the buffer with the real segment sizes (download time
//! d = 8 S / C, rebuffering max(0, d - B), buffer B <- max(B - d, 0) + L), scores each by
//! the linear QoE ([`super::qoe`], their weights) and fetches the first rung of the best.
//!
//! Our choices where the paper is silent or does more: before any throughput is measured
//! the lowest rung is fetched (the paper also optimizes the startup delay T_s; here playback
//! starts when the first segment is in, see the player); ties go to the lower rung; the
//! search is exhaustive (the paper's FastMPC tabulates the same optimum offline); the
//! player's maximum buffer is not part of the lookahead (as in the paper's formulation).

use super::ladder::Ladder;
use super::qoe;
use super::PlayerState;

/// Segments looked ahead.
pub const HORIZON: u32 = 5;
/// Past segments the prediction and the error bound look at.
pub const PAST: usize = 5;

/// Harmonic mean of the last [`PAST`] throughputs, bits/s (None before the first).
pub fn predict(throughputs_bps: &[f64]) -> Option<f64> {
    let recent = &throughputs_bps[throughputs_bps.len().saturating_sub(PAST)..];
    (!recent.is_empty()).then(|| recent.len() as f64 / recent.iter().map(|c| 1.0 / c).sum::<f64>())
}

/// The throughput MPC (or RobustMPC, `robust`) plans with.
pub fn planning_throughput(state: &PlayerState, robust: bool) -> Option<f64> {
    let c = predict(state.throughputs_bps)?;
    if !robust {
        return Some(c);
    }
    let errors = &state.prediction_errors[state.prediction_errors.len().saturating_sub(PAST)..];
    let e = errors.iter().copied().fold(0.0, f64::max);
    Some(c / (1.0 + e))
}

pub fn choose(ladder: &Ladder, state: &PlayerState, horizon: usize, robust: bool) -> usize {
    let Some(c) = planning_throughput(state, robust) else { return 0 };
    let steps = horizon.min(ladder.segments().saturating_sub(state.segment));
    if steps == 0 {
        return state.last_rung.unwrap_or(0);
    }
    let search = Search { ladder, c, first_segment: state.segment, steps };
    let prev_kbps = state.last_rung.map(|r| kbps(ladder, r));
    let mut best = (0, f64::NEG_INFINITY);
    for r in 0..ladder.rungs() {
        let value = search.best_from(0, r, state.buffer_s, prev_kbps);
        if value > best.1 {
            best = (r, value);
        }
    }
    best.0
}

fn kbps(ladder: &Ladder, rung: usize) -> f64 {
    ladder.bitrates_bps[rung] as f64 / 1000.0
}

struct Search<'a> {
    ladder: &'a Ladder,
    c: f64,
    first_segment: usize,
    steps: usize,
}

impl Search<'_> {
    /// The best QoE of the horizon's steps `step..` when step `step` fetches `rung` with
    /// `buffer_s` seconds buffered and the previous segment at `prev_kbps`.
    fn best_from(&self, step: usize, rung: usize, buffer_s: f64, prev_kbps: Option<f64>) -> f64 {
        let l = self.ladder;
        let download_s = l.size(rung, self.first_segment + step) as f64 * 8.0 / self.c;
        let rebuffer_s = (download_s - buffer_s).max(0.0);
        let buffer_after = (buffer_s - download_s).max(0.0) + l.segment_duration_s();
        let q = kbps(l, rung);
        let here = qoe::segment_term(q, prev_kbps, rebuffer_s);
        if step + 1 == self.steps {
            return here;
        }
        let rest = (0..l.rungs()).map(|r| self.best_from(step + 1, r, buffer_after, Some(q))).fold(f64::NEG_INFINITY, f64::max);
        here + rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;

    fn at<'a>(segment: usize, buffer_s: f64, throughputs_bps: &'a [f64], prediction_errors: &'a [f64]) -> PlayerState<'a> {
        PlayerState { segment, buffer_s, last_rung: Some(0), throughputs_bps, prediction_errors }
    }

    #[test]
    fn harmonic_mean_of_the_last_five() {
        assert_eq!(predict(&[]), None);
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-6;
        assert!(close(predict(&[1e6, 4e6]), 1.6e6)); // 2 / (1/1 + 1/4) Mbit/s
        assert!(close(predict(&[9e9, 2e6, 2e6, 2e6, 2e6, 2e6]), 2e6)); // the sixth-last is out
        assert!(close(predict(&[1e3, 2e6, 2e6, 2e6, 2e6]), 5.0 / (1e-3 + 4.0 / 2e6)));
    }

    /// By hand: rungs 1 and 3 Mbit/s, 2 s segments (250 kB, 750 kB), C = 2 Mbit/s, last
    /// rung 0, two segments left (the horizon is cut to them).
    /// Buffer 2 s: (0,0) = 1000 + 1000 = 2000; (0,1) = 1000 + (3000 - 2000) = 2000;
    /// (1,0): d = 3 s, rebuffer 1 s: 3000 - 2000 - 3000 = -2000, then B = 2, 1000 - 2000:
    /// -3000; (1,1): -2000 + (3000 - 3000) = -2000. Best first rung: 0 (tie to the lower).
    /// Buffer 4 s: (1,1) = (3000 - 2000) + 3000 = 4000 beats (0,1) = 1000 + 1000 = 2000: rung 1.
    #[test]
    fn choice_on_a_hand_computed_two_segment_horizon() {
        let l = test_ladder(&[1000, 3000], 4, 2.0);
        assert_eq!(choose(&l, &at(2, 2.0, &[2e6], &[]), HORIZON as usize, false), 0);
        assert_eq!(choose(&l, &at(2, 4.0, &[2e6], &[]), HORIZON as usize, false), 1);
        // RobustMPC with a past error of 0.5 plans at 2/1.5 Mbit/s: (1,1) rebuffers 0.5 s
        // then 2.5 s: -500 - 4500 = -5000; (0,0) = 2000. Rung 0.
        assert_eq!(choose(&l, &at(2, 4.0, &[2e6], &[0.5]), HORIZON as usize, true), 0);
        // Without an error RobustMPC is MPC.
        assert_eq!(choose(&l, &at(2, 4.0, &[2e6], &[0.0]), HORIZON as usize, true), 1);
        // Nothing measured: the lowest rung.
        assert_eq!(choose(&l, &at(0, 4.0, &[], &[]), HORIZON as usize, false), 0);
    }

    /// Three segments ahead. Rungs 1 and 3 Mbit/s (250 kB, 750 kB), C = 2.4 Mbit/s, last
    /// rung 0. Buffer 3 s: (1,1,1) downloads 2.5 s each, buffer 3 -> 2.5 -> 2, rebuffering
    /// 0.5 s only in the third: (3000 - 2000) + 3000 + (3000 - 1500) = 5500, above (0,1,1)
    /// = 1000 + 1000 + 3000 = 5000 and (0,0,0) = 3000: rung 1. A one-segment horizon sees
    /// 3000 - 2000 = 1000 for rung 1 and 1000 for rung 0, a tie, so rung 0.
    /// Buffer 1 s: rung 1 first rebuffers 1.5 s (3000 - 2000 - 4500 = -3500), and (1,1,1) =
    /// -500 against (0,0,0) = 3000: rung 0.
    #[test]
    fn three_segment_horizon_sees_ahead() {
        let l = test_ladder(&[1000, 3000], 3, 2.0);
        assert_eq!(choose(&l, &at(0, 3.0, &[2.4e6], &[]), 3, false), 1);
        assert_eq!(choose(&l, &at(0, 3.0, &[2.4e6], &[]), 1, false), 0);
        assert_eq!(choose(&l, &at(0, 1.0, &[2.4e6], &[]), 3, false), 0);
    }
}
