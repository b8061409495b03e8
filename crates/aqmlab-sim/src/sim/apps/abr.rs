//! An adaptive-bitrate (DASH-like) client and its server over one persistent TCP connection.
//!
//! The client asks for segment k at the rung its algorithm chooses
//! (`aqmlab_model::app::abr`), the server answers with the segment's bytes on the forward
//! path, and the client's playback buffer (`abr::player`) fills as segments complete and
//! drains as it plays.
//!
//! The request. The simulator's TCP carries data one way only (sender to receiver; the
//! receiver sends pure ACKs), so a request is an application-level message in a packet of its
//! own on the reverse path: `request_size` IP bytes, TCP protocol, payload above zero (which
//! is how the server side tells it from an ACK), the segment index in `seq` and the rung in
//! `ack`. It crosses the reverse link and its queue like an ACK and can be lost there; it is
//! not retransmitted by TCP, so the client sends it again when no byte of the response has
//! arrived `request_timeout` after it (doubling each time), and the server answers only the
//! first copy of each request.
//!
//! The response. The simulator's TCP sends only whole `mss`-byte segments, so each response
//! occupies the segment's size rounded up to whole MSS in the byte stream (the padding of its
//! last packet is at most mss - 1 bytes, under 2 % of a 75 kB segment). The client knows the
//! size from the ladder (its manifest) and so where each response ends in the stream; the
//! segment is complete when the receiver has every byte up to there in order.
//!
//! Pacing. After a segment completes, the next is requested at once if it fits under
//! `max_buffer`, else when playback has drained enough room for it. The session starts at the
//! flow's start and ends at its stop (or the run's end), when the results are taken.

use super::super::network::Network;
use super::tcp::{TcpConnection, FIRST_APP_TIMER};
use super::{AppSetup, Application, FlowTotals};
use crate::sim::TCP_HEADER;
use crate::tcp::{TcpSender, ISS_DATA};
use aqmlab_core::packet::tcp_flags;
use aqmlab_core::{Packet, Proto, Time};
use aqmlab_model::app::abr::client::{Client, Next};
use aqmlab_model::app::abr_config::AbrConfig;
use aqmlab_model::app::frame_classes::{segment_key_bytes, SegmentMarks};
use aqmlab_model::record::{FlowSample, Table};

/// The pending request's response has not begun: send it again.
const REQUEST_TIMEOUT: u8 = FIRST_APP_TIMER;
/// The buffer has room for the next segment.
const NEXT_REQUEST: u8 = FIRST_APP_TIMER + 1;

/// The request being fetched: the transport's side of it (the decision's side is in the
/// model's `Client`).
struct InFlight {
    segment: usize,
    rung: usize,
    /// Stream sequence at which its response ends (exclusive).
    end_seq: u64,
    requests: u32,
    /// When the request is sent again, if no response has begun.
    timeout_at: Time,
    timeout_ns: u64,
}

pub(super) struct Abr {
    cfg: AbrConfig,
    tcp: TcpConnection,
    /// Client: decisions, playback buffer and results (shared with the emulator's client).
    client: Client,
    end: Time,
    running: bool,
    in_flight: Option<InFlight>,
    /// Client: where the next response begins in the stream.
    stream_end: u64,
    /// Server: the next segment it has not yet answered, and where its written data ends.
    served: usize,
    written_end: u64,
    requests_sent: u64,
}

impl Abr {
    pub(super) fn new(c: &AbrConfig, setup: &AppSetup) -> Result<Abr, String> {
        c.validate()?;
        let mut tcp = TcpConnection::new(&c.tcp, setup);
        tcp.tx.write_until(ISS_DATA); // nothing to send before a request
        if c.mark_frames {
            tcp.marks = Some(SegmentMarks::default());
        }
        Ok(Abr {
            client: Client::new(c, setup.start.as_nanos()),
            cfg: c.clone(),
            tcp,
            end: setup.end,
            running: false,
            in_flight: None,
            stream_end: ISS_DATA,
            served: 0,
            written_end: ISS_DATA,
            requests_sent: 0,
        })
    }

    /// Bytes a response of `size` bytes occupies in the stream: whole MSS.
    fn stream_bytes(&self, size: u64) -> u64 {
        let mss = self.cfg.tcp.mss as u64;
        size.div_ceil(mss) * mss
    }

    /// Client: chooses the next segment's rung and sends its request, or waits for room.
    fn request_next(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        if !self.running {
            return;
        }
        match self.client.next(now.as_nanos()) {
            Next::Done | Next::Busy => {}
            Next::Wait(wait) => net.schedule(now + Time(wait), f, NEXT_REQUEST),
            Next::Fetch { segment, rung, size } => {
                self.stream_end += self.stream_bytes(size);
                let timeout_ns = self.cfg.request_timeout_ns;
                self.in_flight = Some(InFlight { segment, rung, end_seq: self.stream_end, requests: 0, timeout_at: now, timeout_ns });
                self.send_request(f, net);
            }
        }
    }

    /// Client: (re)sends the pending request and arms its timeout.
    fn send_request(&mut self, f: u32, net: &mut Network) {
        let now = net.now;
        let req = self.in_flight.as_mut().expect("a request is pending");
        req.requests += 1;
        if req.requests > 1 {
            req.timeout_ns = req.timeout_ns.saturating_mul(2);
        }
        req.timeout_at = now + Time(req.timeout_ns);
        let (segment, rung, at) = (req.segment, req.rung, req.timeout_at);
        let mut p = net.new_packet(f, false);
        p.proto = Proto::Tcp;
        p.size = self.cfg.request_size;
        p.payload = self.cfg.request_size - TCP_HEADER;
        p.seq = segment as u64;
        p.ack = rung as u64;
        p.tcp_flags = tcp_flags::ACK | tcp_flags::PSH;
        net.emit(p);
        self.requests_sent += 1;
        net.schedule(at, f, REQUEST_TIMEOUT);
    }

    /// Client: the request's timeout fires; sends it again if no byte of the response came.
    fn on_request_timeout(&mut self, f: u32, net: &mut Network) {
        let Some(req) = &self.in_flight else { return };
        if req.timeout_at != net.now || !self.running {
            return; // superseded, or answered
        }
        let response_start = req.end_seq - self.stream_bytes(self.cfg.ladder.size(req.rung, req.segment));
        if self.tcp.rx.rcv_nxt() > response_start {
            return; // the response has begun: TCP recovers the rest
        }
        self.send_request(f, net);
    }

    /// Server: a request arrives; writes the segment into the sender unless already answered.
    fn on_request(&mut self, f: u32, p: &Packet, net: &mut Network) {
        let (segment, rung) = (p.seq as usize, p.ack as usize);
        if segment != self.served {
            return; // a copy of a request already answered
        }
        self.served += 1;
        let size = self.cfg.ladder.size(rung, segment);
        if let Some(marks) = &mut self.tcp.marks {
            // The segment's IDR picture leads its response (frame_classes.rs says why and how big).
            marks.push(self.written_end, segment_key_bytes(size, self.cfg.ladder.segment_duration_ns));
        }
        self.written_end += self.stream_bytes(size);
        self.tcp.tx.write_until(self.written_end);
        self.tcp.send(f, net, |tx, now, out| tx.send_available(now, out));
    }

    /// Client: data arrived in order up to `rcv_nxt`; completes the segment if it is all in.
    fn check_complete(&mut self, f: u32, net: &mut Network) {
        let Some(req) = &self.in_flight else { return };
        if self.tcp.rx.rcv_nxt() < req.end_seq {
            return;
        }
        let req = self.in_flight.take().unwrap();
        self.client.complete(net.now.as_nanos(), req.requests);
        self.request_next(f, net);
    }
}

impl Application for Abr {
    fn proto(&self) -> Proto {
        Proto::Tcp
    }

    fn start(&mut self, f: u32, net: &mut Network) {
        self.running = true;
        self.request_next(f, net);
    }

    fn stop(&mut self) {
        self.running = false;
    }

    fn on_timer(&mut self, f: u32, timer: u8, net: &mut Network) {
        if self.tcp.on_timer(f, timer, net) {
            return;
        }
        match timer {
            REQUEST_TIMEOUT => self.on_request_timeout(f, net),
            _ => self.request_next(f, net),
        }
    }

    fn on_packet(&mut self, f: u32, p: Packet, to_receiver: bool, net: &mut Network) {
        if !to_receiver && p.payload > 0 {
            self.on_request(f, &p, net);
            return;
        }
        self.tcp.on_packet(f, p, to_receiver, net);
        if to_receiver {
            self.check_complete(f, net);
        }
    }

    fn totals(&self) -> FlowTotals {
        self.tcp.totals()
    }

    fn sample(&self) -> FlowSample {
        self.tcp.sample(self.client.last_rung().unwrap_or(0) as u32)
    }

    fn tables(&self, f: u32) -> Vec<(&'static str, Table)> {
        let mut tables = self.client.tables(f, self.end.as_nanos(), &self.cfg.ladder);
        tables.extend(self.tcp.tables(f));
        tables
    }

    fn tcp_sender(&self) -> Option<&TcpSender> {
        Some(&self.tcp.tx)
    }
}
