//! BBR's state machine without a network: each test plays the rate samples a path would give
//! (one ACK per round trip unless said otherwise), so each rule of tcp_bbr.c is seen alone.

use super::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// Plays ACKs to one BBR sender: one ACK per call, each starting a new round (its
/// prior_delivered is the delivered count of the previous ACK).
struct Path {
    b: Bbr,
    now: Time,
    delivered: u64,
}

impl Path {
    fn new(seed: u64) -> Path {
        Path::with_parts(seed, BbrParts::default())
    }

    fn with_parts(seed: u64, parts: BbrParts) -> Path {
        Path { b: Bbr::with_parts(MSS, 10, SimRng::stream(seed, "test/bbr"), parts), now: Time::ZERO, delivered: 0 }
    }

    /// Without the ACK-aggregation allowance, for rules its cwnd target would hide.
    fn without_aggregation(seed: u64) -> Path {
        Path::with_parts(seed, BbrParts { ack_aggregation: false, ..BbrParts::default() })
    }

    /// One ACK `dt` after the last, delivering `acked` bytes, with a rate sample of `rate`
    /// bytes/s, an RTT sample `rtt`, and `in_flight` bytes outstanding before and after.
    fn ack(&mut self, dt: Time, rate: f64, rtt: Time, acked: u64, in_flight: u64) {
        self.ack_lossy(dt, rate, rtt, acked, 0, in_flight);
    }

    /// As [`Self::ack`], with `losses` bytes newly marked lost.
    fn ack_lossy(&mut self, dt: Time, rate: f64, rtt: Time, acked: u64, losses: u64, in_flight: u64) {
        self.now += dt;
        let prior_delivered = self.delivered;
        self.delivered += acked;
        let a = AckInput {
            now: self.now,
            rate: Some(rate),
            prior_delivered,
            is_app_limited: false,
            rtt: Some(rtt),
            acked_sacked: acked,
            losses,
            prior_in_flight: in_flight,
            delivered: self.delivered,
            in_flight,
            state: CaState::Open,
            srtt: Some(rtt),
        };
        self.b.on_ack(&a);
    }

    /// Through STARTUP (the rate doubles for 3 rounds, then stays) and DRAIN (a small
    /// inflight) to PROBE_BW, at 1 MB/s and 100 ms (BDP 100 segments).
    fn reach_probe_bw(&mut self) {
        for rate in [125e3, 250e3, 500e3, 1e6, 1e6, 1e6, 1e6] {
            self.ack(ms(100), rate, ms(100), 10 * MSS, 200 * MSS);
        }
        assert_eq!(self.b.mode(), Mode::Drain);
        self.ack(ms(100), 1e6, ms(100), 10 * MSS, 50 * MSS);
        assert_eq!(self.b.mode(), Mode::ProbeBw);
    }
}

#[test]
fn startup_paces_and_grows_cwnd_at_2_over_ln2() {
    let p = Path::new(1);
    assert_eq!(p.b.mode(), Mode::Startup);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (2.885, 2.885));
    assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 1e-3);
    // Before any RTT sample: 10 segments per 1 ms at 2.885, less 1 %.
    assert_eq!(p.b.pacing_rate(), (10.0 * 1000.0 * 1000.0 * 2.885 * 0.99) as u64);
    let mut p = p;
    // The first RTT sample resets the rate from cwnd / srtt (bbr_init_pacing_rate_from_rtt,
    // before this ACK's cwnd growth): 10 segments per 100 ms at 2.885, less 1 %.
    p.ack(ms(100), 50e3, ms(100), 2 * MSS, 10 * MSS);
    assert_eq!(p.b.pacing_rate(), (10.0 * 1000.0 / 0.1 * 2.885 * 0.99) as u64);
    // In STARTUP cwnd grows by what is ACKed (12 segments after 2 were ACKed).
    assert_eq!(p.b.cwnd(), 12);
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_growth_then_drains() {
    let mut p = Path::new(1);
    // Growth each round (x2, then +25 % exactly still counts as growth).
    for rate in [200e3, 400e3, 800e3, 1e6] {
        p.ack(ms(100), rate, ms(100), 10 * MSS, 200 * MSS);
        assert_eq!(p.b.mode(), Mode::Startup);
    }
    // Two rounds at the plateau: still STARTUP.
    for _ in 0..2 {
        p.ack(ms(100), 1e6, ms(100), 10 * MSS, 200 * MSS);
        assert_eq!(p.b.mode(), Mode::Startup);
        assert!(!p.b.full_bw_reached());
    }
    // The third: the pipe is full; DRAIN with pacing gain 1/2.885 and cwnd gain 2.885.
    p.ack(ms(100), 1e6, ms(100), 10 * MSS, 200 * MSS);
    assert!(p.b.full_bw_reached());
    assert_eq!(p.b.mode(), Mode::Drain);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (DRAIN_GAIN, HIGH_GAIN));
    // ssthresh records one BDP + the quantization budget: 100 + 3 * 2 = 106 segments.
    assert_eq!(p.b.ssthresh_bytes(), Some(106 * MSS));
    assert_eq!(p.b.pacing_rate(), (1e6 * DRAIN_GAIN * 0.99) as u64);
    // Still above one BDP in flight: DRAIN goes on.
    p.ack(ms(100), 1e6, ms(100), 10 * MSS, 150 * MSS);
    assert_eq!(p.b.mode(), Mode::Drain);
    // Down to one BDP: PROBE_BW.
    p.ack(ms(100), 1e6, ms(100), 10 * MSS, 106 * MSS);
    assert_eq!(p.b.mode(), Mode::ProbeBw);
    assert_eq!(p.b.cwnd_gain(), CWND_GAIN);
}

#[test]
fn startup_growth_of_25_percent_a_round_never_ends_it() {
    let mut p = Path::new(1);
    let mut rate = 100e3;
    for _ in 0..20 {
        p.ack(ms(100), rate, ms(100), 10 * MSS, 200 * MSS);
        rate *= 1.25;
    }
    assert_eq!(p.b.mode(), Mode::Startup);
}

#[test]
fn probe_bw_cycles_through_the_gains_in_order() {
    let mut p = Path::new(3);
    p.reach_probe_bw();
    let mut idx = p.b.cycle_idx();
    // ACKs 101 ms apart (each phase lasts one min RTT, 100 ms) with a large inflight, so that
    // the 1.25 phase also ends at full length: each ACK moves one phase on.
    for _ in 0..16 {
        p.ack(ms(101), 1e6, ms(100), 10 * MSS, 300 * MSS);
        idx = (idx + 1) % 8;
        assert_eq!(p.b.cycle_idx(), idx);
        assert_eq!(p.b.pacing_gain(), PACING_GAIN_CYCLE[idx]);
        assert_eq!(p.b.pacing_rate(), (1e6 * PACING_GAIN_CYCLE[idx] * 0.99) as u64);
    }
}

#[test]
fn the_probing_phase_lasts_until_inflight_reaches_125_percent_and_draining_ends_early() {
    let mut p = Path::new(3);
    p.reach_probe_bw();
    // Move to the 1.25 phase.
    while p.b.cycle_idx() != 0 {
        p.ack(ms(101), 1e6, ms(100), 10 * MSS, 300 * MSS);
    }
    // Full length but inflight below bbr_inflight(1.25): 125 + 3 TSO goals of 2 = 131, even
    // 132, + 2 in this phase = 134 segments: the phase goes on.
    p.ack(ms(101), 1e6, ms(100), 10 * MSS, 110 * MSS);
    assert_eq!(p.b.cycle_idx(), 0);
    p.ack(ms(10), 1e6, ms(100), 10 * MSS, 133 * MSS);
    assert_eq!(p.b.cycle_idx(), 0);
    p.ack(ms(10), 1e6, ms(100), 10 * MSS, 134 * MSS);
    assert_eq!(p.b.cycle_idx(), 1, "1.25 BDP in flight ends the probing phase");
    // The 0.75 phase ends before its full length once inflight is down to one BDP (106).
    p.ack(ms(10), 1e6, ms(100), 10 * MSS, 120 * MSS);
    assert_eq!(p.b.cycle_idx(), 1);
    p.ack(ms(10), 1e6, ms(100), 10 * MSS, 100 * MSS);
    assert_eq!(p.b.cycle_idx(), 2);
}

#[test]
fn probe_bw_starts_in_a_random_phase_never_the_draining_one() {
    let mut starts = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let mut p = Path::new(seed);
        p.reach_probe_bw();
        starts.insert(p.b.cycle_idx());
    }
    // Linux: cycle_idx = 7 - rand(0..7), then advanced: 0 or 2..=7.
    assert_eq!(starts.into_iter().collect::<Vec<_>>(), vec![0, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn probe_rtt_after_10_s_without_a_new_min_rtt_holds_4_segments_for_200_ms() {
    let mut p = Path::new(5);
    p.reach_probe_bw(); // the min RTT, 100 ms, was last set by the first ACK at t = 0.1 s
    let stamp = ms(100);
    let cwnd_before = p.b.cwnd();
    assert!(cwnd_before > CWND_MIN_TARGET);
    // Samples of 120 ms only (a standing queue): no new minimum.
    while p.now + ms(100) <= stamp + MIN_RTT_WINDOW {
        p.ack(ms(100), 1e6, ms(120), 10 * MSS, 150 * MSS);
        assert_eq!(p.b.mode(), Mode::ProbeBw, "at {:?}", p.now);
    }
    // Past 10 s: PROBE_RTT, cwnd 4 segments; the expired filter takes the 120 ms sample.
    p.ack(ms(100), 1e6, ms(120), 10 * MSS, 150 * MSS);
    assert_eq!(p.b.mode(), Mode::ProbeRtt);
    assert_eq!(p.b.cwnd(), CWND_MIN_TARGET);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (1.0, 1.0));
    assert_eq!(p.b.min_rtt(), Some(ms(120)));
    // Inflight drains to 4 segments: the 200 ms start now.
    p.ack(ms(50), 1e6, ms(100), 2 * MSS, 4 * MSS);
    let entered = p.now;
    assert_eq!(p.b.mode(), Mode::ProbeRtt);
    // A round later but before 200 ms: still PROBE_RTT, cwnd 4.
    p.ack(ms(100), 1e6, ms(100), 4 * MSS, 4 * MSS);
    assert_eq!((p.b.mode(), p.b.cwnd()), (Mode::ProbeRtt, CWND_MIN_TARGET));
    // After 200 ms and a round: back to PROBE_BW with the cwnd from before restored.
    p.ack(ms(101), 1e6, ms(100), 4 * MSS, 4 * MSS);
    assert!(p.now > entered + PROBE_RTT_DURATION);
    assert_eq!(p.b.mode(), Mode::ProbeBw);
    assert!(p.b.cwnd() >= cwnd_before, "cwnd {} restored to at least {cwnd_before}", p.b.cwnd());
    // The 100 ms samples seen in PROBE_RTT set the minimum again.
    assert_eq!(p.b.min_rtt(), Some(ms(100)));
}

#[test]
fn cwnd_is_twice_the_bdp_plus_the_quantization_budget_in_probe_bw() {
    let mut p = Path::without_aggregation(3);
    p.reach_probe_bw();
    for _ in 0..50 {
        p.ack(ms(101), 1e6, ms(100), 10 * MSS, 150 * MSS);
    }
    assert_eq!(p.b.mode(), Mode::ProbeBw);
    // BDP 100 segments, gain 2: 200, + 3 TSO goals of 2 segments (pacing rate >= 1.2 Mbit/s and
    // < 1 segment per ms... 1 MB/s >> 10 is 976 B < 1 MSS) = 206, even; + 2 in the 1.25 phase.
    let expect = if p.b.cycle_idx() == 0 { 208 } else { 206 };
    assert_eq!(p.b.cwnd(), expect);
}

#[test]
fn the_ack_aggregation_allowance_adds_the_recent_burst_to_the_cwnd_target() {
    // The same path as above with the allowance on: each ACK brings 10 segments at once after
    // 101 ms, more than the 1 MB/s estimate explains since the epoch began (each ACK starts
    // one: 10 segments against none expected), so 10 more segments of cwnd.
    let mut p = Path::new(3);
    p.reach_probe_bw();
    for _ in 0..50 {
        p.ack(ms(101), 1e6, ms(100), 10 * MSS, 150 * MSS);
    }
    assert_eq!(p.b.ack_aggregation().extra_acked(), 10);
    let expect = if p.b.cycle_idx() == 0 { 218 } else { 216 };
    assert_eq!(p.b.cwnd(), expect);
}

#[test]
fn the_ack_aggregation_allowance_waits_for_startup_to_fill_the_pipe() {
    // In STARTUP cwnd grows by what is ACKed up to its target; a target raised by the allowance
    // would let it grow past 2.885 BDP + budget. Rates that keep growing: the pipe is not full.
    let mut with = Path::new(4);
    let mut without = Path::without_aggregation(4);
    for p in [&mut with, &mut without] {
        // 25 % more each round, 30 segments an ACK: cwnd reaches its target (2.885 BDP + the
        // budget) and stops there.
        let mut rate = 1e5;
        for _ in 0..6 {
            p.ack(ms(100), rate, ms(100), 30 * MSS, 30 * MSS);
            rate *= 1.25;
        }
        assert_eq!(p.b.mode(), Mode::Startup);
    }
    assert!(with.b.ack_aggregation().extra_acked() > 0);
    let target = without.b.inflight(without.b.max_bw(), HIGH_GAIN);
    assert!(without.b.cwnd() >= target && without.b.cwnd() < target + 30, "{} {target}", without.b.cwnd());
    assert_eq!(with.b.cwnd(), without.b.cwnd());
}

#[test]
fn recovery_conserves_packets_then_restores_the_cwnd_before() {
    let mut p = Path::without_aggregation(3);
    p.reach_probe_bw();
    for _ in 0..50 {
        p.ack(ms(101), 1e6, ms(100), 10 * MSS, 150 * MSS);
    }
    let before = p.b.cwnd();
    p.b.on_congestion_event();
    // The ACK that starts recovery: cwnd = in flight + ACKed (packet conservation), after
    // taking off the 3 segments newly lost.
    p.now += ms(1);
    let mut a = AckInput {
        now: p.now,
        rate: None,
        prior_delivered: p.delivered,
        is_app_limited: false,
        rtt: None,
        acked_sacked: MSS,
        losses: 3 * MSS,
        prior_in_flight: 150 * MSS,
        delivered: p.delivered + MSS,
        in_flight: 140 * MSS,
        state: CaState::Recovery,
        srtt: Some(ms(100)),
    };
    p.b.on_ack(&a);
    assert_eq!(p.b.cwnd(), 141);
    // In the first round of recovery cwnd follows what is delivered: no more than in flight +
    // ACKed.
    a.now += ms(1);
    a.losses = 0;
    a.in_flight = 120 * MSS;
    a.acked_sacked = 2 * MSS;
    p.b.on_ack(&a);
    assert_eq!(p.b.cwnd(), 141, "max(cwnd, in flight + acked) = max(141, 122)");
    a.now += ms(1);
    a.state = CaState::Open;
    p.b.on_ack(&a);
    // Recovery ends: cwnd = max(141, the cwnd before) = before, then grows by the 2 segments
    // ACKed up to the target (206, or 208 in the 1.25 phase).
    let target = if p.b.cycle_idx() == 0 { 208 } else { 206 };
    assert!(before > 141);
    assert_eq!(p.b.cwnd(), (before + 2).min(target));
}

#[test]
fn windowed_max_forgets_a_peak_after_its_window() {
    let mut f = WindowedMax::default();
    f.reset(0, 0.0);
    assert_eq!(f.update(10, 1, 5.0), 5.0);
    for t in 2..=11 {
        assert_eq!(f.update(10, t, 3.0), 5.0, "round {t}");
    }
    // Round 12 is more than 10 rounds after the peak of round 1.
    assert_eq!(f.update(10, 12, 3.0), 3.0);
}

#[test]
fn a_policer_found_paces_at_its_rate_with_gain_1_for_48_rounds_then_probes_again() {
    let mut p = Path::new(5);
    p.reach_probe_bw();
    // A policer passes 500 kB/s and drops 30 % more; the max filter keeps 1 MB/s (rate samples
    // of bursts). The first loss starts sampling, the 4th round ends the first interval, the
    // 8th the second at the same rate: a policer.
    for round in 1..=8 {
        p.ack_lossy(ms(100), 1e6, ms(100), 50 * MSS, 15 * MSS, 150 * MSS);
        assert_eq!(p.b.policed(), round == 8, "round {round}");
    }
    assert_eq!(p.b.max_bw(), 1e6);
    assert_eq!(p.b.bw(), 500e3);
    assert_eq!(p.b.pacing_gain(), 1.0);
    assert_eq!(p.b.pacing_rate(), (500e3 * PACING_MARGIN) as u64);
    // 48 rounds of PROBE_BW at gain 1 (no 1.25 probe, no 0.75 drain), then the gain cycle again.
    for round in 1..48 {
        p.ack(ms(100), 1e6, ms(100), 50 * MSS, 150 * MSS);
        assert!(p.b.policed() && p.b.pacing_gain() == 1.0, "round {round}");
    }
    p.ack(ms(100), 1e6, ms(100), 50 * MSS, 150 * MSS);
    assert!(!p.b.policed());
    assert_eq!(p.b.bw(), 1e6);
    // Switched off, the same losses change nothing.
    let mut off = Path::with_parts(5, BbrParts { policer_detection: false, ..BbrParts::default() });
    off.reach_probe_bw();
    for _ in 0..8 {
        off.ack_lossy(ms(100), 1e6, ms(100), 50 * MSS, 15 * MSS, 150 * MSS);
    }
    assert!(!off.b.policed());
    assert_eq!(off.b.bw(), 1e6);
}

#[test]
fn a_timeout_is_a_lossy_round_for_the_policer_detection() {
    // bbr_set_state(TCP_CA_Loss): what the timeout marked lost counts; the round starts. A
    // timeout after 3 clean rounds ends the first interval when it lost enough.
    let mut p = Path::new(6);
    p.reach_probe_bw();
    p.ack_lossy(ms(100), 1e6, ms(100), 50 * MSS, 15 * MSS, 150 * MSS); // sampling starts
    for _ in 0..2 {
        p.ack(ms(100), 1e6, ms(100), 50 * MSS, 150 * MSS);
    }
    assert_eq!(p.b.lt_bw(), 0.0);
    p.b.on_timeout();
    p.b.on_timeout_marked_lost(150 * MSS);
    // 100 segments delivered in the interval over 200 ms, 150 lost.
    assert_eq!(p.b.lt_bw(), 100.0 * MSS as f64 / 0.2);
}
