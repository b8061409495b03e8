//! Header sizes on the wire, in bytes, defined once for both engines.
//!
//! Packet sizes in aqmlab are IP sizes (what a link serializes, without the Ethernet frame), so
//! a packet's payload is its size minus the headers below. Options are never modelled: IPv4
//! without options (RFC 791 section 3.1, IHL = 5) and TCP without options (RFC 9293 section
//! 3.1, data offset = 5); SACK blocks are added to the TCP size where they are sent.

/// IPv4 header without options (RFC 791 section 3.1).
pub const IPV4_HEADER_BYTES: u32 = 20;
/// UDP header (RFC 768).
pub const UDP_HEADER_BYTES: u32 = 8;
/// TCP header without options (RFC 9293 section 3.1).
pub const TCP_HEADER_BYTES: u32 = 20;
/// RTP fixed header, no CSRC list (RFC 3550 section 5.1).
pub const RTP_HEADER_BYTES: u32 = 12;

/// IPv4 + UDP: the overhead of every UDP packet (CBR, MPEG, PELS, reports), 28 bytes.
pub const UDP_IP_HEADER_BYTES: u32 = IPV4_HEADER_BYTES + UDP_HEADER_BYTES;
/// IPv4 + TCP: a segment is `mss + 40` bytes on the wire.
pub const TCP_IP_HEADER_BYTES: u32 = IPV4_HEADER_BYTES + TCP_HEADER_BYTES;
/// IPv4 + UDP + RTP: the overhead of an RTP media or UDP streaming packet, 40 bytes.
pub const RTP_UDP_IP_HEADER_BYTES: u32 = UDP_IP_HEADER_BYTES + RTP_HEADER_BYTES;

#[cfg(test)]
mod tests {
    use super::*;

    /// The sums the simulator's results were produced with; a change here changes every
    /// packet size and so every result.
    #[test]
    fn header_sums_are_the_sizes_results_depend_on() {
        assert_eq!(UDP_IP_HEADER_BYTES, 28);
        assert_eq!(TCP_IP_HEADER_BYTES, 40);
        assert_eq!(RTP_UDP_IP_HEADER_BYTES, 40);
    }
}
