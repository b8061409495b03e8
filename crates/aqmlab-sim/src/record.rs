//! Records: columnar tables the run produces, handed to Python as typed little-endian
//! buffers and written there as Parquet. One schema serves the simulator and the emulator.

use aqmlab_core::qdisc::{NamedStat, AVERAGE_QUEUE};
use aqmlab_core::{DropReason, Packet, Time};

/// A typed column.
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

pub type Table = Vec<(&'static str, Column)>;

/// Packet events at a monitored link's queue.
pub mod event {
    pub const ARRIVE: u8 = 0;
    pub const ENQUEUE: u8 = 1;
    pub const DROP: u8 = 2;
    pub const DEQUEUE: u8 = 3;
    pub const NAMES: [&str; 4] = ["arrive", "enqueue", "drop", "dequeue"];
}

/// `reason` value of events that are not drops.
pub const NO_REASON: u8 = u8::MAX;

#[derive(Default)]
pub struct PacketEvents {
    t_ns: Vec<u64>,
    event: Vec<u8>,
    flow: Vec<u32>,
    uid: Vec<u64>,
    size: Vec<u32>,
    class: Vec<u8>,
    frame_type: Vec<u8>,
    reason: Vec<u8>,
    marked: Vec<u8>,
    qlen_pkts: Vec<u32>,
    qlen_bytes: Vec<u64>,
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

#[derive(Default)]
pub struct QueueSamples {
    t_ns: Vec<u64>,
    qlen_pkts: Vec<u32>,
    qlen_bytes: Vec<u64>,
    avg: Vec<f64>,
    /// The discipline's named statistics (`Qdisc::named_stats`) other than its average queue,
    /// which is `avg`: one column each, after `avg`, in the order the discipline reports them.
    named: Vec<(&'static str, Vec<f64>)>,
}

impl QueueSamples {
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

/// Per-flow periodic samples: cumulative delivered bytes and the sender's controller state.
#[derive(Default)]
pub struct FlowSamples {
    t_ns: Vec<u64>,
    flow: Vec<u32>,
    delivered_bytes: Vec<u64>,
    cwnd_bytes: Vec<u64>,
    ssthresh_bytes: Vec<u64>,
    srtt_ns: Vec<u64>,
    rto_ns: Vec<u64>,
    app_level: Vec<u32>,
}

pub struct FlowSample {
    pub delivered_bytes: u64,
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt_ns: u64,
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
