//! The delay-based rate controller (draft-ietf-rmcat-gcc-02 section 5.5): a state machine of
//! Increase, Decrease and Hold driven by the over-use detector's signal, which sets the
//! delay-based estimate A_hat.
//!
//! Transitions (section 5.5's table; a blank cell keeps the state):
//!
//! | signal \ state | Hold     | Increase | Decrease |
//! | :--            | :--      | :--      | :--      |
//! | over-use       | Decrease | Decrease | -        |
//! | normal         | Increase | -        | Hold     |
//! | under-use      | -        | Hold     | Hold     |
//!
//! In Increase, far from convergence the rate grows multiplicatively,
//! `A_hat(i) = eta * A_hat(i-1)` with `eta = 1.08^min(dt / 1 s, 1)` (8 % per second); near
//! convergence additively, by `max(1000, alpha * expected_packet_size_bits)` with
//! `alpha = 0.5 * min(dt / response_time, 1)`, `response_time = 100 ms + RTT`, and the packet
//! size of a 30 fps stream at A_hat cut into packets of at most 1200 bytes. "Near convergence"
//! is the incoming rate within three standard deviations of the average of the incoming rates
//! measured at past decreases; above that band the average is forgotten (the link's capacity
//! changed) and the increase is multiplicative again. The draft gives no smoothing for that
//! average: we take WebRTC's exponential average with weight 0.05, and its variance
//! normalised by the average (initial 0.4), both in kbit/s.
//! In any state A_hat stays below 1.5 times the incoming rate R_hat (section 5.5), which only
//! caps an increase.
//! In Decrease, `A_hat(i) = beta * R_hat(i)` with beta = 0.85 (never a rise).

use super::overuse::Signal;
use aqmlab_core::Time;

pub const BETA: f64 = 0.85;
pub const INCREASE_PER_SECOND: f64 = 1.08;
pub const MAX_INCREASE_OVER_INCOMING: f64 = 1.5;
const AVG_WEIGHT: f64 = 0.05;
const INITIAL_VAR: f64 = 0.4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateState {
    Hold,
    Increase,
    Decrease,
}

impl RateState {
    /// The table's transition.
    pub fn next(self, signal: Signal) -> RateState {
        use RateState::*;
        match (signal, self) {
            (Signal::Overuse, _) => Decrease,
            (Signal::Normal, Hold) => Increase,
            (Signal::Normal, Decrease) => Hold,
            (Signal::Normal, Increase) => Increase,
            (Signal::Underuse, _) => Hold,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            RateState::Hold => 0,
            RateState::Increase => 1,
            RateState::Decrease => 2,
        }
    }
}

#[derive(Clone, Debug)]
pub struct AimdRateControl {
    /// A_hat, bit/s.
    pub rate_bps: f64,
    pub state: RateState,
    min_bps: f64,
    max_bps: f64,
    last_update: Option<Time>,
    /// Average and normalised variance of R_hat at decreases, kbit/s (None: forgotten).
    avg_max_kbps: Option<f64>,
    var_max: f64,
    /// Whether the last increase was additive (for the results).
    pub additive: bool,
}

impl AimdRateControl {
    pub fn new(start_bps: f64, min_bps: f64, max_bps: f64) -> Self {
        AimdRateControl {
            rate_bps: start_bps,
            state: RateState::Hold,
            min_bps,
            max_bps,
            last_update: None,
            avg_max_kbps: None,
            var_max: INITIAL_VAR,
            additive: false,
        }
    }

    /// One update at `now` with the detector's `signal`, the incoming rate R_hat (None before
    /// one is measured) and the round-trip time.
    pub fn update(&mut self, signal: Signal, incoming_bps: Option<f64>, rtt: Time, now: Time) -> f64 {
        let dt = self.last_update.map_or(0.0, |l| now.saturating_sub(l).as_secs_f64());
        self.last_update = Some(now);
        self.state = self.state.next(signal);
        match self.state {
            RateState::Hold => {}
            RateState::Increase => {
                if let (Some(r), Some(avg)) = (incoming_bps, self.avg_max_kbps) {
                    if r / 1000.0 > avg + 3.0 * self.std_max_kbps() {
                        self.avg_max_kbps = None;
                    }
                }
                let near = match (incoming_bps, self.avg_max_kbps) {
                    (Some(r), Some(avg)) => (r / 1000.0 - avg).abs() <= 3.0 * self.std_max_kbps(),
                    _ => false,
                };
                self.additive = near;
                let increased = if near {
                    let response = 0.1 + rtt.as_secs_f64();
                    let alpha = 0.5 * (dt / response).min(1.0);
                    self.rate_bps + f64::max(1000.0, alpha * expected_packet_bits(self.rate_bps))
                } else {
                    self.rate_bps * INCREASE_PER_SECOND.powf(dt.min(1.0))
                };
                let cap = incoming_bps.map_or(f64::INFINITY, |r| MAX_INCREASE_OVER_INCOMING * r);
                if self.rate_bps < cap {
                    self.rate_bps = increased.min(cap);
                }
            }
            RateState::Decrease => {
                if let Some(r) = incoming_bps {
                    self.rate_bps = self.rate_bps.min(BETA * r);
                    self.note_decrease(r / 1000.0);
                }
            }
        }
        self.rate_bps = self.rate_bps.clamp(self.min_bps, self.max_bps);
        self.rate_bps
    }

    /// Updates the average incoming rate at decreases (WebRTC's smoothing, see above).
    fn note_decrease(&mut self, r_kbps: f64) {
        let avg = match self.avg_max_kbps {
            None => r_kbps,
            Some(a) => (1.0 - AVG_WEIGHT) * a + AVG_WEIGHT * r_kbps,
        };
        let norm = avg.max(1.0);
        self.var_max = ((1.0 - AVG_WEIGHT) * self.var_max + AVG_WEIGHT * (avg - r_kbps).powi(2) / norm).clamp(0.4, 2.5);
        self.avg_max_kbps = Some(avg);
    }

    fn std_max_kbps(&self) -> f64 {
        (self.var_max * self.avg_max_kbps.unwrap_or(0.0)).sqrt()
    }
}

/// Section 5.5's expected packet size: a 30 fps frame at `rate` cut into packets of at most
/// 1200 bytes.
pub fn expected_packet_bits(rate_bps: f64) -> f64 {
    let frame_bits = rate_bps / 30.0;
    let packets = (frame_bits / (1200.0 * 8.0)).ceil().max(1.0);
    frame_bits / packets
}

#[cfg(test)]
mod tests {
    use super::*;
    use RateState::*;

    #[test]
    fn transitions_follow_the_drafts_table() {
        assert_eq!(Hold.next(Signal::Overuse), Decrease);
        assert_eq!(Increase.next(Signal::Overuse), Decrease);
        assert_eq!(Decrease.next(Signal::Overuse), Decrease);
        assert_eq!(Hold.next(Signal::Normal), Increase);
        assert_eq!(Increase.next(Signal::Normal), Increase);
        assert_eq!(Decrease.next(Signal::Normal), Hold);
        assert_eq!(Hold.next(Signal::Underuse), Hold);
        assert_eq!(Increase.next(Signal::Underuse), Hold);
        assert_eq!(Decrease.next(Signal::Underuse), Hold);
    }

    fn at(ms: u64) -> Time {
        Time::from_millis(ms)
    }

    #[test]
    fn multiplicative_increase_is_eight_percent_per_second() {
        let mut c = AimdRateControl::new(1e6, 1e5, 1e8);
        let rtt = at(50);
        c.update(Signal::Normal, None, rtt, at(0)); // Hold -> Increase, dt 0: unchanged
        assert_eq!(c.rate_bps, 1e6);
        c.update(Signal::Normal, None, rtt, at(500));
        assert!((c.rate_bps - 1e6 * 1.08f64.powf(0.5)).abs() < 1e-6);
        // A gap of 3 s counts as 1 s.
        c.update(Signal::Normal, None, rtt, at(3500));
        assert!((c.rate_bps - 1e6 * 1.08f64.powf(1.5)).abs() < 1e-6);
        assert!(!c.additive);
    }

    #[test]
    fn decrease_is_to_085_of_incoming_and_then_hold() {
        let mut c = AimdRateControl::new(2e6, 1e5, 1e8);
        c.update(Signal::Overuse, Some(1.5e6), at(50), at(0));
        assert_eq!(c.state, Decrease);
        assert_eq!(c.rate_bps, 0.85 * 1.5e6);
        // A decrease never raises the rate.
        c.update(Signal::Overuse, Some(2e6), at(50), at(50));
        assert_eq!(c.rate_bps, 0.85 * 1.5e6);
        c.update(Signal::Normal, Some(1.2e6), at(50), at(100));
        assert_eq!(c.state, Hold);
        assert_eq!(c.rate_bps, 0.85 * 1.5e6);
    }

    #[test]
    fn near_the_last_decreases_increase_is_additive() {
        let mut c = AimdRateControl::new(2e6, 1e5, 1e8);
        c.update(Signal::Overuse, Some(1e6), at(50), at(0)); // avg 1000 kbit/s, A = 850 k
        c.update(Signal::Normal, Some(1e6), at(50), at(100)); // Hold
        c.update(Signal::Normal, Some(1e6), at(50), at(200)); // Increase, dt = 100 ms
        assert!(c.additive);
        // alpha = 0.5 * min(100 / 150, 1) = 1/3; 850 kbit/s at 30 fps = 28333 bit frames in
        // 3 packets of 9444 bits: + max(1000, 3148) bits.
        let expect = 850e3 + (0.5 * 100.0 / 150.0) * (850e3 / 30.0 / 3.0);
        assert!((c.rate_bps - expect).abs() < 1e-6, "{} {expect}", c.rate_bps);
        // Incoming far above the average: multiplicative again.
        c.update(Signal::Normal, Some(3e6), at(50), at(1200));
        assert!(!c.additive);
        assert!((c.rate_bps - expect * 1.08).abs() < 1e-6);
    }

    #[test]
    fn increase_is_capped_at_one_and_a_half_times_incoming() {
        let mut c = AimdRateControl::new(1e6, 1e5, 1e8);
        c.update(Signal::Normal, Some(0.68e6), at(50), at(0));
        c.update(Signal::Normal, Some(0.68e6), at(50), at(1000));
        assert_eq!(c.rate_bps, 1.02e6, "1.08e6 capped at 1.5 x 0.68e6");
        // Above the cap already: held, not cut.
        c.update(Signal::Normal, Some(0.5e6), at(50), at(2000));
        assert_eq!(c.rate_bps, 1.02e6);
    }

    #[test]
    fn rate_stays_within_min_and_max() {
        let mut c = AimdRateControl::new(1e6, 5e5, 1.05e6);
        c.update(Signal::Normal, None, at(50), at(0));
        c.update(Signal::Normal, None, at(50), at(1000));
        assert_eq!(c.rate_bps, 1.05e6);
        c.update(Signal::Overuse, Some(1e5), at(50), at(1100));
        assert_eq!(c.rate_bps, 5e5);
    }
}
