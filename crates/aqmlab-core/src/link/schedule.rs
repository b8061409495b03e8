//! A piecewise rate and delay schedule for a link, as netem's and tbf's users script one with
//! `tc qdisc change ... rate R delay D` at given times: a list of steps, each giving the link's
//! rate and one-way delay from its time on, optionally repeating with a period.
//!
//! What both engines share is here, free of clocks: which step holds at a time, and when the
//! rate next allows a packet to start. How a step meets packets (docs/links.md, "A rate and
//! delay schedule", choices) is the same in both engines:
//!
//! * a packet is serialized at the rate in force when it starts, and finishes at that rate
//!   even if a step falls during it (a packet is never split; Linux `sch_netem.c`'s
//!   `netem_enqueue` adds a packet's serialization time at the rate of the moment it takes the
//!   packet, and `netem_change` leaves packets already timed alone);
//! * a packet takes the delay in force when its last bit leaves (its finish time), but never
//!   arrives before the packet ahead of it on the link: after a delay decrease it is held
//!   until that one has arrived, so a schedule never reorders the link's packets (netem with a
//!   rate times each packet from the last queued one's send time, never before it);
//! * a rate of 0 is an outage: no packet starts until a step with a positive rate (a packet
//!   already being sent finishes, as above); the discipline keeps its queue meanwhile.
//!
//! Steps come resolved from the scenario (`python/aqmlab/scenario/link_schedule.py`): every
//! step carries both values (a step that changes one keeps the other), the first is at 0, and
//! times strictly increase.

use crate::units::{Rate, Time};
use serde::{Deserialize, Serialize};

/// One step: from `at_ns` (since the run's start, or the start of each period) the link sends
/// at `rate_bps` (0: an outage) and delays by `delay_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleStep {
    pub at_ns: u64,
    pub rate_bps: u64,
    pub delay_ns: u64,
}

/// A link's schedule, as configs spell it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleConfig {
    pub steps: Vec<ScheduleStep>,
    /// When present, the steps repeat every `period_ns` (the first at 0, 1 period, 2 ...);
    /// absent, the last step holds to the end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_ns: Option<u64>,
}

impl ScheduleConfig {
    /// Checks the steps; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let Some(first) = self.steps.first() else { return Err("steps: a schedule needs at least one step".into()) };
        if first.at_ns != 0 {
            return Err("steps.0.at_ns: the first step must be at 0".into());
        }
        if first.rate_bps == 0 && !self.delay_only() {
            return Err("steps.0.rate_bps: the rate at the start must be positive (a later step may be 0, an outage)".into());
        }
        for (i, w) in self.steps.windows(2).enumerate() {
            if w[1].at_ns <= w[0].at_ns {
                return Err(format!("steps.{}.at_ns: {} ns is not after the step before ({} ns)", i + 1, w[1].at_ns, w[0].at_ns));
            }
        }
        let last = self.steps[self.steps.len() - 1];
        match self.period_ns {
            Some(p) if p <= last.at_ns => Err(format!("period_ns: {p} ns must be after the last step ({} ns)", last.at_ns)),
            None if last.rate_bps == 0 && !self.delay_only() => Err(format!(
                "steps.{}.rate_bps: an outage that never ends; give it an end (a later step with a positive rate) or a period",
                self.steps.len() - 1
            )),
            _ => Ok(()),
        }
    }

    /// Whether the steps change the delay alone: every step's rate is 0, which here means "no
    /// rate of its own", not an outage. That is the schedule of a link following a delivery
    /// trace, whose opportunities decide when it sends (`LinkConfig::validate_service` allows no
    /// other schedule there, and this one nowhere else); only `delay_at` and `arrival` apply.
    pub fn delay_only(&self) -> bool {
        self.steps.iter().all(|s| s.rate_bps == 0)
    }

    /// The rate at the start: what a discipline built for one rate is built for.
    pub fn initial_rate(&self) -> Rate {
        Rate(self.steps.first().map_or(0, |s| s.rate_bps))
    }
}

/// A schedule against a clock: step lookups at absolute times, the first period starting at
/// `origin` (the simulator's 0, the emulator's run epoch). Before the origin, the first step.
#[derive(Clone, Debug)]
pub struct Schedule {
    cfg: ScheduleConfig,
    origin: Time,
}

impl Schedule {
    pub fn new(cfg: &ScheduleConfig, origin: Time) -> Result<Schedule, String> {
        cfg.validate()?;
        Ok(Schedule { cfg: cfg.clone(), origin })
    }

    /// Starts the schedule over at `origin`.
    pub fn restart(&mut self, origin: Time) {
        self.origin = origin;
    }

    /// The step in force at `t`, and the absolute time its period started.
    fn locate(&self, t: Time) -> (usize, u64) {
        let since = t.saturating_sub(self.origin).as_nanos();
        let (base, local) = match self.cfg.period_ns {
            Some(p) => (since - since % p, since % p),
            None => (0, since),
        };
        let i = self.cfg.steps.partition_point(|s| s.at_ns <= local) - 1;
        (i, self.origin.as_nanos().saturating_add(base))
    }

    /// The rate in force at `t`.
    pub fn rate_at(&self, t: Time) -> Rate {
        Rate(self.cfg.steps[self.locate(t).0].rate_bps)
    }

    /// The delay in force at `t`.
    pub fn delay_at(&self, t: Time) -> Time {
        Time(self.cfg.steps[self.locate(t).0].delay_ns)
    }

    /// When the step after the one in force at `t` begins (`None`: the last step of a schedule
    /// without a period, which never ends).
    pub fn next_step_after(&self, t: Time) -> Option<Time> {
        let (i, base) = self.locate(t);
        let next = match (self.cfg.steps.get(i + 1), self.cfg.period_ns) {
            (Some(s), _) => base.saturating_add(s.at_ns),
            (None, Some(p)) => base.saturating_add(p),
            (None, None) => return None,
        };
        Some(Time(next))
    }

    /// The earliest time at or after `t` when a packet may start (the rate is positive):
    /// `t` itself outside an outage, the end of the outage in one. Every outage ends (see
    /// `validate`): the first step's rate is positive, and so is the last's without a period.
    pub fn sending_from(&self, t: Time) -> Time {
        let mut at = t;
        while self.rate_at(at).0 == 0 {
            at = self.next_step_after(at).expect("validated: every outage ends");
        }
        at
    }

    /// When a packet of `size` bytes starting at `start` (not in an outage) finishes: at the
    /// rate in force at `start`, whatever steps fall during it.
    pub fn finish(&self, start: Time, size: u64) -> Time {
        start + self.rate_at(start).tx_time(size)
    }

    /// When a packet that finished at `finish` arrives at the far end: after the delay in
    /// force then, but not before `ahead`, the arrival of the packet before it on the link.
    pub fn arrival(&self, finish: Time, ahead: Time) -> Time {
        (finish + self.delay_at(finish)).max(ahead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_millis(t)
    }

    fn step(at_ms: u64, mbps: u64, delay_ms: u64) -> ScheduleStep {
        ScheduleStep { at_ns: at_ms * 1_000_000, rate_bps: mbps * 1_000_000, delay_ns: delay_ms * 1_000_000 }
    }

    fn schedule(steps: &[ScheduleStep], period_ms: Option<u64>) -> Schedule {
        let cfg = ScheduleConfig { steps: steps.to_vec(), period_ns: period_ms.map(|p| p * 1_000_000) };
        Schedule::new(&cfg, Time::ZERO).unwrap()
    }

    #[test]
    fn each_step_holds_from_its_time_until_the_next() {
        let s = schedule(&[step(0, 20, 10), step(5000, 2, 10), step(10_000, 2, 80)], None);
        assert_eq!(s.rate_at(ms(4999)), Rate(20_000_000));
        assert_eq!(s.rate_at(ms(5000)), Rate(2_000_000));
        assert_eq!(s.delay_at(ms(9999)), ms(10));
        assert_eq!(s.delay_at(ms(10_000)), ms(80));
        assert_eq!(s.delay_at(ms(1_000_000)), ms(80), "the last step holds without a period");
        assert_eq!(s.next_step_after(ms(0)), Some(ms(5000)));
        assert_eq!(s.next_step_after(ms(5000)), Some(ms(10_000)));
        assert_eq!(s.next_step_after(ms(10_000)), None);
    }

    #[test]
    fn a_period_repeats_the_steps_from_the_origin() {
        let cfg = ScheduleConfig { steps: vec![step(0, 20, 10), step(300, 5, 30)], period_ns: Some(1_000_000_000) };
        let mut s = Schedule::new(&cfg, Time::ZERO).unwrap();
        assert_eq!(s.rate_at(ms(1299)), Rate(20_000_000));
        assert_eq!(s.rate_at(ms(1300)), Rate(5_000_000));
        assert_eq!(s.next_step_after(ms(1300)), Some(ms(2000)));
        s.restart(ms(50));
        assert_eq!(s.rate_at(ms(349)), Rate(20_000_000));
        assert_eq!(s.rate_at(ms(350)), Rate(5_000_000));
        assert_eq!(s.rate_at(ms(10)), Rate(20_000_000), "before the origin: the first step");
    }

    #[test]
    fn a_packet_finishes_at_the_rate_it_started_at() {
        // 1500 B at 12 Mbit/s is 1 ms; a step to 1.2 Mbit/s 0.5 ms in does not slow it.
        let s = schedule(
            &[
                ScheduleStep { at_ns: 0, rate_bps: 12_000_000, delay_ns: 0 },
                ScheduleStep { at_ns: 500_000, rate_bps: 1_200_000, delay_ns: 0 },
            ],
            None,
        );
        assert_eq!(s.finish(Time::ZERO, 1500), ms(1));
        assert_eq!(s.finish(ms(1), 1500), ms(11));
    }

    #[test]
    fn an_outage_holds_starts_until_a_positive_rate() {
        let s = schedule(&[step(0, 10, 5), step(100, 0, 5), step(250, 10, 5)], Some(400));
        assert_eq!(s.sending_from(ms(50)), ms(50));
        assert_eq!(s.sending_from(ms(100)), ms(250));
        assert_eq!(s.sending_from(ms(420)), ms(420));
        assert_eq!(s.sending_from(ms(520)), ms(650));
        // Two outage steps in a row end together.
        let s = schedule(&[step(0, 10, 5), step(100, 0, 5), step(150, 0, 9), step(200, 1, 5)], None);
        assert_eq!(s.sending_from(ms(120)), ms(200));
    }

    #[test]
    fn a_delay_decrease_holds_a_packet_behind_the_one_ahead() {
        let s = schedule(&[step(0, 10, 80), step(1000, 10, 10)], None);
        // Finished at 999 ms: arrives at 1079 ms. The next finishes at 1000 ms with 10 ms of
        // delay (due 1010 ms) and is held until 1079 ms; one finishing at 1075 ms too.
        let first = s.arrival(ms(999), Time::ZERO);
        assert_eq!(first, ms(1079));
        assert_eq!(s.arrival(ms(1000), first), ms(1079));
        assert_eq!(s.arrival(ms(1075), first), ms(1085));
    }

    #[test]
    fn bad_schedules_are_refused_naming_the_field() {
        let bad = |steps: Vec<ScheduleStep>, period_ns| ScheduleConfig { steps, period_ns }.validate().unwrap_err();
        assert!(bad(vec![], None).starts_with("steps:"));
        assert!(bad(vec![step(1, 1, 1)], None).starts_with("steps.0.at_ns"));
        assert!(bad(vec![step(0, 0, 1), step(5, 1, 1)], None).starts_with("steps.0.rate_bps"));
        assert!(bad(vec![step(0, 1, 1), step(0, 1, 1)], None).starts_with("steps.1.at_ns"));
        assert!(bad(vec![step(0, 1, 1), step(5, 1, 1)], Some(5_000_000)).starts_with("period_ns"));
        assert!(bad(vec![step(0, 1, 1), step(5, 0, 1)], None).starts_with("steps.1.rate_bps: an outage that never ends"));
        assert!(ScheduleConfig { steps: vec![step(0, 1, 1), step(5, 0, 1)], period_ns: Some(9_000_000) }.validate().is_ok());
    }

    #[test]
    fn a_delay_only_schedule_has_no_outage_and_moves_the_delay() {
        // Every rate 0: a trace link's schedule, where 0 means "no rate of its own".
        let cfg = ScheduleConfig { steps: vec![step(0, 0, 10), step(5, 0, 40)], period_ns: None };
        assert!(cfg.delay_only());
        assert!(cfg.validate().is_ok(), "neither the start's rate nor a last step of 0 is an outage here");
        assert!(!ScheduleConfig { steps: vec![step(0, 1, 10), step(5, 0, 40)], period_ns: Some(9_000_000) }.delay_only());
        let s = schedule(&cfg.steps, None);
        assert_eq!(s.arrival(ms(4), Time::ZERO), ms(14));
        assert_eq!(s.arrival(ms(6), Time::ZERO), ms(46));
        let bad = ScheduleConfig { steps: vec![step(0, 0, 10), step(0, 0, 40)], period_ns: None }.validate().unwrap_err();
        assert!(bad.starts_with("steps.1.at_ns"), "its times are checked as any schedule's: {bad}");
    }
}
