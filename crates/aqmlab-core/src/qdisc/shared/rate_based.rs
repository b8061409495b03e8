//! What the rate-based disciplines (Rb-RED and Rb-RIO, `rb_red.rs` and `rb_rio.rs`) share: one
//! configuration (the same parameters, meanings and defaults for both; Rb-RIO applies them to
//! all three classes), its checks, the queue-adjustment rule by the aggressiveness parameter,
//! and their FIFO with its average queue. The formulas and the choice of every default are
//! argued in `rb_red.rs`'s module docs.

use super::packet_fifo::PacketFifo;
use super::queue_average::QueueAverage;
use crate::packet::Packet;
use crate::qdisc::{DropReason, Verdict};
use crate::units::{Limit, Rate, Time};
use serde::{Deserialize, Serialize};

/// The parameters of Rb-RED and Rb-RIO (scenario kinds `rb_red` and `rb_rio`, which name it
/// `RbRedConfig` and `RbRioConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateBasedConfig {
    /// Physical capacity (packets or bytes), shared by all classes in Rb-RIO.
    pub limit: Limit,
    /// Time constant `tau` of the arrival-rate estimator, in nanoseconds (default 100 ms).
    pub time_constant_ns: u64,
    /// Aggressiveness parameter AP, > 0 (default 2.0): the average queue settles at
    /// `2 target / AP` under steady overload.
    pub aggressiveness: f64,
    /// Queue that AP = 2 holds the average at, in packets (in mean-size packets with a byte
    /// limit); `None` is half the physical limit (C&C: "the middle of the physical queue").
    #[serde(default)]
    pub target_queue: Option<f64>,
    /// EWMA weight of the average queue (in Rb-RIO the total queue of all classes), in (0, 1]
    /// (default 0.002, as RED).
    pub w_q: f64,
    /// Typical packet size in bytes: the byte-limit queue unit and the idle-decay packet time
    /// (default 1000).
    pub mean_pkt_size: u32,
}

impl Default for RateBasedConfig {
    /// The defaults argued in `rb_red.rs`'s module docs, for a 100-packet buffer.
    fn default() -> RateBasedConfig {
        RateBasedConfig {
            limit: Limit::Packets(100),
            time_constant_ns: 100_000_000,
            aggressiveness: 2.0,
            target_queue: None,
            w_q: 0.002,
            mean_pkt_size: 1000,
        }
    }
}

impl RateBasedConfig {
    /// Checks parameter ranges; the error starts with the field name.
    pub fn validate(&self) -> Result<(), String> {
        self.limit.validate()?;
        if self.time_constant_ns == 0 {
            return Err("time_constant_ns: must be > 0".into());
        }
        let ap = self.aggressiveness;
        if !(ap > 0.0 && ap.is_finite()) {
            return Err(format!("aggressiveness: must be > 0, got {ap}"));
        }
        if !(self.w_q > 0.0 && self.w_q <= 1.0) {
            return Err(format!("w_q: must be in (0, 1], got {}", self.w_q));
        }
        if self.mean_pkt_size == 0 {
            return Err("mean_pkt_size: must be at least 1 byte".into());
        }
        if let Some(t) = self.target_queue {
            let max = limit_in_units(self.limit, self.mean_pkt_size);
            if !(t > 0.0 && t <= max) {
                return Err(format!("target_queue: must be in (0, {max}] (the limit in packets), got {t}"));
            }
        }
        Ok(())
    }

    /// The target in queue units (`target_queue`, or half the limit).
    pub fn target(&self) -> f64 {
        self.target_queue.unwrap_or_else(|| limit_in_units(self.limit, self.mean_pkt_size) / 2.0)
    }
}

/// The physical limit in the unit the average queue uses: packets, or `mean_pkt_size` packets.
pub(crate) fn limit_in_units(limit: Limit, mean_pkt_size: u32) -> f64 {
    match limit {
        Limit::Packets(n) => n as f64,
        Limit::Bytes(b) => b as f64 / mean_pkt_size as f64,
    }
}

/// A backlog in the unit the average queue uses.
pub(crate) fn queue_in_units(limit: Limit, packets: usize, bytes: u64, mean_pkt_size: u32) -> f64 {
    match limit {
        Limit::Packets(_) => packets as f64,
        Limit::Bytes(_) => bytes as f64 / mean_pkt_size as f64,
    }
}

/// The AP rule of the module docs: `min(1, P * AP * avg / (2 target))`.
pub fn adjust_probability(p: f64, avg: f64, target: f64, aggressiveness: f64) -> f64 {
    (p * aggressiveness * avg / (2.0 * target)).clamp(0.0, 1.0)
}

/// The queue at which a steady overload settles under [`adjust_probability`]: `2 target / AP`.
pub fn equilibrium_queue(target: f64, aggressiveness: f64) -> f64 {
    2.0 * target / aggressiveness
}

/// The FIFO of the rate-based disciplines together with its average: an accepted packet marks
/// the average busy and the queue emptying marks it idle (the idle-time decay depends on
/// both), so Rb-RED and Rb-RIO keep that coupling in one place.
pub(crate) struct AveragedFifo {
    q: PacketFifo,
    avg: QueueAverage,
    limit: Limit,
    mean_pkt_size: u32,
}

impl AveragedFifo {
    pub(crate) fn new(limit: Limit, w_q: f64, mean_pkt_size: u32, link_rate: Rate) -> AveragedFifo {
        let pkt_time = link_rate.tx_time(mean_pkt_size as u64);
        AveragedFifo { q: PacketFifo::default(), avg: QueueAverage::new(w_q, pkt_time), limit, mean_pkt_size }
    }

    /// Folds the queue an arrival sees at `now` into the average and returns the average.
    pub(crate) fn observe_arrival(&mut self, now: Time) -> f64 {
        let q = queue_in_units(self.limit, self.q.len(), self.q.bytes(), self.mean_pkt_size);
        self.avg.update(now, q)
    }

    /// Queues `pkt` if it fits in the physical limit, else an Overflow drop.
    pub(crate) fn admit(&mut self, pkt: Packet) -> Verdict {
        if !self.q.admits(self.limit, pkt.size) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.q.push(pkt);
        self.avg.set_busy();
        Verdict::Enqueued
    }

    pub(crate) fn pop(&mut self, now: Time) -> Option<Packet> {
        let p = self.q.pop()?;
        if self.q.is_empty() {
            self.avg.set_idle(now);
        }
        Some(p)
    }

    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.q.bytes()
    }
    pub(crate) fn average(&self) -> f64 {
        self.avg.value()
    }

    /// Sets the average and marks the queue busy, for tests that hold the average fixed.
    #[cfg(test)]
    pub(crate) fn force_average(&mut self, avg: f64) {
        self.avg.force(avg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ap_rule_settles_at_two_target_over_ap() {
        assert_eq!(adjust_probability(0.2, 50.0, 50.0, 2.0), 0.2);
        assert_eq!(adjust_probability(0.2, 40.0, 50.0, 2.5), 0.2);
        assert!(adjust_probability(0.2, 50.0, 50.0, 2.5) > 0.2);
        assert_eq!(adjust_probability(0.5, 100.0, 10.0, 2.0), 1.0);
        assert_eq!(adjust_probability(0.5, 0.0, 10.0, 2.0), 0.0);
        assert_eq!(equilibrium_queue(50.0, 2.5), 40.0);
    }
}
