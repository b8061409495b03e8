//! A ping-like latency probe: a small request every `interval`, echoed by the receiver at
//! once, its round trip recorded by the sender. Flent's RRUL test measures latency under load
//! with four such probes (ICMP echo and three UDP round-trip probes, irtt or netperf UDP_RR);
//! in the simulator all four are UDP-like datagrams between their own two hosts, so a
//! flow-queueing discipline sees each as its own flow, as it sees ICMP and UDP in Linux.
//!
//! Like `ping -i` and `irtt -i`, requests leave on a fixed schedule whether or not replies
//! came back (no request waits for the previous reply, unlike netperf UDP_RR), so a probe
//! lost at the bottleneck is a missing round trip, not a stalled probe.

use super::super::network::Network;
use super::{sample_without_window, Application, FlowTotals};
use aqmlab_core::{Packet, Proto, Time};
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use aqmlab_model::record::{FlowSample, ProbesTable, Table};

/// The only timer: the next request is due.
const SEND: u8 = 0;

pub(super) struct Ping {
    interval: Time,
    size: u32,
    running: bool,
    /// Send time of request `seq`, at index `seq`.
    sent: Vec<Time>,
    /// Round trip of request `seq` once its reply is back.
    rtt: Vec<Option<Time>>,
    /// Request payload bytes the receiver got (the flows table's `delivered_bytes`).
    rx_bytes: u64,
}

impl Ping {
    pub(super) fn new(interval_ns: u64, packet_size: u32) -> Result<Ping, String> {
        if interval_ns == 0 {
            return Err("interval must be positive".into());
        }
        if packet_size < UDP_IP_HEADER_BYTES {
            return Err(format!("packet_size must be at least {UDP_IP_HEADER_BYTES} bytes (IP+UDP headers)"));
        }
        Ok(Ping { interval: Time(interval_ns), size: packet_size, running: false, sent: Vec::new(), rtt: Vec::new(), rx_bytes: 0 })
    }

    fn packet(&self, f: u32, seq: u64, from_sender: bool, net: &mut Network) -> Packet {
        let class = net.draw_class(f);
        let mut p = net.udp_packet(f, from_sender, self.size, UDP_IP_HEADER_BYTES, seq);
        p.class = class;
        p
    }

    fn send(&mut self, f: u32, net: &mut Network) {
        if !self.running {
            return;
        }
        let seq = self.sent.len() as u64;
        self.sent.push(net.now);
        self.rtt.push(None);
        let p = self.packet(f, seq, true, net);
        net.emit(p);
        net.schedule(net.now + self.interval, f, SEND);
    }
}

impl Application for Ping {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        self.send(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, _timer: u8, net: &mut Network) {
        self.send(f, net);
    }

    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if to_receiver {
            // The echo: a reply of the request's size and sequence number, sent at once.
            self.rx_bytes += p.payload as u64;
            let reply = self.packet(f, p.seq, false, net);
            net.emit(reply);
        } else if let Some(slot) = self.rtt.get_mut(p.seq as usize) {
            // A duplicated reply (an impaired link) keeps the first round trip.
            if slot.is_none() {
                *slot = Some(net.now - self.sent[p.seq as usize]);
            }
        }
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.sent.len() as u64, delivered_bytes: self.rx_bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.rx_bytes, 0)
    }

    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let mut t = ProbesTable::default();
        for (seq, (sent, rtt)) in self.sent.iter().zip(&self.rtt).enumerate() {
            t.push(f, seq as u64, sent.as_nanos(), rtt.map(|r| r.as_nanos()));
        }
        vec![("probes", t.into_table())]
    }
}
