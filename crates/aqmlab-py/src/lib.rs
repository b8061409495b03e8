//! `aqmlab._core`: the thin binding between Python and the Rust core and simulator.
//! Conversions and error mapping only; all logic lives in aqmlab-core, aqmlab-model, aqmlab-sim
//! and aqmlab-emu.

use aqmlab_core::link::{DeliveryTrace, SyntheticTrace};
use aqmlab_core::units::{self, Limit};
use aqmlab_model::config_error::ConfigError as EngineConfigError;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

create_exception!(
    _core,
    ConfigError,
    PyValueError,
    "An engine (the simulator, or the emulator's router) refused its config. `.kind` is \"shape\" (the JSON does not fit the config) or \"invalid\" (a value out of range), `.path` the dotted location in the config (\"\" for the whole), `.message` what is wrong there."
);
create_exception!(_core, Cancelled, PyKeyboardInterrupt, "A run stopped by `cancel()` before its end.");

/// An engine's error (the simulator's or the emulator router's) as a `ConfigError` carrying its
/// parts as attributes.
fn config_error(py: Python<'_>, e: EngineConfigError) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let value = err.value(py);
    let set = || -> PyResult<()> {
        value.setattr("kind", e.kind.name())?;
        value.setattr("path", &e.path)?;
        value.setattr("message", &e.message)
    };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// Parses a duration such as "20ms" into integer nanoseconds.
#[pyfunction]
fn parse_time(text: &str) -> PyResult<u64> {
    units::parse_time(text).map(|t| t.as_nanos()).map_err(value_error)
}

/// Parses a rate such as "25Mbps" into bits per second.
#[pyfunction]
fn parse_rate(text: &str) -> PyResult<u64> {
    units::parse_rate(text).map(|r| r.0).map_err(value_error)
}

/// Parses a size such as "150KB" into bytes.
#[pyfunction]
fn parse_bytes(text: &str) -> PyResult<u64> {
    units::parse_bytes(text).map(|b| b.0).map_err(value_error)
}

/// Parses a queue limit ("100p" or "150KB") into ("packets" | "bytes", amount).
#[pyfunction]
fn parse_limit(text: &str) -> PyResult<(&'static str, u64)> {
    match units::parse_limit(text).map_err(value_error)? {
        Limit::Packets(n) => Ok(("packets", n)),
        Limit::Bytes(b) => Ok(("bytes", b)),
    }
}

/// Parses a mahimahi delivery trace's text into its opportunity times in ms; `source` names
/// the file in the one-line error (`aqmlab_core::link::DeliveryTrace::parse`).
#[pyfunction]
fn parse_delivery_trace(text: &str, source: &str) -> PyResult<Vec<u64>> {
    DeliveryTrace::parse(text, source).map(|t| t.opportunities_ms).map_err(value_error)
}

/// One loop of a synthetic trace (`aqmlab_core::link::SyntheticTrace`, as JSON) for link `link`
/// of a run seeded `seed`, as opportunity times in ms.
#[pyfunction]
fn synthetic_trace(spec_json: &str, seed: u64, link: &str) -> PyResult<Vec<u64>> {
    let spec: SyntheticTrace = serde_json::from_str(spec_json).map_err(value_error)?;
    let trace = spec.generate(&mut aqmlab_model::streams::link_trace(seed, link)).map_err(value_error)?;
    Ok(trace.opportunities_ms)
}

/// Checks a simulator config (the JSON `Simulation` takes) without building anything: the
/// same parsing and range checks, so that a scenario is refused at load, never mid-run.
#[pyfunction]
fn check_sim_config(py: Python<'_>, config_json: &str) -> PyResult<()> {
    aqmlab_sim::config::parse(config_json).map(|_| ()).map_err(|e| config_error(py, e))
}

/// One simulation run. `run()` releases the GIL; `progress_ns()` and `cancel()` may be called
/// from another Python thread meanwhile.
#[pyclass(frozen, module = "aqmlab._core")]
struct Simulation {
    inner: Mutex<Option<aqmlab_sim::Simulation>>,
    cancel: Arc<AtomicBool>,
    progress: Arc<AtomicU64>,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Simulation> {
        let cfg = aqmlab_sim::config::parse(config_json).map_err(|e| config_error(py, e))?;
        let sim = aqmlab_sim::Simulation::new(cfg).map_err(value_error)?;
        Ok(Simulation { inner: Mutex::new(Some(sim)), cancel: Arc::default(), progress: Arc::default() })
    }

    /// Runs to the end. Raises `Cancelled` (a KeyboardInterrupt) if `cancel()` was called meanwhile.
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        let cancel = self.cancel.clone();
        let progress = self.progress.clone();
        let result = py.detach(|| {
            let mut guard = self.inner.lock().map_err(|_| PyRuntimeError::new_err("simulation state poisoned"))?;
            let sim = guard.as_mut().ok_or_else(|| PyRuntimeError::new_err("simulation already consumed"))?;
            sim.run(&cancel, &progress).map_err(|c| Cancelled::new_err(c.to_string()))
        });
        result
    }

    fn progress_ns(&self) -> u64 {
        self.progress.load(Ordering::Relaxed)
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    fn summary_json(&self) -> PyResult<String> {
        let guard = self.inner.lock().map_err(|_| PyRuntimeError::new_err("poisoned"))?;
        let sim = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("simulation consumed"))?;
        Ok(sim.summary().to_string())
    }

    /// Returns ({table: [(column, numpy dtype, little-endian bytes)]}, pcap bytes or None).
    fn take_records<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, Option<Bound<'py, PyBytes>>)> {
        let mut guard = self.inner.lock().map_err(|_| PyRuntimeError::new_err("poisoned"))?;
        let sim = guard.as_mut().ok_or_else(|| PyRuntimeError::new_err("simulation consumed"))?;
        let (tables, pcap) = sim.take_records();
        let out = PyDict::new(py);
        for (name, table) in tables {
            out.set_item(name, table_to_py(py, table)?)?;
        }
        Ok((out, pcap.map(|b| PyBytes::new(py, &b))))
    }
}

/// The emulator's router (aqmlab-emu), opened in the current network namespace. `run()`
/// releases the GIL and forwards until `cancel()` or the configured duration.
#[pyclass(frozen, module = "aqmlab._core")]
struct Router {
    inner: Mutex<aqmlab_emu::Router>,
    cancel: Arc<AtomicBool>,
    epoch: Arc<AtomicU64>,
}

#[pymethods]
impl Router {
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Router> {
        let cfg = aqmlab_emu::config::parse(config_json).map_err(|e| config_error(py, e))?;
        let router = aqmlab_emu::Router::new(cfg).map_err(PyRuntimeError::new_err)?;
        let epoch = router.epoch_handle();
        Ok(Router { inner: Mutex::new(router), cancel: Arc::default(), epoch })
    }

    fn run(&self, py: Python<'_>) -> PyResult<()> {
        let cancel = self.cancel.clone();
        py.detach(|| {
            let mut r = self.inner.lock().map_err(|_| "router state poisoned".to_string())?;
            r.run(&cancel)
        })
        .map_err(PyRuntimeError::new_err)
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Sets the records' t = 0 (CLOCK_MONOTONIC ns); may be called while `run()` runs.
    fn set_epoch(&self, epoch_ns: u64) {
        self.epoch.store(epoch_ns, Ordering::Relaxed);
    }

    fn summary_json(&self) -> PyResult<String> {
        let r = self.inner.lock().map_err(|_| PyRuntimeError::new_err("poisoned"))?;
        Ok(r.summary().to_string())
    }

    /// Returns {table: [(column, numpy dtype, little-endian bytes)]} (packets, queue).
    fn take_records<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut r = self.inner.lock().map_err(|_| PyRuntimeError::new_err("poisoned"))?;
        let out = PyDict::new(py);
        for (name, table) in r.take_records() {
            out.set_item(name, table_to_py(py, table)?)?;
        }
        Ok(out)
    }
}

/// The packet schedule of an emulated UDP media flow (see aqmlab-emu's `schedule`): returns
/// ([(column, numpy dtype, little-endian bytes)], whether payloads open with an RTP header,
/// the video frames as such columns: t_ns, size, first_seq, packets).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn udp_schedule<'py>(
    py: Python<'py>,
    app_json: &str,
    seed: u64,
    flow: u32,
    start_ns: u64,
    stop_ns: u64,
    dscp: u8,
    class_dscp: [u8; 4],
) -> PyResult<(Bound<'py, PyList>, bool, Bound<'py, PyList>)> {
    use aqmlab_model::record::Column;
    let app: aqmlab_model::app::AppConfig = serde_json::from_str(app_json).map_err(value_error)?;
    let spec = aqmlab_emu::schedule::FlowSpec { seed, flow, start_ns, stop_ns, dscp, class_dscp };
    let s = aqmlab_emu::schedule::build(&app, &spec).map_err(value_error)?;
    let cols = PyList::empty(py);
    let widen16 = |v: Vec<u16>| Column::U32(v.into_iter().map(u32::from).collect());
    for (name, col) in [
        ("t_ns", Column::U64(s.t_ns)),
        ("seq", Column::U64(s.seq)),
        ("size", Column::U32(s.size)),
        ("dscp", Column::U8(s.dscp)),
        ("frame_id", Column::U32(s.frame_id)),
        ("frame_type", Column::U8(s.frame_type)),
        ("frag_index", widen16(s.frag_index)),
        ("frag_count", widen16(s.frag_count)),
    ] {
        cols.append((name, col.dtype(), PyBytes::new(py, &col.to_le_bytes())))?;
    }
    // The video frames as the simulator's `media_frames` table of this flow, built by the
    // same table code (empty for other apps).
    let mut frames = aqmlab_model::record::MediaFramesTable::default();
    frames.push_flow(flow, &s.frames);
    let frames = table_to_py(py, frames.into_table())?;
    Ok((cols, s.rtp, frames))
}

/// A record table as [(column, numpy dtype, little-endian bytes)], the form `take_records` uses.
fn table_to_py<'py>(py: Python<'py>, table: aqmlab_model::record::Table) -> PyResult<Bound<'py, PyList>> {
    let cols = PyList::empty(py);
    for (col, data) in table {
        cols.append((col, data.dtype(), PyBytes::new(py, &data.to_le_bytes())))?;
    }
    Ok(cols)
}

/// The `frames` table of an emulated run's MPEG flows (aqmlab-model's `replay::mpeg_frames`).
/// One entry per flow: (flow, GOP length, the schedule's t_ns, frame_id, frame_type and size
/// columns, the frame ids of the packets its receiver logged).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn replayed_frames_table<'py>(
    py: Python<'py>,
    flows: Vec<(u32, u32, Vec<u64>, Vec<u32>, Vec<u8>, Vec<u32>, Vec<u32>)>,
) -> PyResult<Bound<'py, PyList>> {
    use aqmlab_model::replay::{mpeg_frames, ScheduledPacket};
    let mut out = aqmlab_model::record::FramesTable::default();
    for (flow, gop_len, t_ns, frame_id, frame_type, size, received) in flows {
        let n = t_ns.len();
        if frame_id.len() != n || frame_type.len() != n || size.len() != n {
            return Err(value_error(format!("flow {flow}: schedule columns differ in length")));
        }
        let schedule: Vec<ScheduledPacket> =
            (0..n).map(|i| ScheduledPacket { t_ns: t_ns[i], frame_id: frame_id[i], frame_type: frame_type[i], size: size[i] }).collect();
        mpeg_frames(flow, gop_len, &schedule, &received, &mut out).map_err(|e| value_error(format!("flow {flow}: {e}")))?;
    }
    table_to_py(py, out.into_table())
}

/// The `flow_samples` table of an emulated run (aqmlab-model's `replay::flow_samples`): the
/// TCP senders' rows flattened (8 values a row), and per UDP flow (flow, its receiver's recv_ns
/// and size columns).
#[pyfunction]
fn replayed_flow_samples<'py>(
    py: Python<'py>,
    tcp_rows: Vec<i64>,
    udp: Vec<(u32, Vec<u64>, Vec<u32>)>,
    sample_ns: u64,
    duration_ns: u64,
) -> PyResult<Bound<'py, PyList>> {
    use aqmlab_model::replay::{flow_samples, Delivery, LoggedSample, LOGGED_SAMPLE_COLUMNS};
    if !tcp_rows.len().is_multiple_of(LOGGED_SAMPLE_COLUMNS) {
        return Err(value_error(format!("tcp_rows: must hold {LOGGED_SAMPLE_COLUMNS} values per row")));
    }
    let tcp: Vec<LoggedSample> = tcp_rows.chunks_exact(LOGGED_SAMPLE_COLUMNS).map(|r| r.try_into().expect("whole rows")).collect();
    let mut logs = Vec::with_capacity(udp.len());
    for (flow, recv_ns, size) in udp {
        if recv_ns.len() != size.len() {
            return Err(value_error(format!("flow {flow}: recv_ns and size differ in length")));
        }
        logs.push((flow, recv_ns.into_iter().zip(size).map(|(recv_ns, size)| Delivery { recv_ns, size }).collect()));
    }
    let table = flow_samples(&tcp, &logs, sample_ns, duration_ns).map_err(value_error)?.into_table();
    table_to_py(py, table)
}

/// One emulated flow's row of the `flows` table: (flow, group, is_tcp, start_ns, stop_ns,
/// sender_delay_ns, receiver_delay_ns, base_rtt_ns) and its counters (packets_sent,
/// retransmissions, fast_retransmits, timeouts, spurious_timeouts, delivered_bytes), `None`
/// where the kernel does not measure one.
type EmulatedFlow = ((u32, u32, bool, u64, u64, u64, u64, u64), (u64, u64, Option<u64>, Option<u64>, Option<u64>, u64));

/// The `flows` table of an emulated run, built by the simulator's table code
/// (aqmlab-model's `record::FlowsTable`).
#[pyfunction]
fn replayed_flows_table<'py>(py: Python<'py>, rows: Vec<EmulatedFlow>) -> PyResult<Bound<'py, PyList>> {
    use aqmlab_model::record::{FlowCounters, FlowRow, FlowsTable};
    let mut table = FlowsTable::default();
    for ((flow, group, is_tcp, start_ns, stop_ns, sender_delay_ns, receiver_delay_ns, base_rtt_ns), c) in rows {
        let (packets_sent, retransmissions, fast_retransmits, timeouts, spurious_timeouts, delivered_bytes) = c;
        let counters = FlowCounters { packets_sent, retransmissions, fast_retransmits, timeouts, spurious_timeouts, delivered_bytes };
        table.push(FlowRow { flow, group, is_tcp, start_ns, stop_ns, sender_delay_ns, receiver_delay_ns, base_rtt_ns, counters });
    }
    table_to_py(py, table.into_table())
}

/// The `media` table of an emulated run from its receivers' logs (columns flow, seq, size,
/// sent_ns, recv_ns), built by the simulator's table code (`record::MediaPackets`).
#[pyfunction]
fn replayed_media_table<'py>(
    py: Python<'py>,
    flow: Vec<u32>,
    seq: Vec<u64>,
    size: Vec<u32>,
    sent_ns: Vec<u64>,
    recv_ns: Vec<u64>,
) -> PyResult<Bound<'py, PyList>> {
    let n = flow.len();
    if [seq.len(), size.len(), sent_ns.len(), recv_ns.len()].iter().any(|&len| len != n) {
        return Err(value_error("media log: columns differ in length"));
    }
    let mut table = aqmlab_model::record::MediaPackets::default();
    for i in 0..n {
        table.push(flow[i], seq[i], size[i], sent_ns[i], recv_ns[i]);
    }
    table_to_py(py, table.into_table())
}

/// Start offsets of a flow group's flows, drawn as the simulator draws them.
#[pyfunction]
fn start_offsets(seed: u64, group: &str, count: u32, jitter_ns: u64) -> Vec<u64> {
    aqmlab_emu::schedule::start_offsets(seed, group, count, jitter_ns)
}

/// CLOCK_MONOTONIC in ns, the router's clock (equal to Python's `time.monotonic_ns()`).
#[pyfunction]
fn monotonic_ns() -> u64 {
    aqmlab_emu::router::monotonic_ns()
}

/// The rung an ABR algorithm (aqmlab-model's `app::abr`) chooses for the next segment, given
/// its parameters and ladder as JSON and the player's state: the decision alone, without a
/// network, so that an outside ABR simulator's decisions can be checked against it
/// (`benches/sabre_check.py`). Only for the algorithms without state between decisions
/// (BOLA-E is refused: `AbrClient` carries its state).
#[pyfunction]
#[pyo3(signature = (params_json, ladder_json, segment, buffer_s, last_rung, throughputs_bps, prediction_errors))]
fn abr_choose(
    params_json: &str,
    ladder_json: &str,
    segment: usize,
    buffer_s: f64,
    last_rung: Option<usize>,
    throughputs_bps: Vec<f64>,
    prediction_errors: Vec<f64>,
) -> PyResult<usize> {
    use aqmlab_model::app::abr::{ladder::Ladder, AbrParams, PlayerState};
    let params: AbrParams = serde_json::from_str(params_json).map_err(|e| value_error(format!("abr params: {e}")))?;
    params.validate().map_err(|e| value_error(format!("abr params: {e}")))?;
    if params.memory_needed() {
        return Err(value_error(format!(
            "abr_choose: {} keeps state between decisions; drive it through AbrClient",
            params.algorithm.name()
        )));
    }
    let ladder: Ladder = serde_json::from_str(ladder_json).map_err(|e| value_error(format!("ladder: {e}")))?;
    ladder.validate().map_err(value_error)?;
    if segment >= ladder.segments() {
        return Err(value_error(format!("abr_choose: segment must be below the ladder's {} segments", ladder.segments())));
    }
    if last_rung.is_some_and(|r| r >= ladder.rungs()) {
        return Err(value_error(format!("abr_choose: last_rung must be below the ladder's {} rungs", ladder.rungs())));
    }
    if buffer_s.is_nan() || buffer_s < 0.0 {
        return Err(value_error("abr_choose: buffer_s must be a number >= 0"));
    }
    let state = PlayerState { segment, buffer_s, last_rung, throughputs_bps: &throughputs_bps, prediction_errors: &prediction_errors };
    Ok(params.choose(&ladder, &state))
}

/// One ABR client's decisions, playback buffer and results (aqmlab-model's
/// `app::abr::client::Client`, which the simulator's `abr` app also drives), for the
/// emulator's HTTP client (`aqmlab.emu.abr`). Built from an `abr` flow's engine config (the
/// `app` of a normalized flow group, as JSON), its session starting at `start_ns`.
#[pyclass(module = "aqmlab._core")]
struct AbrClient {
    inner: aqmlab_model::app::abr::client::Client,
}

#[pymethods]
impl AbrClient {
    #[new]
    fn new(config_json: &str, start_ns: u64) -> PyResult<AbrClient> {
        let cfg: aqmlab_model::app::abr_config::AbrConfig =
            serde_json::from_str(config_json).map_err(|e| value_error(format!("abr config: {e}")))?;
        cfg.validate().map_err(|e| value_error(format!("abr config: {e}")))?;
        Ok(AbrClient { inner: aqmlab_model::app::abr::client::Client::new(&cfg, start_ns) })
    }

    /// What to do at `now_ns`: ("done",), ("busy",), ("wait", ns) or ("fetch", segment, rung,
    /// size_bytes); on "fetch" the segment counts as requested at `now_ns`.
    fn next<'py>(&mut self, py: Python<'py>, now_ns: u64) -> PyResult<Bound<'py, PyTuple>> {
        use aqmlab_model::app::abr::client::Next;
        match self.inner.next(now_ns) {
            Next::Done => PyTuple::new(py, ["done"]),
            Next::Busy => PyTuple::new(py, ["busy"]),
            Next::Wait(ns) => ("wait", ns).into_pyobject(py),
            Next::Fetch { segment, rung, size } => ("fetch", segment, rung, size).into_pyobject(py),
        }
    }

    /// The pending segment's last byte arrived at `now_ns`, its request sent `requests` times.
    fn complete(&mut self, now_ns: u64, requests: u32) -> PyResult<()> {
        match self.inner.pending() {
            Some((_, _, at)) if now_ns >= at => {
                self.inner.complete(now_ns, requests);
                Ok(())
            }
            Some(_) => Err(value_error("AbrClient.complete: now_ns is before the request")),
            None => Err(value_error("AbrClient.complete: no segment is being fetched")),
        }
    }

    /// Media buffered at `now_ns`, ns.
    fn buffer_at(&mut self, now_ns: u64) -> u64 {
        self.inner.buffer_at(now_ns)
    }

    /// {"abr_segments": columns, "abr_sessions": columns} of client `flow` whose session ends
    /// at `end_ns`, scored with `ladder_json` when given (scores measured on what arrived),
    /// else with the configured ladder.
    #[pyo3(signature = (flow, end_ns, ladder_json=None))]
    fn tables<'py>(&self, py: Python<'py>, flow: u32, end_ns: u64, ladder_json: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
        use aqmlab_model::app::abr::ladder::Ladder;
        let ladder = match ladder_json {
            Some(j) => {
                let l: Ladder = serde_json::from_str(j).map_err(|e| value_error(format!("ladder: {e}")))?;
                l.validate().map_err(value_error)?;
                let own = &self.inner.config().ladder;
                if l.rungs() != own.rungs() || l.segments() != own.segments() || l.bitrates_bps != own.bitrates_bps {
                    return Err(value_error("ladder: must have the configured ladder's rungs and segments"));
                }
                l
            }
            None => self.inner.config().ladder.clone(),
        };
        let out = PyDict::new(py);
        for (name, table) in self.inner.tables(flow, end_ns, &ladder) {
            out.set_item(name, table_to_py(py, table)?)?;
        }
        Ok(out)
    }
}

/// The GCC call of an `rtp` video flow's engine config (its `app`, as JSON): the flow's
/// `RtpConfig` checked as the simulator checks it, with its `gcc` settings and frame rate.
fn gcc_call(app_json: &str) -> PyResult<(aqmlab_model::app::gcc::GccConfig, f64, u32)> {
    use aqmlab_model::app::{rtp::MediaConfig, AppConfig};
    let app: AppConfig = serde_json::from_str(app_json).map_err(|e| value_error(format!("app: {e}")))?;
    let AppConfig::Rtp(r) = app else { return Err(value_error("app: must be an rtp video flow with congestion_control gcc")) };
    r.validate().map_err(|e| value_error(format!("app: {e}")))?;
    let (Some(g), MediaConfig::Video { fps, mtu, .. }) = (&r.gcc, &r.media) else {
        return Err(value_error("app: must be an rtp video flow with congestion_control gcc"));
    };
    Ok((g.clone(), *fps, *mtu))
}

/// GCC's send-side estimator (aqmlab-model's `app::gcc::GccSender`, the simulator's call's
/// own), for the emulator's call (`aqmlab.emu.call`): told of every packet sent, fed every
/// feedback report that reaches the sender, it returns the new target rate.
#[pyclass(module = "aqmlab._core", name = "GccSender")]
struct PyGccSender {
    inner: aqmlab_model::app::gcc::GccSender,
    next_seq: u64,
}

#[pymethods]
impl PyGccSender {
    /// Built from a GCC video flow's engine `app` config (JSON).
    #[new]
    fn new(app_json: &str) -> PyResult<PyGccSender> {
        let (cfg, _, _) = gcc_call(app_json)?;
        Ok(PyGccSender { inner: aqmlab_model::app::gcc::GccSender::new(cfg).map_err(value_error)?, next_seq: 0 })
    }

    /// Packet `seq` (the next number, from 0) left at `now_ns` with `size` IP bytes.
    fn on_sent(&mut self, seq: u64, size: u32, now_ns: u64) -> PyResult<()> {
        if seq != self.next_seq {
            return Err(value_error(format!("GccSender.on_sent: seq must be the next number, {}", self.next_seq)));
        }
        self.next_seq += 1;
        self.inner.on_sent(seq, size, aqmlab_core::Time(now_ns));
        Ok(())
    }

    /// A report covering sequence numbers [base, end) with its arrivals (seq, arrival ns) and
    /// its CE-marked ones, made at `made_ns`, reached the sender at `now_ns`: the new target, bit/s.
    #[pyo3(signature = (base, end, arrivals, made_ns, now_ns, ce=Vec::new()))]
    fn on_feedback(&mut self, base: u64, end: u64, arrivals: Vec<(u64, u64)>, made_ns: u64, now_ns: u64, ce: Vec<u64>) -> PyResult<f64> {
        use aqmlab_core::Time;
        if base > end {
            return Err(value_error("GccSender.on_feedback: base must be <= end"));
        }
        let arrivals = arrivals.into_iter().map(|(s, t)| (s, Time(t))).collect();
        let r = aqmlab_model::app::gcc::FeedbackReport { base, end, arrivals, ce, made: Time(made_ns) };
        Ok(self.inner.on_feedback(&r, Time(now_ns)))
    }

    #[getter]
    fn target_bps(&self) -> f64 {
        self.inner.target_bps
    }

    /// The `gcc_rate` table of call `flow` (one row per report applied), as `take_records` gives tables.
    fn rate_table<'py>(&self, py: Python<'py>, flow: u32) -> PyResult<Bound<'py, PyList>> {
        table_to_py(py, self.inner.rate_table(flow))
    }
}

/// The receiver's side of GCC's feedback (aqmlab-model's `app::gcc::FeedbackBuilder`).
#[pyclass(module = "aqmlab._core", name = "FeedbackBuilder")]
#[derive(Default)]
struct PyFeedbackBuilder {
    inner: aqmlab_model::app::gcc::FeedbackBuilder,
}

#[pymethods]
impl PyFeedbackBuilder {
    #[new]
    fn new() -> PyFeedbackBuilder {
        PyFeedbackBuilder::default()
    }

    /// Packet `seq` arrived at `now_ns` (`ce`: its ECN field was CE).
    #[pyo3(signature = (seq, now_ns, ce=false))]
    fn on_packet(&mut self, seq: u64, now_ns: u64, ce: bool) {
        self.inner.on_packet_ecn(seq, aqmlab_core::Time(now_ns), ce);
    }

    /// The report due at `now_ns`: (base, end, [(seq, arrival ns)], [CE seq], made ns, its IP
    /// size in bytes as the simulator sends it), or None if nothing arrived since the last one.
    #[allow(clippy::type_complexity)]
    fn take(&mut self, now_ns: u64) -> Option<(u64, u64, Vec<(u64, u64)>, Vec<u64>, u64, u32)> {
        let r = self.inner.take(aqmlab_core::Time(now_ns))?;
        let size = r.size();
        Some((r.base, r.end, r.arrivals.iter().map(|(s, t)| (*s, t.as_nanos())).collect(), r.ce, r.made.as_nanos(), size))
    }
}

/// The call's synthetic encoder (aqmlab-model's `app::synthetic_codec`), configured from a GCC
/// video flow's engine `app` config as the simulator configures it, drawing from flow `flow`'s
/// media stream of a run seeded `seed` (the simulated call's own draws).
#[pyclass(module = "aqmlab._core", name = "SyntheticCodec")]
struct PySyntheticCodec {
    inner: aqmlab_model::app::synthetic_codec::SyntheticCodec,
    mtu: u32,
}

#[pymethods]
impl PySyntheticCodec {
    #[new]
    fn new(app_json: &str, seed: u64, flow: u32) -> PyResult<PySyntheticCodec> {
        let (cfg, fps, mtu) = gcc_call(app_json)?;
        let rng = aqmlab_model::streams::flow_media(seed, flow);
        let inner = aqmlab_model::app::synthetic_codec::SyntheticCodec::new(cfg.codec(fps), cfg.start_rate_bps as f64, rng);
        Ok(PySyntheticCodec { inner, mtu })
    }

    /// The sender asks for `bps` from `now_ns` on (in force after the encoder's reaction lag).
    fn set_target(&mut self, now_ns: u64, bps: f64) -> PyResult<()> {
        if !(bps.is_finite() && bps > 0.0) {
            return Err(value_error("SyntheticCodec.set_target: bps must be a positive number"));
        }
        self.inner.set_target(aqmlab_core::Time(now_ns), bps);
        Ok(())
    }

    /// The frame captured at `now_ns`: (payload bytes, key frame, rate in force bit/s, the IP
    /// sizes of its RTP packets at the flow's MTU).
    fn next_frame(&mut self, now_ns: u64) -> (u64, bool, f64, Vec<u32>) {
        let e = self.inner.next_frame(aqmlab_core::Time(now_ns));
        (e.size_bytes, e.key, e.rate_bps, aqmlab_model::app::rtp::packetize(e.size_bytes, self.mtu))
    }
}

/// A call's frames (capture ns, payload bytes, key, rate bit/s, packets, packets received,
/// last arrival ns) as the `rtc_frames` and `rtc_sessions` tables of call `flow`, built by the
/// simulator's table code (aqmlab-model's `app::call_frames`).
#[pyfunction]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn call_tables<'py>(
    py: Python<'py>,
    flow: u32,
    frames: Vec<(u64, u32, bool, f64, u32, u32, u64)>,
    deadline_ns: u64,
    end_ns: u64,
    targets: Vec<f64>,
    reports_sent: u64,
    reports_received: u64,
) -> PyResult<Bound<'py, PyDict>> {
    use aqmlab_core::Time;
    use aqmlab_model::app::call_frames::{frames_table, session_table, FrameLog, SessionCounts};
    let logs: Vec<FrameLog> = frames
        .into_iter()
        .map(|(at, payload, key, rate_bps, packets, received, last)| FrameLog {
            at: Time(at),
            payload,
            key,
            rate_bps,
            packets,
            received,
            last_arrival: Time(last),
        })
        .collect();
    if logs.iter().any(|fr| fr.received > 0 && fr.last_arrival < fr.at) {
        return Err(value_error("call_tables: a frame's last arrival is before its capture"));
    }
    let counts = SessionCounts { deadline: Time(deadline_ns), end: Time(end_ns), targets: &targets, reports_sent, reports_received };
    let out = PyDict::new(py);
    out.set_item("rtc_frames", table_to_py(py, frames_table(&logs, flow))?)?;
    out.set_item("rtc_sessions", table_to_py(py, session_table(&logs, flow, counts))?)?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_time, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(parse_limit, m)?)?;
    m.add_function(wrap_pyfunction!(parse_delivery_trace, m)?)?;
    m.add_function(wrap_pyfunction!(synthetic_trace, m)?)?;
    m.add_function(wrap_pyfunction!(check_sim_config, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_class::<Router>()?;
    m.add_class::<AbrClient>()?;
    m.add_class::<PyGccSender>()?;
    m.add_class::<PyFeedbackBuilder>()?;
    m.add_class::<PySyntheticCodec>()?;
    m.add_function(wrap_pyfunction!(call_tables, m)?)?;
    m.add("ConfigError", m.py().get_type::<ConfigError>())?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add_function(wrap_pyfunction!(monotonic_ns, m)?)?;
    m.add_function(wrap_pyfunction!(abr_choose, m)?)?;
    m.add_function(wrap_pyfunction!(udp_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(start_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(replayed_frames_table, m)?)?;
    m.add_function(wrap_pyfunction!(replayed_flow_samples, m)?)?;
    m.add_function(wrap_pyfunction!(replayed_flows_table, m)?)?;
    m.add_function(wrap_pyfunction!(replayed_media_table, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    add_record_names(m)?;
    Ok(())
}

/// The record schema's names and the header sizes, so that Python spells none of them itself:
/// `PACKET_EVENT_NAMES[code]` names a `packets.event` code, `DROP_REASON_NAMES[code]` a
/// `packets.reason` code (`NO_REASON` when the event is not a drop), the header sizes (bytes)
/// turn IP sizes into payloads, and `LOGGED_SAMPLE_COLUMNS` is the width of an emulated
/// sender's `flow_samples` row.
fn add_record_names(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use aqmlab_model::{headers, record};
    m.add("PACKET_EVENT_NAMES", record::event::NAMES.to_vec())?;
    m.add("DROP_REASON_NAMES", record::drop_reason_names().to_vec())?;
    m.add("NO_REASON", record::NO_REASON)?;
    m.add("UDP_IP_HEADER_BYTES", headers::UDP_IP_HEADER_BYTES)?;
    m.add("TCP_IP_HEADER_BYTES", headers::TCP_IP_HEADER_BYTES)?;
    m.add("RTP_UDP_IP_HEADER_BYTES", headers::RTP_UDP_IP_HEADER_BYTES)?;
    m.add("LOGGED_SAMPLE_COLUMNS", aqmlab_model::replay::LOGGED_SAMPLE_COLUMNS)?;
    Ok(())
}
