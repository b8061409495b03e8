//! The proportional-integral step shared by PIE (RFC 8033 section 4.2) and DualPI2's base
//! controller (RFC 9332 section 2.5.2, Linux `sch_dualpi2.c` `calculate_probability`).

use crate::units::Time;

/// One PI step of the probability, before any scaling or bounds: `alpha (qdelay - target) +
/// beta (qdelay - qdelay_old)`, gains in 1/s and delays in seconds.
pub fn pi_increment(alpha: f64, beta: f64, qdelay: Time, qdelay_old: Time, target: Time) -> f64 {
    let err = qdelay.as_secs_f64() - target.as_secs_f64();
    let trend = qdelay.as_secs_f64() - qdelay_old.as_secs_f64();
    alpha * err + beta * trend
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_weighs_the_error_and_the_trend() {
        let ms = Time::from_millis;
        // 30 ms above target, 45 ms more than last time.
        let p = pi_increment(0.125, 1.25, ms(45), ms(0), ms(15));
        assert!((p - (0.125 * 0.030 + 1.25 * 0.045)).abs() < 1e-15, "{p}");
        // Below target and falling: negative.
        assert!(pi_increment(0.16, 3.2, ms(5), ms(10), ms(15)) < 0.0);
    }
}
