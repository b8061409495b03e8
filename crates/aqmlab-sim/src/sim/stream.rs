//! The simulator side of the adaptive streaming app (`app::streaming`): pacing the server's
//! chunks onto UDP or into a TCP sender, the UDP receiver's reports, and random loss on the
//! Internet part of the path.

use super::{Event, ReceiveLog, Simulation, Transport, FEEDBACK_SIZE};
use crate::app::streaming::{Report, StreamServer};
use aqmlab_model::app::streaming_config::{StreamTransport, StreamingConfig};
use aqmlab_model::headers::{RTP_UDP_IP_HEADER_BYTES, UDP_IP_HEADER_BYTES};
use crate::tcp::{TcpReceiver, TcpSender, ISS_DATA};
use aqmlab_core::{Packet, Proto, Time};

/// An adaptive stream over UDP: the server, and the receiver's log and report state.
pub(super) struct UdpStream {
    pub(super) server: StreamServer,
    pub(super) running: bool,
    pub(super) packets_sent: u64,
    pub(super) log: ReceiveLog,
    received: u64,
    last_report: Time,
}

/// The transport of a streaming flow: a UDP stream, or a TCP sender the server writes into.
pub(super) fn build_transport(c: &StreamingConfig, start: Time) -> Result<Transport, String> {
    let server = StreamServer::new(c.clone(), start)?;
    Ok(match c.transport {
        StreamTransport::Udp => Transport::UdpStream(Box::new(UdpStream {
            server,
            running: false,
            packets_sent: 0,
            log: ReceiveLog::default(),
            received: 0,
            last_report: start,
        })),
        StreamTransport::Tcp => {
            let mut tx = TcpSender::new(&c.tcp);
            // Nothing to send until the server writes.
            tx.write_until(ISS_DATA);
            Transport::Tcp {
                tx: Box::new(tx),
                rx: TcpReceiver::new(&c.tcp),
                ecn: c.tcp.ecn,
                timer_at: None,
                stream: Some(Box::new(server)),
            }
        }
    })
}

/// The sequence up to which a TCP sender may send what the server has written: whole
/// segments while the clip goes on (a partial segment waits for the next write), everything
/// once the clip is all written.
fn tcp_write_end(written: u64, mss: u64, finished: bool) -> u64 {
    let segments = if finished { written.div_ceil(mss) } else { written / mss };
    ISS_DATA + segments * mss
}

impl Simulation {
    pub(super) fn on_stream_start(&mut self, f: u32) {
        if let Transport::UdpStream(u) = &mut self.flows[f as usize].transport {
            u.running = true;
        }
        self.on_stream_send(f);
    }

    /// The server's next chunk: a UDP packet, or a write into the TCP sender; then the server's
    /// adaptation check and the next send event.
    pub(super) fn on_stream_send(&mut self, f: u32) {
        let now = self.now;
        let next = match &mut self.flows[f as usize].transport {
            Transport::UdpStream(u) => {
                if !u.running {
                    return;
                }
                u.server.check_silence(now);
                let Some((size, seq, next)) = u.server.next_chunk(now) else { return };
                u.packets_sent += 1;
                let mut p = self.new_packet(f, true);
                p.proto = Proto::Udp;
                p.size = size;
                p.payload = size - RTP_UDP_IP_HEADER_BYTES;
                p.seq = seq;
                self.emit(p);
                next
            }
            Transport::Tcp { tx, stream: Some(s), .. } => {
                if s.stopped() {
                    return; // the sender keeps only what was written before the stop
                }
                let next = s.next_chunk(now).map(|(_, _, next)| next);
                let mss = s.config().tcp.mss as u64;
                tx.write_until(tcp_write_end(s.written_bytes, mss, s.finished()));
                s.check_backlog(tx.snd_una() - ISS_DATA, now);
                self.tcp_send(f, |tx, now, out| tx.send_available(now, out));
                match next {
                    Some(t) => t,
                    None => return,
                }
            }
            _ => return,
        };
        self.events.schedule(next, Event::StreamSend(f));
    }

    /// A UDP stream packet arrived: at the receiver (log it, maybe report) or at the server (a
    /// report).
    pub(super) fn on_stream_packet(&mut self, f: u32, p: Packet, to_receiver: bool) {
        let now = self.now;
        let Transport::UdpStream(u) = &mut self.flows[f as usize].transport else { return };
        if !to_receiver {
            u.server.on_report(Report { received: p.ack, seq: p.seq }, now);
            return;
        }
        u.log.push(&p, now);
        u.received += 1;
        let interval = Time(u.server.config().report_interval_ns);
        if now - u.last_report < interval {
            return;
        }
        u.last_report = now;
        let received = u.received;
        let mut r = self.new_packet(f, false);
        r.proto = Proto::Udp;
        r.size = FEEDBACK_SIZE;
        r.payload = FEEDBACK_SIZE - UDP_IP_HEADER_BYTES;
        r.ack = received;
        r.seq = p.seq;
        self.emit(r);
    }

    /// Whether packet `p`, leaving its sender, is lost on the Internet part of the path.
    pub(super) fn lost_on_path(&mut self, p: &Packet) -> bool {
        let flow = &mut self.flows[p.flow as usize];
        flow.path_loss > 0.0 && p.src == flow.src && flow.path_rng.bernoulli(flow.path_loss)
    }
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
