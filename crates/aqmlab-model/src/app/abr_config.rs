//! The configuration of an adaptive-bitrate (DASH-like) client and its server: the ladder,
//! the algorithm and its parameters, the playback buffer's limits and the TCP connection they
//! share. The algorithms, the ladder, the playback buffer and the results are engine-free
//! ([`crate::app::abr`]); the simulator's client is `aqmlab_sim`'s `sim/apps/abr.rs`.

use crate::app::abr::ladder::Ladder;
use crate::app::abr::AbrParams;
use crate::app::tcp_config::TcpConfig;
use crate::headers::TCP_IP_HEADER_BYTES;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AbrConfig {
    pub abr: AbrParams,
    pub ladder: Ladder,
    /// The client requests the next segment only when it fits under this much buffered media.
    pub max_buffer_ns: u64,
    /// Media buffered before playback starts, and again before it resumes after a stall.
    pub startup_ns: u64,
    /// IP bytes of the packet that carries a segment request from client to server.
    pub request_size: u32,
    /// A request whose response has not begun by then is sent again (timeout doubling).
    pub request_timeout_ns: u64,
    pub tcp: TcpConfig,
    /// Mark each packet's class by the frame its bytes belong to (`marking.video =
    /// "frame_type"`; the rule in [`crate::app::frame_classes`]). Off (the default, left out of
    /// the config): classes come from the flow's `class_weights`, as before the field existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mark_frames: bool,
}

impl AbrConfig {
    /// Messages name the field under the group's `app` as the scenario file spells it.
    pub fn validate(&self) -> Result<(), String> {
        self.tcp.validate().map_err(|e| format!("tcp.{e}"))?;
        self.ladder.validate()?;
        self.abr.validate()?;
        let seg = self.ladder.segment_duration_ns;
        if self.startup_ns == 0 {
            return Err("startup: must be positive".into());
        }
        if self.max_buffer_ns < self.startup_ns.max(seg) + seg {
            return Err("max_buffer: must hold startup (at least one segment) plus one more segment".into());
        }
        if self.request_size <= TCP_IP_HEADER_BYTES {
            return Err(format!("request_size: must exceed the {TCP_IP_HEADER_BYTES} B of IP and TCP headers"));
        }
        if self.request_timeout_ns == 0 {
            return Err("request_timeout: must be positive".into());
        }
        if self.abr.bola_buffer_target_s * 1e9 <= seg as f64 {
            return Err("bola_buffer_target: must exceed one segment".into());
        }
        if self.tcp.mss == 0 {
            return Err("tcp.mss: must be positive".into());
        }
        Ok(())
    }
}
