//! BBRv3's rules without a network, each from draft-ietf-ccwg-bbr-06: the tests play the
//! rate samples a path would give (one ACK per round trip unless said otherwise).

use super::*;

const MSS: u64 = 1000;

fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// Plays ACKs to one BBRv3 sender; each ACK starts a new round (its prior_delivered is the
/// delivered count of the previous ACK).
struct Path {
    b: Bbr3,
    now: Time,
    delivered: u64,
}

/// One ACK's inputs beyond time.
#[derive(Clone, Copy)]
struct Ack {
    rate: f64,
    rtt: Time,
    acked: u64,
    in_flight: u64,
    losses: u64,
    lost: u64,
    tx_in_flight: u64,
    state: CaState,
}

fn ack(rate: f64, in_flight: u64) -> Ack {
    Ack { rate, rtt: ms(100), acked: 10 * MSS, in_flight, losses: 0, lost: 0, tx_in_flight: in_flight, state: CaState::Open }
}

impl Path {
    fn new(seed: u64) -> Path {
        Path { b: Bbr3::new(MSS, 10, SimRng::stream(seed, "test/bbr3")), now: Time::ZERO, delivered: 0 }
    }

    fn play(&mut self, dt: Time, k: Ack) {
        self.now += dt;
        let prior_delivered = self.delivered;
        self.delivered += k.acked;
        let a = AckInput {
            now: self.now,
            rate: Some(k.rate),
            prior_delivered,
            is_app_limited: false,
            rtt: Some(k.rtt),
            acked_sacked: k.acked,
            losses: k.losses,
            prior_in_flight: k.in_flight,
            delivered: self.delivered,
            in_flight: k.in_flight,
            state: k.state,
            srtt: Some(k.rtt),
        };
        let x = V3Sample { delivered: k.acked, tx_in_flight: k.tx_in_flight, lost: k.lost, has_sack: true };
        self.b.on_ack(&a, &x);
    }

    fn ack(&mut self, rate: f64, in_flight: u64) {
        self.play(ms(100), ack(rate, in_flight));
    }

    /// Startup at doubling rates up to 1 MB/s (BDP 100 kB at 100 ms), then 3 rounds flat.
    fn fill_pipe(&mut self) {
        for rate in [125e3, 250e3, 500e3, 1e6, 1e6, 1e6, 1e6] {
            self.ack(rate, 200 * MSS);
        }
    }

    /// Through Startup and Drain into ProbeBW_DOWN: Drain ends by its 3-round bound with
    /// inflight still above the BDP (had inflight dropped to the BDP, the same ACK would go on
    /// from DOWN to CRUISE, the two exits being the same test without inflight_longterm).
    fn reach_probe_bw(&mut self) {
        self.fill_pipe();
        assert_eq!(self.b.state(), State::Drain);
        for _ in 0..4 {
            self.ack(1e6, 200 * MSS);
        }
        assert_eq!(self.b.state(), State::ProbeBwDown);
    }

    /// On from ProbeBW_DOWN through CRUISE and REFILL into UP, at 90 segments in flight.
    fn reach_probe_bw_up(&mut self) {
        self.reach_probe_bw();
        self.ack(1e6, 90 * MSS);
        while self.b.state() != State::ProbeBwRefill {
            self.play(ms(10), ack(1e6, 90 * MSS));
        }
        self.ack(1e6, 90 * MSS);
    }
}

/// Section 5.3.1: Startup paces at 2.77 x bw (less the 1 % margin) with a cwnd gain of 2.
#[test]
fn startup_gains() {
    let mut p = Path::new(1);
    p.ack(500e3, 20 * MSS);
    assert_eq!(p.b.state(), State::Startup);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (2.77, 2.0));
    // The rate only rises in Startup; at 500 kB/s it is 2.77 * 500e3 * 0.99 (above the
    // initial 2.77 * 10 kB / 100 ms).
    assert_eq!(p.b.pacing_rate(), (2.77 * 500e3 * 0.99) as u64);
}

/// Section 5.3.1.2: Startup ends after 3 rounds without 25 % growth, not before; growth of
/// 25 % restarts the count.
#[test]
fn startup_exits_after_three_rounds_without_growth() {
    let mut p = Path::new(1);
    for rate in [100e3, 200e3, 400e3] {
        p.ack(rate, 200 * MSS);
    }
    // +24 % twice: no growth as far as the rule goes.
    p.ack(496e3, 200 * MSS);
    p.ack(400e3 * 1.24, 200 * MSS);
    assert_eq!(p.b.state(), State::Startup);
    // +25 % of the baseline 400e3: growth, the count restarts.
    p.ack(500e3, 200 * MSS);
    p.ack(500e3, 200 * MSS);
    p.ack(500e3, 200 * MSS);
    assert_eq!(p.b.state(), State::Startup, "two flat rounds since the last growth");
    p.ack(500e3, 200 * MSS);
    assert_eq!(p.b.state(), State::Drain, "the third flat round fills the pipe");
    assert!(p.b.full_bw_reached());
}

/// Section 5.3.2: Drain paces at 0.5 and holds until inflight <= Inflight(1.0) (one BDP and the
/// quantization budget).
#[test]
fn drain_until_inflight_is_one_bdp() {
    let mut p = Path::new(1);
    p.fill_pipe();
    assert_eq!(p.b.state(), State::Drain);
    assert_eq!(p.b.pacing_gain(), 0.5);
    let bdp = p.b.inflight(p.b.bw(), 1.0);
    assert!((100 * MSS..=110 * MSS).contains(&bdp), "{bdp}");
    p.ack(1e6, bdp + MSS);
    assert_eq!(p.b.state(), State::Drain);
    // Drain ends, and on the same ACK DOWN's exit (inflight <= BDP, no inflight_longterm) holds.
    p.ack(1e6, bdp);
    assert_eq!(p.b.state(), State::ProbeBwCruise);
}

/// Section 5.3.2: Drain ends after 3 rounds even if inflight stays above one BDP.
#[test]
fn drain_ends_after_three_rounds() {
    let mut p = Path::new(1);
    p.fill_pipe();
    for _ in 0..3 {
        p.ack(1e6, 200 * MSS);
        assert_eq!(p.b.state(), State::Drain);
    }
    p.ack(1e6, 200 * MSS);
    assert_eq!(p.b.state(), State::ProbeBwDown);
}

/// Section 5.3.3: DOWN (0.90) -> CRUISE (1.0) once inflight is at most one BDP -> REFILL (1.0)
/// after the drawn 2-3 s wait (or the Reno round bound) -> UP (1.25, cwnd gain 2.25) after one
/// round -> DOWN once the bandwidth has not grown 25 % in 3 rounds.
#[test]
fn probe_bw_phase_sequence_and_gains() {
    let mut p = Path::new(1);
    p.reach_probe_bw();
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (0.90, 2.0));
    let wait = p.b.bw_probe_wait();
    assert!(wait >= Time::from_secs(2) && wait < Time::from_secs(3), "{wait:?}");
    // DOWN holds while inflight is above the BDP, then cruises.
    p.ack(1e6, 150 * MSS);
    assert_eq!(p.b.state(), State::ProbeBwDown);
    p.ack(1e6, 90 * MSS);
    assert_eq!(p.b.state(), State::ProbeBwCruise);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (1.0, 2.0));
    // CRUISE until the wall-clock wait or min(BDP in segments = 100, 63) rounds: at one ACK a
    // round every 10 ms, the 63 rounds (less the 0 or 1 random start) come first.
    let mut rounds = 0;
    while p.b.state() == State::ProbeBwCruise {
        p.play(ms(10), ack(1e6, 90 * MSS));
        rounds += 1;
        assert!(rounds <= 64, "still cruising after {rounds} rounds");
    }
    assert!(rounds >= 61, "{rounds}");
    assert_eq!(p.b.state(), State::ProbeBwRefill);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (1.0, 2.0));
    p.ack(1e6, 90 * MSS);
    assert_eq!(p.b.state(), State::ProbeBwUp);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (1.25, 2.25));
    // UP's baseline is the rate at its start; 25 % growth restarts the count ...
    p.ack(1e6, 110 * MSS);
    p.ack(1.25e6, 110 * MSS);
    // ... and 3 rounds without it end UP.
    for _ in 0..2 {
        p.ack(1.25e6, 110 * MSS);
        assert_eq!(p.b.state(), State::ProbeBwUp);
    }
    p.ack(1.25e6, 110 * MSS);
    assert_eq!(p.b.state(), State::ProbeBwDown);
    assert_eq!((p.b.pacing_gain(), p.b.cwnd_gain()), (0.90, 2.0));
}

/// Section 5.3.3.8.3: with long round trips the wall-clock wait (2-3 s, drawn per cycle from the
/// flow's stream) ends CRUISE first; different streams draw different waits, the same stream
/// the same.
#[test]
fn probe_wait_is_drawn_from_the_stream() {
    let waits: Vec<Time> = (0..4)
        .map(|seed| {
            let mut p = Path::new(seed);
            p.reach_probe_bw();
            p.b.bw_probe_wait()
        })
        .collect();
    assert!(waits.iter().all(|w| *w >= Time::from_secs(2) && *w < Time::from_secs(3)), "{waits:?}");
    assert!(waits.windows(2).any(|w| w[0] != w[1]), "{waits:?}");
    let mut again = Path::new(0);
    again.reach_probe_bw();
    assert_eq!(again.b.bw_probe_wait(), waits[0]);
    // 1 s rounds: the Reno bound (63 rounds) is far; REFILL starts after the wait.
    let start = again.now;
    again.ack(1e6, 90 * MSS);
    assert_eq!(again.b.state(), State::ProbeBwCruise);
    while again.b.state() == State::ProbeBwCruise {
        again.play(ms(250), ack(1e6, 90 * MSS));
    }
    let cycle_start = start; // DOWN began at the last ACK before `start`
    assert!(again.now - cycle_start >= waits[0], "{:?} < {:?}", again.now - cycle_start, waits[0]);
    assert!(again.now - cycle_start <= waits[0] + ms(250));
}

/// Section 5.3.4: ProbeRTT after 5 s without a new minimum RTT, cwnd at half the BDP, held for
/// 200 ms and a round, then back to ProbeBW (CRUISE).
#[test]
fn probe_rtt_after_five_seconds_at_half_a_bdp() {
    let mut p = Path::new(1);
    p.reach_probe_bw();
    let cwnd_before = p.b.cwnd_bytes();
    // RTT samples above the 100 ms minimum, every 500 ms, for 5 s.
    let mut k = ack(1e6, 90 * MSS);
    k.rtt = ms(120);
    let entered = loop {
        p.play(ms(500), k);
        if p.b.state() == State::ProbeRtt {
            break p.now;
        }
        assert!(p.now < Time::from_secs(8), "no ProbeRTT by {:?}", p.now);
    };
    // The minimum was stamped at the first ACK (t = 0.1 s): entry is the first ACK after 5.1 s.
    assert!(entered > Time::from_millis(5100) && entered <= Time::from_millis(5600), "{entered:?}");
    assert_eq!(p.b.cwnd_gain(), 0.5);
    // Half of bw * min_rtt = 1e6 * 0.1 / 2 = 50 kB.
    assert_eq!(p.b.probe_rtt_cwnd(), 50 * MSS);
    assert_eq!(p.b.cwnd_bytes(), 50 * MSS);
    // inflight reaches the target: 200 ms and one round from then.
    k.in_flight = 50 * MSS;
    p.play(ms(10), k);
    assert_eq!(p.b.state(), State::ProbeRtt);
    p.play(ms(100), k);
    assert_eq!(p.b.state(), State::ProbeRtt, "200 ms not over");
    p.play(ms(101), k);
    assert_eq!(p.b.state(), State::ProbeBwCruise);
    assert!(p.b.cwnd_bytes() >= cwnd_before.min(p.b.inflight(p.b.bw(), 2.0)) - 10 * MSS);
}

/// Section 5.5.10.2: in a probe (UP), a round whose loss rate exceeds 2 % sets
/// inflight_longterm = max(tx_in_flight, 0.7 * TargetInflight) and ends UP; 2 % exactly does
/// not.
#[test]
fn inflight_longterm_cut_on_probe_loss_above_two_percent() {
    let mut p = Path::new(1);
    p.reach_probe_bw_up();
    assert_eq!(p.b.state(), State::ProbeBwUp);
    assert_eq!(p.b.inflight_longterm(), None);
    // Exactly 2 % of 120 kB lost: not too high.
    let mut k = ack(1e6, 120 * MSS);
    k.losses = MSS;
    k.lost = 2400;
    k.tx_in_flight = 120 * MSS;
    p.play(ms(100), k);
    assert_eq!(p.b.state(), State::ProbeBwUp);
    assert_eq!(p.b.inflight_longterm(), None);
    // 3 %: too high.
    k.lost = 3600;
    p.play(ms(100), k);
    assert_eq!(p.b.state(), State::ProbeBwDown);
    let target = p.b.bdp().min(p.b.cwnd_bytes());
    let want = (120 * MSS).max((target as f64 * BETA) as u64);
    assert_eq!(p.b.inflight_longterm(), Some(want));
    // With tx_in_flight below 0.7 * TargetInflight, beta * target binds instead.
    assert!(want == 120 * MSS);
}

/// Section 5.5.10.2 with a small tx_in_flight: inflight_longterm = 0.7 * TargetInflight.
#[test]
fn inflight_longterm_floor_is_beta_times_target() {
    let mut p = Path::new(1);
    p.reach_probe_bw_up();
    let target = p.b.bdp().min(p.b.cwnd_bytes());
    let mut k = ack(1e6, 120 * MSS);
    k.losses = MSS;
    k.lost = 5 * MSS;
    k.tx_in_flight = 20 * MSS;
    p.play(ms(100), k);
    assert_eq!(p.b.inflight_longterm(), Some((target as f64 * BETA) as u64));
}

/// Section 5.5.10.3: outside probing, each round with loss sets bw_shortterm and
/// inflight_shortterm to max(latest, 0.7 x the last), and cwnd follows inflight_shortterm.
#[test]
fn short_term_bounds_cut_by_beta_per_round_with_loss() {
    let mut p = Path::new(1);
    p.reach_probe_bw();
    assert_eq!(p.b.bw_shortterm(), None);
    // A round at a low delivery rate (bw_latest and inflight_latest restart at a round's
    // first ACK) ...
    let mut k2 = ack(100e3, 90 * MSS);
    k2.acked = MSS;
    p.play(ms(100), k2);
    // ... with a loss in DOWN: the bounds start from max_bw and cwnd ...
    let mut k = k2;
    k.losses = MSS;
    p.play(ms(10), k);
    assert_eq!(p.b.bw_shortterm(), None, "not before the round ends");
    let cwnd = p.b.cwnd_bytes();
    // ... and are cut at the end of the round.
    p.play(ms(100), k2);
    assert_eq!(p.b.bw_shortterm(), Some(0.7 * 1e6));
    assert_eq!(p.b.inflight_shortterm(), Some((0.7 * cwnd as f64) as u64));
    assert!(p.b.cwnd_bytes() <= (0.7 * cwnd as f64) as u64);
    assert!(p.b.bw() <= 0.7 * 1e6);
    // A round without loss leaves them.
    p.play(ms(100), k2);
    assert_eq!(p.b.bw_shortterm(), Some(0.7 * 1e6));
}

/// Section 5.3.1.3: Startup ends on loss: in recovery, 6 loss events in a round, loss rate
/// above 2 %; inflight_longterm becomes max(BDP, inflight_latest).
#[test]
fn startup_exits_on_high_loss() {
    let mut p = Path::new(1);
    for rate in [125e3, 250e3] {
        p.ack(rate, 40 * MSS);
    }
    // Six ACKs within one round each marking loss (prior_delivered below the round's end).
    for i in 0..6 {
        p.now += ms(10);
        let a = AckInput {
            now: p.now,
            rate: Some(500e3),
            prior_delivered: p.delivered - 10 * MSS + 1,
            is_app_limited: false,
            rtt: Some(ms(100)),
            acked_sacked: MSS,
            losses: MSS,
            prior_in_flight: 60 * MSS,
            delivered: p.delivered + (i + 1) * MSS,
            in_flight: 60 * MSS,
            state: CaState::Recovery,
            srtt: Some(ms(100)),
        };
        let x = V3Sample { delivered: MSS, tx_in_flight: 60 * MSS, lost: 6 * MSS, has_sack: true };
        p.b.on_ack(&a, &x);
        assert_eq!(p.b.state(), State::Startup);
    }
    p.delivered += 6 * MSS;
    // The round ends with the sixth loss event counted and 10 % lost: Drain.
    let mut k = ack(500e3, 60 * MSS);
    k.state = CaState::Recovery;
    k.lost = 6 * MSS;
    k.tx_in_flight = 60 * MSS;
    p.play(ms(10), k);
    assert_eq!(p.b.state(), State::Drain);
    assert!(p.b.inflight_longterm().is_some());
}
