//! RED's count method (F&J section 7, "method 2") turned around to drop a given *fraction* of
//! arrivals with uniformly spaced drops: the rate-based disciplines' coin. The derivation of
//! `red_probability` is in `rb_red.rs`'s module docs ("Uniform spreading").

use crate::rng::SimRng;

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
        if p.is_nan() || p <= 0.0 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
