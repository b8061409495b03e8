"""Flent's RRUL test (Realtime Response Under Load) run in the simulator or the emulator.

Flent's `rrul` (flent/tests/rrul.conf) runs, over one bottleneck, four TCP uploads and four
TCP downloads marked BE, BK (CS1), CS5 and EF, for LENGTH seconds starting DELAY seconds in,
and four latency probes for the whole LENGTH + 2 DELAY: ICMP ping and three UDP round-trip
probes (irtt, or netperf UDP_RR without it) marked EF, BK and BE, each one request per
STEP_SIZE. Its defaults: LENGTH 60 s, DELAY 5 s, STEP_SIZE 0.2 s (flent/settings.py).

Here the test is a rewrite of a scenario: its topology is kept, its flows are replaced by
RRUL's twelve groups, one flow each. Downloads run R1 -> R2 over the bottleneck link, uploads
R2 -> R1 over the reverse link (a flow `path` of [1, 0]); the probes' client sits behind R2
like the TCP client, so a request crosses the reverse link and its reply the bottleneck. The
reverse link carries the bottleneck's discipline, rate and delay unless the scenario gives
`topology.reverse` (then it is used as written, e.g. an asymmetric uplink): the router an RRUL
user tests shapes both directions of its WAN link with one discipline.

In the emulator (`engine="emu"`, aqmlab.emu) the same rewritten scenario runs on kernel TCP
(cubic) through the userspace router, the discipline on both directions; the probes are
Flent's own tools when installed (iputils `ping` for the ICMP series, `irtt` against an irtt
server for the UDP series: aqmlab.emu.probe_tools), else the emulator's own (ICMP echoes from
a raw socket, answered by the kernel; UDP requests echoed by a process). Which source made
each series is in the summary (`rrul.probe_sources`) and in the file's SERIES_META.
Throughput is the bytes the receiving application read per step, probes are round trips, as in
the simulator; the same code below builds the tables and the Flent file, whose times are the
run's real wall-clock times.

Output: the run's own results directory (Parquet tables as `aqmlab run` writes them, plus
`rrul_throughput.parquet` and `rrul_probes.parquet`) and `rrul.flent.gz`, a file in Flent's
data format (flent/resultset.py, format version 4) that `flent -i` opens and plots.
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.emu import probe_tools

#: Flent's defaults (flent/settings.py: --length, --delay, --step-size).
LENGTH_S = 60
DELAY_S = 5
STEP_S = 0.2

#: The data file format Flent writes (flent/resultset.py FILEFORMAT_VERSION).
FLENT_FORMAT_VERSION = 4

#: A fixed start time for the file's TIME and T0: results carry no wall-clock value, so the
#: same scenario and seed give the same bytes. Raw values are stamped T0 + simulated seconds.
T0_ISO = "2000-01-01T00:00:00.000000Z"
T0_EPOCH = 946_684_800.0

#: DiffServ code points of Flent's markings (CS0, CS1, CS5, EF; RFC 2474, RFC 3246).
DSCP = {"BE": 0, "BK": 8, "CS5": 40, "EF": 46}

#: Host names in the file: rrul.conf names probe series ids after HOST.
HOST = "server"


@dataclass(frozen=True)
class Series:
    """One of RRUL's measured data series and the flow group that produces it."""

    name: str  # Flent's data series name (rrul.conf DATA_SETS)
    group: str  # aqmlab's flow group name
    kind: str  # "upload", "download" or "probe"
    mark: str  # key of DSCP


#: RRUL's measured series in rrul.conf's order, then its four probes.
SERIES = [
    *(Series(f"TCP upload {m}", f"tcp_up_{m}", "upload", m) for m in ("BE", "BK", "CS5", "EF")),
    *(Series(f"TCP download {m}", f"tcp_down_{m}", "download", m) for m in ("BE", "BK", "CS5", "EF")),
    Series("Ping (ms) UDP EF", "udp_EF", "probe", "EF"),
    Series("Ping (ms) UDP BK", "udp_BK", "probe", "BK"),
    Series("Ping (ms) UDP BE", "udp_BE", "probe", "BE"),
    Series("Ping (ms) ICMP", "icmp", "probe", "BE"),
]

#: rrul.conf's computed series, in its order: (name, runner, the series it applies to).
_UPLOADS = [s.name for s in SERIES if s.kind == "upload"]
_DOWNLOADS = [s.name for s in SERIES if s.kind == "download"]
_PROBES = [s.name for s in SERIES if s.kind == "probe"]
COMPUTED = [
    ("TCP upload avg", "average", _UPLOADS),
    ("TCP upload sum", "sum", _UPLOADS),
    ("TCP download avg", "average", _DOWNLOADS),
    ("TCP download sum", "sum", _DOWNLOADS),
    ("TCP totals", "sum", _UPLOADS + _DOWNLOADS),
    ("Ping (ms) avg", "average", _PROBES),
]
#: The order of the results in the file: rrul.conf's DATA_SETS order.
RESULT_ORDER = [*_UPLOADS, "TCP upload avg", "TCP upload sum", *_DOWNLOADS, "TCP download avg",
                "TCP download sum", "TCP totals", *_PROBES, "Ping (ms) avg"]

#: Access links far faster than any bottleneck, so that only the bottleneck queues.
ACCESS_RATE = "10Gbps"
#: TCP flows start within this window after DELAY (stream "group/<name>/start"), as Flent's
#: netperf processes start a few ms apart: flows started at the same instant over equal paths
#: would run in lock step, which no real test does. A choice; Flent states no value.
START_JITTER = "50ms"
#: IP size of every probe request and reply: ping's default 56 data bytes + ICMP 8 + IPv4 20.
#: irtt's packets are of similar size (a header and timestamps); one size keeps the four
#: probes comparable. A choice.
PROBE_SIZE = "84B"


#: Flent runs netperf on Linux hosts: their TCP is the simulator's "linux" profile (CUBIC, SACK,
#: PRR, initial window 10, ...; ECN off, as Linux only accepts it by default).
TCP_PROFILE = "linux"


class RrulError(ValueError):
    """A bad RRUL option, named as the command line spells it."""


def seconds(option: str, text: str) -> float:
    """A command-line number of seconds ("60", "0.5"), or an RrulError naming the option."""
    try:
        return float(text)
    except ValueError:
        raise RrulError(f"{option}: {text!r} is not a number of seconds") from None


def check_options(length_s: float, delay_s: float, step_s: float) -> None:
    """Refuses options Flent would refuse or that leave no test, one line naming the option."""
    if not (isinstance(length_s, (int, float)) and math.isfinite(length_s) and length_s > 0):
        raise RrulError(f"--length: {length_s} s; must be a positive number of seconds (Flent's default {LENGTH_S})")
    if not (math.isfinite(delay_s) and delay_s >= 0):
        raise RrulError(f"--delay: {delay_s} s; must be >= 0 seconds (Flent's default {DELAY_S})")
    if not (math.isfinite(step_s) and 0 < step_s <= length_s):
        raise RrulError(f"--step-size: {step_s} s; must be > 0 and at most --length (Flent's default {STEP_S})")


def rrul_data(data: dict[str, Any], length_s: float = LENGTH_S, delay_s: float = DELAY_S,
              step_s: float = STEP_S) -> dict[str, Any]:
    """The scenario file's data (after `extends` and overrides) turned into the RRUL test: its
    topology, seed and queue sampling kept; its flows, duration and metric periods replaced."""
    check_options(length_s, delay_s, step_s)
    out = {k: copy.deepcopy(v) for k, v in data.items() if k not in ("flows", "reference", "metrics")}
    out["name"] = f"{data.get('name', 'scenario')}-rrul"
    total = length_s + 2 * delay_s
    out["duration"] = f"{_ms(total)}ms"
    topo = out.setdefault("topology", {})
    if isinstance(topo, dict) and "reverse" not in topo and isinstance(topo.get("bottleneck"), dict):
        topo["reverse"] = copy.deepcopy(topo["bottleneck"])
    records = dict(out.get("records") or {})
    # Per-flow throughput comes from the flow samples, one per step as Flent's netperf -D
    # reports; packet events of a 60 s test at any rate would be large and are not needed.
    records.update({"flow_sample": f"{_ms(step_s)}ms", "packet_events": False, "pcap": False})
    out["records"] = records
    flows = []
    for s in SERIES:
        g: dict[str, Any] = {"name": s.group, "count": 1, "dscp": DSCP[s.mark], "access_rate": ACCESS_RATE,
                             "path": [0, 1] if s.kind == "download" else [1, 0]}
        if s.kind == "probe":
            g.update(app={"kind": "ping", "interval": f"{_ms(step_s)}ms", "packet_size": PROBE_SIZE},
                     start="0s", stop=f"{_ms(total)}ms")
        else:
            g.update(app={"kind": "bulk", "tcp": {"profile": TCP_PROFILE}}, start=f"{_ms(delay_s)}ms",
                     start_jitter=START_JITTER, stop=f"{_ms(delay_s + length_s)}ms")
        flows.append(g)
    out["flows"] = flows
    return out


def _ms(seconds: float) -> int:
    """Seconds as whole milliseconds (the scenario's units are strings)."""
    return int(round(seconds * 1000))


# ---- tables ---------------------------------------------------------------------------------


def throughput_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per TCP flow and step: goodput in Mbit/s over the step ending at `t_s` (bytes delivered
    in order to the receiving application), while the flow runs. Columns: series, group, flow,
    direction, t_s, mbps."""
    flows = tables["flows"]
    samples = tables["flow_samples"]
    by_group = {s.group: s for s in SERIES}
    rows = []
    for f in flows.itertuples():
        s = by_group.get(f.group_name)
        if s is None or s.kind == "probe":
            continue
        fs = samples[samples["flow"] == f.flow].sort_values("t_ns")
        t = fs["t_ns"].to_numpy()
        delivered = fs["delivered_bytes"].to_numpy().astype(np.float64)
        dt = np.diff(t) / 1e9
        mbps = np.diff(delivered) * 8 / dt / 1e6
        end = t[1:]
        running = (end > f.start_ns) & (end <= f.stop_ns)
        rows.append(pd.DataFrame({"series": s.name, "group": s.group, "flow": np.uint32(f.flow),
                                  "direction": s.kind, "t_s": end[running] / 1e9, "mbps": mbps[running]}))
    return pd.concat(rows, ignore_index=True)


def probes_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per probe request: its series, send time, reply time and RTT in ms (NaN when no reply
    came back before the run ended). Columns: series, group, flow, seq, sent_s, reply_s, rtt_ms."""
    flows = tables["flows"]
    probes = tables["probes"]
    series = {s.group: s.name for s in SERIES}
    names = flows.set_index("flow")["group_name"]
    p = probes.copy()
    group = names.loc[p["flow"]].to_numpy()
    rtt_ms = p["rtt_ns"].astype("float64").to_numpy() / 1e6
    sent_s = p["sent_ns"].to_numpy() / 1e9
    return pd.DataFrame({"series": [series[g] for g in group], "group": group, "flow": p["flow"].to_numpy(),
                         "seq": p["seq"].to_numpy(), "sent_s": sent_s, "reply_s": sent_s + rtt_ms / 1e3,
                         "rtt_ms": rtt_ms})


# ---- Flent's data format --------------------------------------------------------------------


def _grid(raw: list[tuple[float, float]], xs: np.ndarray, step_s: float) -> list[float | None]:
    """A raw series (time, value) put on the step grid as Flent's timeseries aggregator does
    (flent/aggregators.py): at each grid time, the value interpolated linearly between the
    nearest samples before and after it, if the next sample is within 5 steps (half a step
    before the first sample); past the last sample, the last value once, then gaps."""
    out: list[float | None] = []
    if not raw:
        return [None] * len(xs)
    ts = np.array([r[0] for r in raw])
    vs = [r[1] for r in raw]
    last_value: float | None = None
    for x in xs:
        i = int(np.searchsorted(ts, x, side="right"))  # first sample after x
        reach = 5 * step_s
        at_end = i == len(ts)
        if at_end:
            t_next, v_next = ts[-1], vs[-1]
            t_prev = None
        else:
            t_next, v_next = ts[i], vs[i]
            t_prev = ts[i - 1] if i > 0 else None
            if i == 0:
                reach = 0.5 * step_s
        value: float | None
        if abs(x - t_next) > reach:
            value = None
        elif t_prev is None:
            value = None if at_end and last_value in (v_next, None) else v_next
        else:
            v_prev = vs[i - 1]
            value = v_prev + (v_next - v_prev) / (t_next - t_prev) * (x - t_prev)
        out.append(None if value is None else float(value))
        last_value = out[-1]
    return out


def _computed(kind: str, columns: list[list[float | None]]) -> list[float | None]:
    """Flent's average and sum runners: over the series' values present at each step."""
    out: list[float | None] = []
    for values in zip(*columns, strict=True):
        present = [v for v in values if v is not None]
        if not present:
            out.append(None)
        else:
            total = math.fsum(present)
            out.append(total / len(present) if kind == "average" else total)
    return out


def flent_document(throughput: pd.DataFrame, probes: pd.DataFrame, *, title: str, note: str,
                   length_s: float, delay_s: float, step_s: float, command: str,
                   generator: str, t0_epoch: float = T0_EPOCH,
                   probe_sources: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    """The RRUL results as the JSON document Flent writes (flent/resultset.py `serialise`):
    metadata, x_values (the step grid, in seconds from T0), results (each series on the grid)
    and raw_values (each series' samples, stamped T0 + seconds). T0 is the fixed T0_EPOCH
    unless given (the emulator gives its run's real start). `probe_sources` (the emulator's,
    per probe series name: "source", and for a tool "version" and "command") goes into each
    probe series' SERIES_META: PROBE_SOURCE, the tool's version and command line, and the Flent
    runner that would have produced it (PingRunner, IrttRunner) as RUNNER."""
    total = length_s + 2 * delay_s
    steps = int(math.ceil(total / step_s - 1e-9))
    xs = np.arange(steps + 1) * step_s
    raw: dict[str, list[tuple[float, float]]] = {}
    for s in SERIES:
        if s.kind == "probe":
            p = probes[(probes["series"] == s.name) & probes["rtt_ms"].notna()].sort_values("reply_s")
            raw[s.name] = list(zip(p["reply_s"].tolist(), p["rtt_ms"].tolist(), strict=True))
        else:
            tp = throughput[throughput["series"] == s.name].sort_values("t_s")
            raw[s.name] = list(zip(tp["t_s"].tolist(), tp["mbps"].tolist(), strict=True))
    results: dict[str, list[float | None]] = {name: _grid(r, xs, step_s) for name, r in raw.items()}
    series_meta: dict[str, dict[str, Any]] = {}
    for i, s in enumerate(SERIES):
        values = [v for _, v in raw[s.name]]
        series_meta[s.name] = {
            "RUNNER": "aqmlab", "IDX": i, "UNITS": "ms" if s.kind == "probe" else "Mbits/s",
            "COMMAND": f"{command} (flow group {s.group}, DSCP {DSCP[s.mark]})",
            "MEAN_VALUE": math.fsum(values) / len(values) if values else None,
            "MARKING": s.mark,
        }
    for name, src in (probe_sources or {}).items():
        meta = series_meta[name]
        meta["PROBE_SOURCE"] = src["source"]
        if "command" in src:
            meta.update(RUNNER=probe_tools.FLENT_RUNNER[src["source"]], COMMAND=src["command"],
                        PROBE_VERSION=src.get("version"))
    for name, kind, keys in COMPUTED:
        results[name] = _computed(kind, [results[k] for k in keys])
        means = [series_meta[k]["MEAN_VALUE"] for k in keys if series_meta[k]["MEAN_VALUE"] is not None]
        mean = None if not means else (math.fsum(means) / len(means) if kind == "average" else math.fsum(means))
        series_meta[name] = {"RUNNER": "AverageRunner" if kind == "average" else "SumRunner",
                             "COMMAND": "Average (computed)" if kind == "average" else "Sum (computed)",
                             "COMPUTED_LATE": False, "MEAN_VALUE": mean,
                             "UNITS": series_meta[keys[0]]["UNITS"]}
        raw[name] = []
    metadata = {
        "NAME": "rrul", "TITLE": title, "NOTE": note, "HOST": HOST, "HOSTS": [HOST], "LOCAL_HOST": "client",
        "TIME": _iso(t0_epoch), "T0": _iso(t0_epoch), "LENGTH": length_s, "TOTAL_LENGTH": total, "STEP_SIZE": step_s,
        "TEST_PARAMETERS": {}, "FLENT_VERSION": None, "IP_VERSION": 4, "BATCH_NAME": None,
        "BATCH_TIME": None, "BATCH_TITLE": None, "BATCH_UUID": None, "DATA_FILENAME": "rrul.flent.gz",
        "HTTP_GETTER_URLLIST": None, "HTTP_GETTER_DNS": None, "HTTP_GETTER_WORKERS": None,
        "FAILED_RUNNERS": 0, "SERIES_META": series_meta, "GENERATOR": generator,
    }
    return {
        "metadata": metadata,
        "version": FLENT_FORMAT_VERSION,
        "x_values": [round(float(x), 9) for x in xs],
        "results": {name: results[name] for name in RESULT_ORDER},
        "raw_values": {name: [{"t": t0_epoch + t, "val": v} for t, v in raw[name]] for name in RESULT_ORDER},
    }


def _iso(epoch_s: float) -> str:
    """Seconds since the Unix epoch as Flent writes its times (UTC, microseconds, "Z")."""
    import datetime

    if epoch_s == T0_EPOCH:
        return T0_ISO
    t = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def write_flent(doc: dict[str, Any], path: Path) -> None:
    """Gzipped JSON as Flent writes it (indent 2, sorted keys), with a zero gzip timestamp and
    no file name in the header so that the bytes depend on the results only."""
    text = json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(text.encode())
    path.write_bytes(buf.getvalue())


def read_flent(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def summary(throughput: pd.DataFrame, probes: pd.DataFrame, delay_s: float, length_s: float) -> dict[str, Any]:
    """The numbers a reader compares: mean goodput per direction (sum of its four flows) and
    probe RTT percentiles while the TCP flows run (Flent's ping_cdf cuts DELAY at each end)."""
    loaded = probes[(probes["sent_s"] >= delay_s) & (probes["sent_s"] < delay_s + length_s)]
    rtt = loaded["rtt_ms"].dropna()
    out: dict[str, Any] = {}
    for direction in ("upload", "download"):
        d = throughput[throughput["direction"] == direction]
        per_flow = d.groupby("series")["mbps"].mean()
        out[f"{direction}_mbps"] = float(per_flow.sum())
        out[f"{direction}_per_flow_mbps"] = {k: float(v) for k, v in per_flow.items()}
    out["ping_median_ms"] = float(rtt.median()) if len(rtt) else None
    out["ping_p90_ms"] = float(rtt.quantile(0.9)) if len(rtt) else None
    out["ping_p99_ms"] = float(rtt.quantile(0.99)) if len(rtt) else None
    out["probes_lost"] = int(loaded["rtt_ms"].isna().sum())
    out["probes_sent"] = int(len(loaded))
    by_series = loaded.groupby("series")["rtt_ms"].median()
    out["ping_median_ms_per_probe"] = {k: float(v) for k, v in by_series.items()}
    return out


# ---- the run --------------------------------------------------------------------------------

#: Flent's standard plots of the rrul test that `aqmlab rrul --flent-plots` asks flent for.
FLENT_PLOTS = ("all_scaled", "ping_cdf", "box_totals")


@dataclass
class RrulRun:
    out_dir: Path
    flent_file: Path
    summary: dict[str, Any]
    wall_s: float
    events: int


#: The engines `run` takes (api.run's names).
ENGINES = ("sim", "emu")
#: The flow group the emulator sends as real ICMP echoes (the other probes are UDP).
ICMP_GROUP = "icmp"


def emulated_throughput_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """An emulated run's tables as `throughput_table` reads them: `flow_samples`' delivered
    bytes replaced by the bytes the receiving application read (the emulator's `tcp_received`;
    its own `flow_samples` count bytes the sender saw acknowledged, from TCP_INFO)."""
    received = tables["tcp_received"]
    return {"flows": tables["flows"],
            "flow_samples": pd.DataFrame({"flow": received["flow"], "t_ns": received["t_ns"],
                                          "delivered_bytes": received["received_bytes"]})}


def run(name: str, out_dir: Path, *, overrides: list[str] | tuple[str, ...] = (), seed: int | None = None,
        length_s: float = LENGTH_S, delay_s: float = DELAY_S, step_s: float = STEP_S, force: bool = False,
        progress: bool = True, engine: str = "sim") -> RrulRun:
    """Runs RRUL over scenario `name` in the simulator (`engine="sim"`) or the netns emulator
    (`"emu"`, root only); writes the results directory and its `rrul.flent.gz`. Raises
    RrulError (bad option, or the emulator unavailable), ScenarioError (bad scenario field),
    or the emulator's EmulationError when one of its processes fails."""
    from aqmlab import _core
    from aqmlab.run import simulate, write_results
    from aqmlab.scenario import load, validate
    from aqmlab.scenario.overrides import apply_override

    check_options(length_s, delay_s, step_s)
    if engine not in ENGINES:
        raise RrulError(f"--engine: {engine!r}; allowed: {', '.join(ENGINES)}")
    # The test replaces the file's flows with its own twelve: an override of `flows.` is meant for
    # those (`flows.*.app.tcp.rack=false`, `flows.tcp_up_BE.dscp=0`) and is applied to them;
    # applied to the file's flows it would be thrown away unseen.
    to_flows = [o for o in overrides if o.strip().startswith("flows.")]
    sc, raw = load(name, [o for o in overrides if o not in to_flows], seed)
    data = rrul_data(raw, length_s, delay_s, step_s)
    for assignment in to_flows:
        apply_override(data, assignment)
    rsc = validate(data, f"{name} (as RRUL)")
    t0 = T0_EPOCH
    sources: dict[str, dict[str, str]] | None = None
    if engine == "emu":
        from aqmlab.emu import netns
        from aqmlab.emu.run import emulate

        missing = netns.missing_requirement()
        if missing:
            raise RrulError(f"--engine emu: {missing}")
        # Flent's own probe tools where installed, as Flent runs them; the emulator's own probe
        # for a kind whose tool is missing.
        result = emulate(rsc, icmp_groups=frozenset({ICMP_GROUP}), probe_tools=probe_tools.find())
        throughput = throughput_table(emulated_throughput_tables(result.tables))
        t0 = result.summary["emu"]["epoch_realtime_ns"] / 1e9
        by_group = result.summary["emu"]["probe_sources"]
        sources = {s.name: by_group[s.group] for s in SERIES if s.kind == "probe"}
    else:
        result = simulate(rsc, progress=progress)
        throughput = throughput_table(result.tables)
    probes = probes_table(result.tables)
    result.tables["rrul_throughput"] = throughput
    result.tables["rrul_probes"] = probes
    numbers = summary(throughput, probes, delay_s, length_s)
    result.summary["rrul"] = {"engine": engine, "length_s": length_s, "delay_s": delay_s, "step_s": step_s,
                              **numbers}
    if sources is not None:
        result.summary["rrul"]["probe_sources"] = {name: src["source"] for name, src in sources.items()}
    write_results(result, data, out_dir, force=force)
    bottleneck = rsc.topology.bottleneck
    title = f"{sc.name}: {bottleneck.qdisc.kind} both ways"
    if engine == "emu":
        ccs = sorted(set(result.summary["emu"]["congestion_control"].values()))
        assert sources is not None
        probes_note = "; ".join(f"{name}: {src['source']}" for name, src in sources.items())
        note = (f"aqmlab netns emulator, scenario {sc.name}; kernel TCP {'/'.join(ccs)}; downloads over "
                f"topology.bottleneck, uploads over topology.reverse, both through aqmlab's userspace router; "
                f"probes from {probes_note}; wall-clock times")
        generator = f"aqmlab {_core.__version__} (emulator, kernel TCP {'/'.join(ccs)})"
        events = int(sum(result.summary["emu"]["router"]["router"]["rx_frames"]))
    else:
        note = (f"aqmlab simulator, scenario {sc.name}, seed {rsc.seed}; downloads over topology.bottleneck, "
                f"uploads over topology.reverse")
        generator = f"aqmlab {_core.__version__} (simulator)"
        events = int(result.summary["sim"].get("events", 0))
    cmd = f"aqmlab rrul {name}" + (" --engine emu" if engine == "emu" else "")
    doc = flent_document(throughput, probes, title=title, note=note, length_s=length_s, delay_s=delay_s,
                         step_s=step_s, command=cmd, generator=generator, t0_epoch=t0, probe_sources=sources)
    flent_file = Path(out_dir) / "rrul.flent.gz"
    write_flent(doc, flent_file)
    return RrulRun(Path(out_dir), flent_file, result.summary["rrul"], result.wall_s, events)


def flent_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("flent") is not None


def flent_plot(flent_file: Path, plot: str, png: Path) -> None:
    """Has flent itself draw one of its plots of the file (Agg backend: no display needed).
    Raises RuntimeError with flent's own message when it fails."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "flent", "-i", str(flent_file), "-p", plot, "-o", str(png)],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0 or not png.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"flent -p {plot} failed (exit {proc.returncode}): {tail[0]}")
