//! Flow identification for the per-flow disciplines (SQF, DRR, PFQ, FQ-CoDel).
//!
//! **Flow key.** Bonald, Muscariello and Ostallo ("Self-Prioritization of Audio and Video
//! Traffic", ICC 2011, section III-A) identify a flow "either through the 5-tuple of the IP
//! header, or through some pre-defined part of it", e.g. the source port alone on a user's
//! upstream so that all packets of one application (all peers of a P2P swarm) form one flow.
//! [`FlowKeyConfig`] lists the header fields that form the key; the default is the full
//! 5-tuple (src, dst, sport, dport, proto). The key is a `u64`. When the chosen fields total
//! at most 64 bits (addresses and `flow` count 32, ports 16, proto 8: e.g. `["sport"]`,
//! `["src", "dst"]`, `["dst", "sport", "dport"]`) they are packed exactly, so distinct
//! tuples never share a queue; wider keys such as the full 5-tuple (104 bits) are folded with a
//! fixed SplitMix64 chain, so two flows share a queue only on a 64-bit collision (about
//! n^2 / 2^65 for n simultaneously active flows, 3e-12 for n = 10 000). The order in which
//! fields are listed does not matter.
//!

use crate::packet::{Packet, Proto};
use serde::{Deserialize, Serialize};
use std::hash::Hasher;

/// A header field that can be part of a flow key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowField {
    /// Source address (the engine's node id).
    Src,
    /// Destination address.
    Dst,
    /// Source port.
    Sport,
    /// Destination port.
    Dport,
    /// Transport protocol.
    Proto,
    /// The engine's own flow index ([`Packet::flow`]): exact in the simulator, but not a header
    /// field a real router could see.
    Flow,
}

impl FlowField {
    pub const ALL: [FlowField; 6] = [FlowField::Src, FlowField::Dst, FlowField::Sport, FlowField::Dport, FlowField::Proto, FlowField::Flow];

    pub fn name(self) -> &'static str {
        match self {
            FlowField::Src => "src",
            FlowField::Dst => "dst",
            FlowField::Sport => "sport",
            FlowField::Dport => "dport",
            FlowField::Proto => "proto",
            FlowField::Flow => "flow",
        }
    }

    fn bits(self) -> u32 {
        match self {
            FlowField::Src | FlowField::Dst | FlowField::Flow => 32,
            FlowField::Sport | FlowField::Dport => 16,
            FlowField::Proto => 8,
        }
    }

    fn value(self, p: &Packet) -> u64 {
        match self {
            FlowField::Src => p.src as u64,
            FlowField::Dst => p.dst as u64,
            FlowField::Sport => p.sport as u64,
            FlowField::Dport => p.dport as u64,
            FlowField::Proto => match p.proto {
                Proto::Tcp => 6,
                Proto::Udp => 17,
            },
            FlowField::Flow => p.flow as u64,
        }
    }
}

/// Which header fields identify a flow. Scenario form: `flow_key = { fields = ["sport"] }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowKeyConfig {
    /// Fields forming the key, in any order; default the 5-tuple src, dst, sport, dport, proto.
    pub fields: Vec<FlowField>,
}

impl Default for FlowKeyConfig {
    fn default() -> Self {
        FlowKeyConfig { fields: vec![FlowField::Src, FlowField::Dst, FlowField::Sport, FlowField::Dport, FlowField::Proto] }
    }
}

impl FlowKeyConfig {
    /// The 5-tuple (the default).
    pub fn five_tuple() -> Self {
        Self::default()
    }

    /// Any subset of the fields, e.g. `FlowKeyConfig::of(&[FlowField::Sport])`.
    pub fn of(fields: &[FlowField]) -> Self {
        FlowKeyConfig { fields: fields.to_vec() }
    }

    /// Errors start with `flow_key.fields` so that a discipline can return them unchanged.
    pub fn validate(&self) -> Result<(), String> {
        if self.fields.is_empty() {
            return Err("flow_key.fields: must list at least one of src, dst, sport, dport, proto, flow".into());
        }
        for (i, f) in self.fields.iter().enumerate() {
            if self.fields[..i].contains(f) {
                return Err(format!("flow_key.fields: {:?} is listed twice", f.name()));
            }
        }
        Ok(())
    }
}

/// [`FlowKeyConfig`] compiled for per-packet use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKeyer {
    /// Bit i set when `FlowField::ALL[i]` is part of the key.
    mask: u8,
    /// Whether the chosen fields fit in 64 bits and are packed without hashing.
    exact: bool,
}

impl FlowKeyer {
    pub fn new(cfg: &FlowKeyConfig) -> FlowKeyer {
        let mut mask = 0u8;
        for f in &cfg.fields {
            mask |= 1 << (*f as u8);
        }
        let bits: u32 = FlowField::ALL.iter().filter(|f| mask & (1 << (**f as u8)) != 0).map(|f| f.bits()).sum();
        FlowKeyer { mask, exact: bits <= 64 }
    }

    /// The flow key of `p`.
    pub fn key(&self, p: &Packet) -> u64 {
        let mut k: u64 = 0;
        for (i, f) in FlowField::ALL.iter().enumerate() {
            if self.mask & (1 << i) == 0 {
                continue;
            }
            let v = f.value(p);
            k = if self.exact {
                // Shifting by the width keeps the packing injective; `checked_shl` only guards
                // the 64-bit case where k is still 0.
                k.checked_shl(f.bits()).unwrap_or(0) | v
            } else {
                splitmix64(k ^ v ^ ((i as u64) << 56))
            };
        }
        k
    }
}

/// The flow key of `p` under `cfg` (see the module docs for exactness).
pub fn flow_key(cfg: &FlowKeyConfig, p: &Packet) -> u64 {
    FlowKeyer::new(cfg).key(p)
}

pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A deterministic hasher for flow keys (exactly packed keys are not well spread on their own).
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = splitmix64(self.0 ^ *b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = splitmix64(self.0 ^ v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(src: u32, dst: u32, sport: u16, dport: u16, proto: Proto) -> Packet {
        Packet { src, dst, sport, dport, proto, size: 100, ..Packet::default() }
    }

    #[test]
    fn five_tuple_is_the_default_and_tells_every_field_apart() {
        let k = FlowKeyer::new(&FlowKeyConfig::default());
        let base = tuple(1, 2, 3, 4, Proto::Tcp);
        let variants = [
            tuple(9, 2, 3, 4, Proto::Tcp),
            tuple(1, 9, 3, 4, Proto::Tcp),
            tuple(1, 2, 9, 4, Proto::Tcp),
            tuple(1, 2, 3, 9, Proto::Tcp),
            tuple(1, 2, 3, 4, Proto::Udp),
            tuple(2, 1, 4, 3, Proto::Tcp), // the reverse direction is another flow
        ];
        for v in variants {
            assert_ne!(k.key(&base), k.key(&v), "{v:?}");
        }
        // Fields outside the key do not matter.
        let mut same = base;
        same.flow = 77;
        same.size = 1500;
        same.class = 3;
        assert_eq!(k.key(&base), k.key(&same));
    }

    #[test]
    fn source_port_aggregates_all_destinations() {
        let cfg = FlowKeyConfig::of(&[FlowField::Sport]);
        let a = tuple(1, 2, 5000, 80, Proto::Tcp);
        let b = tuple(1, 7, 5000, 6881, Proto::Udp);
        let c = tuple(1, 2, 5001, 80, Proto::Tcp);
        assert_eq!(flow_key(&cfg, &a), flow_key(&cfg, &b));
        assert_ne!(flow_key(&cfg, &a), flow_key(&cfg, &c));
        // Packed exactly: the key is the port itself.
        assert_eq!(flow_key(&cfg, &a), 5000);
    }

    #[test]
    fn field_order_does_not_matter_and_small_keys_are_exact() {
        let a = FlowKeyConfig::of(&[FlowField::Dport, FlowField::Sport, FlowField::Src]);
        let b = FlowKeyConfig::of(&[FlowField::Src, FlowField::Sport, FlowField::Dport]);
        let p = tuple(0xdead_beef, 5, 0x1234, 0x5678, Proto::Tcp);
        assert_eq!(flow_key(&a, &p), flow_key(&b, &p));
        assert_eq!(flow_key(&a, &p), (0xdead_beef << 32) | (0x1234 << 16) | 0x5678);
        // src + dst is exactly 64 bits: still packed, injective.
        let sd = FlowKeyConfig::of(&[FlowField::Src, FlowField::Dst]);
        assert_eq!(flow_key(&sd, &tuple(u32::MAX, 1, 0, 0, Proto::Tcp)), (u32::MAX as u64) << 32 | 1);
    }

    #[test]
    fn hashed_five_tuple_keys_do_not_collide_on_a_dense_grid() {
        let k = FlowKeyer::new(&FlowKeyConfig::default());
        let mut seen = std::collections::HashSet::new();
        for src in 0..20u32 {
            for dst in 0..20u32 {
                for sport in 0..25u16 {
                    for proto in [Proto::Tcp, Proto::Udp] {
                        assert!(seen.insert(k.key(&tuple(src, dst, 10_000 + sport, 80, proto))));
                    }
                }
            }
        }
    }

    #[test]
    fn key_config_validation_names_the_field() {
        let e = FlowKeyConfig { fields: vec![] }.validate().unwrap_err();
        assert!(e.starts_with("flow_key.fields"), "{e}");
        let e = FlowKeyConfig::of(&[FlowField::Sport, FlowField::Sport]).validate().unwrap_err();
        assert!(e.starts_with("flow_key.fields") && e.contains("sport"), "{e}");
        assert!(FlowKeyConfig::default().validate().is_ok());
    }
}
