//! From parsed headers to an `aqmlab_core::Packet`: flow id, priority class, fields.
//!
//! Known flows (the scenario's, told by `FlowPort`) are recognized by their server port: the
//! destination port on the way forward, the source port on the way back, so a TCP flow's
//! data and its ACKs share one flow id as in the simulator. Other traffic gets ids from
//! `FIRST_DYNAMIC_FLOW` on per 5-tuple, up to `MAX_DYNAMIC_FLOWS` (bounded memory however
//! many tuples a misbehaving host invents), after which it shares `OTHER_FLOW`.

use crate::config::{ClassifyConfig, FlowPort, FlowProto};
use crate::parse::{IpInfo, Transport};
use aqmlab_core::{Ecn, FrameType, Packet, Proto, Time};
use std::collections::HashMap;

pub const FIRST_DYNAMIC_FLOW: u32 = 1 << 20;
pub const MAX_DYNAMIC_FLOWS: usize = 65_536;
/// Flow id of ICMP and other non-TCP/UDP packets, and of unknown flows beyond the table.
pub const OTHER_FLOW: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

pub struct Classifier {
    class_of_dscp: [u8; 64],
    known: HashMap<(FlowProto, u16), (u32, Time, Time)>,
    dynamic: HashMap<(u8, u32, u32, u16, u16), u32>,
    other_delay: Time,
}

/// What the router needs besides the packet: the extra delay of the flow in this direction.
pub struct Classified {
    pub packet: Packet,
    pub extra_delay: Time,
}

impl Classifier {
    pub fn new(cfg: &ClassifyConfig, flows: &[FlowPort]) -> Classifier {
        let mut class_of_dscp = [cfg.default_class; 64];
        for &(dscp, class) in &cfg.dscp_classes {
            class_of_dscp[(dscp & 63) as usize] = class;
        }
        let known = flows
            .iter()
            .map(|f| {
                let delays = (Time(f.extra_forward_delay_ns), Time(f.extra_reverse_delay_ns));
                ((f.proto, f.port), (f.flow, delays.0, delays.1))
            })
            .collect();
        Classifier { class_of_dscp, known, dynamic: HashMap::new(), other_delay: Time(cfg.other_extra_delay_ns) }
    }

    pub fn classify(&mut self, info: &IpInfo, dir: Direction, uid: u64, now: Time) -> Classified {
        let (proto, sport, dport, seq, ack, flags, payload) = match info.transport {
            Transport::Tcp { sport, dport, seq, ack, flags, payload } => (Proto::Tcp, sport, dport, seq as u64, ack as u64, flags, payload),
            Transport::Udp { sport, dport, payload } => (Proto::Udp, sport, dport, info.app.map_or(0, |a| a.seq as u64), 0, 0, payload),
            Transport::Other { .. } => (Proto::Udp, 0, 0, 0, 0, 0, 0),
        };
        let (flow, extra_delay) = self.flow_of(info, proto, sport, dport, dir);
        let app = info.app.unwrap_or_default();
        let packet = Packet {
            uid,
            size: info.ip_len,
            flow,
            src: info.src,
            dst: info.dst,
            sport,
            dport,
            proto,
            class: self.class_of_dscp[(info.dscp & 63) as usize],
            dscp: info.dscp,
            ecn: match info.ecn {
                1 => Ecn::Ect1,
                2 => Ecn::Ect0,
                3 => Ecn::Ce,
                _ => Ecn::NotEct,
            },
            seq,
            ack,
            payload,
            tcp_flags: flags,
            sent_at: now,
            frame_id: app.frame_id,
            frame_type: match app.frame_type {
                1 => FrameType::I,
                2 => FrameType::P,
                3 => FrameType::B,
                _ => FrameType::None,
            },
            frag_index: app.frag_index,
            frag_count: app.frag_count,
            ..Packet::default()
        };
        Classified { packet, extra_delay }
    }

    fn flow_of(&mut self, info: &IpInfo, proto: Proto, sport: u16, dport: u16, dir: Direction) -> (u32, Time) {
        let protocol = match info.transport {
            Transport::Other { protocol } => protocol,
            _ => match proto {
                Proto::Tcp => 6,
                Proto::Udp => 17,
            },
        };
        if let Transport::Other { .. } = info.transport {
            return (OTHER_FLOW, self.other_delay);
        }
        let fp = if proto == Proto::Tcp { FlowProto::Tcp } else { FlowProto::Udp };
        let server_port = if dir == Direction::Forward { dport } else { sport };
        if let Some(&(flow, fwd, rev)) = self.known.get(&(fp, server_port)) {
            return (flow, if dir == Direction::Forward { fwd } else { rev });
        }
        // Unknown: one id per connection, both directions alike (addresses and ports ordered).
        let (a, b) = if (info.src, sport) <= (info.dst, dport) {
            ((info.src, sport), (info.dst, dport))
        } else {
            ((info.dst, dport), (info.src, sport))
        };
        let key = (protocol, a.0, b.0, a.1, b.1);
        let next = FIRST_DYNAMIC_FLOW + self.dynamic.len() as u32;
        if let Some(&id) = self.dynamic.get(&key) {
            return (id, Time::ZERO);
        }
        if self.dynamic.len() >= MAX_DYNAMIC_FLOWS {
            return (OTHER_FLOW, Time::ZERO);
        }
        self.dynamic.insert(key, next);
        (next, Time::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::{parse_frame, tests::ipv4_frame, Parsed, IPPROTO_TCP, IPPROTO_UDP};

    fn info(frame: &[u8]) -> IpInfo {
        match parse_frame(frame).unwrap() {
            Parsed::Ip(i) => i,
            other => panic!("{other:?}"),
        }
    }

    fn flows() -> Vec<FlowPort> {
        vec![FlowPort { proto: FlowProto::Tcp, port: 5001, flow: 7, extra_forward_delay_ns: 3, extra_reverse_delay_ns: 4 }]
    }

    #[test]
    fn data_and_acks_of_a_known_flow_share_its_id_and_get_their_delays() {
        let mut c = Classifier::new(&ClassifyConfig::default(), &flows());
        let data = info(&ipv4_frame(IPPROTO_TCP, 40000, 5001, 0, &[0; 100]));
        let ack = info(&ipv4_frame(IPPROTO_TCP, 5001, 40000, 0, &[]));
        let d = c.classify(&data, Direction::Forward, 1, Time::ZERO);
        let a = c.classify(&ack, Direction::Reverse, 2, Time::ZERO);
        assert_eq!((d.packet.flow, d.extra_delay), (7, Time(3)));
        assert_eq!((a.packet.flow, a.extra_delay), (7, Time(4)));
        assert_eq!((d.packet.size, d.packet.payload, d.packet.proto), (140, 100, Proto::Tcp));
    }

    #[test]
    fn packets_without_ports_get_the_configured_extra_delay() {
        let icmp = info(&ipv4_frame(1, 0, 0, 0, &[0; 56]));
        let mut plain = Classifier::new(&ClassifyConfig::default(), &flows());
        assert_eq!(plain.classify(&icmp, Direction::Forward, 0, Time::ZERO).extra_delay, Time::ZERO);
        let cfg = ClassifyConfig { other_extra_delay_ns: 2_000_000, ..ClassifyConfig::default() };
        let mut c = Classifier::new(&cfg, &flows());
        for dir in [Direction::Forward, Direction::Reverse] {
            let got = c.classify(&icmp, dir, 0, Time::ZERO);
            assert_eq!((got.packet.flow, got.extra_delay), (OTHER_FLOW, Time(2_000_000)));
        }
        // Known flows keep their own delays.
        let data = info(&ipv4_frame(IPPROTO_TCP, 40000, 5001, 0, &[0; 100]));
        assert_eq!(c.classify(&data, Direction::Forward, 1, Time::ZERO).extra_delay, Time(3));
    }

    #[test]
    fn dscp_maps_to_class_by_af_drop_precedence() {
        let mut c = Classifier::new(&ClassifyConfig::default(), &[]);
        for (dscp, class) in [(10u8, 3u8), (12, 2), (14, 1), (0, 0), (46, 0)] {
            let i = info(&ipv4_frame(IPPROTO_UDP, 1, 2, dscp << 2, &[]));
            assert_eq!(c.classify(&i, Direction::Forward, 0, Time::ZERO).packet.class, class, "dscp {dscp}");
        }
    }

    #[test]
    fn unknown_connections_get_distinct_stable_ids() {
        let mut c = Classifier::new(&ClassifyConfig::default(), &[]);
        let a = info(&ipv4_frame(IPPROTO_UDP, 1000, 2000, 0, &[]));
        let mut back = ipv4_frame(IPPROTO_UDP, 2000, 1000, 0, &[]);
        back[26..30].copy_from_slice(&[10, 77, 0, 2]); // swap the addresses: the real reply
        back[30..34].copy_from_slice(&[10, 77, 0, 1]);
        let a_back = info(&back);
        let b = info(&ipv4_frame(IPPROTO_UDP, 1001, 2000, 0, &[]));
        let fa = c.classify(&a, Direction::Forward, 0, Time::ZERO).packet.flow;
        let fb = c.classify(&b, Direction::Forward, 0, Time::ZERO).packet.flow;
        assert_eq!(fa, FIRST_DYNAMIC_FLOW);
        assert_eq!(fb, FIRST_DYNAMIC_FLOW + 1);
        assert_eq!(c.classify(&a, Direction::Forward, 0, Time::ZERO).packet.flow, fa);
        assert_eq!(c.classify(&a_back, Direction::Reverse, 0, Time::ZERO).packet.flow, fa);
    }

    #[test]
    fn the_dynamic_table_is_bounded() {
        let mut c = Classifier::new(&ClassifyConfig::default(), &[]);
        for p in 0..(MAX_DYNAMIC_FLOWS as u32 + 10) {
            let i = info(&ipv4_frame(IPPROTO_UDP, (p % 60000) as u16, (p / 60000) as u16 + 1, 0, &[]));
            c.classify(&i, Direction::Forward, 0, Time::ZERO);
        }
        assert_eq!(c.dynamic.len(), MAX_DYNAMIC_FLOWS);
        let i = info(&ipv4_frame(IPPROTO_UDP, 65000, 9, 0, &[]));
        assert_eq!(c.classify(&i, Direction::Forward, 0, Time::ZERO).packet.flow, OTHER_FLOW);
    }
}
