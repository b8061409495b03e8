"""Running one scenario in the simulator and writing its results directory atomically.

A results directory holds:

* ``packets.parquet``      bottleneck events (arrive/enqueue/drop/dequeue), one row each
* ``queue.parquet``        bottleneck queue samples (instantaneous and the discipline's average)
* ``flow_samples.parquet`` per-flow cumulative delivered bytes, cwnd, ssthresh, srtt, rto
* ``flows.parquet``        one row per flow: group, start/stop, delays, totals
* ``periods.parquet/.csv`` metrics per measurement period
* ``flow_periods.parquet`` per-flow throughput and goodput per period
* ``summary.json``         run facts and period metrics; ``scenario.toml`` the resolved input
* ``bottleneck.pcap``      when ``records.pcap`` is on

Everything is written to a hidden sibling directory first and renamed into place at the end,
so an error or Ctrl-C never leaves a half-written result. Nothing wall-clock dependent is
written, so the same scenario and seed give the same bytes.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import tomli_w

from aqmlab import _core, arrow_records
from aqmlab.metrics import NS, flow_period_values, period_rows
from aqmlab.outdir import check_output, write_marker
from aqmlab.scenario import Scenario

if TYPE_CHECKING:  # pandas loads where DataFrames are made: `aqmlab run` writes without them (issue 22)
    import pandas as pd

#: Show a progress bar only for runs that take longer than this (seconds of wall time).
PROGRESS_AFTER_S = 2.0


@dataclass
class RunResult:
    scenario: Scenario
    out_dir: Path | None
    tables: dict[str, pd.DataFrame]
    periods: pd.DataFrame
    flow_periods: pd.DataFrame
    summary: dict[str, Any]
    pcap: bytes | None = None
    wall_s: float = 0.0
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class PeriodValues:
    """A run's metrics per period as a sweep stores them (`simulate_periods`): the rows of
    `simulate`'s ``periods`` table (`metrics.period_rows`), and per period each flow's throughput
    and goodput (Mbit/s, the columns of its ``flow_periods``) with each flow's group name, in the
    order of ``flows.parquet``."""

    scenario: Scenario
    periods: list[dict[str, Any]]
    bounds: list[tuple[int, int]]  # each period's [start, end) in ns, as `Scenario.periods` gives them
    group_names: list[str]
    flow_values: list[tuple[np.ndarray, np.ndarray]]  # per period: (throughput_mbps, goodput_mbps)


def simulate(scenario: Scenario, progress: bool = True) -> RunResult:
    """Runs the scenario in the simulator and computes its metrics, without writing files."""
    return _result(scenario, *_simulated(scenario, progress))


def _result(scenario: Scenario, sim: Any, raw: dict[str, Any], pcap: bytes | None, wall: float) -> RunResult:
    """The records of a finished simulation as DataFrames, with their metrics."""
    import pandas as pd

    from aqmlab.metrics import flow_period_metrics
    from aqmlab.records import name_packet_events, null_unset_ssthresh, to_frame
    from aqmlab.video import annotate_frames

    tables = {name: to_frame(cols) for name, cols in raw.items()}
    flows = tables["flows"]
    flows["group_name"] = [scenario.flows[g].name for g in flows["group"]]
    if "flow_samples" in tables:
        tables["flow_samples"] = null_unset_ssthresh(tables["flow_samples"])
    if "frames" in tables:
        tables["frames"] = annotate_frames(tables["frames"])
    packets = tables.get("packets")
    if packets is not None:
        name_packet_events(packets)
    periods = scenario.periods()
    rows = period_rows(packets, flows, periods) if packets is not None else []
    if packets is not None:
        per = pd.DataFrame(rows)
        flow_per = flow_period_metrics(packets, tables["flow_samples"], flows, periods)
    else:
        per, flow_per = pd.DataFrame(), pd.DataFrame()
    return RunResult(scenario, None, tables, per, flow_per, _summary(scenario, sim, rows), pcap, wall)


def _summary(scenario: Scenario, sim: Any, period_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """summary.json's dict. The period metrics are written as computed (NaN as null): until
    issue 22's pandas-free path they went through pandas' JSON writer, which keeps 10 decimal
    places, so a value's last digits may differ from an earlier version's file."""
    return {
        "scenario": scenario.name,
        "seed": scenario.seed,
        "engine": "sim",
        "aqmlab_version": _core.__version__,
        "sim": json.loads(sim.summary_json()),
        "periods": [{k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
                    for row in period_rows],
        "event_names": arrow_records.EVENT_NAMES,
        "drop_reasons": arrow_records.DROP_REASONS,
    }


@dataclass
class WrittenRun:
    """A simulated run written to its results directory by `simulate_to_directory`: what the
    command line prints from (`aqmlab.api.period_table` reads `summary`, `scenario`, `out_dir`)."""

    scenario: Scenario
    out_dir: Path
    summary: dict[str, Any]
    wall_s: float


def simulate_to_directory(scenario: Scenario, raw_scenario: dict[str, Any], out_dir: Path, force: bool = False,
                          progress: bool = True) -> WrittenRun:
    """`simulate` then `write_results`: the same files, byte for byte (tests/test_run_arrow.py),
    built from the binding's columns straight to Arrow without pandas (`aqmlab.arrow_records`),
    which `aqmlab run` spends no time importing (issue 22). A run that records a table only the
    pandas path builds (`arrow_records.covers`) takes that path."""
    out_dir = Path(out_dir)
    check_output(out_dir, force, option="")
    sim, raw, pcap, wall = _simulated(scenario, progress)
    if not arrow_records.covers(raw):
        result = _result(scenario, sim, raw, pcap, wall)
        write_results(result, raw_scenario, out_dir, force)
        return WrittenRun(scenario, out_dir, result.summary, wall)
    columns = {name: arrow_records.numpy_columns(cols) for name, cols in raw.items()}
    group_names = [g.name for g in scenario.flows]
    tables = {name: arrow_records.table(name, cols, group_names) for name, cols in columns.items()}
    rows: list[dict[str, Any]] = []
    flow_periods = None
    if "packets" in columns:
        packets = columns["packets"]  # event codes, checked by `arrow_records.table` above
        periods = scenario.periods()
        rows = period_rows(packets, columns["flows"], periods)
        flow_periods = _flow_periods_table(columns["flows"], tables["flows"], periods,
                                           flow_period_values(packets, columns["flow_samples"], columns["flows"],
                                                              periods))
    summary = _summary(scenario, sim, rows)
    with atomic_directory(out_dir) as tmp:
        for name, table in tables.items():
            _write_table(table, tmp / f"{name}.parquet")
        if rows:
            _write_table(arrow_records.rows_table(rows), tmp / "periods.parquet")
            (tmp / "periods.csv").write_text(arrow_records.csv_text(rows))
            assert flow_periods is not None
            _write_table(flow_periods, tmp / "flow_periods.parquet")
        _write_rest(tmp, summary, raw_scenario, pcap)
    return WrittenRun(scenario, out_dir, summary, wall)


def _flow_periods_table(flows: dict[str, np.ndarray], flows_table: pa.Table, periods: list[tuple[int, int]],
                        values: list[tuple[np.ndarray, np.ndarray]]) -> pa.Table:
    """``flow_periods`` as `aqmlab.metrics.flow_period_metrics` makes it, in Arrow: per period
    a row per flow (its id, group index and name, throughput and goodput in Mbit/s)."""
    n = len(flows["flow"])
    reps = len(periods)
    return pa.table({
        "start_s": arrow_records.array(np.repeat([a / NS for a, _ in periods], n).astype(float)),
        "end_s": arrow_records.array(np.repeat([b / NS for _, b in periods], n).astype(float)),
        "flow": arrow_records.array(np.tile(flows["flow"], reps)),
        "group": arrow_records.array(np.tile(flows["group"], reps)),
        "group_name": arrow_records.large_strings(flows_table.column("group_name").to_pylist() * reps),
        "throughput_mbps": arrow_records.array(np.concatenate([t for t, _ in values]) if values else np.array([])),
        "goodput_mbps": arrow_records.array(np.concatenate([g for _, g in values]) if values else np.array([])),
    })


def simulate_periods(scenario: Scenario) -> PeriodValues:
    """Runs the scenario and computes only what a sweep stores: `simulate`'s period metrics and
    per-flow period values, from the same record columns by the same functions (so the same
    values, bit for bit), without the record tables as DataFrames, the summary or the pcap.
    A sweep worker's path (issue 22): building the tables it never stores was most of its time
    beside the simulation. Needs the packet records (a sweep checks that at planning)."""
    _sim, raw, _pcap, _wall = _simulated(scenario, progress=False)
    if "packets" not in raw:
        raise ValueError("records.packet_events: must be true for the period metrics")
    from aqmlab.records import name_packet_events, to_columns

    flows = to_columns(raw["flows"])
    packets = name_packet_events(to_columns(raw["packets"]))  # the event codes named and checked
    samples = to_columns(raw["flow_samples"])
    periods = scenario.periods()
    return PeriodValues(scenario, period_rows(packets, flows, periods), periods,
                        [scenario.flows[g].name for g in flows["group"].tolist()],
                        flow_period_values(packets, samples, flows, periods))


def _simulated(scenario: Scenario, progress: bool) -> tuple[Any, dict[str, Any], bytes | None, float]:
    """The finished simulation, its records (the binding's raw columns), its pcap and its wall time."""
    sim = _core.Simulation(json.dumps(scenario.to_sim_config()))
    started = time.perf_counter()
    _run_with_progress(sim, scenario, progress)
    wall = time.perf_counter() - started
    raw, pcap = sim.take_records()
    return sim, raw, pcap, wall


def _run_with_progress(sim: Any, scenario: Scenario, progress: bool) -> None:
    """Runs `sim` in a worker thread (the GIL is released in Rust) so that the main thread can
    draw a progress bar and turn Ctrl-C into a clean cancellation."""
    error: list[BaseException] = []

    def work() -> None:
        try:
            sim.run()
        except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
            error.append(e)

    worker = threading.Thread(target=work, name="aqmlab-sim", daemon=True)
    worker.start()
    try:
        _wait(worker, sim, scenario, progress)
    except KeyboardInterrupt:
        sim.cancel()
        worker.join()
        raise
    if error:
        raise error[0]


def _wait(worker: threading.Thread, sim: Any, scenario: Scenario, progress: bool) -> None:
    worker.join(PROGRESS_AFTER_S)
    if not worker.is_alive() or not progress:
        worker.join()
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    total = scenario.duration / 1e9
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                  TextColumn("{task.completed:.1f}/{task.total:.0f} s simulated"),
                  TimeRemainingColumn(), transient=True) as bar:
        task = bar.add_task(scenario.name, total=total)
        while worker.is_alive():
            bar.update(task, completed=sim.progress_ns() / 1e9)
            worker.join(0.2)


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    _write_table(pa.Table.from_pandas(df, preserve_index=False), path)


#: How every results table is laid out in Parquet, chosen for the time it takes to write
#: (benches/README.md, "2026-11-28: writing Parquet"): with pyarrow's defaults, `packets.parquet`
#: of a 600-flow run (2.9 M rows) took a fifth of the whole `aqmlab run`, most of it building
#: dictionaries for columns with too many distinct values to profit and statistics on every
#: column. The tables read back the same; a reader needs Parquet's delta encoding (pyarrow,
#: pandas, DuckDB have it; docs/tables.md).
#: - Rising integer columns (the event time, the packet id) are delta-encoded: a few bits a row.
_DELTA_COLUMNS = ("t_ns", "uid")
#: - A column stays dictionary-encoded while its dictionary page fits 64 KiB (8,192 distinct
#:   64-bit values; pyarrow's default is 1 MiB), then falls back to plain encoding: the codes,
#:   flow ids and sizes keep their dictionaries, counters and sojourn times stop paying for one.
_DICTIONARY_PAGE_BYTES = 64 * 1024
#: - Min/max statistics only for what readers filter row groups on: the time and the flow.
_STATISTICS_COLUMNS = ("t_ns", "flow")


def _write_table(table: pa.Table, path: Path) -> None:
    # Drop pandas' metadata blob: it is not needed to read the file back and keeps the bytes
    # independent of the pandas version (and the same whichever path built the table).
    table = table.replace_schema_metadata(None)
    delta = {f.name: "DELTA_BINARY_PACKED" for f in table.schema
             if f.name in _DELTA_COLUMNS and pa.types.is_integer(f.type)}
    pq.write_table(
        table,
        path,
        compression="zstd",
        use_dictionary=[name for name in table.column_names if name not in delta],
        column_encoding=delta or None,
        dictionary_pagesize_limit=_DICTIONARY_PAGE_BYTES,
        write_statistics=[name for name in table.column_names if name in _STATISTICS_COLUMNS],
    )


def write_results(result: RunResult, raw_scenario: dict[str, Any], out_dir: Path, force: bool = False) -> Path:
    """Writes the results directory atomically: to a hidden sibling, then renamed into place.
    Raises OutputRefused if `out_dir` exists and is not a directory aqmlab wrote (see
    aqmlab.outdir), or exists and `force` is false."""
    out_dir = Path(out_dir)
    check_output(out_dir, force, option="")
    with atomic_directory(out_dir) as tmp:
        for name, df in result.tables.items():
            write_parquet(df, tmp / f"{name}.parquet")
        if len(result.periods):
            write_parquet(result.periods, tmp / "periods.parquet")
            result.periods.to_csv(tmp / "periods.csv", index=False, float_format="%.6g")
            write_parquet(result.flow_periods, tmp / "flow_periods.parquet")
        _write_rest(tmp, result.summary, raw_scenario, result.pcap)
    result.out_dir = out_dir
    return out_dir


def _write_rest(tmp: Path, summary: dict[str, Any], raw_scenario: dict[str, Any], pcap: bytes | None) -> None:
    """summary.json, scenario.toml and the pcap: the files besides the tables."""
    text = json.dumps(summary, indent=2, sort_keys=True, default=_json_default)
    (tmp / "summary.json").write_text(text + "\n")
    (tmp / "scenario.toml").write_text(tomli_w.dumps(raw_scenario))
    if pcap is not None:
        (tmp / "bottleneck.pcap").write_bytes(pcap)


@contextlib.contextmanager
def atomic_directory(target: Path):
    """Yields a fresh hidden sibling of `target`, marked as aqmlab's (aqmlab.outdir.MARKER); on
    success it replaces `target`, on any error or interruption it is removed, so `target` is
    never half written. It replaces only a directory aqmlab wrote: anything else at `target`
    raises OutputRefused before the rename and is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_siblings(target)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    write_marker(tmp)
    try:
        yield tmp
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _remove_stale_siblings(target: Path) -> None:
    """Removes the hidden siblings (`.NAME.tmp-PID`, `.NAME.old-PID`) that a process killed
    outright (SIGKILL, power loss) had no chance to clean up; a live process's are kept."""
    for sibling in target.parent.glob(f".{glob.escape(target.name)}.*-*"):
        kind, _, pid = sibling.name.removeprefix(f".{target.name}.").partition("-")
        if kind in ("tmp", "old") and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(sibling, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _replace_dir(new: Path, target: Path) -> None:
    check_output(target, force=True, option="")  # the last look: only ever replace our own
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        target.rename(old)
    new.rename(target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    raise TypeError(f"not JSON serializable: {type(o)}")


def read_results(out_dir: Path) -> dict[str, pd.DataFrame]:
    """Loads every Parquet table of a results directory."""
    import pandas as pd

    return {p.stem: pd.read_parquet(p) for p in sorted(Path(out_dir).glob("*.parquet"))}
