//! TSO autosizing: how many segments a Linux sender puts in one skb (`tcp_output.c`'s
//! `tcp_tso_segs` and `tcp_tso_autosize`). A paced sender sends one skb per pacing slot, its
//! segments leave back to back (segmented by GSO or the NIC), and the next slot comes the
//! whole skb's length over the pacing rate later. At BBR's rates over a shared bottleneck that
//! is two segments at a time: the pairs the emulator sees from the kernel's senders
//! (docs/fidelity.md, "BBR's policer mode").
//!
//! `tcp_tso_autosize`: bytes = pacing_rate >> sk_pacing_shift (about 1 ms of data at the
//! pacing rate), plus sk_gso_max_size >> (min_rtt_us >> tcp_tso_rtt_log) when that shift is
//! below 32 (a path under about 16 ms gets more; under about 8 ms nothing is added, as
//! 65,215 >> 17 is 0), at most sk_gso_max_size; segments = max(bytes / mss, min_tso_segs).
//! `min_tso_segs` is the congestion control's own (`bbr_min_tso_segs`: 1 below a pacing rate of
//! 1.2 Mbit/s, else 2) or `net.ipv4.tcp_min_tso_segs` (2) for the others. `cc/bbr.rs` keeps its
//! own copies of these constants for `bbr_tso_segs_goal` (why: the comment there).

use aqmlab_core::Time;

/// Linux's default `sk_pacing_shift`: an skb carries about 1/1024 s of data at the pacing rate.
pub const PACING_SHIFT: u32 = 10;
/// `sk_gso_max_size` over a veth or a NIC without BIG TCP: GSO_LEGACY_MAX_SIZE (65,536) less
/// MAX_TCP_HEADER + 1 (`sk_setup_caps`).
pub const GSO_MAX_BYTES: u64 = 65_215;
/// `net.ipv4.tcp_tso_rtt_log` (default 9, since Linux 5.18): the min RTT in µs shifted by it
/// sizes the extra allowance of short paths.
pub const TSO_RTT_LOG: u32 = 9;
/// `net.ipv4.tcp_min_tso_segs` (default 2): the floor for controllers without their own.
pub const MIN_TSO_SEGS: u64 = 2;
/// tcp_bbr.c's `bbr_min_tso_rate` in bytes per second (1.2 Mbit/s): below it BBR's floor is 1.
pub const BBR_MIN_TSO_RATE: u64 = 1_200_000 / 8;

/// `bbr_min_tso_segs`: BBR's floor (1 segment below 1.2 Mbit/s of pacing, else 2).
pub fn bbr_min_segments(pacing_rate: u64) -> u64 {
    if pacing_rate < BBR_MIN_TSO_RATE {
        1
    } else {
        2
    }
}

/// `tcp_tso_autosize`: the segments of one skb at `pacing_rate` (payload bytes per second),
/// for segments of `mss` bytes, with the connection's minimum RTT (none before a sample:
/// Linux's filter then holds ~0U, which adds nothing) and the controller's floor.
pub fn autosize_segments(pacing_rate: u64, mss: u64, min_rtt: Option<Time>, min_segments: u64) -> u64 {
    let mut bytes = pacing_rate >> PACING_SHIFT;
    if let Some(rtt) = min_rtt {
        let shift = (rtt.0 / 1_000) >> TSO_RTT_LOG;
        if shift < 32 {
            bytes += GSO_MAX_BYTES >> shift;
        }
    }
    (bytes.min(GSO_MAX_BYTES) / mss.max(1)).max(min_segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_a_millisecond_of_data_and_two_segments_at_least() {
        // 2.5 Mbit/s: 312,500 B/s >> 10 = 305 bytes, under one segment: the floor of 2.
        assert_eq!(autosize_segments(312_500, 1448, Some(Time::from_millis(40)), MIN_TSO_SEGS), 2);
        // 1 Gbit/s: 125 MB/s >> 10 = 122,070 bytes, capped at 65,215: 45 segments of 1448.
        assert_eq!(autosize_segments(125_000_000, 1448, Some(Time::from_millis(40)), MIN_TSO_SEGS), 45);
        // 100 Mbit/s: 12,207 bytes: 8 segments.
        assert_eq!(autosize_segments(12_500_000, 1448, None, MIN_TSO_SEGS), 8);
    }

    #[test]
    fn short_paths_get_the_rtt_allowance() {
        // 1 ms: 1000 µs >> 9 = 1, so 65,215 >> 1 = 32,607 bytes more: 22 segments at 2.5 Mbit/s.
        assert_eq!(autosize_segments(312_500, 1448, Some(Time::from_millis(1)), MIN_TSO_SEGS), 22);
        // 8 ms: 8000 >> 9 = 15, 65,215 >> 15 = 1 byte: still the floor.
        assert_eq!(autosize_segments(312_500, 1448, Some(Time::from_millis(8)), MIN_TSO_SEGS), 2);
        // 20 ms: 39 >= 32, no allowance.
        assert_eq!(autosize_segments(312_500, 1448, Some(Time::from_millis(20)), MIN_TSO_SEGS), 2);
    }

    #[test]
    fn bbr_sends_single_segments_below_its_min_tso_rate() {
        assert_eq!(bbr_min_segments(149_999), 1);
        assert_eq!(bbr_min_segments(150_000), 2);
        assert_eq!(autosize_segments(100_000, 1448, Some(Time::from_millis(40)), bbr_min_segments(100_000)), 1);
    }
}
