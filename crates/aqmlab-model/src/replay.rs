//! Tables of an emulated run, rebuilt from what its processes logged: the simulator records
//! these rows as they happen; the emulator's sender replays a schedule and its receiver logs
//! arrivals, and the rows follow from the two. Built here so that they fill the same table
//! builders ([`FramesTable`], [`FlowSamples`]) as the simulator's.

use crate::headers::UDP_IP_HEADER_BYTES;
use crate::record::{FlowSample, FlowSamples, FrameRow, FramesTable};
use aqmlab_core::Time;
use std::collections::BTreeMap;

/// One packet of an MPEG flow's schedule (`aqmlab_emu::schedule`), as sent.
#[derive(Clone, Copy, Debug)]
pub struct ScheduledPacket {
    /// Send time, ns.
    pub t_ns: u64,
    pub frame_id: u32,
    /// 0 none, 1 I, 2 P, 3 B.
    pub frame_type: u8,
    /// IP bytes.
    pub size: u32,
}

/// Appends the `frames` rows of one non-responsive MPEG flow: one per frame in its schedule
/// (every frame is sent), in frame order, each with the packets the receiver logged for it
/// (`received_frame_ids`, one entry per packet received), at most the packets it was cut into.
pub fn mpeg_frames(
    flow: u32,
    gop_len: u32,
    schedule: &[ScheduledPacket],
    received_frame_ids: &[u32],
    out: &mut FramesTable,
) -> Result<(), String> {
    if gop_len == 0 {
        return Err("gop: must hold at least one frame".into());
    }
    // frame id -> (first packet's time and type, payload bytes, packets).
    let mut frames: BTreeMap<u32, (u64, u8, i64, u32)> = BTreeMap::new();
    for p in schedule {
        let f = frames.entry(p.frame_id).or_insert((p.t_ns, p.frame_type, 0, 0));
        f.2 += p.size as i64 - UDP_IP_HEADER_BYTES as i64;
        f.3 += 1;
    }
    let mut received: BTreeMap<u32, u32> = BTreeMap::new();
    for id in received_frame_ids {
        *received.entry(*id).or_default() += 1;
    }
    for (frame_id, (t_ns, frame_type, payload, packets)) in frames {
        out.push(FrameRow {
            flow,
            frame_id,
            frame_type,
            gop_position: frame_id % gop_len,
            t_ns,
            size: payload as u32,
            sent: true,
            packets,
            packets_received: received.get(&frame_id).copied().unwrap_or(0).min(packets),
        });
    }
    Ok(())
}

/// One packet a UDP flow's receiver logged.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// Arrival time, ns.
    pub recv_ns: u64,
    /// IP bytes.
    pub size: u32,
}

/// A sender's TCP sample row as logged: t_ns, flow, delivered, cwnd, ssthresh, srtt_ns,
/// rto_ns, app_level, packets_sent, retransmissions, delivery_rate_bps, snd_wnd_bytes,
/// pacing_rate_bps, and the pacing gain in Linux's units of 1/256 (the `flow_samples` columns,
/// as signed 64-bit integers).
pub type LoggedSample = [i64; LOGGED_SAMPLE_COLUMNS];

/// Columns of a [`LoggedSample`].
pub const LOGGED_SAMPLE_COLUMNS: usize = 14;

/// Linux's BBR_UNIT: TCP_CC_INFO reports BBR's gains in units of 1/256.
const GAIN_UNIT: f64 = 256.0;

/// The `flow_samples` table of an emulated run: the TCP senders' logged rows, and for each
/// UDP flow one row per sample time (0, `sample_ns`, ... up to `duration_ns`) with the payload
/// bytes its receiver got by then. Rows in (time, flow) order; rows with equal time and flow
/// keep their order (TCP rows first, then UDP flows in the order given).
pub fn flow_samples(tcp: &[LoggedSample], udp: &[(u32, Vec<Delivery>)], sample_ns: u64, duration_ns: u64) -> Result<FlowSamples, String> {
    if sample_ns == 0 {
        return Err("flow_sample: must be positive".into());
    }
    let grid: Vec<u64> = (0..=duration_ns).step_by(sample_ns as usize).collect();
    let mut rows: Vec<LoggedSample> = tcp.to_vec();
    for (flow, log) in udp {
        let mut log = log.clone();
        log.sort_by_key(|d| d.recv_ns);
        let (mut next, mut delivered) = (0, 0i64);
        for &t in &grid {
            while next < log.len() && log[next].recv_ns <= t {
                delivered += log[next].size as i64 - UDP_IP_HEADER_BYTES as i64;
                next += 1;
            }
            rows.push([t as i64, *flow as i64, delivered, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        }
    }
    // Stable, on the logged (signed) values: the order the rows had in Python's pandas.
    rows.sort_by_key(|r| (r[0], r[1]));
    let mut out = FlowSamples::default();
    for r in rows {
        let sample = FlowSample {
            delivered_bytes: r[2] as u64,
            cwnd_bytes: r[3] as u64,
            ssthresh_bytes: r[4] as u64,
            srtt_ns: r[5] as u64,
            rto_ns: r[6] as u64,
            app_level: r[7] as u32,
            packets_sent: r[8] as u64,
            retransmissions: r[9] as u64,
            delivery_rate_bps: r[10] as u64,
            snd_wnd_bytes: r[11] as u64,
            pacing_rate_bps: r[12] as u64,
            pacing_gain: r[13] as f64 / GAIN_UNIT,
        };
        out.push(Time(r[0] as u64), r[1] as u32, sample);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Column, Table};

    fn column<'a>(t: &'a Table, name: &str) -> &'a Column {
        &t.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn u32s(c: &Column) -> Vec<u32> {
        match c {
            Column::U32(v) => v.clone(),
            _ => panic!("not u32"),
        }
    }

    fn u64s(c: &Column) -> Vec<u64> {
        match c {
            Column::U64(v) => v.clone(),
            _ => panic!("not u64"),
        }
    }

    #[test]
    fn mpeg_frames_sum_their_fragments_and_cap_what_was_received() {
        let p = |t_ns, frame_id, frame_type, size| ScheduledPacket { t_ns, frame_id, frame_type, size };
        // Frame 0 (I): two fragments; frame 1 (B): one; frame 2 (P): one, never received.
        let schedule = [p(0, 0, 1, 1000), p(0, 0, 1, 528), p(100, 1, 3, 228), p(200, 2, 2, 128)];
        // Frame 0 logged three times (a duplicate): capped at its two packets.
        let received = [0, 1, 0, 0];
        let mut out = FramesTable::default();
        mpeg_frames(4, 2, &schedule, &received, &mut out).unwrap();
        let t = out.into_table();
        assert_eq!(u32s(column(&t, "frame_id")), vec![0, 1, 2]);
        assert_eq!(u32s(column(&t, "size")), vec![1472, 200, 100]);
        assert_eq!(u32s(column(&t, "packets")), vec![2, 1, 1]);
        assert_eq!(u32s(column(&t, "packets_received")), vec![2, 1, 0]);
        assert_eq!(u32s(column(&t, "gop_position")), vec![0, 1, 0]);
        assert_eq!(u64s(column(&t, "t_ns")), vec![0, 100, 200]);
        assert!(mpeg_frames(4, 0, &schedule, &received, &mut FramesTable::default()).is_err());
    }

    #[test]
    fn udp_samples_count_payload_received_by_each_sample_time_in_time_then_flow_order() {
        let d = |recv_ns, size| Delivery { recv_ns, size };
        // Out of order in the log; 128-byte packets carry 100 payload bytes.
        let udp = vec![(7, vec![d(25, 128), d(5, 128), d(10, 128)])];
        let tcp = [[10, 9, 1, 2, 3, 4, 5, 0, 12, 1, 800_000, 65_160, 960_000, 320], [0, 9, 0, 2, 3, 4, 5, 0, 10, 0, 0, 64_240, 0, 739]];
        let t = flow_samples(&tcp, &udp, 10, 30).unwrap().into_table();
        assert_eq!(u64s(column(&t, "t_ns")), vec![0, 0, 10, 10, 20, 30]);
        assert_eq!(u32s(column(&t, "flow")), vec![7, 9, 7, 9, 7, 7]);
        assert_eq!(u64s(column(&t, "delivered_bytes")), vec![0, 0, 200, 1, 200, 300]);
        // The sender's counters pass through; a UDP flow has none.
        assert_eq!(u64s(column(&t, "packets_sent")), vec![0, 10, 0, 12, 0, 0]);
        assert_eq!(u64s(column(&t, "retransmissions")), vec![0, 0, 0, 1, 0, 0]);
        assert_eq!(u64s(column(&t, "delivery_rate_bps")), vec![0, 0, 0, 800_000, 0, 0]);
        assert_eq!(u64s(column(&t, "snd_wnd_bytes")), vec![0, 64_240, 0, 65_160, 0, 0]);
        assert_eq!(u64s(column(&t, "pacing_rate_bps")), vec![0, 0, 0, 960_000, 0, 0]);
        // The gain arrives in Linux's units of 1/256 (320: 1.25; 739: startup's 2.89).
        let Column::F64(gain) = column(&t, "pacing_gain") else { panic!("not f64") };
        assert_eq!(gain, &vec![0.0, 739.0 / 256.0, 0.0, 1.25, 0.0, 0.0]);
        assert!(flow_samples(&tcp, &udp, 0, 30).is_err());
    }
}
