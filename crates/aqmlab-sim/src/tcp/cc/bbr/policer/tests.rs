//! The long-term sampler alone: rounds of 100 ms, each rule of `bbr_lt_bw_sampling` and
//! `bbr_lt_bw_interval_done` seen once. Counts in bytes.

use super::*;

/// Plays one ACK per round, delivering `delivered` bytes and losing `lost` each.
struct Rounds {
    s: LtBwSampler,
    t: Time,
    delivered: u64,
    lost: u64,
}

impl Rounds {
    fn new() -> Rounds {
        Rounds { s: LtBwSampler::default(), t: Time::ZERO, delivered: 0, lost: 0 }
    }

    fn round(&mut self, delivered: u64, lost: u64) -> Verdict {
        self.round_with(delivered, lost, false, true)
    }

    fn round_with(&mut self, delivered: u64, lost: u64, is_app_limited: bool, in_probe_bw: bool) -> Verdict {
        self.t += Time::from_millis(100);
        self.delivered += delivered;
        self.lost += lost;
        let a = LtInput {
            now: self.t,
            round_start: true,
            in_probe_bw,
            lossy: lost > 0,
            is_app_limited,
            delivered: self.delivered,
            lost: self.lost,
        };
        self.s.on_ack(&a)
    }

    /// The first loss starts sampling (its round counts as the interval's first); three more
    /// lossy rounds of `per_round` bytes end the first interval at `per_round` / 100 ms.
    fn start(&mut self, per_round: u64) {
        for _ in 0..4 {
            assert_eq!(self.round(per_round, per_round * 3 / 10), Verdict::Nothing);
        }
        assert_eq!(self.s.bw(), per_round as f64 * 10.0);
    }

    /// Four lossy rounds of `per_round` bytes: the next interval, which ends with the 4th.
    fn interval(&mut self, per_round: u64) -> Verdict {
        for _ in 0..3 {
            assert_eq!(self.round(per_round, per_round * 3 / 10), Verdict::Nothing);
        }
        self.round(per_round, per_round * 3 / 10)
    }
}

#[test]
fn sampling_waits_for_the_first_loss() {
    let mut r = Rounds::new();
    for _ in 0..20 {
        assert_eq!(r.round(10_000, 0), Verdict::Nothing);
    }
    assert_eq!(r.s.bw(), 0.0);
    r.start(10_000);
}

#[test]
fn two_lossy_intervals_at_a_consistent_rate_are_a_policer_and_their_mean_is_used() {
    let mut r = Rounds::new();
    r.start(10_000);
    // 11.2 kB a round: 12 % above the first interval, within 1/8.
    assert_eq!(r.interval(11_200), Verdict::Policed);
    assert!(r.s.in_use());
    assert_eq!(r.s.bw(), (100_000.0 + 112_000.0) / 2.0);
}

#[test]
fn intervals_more_than_an_eighth_apart_are_not_a_policer() {
    let mut r = Rounds::new();
    r.start(10_000);
    // 13 % above: a new first interval instead.
    assert_eq!(r.interval(11_300), Verdict::Nothing);
    assert!(!r.s.in_use());
    assert_eq!(r.s.bw(), 113_000.0);
    // Far apart in ratio but within 4 kbit/s (500 B/s after the 1 % margin) also counts: at
    // 1 kB/s an interval of 1.4 kB/s is 40 % but 400 B/s apart.
    let mut slow = Rounds::new();
    slow.start(100);
    assert_eq!(slow.interval(140), Verdict::Policed);
}

#[test]
fn an_interval_ends_only_when_it_lost_50_of_256_of_what_it_delivered() {
    let mut r = Rounds::new();
    r.round(10_000, 3_000); // the first loss: sampling starts
                            // 19 % lost (under 50/256 = 19.53 %): the interval goes on.
    for _ in 0..4 {
        assert_eq!(r.round(10_000, 1_900), Verdict::Nothing);
    }
    assert_eq!(r.s.bw(), 0.0);
    // 10.1 kB lost of 50 kB (20.2 %): the interval ends, 50 kB in 500 ms.
    r.round(10_000, 2_500);
    assert_eq!(r.s.bw(), 100_000.0);
}

#[test]
fn an_app_limited_sample_or_an_interval_over_16_rounds_restarts_sampling() {
    let mut r = Rounds::new();
    r.start(10_000);
    r.round_with(10_000, 0, true, true);
    assert_eq!(r.s.bw(), 0.0, "app-limited: everything forgotten");
    let mut long = Rounds::new();
    long.start(10_000);
    // 17 rounds of an interval without a loss: restart, the last interval's rate forgotten.
    for _ in 0..17 {
        long.round(10_000, 0);
    }
    assert_eq!(long.s.bw(), 0.0);
}

#[test]
fn the_policed_rate_is_used_for_48_rounds_of_probe_bw() {
    let mut r = Rounds::new();
    r.start(10_000);
    assert_eq!(r.interval(10_000), Verdict::Policed);
    // Rounds outside PROBE_BW do not count.
    for _ in 0..10 {
        assert_eq!(r.round_with(10_000, 3_000, false, false), Verdict::Nothing);
    }
    for round in 1..USE_ROUNDS {
        assert_eq!(r.round(10_000, 3_000), Verdict::Nothing, "round {round}");
        assert!(r.s.in_use());
    }
    assert_eq!(r.round(10_000, 3_000), Verdict::Expired);
    assert!(!r.s.in_use());
    assert_eq!(r.s.bw(), 0.0);
}

/// The events' codes in order, for the `bbr_intervals` table.
fn codes(s: &LtBwSampler) -> Vec<u8> {
    s.events().iter().map(|e| e.event).collect()
}

#[test]
fn every_event_of_the_sampling_is_logged_with_its_rates() {
    // A first loss at 100 ms starts the sampling; the first interval ends at 400 ms (100 kB/s),
    // the second, 1/8 + apart (113 kB/s), at 700 ms; the third, within 1/8 of it, is a policer
    // at their mean; 48 rounds of PROBE_BW later the policed rate expires.
    let mut r = Rounds::new();
    r.start(10_000);
    assert_eq!(r.interval(11_300), Verdict::Nothing);
    assert_eq!(r.interval(11_000), Verdict::Policed);
    for _ in 0..USE_ROUNDS {
        r.round(10_000, 3_000);
    }
    use event::*;
    assert_eq!(codes(&r.s), [START, INTERVAL, INTERVAL, POLICED, EXPIRE]);
    let e = r.s.events();
    assert_eq!((e[0].t_ns, e[0].interval_rate, e[0].lt_rate), (100_000_000, 0.0, 0.0));
    assert_eq!((e[1].t_ns, e[1].interval_rate, e[1].lt_rate), (400_000_000, 100_000.0, 100_000.0));
    assert_eq!((e[2].interval_rate, e[2].lt_rate), (113_000.0, 113_000.0));
    assert_eq!((e[3].interval_rate, e[3].lt_rate), (110_000.0, (113_000.0 + 110_000.0) / 2.0));
    assert_eq!((e[4].interval_rate, e[4].lt_rate), (0.0, 0.0));
    // A restart (here an app-limited sample) is logged, and the next loss starts again.
    let mut app = Rounds::new();
    app.start(10_000);
    app.round_with(10_000, 0, true, true);
    app.round(10_000, 3_000);
    assert_eq!(codes(&app.s), [START, INTERVAL, RESTART, START]);
}
