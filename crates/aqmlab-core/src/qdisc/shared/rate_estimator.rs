//! The arrival-rate estimator of the rate-based disciplines (Rb-RED, Rb-RIO): the exponential
//! averaging of I. Stoica, S. Shenker and H. Zhang, "Core-Stateless Fair Queueing", SIGCOMM
//! 1998, section 2.3. Why this estimator and its default time constant: `rb_red.rs`'s module
//! docs.

use crate::units::Time;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

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
}
