//! Traffic sources and the configuration of every application a flow group may run.
//!
//! [`AppConfig`] is the `app` of a flow group, as the scenario's JSON names it (`kind` tagged).
//! The sources whose packets both engines send live here whole ([`mpeg`], [`rtp`]): the
//! emulator replays their schedules on real sockets. The other applications only have their
//! configuration here ([`tcp_config`], [`streaming_config`], [`pels_config`]); their senders
//! are closed loops over the simulator's own transports and stay in `aqmlab_sim`.
pub mod abr;
pub mod abr_config;
pub mod call_config;
pub mod call_frames;
pub mod frame_classes;
pub mod gcc;
pub mod mpeg;
pub mod pels_config;
pub mod rtp;
pub mod scream;
pub mod streaming_config;
pub mod synthetic_codec;
pub mod tcp_config;

use aqmlab_core::Ecn;
use serde::{Deserialize, Serialize};

/// What a flow group runs.
///
/// One enum for both engines, not a split into "what the emulator can run" and "the rest":
/// two enums would repeat the `kind` tags and field names that the scenario file uses, and the
/// emulator reads the bulk apps' TCP options too (SACK, ECN and the congestion controller
/// become kernel settings). Holding [`tcp_config::TcpConfig`] costs the emulator a few plain
/// structs, not the TCP state machine, which stays in the simulator. An application the
/// emulator cannot run is refused by name when its schedule is built.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppConfig {
    /// An FTP-like bulk transfer over TCP with unlimited data.
    Bulk { tcp: tcp_config::TcpConfig },
    /// Constant-bit-rate UDP: `rate_bps` bits/s of `packet_size`-byte (IP) packets, with the
    /// ECN codepoint `ecn` (default Not-ECT; ECT(1) makes it L4S traffic, RFC 9331).
    Cbr {
        rate_bps: u64,
        packet_size: u32,
        #[serde(default)]
        ecn: Ecn,
    },
    /// MPEG-1 video over UDP (see [`mpeg`]).
    Mpeg(mpeg::MpegConfig),
    /// RTP-like VBR video, audio or Poisson packets over UDP (see [`rtp`]).
    Rtp(rtp::RtpConfig),
    /// An adaptive streaming server and player over UDP or TCP (see [`streaming_config`]).
    Stream(streaming_config::StreamingConfig),
    /// PELS FGS video with MKC over UDP (see [`pels_config`]).
    Pels(pels_config::PelsConfig),
    /// An adaptive-bitrate (DASH-like) client fetching segments over TCP (see [`abr`]).
    Abr(Box<abr_config::AbrConfig>),
    /// A ping-like latency probe over UDP: a request of `packet_size` bytes (IP) every
    /// `interval_ns`, echoed by the receiver at once; the sender records each round trip.
    /// Flent's RRUL test runs four (ICMP ping and three UDP round-trip probes).
    Ping { interval_ns: u64, packet_size: u32 },
}
