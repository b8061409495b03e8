//! Records: columnar tables the run produces, handed to Python as typed little-endian
//! buffers and written there as Parquet. One schema serves the simulator and the emulator.
//!
//! Units are in the column names and stated on every field: `_ns` columns are nanoseconds
//! since the run's t = 0 (times) or nanoseconds (durations); `size` and `_bytes` columns are
//! bytes at the IP layer (headers included, see [`crate::headers`]) unless a field says
//! payload; `_pkts` columns are packets.

use crate::app::rtp::MediaFrame;
use aqmlab_core::qdisc::{NamedStat, AVERAGE_QUEUE};
use aqmlab_core::{DropReason, Packet, Queue, Time};

/// A typed column; its numpy dtype is [`Column::dtype`].
pub enum Column {
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    /// Unsigned 64-bit values some of which the engine did not measure (missing, not zero):
    /// the emulator's counters that the kernel does not report per connection.
    OptU64(Vec<Option<u64>>),
}

impl Column {
    pub fn dtype(&self) -> &'static str {
        match self {
            Column::U8(_) => "u1",
            Column::U32(_) => "u4",
            Column::U64(_) => "u8",
            Column::F64(_) => "f8",
            // Not a numpy code: Python makes it a nullable UInt64 column (records.to_frame).
            Column::OptU64(_) => "u8?",
        }
    }
    /// Little-endian bytes of the column (numpy's `<u4` etc.).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Column::U8(v) => v.clone(),
            Column::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            // The values (0 where missing), then one byte per row: 1 measured, 0 missing.
            Column::OptU64(v) => {
                let values = v.iter().flat_map(|x| x.unwrap_or(0).to_le_bytes());
                values.chain(v.iter().map(|x| x.is_some() as u8)).collect()
            }
        }
    }
}

/// A table: named columns of equal length, in their order on disk.
pub type Table = Vec<(&'static str, Column)>;

/// Packet events at a monitored link's queue: the `event` column's codes, each the index of
/// its name in [`event::NAMES`].
pub mod event {
    pub const ARRIVE: u8 = 0;
    pub const ENQUEUE: u8 = 1;
    pub const DROP: u8 = 2;
    pub const DEQUEUE: u8 = 3;
    pub const NAMES: [&str; 4] = ["arrive", "enqueue", "drop", "dequeue"];
}

/// `reason` value of events that are not drops.
pub const NO_REASON: u8 = u8::MAX;

/// Names of the `reason` column's codes (`aqmlab_core::DropReason as u8`), in code order.
pub fn drop_reason_names() -> [&'static str; DropReason::ALL.len()] {
    DropReason::ALL.map(DropReason::name)
}

/// One row per packet event at a monitored link (the `packets` table).
#[derive(Default)]
pub struct PacketEvents {
    /// When, ns.
    t_ns: Vec<u64>,
    /// [`event`] code.
    event: Vec<u8>,
    /// The packet's flow id.
    flow: Vec<u32>,
    /// The packet's unique id (a retransmission is a new packet).
    uid: Vec<u64>,
    /// IP bytes.
    size: Vec<u32>,
    /// Priority class mark (0 unclassified, 1 lowest .. 3 highest).
    class: Vec<u8>,
    /// 0 none, 1 I, 2 P, 3 B.
    frame_type: Vec<u8>,
    /// `DropReason` code of drops, [`NO_REASON`] otherwise.
    reason: Vec<u8>,
    /// 1 when the discipline ECN-marked the packet.
    marked: Vec<u8>,
    /// Queue length after the event, packets.
    qlen_pkts: Vec<u32>,
    /// Queue length after the event, IP bytes.
    qlen_bytes: Vec<u64>,
    /// Time the packet spent in the queue, ns (dequeues only; 0 for other events).
    sojourn_ns: Vec<u64>,
}

impl PacketEvents {
    #[allow(clippy::too_many_arguments)]
    pub fn push(&mut self, now: Time, ev: u8, p: &Packet, reason: Option<DropReason>, marked: bool, qlen: usize, qbytes: u64) {
        self.t_ns.push(now.as_nanos());
        self.event.push(ev);
        self.flow.push(p.flow);
        self.uid.push(p.uid);
        self.size.push(p.size);
        self.class.push(p.class);
        self.frame_type.push(p.frame_type as u8);
        self.reason.push(reason.map_or(NO_REASON, |r| r as u8));
        self.marked.push(marked as u8);
        self.qlen_pkts.push(qlen as u32);
        self.qlen_bytes.push(qbytes);
        let sojourn = if ev == event::DEQUEUE { (now - p.enqueued_at).as_nanos() } else { 0 };
        self.sojourn_ns.push(sojourn);
    }

    pub fn into_table(self) -> Table {
        vec![
            ("t_ns", Column::U64(self.t_ns)),
            ("event", Column::U8(self.event)),
            ("flow", Column::U32(self.flow)),
            ("uid", Column::U64(self.uid)),
            ("size", Column::U32(self.size)),
            ("class", Column::U8(self.class)),
            ("frame_type", Column::U8(self.frame_type)),
            ("reason", Column::U8(self.reason)),
            ("marked", Column::U8(self.marked)),
            ("qlen_pkts", Column::U32(self.qlen_pkts)),
            ("qlen_bytes", Column::U64(self.qlen_bytes)),
            ("sojourn_ns", Column::U64(self.sojourn_ns)),
        ]
    }
}

/// The monitored queue sampled periodically (the `queue` table).
#[derive(Default)]
pub struct QueueSamples {
    /// When, ns.
    t_ns: Vec<u64>,
    /// Queue length, packets.
    qlen_pkts: Vec<u32>,
    /// Queue length, IP bytes.
    qlen_bytes: Vec<u64>,
    /// The discipline's own average (RED's average queue, in its limit's unit: packets or
    /// bytes); NaN for disciplines without one.
    avg: Vec<f64>,
    /// The discipline's named statistics (`Qdisc::named_stats`) other than its average queue,
    /// which is `avg`: one column each, after `avg`, in the order the discipline reports them.
    named: Vec<(&'static str, Vec<f64>)>,
    /// Scratch for the statistics of one sample, kept so that sampling does not allocate.
    stats: Vec<NamedStat>,
}

impl QueueSamples {
    /// One sample of queue `q` at record time `at`: its backlog, average and named statistics.
    /// Both engines sample through this, so their `queue` tables have the same columns.
    pub fn push_queue(&mut self, at: Time, q: &Queue) {
        self.push(at, q.len_packets(), q.len_bytes(), q.average_queue());
        let mut stats = std::mem::take(&mut self.stats);
        stats.clear();
        q.named_stats(&mut stats);
        self.push_named_stats(&stats);
        self.stats = stats;
    }
    pub fn push(&mut self, now: Time, qlen: usize, qbytes: u64, avg: Option<f64>) {
        self.t_ns.push(now.as_nanos());
        self.qlen_pkts.push(qlen as u32);
        self.qlen_bytes.push(qbytes);
        self.avg.push(avg.unwrap_or(f64::NAN));
    }
    /// The named statistics of the sample just pushed. A discipline reports the same names
    /// every time; a name missing from a sample (or new in it) reads NaN where it has no value.
    pub fn push_named_stats(&mut self, stats: &[NamedStat]) {
        let rows = self.t_ns.len();
        for s in stats.iter().filter(|s| s.name != AVERAGE_QUEUE) {
            let at = match self.named.iter().position(|(name, _)| *name == s.name) {
                Some(at) => at,
                None => {
                    self.named.push((s.name, vec![f64::NAN; rows.saturating_sub(1)]));
                    self.named.len() - 1
                }
            };
            let column = &mut self.named[at].1;
            column.resize(rows.saturating_sub(1), f64::NAN);
            column.push(s.value);
        }
        for (_, column) in &mut self.named {
            column.resize(rows, f64::NAN);
        }
    }
    pub fn into_table(self) -> Table {
        let rows = self.t_ns.len();
        let mut table = vec![
            ("t_ns", Column::U64(self.t_ns)),
            ("qlen_pkts", Column::U32(self.qlen_pkts)),
            ("qlen_bytes", Column::U64(self.qlen_bytes)),
            ("avg", Column::F64(self.avg)),
        ];
        for (name, mut column) in self.named {
            column.resize(rows, f64::NAN);
            table.push((name, Column::F64(column)));
        }
        table
    }
}

/// Per-flow periodic samples: cumulative delivered bytes and the sender's controller state
/// (the `flow_samples` table).
#[derive(Default)]
pub struct FlowSamples {
    /// When, ns.
    t_ns: Vec<u64>,
    flow: Vec<u32>,
    delivered_bytes: Vec<u64>,
    cwnd_bytes: Vec<u64>,
    ssthresh_bytes: Vec<u64>,
    srtt_ns: Vec<u64>,
    rto_ns: Vec<u64>,
    app_level: Vec<u32>,
    packets_sent: Vec<u64>,
    retransmissions: Vec<u64>,
    delivery_rate_bps: Vec<u64>,
    snd_wnd_bytes: Vec<u64>,
    pacing_rate_bps: Vec<u64>,
    pacing_gain: Vec<f64>,
}

/// One flow's row of [`FlowSamples`].
pub struct FlowSample {
    /// Payload bytes delivered in order to the receiver so far (headers excluded).
    pub delivered_bytes: u64,
    /// TCP congestion window, bytes (0 for UDP flows).
    pub cwnd_bytes: u64,
    /// TCP slow-start threshold, bytes (0 for UDP flows).
    pub ssthresh_bytes: u64,
    /// TCP smoothed round-trip time, ns (0 before the first sample and for UDP flows).
    pub srtt_ns: u64,
    /// TCP retransmission timeout, ns (0 for UDP flows).
    pub rto_ns: u64,
    /// The application's adaptation level (MPEG scaling level; 0 otherwise).
    pub app_level: u32,
    /// TCP packets sent so far, retransmissions included, counted as the `flows` table counts
    /// them at the end (0 for UDP flows): two samples' difference is what the sender sent
    /// between them.
    pub packets_sent: u64,
    /// TCP retransmissions so far, counted as the `flows` table counts them (0 for UDP flows).
    pub retransmissions: u64,
    /// The TCP sender's delivery rate, bits/s, as Linux reports it in tcpi_delivery_rate (0
    /// before its first rate sample, for UDP flows, and for simulated controllers that run no
    /// delivery-rate estimator).
    pub delivery_rate_bps: u64,
    /// The receive window the TCP sender holds from the latest ACK, bytes (Linux's
    /// tcpi_snd_wnd): the simulator's fixed `rwnd`, or with `rwnd_autotuning` the window its
    /// receiver advertised (0 for UDP flows).
    pub snd_wnd_bytes: u64,
    /// The TCP sender's pacing rate, payload bits/s (Linux's tcpi_pacing_rate x 8); 0 when the
    /// sender does not pace (and for UDP flows).
    pub pacing_rate_bps: u64,
    /// BBR's pacing gain (Linux's TCP_CC_INFO `bbr_pacing_gain`, in units of 1/256 there): 1.25
    /// while it probes for bandwidth, 1 while it cruises, and also 1 for the 48 rounds it holds
    /// a policed rate (section "BBR's policer mode" of docs/fidelity.md); 0 for other
    /// controllers and for UDP flows.
    pub pacing_gain: f64,
}

impl FlowSamples {
    pub fn push(&mut self, now: Time, flow: u32, s: FlowSample) {
        self.t_ns.push(now.as_nanos());
        self.flow.push(flow);
        self.delivered_bytes.push(s.delivered_bytes);
        self.cwnd_bytes.push(s.cwnd_bytes);
        self.ssthresh_bytes.push(s.ssthresh_bytes);
        self.srtt_ns.push(s.srtt_ns);
        self.rto_ns.push(s.rto_ns);
        self.app_level.push(s.app_level);
        self.packets_sent.push(s.packets_sent);
        self.retransmissions.push(s.retransmissions);
        self.delivery_rate_bps.push(s.delivery_rate_bps);
        self.snd_wnd_bytes.push(s.snd_wnd_bytes);
        self.pacing_rate_bps.push(s.pacing_rate_bps);
        self.pacing_gain.push(s.pacing_gain);
    }
    pub fn into_table(self) -> Table {
        vec![
            ("t_ns", Column::U64(self.t_ns)),
            ("flow", Column::U32(self.flow)),
            ("delivered_bytes", Column::U64(self.delivered_bytes)),
            ("cwnd_bytes", Column::U64(self.cwnd_bytes)),
            ("ssthresh_bytes", Column::U64(self.ssthresh_bytes)),
            ("srtt_ns", Column::U64(self.srtt_ns)),
            ("rto_ns", Column::U64(self.rto_ns)),
            ("app_level", Column::U32(self.app_level)),
            ("packets_sent", Column::U64(self.packets_sent)),
            ("retransmissions", Column::U64(self.retransmissions)),
            ("delivery_rate_bps", Column::U64(self.delivery_rate_bps)),
            ("snd_wnd_bytes", Column::U64(self.snd_wnd_bytes)),
            ("pacing_rate_bps", Column::U64(self.pacing_rate_bps)),
            ("pacing_gain", Column::F64(self.pacing_gain)),
        ]
    }
}

/// One video frame of an MPEG flow (a row of the `frames` table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameRow {
    pub flow: u32,
    /// The frame's number in its flow, from 0 in display order.
    pub frame_id: u32,
    /// 0 none, 1 I, 2 P, 3 B.
    pub frame_type: u8,
    /// Position in the GOP pattern, from 0.
    pub gop_position: u32,
    /// When the source produced it, ns.
    pub t_ns: u64,
    /// Payload bytes (headers excluded).
    pub size: u32,
    /// False when the sender skipped it (responsive scaling).
    pub sent: bool,
    /// Packets it was cut into (0 when not sent).
    pub packets: u32,
    /// Of those, packets the receiver got.
    pub packets_received: u32,
}

/// The `frames` table: one row per frame an MPEG source produced, in push order.
#[derive(Default)]
pub struct FramesTable {
    flow: Vec<u32>,
    frame_id: Vec<u32>,
    frame_type: Vec<u8>,
    gop_position: Vec<u32>,
    t_ns: Vec<u64>,
    size: Vec<u32>,
    sent: Vec<u8>,
    packets: Vec<u32>,
    packets_received: Vec<u32>,
}

impl FramesTable {
    pub fn push(&mut self, r: FrameRow) {
        self.flow.push(r.flow);
        self.frame_id.push(r.frame_id);
        self.frame_type.push(r.frame_type);
        self.gop_position.push(r.gop_position);
        self.t_ns.push(r.t_ns);
        self.size.push(r.size);
        self.sent.push(r.sent as u8);
        self.packets.push(r.packets);
        self.packets_received.push(r.packets_received);
    }

    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }

    pub fn into_table(self) -> Table {
        vec![
            ("flow", Column::U32(self.flow)),
            ("frame_id", Column::U32(self.frame_id)),
            ("frame_type", Column::U8(self.frame_type)),
            ("gop_position", Column::U32(self.gop_position)),
            ("t_ns", Column::U64(self.t_ns)),
            ("size", Column::U32(self.size)),
            ("sent", Column::U8(self.sent)),
            ("packets", Column::U32(self.packets)),
            ("packets_received", Column::U32(self.packets_received)),
        ]
    }
}

/// One flow's static description and totals (a row of the `flows` table).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowRow {
    pub flow: u32,
    /// Index of its flow group in the scenario.
    pub group: u32,
    pub is_tcp: bool,
    /// When it starts and stops sending, ns.
    pub start_ns: u64,
    pub stop_ns: u64,
    /// One-way delays of its sender's and receiver's access links, ns.
    pub sender_delay_ns: u64,
    pub receiver_delay_ns: u64,
    /// Round-trip propagation delay of its path, ns (no queueing, no serialization).
    pub base_rtt_ns: u64,
    pub counters: FlowCounters,
}

/// A flow's transport counters over the run, zero where they do not apply (UDP) and `None`
/// where the engine does not measure them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowCounters {
    /// Packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Segments sent again (fast retransmits, timeouts and their go-back-N resends).
    pub retransmissions: u64,
    /// Loss recoveries entered by duplicate ACKs or SACK (not measured by the emulator: the
    /// kernel's TCP_INFO has no per-connection count).
    pub fast_retransmits: Option<u64>,
    /// Retransmission timeouts (the emulator: the kernel's `tcpi_total_rto`, Linux >= 6.7).
    pub timeouts: Option<u64>,
    /// Timeouts found spurious (F-RTO, RFC 5682; not measured by the emulator).
    pub spurious_timeouts: Option<u64>,
    /// Payload bytes delivered in order to the receiver (headers excluded).
    pub delivered_bytes: u64,
}

/// The `flows` table: one row per flow, in flow order. A counter column is a plain `u8`
/// column when every row measured it (always, in the simulator) and a nullable one otherwise.
#[derive(Default)]
pub struct FlowsTable {
    rows: Vec<FlowRow>,
}

impl FlowsTable {
    pub fn push(&mut self, r: FlowRow) {
        self.rows.push(r);
    }

    pub fn into_table(self) -> Table {
        let r = &self.rows;
        let u64s = |f: fn(&FlowRow) -> u64| Column::U64(r.iter().map(f).collect());
        let counted = |f: fn(&FlowCounters) -> Option<u64>| {
            let v: Vec<Option<u64>> = r.iter().map(|row| f(&row.counters)).collect();
            match v.iter().all(Option::is_some) {
                true => Column::U64(v.into_iter().flatten().collect()),
                false => Column::OptU64(v),
            }
        };
        vec![
            ("flow", Column::U32(r.iter().map(|x| x.flow).collect())),
            ("group", Column::U32(r.iter().map(|x| x.group).collect())),
            ("is_tcp", Column::U8(r.iter().map(|x| x.is_tcp as u8).collect())),
            ("start_ns", u64s(|x| x.start_ns)),
            ("stop_ns", u64s(|x| x.stop_ns)),
            ("sender_delay_ns", u64s(|x| x.sender_delay_ns)),
            ("receiver_delay_ns", u64s(|x| x.receiver_delay_ns)),
            ("base_rtt_ns", u64s(|x| x.base_rtt_ns)),
            ("packets_sent", u64s(|x| x.counters.packets_sent)),
            ("retransmissions", u64s(|x| x.counters.retransmissions)),
            ("fast_retransmits", counted(|c| c.fast_retransmits)),
            ("timeouts", counted(|c| c.timeouts)),
            ("spurious_timeouts", counted(|c| c.spurious_timeouts)),
            ("delivered_bytes", u64s(|x| x.counters.delivered_bytes)),
        ]
    }
}

/// The `media` table: one row per packet a media flow's receiver got (loss, one-way delay
/// and jitter are computed from it).
#[derive(Default)]
pub struct MediaPackets {
    flow: Vec<u32>,
    seq: Vec<u64>,
    /// IP bytes.
    size: Vec<u32>,
    /// Send and receive times, ns.
    sent_ns: Vec<u64>,
    recv_ns: Vec<u64>,
}

impl MediaPackets {
    pub fn push(&mut self, flow: u32, seq: u64, size: u32, sent_ns: u64, recv_ns: u64) {
        self.flow.push(flow);
        self.seq.push(seq);
        self.size.push(size);
        self.sent_ns.push(sent_ns);
        self.recv_ns.push(recv_ns);
    }

    pub fn into_table(self) -> Table {
        vec![
            ("flow", Column::U32(self.flow)),
            ("seq", Column::U64(self.seq)),
            ("size", Column::U32(self.size)),
            ("sent_ns", Column::U64(self.sent_ns)),
            ("recv_ns", Column::U64(self.recv_ns)),
        ]
    }
}

/// The `probes` table: one row per latency probe a ping-like flow sent (see the simulator's
/// `apps/ping.rs`): its flow, sequence number, send time and round-trip time, missing when no
/// reply came back before the run ended (the request or the reply was dropped, or is still in
/// flight).
#[derive(Default)]
pub struct ProbesTable {
    flow: Vec<u32>,
    seq: Vec<u64>,
    /// When the request left the sender, ns.
    sent_ns: Vec<u64>,
    /// Reply received minus request sent, ns.
    rtt_ns: Vec<Option<u64>>,
}

impl ProbesTable {
    pub fn push(&mut self, flow: u32, seq: u64, sent_ns: u64, rtt_ns: Option<u64>) {
        self.flow.push(flow);
        self.seq.push(seq);
        self.sent_ns.push(sent_ns);
        self.rtt_ns.push(rtt_ns);
    }

    pub fn into_table(self) -> Table {
        vec![
            ("flow", Column::U32(self.flow)),
            ("seq", Column::U64(self.seq)),
            ("sent_ns", Column::U64(self.sent_ns)),
            ("rtt_ns", Column::OptU64(self.rtt_ns)),
        ]
    }
}

/// The `bbr_intervals` table: the events of BBR v1's long-term sampling (the policer detection),
/// one row each, flow by flow (docs/tables.md gives the `event` codes).
#[derive(Default)]
pub struct BbrIntervalsTable {
    flow: Vec<u32>,
    t_ns: Vec<u64>,
    event: Vec<u8>,
    /// The ended interval's delivery rate, bit/s of payload.
    interval_bps: Vec<f64>,
    /// The long-term rate after the event, bit/s of payload.
    lt_bps: Vec<f64>,
}

impl BbrIntervalsTable {
    pub fn push(&mut self, flow: u32, t_ns: u64, event: u8, interval_bps: f64, lt_bps: f64) {
        self.flow.push(flow);
        self.t_ns.push(t_ns);
        self.event.push(event);
        self.interval_bps.push(interval_bps);
        self.lt_bps.push(lt_bps);
    }

    pub fn into_table(self) -> Table {
        vec![
            ("flow", Column::U32(self.flow)),
            ("t_ns", Column::U64(self.t_ns)),
            ("event", Column::U8(self.event)),
            ("interval_bps", Column::F64(self.interval_bps)),
            ("lt_bps", Column::F64(self.lt_bps)),
        ]
    }
}

/// The `media_frames` table: the frames of every video flow, flow by flow.
#[derive(Default)]
pub struct MediaFramesTable {
    flow: Vec<u32>,
    frame_id: Vec<u32>,
    t_ns: Vec<u64>,
    size: Vec<u32>,
    first_seq: Vec<u64>,
    packets: Vec<u32>,
}

impl MediaFramesTable {
    /// Appends flow `flow`'s frames, numbered from 0 in the order the source produced them.
    pub fn push_flow(&mut self, flow: u32, frames: &[MediaFrame]) {
        for (id, fr) in frames.iter().enumerate() {
            self.flow.push(flow);
            self.frame_id.push(id as u32);
            self.t_ns.push(fr.at.as_nanos());
            self.size.push(fr.size);
            self.first_seq.push(fr.first_seq);
            self.packets.push(fr.packets);
        }
    }

    pub fn into_table(self) -> Table {
        vec![
            ("flow", Column::U32(self.flow)),
            ("frame_id", Column::U32(self.frame_id)),
            ("t_ns", Column::U64(self.t_ns)),
            ("size", Column::U32(self.size)),
            ("first_seq", Column::U64(self.first_seq)),
            ("packets", Column::U32(self.packets)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python reads the names by code (`names[code]`): each code must be its name's index.
    #[test]
    fn codes_index_their_names() {
        assert_eq!(event::NAMES[event::ARRIVE as usize], "arrive");
        assert_eq!(event::NAMES[event::ENQUEUE as usize], "enqueue");
        assert_eq!(event::NAMES[event::DROP as usize], "drop");
        assert_eq!(event::NAMES[event::DEQUEUE as usize], "dequeue");
        let names = drop_reason_names();
        for r in DropReason::ALL {
            assert_eq!(names[r as usize], r.name());
        }
        assert!(names.len() < NO_REASON as usize, "NO_REASON must not be a reason's code");
    }

    #[test]
    fn columns_encode_little_endian_with_their_dtype() {
        let c = Column::U32(vec![1, 0x0102_0304]);
        assert_eq!(c.dtype(), "u4");
        assert_eq!(c.to_le_bytes(), vec![1, 0, 0, 0, 4, 3, 2, 1]);
        assert_eq!(Column::F64(vec![1.0]).to_le_bytes(), 1.0f64.to_le_bytes().to_vec());
        let missing = Column::OptU64(vec![Some(2), None]);
        assert_eq!(missing.to_le_bytes(), [2u64.to_le_bytes().as_slice(), &[0; 8], &[1, 0]].concat());
    }

    /// A counter column is nullable only where a row did not measure it, so the simulator's
    /// flows table keeps plain `u8` columns and the emulator's say "not measured", not 0.
    #[test]
    fn flows_table_counters_are_nullable_only_when_not_measured() {
        let measured = FlowCounters { fast_retransmits: Some(3), timeouts: Some(1), spurious_timeouts: Some(0), ..Default::default() };
        let mut t = FlowsTable::default();
        t.push(FlowRow { flow: 0, counters: measured, ..Default::default() });
        t.push(FlowRow { flow: 1, counters: FlowCounters { timeouts: Some(2), ..measured }, ..Default::default() });
        let dtypes: Vec<(&str, &str)> = t.into_table().iter().map(|(n, c)| (*n, c.dtype())).collect();
        assert!(dtypes.iter().all(|(_, d)| !d.ends_with('?')), "{dtypes:?}");

        let kernel = FlowCounters { fast_retransmits: None, timeouts: Some(4), spurious_timeouts: None, ..Default::default() };
        let mut t = FlowsTable::default();
        t.push(FlowRow { flow: 0, counters: measured, ..Default::default() });
        t.push(FlowRow { flow: 1, counters: kernel, ..Default::default() });
        let table = t.into_table();
        let dtype = |name: &str| table.iter().find(|(n, _)| *n == name).unwrap().1.dtype();
        assert_eq!((dtype("fast_retransmits"), dtype("timeouts"), dtype("spurious_timeouts")), ("u8?", "u8", "u8?"));
        let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), 14);
    }
}
