//! Ethernet / IPv4 / IPv6 / TCP / UDP header parsing for the router.
//!
//! The parser reads only what a discipline or a record needs (addresses, ports, DSCP, ECN,
//! sizes, TCP sequence numbers) and never panics: every length is checked against the bytes
//! actually present, every header-length field against its legal range, and a frame that fails
//! a check is reported as [`Malformed`] with the reason, for the router to count and drop.
//! Frames that are well formed but not IP (ARP, LLDP) are [`Parsed::NotIp`]: the router
//! forwards them around the discipline, as a bridge would.

/// EtherTypes (IEEE 802.3; IANA "ieee-802-numbers").
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETH_HEADER: usize = 14;
const VLAN_TAG: usize = 4;

/// IP protocol numbers (IANA "protocol-numbers").
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;

/// IPv6 extension headers the parser walks past to find TCP/UDP (RFC 8200 section 4):
/// hop-by-hop, routing, destination options. A fragment header (44) ends the walk, as only the
/// first fragment carries the transport header and the router does not reassemble.
const IPV6_EXT_HOP_BY_HOP: u8 = 0;
const IPV6_EXT_ROUTING: u8 = 43;
const IPV6_EXT_DEST_OPTS: u8 = 60;
/// More extension headers than this is treated as malformed (bounds the walk).
const IPV6_MAX_EXT_HEADERS: usize = 8;

/// Magic that opens the payload of aqmlab's own UDP senders ("AQML"), followed by the
/// application header [`AppHeader`] describes. Lets the router record frame ids and types.
pub const APP_MAGIC: [u8; 4] = *b"AQML";
/// Bytes of the application header, magic included.
pub const APP_HEADER_LEN: usize = 32;

/// Why a frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// Shorter than an Ethernet header (or a VLAN tag).
    TruncatedEthernet,
    /// The IP header is cut short, or its version field disagrees with the EtherType.
    TruncatedIp,
    /// IPv4 IHL below 5 words or beyond the frame; IPv4 total length below the header.
    BadIpHeaderLength,
    /// The IP total / payload length claims more bytes than the frame holds.
    BadIpTotalLength,
    /// The TCP data offset is below 5 words or beyond the IP payload.
    BadTcpHeaderLength,
    /// The UDP length field is below 8 or beyond the IP payload; or the UDP header is cut.
    BadUdpLength,
    /// Too many IPv6 extension headers, or one that runs past the packet.
    BadIpv6Extension,
}

impl Malformed {
    pub const ALL: [Malformed; 7] = [
        Malformed::TruncatedEthernet,
        Malformed::TruncatedIp,
        Malformed::BadIpHeaderLength,
        Malformed::BadIpTotalLength,
        Malformed::BadTcpHeaderLength,
        Malformed::BadUdpLength,
        Malformed::BadIpv6Extension,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Malformed::TruncatedEthernet => "truncated_ethernet",
            Malformed::TruncatedIp => "truncated_ip",
            Malformed::BadIpHeaderLength => "bad_ip_header_length",
            Malformed::BadIpTotalLength => "bad_ip_total_length",
            Malformed::BadTcpHeaderLength => "bad_tcp_header_length",
            Malformed::BadUdpLength => "bad_udp_length",
            Malformed::BadIpv6Extension => "bad_ipv6_extension",
        }
    }
}

/// Transport found in an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp {
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: u32,
    },
    Udp {
        sport: u16,
        dport: u16,
        payload: u32,
    },
    /// ICMP or any other protocol, or a non-first IPv6 fragment: no ports.
    Other {
        protocol: u8,
    },
}

/// The application header of aqmlab's own UDP senders (all fields big-endian after the magic):
/// `seq u32, frame_id u32, frame_type u8 (0 none, 1 I, 2 P, 3 B), pad u8, frag_index u16,
/// frag_count u16, pad u16, sent_ns u64, flow u32`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct AppHeader {
    pub seq: u32,
    pub frame_id: u32,
    pub frame_type: u8,
    pub frag_index: u16,
    pub frag_count: u16,
    pub sent_ns: u64,
    pub flow: u32,
}

/// Addresses folded to 32 bits: IPv4 exactly, IPv6 by XOR of its four words (flow keys only
/// need distinct hosts to stay distinct, which holds for the handful of hosts of a testbed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpInfo {
    pub version: u8,
    /// Offset of the IP header in the frame.
    pub ip_offset: usize,
    /// Bytes at the IP layer (IPv4 total length; IPv6 40 + payload length).
    pub ip_len: u32,
    pub src: u32,
    pub dst: u32,
    pub dscp: u8,
    /// The two ECN bits (RFC 3168 section 5).
    pub ecn: u8,
    pub transport: Transport,
    pub app: Option<AppHeader>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Parsed {
    Ip(IpInfo),
    NotIp { ethertype: u16 },
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Parses one Ethernet frame.
pub fn parse_frame(frame: &[u8]) -> Result<Parsed, Malformed> {
    let mut offset = ETH_HEADER;
    let mut ethertype = be16(frame, 12).ok_or(Malformed::TruncatedEthernet)?;
    if ethertype == ETHERTYPE_VLAN {
        ethertype = be16(frame, 16).ok_or(Malformed::TruncatedEthernet)?;
        offset += VLAN_TAG;
    }
    if frame.len() < offset {
        return Err(Malformed::TruncatedEthernet);
    }
    let ip = &frame[offset..];
    let info = match ethertype {
        ETHERTYPE_IPV4 => parse_ipv4(ip)?,
        ETHERTYPE_IPV6 => parse_ipv6(ip)?,
        other => return Ok(Parsed::NotIp { ethertype: other }),
    };
    Ok(Parsed::Ip(IpInfo { ip_offset: offset, ..info }))
}

/// IPv4 (RFC 791 section 3.1).
fn parse_ipv4(ip: &[u8]) -> Result<IpInfo, Malformed> {
    let first = *ip.first().ok_or(Malformed::TruncatedIp)?;
    if first >> 4 != 4 || ip.len() < 20 {
        return Err(Malformed::TruncatedIp);
    }
    let ihl = ((first & 0x0f) as usize) * 4;
    if ihl < 20 || ihl > ip.len() {
        return Err(Malformed::BadIpHeaderLength);
    }
    let total = be16(ip, 2).ok_or(Malformed::TruncatedIp)? as usize;
    if total < ihl {
        return Err(Malformed::BadIpHeaderLength);
    }
    if total > ip.len() {
        return Err(Malformed::BadIpTotalLength);
    }
    let tos = ip[1];
    let protocol = ip[9];
    let frag_offset = be16(ip, 6).ok_or(Malformed::TruncatedIp)? & 0x1fff;
    let src = be32(ip, 12).ok_or(Malformed::TruncatedIp)?;
    let dst = be32(ip, 16).ok_or(Malformed::TruncatedIp)?;
    // Only the first fragment carries the transport header.
    let (transport, app) =
        if frag_offset == 0 { parse_transport(protocol, &ip[ihl..total])? } else { (Transport::Other { protocol }, None) };
    Ok(IpInfo { version: 4, ip_offset: 0, ip_len: total as u32, src, dst, dscp: tos >> 2, ecn: tos & 0x03, transport, app })
}

/// IPv6 (RFC 8200 sections 3 and 4).
fn parse_ipv6(ip: &[u8]) -> Result<IpInfo, Malformed> {
    if ip.len() < 40 || ip[0] >> 4 != 6 {
        return Err(Malformed::TruncatedIp);
    }
    let traffic_class = ((be16(ip, 0).ok_or(Malformed::TruncatedIp)? >> 4) & 0xff) as u8;
    let payload_len = be16(ip, 4).ok_or(Malformed::TruncatedIp)? as usize;
    let total = 40 + payload_len;
    if total > ip.len() {
        return Err(Malformed::BadIpTotalLength);
    }
    let fold = |at: usize| -> Option<u32> { Some(be32(ip, at)? ^ be32(ip, at + 4)? ^ be32(ip, at + 8)? ^ be32(ip, at + 12)?) };
    let src = fold(8).ok_or(Malformed::TruncatedIp)?;
    let dst = fold(24).ok_or(Malformed::TruncatedIp)?;
    let mut next = ip[6];
    let mut at = 40;
    for _ in 0..=IPV6_MAX_EXT_HEADERS {
        match next {
            IPV6_EXT_HOP_BY_HOP | IPV6_EXT_ROUTING | IPV6_EXT_DEST_OPTS => {
                // Hdr Ext Len counts 8-octet units beyond the first 8 (RFC 8200 section 4.3).
                let hdr = ip.get(at..at + 2).ok_or(Malformed::BadIpv6Extension)?;
                let len = 8 + 8 * hdr[1] as usize;
                if at + len > total {
                    return Err(Malformed::BadIpv6Extension);
                }
                next = hdr[0];
                at += len;
            }
            protocol => {
                let (transport, app) = parse_transport(protocol, &ip[at..total])?;
                return Ok(IpInfo {
                    version: 6,
                    ip_offset: 0,
                    ip_len: total as u32,
                    src,
                    dst,
                    dscp: traffic_class >> 2,
                    ecn: traffic_class & 0x03,
                    transport,
                    app,
                });
            }
        }
    }
    Err(Malformed::BadIpv6Extension)
}

/// TCP (RFC 9293 section 3.1) or UDP (RFC 768) in `seg`, the IP payload.
fn parse_transport(protocol: u8, seg: &[u8]) -> Result<(Transport, Option<AppHeader>), Malformed> {
    match protocol {
        IPPROTO_TCP => {
            if seg.len() < 20 {
                return Err(Malformed::BadTcpHeaderLength);
            }
            let data_offset = ((seg[12] >> 4) as usize) * 4;
            if data_offset < 20 || data_offset > seg.len() {
                return Err(Malformed::BadTcpHeaderLength);
            }
            let t = Transport::Tcp {
                sport: be16(seg, 0).ok_or(Malformed::BadTcpHeaderLength)?,
                dport: be16(seg, 2).ok_or(Malformed::BadTcpHeaderLength)?,
                seq: be32(seg, 4).ok_or(Malformed::BadTcpHeaderLength)?,
                ack: be32(seg, 8).ok_or(Malformed::BadTcpHeaderLength)?,
                flags: seg[13],
                payload: (seg.len() - data_offset) as u32,
            };
            Ok((t, None))
        }
        IPPROTO_UDP => {
            let udp_len = be16(seg, 4).ok_or(Malformed::BadUdpLength)? as usize;
            if udp_len < 8 || udp_len > seg.len() {
                return Err(Malformed::BadUdpLength);
            }
            let t = Transport::Udp {
                sport: be16(seg, 0).ok_or(Malformed::BadUdpLength)?,
                dport: be16(seg, 2).ok_or(Malformed::BadUdpLength)?,
                payload: (udp_len - 8) as u32,
            };
            Ok((t, parse_app_header(skip_rtp_header(&seg[8..udp_len]))))
        }
        protocol => Ok((Transport::Other { protocol }, None)),
    }
}

/// Bytes of the fixed RTP header (RFC 3550 section 5.1) our media senders put first.
const RTP_HEADER: usize = 12;

/// The payload after an RTP header, when it carries one (version 2) followed by our magic;
/// otherwise the payload unchanged.
fn skip_rtp_header(payload: &[u8]) -> &[u8] {
    match payload.get(RTP_HEADER..RTP_HEADER + 4) {
        Some(magic) if payload[0] >> 6 == 2 && magic == APP_MAGIC => &payload[RTP_HEADER..],
        _ => payload,
    }
}

/// The application header of aqmlab's senders, if the payload starts with [`APP_MAGIC`].
pub fn parse_app_header(payload: &[u8]) -> Option<AppHeader> {
    if payload.len() < APP_HEADER_LEN || payload[..4] != APP_MAGIC {
        return None;
    }
    Some(AppHeader {
        seq: be32(payload, 4)?,
        frame_id: be32(payload, 8)?,
        frame_type: payload[12].min(3),
        frag_index: be16(payload, 14)?,
        frag_count: be16(payload, 16)?,
        sent_ns: be64(payload, 20)?,
        flow: be32(payload, 28)?,
    })
}

/// Sets the ECN field of a parsed IP packet to CE (RFC 3168 section 5), updating the IPv4
/// header checksum incrementally (RFC 1624 equation 3). Returns false when the frame is not
/// ECN-capable (the caller then must not have marked it) or too short.
pub fn set_ce(frame: &mut [u8], info: &IpInfo) -> bool {
    const CE: u8 = 0x03;
    if info.ecn == 0 {
        return false;
    }
    let at = info.ip_offset;
    match info.version {
        4 => {
            let Some(hdr) = frame.get_mut(at..at + 20) else { return false };
            let old = u16::from_be_bytes([hdr[0], hdr[1]]);
            hdr[1] |= CE;
            let new = u16::from_be_bytes([hdr[0], hdr[1]]);
            let check = u16::from_be_bytes([hdr[10], hdr[11]]);
            // HC' = ~(~HC + ~m + m')
            let mut sum = (!check as u32) + (!old as u32) + new as u32;
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            hdr[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            true
        }
        6 => {
            // Traffic class spans the low nibble of byte 0 and the high nibble of byte 1;
            // its ECN bits are bits 4-5 of byte 1.
            let Some(b) = frame.get_mut(at + 1) else { return false };
            *b |= CE << 4;
            true
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A valid Ethernet + IPv4 + UDP/TCP frame with `payload` bytes of payload.
    pub fn ipv4_frame(protocol: u8, sport: u16, dport: u16, tos: u8, payload: &[u8]) -> Vec<u8> {
        let l4 = if protocol == IPPROTO_TCP { 20 } else { 8 };
        let total = 20 + l4 + payload.len();
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut ip = vec![0u8; 20];
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = protocol;
        ip[12..16].copy_from_slice(&[10, 77, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let sum = ipv4_checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        f.extend_from_slice(&ip);
        let mut l = vec![0u8; l4];
        l[0..2].copy_from_slice(&sport.to_be_bytes());
        l[2..4].copy_from_slice(&dport.to_be_bytes());
        if protocol == IPPROTO_TCP {
            l[4..8].copy_from_slice(&1000u32.to_be_bytes());
            l[12] = 5 << 4;
            l[13] = 0x10;
        } else {
            l[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        }
        f.extend_from_slice(&l);
        f.extend_from_slice(payload);
        f
    }

    pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for (i, pair) in hdr.chunks(2).enumerate() {
            if i == 5 {
                continue; // the checksum field itself
            }
            sum += u16::from_be_bytes([pair[0], pair[1]]) as u32;
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn parses_udp_with_dscp_ecn_and_sizes() {
        let f = ipv4_frame(IPPROTO_UDP, 4000, 5001, (46 << 2) | 1, &[7u8; 100]);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!("not ip") };
        assert_eq!(info.ip_len, 128);
        assert_eq!(info.dscp, 46);
        assert_eq!(info.ecn, 1);
        assert_eq!(info.src, u32::from_be_bytes([10, 77, 0, 1]));
        assert_eq!(info.transport, Transport::Udp { sport: 4000, dport: 5001, payload: 100 });
        assert_eq!(info.app, None);
    }

    #[test]
    fn parses_tcp_and_counts_payload_after_options() {
        let f = ipv4_frame(IPPROTO_TCP, 33000, 5001, 0, &[1u8; 1448]);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!("not ip") };
        match info.transport {
            Transport::Tcp { sport, dport, seq, payload, flags, .. } => {
                assert_eq!((sport, dport, seq, payload, flags), (33000, 5001, 1000, 1448, 0x10));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ethernet_padding_beyond_ip_total_length_is_ignored() {
        // Ethernet pads short frames to 60 bytes: the IP length, not the frame's, is the size.
        let mut f = ipv4_frame(IPPROTO_UDP, 1, 2, 0, &[]);
        f.resize(60, 0);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!("not ip") };
        assert_eq!(info.ip_len, 28);
    }

    #[test]
    fn reads_the_app_header_of_our_senders() {
        let mut payload = vec![0u8; 200];
        payload[..4].copy_from_slice(&APP_MAGIC);
        payload[4..8].copy_from_slice(&17u32.to_be_bytes());
        payload[8..12].copy_from_slice(&5u32.to_be_bytes());
        payload[12] = 2;
        payload[14..16].copy_from_slice(&1u16.to_be_bytes());
        payload[16..18].copy_from_slice(&3u16.to_be_bytes());
        payload[20..28].copy_from_slice(&123456789u64.to_be_bytes());
        payload[28..32].copy_from_slice(&9u32.to_be_bytes());
        let f = ipv4_frame(IPPROTO_UDP, 1, 2, 0, &payload);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!("not ip") };
        let app = info.app.unwrap();
        assert_eq!((app.seq, app.frame_id, app.frame_type, app.frag_index, app.frag_count), (17, 5, 2, 1, 3));
        assert_eq!((app.sent_ns, app.flow), (123456789, 9));
    }

    #[test]
    fn finds_the_app_header_behind_an_rtp_header() {
        let mut payload = vec![0u8; 100];
        payload[0] = 0x80; // RTP version 2
        payload[12..16].copy_from_slice(&APP_MAGIC);
        payload[16..20].copy_from_slice(&42u32.to_be_bytes());
        let f = ipv4_frame(IPPROTO_UDP, 1, 2, 0, &payload);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!("not ip") };
        assert_eq!(info.app.map(|a| a.seq), Some(42));
    }

    #[test]
    fn arp_is_not_ip() {
        let mut f = vec![0u8; 42];
        f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(parse_frame(&f), Ok(Parsed::NotIp { ethertype: 0x0806 }));
    }

    #[test]
    fn bogus_lengths_are_named() {
        let good = ipv4_frame(IPPROTO_TCP, 1, 2, 0, &[0u8; 10]);
        let mut ihl = good.clone();
        ihl[14] = 0x44; // IHL 4 words < 5
        assert_eq!(parse_frame(&ihl), Err(Malformed::BadIpHeaderLength));
        let mut total = good.clone();
        total[16..18].copy_from_slice(&2000u16.to_be_bytes());
        assert_eq!(parse_frame(&total), Err(Malformed::BadIpTotalLength));
        let mut doff = good.clone();
        doff[14 + 20 + 12] = 15 << 4; // 60-byte TCP header in a 30-byte segment
        assert_eq!(parse_frame(&doff), Err(Malformed::BadTcpHeaderLength));
        let mut udp = ipv4_frame(IPPROTO_UDP, 1, 2, 0, &[0u8; 10]);
        udp[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&4u16.to_be_bytes());
        assert_eq!(parse_frame(&udp), Err(Malformed::BadUdpLength));
        assert_eq!(parse_frame(&good[..10]), Err(Malformed::TruncatedEthernet));
        assert_eq!(parse_frame(&good[..20]), Err(Malformed::TruncatedIp));
    }

    #[test]
    fn set_ce_keeps_the_ipv4_checksum_valid() {
        let mut f = ipv4_frame(IPPROTO_TCP, 1, 2, (10 << 2) | 2, &[0u8; 10]);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!() };
        assert!(set_ce(&mut f, &info));
        let hdr = &f[14..34];
        assert_eq!(hdr[1] & 3, 3);
        assert_eq!(hdr[1] >> 2, 10, "DSCP untouched");
        assert_eq!(u16::from_be_bytes([hdr[10], hdr[11]]), ipv4_checksum(hdr));
    }

    #[test]
    fn ipv6_tcp_behind_a_hop_by_hop_header() {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        let mut ip = vec![0u8; 40];
        ip[0] = 0x60 | (46 >> 2); // version 6, traffic class high nibble
        ip[1] = ((46 & 3) << 6) | (1 << 4); // DSCP 46 low bits, ECN 1
        ip[4..6].copy_from_slice(&((8 + 20 + 5) as u16).to_be_bytes());
        ip[6] = IPV6_EXT_HOP_BY_HOP;
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[IPPROTO_TCP, 0, 1, 4, 0, 0, 0, 0]);
        let mut tcp = vec![0u8; 20];
        tcp[0..2].copy_from_slice(&80u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&9000u16.to_be_bytes());
        tcp[12] = 5 << 4;
        f.extend_from_slice(&tcp);
        f.extend_from_slice(&[0u8; 5]);
        let Parsed::Ip(info) = parse_frame(&f).unwrap() else { panic!() };
        assert_eq!((info.version, info.ip_len, info.dscp, info.ecn), (6, 73, 46, 1));
        assert!(matches!(info.transport, Transport::Tcp { sport: 80, dport: 9000, payload: 5, .. }));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Arbitrary bytes never panic, and whatever parses stays inside the frame.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(Parsed::Ip(info)) = parse_frame(&bytes) {
                prop_assert!(info.ip_offset + info.ip_len as usize <= bytes.len());
            }
        }

        /// Arbitrary IP-looking bytes (the EtherType forced to IPv4/IPv6) reach the deep checks.
        #[test]
        fn ip_frames_with_random_headers_never_panic(v6 in any::<bool>(), body in proptest::collection::vec(any::<u8>(), 0..120)) {
            let mut f = vec![0u8; 12];
            f.extend_from_slice(&(if v6 { ETHERTYPE_IPV6 } else { ETHERTYPE_IPV4 }).to_be_bytes());
            f.extend_from_slice(&body);
            if let Ok(Parsed::Ip(info)) = parse_frame(&f) {
                prop_assert!(info.ip_offset + info.ip_len as usize <= f.len());
            }
        }

        /// Every truncation of a valid frame is either refused with a reason or, when only
        /// Ethernet padding was cut, parses to the same packet; never a panic.
        #[test]
        fn truncated_valid_frames_are_refused(tcp in any::<bool>(), len in 0usize..300, cut in 0usize..400) {
            let proto = if tcp { IPPROTO_TCP } else { IPPROTO_UDP };
            let f = ipv4_frame(proto, 1234, 5678, 0, &vec![0xAA; len]);
            let cut = cut.min(f.len());
            match parse_frame(&f[..cut]) {
                Ok(_) => prop_assert_eq!(cut, f.len()),
                Err(_) => prop_assert!(cut < f.len()),
            }
        }

        /// A bogus length field anywhere in the headers gives an error or a consistent parse.
        #[test]
        fn corrupted_header_bytes_never_panic(at in 14usize..60, value in any::<u8>()) {
            let mut f = ipv4_frame(IPPROTO_TCP, 1, 2, 0, &[0u8; 20]);
            f[at] = value;
            if let Ok(Parsed::Ip(info)) = parse_frame(&f) {
                prop_assert!(info.ip_offset + info.ip_len as usize <= f.len());
            }
        }
    }
}
