//! The configuration of an adaptive streaming server and player (Chung, Zhu and Claypool,
//! "FairPlayer or FoulPlayer?", WPI-CS-TR-02-17, 2002). The server and its adaptation rules are
//! the simulator's (`aqmlab_sim::app::streaming`); a UDP stream packet carries IP, UDP and RTP
//! headers (`headers::RTP_UDP_IP_HEADER_BYTES`).

use crate::app::tcp_config::TcpConfig;
use crate::headers::RTP_UDP_IP_HEADER_BYTES;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamTransport {
    Udp,
    Tcp,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StreamingConfig {
    pub transport: StreamTransport,
    /// Encoded rates of the clip's levels, bits/s, strictly ascending.
    pub levels_bps: Vec<u64>,
    /// Length of the content.
    pub clip_ns: u64,
    /// Content lead the player builds before steady playout.
    pub preroll_ns: u64,
    /// Send rate while buffering, as a multiple of the level rate (>= 1).
    pub buffer_multiple: f64,
    /// Upper bound on the buffering send rate, bits/s (0: none).
    pub buffer_rate_cap_bps: u64,
    /// IP size of a UDP packet; bytes per write over TCP.
    pub packet_size: u32,
    /// UDP: receiver report spacing.
    pub report_interval_ns: u64,
    /// UDP: step down when a report's interval loss exceeds this fraction.
    pub loss_down: f64,
    /// UDP: stepping up needs every report's loss at most this.
    pub loss_up: f64,
    /// UDP: stepping up needs RTT at most this times the smallest RTT seen.
    pub rtt_up_factor: f64,
    /// UDP: step down after this many report intervals without a report.
    pub silence_reports: u32,
    /// Both: time at one level in good conditions before stepping up.
    pub up_after_ns: u64,
    /// TCP: how often the server looks at its backlog and goodput.
    pub tcp_check_ns: u64,
    /// TCP: backlog, in content time at the current level, that makes the server scale down.
    pub tcp_backlog_down_ns: u64,
    /// The TCP sender's parameters (used only over TCP).
    pub tcp: TcpConfig,
}

impl StreamingConfig {
    pub fn validate(&self) -> Result<(), String> {
        self.tcp.validate().map_err(|e| format!("tcp.{e}"))?;
        if self.levels_bps.is_empty() || self.levels_bps.contains(&0) {
            return Err("levels: need at least one positive rate".into());
        }
        if self.levels_bps.windows(2).any(|w| w[0] >= w[1]) {
            return Err("levels: rates must be strictly ascending".into());
        }
        if self.clip_ns == 0 {
            return Err("clip: must be positive".into());
        }
        if !(self.buffer_multiple >= 1.0 && self.buffer_multiple.is_finite()) {
            return Err("buffer_multiple: must be >= 1".into());
        }
        if self.packet_size <= RTP_UDP_IP_HEADER_BYTES {
            return Err(format!("packet_size: must exceed the {RTP_UDP_IP_HEADER_BYTES} B of IP/UDP/RTP headers"));
        }
        if self.report_interval_ns == 0 || self.tcp_check_ns == 0 {
            return Err("report_interval and tcp_check: must be positive".into());
        }
        for (name, v) in [("loss_down", self.loss_down), ("loss_up", self.loss_up)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{name}: must be a fraction in [0, 1]"));
            }
        }
        if self.rtt_up_factor.is_nan() || self.rtt_up_factor < 1.0 {
            return Err("rtt_up_factor: must be >= 1".into());
        }
        if self.silence_reports == 0 {
            return Err("silence_reports: must be at least 1".into());
        }
        if self.tcp.mss == 0 {
            return Err("tcp.mss: must be positive".into());
        }
        Ok(())
    }
}
