//! The run description the simulator accepts, as JSON from the Python front end.
//!
//! Python validates the human-facing scenario (units as strings, defaults, clear errors) and
//! hands over this already-normalized form: integer nanoseconds, bits per second and bytes.
//! `deny_unknown_fields` everywhere makes a mismatch between the two layers loud.

use aqmlab_core::QdiscConfig;
use aqmlab_model::app::AppConfig;
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub seed: u64,
    pub duration_ns: u64,
    pub topology: DumbbellConfig,
    pub flow_groups: Vec<FlowGroup>,
    pub records: RecordsConfig,
    /// How the engine runs the model; absent: the defaults.
    #[serde(default)]
    pub engine: EngineConfig,
}

/// One direction of a point-to-point link (shared with the emulator).
pub use aqmlab_core::LinkConfig;

/// Senders on the left of router R1, receivers on the right of R2, one bottleneck R1->R2.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellConfig {
    pub bottleneck: LinkConfig,
    /// R2 -> R1, the path of ACKs.
    pub reverse: LinkConfig,
    /// Discipline of every access link (host <-> router), normally a large FIFO.
    pub access_qdisc: QdiscConfig,
    /// Further routers after R2, in a row (a parking lot): hop i links router i + 1 to router
    /// i + 2. Empty: the plain dumbbell.
    #[serde(default)]
    pub chain: Vec<HopConfig>,
}

/// One router-to-router hop of a parking lot, both directions.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HopConfig {
    pub forward: LinkConfig,
    pub reverse: LinkConfig,
}

impl DumbbellConfig {
    /// Routers in the row: R1, R2 and one per chain hop.
    pub fn routers(&self) -> u32 {
        2 + self.chain.len() as u32
    }

    /// Forward and reverse delays of the router hops between routers `enter` and `exit`
    /// (either way round: a flow with `exit < enter` sends toward R1, over the reverse links).
    pub fn path_delay_ns(&self, enter: u32, exit: u32) -> u64 {
        (enter.min(exit)..enter.max(exit))
            .map(|hop| match hop {
                0 => self.bottleneck.delay_ns + self.reverse.delay_ns,
                k => {
                    let h = &self.chain[k as usize - 1];
                    h.forward.delay_ns + h.reverse.delay_ns
                }
            })
            .sum()
    }
}

/// A group of identical flows; flow `i` of the group gets its own sender and receiver host.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroup {
    pub name: String,
    pub count: u32,
    pub start_ns: u64,
    /// Each flow starts at `start_ns + U[0, start_jitter_ns)`, drawn from stream
    /// `"group/<name>/start"`, so that flows do not slow-start in lock step.
    pub start_jitter_ns: u64,
    pub stop_ns: u64,
    pub access_rate_bps: u64,
    /// Sender access delays spread linearly over [lo, hi] by flow index within the group.
    pub sender_delay_ns: [u64; 2],
    pub receiver_delay_ns: u64,
    /// Priority class weights (class1, class2, class3) for a per-packet random class mark;
    /// all zero means unclassified (class 0).
    pub class_weights: [f64; 3],
    pub dscp: u8,
    pub app: AppConfig,
    /// Random loss of the flow's data packets on the Internet part of the path, before the
    /// bottleneck: each packet the sender emits is lost with this probability, drawn from
    /// stream `"flow/<id>/path_loss"`.
    #[serde(default)]
    pub path_loss: f64,
    /// Routers where the group's senders and receivers attach: [enter, exit], 0 = R1. With
    /// enter > exit the flow runs the other way (an upload: its data crosses the reverse links,
    /// its ACKs the forward ones). Default: [0, last router] (the whole row).
    #[serde(default)]
    pub path: Option<[u32; 2]>,
}

impl FlowGroup {
    /// [enter, exit] routers of the group's flows in `topology`.
    pub fn path_in(&self, topology: &DumbbellConfig) -> [u32; 2] {
        self.path.unwrap_or([0, topology.routers() - 1])
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecordsConfig {
    /// Log every arrive/enqueue/drop/dequeue at the bottleneck.
    pub packet_events: bool,
    pub queue_sample_ns: u64,
    pub flow_sample_ns: u64,
    /// Capture the bottleneck link's transmissions as a pcap (headers only).
    pub pcap: bool,
}

/// How the engine runs the model, without changing the model.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// Give every step on an access link (which only its flow's packets use) its own events,
    /// as before such links were crossed by arithmetic (`link/exclusive.rs`): the results of
    /// the earlier version, byte for byte.
    #[serde(default)]
    pub access_link_events: bool,
}

pub use aqmlab_model::config_error::{ConfigError, ConfigErrorKind};

pub fn parse(json: &str) -> Result<SimConfig, ConfigError> {
    let cfg: SimConfig = serde_json::from_str(json).map_err(|e| ConfigError {
        kind: ConfigErrorKind::Shape,
        path: String::new(),
        message: format!("simulator config: {e}"),
    })?;
    cfg.validate()?;
    Ok(cfg)
}

impl SimConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        let t = &self.topology;
        let at = |path: String| move |e: String| ConfigError::invalid(path, e);
        t.bottleneck.qdisc.validate().map_err(at("bottleneck.qdisc".into()))?;
        t.reverse.qdisc.validate().map_err(at("reverse.qdisc".into()))?;
        t.access_qdisc.validate().map_err(at("access_qdisc".into()))?;
        let service = |link: &LinkConfig, path: &str| {
            link.validate_service().map_err(|(field, e)| ConfigError::invalid(format!("{path}.{field}"), e))
        };
        service(&t.bottleneck, "bottleneck")?;
        service(&t.reverse, "reverse")?;
        if t.bottleneck.rate_bps == 0 && t.bottleneck.trace.is_none() {
            return Err(ConfigError::invalid("bottleneck.rate", "must be positive"));
        }
        for (i, hop) in t.chain.iter().enumerate() {
            hop.forward.qdisc.validate().map_err(at(format!("chain.{i}.forward.qdisc")))?;
            hop.reverse.qdisc.validate().map_err(at(format!("chain.{i}.reverse.qdisc")))?;
            service(&hop.forward, &format!("chain.{i}.forward"))?;
            service(&hop.reverse, &format!("chain.{i}.reverse"))?;
            let unpaced = |link: &LinkConfig| link.rate_bps == 0 && link.trace.is_none();
            if unpaced(&hop.forward) || unpaced(&hop.reverse) {
                return Err(ConfigError::invalid(format!("chain.{i}"), "link rates must be positive"));
            }
        }
        for g in &self.flow_groups {
            let group = format!("flows.{}", g.name);
            if g.stop_ns < g.start_ns {
                return Err(ConfigError::invalid(group, "stop must not be before start"));
            }
            if let Some([enter, exit]) = g.path {
                if enter == exit || enter.max(exit) >= t.routers() {
                    let last = t.routers() - 1;
                    return Err(ConfigError::invalid(
                        format!("{group}.path"),
                        format!("[{enter}, {exit}] must name two different routers in 0..={last}"),
                    ));
                }
            }
            if g.sender_delay_ns[0] > g.sender_delay_ns[1] {
                return Err(ConfigError::invalid(group, "sender_delay range is reversed"));
            }
            if g.class_weights.iter().any(|w| !w.is_finite() || *w < 0.0) {
                return Err(ConfigError::invalid(group, "class_weights must be finite and >= 0"));
            }
            if !(0.0..1.0).contains(&g.path_loss) {
                return Err(ConfigError::invalid(format!("{group}.path_loss"), "must be a fraction in [0, 1)"));
            }
            match &g.app {
                AppConfig::Bulk { tcp } if tcp.mss == 0 => {
                    return Err(ConfigError::invalid(format!("{group}.app.tcp.mss"), "must be positive"))
                }
                AppConfig::Bulk { tcp } => tcp.validate().map_err(at(format!("{group}.app.tcp")))?,
                AppConfig::Cbr { rate_bps: 0, .. } => return Err(ConfigError::invalid(format!("{group}.app.rate"), "must be positive")),
                AppConfig::Cbr { packet_size, .. } if *packet_size < UDP_IP_HEADER_BYTES => {
                    return Err(ConfigError::invalid(
                        format!("{group}.app.packet_size"),
                        format!("must be at least {UDP_IP_HEADER_BYTES} bytes (IP+UDP headers)"),
                    ))
                }
                AppConfig::Mpeg(m) => m.validate().map_err(at(format!("{group}.app")))?,
                AppConfig::Rtp(r) => r.validate().map_err(at(format!("{group}.app")))?,
                AppConfig::Stream(s) => s.validate().map_err(at(format!("{group}.app")))?,
                AppConfig::Pels(p) => p.validate().map_err(at(format!("{group}.app")))?,
                AppConfig::Abr(a) => a.validate().map_err(at(format!("{group}.app")))?,
                AppConfig::Ping { interval_ns: 0, .. } => {
                    return Err(ConfigError::invalid(format!("{group}.app.interval"), "must be positive"))
                }
                AppConfig::Ping { packet_size, .. } if *packet_size < UDP_IP_HEADER_BYTES => {
                    return Err(ConfigError::invalid(
                        format!("{group}.app.packet_size"),
                        format!("must be at least {UDP_IP_HEADER_BYTES} bytes (IP+UDP headers)"),
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
