//! An FTP-like bulk transfer: a TCP sender with unlimited data.

use super::super::network::Network;
use super::tcp::TcpConnection;
use super::{AppSetup, Application, FlowTotals};
use crate::tcp::TcpSender;
use aqmlab_core::{Packet, Proto};
use aqmlab_model::app::tcp_config::TcpConfig;
use aqmlab_model::record::{FlowSample, Table};

pub(super) struct Bulk {
    tcp: TcpConnection,
}

impl Bulk {
    pub(super) fn new(tcp: &TcpConfig, setup: &AppSetup) -> Bulk {
        Bulk { tcp: TcpConnection::new(tcp, setup) }
    }
}

impl Application for Bulk {
    fn proto(&self) -> Proto {
        Proto::Tcp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        if self.tcp.open(f, net) {
            self.tcp.send(f, net, |tx, now, out| tx.send_available(now, out));
        }
    }

    fn stop(&mut self) {
        self.tcp.tx.stop();
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        self.tcp.on_timer(f, timer, net);
    }

    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        self.tcp.on_packet(f, p, to_receiver, net);
    }

    fn totals(&self) -> FlowTotals {
        self.tcp.totals()
    }

    fn sample(&self) -> FlowSample {
        self.tcp.sample(0)
    }

    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        self.tcp.tables(f)
    }

    fn tcp_sender(&self) -> Option<&TcpSender> {
        Some(&self.tcp.tx)
    }
}
