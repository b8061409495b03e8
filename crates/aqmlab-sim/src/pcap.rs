//! A pcap writer for a monitored link: one record per transmission, headers only.
//!
//! Format: libpcap with nanosecond timestamps (magic 0xa1b23c4d) and LINKTYPE_RAW (101,
//! packets start with the IPv4 header), which Wireshark, tshark and tcpdump open. Node `n` is
//! the address 10.x.y.z with x.y.z = n in base 256. Payload bytes are not simulated, so each
//! record carries the IPv4 and TCP/UDP headers (`incl_len`) and the real size as `orig_len`.

use aqmlab_core::{Packet, Proto, SackBlocks, Time};

const LINKTYPE_RAW: u32 = 101;

pub struct PcapWriter {
    buf: Vec<u8>,
}

impl Default for PcapWriter {
    fn default() -> Self {
        Self::new()
    }
}

pub fn node_ip(node: u32) -> [u8; 4] {
    [10, (node >> 16) as u8, (node >> 8) as u8, node as u8]
}

impl PcapWriter {
    pub fn new() -> PcapWriter {
        let mut buf = Vec::new();
        buf.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&0i32.to_le_bytes()); // thiszone
        buf.extend_from_slice(&0u32.to_le_bytes()); // sigfigs
        buf.extend_from_slice(&65535u32.to_le_bytes()); // snaplen
        buf.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
        PcapWriter { buf }
    }

    /// Appends one record; `sack` are the SACK blocks the packet carries, if any.
    pub fn write(&mut self, now: Time, p: &Packet, sack: Option<&SackBlocks>) {
        let hdr = headers(p, sack.copied().unwrap_or_default());
        let ns = now.as_nanos();
        self.buf.extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        self.buf.extend_from_slice(&(hdr.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&p.size.max(hdr.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&hdr);
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// IPv4 header (RFC 791) with a valid checksum, then a TCP (RFC 9293) or UDP (RFC 768) header.
fn headers(p: &Packet, sack: SackBlocks) -> Vec<u8> {
    let mut h = Vec::with_capacity(40);
    let total_len = p.size.min(65535) as u16;
    h.push(0x45);
    h.push((p.dscp << 2) | ecn_bits(p));
    h.extend_from_slice(&total_len.to_be_bytes());
    h.extend_from_slice(&(p.uid as u16).to_be_bytes()); // identification
    h.extend_from_slice(&0x4000u16.to_be_bytes()); // DF
    h.push(64);
    h.push(if p.proto == Proto::Tcp { 6 } else { 17 });
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(&node_ip(p.src));
    h.extend_from_slice(&node_ip(p.dst));
    let csum = ipv4_checksum(&h);
    h[10..12].copy_from_slice(&csum.to_be_bytes());
    h.extend_from_slice(&p.sport.to_be_bytes());
    h.extend_from_slice(&p.dport.to_be_bytes());
    match p.proto {
        Proto::Tcp => {
            h.extend_from_slice(&(p.seq as u32).to_be_bytes());
            h.extend_from_slice(&(p.ack as u32).to_be_bytes());
            let options = sack.option_bytes();
            h.push(((20 + options as u8) / 4) << 4); // data offset in 32-bit words
            h.push(p.tcp_flags | if p.ece { 0x40 } else { 0 });
            h.extend_from_slice(&65535u16.to_be_bytes()); // window
            h.extend_from_slice(&[0, 0, 0, 0]); // checksum (not computed), urgent pointer
            if options > 0 {
                // NOP, NOP, SACK (RFC 2018 section 3: kind 5, length 2 + 8n, 32-bit edges).
                h.extend_from_slice(&[1, 1, 5, 2 + 8 * sack.len() as u8]);
                for &(left, right) in sack.as_slice() {
                    h.extend_from_slice(&(left as u32).to_be_bytes());
                    h.extend_from_slice(&(right as u32).to_be_bytes());
                }
            }
        }
        Proto::Udp => {
            let udp_len = total_len.saturating_sub(20);
            h.extend_from_slice(&udp_len.to_be_bytes());
            h.extend_from_slice(&[0, 0]); // checksum 0 = none (RFC 768)
            if p.payload >= RTP_HEADER && p.dport == crate::sim::UDP_PORT {
                rtp_header(p, &mut h);
            }
        }
    }
    h
}

/// RTP fixed header length (RFC 3550 section 5.1).
const RTP_HEADER: u32 = 12;

/// The RTP fixed header of a media packet to the RTP port (RFC 3550 section 5.1): version 2,
/// dynamic payload type 96, the low 16 bits of the packet's sequence number, a 90 kHz media
/// timestamp from its send time, and the flow id as SSRC. Lets a capture's reader count UDP
/// losses from sequence gaps, as for real RTP streams.
fn rtp_header(p: &Packet, h: &mut Vec<u8>) {
    h.push(0x80);
    h.push(96);
    h.extend_from_slice(&(p.seq as u16).to_be_bytes());
    let ts = (p.sent_at.as_nanos() as u128 * 90_000 / 1_000_000_000) as u32;
    h.extend_from_slice(&ts.to_be_bytes());
    h.extend_from_slice(&p.flow.to_be_bytes());
}

fn ecn_bits(p: &Packet) -> u8 {
    use aqmlab_core::Ecn;
    match p.ecn {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_packets_carry_an_rtp_header_with_the_sequence_number() {
        let p = Packet {
            size: 1000,
            payload: 960,
            proto: Proto::Udp,
            dport: crate::sim::UDP_PORT,
            seq: 70_000,
            flow: 3,
            sent_at: Time::from_secs(1),
            ..Packet::default()
        };
        let h = headers(&p, SackBlocks::default());
        assert_eq!(h.len(), 40);
        assert_eq!(&h[28..30], &[0x80, 96]);
        assert_eq!(u16::from_be_bytes([h[30], h[31]]), (70_000u32 % 65_536) as u16);
        assert_eq!(u32::from_be_bytes([h[32], h[33], h[34], h[35]]), 90_000);
        assert_eq!(&h[36..40], &[0, 0, 0, 3]);
        // A report back to the sender's port is plain UDP.
        let r = Packet { dport: 10_000, ..p };
        assert_eq!(headers(&r, SackBlocks::default()).len(), 28);
    }

    #[test]
    fn header_checksum_verifies() {
        let p = Packet { size: 1000, src: 2, dst: 300, proto: Proto::Tcp, ..Packet::default() };
        let h = headers(&p, SackBlocks::default());
        assert_eq!(h.len(), 40);
        assert_eq!(ipv4_checksum(&h[..20]), 0, "a correct header sums to zero");
        assert_eq!(&h[16..20], &[10, 0, 1, 44]);
    }

    #[test]
    fn sack_option_matches_the_data_offset() {
        let mut p = Packet { size: 40, proto: Proto::Tcp, ack: 1001, ..Packet::default() };
        let mut sack = SackBlocks::default();
        sack.push(3001, 5001);
        sack.push(6001, 7001);
        p.size += sack.option_bytes();
        let h = headers(&p, sack);
        assert_eq!(h.len() as u32, p.size);
        let tcp = &h[20..];
        assert_eq!((tcp[12] >> 4) as usize * 4, tcp.len());
        assert_eq!(&tcp[20..24], &[1, 1, 5, 18]);
        assert_eq!(&tcp[24..28], &3001u32.to_be_bytes());
        assert_eq!(&tcp[36..40], &7001u32.to_be_bytes());
    }
}
