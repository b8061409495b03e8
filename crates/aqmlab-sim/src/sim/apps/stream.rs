//! The adaptive streaming app (`app::streaming`) in the simulation: the server's chunks paced
//! onto UDP, with the receiver's reports, or written into a TCP sender.

use super::super::network::Network;
use super::receive_log::ReceiveLog;
use super::tcp::{TcpConnection, FIRST_APP_TIMER};
use super::{sample_without_window, AppSetup, Application, FlowTotals};
use crate::app::streaming::{Report, StreamServer};
use crate::sim::FEEDBACK_SIZE;
use crate::tcp::{TcpSender, ISS_DATA};
use aqmlab_core::{Packet, Proto, Time};
use aqmlab_model::app::streaming_config::{StreamTransport, StreamingConfig};
use aqmlab_model::headers::{RTP_UDP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES};
use aqmlab_model::record::{FlowSample, Table};

/// A streaming flow over the transport its configuration names.
pub(super) fn build(c: &StreamingConfig, setup: &AppSetup) -> Result<Box<dyn Application>, String> {
    let server = StreamServer::new(c.clone(), setup.start)?;
    Ok(match c.transport {
        StreamTransport::Udp => Box::new(StreamOverUdp {
            server,
            running: false,
            packets_sent: 0,
            log: ReceiveLog::default(),
            received: 0,
            last_report: setup.start,
        }),
        StreamTransport::Tcp => {
            let mut tcp = TcpConnection::new(&c.tcp, setup);
            // Nothing to send until the server writes.
            tcp.tx.write_until(ISS_DATA);
            Box::new(StreamOverTcp { tcp, server })
        }
    })
}

/// The server's next chunk is due (over UDP: a packet; over TCP: a write).
const UDP_SEND: u8 = 0;
const TCP_WRITE: u8 = FIRST_APP_TIMER;

/// An adaptive stream over UDP: the server, and the receiver's log and report state.
struct StreamOverUdp {
    server: StreamServer,
    running: bool,
    packets_sent: u64,
    log: ReceiveLog,
    received: u64,
    last_report: Time,
}

impl StreamOverUdp {
    /// The server's next chunk as one UDP packet, after its adaptation check; then the next
    /// send event.
    fn on_send(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if !self.running {
            return;
        }
        self.server.check_silence(now);
        let Some((size, seq, next)) = self.server.next_chunk(now) else { return };
        self.packets_sent += 1;
        let p = net.udp_packet(f, true, size, RTP_UDP_IP_HEADER_BYTES, seq);
        net.emit(p);
        net.schedule(next, f, UDP_SEND);
    }
}

impl Application for StreamOverUdp {
    fn proto(&self) -> Proto {
        Proto::Udp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        self.on_send(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, _timer: u8, net: &mut Network) {
        self.on_send(f, net);
    }

    /// At the receiver: log the packet and report when the interval has passed. At the
    /// server: a report.
    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        let now = net.now;
        if !to_receiver {
            self.server.on_report(Report { received: p.ack, seq: p.seq }, now);
            return;
        }
        self.log.push(&p, now);
        self.received += 1;
        let interval = Time(self.server.config().report_interval_ns);
        if now - self.last_report < interval {
            return;
        }
        self.last_report = now;
        let received = self.received;
        let mut r = net.new_packet(f, false);
        r.proto = Proto::Udp;
        r.size = FEEDBACK_SIZE;
        r.payload = FEEDBACK_SIZE - UDP_IP_HEADER_BYTES;
        r.ack = received;
        r.seq = p.seq;
        net.emit(r);
    }

    fn totals(&self) -> FlowTotals {
        FlowTotals { packets_sent: self.packets_sent, delivered_bytes: self.log.bytes, ..FlowTotals::default() }
    }

    fn sample(&self) -> FlowSample {
        sample_without_window(self.log.bytes, self.server.level() as u32)
    }

    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        vec![self.log.media_table(f)]
    }
}

/// An adaptive stream over TCP: the server writes into the sender (app-limited).
struct StreamOverTcp {
    tcp: TcpConnection,
    server: StreamServer,
}

impl StreamOverTcp {
    /// The server's next chunk as a write into the TCP sender, after its adaptation check;
    /// then the next write event.
    fn on_write(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        let s = &mut self.server;
        if s.stopped() {
            return; // the sender keeps only what was written before the stop
        }
        let next = s.next_chunk(now).map(|(_, _, next)| next);
        let mss = s.config().tcp.mss as u64;
        let tx = &mut self.tcp.tx;
        tx.write_until(tcp_write_end(s.written_bytes, mss, s.finished()));
        s.check_backlog(tx.snd_una() - ISS_DATA, now);
        self.tcp.send(f, net, |tx, now, out| tx.send_available(now, out));
        if let Some(t) = next {
            net.schedule(t, f, TCP_WRITE);
        }
    }
}

impl Application for StreamOverTcp {
    fn proto(&self) -> Proto {
        Proto::Tcp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.on_write(f, net);
    }

    fn stop(&mut self) {
        self.tcp.tx.stop();
        self.server.stop();
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        if !self.tcp.on_timer(f, timer, net) {
            self.on_write(f, net);
        }
    }

    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        self.tcp.on_packet(f, p, to_receiver, net);
    }

    fn totals(&self) -> FlowTotals {
        self.tcp.totals()
    }

    fn sample(&self) -> FlowSample {
        self.tcp.sample(self.server.level() as u32)
    }

    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        self.tcp.tables(f)
    }

    fn tcp_sender(&self) -> Option<&TcpSender> {
        Some(&self.tcp.tx)
    }
}

/// The sequence up to which a TCP sender may send what the server has written: whole
/// segments while the clip goes on (a partial segment waits for the next write), everything
/// once the clip is all written.
fn tcp_write_end(written: u64, mss: u64, finished: bool) -> u64 {
    let segments = if finished { written.div_ceil(mss) } else { written / mss };
    ISS_DATA + segments * mss
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_writes_whole_segments_until_the_clip_ends() {
        assert_eq!(tcp_write_end(2999, 1000, false), ISS_DATA + 2000);
        assert_eq!(tcp_write_end(2999, 1000, true), ISS_DATA + 3000);
        assert_eq!(tcp_write_end(0, 1000, false), ISS_DATA);
    }
}
