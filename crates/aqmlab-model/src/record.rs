//! Records: columnar tables the run produces, handed to Python as typed little-endian
//! buffers and written there as Parquet. One schema serves the simulator and the emulator.
//!
//! Units are in the column names and stated on every field: `_ns` columns are nanoseconds
//! since the run's t = 0 (times) or nanoseconds (durations); `size` and `_bytes` columns are
//! bytes at the IP layer (headers included, see [`crate::headers`]) unless a field says
//! payload; `_pkts` columns are packets.

use aqmlab_core::qdisc::{NamedStat, AVERAGE_QUEUE};
use aqmlab_core::{DropReason, Packet, Queue, Time};

/// A typed column; its numpy dtype is [`Column::dtype`].
pub enum Column {
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F64(Vec<f64>),
}

impl Column {
    pub fn dtype(&self) -> &'static str {
        match self {
            Column::U8(_) => "u1",
            Column::U32(_) => "u4",
            Column::U64(_) => "u8",
            Column::F64(_) => "f8",
        }
    }
    /// Little-endian bytes of the column (numpy's `<u4` etc.).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Column::U8(v) => v.clone(),
            Column::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
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
    }
}
