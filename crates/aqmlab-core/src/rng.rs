//! Seeded random numbers in named streams.
//!
//! Every consumer of randomness (a discipline's drop coin, a flow's start-time jitter, a
//! video source's frame sizes) draws from its own stream, derived from the scenario seed and a
//! stable name such as `"link/bottleneck"` or `"flow/12/class"` (every name is spelled in
//! aqmlab-model's `streams`). Adding a consumer therefore never shifts the numbers another consumer sees, and the same seed gives the same bytes out.

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[derive(Clone, Debug)]
pub struct SimRng(Pcg64Mcg);

/// FNV-1a over the name, then SplitMix64 finalization mixed with the seed: a stable, portable
/// hash (unlike `std`'s `DefaultHasher`, whose output may change between Rust releases).
fn stream_seed(seed: u64, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    splitmix64(seed ^ splitmix64(h))
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SimRng {
    /// The stream called `name` of the run seeded with `seed`.
    pub fn stream(seed: u64, name: &str) -> SimRng {
        SimRng(Pcg64Mcg::seed_from_u64(stream_seed(seed, name)))
    }

    /// A generator of its own, seeded from one draw of this one: for a consumer that must draw
    /// where the engine passes no generator (DualPI2's rolls at dequeue), so that it still
    /// draws only from the stream it was given, in an order that depends on nothing else.
    pub fn fork(&mut self) -> SimRng {
        SimRng(Pcg64Mcg::seed_from_u64(splitmix64(self.next_u64())))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1), with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn uniform_range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// True with probability `p` (clamped to [0, 1]).
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.uniform() < p)
    }

    /// Exponential with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Standard normal by Box-Muller (one of the pair is discarded to keep the stream stateless).
    pub fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Index drawn from non-negative `weights` (which must not all be zero).
    pub fn weighted_index(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.uniform() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(7, "x");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(7, "x");
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(7, "y");
                move |_| r.next_u64()
            })
            .collect();
        let d: Vec<u64> = (0..4)
            .map({
                let mut r = SimRng::stream(8, "x");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn uniform_mean_is_half() {
        let mut r = SimRng::stream(1, "u");
        let n = 100_000;
        let mean: f64 = (0..n).map(|_| r.uniform()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
    }
}
