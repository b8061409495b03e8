//! BBA-0, the buffer-based algorithm of Huang, Johari, McKeown, Trunnell and Watson, "A
//! Buffer-Based Approach to Rate Adaptation", SIGCOMM 2014, section 4.
//!
//! The rate map f(B) is R_min over the reservoir (B <= r), R_max beyond reservoir plus
//! cushion (B >= r + cu), and linear in between (their Figure 6). Algorithm 1 turns the map
//! into a rung with hysteresis: the rung changes only when f(B) crosses the next rung up
//! (then to the highest rung below f(B)) or the next rung down (then to the lowest rung above
//! f(B)).
//!
//! Defaults: the paper's Netflix deployment had a 240 s buffer with r = 90 s and cu = 126 s;
//! a simulated player's buffer is far smaller, so the defaults keep those shares of the
//! player's maximum buffer ([`RESERVOIR_SHARE`], [`CUSHION_SHARE`]). Our choice: the paper
//! sizes r from the ladder's segment sizes (BBA-1); BBA-0's fixed reservoir is what is here.

use super::ladder::Ladder;
use super::PlayerState;

/// r / buffer of the paper's deployment: 90 s of 240 s.
pub const RESERVOIR_SHARE: f64 = 90.0 / 240.0;
/// cu / buffer of the paper's deployment: 126 s of 240 s.
pub const CUSHION_SHARE: f64 = 126.0 / 240.0;

/// The rate map f(B), bits/s.
pub fn rate_map(ladder: &Ladder, buffer_s: f64, reservoir_s: f64, cushion_s: f64) -> f64 {
    let r_min = ladder.bitrates_bps[0] as f64;
    let r_max = *ladder.bitrates_bps.last().unwrap() as f64;
    if buffer_s <= reservoir_s {
        r_min
    } else if buffer_s >= reservoir_s + cushion_s {
        r_max
    } else {
        r_min + (r_max - r_min) * (buffer_s - reservoir_s) / cushion_s
    }
}

/// Algorithm 1 of the paper.
pub fn choose(ladder: &Ladder, state: &PlayerState, reservoir_s: f64, cushion_s: f64) -> usize {
    let top = ladder.rungs() - 1;
    let b = state.buffer_s;
    if b <= reservoir_s {
        return 0;
    }
    if b >= reservoir_s + cushion_s {
        return top;
    }
    let f = rate_map(ladder, b, reservoir_s, cushion_s);
    let rate = |i: usize| ladder.bitrates_bps[i] as f64;
    let prev = state.last_rung.unwrap_or(0);
    let up = rate((prev + 1).min(top));
    let down = rate(prev.saturating_sub(1));
    if f >= up {
        // max{R_i : R_i < f(B)}
        (0..=top).rev().find(|&i| rate(i) < f).unwrap_or(0)
    } else if f <= down {
        // min{R_i : R_i > f(B)}
        (0..=top).find(|&i| rate(i) > f).unwrap_or(top)
    } else {
        prev
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::abr::ladder::test_ladder;

    fn at(buffer_s: f64, last_rung: usize) -> PlayerState<'static> {
        PlayerState { segment: 3, buffer_s, last_rung: Some(last_rung), throughputs_bps: &[], prediction_errors: &[] }
    }

    #[test]
    fn rate_map_is_flat_over_reservoir_and_linear_over_cushion() {
        let l = test_ladder(&[300, 750, 1200, 1850, 2850, 4300], 4, 2.0);
        assert_eq!(rate_map(&l, 0.0, 5.0, 10.0), 300e3);
        assert_eq!(rate_map(&l, 5.0, 5.0, 10.0), 300e3);
        assert_eq!(rate_map(&l, 10.0, 5.0, 10.0), 2300e3); // 300 + 4000 * 5/10
        assert_eq!(rate_map(&l, 15.0, 5.0, 10.0), 4300e3);
        assert_eq!(rate_map(&l, 60.0, 5.0, 10.0), 4300e3);
    }

    #[test]
    fn algorithm_one_with_its_hysteresis() {
        let l = test_ladder(&[300, 750, 1200, 1850, 2850, 4300], 4, 2.0);
        // Reservoir: the lowest rung whatever came before; past the cushion: the highest.
        assert_eq!(choose(&l, &at(4.9, 5), 5.0, 10.0), 0);
        assert_eq!(choose(&l, &at(15.5, 0), 5.0, 10.0), 5);
        // f(10 s) = 2300 kbit/s. From 300: above Rate+ (750), so the highest rung below 2300.
        assert_eq!(choose(&l, &at(10.0, 0), 5.0, 10.0), 3);
        // From 1850: Rate+ 2850 and Rate- 1200 bracket 2300, so stay.
        assert_eq!(choose(&l, &at(10.0, 3), 5.0, 10.0), 3);
        // From 4300: at or below Rate- (2850), so the lowest rung above 2300.
        assert_eq!(choose(&l, &at(10.0, 5), 5.0, 10.0), 4);
    }
}
