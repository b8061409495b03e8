//! An adaptive streaming server and player, modelled on what Chung, Zhu and Claypool measured
//! of RealPlayer/RealServer ("FairPlayer or FoulPlayer?", WPI-CS-TR-02-17, 2002; section
//! numbers below are that paper's).
//!
//! **The clip.** A clip of `clip_ns` of content encoded at one or more levels (`levels_bps`,
//! ascending; SureStream, section II). A one-level clip cannot scale (section V-F: about 35 %
//! of the clips). Streaming starts at the highest level: the paper's Figure 18 shows every
//! clip starting above the 35 Kbps link and stepping down.
//!
//! **Buffering, then playout** (sections IV and V-D). The server keeps a lead of `preroll_ns`
//! of content over the player's clock (which runs from the stream start). While the lead is
//! short of it, the server sends at `buffer_multiple` times the level rate (capped at
//! `buffer_rate_cap_bps` when that is set); afterwards it sends at the level rate, so the lead
//! stays put: steady playout. Content is cut into chunks of `packet_size` bytes at the IP
//! layer, one chunk every `8 * packet_size / send rate`.
//!
//! **UDP** (section V-F: "RealPlayer over UDP ... can more easily detect packet losses and
//! measure round-trip times"): each chunk is one packet with an RTP-like sequence number. The
//! receiver sends a report at the first arrival after `report_interval_ns` since its last
//! report, carrying its received-packet count and the sequence number of the packet just
//! received; the server gets the interval's loss from the counts and an RTT sample from the
//! send time of that packet. It steps **down one level** on a report whose interval loss
//! exceeds `loss_down`, or when no report came for `silence_reports` report intervals (every
//! packet of an interval lost). It steps **up one level** after `up_after_ns` at one level with
//! every report's loss at most `loss_up` and the RTT at most `rtt_up_factor` times the smallest
//! RTT seen (RTT only holds back probing while the queue is long).
//!
//! **TCP** (section V-F: "RealPlayer over TCP can only measure application level goodput"):
//! the same chunks are written into the flow's TCP sender, which sends them when its window
//! allows (an app-limited sender; the socket buffer is unbounded, so what TCP cannot carry
//! waits as backlog). Every `tcp_check_ns` the server looks at its own backlog (written but
//! not yet acknowledged) and the goodput acknowledged since the last look. When the backlog
//! holds more than `tcp_backlog_down_ns` of content at the current level, it jumps **at once
//! to the highest level at or below that goodput** (one large change, as the paper saw: "TCP
//! ... took more than 20 seconds to adjust the rate, and then it did so in one, large encoding
//! rate change"). It steps up one level after `up_after_ns` with the backlog below one
//! check interval of content. Content already written stays in the socket buffer at its old
//! rate ("the server fills available TCP buffers with high quality video frames that must be
//! delivered by the transport layer before it is able to scale down").
//!
//! The server is pure: time comes in, chunks and level changes go out, no I/O.

use aqmlab_core::Time;
use aqmlab_model::app::streaming_config::{StreamTransport, StreamingConfig};

/// A UDP receiver report as the server reads it.
#[derive(Clone, Copy, Debug)]
pub struct Report {
    /// Packets the receiver got so far.
    pub received: u64,
    /// Sequence number of the packet whose arrival triggered the report.
    pub seq: u64,
}

#[derive(Debug)]
pub struct StreamServer {
    cfg: StreamingConfig,
    start: Time,
    level: usize,
    /// Content sent (or written), in seconds of clip.
    content_s: f64,
    /// Bytes handed to the transport.
    pub written_bytes: u64,
    /// When the level last changed, or good conditions last failed.
    stable_since: Time,
    pub level_changes: u32,
    /// The flow was stopped before the clip ended: nothing more is sent or written.
    stopped: bool,
    // UDP
    send_times: Vec<Time>,
    last_report_at: Time,
    last_received: u64,
    last_expected: u64,
    min_rtt: Option<Time>,
    // TCP
    next_check: Time,
    acked_at_check: u64,
}

impl StreamServer {
    pub fn new(cfg: StreamingConfig, start: Time) -> Result<StreamServer, String> {
        cfg.validate()?;
        let level = cfg.levels_bps.len() - 1;
        let next_check = start + Time(cfg.tcp_check_ns);
        Ok(StreamServer {
            cfg,
            start,
            level,
            content_s: 0.0,
            written_bytes: 0,
            stable_since: start,
            level_changes: 0,
            stopped: false,
            send_times: Vec::new(),
            last_report_at: start,
            last_received: 0,
            last_expected: 0,
            min_rtt: None,
            next_check,
            acked_at_check: 0,
        })
    }

    pub fn config(&self) -> &StreamingConfig {
        &self.cfg
    }
    pub fn level(&self) -> usize {
        self.level
    }
    pub fn level_rate(&self) -> u64 {
        self.cfg.levels_bps[self.level]
    }
    /// Stops the stream (the flow's stop time): no more chunks.
    pub fn stop(&mut self) {
        self.stopped = true;
    }
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the whole clip has been sent (or written).
    pub fn finished(&self) -> bool {
        self.content_s * 1e9 >= self.cfg.clip_ns as f64
    }

    /// Whether the server is still building the player's preroll at `now`.
    pub fn buffering(&self, now: Time) -> bool {
        let played = (now - self.start).as_secs_f64();
        self.content_s - played < self.cfg.preroll_ns as f64 * 1e-9
    }

    /// The current send rate, bits/s: the buffering rate until the lead is built, then the level.
    pub fn send_rate(&self, now: Time) -> f64 {
        let level = self.level_rate() as f64;
        if !self.buffering(now) {
            return level;
        }
        let mut rate = level * self.cfg.buffer_multiple;
        if self.cfg.buffer_rate_cap_bps > 0 {
            rate = rate.min((self.cfg.buffer_rate_cap_bps as f64).max(level));
        }
        rate
    }

    /// Produces the chunk due at `now`: its IP size (UDP) or bytes to write (TCP), its sequence
    /// number, and when the next one is due; None once the clip is all sent.
    pub fn next_chunk(&mut self, now: Time) -> Option<(u32, u64, Time)> {
        if self.finished() || self.stopped {
            return None;
        }
        let size = self.cfg.packet_size;
        let rate = self.send_rate(now);
        let bits = size as f64 * 8.0;
        self.content_s += bits / self.level_rate() as f64;
        self.written_bytes += size as u64;
        let seq = self.send_times.len() as u64;
        if self.cfg.transport == StreamTransport::Udp {
            self.send_times.push(now);
        }
        Some((size, seq, now + Time::from_secs_f64(bits / rate)))
    }

    fn set_level(&mut self, level: usize, now: Time) {
        if level != self.level {
            self.level = level;
            self.level_changes += 1;
        }
        self.stable_since = now;
    }

    fn step_up_if_stable(&mut self, now: Time) {
        let top = self.cfg.levels_bps.len() - 1;
        if self.level < top && now - self.stable_since >= Time(self.cfg.up_after_ns) {
            self.set_level(self.level + 1, now);
        }
    }

    /// UDP: a receiver report arrived at the server.
    pub fn on_report(&mut self, r: Report, now: Time) {
        let expected = r.seq + 1;
        let d_expected = expected.saturating_sub(self.last_expected);
        let d_received = r.received.saturating_sub(self.last_received);
        let loss = if d_expected > 0 { 1.0 - (d_received as f64 / d_expected as f64).min(1.0) } else { 0.0 };
        self.last_expected = self.last_expected.max(expected);
        self.last_received = r.received;
        self.last_report_at = now;
        let rtt = self.send_times.get(r.seq as usize).map(|&sent| now - sent);
        if let Some(rtt) = rtt {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        if loss > self.cfg.loss_down {
            self.set_level(self.level.saturating_sub(1), now);
            return;
        }
        let queue_short = match (rtt, self.min_rtt) {
            (Some(r), Some(m)) => r.as_secs_f64() <= self.cfg.rtt_up_factor * m.as_secs_f64(),
            _ => true,
        };
        if loss > self.cfg.loss_up || !queue_short {
            self.stable_since = now;
            return;
        }
        self.step_up_if_stable(now);
    }

    /// UDP: called at each send; steps down when reports have stopped coming.
    pub fn check_silence(&mut self, now: Time) {
        let silence = Time(self.cfg.report_interval_ns * self.cfg.silence_reports as u64);
        let rtt = self.min_rtt.unwrap_or(Time::ZERO);
        if now - self.last_report_at > silence + rtt && self.written_bytes > 0 {
            self.set_level(self.level.saturating_sub(1), now);
            // Counts as a report: the next step needs another silent stretch.
            self.last_report_at = now;
        }
    }

    /// TCP: the server's periodic look at its send backlog; `acked_bytes` is how much of what it
    /// wrote the transport has had acknowledged. Returns whether it was time to look.
    pub fn check_backlog(&mut self, acked_bytes: u64, now: Time) -> bool {
        if now < self.next_check {
            return false;
        }
        let interval = Time(self.cfg.tcp_check_ns).as_secs_f64() + (now - self.next_check).as_secs_f64();
        self.next_check = now + Time(self.cfg.tcp_check_ns);
        let goodput = acked_bytes.saturating_sub(self.acked_at_check) as f64 * 8.0 / interval;
        self.acked_at_check = acked_bytes;
        let backlog_s = self.written_bytes.saturating_sub(acked_bytes) as f64 * 8.0 / self.level_rate() as f64;
        if backlog_s > self.cfg.tcp_backlog_down_ns as f64 * 1e-9 {
            let fits = self.cfg.levels_bps.iter().rposition(|&r| r as f64 <= goodput).unwrap_or(0);
            if fits < self.level {
                self.set_level(fits, now);
            } else {
                self.stable_since = now;
            }
            return true;
        }
        if backlog_s > self.cfg.tcp_check_ns as f64 * 1e-9 {
            self.stable_since = now;
        } else {
            self.step_up_if_stable(now);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqmlab_model::app::tcp_config::TcpConfig;

    fn tcp_cfg() -> TcpConfig {
        TcpConfig {
            mss: 1460,
            initial_cwnd_segments: 2,
            initial_rto_ns: 1_000_000_000,
            min_rto_ns: 1_000_000_000,
            max_rto_ns: 60_000_000_000,
            clock_granularity_ns: 1_000_000,
            delayed_ack: false,
            delayed_ack_timeout_ns: 200_000_000,
            rwnd: 1_000_000,
            ecn: false,
            sack: false,
            frto: false,
            prr: false,
            limited_transmit: false,
            rack: false,
            rto_restart_on_head_retransmit: false,
            rtt_sample_every_ack: false,
            rto_estimator: Default::default(),
            hystart: false,
            cubic_hystart: false,
            rate_estimator: false,
            rwnd_autotuning: false,
            send_buffer: 0,
            cwnd_limited_growth: false,
            cubic_alpha_to_one: true,
            congestion_control: Default::default(),
            ecn_codepoint: Default::default(),
            pacing: false,
            tso_autosize: false,
            byte_counting: false,
            quickack: false,
            bbr_ack_aggregation: true,
            bbr_policer_detection: true,
            prague_ecn_fallback: false,
            prague_rtt_scaling: Default::default(),
            ssthresh_basis: Default::default(),
            prr_variant: Default::default(),
            handshake: false,
        }
    }

    fn cfg(transport: StreamTransport, levels: &[u64]) -> StreamingConfig {
        StreamingConfig {
            transport,
            levels_bps: levels.to_vec(),
            clip_ns: 60_000_000_000,
            preroll_ns: 10_000_000_000,
            buffer_multiple: 3.0,
            buffer_rate_cap_bps: 0,
            packet_size: 1000,
            report_interval_ns: 1_000_000_000,
            loss_down: 0.05,
            loss_up: 0.01,
            rtt_up_factor: 2.0,
            silence_reports: 3,
            up_after_ns: 5_000_000_000,
            tcp_check_ns: 2_000_000_000,
            tcp_backlog_down_ns: 4_000_000_000,
            tcp: tcp_cfg(),
        }
    }

    /// Sends the whole clip; returns the chunk times.
    fn send_all(s: &mut StreamServer) -> Vec<Time> {
        let mut now = Time::ZERO;
        let mut times = Vec::new();
        while let Some((_, _, next)) = s.next_chunk(now) {
            times.push(now);
            now = next;
        }
        times
    }

    #[test]
    fn buffers_at_the_multiple_then_plays_out_at_the_level_rate() {
        let mut s = StreamServer::new(cfg(StreamTransport::Udp, &[80_000]), Time::ZERO).unwrap();
        let times = send_all(&mut s);
        // 10 s of lead at 3x the rate takes 5 s: 10 s of content (100 KB) by t = 5 s.
        let by = |t: f64| times.iter().filter(|x| x.as_secs_f64() < t).count() as f64 * 8000.0;
        assert!((by(5.0) / 5.0 / 240_000.0 - 1.0).abs() < 0.02, "{}", by(5.0) / 5.0);
        // Then the level rate: 60 s of content = 600 KB sent by t = 50 s (the lead is 10 s).
        assert!(((by(50.0) - by(10.0)) / 40.0 / 80_000.0 - 1.0).abs() < 0.02);
        assert_eq!(times.len(), 600);
        assert!((times.last().unwrap().as_secs_f64() - 49.9).abs() < 0.01);
    }

    #[test]
    fn a_stopped_stream_sends_nothing_more() {
        let mut s = StreamServer::new(cfg(StreamTransport::Udp, &[80_000]), Time::ZERO).unwrap();
        assert!(s.next_chunk(Time::ZERO).is_some());
        s.stop();
        assert!(s.next_chunk(Time::from_secs(1)).is_none());
        assert!(!s.finished(), "stopped is not the end of the clip");
    }

    #[test]
    fn the_cap_limits_the_buffering_rate() {
        let mut c = cfg(StreamTransport::Udp, &[80_000]);
        c.buffer_multiple = 6.0;
        c.buffer_rate_cap_bps = 160_000;
        let s = StreamServer::new(c, Time::ZERO).unwrap();
        assert_eq!(s.send_rate(Time::ZERO), 160_000.0);
    }

    #[test]
    fn udp_steps_down_one_level_per_lossy_report_and_up_after_a_clean_stretch() {
        let mut s = StreamServer::new(cfg(StreamTransport::Udp, &[20_000, 50_000, 100_000]), Time::ZERO).unwrap();
        assert_eq!(s.level(), 2);
        let mut now = Time::ZERO;
        for _ in 0..100 {
            s.next_chunk(now);
            now += Time::from_millis(10);
        }
        // 10 % loss: one step down per report.
        s.on_report(Report { received: 45, seq: 49 }, Time::from_secs(1));
        assert_eq!(s.level(), 1);
        s.on_report(Report { received: 90, seq: 99 }, Time::from_secs(2));
        assert_eq!(s.level(), 0);
        s.on_report(Report { received: 90, seq: 99 }, Time::from_secs(3));
        assert_eq!(s.level(), 0, "cannot go below the lowest level");
        assert_eq!(s.level_changes, 2);
        // That last report's RTT (2 s, over twice the smallest) restarted the wait. Clean
        // reports on packets sent 0.5 s before: up 5 s after it, not before.
        for k in 1..=4 {
            s.next_chunk(Time::from_millis(2_500 + 1_000 * k));
            s.on_report(Report { received: 90 + k, seq: 99 + k }, Time::from_secs(3 + k));
        }
        assert_eq!(s.level(), 0);
        s.next_chunk(Time::from_millis(7_500));
        s.on_report(Report { received: 95, seq: 104 }, Time::from_secs(8));
        assert_eq!(s.level(), 1);
        // A long queue (RTT over twice the smallest) holds back the next step up.
        s.next_chunk(Time::from_secs(9));
        s.on_report(Report { received: 96, seq: 105 }, Time::from_secs(20));
        assert_eq!(s.level(), 1);
    }

    #[test]
    fn udp_steps_down_when_reports_stop() {
        let mut s = StreamServer::new(cfg(StreamTransport::Udp, &[20_000, 50_000]), Time::ZERO).unwrap();
        s.next_chunk(Time::ZERO);
        s.check_silence(Time::from_secs(2));
        assert_eq!(s.level(), 1);
        s.check_silence(Time::from_millis(3_100));
        assert_eq!(s.level(), 0);
    }

    #[test]
    fn a_one_level_clip_never_scales() {
        let mut s = StreamServer::new(cfg(StreamTransport::Udp, &[300_000]), Time::ZERO).unwrap();
        s.next_chunk(Time::ZERO);
        s.on_report(Report { received: 0, seq: 0 }, Time::from_secs(1));
        s.check_silence(Time::from_secs(30));
        assert_eq!((s.level(), s.level_changes), (0, 0));
    }

    #[test]
    fn tcp_jumps_to_the_goodput_level_once_the_backlog_is_long() {
        let levels = [20_000, 34_000, 45_000, 80_000, 150_000, 220_000, 300_000];
        let mut c = cfg(StreamTransport::Tcp, &levels);
        c.buffer_multiple = 1.0;
        let mut s = StreamServer::new(c, Time::ZERO).unwrap();
        // The server writes 300 kbit/s; the transport delivers 35 kbit/s.
        let mut now = Time::ZERO;
        let acked = |t: Time| (t.as_secs_f64() * 35_000.0 / 8.0) as u64;
        let mut checks = Vec::new();
        while now < Time::from_secs(12) {
            let (_, _, next) = s.next_chunk(now).unwrap();
            if s.check_backlog(acked(now), now) {
                checks.push((now.as_secs_f64(), s.level()));
            }
            now = next;
        }
        // Looks at 2 s and 4 s: backlogs of 1.8 s and 3.5 s of 300 kbit/s content, no change.
        assert_eq!((checks[0].1, checks[1].1), (6, 6));
        // Once the backlog exceeds 4 s, one change straight to 34 kbit/s (<= 35 kbit/s goodput).
        let changed = checks.iter().find(|c| c.1 != 6).unwrap();
        assert_eq!(changed.1, 1);
        assert!((changed.0 - 6.0).abs() < 0.1, "{}", changed.0);
        assert_eq!(s.level_changes, 1);
    }

    #[test]
    fn validate_names_the_field() {
        let mut c = cfg(StreamTransport::Udp, &[50_000, 20_000]);
        assert!(StreamServer::new(c.clone(), Time::ZERO).unwrap_err().starts_with("levels"));
        c.levels_bps = vec![20_000];
        c.packet_size = 40;
        assert!(StreamServer::new(c, Time::ZERO).unwrap_err().starts_with("packet_size"));
    }
}
