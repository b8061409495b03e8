//! Constant-bit-rate UDP: one packet of a fixed size every `size / rate`.

use super::super::network::Network;
use super::{sample_without_window, Application, FlowTotals};
use aqmlab_core::{Ecn, Packet, Proto, Rate, Time};
use aqmlab_model::headers::UDP_IP_HEADER_BYTES;
use aqmlab_model::record::FlowSample;

/// The only timer: the next packet is due.
const SEND: u8 = 0;

pub(super) struct Cbr {
    interval: Time,
    size: u32,
    /// The ECN codepoint of every packet.
    ecn: Ecn,
    next_seq: u64,
    running: bool,
    rx_bytes: u64,
}

impl Cbr {
    pub(super) fn new(rate_bps: u64, packet_size: u32, ecn: Ecn) -> Cbr {
        Cbr { interval: Rate(rate_bps).tx_time(packet_size as u64), size: packet_size, ecn, next_seq: 0, running: false, rx_bytes: 0 }
    }

    fn send(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if !self.running {
            return;
        }
        self.next_seq += 1;
        let (size, seq, interval) = (self.size, self.next_seq - 1, self.interval);
        let class = net.draw_class(f);
        let mut p = net.udp_packet(f, true, size, UDP_IP_HEADER_BYTES, seq);
        p.class = class;
        p.ecn = self.ecn;
        net.emit(p);
        net.schedule(now + interval, f, SEND);
    }
}

impl Application for Cbr {
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

    fn on_packet(&mut self, _f: u32, p: Packet, _to_receiver: bool, _net: &mut Network) {
        self.rx_bytes += p.payload as u64;
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.next_seq, delivered_bytes: self.rx_bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.rx_bytes, 0)
    }
}
