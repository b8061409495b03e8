//! The router's run description, as JSON from the Python front end (already normalized:
//! integer nanoseconds and bits per second). `deny_unknown_fields` keeps the layers honest.

use aqmlab_model::config_error::{ConfigError, ConfigErrorKind};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouterConfig {
    pub seed: u64,
    /// Interface facing the senders (frames arriving here go forward, through the bottleneck).
    pub sender_iface: String,
    /// Interface facing the receivers (frames arriving here go back, through `reverse`).
    pub receiver_iface: String,
    /// Senders -> receivers: the bottleneck under test.
    pub forward: LinkConfig,
    /// Receivers -> senders, the ACK path.
    pub reverse: LinkConfig,
    #[serde(default)]
    pub classify: ClassifyConfig,
    #[serde(default)]
    pub flows: Vec<FlowPort>,
    #[serde(default)]
    pub records: RecordsConfig,
    /// CLOCK_MONOTONIC reading, in ns, that is t = 0 of the run's records. Absent: set later
    /// with [`crate::Router::epoch_handle`] (the router forwards meanwhile but records nothing,
    /// so a probe can measure the path before the run starts).
    #[serde(default)]
    pub epoch_ns: Option<u64>,
    /// Stop after this long from `epoch_ns` (0: run until cancelled).
    #[serde(default)]
    pub duration_ns: u64,
    /// The router sleeps in ppoll until this close to the next due time, then spins.
    #[serde(default = "default_spin_ns")]
    pub spin_ns: u64,
    /// Run the forwarding thread under SCHED_FIFO (needs root; falls back silently and says
    /// so in the summary), so that a busy machine's other tasks do not delay its wake-ups.
    #[serde(default = "default_realtime")]
    pub realtime: bool,
    /// Never sleep: poll the sockets in a loop. Costs a whole core; removes the wake-up
    /// latency of a sleeping thread (large on virtual machines) from every packet's path.
    #[serde(default)]
    pub busy_poll: bool,
}

fn default_realtime() -> bool {
    true
}

fn default_spin_ns() -> u64 {
    50_000
}

/// One direction of the emulated link (the simulator's type: rate 0 = unshaped here).
pub use aqmlab_core::LinkConfig;

/// DSCP -> priority class (1 lowest .. 3 highest; 0 unclassified).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassifyConfig {
    /// `[dscp, class]` pairs.
    pub dscp_classes: Vec<(u8, u8)>,
    /// Class of packets whose DSCP is not listed.
    pub default_class: u8,
    /// Extra one-way delay, each way, of packets without ports (ICMP): the access delays of an
    /// ICMP echo flow, which has no port to be recognized by. 0 by default.
    pub other_extra_delay_ns: u64,
}

impl Default for ClassifyConfig {
    /// Assured Forwarding drop precedences of AF1x (RFC 2597 section 6): AF11 (DSCP 10) is the
    /// lowest drop precedence, so the highest class; AF13 (DSCP 14) the highest, class 1.
    fn default() -> Self {
        ClassifyConfig { dscp_classes: vec![(10, 3), (12, 2), (14, 1)], default_class: 0, other_extra_delay_ns: 0 }
    }
}

/// A known flow: its packets carry `port` as destination port forward (as source port on the
/// way back), and it gets the record flow id `flow` and extra one-way delays that stand in for
/// the flow's access links.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowPort {
    pub proto: FlowProto,
    pub port: u16,
    pub flow: u32,
    #[serde(default)]
    pub extra_forward_delay_ns: u64,
    #[serde(default)]
    pub extra_reverse_delay_ns: u64,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum FlowProto {
    Tcp,
    Udp,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RecordsConfig {
    /// Log arrive/enqueue/drop/dequeue of the forward (bottleneck) direction.
    pub packet_events: bool,
    /// Bottleneck queue sampling interval (0: none).
    pub queue_sample_ns: u64,
}

impl Default for RecordsConfig {
    fn default() -> Self {
        RecordsConfig { packet_events: true, queue_sample_ns: 10_000_000 }
    }
}

impl RouterConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, link) in [("forward", &self.forward), ("reverse", &self.reverse)] {
            link.qdisc.validate().map_err(|e| ConfigError::invalid(format!("{name}.qdisc"), e))?;
            if let Some(imp) = &link.impairments {
                imp.validate().map_err(|e| ConfigError::invalid(format!("{name}.impairments"), e))?;
            }
        }
        for (dscp, class) in &self.classify.dscp_classes {
            if *dscp > 63 {
                return Err(ConfigError::invalid("classify.dscp_classes", format!("DSCP {dscp} out of range; allowed 0..=63")));
            }
            if *class > 3 {
                return Err(ConfigError::invalid("classify.dscp_classes", format!("class {class} out of range; allowed 0..=3")));
            }
        }
        if self.classify.default_class > 3 {
            return Err(ConfigError::invalid("classify.default_class", "allowed 0..=3"));
        }
        if self.sender_iface.is_empty() || self.receiver_iface.is_empty() || self.sender_iface == self.receiver_iface {
            return Err(ConfigError::invalid("sender_iface", "sender_iface and receiver_iface must be two different interface names"));
        }
        Ok(())
    }
}

pub fn parse(json: &str) -> Result<RouterConfig, ConfigError> {
    let cfg: RouterConfig = serde_json::from_str(json).map_err(|e| ConfigError {
        kind: ConfigErrorKind::Shape,
        path: String::new(),
        message: format!("router config: {e}"),
    })?;
    cfg.validate()?;
    Ok(cfg)
}
