//! Yin, Jindal, Sekar and Sinopoli, "A Control-Theoretic Approach for Dynamic Adaptive Video
//! Streaming over HTTP", SIGCOMM 2015, equation 5 with q(R) = R (their QoE_lin):
//!
//! QoE = sum_k q(R_k) - lambda sum_k |q(R_{k+1}) - q(R_k)| - mu sum_k T_k - mu_s T_s,
//!
//! with R in kbit/s, rebuffering T_k and startup T_s in seconds, and the weights of their
//! evaluation (section 7): lambda = 1, mu = mu_s = 3000 (a second of rebuffering costs as much
//! as 3000 kbit/s less in one segment).

/// lambda: weight of a quality switch.
pub const LAMBDA: f64 = 1.0;
/// mu: weight of a second of rebuffering, kbit/s per second.
pub const MU: f64 = 3000.0;
/// mu_s: weight of a second of startup delay.
pub const MU_STARTUP: f64 = 3000.0;

/// The contribution of one segment fetched at `kbps` after a segment at `prev_kbps` (None
/// for the first) that stalled playback for `rebuffer_s`.
pub fn segment_term(kbps: f64, prev_kbps: Option<f64>, rebuffer_s: f64) -> f64 {
    kbps - LAMBDA * prev_kbps.map_or(0.0, |p| (kbps - p).abs()) - MU * rebuffer_s
}

/// A whole session's QoE_lin: its segments' bitrates (kbit/s, in order), total rebuffering
/// and startup delay.
pub fn session(kbps: &[f64], rebuffer_s: f64, startup_s: f64) -> f64 {
    let quality: f64 = kbps.iter().sum();
    let switches: f64 = kbps.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
    quality - LAMBDA * switches - MU * rebuffer_s - MU_STARTUP * startup_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_qoe_by_hand() {
        // 1000 + 3000 + 1000 - (2000 + 2000) - 3000 * 0.5 - 3000 * 0.25 = -1250
        assert_eq!(session(&[1000.0, 3000.0, 1000.0], 0.5, 0.25), -1250.0);
        assert_eq!(segment_term(3000.0, Some(1000.0), 1.0), -2000.0);
        assert_eq!(segment_term(3000.0, None, 0.0), 3000.0);
    }
}
