//! BOLA-BASIC, Spiteri, Urgaonkar and Sitaraman, "BOLA: Near-Optimal Bitrate Adaptation for
//! Online Videos", INFOCOM 2016.
//!
//! Utility of rung m: v_m = ln(S_m / S_1), so the lowest rung has utility 0. With the buffer
//! Q counted in segments, the rung fetched next maximises (V v_m + V gamma p - Q) / S_m
//! (the paper's decision rule, section IV). The parameters come from a buffer target Q_max:
//! gamma p is given, and V = (Q_max - 1) / (v_M + gamma p), so that the rule reaches the top
//! rung only as Q nears Q_max - 1 segments and never asks for more buffer than Q_max (the
//! paper's bound on Q; Sabre, Spiteri's simulator, sets `Vp = (buffer_size - segment_time) /
//! (utilities[-1] + gp)` the same way, with gp = 5 by default, which is our default too).
//!
//! S_m: the paper takes each rung's segment size as fixed; we use the rung's nominal bitrate
//! (size over segment duration), so that per-segment size variation does not move the rule;
//! a constant factor does not change the argmax. Not modelled here: BOLA-O/BOLA-U and BOLA-E's
//! placeholder buffer and its startup throughput rule (dash.js's `BolaRule`), which are
//! `bola_e.rs`, a separate algorithm (`bola_e`) so that this one stays BOLA-BASIC; when every
//! score is negative (buffer above target) the paper pauses, while here the player's own
//! maximum buffer decides when to wait.

use super::ladder::Ladder;
use super::PlayerState;

/// gamma * p: Sabre's default `gp`.
pub const GAMMA_P: f64 = 5.0;

/// v_m = ln(S_m / S_1) of every rung.
pub fn utilities(ladder: &Ladder) -> Vec<f64> {
    let s1 = ladder.bitrates_bps[0] as f64;
    ladder.bitrates_bps.iter().map(|&b| (b as f64 / s1).ln()).collect()
}

/// V from the buffer target, in segments: V = (Q_max - 1) / (v_M + gamma p).
pub fn v_parameter(ladder: &Ladder, gamma_p: f64, buffer_target_s: f64) -> f64 {
    let q_max = buffer_target_s / ladder.segment_duration_s();
    let v_top = *utilities(ladder).last().unwrap();
    (q_max - 1.0) / (v_top + gamma_p)
}

pub fn choose(ladder: &Ladder, state: &PlayerState, gamma_p: f64, buffer_target_s: f64) -> usize {
    let v = v_parameter(ladder, gamma_p, buffer_target_s);
    let q = state.buffer_s / ladder.segment_duration_s();
    let mut best = (0, f64::NEG_INFINITY);
    for (m, u) in utilities(ladder).into_iter().enumerate() {
        let score = (v * u + v * gamma_p - q) / ladder.bitrates_bps[m] as f64;
        if score > best.1 {
            best = (m, score);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;

    fn at(buffer_s: f64) -> PlayerState<'static> {
        PlayerState { segment: 3, buffer_s, last_rung: Some(0), throughputs_bps: &[], prediction_errors: &[] }
    }

    #[test]
    fn utility_is_log_size_ratio() {
        let l = test_ladder(&[1000, 2000, 4000], 4, 2.0);
        let u = utilities(&l);
        assert_eq!(u[0], 0.0);
        assert!((u[1] - 2f64.ln()).abs() < 1e-12 && (u[2] - 4f64.ln()).abs() < 1e-12);
    }

    /// By hand: rungs 1, 2, 4 Mbit/s, 2 s segments, Q_max = 10 s = 5 segments, gamma p = 5:
    /// V = 4 / (ln 4 + 5) = 0.62634. Scores (V v_m + V gamma p - Q) / S_m with S in Mbit/s:
    /// Q = 2 segments: 1.1317, 0.7829, 0.5000 -> rung 0;
    /// Q = 3 segments: 0.1317, 0.2829, 0.2500 -> rung 1;
    /// Q = 3.5 segments: -0.3683, 0.0329, 0.1250 -> rung 2.
    #[test]
    fn decision_rule_on_a_hand_computed_case() {
        let l = test_ladder(&[1000, 2000, 4000], 4, 2.0);
        assert!((v_parameter(&l, 5.0, 10.0) - 4.0 / (4f64.ln() + 5.0)).abs() < 1e-12);
        assert_eq!(choose(&l, &at(4.0), 5.0, 10.0), 0);
        assert_eq!(choose(&l, &at(6.0), 5.0, 10.0), 1);
        assert_eq!(choose(&l, &at(7.0), 5.0, 10.0), 2);
        // A larger target stretches the same decisions over more buffer.
        assert_eq!(choose(&l, &at(7.0), 5.0, 20.0), 0);
    }
}
