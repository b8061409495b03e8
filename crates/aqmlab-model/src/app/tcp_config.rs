//! The parameters of a TCP sender and receiver: pure data, read by the simulator's TCP
//! (`aqmlab_sim::tcp`) and, for the options a kernel has (SACK, ECN, congestion control), by the
//! emulator's set-up of the Linux stack. The state machine itself stays in the simulator.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per segment; packets on the wire are `mss + headers::TCP_IP_HEADER_BYTES`
    /// (40) bytes.
    pub mss: u32,
    pub initial_cwnd_segments: u32,
    pub initial_rto_ns: u64,
    pub min_rto_ns: u64,
    pub max_rto_ns: u64,
    /// RFC 6298's clock granularity G.
    pub clock_granularity_ns: u64,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_ns: u64,
    /// Receiver window in bytes (also caps the congestion window).
    pub rwnd: u64,
    /// Send ECN-capable packets and react to ECN-Echo (RFC 3168).
    pub ecn: bool,
    /// Selective acknowledgments (RFC 2018) and SACK-based loss recovery (RFC 6675).
    #[serde(default)]
    pub sack: bool,
    /// F-RTO detection of spurious retransmission timeouts (RFC 5682 section 2).
    #[serde(default)]
    pub frto: bool,
    /// Proportional Rate Reduction (RFC 6937, PRR-SSRB) in SACK-based fast recovery; without
    /// SACK it has no effect.
    #[serde(default)]
    pub prr: bool,
    /// Limited Transmit (RFC 3042): one new segment on each of the first two duplicate ACKs.
    #[serde(default)]
    pub limited_transmit: bool,
    /// The window rules: NewReno (RFC 5681) or CUBIC (RFC 9438).
    #[serde(default)]
    pub congestion_control: CongestionControl,
}

/// Which congestion controller a TCP sender uses (the simulator's `tcp::cc`; the emulator maps
/// it to the kernel's reno or cubic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CongestionControl {
    #[default]
    NewReno,
    Cubic,
}
