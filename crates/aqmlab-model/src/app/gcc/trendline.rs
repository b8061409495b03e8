//! The trendline estimator of the delay variation: modern WebRTC's replacement of
//! draft-ietf-rmcat-gcc-02's Kalman filter (section 5.3), which estimates the same quantity
//! m(i), the trend of the queuing delay.
//!
//! Each group delta's variation `d(i)` (section 5.1) is accumulated into the queuing delay
//! built since the start, smoothed exponentially (coefficient 0.9), and the slope of a
//! least-squares line through the last 20 (arrival time, smoothed delay) points is the trend:
//! milliseconds of queue gained per millisecond. The slope is scaled to the detector's units by
//! `min(n, 60) * gain` (n the number of deltas seen, gain 4), so a young estimate reacts less.
//! Window 20, smoothing 0.9, gain 4 and the cap 60 are WebRTC's defaults (its
//! `trendline_estimator.cc`; the draft has no trendline).
//!
//! Why the trendline rather than the draft's Kalman filter: it is what the deployed GCC runs
//! (WebRTC removed the Kalman path), and a regression over 20 groups is less sensitive to one
//! group's jitter than the Kalman filter's per-group gain, which needs the noise variance
//! estimate of section 5.3 to be right.

use super::inter_arrival::GroupDelta;
use std::collections::VecDeque;

pub const WINDOW: usize = 20;
pub const SMOOTHING: f64 = 0.9;
pub const GAIN: f64 = 4.0;
/// The cap on the number of deltas in the scaling.
pub const MAX_DELTAS: u32 = 60;

#[derive(Clone, Debug, Default)]
pub struct Trendline {
    first_arrival_ms: Option<f64>,
    accumulated_ms: f64,
    smoothed_ms: f64,
    history: VecDeque<(f64, f64)>,
    deltas: u32,
    /// The last slope (0 until the window is full).
    slope: f64,
}

impl Trendline {
    /// Adds one group delta; returns the modified trend m(i) in the detector's units (ms).
    pub fn update(&mut self, d: &GroupDelta) -> f64 {
        let first = *self.first_arrival_ms.get_or_insert(d.arrival_ms);
        self.deltas = (self.deltas + 1).min(MAX_DELTAS);
        self.accumulated_ms += d.variation_ms();
        self.smoothed_ms = SMOOTHING * self.smoothed_ms + (1.0 - SMOOTHING) * self.accumulated_ms;
        self.history.push_back((d.arrival_ms - first, self.smoothed_ms));
        if self.history.len() > WINDOW {
            self.history.pop_front();
        }
        if self.history.len() == WINDOW {
            if let Some(s) = slope(&self.history) {
                self.slope = s;
            }
        }
        self.modified()
    }

    /// The trend scaled to the detector's units: `min(n, 60) * slope * gain`.
    pub fn modified(&self) -> f64 {
        self.deltas as f64 * self.slope * GAIN
    }

    pub fn slope(&self) -> f64 {
        self.slope
    }
}

/// Least-squares slope of y on x; None when every x is equal.
pub fn slope(points: &VecDeque<(f64, f64)>) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let num: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let den: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    (den > 0.0).then(|| num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(i: usize, variation: f64) -> GroupDelta {
        // Groups every 10 ms at the sender; arrivals spread by the variation.
        GroupDelta { send_delta_ms: 10.0, arrival_delta_ms: 10.0 + variation, arrival_ms: 100.0 + 10.0 * i as f64 }
    }

    #[test]
    fn slope_of_a_line_is_its_gradient() {
        let pts: VecDeque<(f64, f64)> = (0..5).map(|i| (i as f64, 3.0 + 0.5 * i as f64)).collect();
        assert_eq!(slope(&pts), Some(0.5));
        let flat: VecDeque<(f64, f64)> = (0..3).map(|_| (1.0, 2.0)).collect();
        assert_eq!(slope(&flat), None);
    }

    #[test]
    fn no_trend_until_the_window_is_full_and_none_on_a_constant_delay() {
        let mut tl = Trendline::default();
        for i in 0..WINDOW - 1 {
            assert_eq!(tl.update(&delta(i, 1.0)), 0.0, "window not full at {i}");
        }
        let mut flat = Trendline::default();
        for i in 0..40 {
            assert_eq!(flat.update(&delta(i, 0.0)), 0.0);
        }
    }

    #[test]
    fn a_steadily_growing_queue_gives_its_growth_rate_once_smoothing_settles() {
        // Each group arrives 1 ms later relative to its send spacing of 10 ms: the queue grows
        // 0.1 ms per ms. After smoothing settles (0.9^k small) the smoothed series is the
        // accumulated one lagging by a constant 9 groups, so its slope is 0.1.
        let mut tl = Trendline::default();
        let mut m = 0.0;
        for i in 0..200 {
            m = tl.update(&delta(i, 1.0));
        }
        assert!((tl.slope() - 0.1).abs() < 1e-6, "{}", tl.slope());
        assert!((m - 60.0 * 0.1 * 4.0).abs() < 1e-3, "{m}");
    }

    #[test]
    fn the_first_full_window_matches_a_hand_computation() {
        // 20 deltas of +1 ms: accumulated a_k = k (k = 1..20); smoothed s_k = 0.9 s_{k-1} + 0.1 k,
        // x_k = 10 (k - 1). Computed here independently of the estimator's code path.
        let mut s = 0.0;
        let mut pts = Vec::new();
        for k in 1..=20 {
            s = 0.9 * s + 0.1 * k as f64;
            pts.push((10.0 * (k - 1) as f64, s));
        }
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / 20.0;
        let my = pts.iter().map(|p| p.1).sum::<f64>() / 20.0;
        let expect = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
        let mut tl = Trendline::default();
        let mut m = 0.0;
        for i in 0..20 {
            m = tl.update(&delta(i, 1.0));
        }
        assert!((tl.slope() - expect).abs() < 1e-12);
        assert!((m - 20.0 * expect * 4.0).abs() < 1e-9);
        // The hand value: the lagging smoothed series rises slower than the queue's 0.1.
        assert!(expect > 0.05 && expect < 0.1, "{expect}");
    }
}
