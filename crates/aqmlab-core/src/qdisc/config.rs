//! Every discipline's configuration as scenario files spell it, and the builder.

use super::classful::{pels_feedback, prio, wrr};
use super::{cake, cobalt, codel, droptail, drr, dualpi2, fq_codel, fq_pie, pfq, pie, rb_red, rb_rio, red, rio, sqf, tbf};
use super::{Qdisc, Queue};
use crate::link::impairments::ImpairmentsConfig;
use crate::link::schedule::ScheduleConfig;
use crate::link::DeliveryTrace;
use crate::units::{Limit, Rate};
use serde::{Deserialize, Serialize};

/// One direction of a point-to-point link, as both engines take it: rate in bit/s, propagation
/// delay and the discipline of its output queue. In the emulator a rate of 0 means unshaped (as
/// fast as the router forwards).
///
/// With a `trace`, the link sends at the trace's delivery opportunities instead of at a fixed
/// rate (`crate::link::TraceServer`), and `rate_bps` must be 0: the two are exclusive.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub qdisc: QdiscConfig,
    /// Absent from every config written before trace links, which stay byte for byte the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<DeliveryTrace>,
    /// netem's impairments on the link's wire (`crate::link::impairments`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impairments: Option<ImpairmentsConfig>,
    /// A piecewise rate and delay schedule (`crate::link::schedule`); absent: the fixed
    /// `rate_bps` and `delay_ns`, which for a scheduled link are its first step's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduleConfig>,
}

impl LinkConfig {
    /// The rate a discipline is built for (RED's idle decay, the classful containers' rates):
    /// the fixed rate, or a trace's mean rate at full-size packets (`DeliveryTrace::mean_rate`),
    /// the one figure that describes a varying link over its whole loop.
    pub fn nominal_rate(&self) -> Rate {
        match &self.trace {
            Some(t) => t.mean_rate(),
            None => Rate(self.rate_bps),
        }
    }

    /// The link's own checks (the discipline's are `QdiscConfig::validate`): a trace is a
    /// valid one and comes without a rate; a schedule beside a trace changes the delay alone.
    /// Errors name the field.
    pub fn validate_service(&self) -> Result<(), (&'static str, String)> {
        if let Some(imp) = &self.impairments {
            imp.validate().map_err(|e| ("impairments", e))?;
        }
        if let Some(schedule) = &self.schedule {
            if self.trace.is_some() {
                // The trace decides when the link sends; a schedule beside it moves the delay.
                if let Some(i) = schedule.steps.iter().position(|s| s.rate_bps != 0) {
                    return Err((
                        "schedule",
                        format!("steps.{i}.rate_bps: a trace link's schedule changes its delay only (the trace decides when it sends); give no rate"),
                    ));
                }
            }
            schedule.validate().map_err(|e| ("schedule", e))?;
            let first = schedule.steps[0];
            if self.trace.is_some() {
                if self.delay_ns != first.delay_ns {
                    return Err(("delay", "a scheduled link's delay is its first step's".into()));
                }
            } else if schedule.delay_only() {
                return Err((
                    "schedule",
                    "steps.0.rate_bps: the rate at the start must be positive (a later step may be 0, an outage)".into(),
                ));
            } else if (self.rate_bps, self.delay_ns) != (first.rate_bps, first.delay_ns) {
                return Err(("rate", "a scheduled link's rate and delay are its first step's".into()));
            }
        }
        let Some(trace) = &self.trace else { return Ok(()) };
        if self.rate_bps != 0 {
            return Err(("rate", "a link has either a rate or a trace, not both".into()));
        }
        trace.validate().map_err(|e| ("trace", e))
    }
}

/// Every discipline's configuration, tagged by `kind` as in scenario files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum QdiscConfig {
    #[serde(alias = "fifo", alias = "drop_tail")]
    Droptail(droptail::DropTailConfig),
    Red(red::RedConfig),
    RbRed(rb_red::RbRedConfig),
    RbRio(rb_rio::RbRioConfig),
    Rio(rio::RioConfig),
    Sqf(sqf::SqfConfig),
    #[serde(alias = "fq")]
    Drr(drr::DrrConfig),
    Pfq(pfq::PfqConfig),
    Tbf(tbf::TbfConfig),
    Prio(prio::PrioConfig),
    Wrr(wrr::WrrConfig),
    PelsFeedback(pels_feedback::PelsFeedbackConfig),
    Codel(codel::CodelConfig),
    FqCodel(fq_codel::FqCodelConfig),
    Pie(pie::PieConfig),
    Dualpi2(dualpi2::Dualpi2Config),
    Cobalt(cobalt::CobaltConfig),
    FqPie(fq_pie::FqPieConfig),
    Cake(cake::CakeConfig),
}

impl QdiscConfig {
    /// Checks parameter ranges; the error names the field and what is allowed.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            QdiscConfig::Droptail(c) => c.validate(),
            QdiscConfig::Red(c) => c.validate(),
            QdiscConfig::RbRed(c) => c.validate(),
            QdiscConfig::RbRio(c) => c.validate(),
            QdiscConfig::Rio(c) => c.validate(),
            QdiscConfig::Sqf(c) => c.validate(),
            QdiscConfig::Drr(c) => c.validate(),
            QdiscConfig::Pfq(c) => c.validate(),
            QdiscConfig::Tbf(c) => c.validate(),
            QdiscConfig::Prio(c) => c.validate(),
            QdiscConfig::Wrr(c) => c.validate(),
            QdiscConfig::PelsFeedback(c) => c.validate(),
            QdiscConfig::Codel(c) => c.validate(),
            QdiscConfig::FqCodel(c) => c.validate(),
            QdiscConfig::Pie(c) => c.validate(),
            QdiscConfig::Dualpi2(c) => c.validate(),
            QdiscConfig::Cobalt(c) => c.validate(),
            QdiscConfig::FqPie(c) => c.validate(),
            QdiscConfig::Cake(c) => c.validate(),
        }
    }

    /// The physical capacity of the discipline's buffer.
    pub fn limit(&self) -> Limit {
        match self {
            QdiscConfig::Droptail(c) => c.limit,
            QdiscConfig::Red(c) => c.limit,
            QdiscConfig::RbRed(c) => c.limit,
            QdiscConfig::RbRio(c) => c.limit,
            QdiscConfig::Rio(c) => c.limit,
            QdiscConfig::Sqf(c) => c.limit,
            QdiscConfig::Drr(c) => c.limit,
            QdiscConfig::Pfq(c) => c.limit,
            QdiscConfig::Tbf(c) => c.limit,
            QdiscConfig::Prio(c) => c.limit(),
            QdiscConfig::Wrr(c) => c.limit(),
            QdiscConfig::PelsFeedback(c) => c.limit(),
            QdiscConfig::Codel(c) => c.limit,
            QdiscConfig::FqCodel(c) => c.limit,
            QdiscConfig::Pie(c) => c.limit,
            QdiscConfig::Dualpi2(c) => c.limit,
            QdiscConfig::Cobalt(c) => c.limit,
            QdiscConfig::FqPie(c) => c.limit,
            QdiscConfig::Cake(c) => Limit::Bytes(c.buffer_limit()),
        }
    }
}

/// Builds a discipline for a link of rate `link_rate` (RED needs it for its idle-time decay).
pub fn build_qdisc(cfg: &QdiscConfig, link_rate: Rate) -> Result<Queue, String> {
    cfg.validate()?;
    let inner: Box<dyn Qdisc> = match cfg {
        QdiscConfig::Droptail(c) => Box::new(droptail::DropTail::new(c.clone())),
        QdiscConfig::Red(c) => Box::new(red::Red::new(c.clone(), link_rate)),
        QdiscConfig::RbRed(c) => Box::new(rb_red::RbRed::new(c.clone(), link_rate)),
        QdiscConfig::RbRio(c) => Box::new(rb_rio::RbRio::new(c.clone(), link_rate)),
        QdiscConfig::Rio(c) => Box::new(rio::Rio::new(c.clone(), link_rate)),
        QdiscConfig::Sqf(c) => Box::new(sqf::Sqf::new(c.clone())),
        QdiscConfig::Drr(c) => Box::new(drr::Drr::new(c.clone())),
        QdiscConfig::Pfq(c) => Box::new(pfq::Pfq::new(c.clone())),
        QdiscConfig::Tbf(c) => Box::new(tbf::Tbf::new(c.clone())),
        QdiscConfig::Prio(c) => Box::new(prio::Prio::new(c, link_rate)?),
        QdiscConfig::Wrr(c) => Box::new(wrr::Wrr::new(c, link_rate)?),
        QdiscConfig::PelsFeedback(c) => Box::new(pels_feedback::PelsFeedback::new(c, link_rate)?),
        QdiscConfig::Codel(c) => Box::new(codel::Codel::new(c.clone())),
        QdiscConfig::FqCodel(c) => Box::new(fq_codel::FqCodel::new(c.clone())),
        QdiscConfig::Pie(c) => Box::new(pie::Pie::new(c.clone())),
        QdiscConfig::Dualpi2(c) => Box::new(dualpi2::Dualpi2::new(c.clone())),
        QdiscConfig::Cobalt(c) => Box::new(cobalt::Cobalt::new(c.clone())),
        QdiscConfig::FqPie(c) => Box::new(fq_pie::FqPie::new(c.clone())),
        QdiscConfig::Cake(c) => Box::new(cake::Cake::new(c.clone())),
    };
    Ok(Queue::new(inner))
}

#[cfg(test)]
mod link_config_tests {
    use super::*;
    use crate::link::schedule::ScheduleStep;
    use crate::link::DeliveryTrace;

    fn link(rate_bps: u64, trace: bool, steps: &[(u64, u64)]) -> LinkConfig {
        let qdisc: QdiscConfig = serde_json::from_str(r#"{"kind":"droptail","limit":{"packets":100}}"#).unwrap();
        let steps: Vec<ScheduleStep> = steps
            .iter()
            .enumerate()
            .map(|(i, &(rate_bps, delay_ns))| ScheduleStep { at_ns: i as u64 * 1_000_000, rate_bps, delay_ns })
            .collect();
        LinkConfig {
            rate_bps,
            delay_ns: steps.first().map_or(5, |s| s.delay_ns),
            qdisc,
            trace: trace.then(|| DeliveryTrace { opportunities_ms: vec![1, 2] }),
            impairments: None,
            schedule: (!steps.is_empty()).then_some(ScheduleConfig { steps, period_ns: None }),
        }
    }

    #[test]
    fn a_trace_link_takes_a_schedule_of_delays_alone() {
        assert_eq!(link(0, true, &[(0, 10), (0, 40)]).validate_service(), Ok(()));
        let (field, e) = link(0, true, &[(0, 10), (2_000_000, 40)]).validate_service().unwrap_err();
        assert_eq!(field, "schedule");
        assert!(e.starts_with("steps.1.rate_bps: a trace link's schedule changes its delay only"), "{e}");
        let (field, _) = link(5, true, &[(0, 10), (0, 40)]).validate_service().unwrap_err();
        assert_eq!(field, "rate", "a trace link still has no rate of its own");
    }

    #[test]
    fn a_rate_link_refuses_a_schedule_without_rates() {
        let (field, e) = link(0, false, &[(0, 10), (0, 40)]).validate_service().unwrap_err();
        assert_eq!(field, "schedule");
        assert!(e.starts_with("steps.0.rate_bps: the rate at the start must be positive"), "{e}");
        assert_eq!(link(1_000_000, false, &[(1_000_000, 10), (0, 40), (1_000_000, 10)]).validate_service(), Ok(()));
    }
}
