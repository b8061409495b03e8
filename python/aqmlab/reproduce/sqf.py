"""Reproduction of Bonald, Muscariello and Ostallo, "Self-Prioritization of Audio and Video
Traffic" (ICC 2011): the section IV model (Figures 3 and 4), its check by simulation, and the
section V testbed as a simulation (Figures 6, 7 and 8, Table I).

Experiments (scenarios in `scenarios/sqf/`):

* ``testbed``: 5 Mbit/s VBR video + 64 kbit/s audio against n = 1, 5, 10, 15, 20 TCP downloads
  behind a 10 Mbit/s access line with a 50-packet buffer, under FIFO, FQ (DRR + LQD), SQF (+ LQD)
  and PFQ (extra row). Figure 6 is the audio and video loss against n, Figure 7 their jitter
  (RFC 3393 IPDV, mean of |IPDV|), Table I the TCP data share and Jain's index.
* ``jitter``: Figure 8, the video loss under SQF against the standard deviation delta of a
  source delay, on a 10 and a 100 Mbit/s line (n = 5 downloads: our choice, the paper is silent).
* ``model``: a Poisson stream of peak rate lambda against n TCP flows under SQF with the
  parameters of Figures 3 and 4, measured de-prioritization beside equation (2).

Loss is measured at the bottleneck (drops / arrivals of the flow in the measurement period, by
arrival time), the only place packets are lost in these scenarios; the paper counts sequence
numbers at the client, which gives the same number here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from aqmlab.media import flow_quality
from aqmlab.metrics import ARRIVE, DEQUEUE, DROP, ENQUEUE, flow_goodput, jain_index
from aqmlab.models import sqf as model
from aqmlab.reproduce import parallel_map, write_tables
from aqmlab.run import simulate, write_results
from aqmlab.scenario import load
from aqmlab.stats import (
    MOSTLY_LOST_MARK,
    MOSTLY_LOST_PCT,
    ci_text,
    mark_if_mostly_lost,
    mostly_lost,
    physical_range,
)

SOURCE = "Bonald, Muscariello and Ostallo, ICC 2011"
DISCIPLINES = ("fifo", "fq", "sqf", "pfq")
PAPER_DISCIPLINES = ("fifo", "fq", "sqf")
DISPLAY = {"fifo": "FIFO", "fq": "FQ", "sqf": "SQF", "pfq": "PFQ"}
NS = (1, 5, 10, 15, 20)
#: Figure 8's x axis (ms); the paper's own points are not given in its text.
DELTAS_MS = (0, 1, 2, 5, 10, 20, 50)
FIG8_RATES_MBPS = (10, 100)
FIG8_N = 5  # our choice: the paper does not say how many downloads ran in Figure 8
#: Extra experiment: SQF's protection against the video's short-term variability (frame-size
#: coefficient of variation; the testbed scenarios use 0.5), at the largest n.
SMOOTHNESS_CVS = (0.0, 0.2, 0.35, 0.5)
SMOOTHNESS_NS = (5, 20)
#: The model check: peak rates (Mbit/s) and numbers of TCP flows.
MODEL_RATES_MBPS = (1, 2, 3, 4, 5, 6, 7, 8)
MODEL_NS = (5, 20)
MODEL_BUFFER_PKTS = 200
MODEL_PACKET_B = 1250
MODEL_WARMUP_S = 10  # the Poisson stream starts once the TCP flows have filled the buffer


class Timing(TypedDict):
    """A run's length and the part of it left out of the statistics (Job's keyword arguments)."""

    duration_s: int
    warmup_s: int


#: Run length (s) and the start of the measurement period; the paper's sequence is 10 min.
FULL: Timing = {"duration_s": 120, "warmup_s": 10}
QUICK: Timing = {"duration_s": 30, "warmup_s": 10}

#: Table I: data bandwidth share (Mbit/s) / Jain's index, per discipline and n.
TABLE1 = {
    "fifo": {1: (4.1, 0.95), 5: (4.4, 0.91), 10: (4.8, 0.95), 15: (5.1, 0.95), 20: (5.6, 0.99)},
    "fq": {1: (4.1, 0.99), 5: (7.5, 0.99), 10: (8.5, 0.95), 15: (8.9, 0.99), 20: (9.1, 0.99)},
    "sqf": {1: (4.1, 0.95), 5: (4.1, 0.90), 10: (4.1, 0.91), 15: (4.1, 0.95), 20: (4.1, 0.95)},
}
#: What the text says of Figures 6-8 (their plotted values are not in the text).
CLAIMS = {
    "fig6": "SQF: loss negligible for every n. FIFO: audio loss grows ~linearly from 1 % to > 25 % "
            "as n goes 1 -> 20, video slightly less. FQ: audio low, video high once n > 1.",
    "fig7": "FQ: jitter grows with n for audio and video. SQF: low for both, independent of n.",
    "fig8": "SQF, 10 Mbit/s: video de-prioritized (loss) once delta >= 5 ms; later on 100 Mbit/s.",
}


@dataclass(frozen=True)
class Job:
    experiment: str  # "testbed", "jitter" or "model"
    discipline: str
    n: int
    seed: int
    duration_s: int
    warmup_s: int
    delta_ms: float = 0.0
    rate_mbps: float = 10.0
    size_cv: float | None = None  # None: the scenario's frame-size variability
    overrides: tuple[str, ...] = ()
    records_dir: str | None = None
    #: Score the video's pictures (aqmlab.viewer): testbed runs only.
    quality: bool = False


#: Fields each run sets itself (job_overrides), with what for: `--set` may not change them.
VARIED = {
    "duration": "the runs' length: 120 s, 30 s with --quick",
    "metrics.periods": "the measurement after the 10 s warm-up",
    "flows.tcp.count": "n, the TCP flows of Table I and Figures 6-7 and of the model check",
    "topology.bottleneck.rate": "Figure 8's 10 and 100 Mbit/s halves",
    "flows.video.app.jitter": "Figure 8's delta",
    "flows.video.app.size_cv": "the frame-size variability study",
    "flows.poisson.app.rate": "the model check's peak rates",
    "flows.poisson.start": "the model check's start after the warm-up",
}


def scenario_name(experiment: str, discipline: str) -> str:
    return "sqf/model-check" if experiment == "model" else f"sqf/testbed-{discipline}"


def scenarios() -> list[str]:
    """Every built-in scenario the reproduction runs (to validate overrides up front)."""
    return [scenario_name("testbed", d) for d in DISCIPLINES] + [scenario_name("model", "sqf")]


def job_overrides(job: Job) -> list[str]:
    end = f"{job.duration_s}s"
    sets = [f"duration={end}", f'metrics.periods=[["{job.warmup_s}s", "{end}"]]']
    if job.experiment == "model":
        sets += [f"flows.tcp.count={job.n}", f"flows.poisson.app.rate={job.rate_mbps}Mbps",
                 f"flows.poisson.start={job.warmup_s}s"]
    else:
        sets += [f"flows.tcp.count={job.n}", f"topology.bottleneck.rate={job.rate_mbps}Mbps",
                 f"flows.video.app.jitter={job.delta_ms}ms"]
        if job.size_cv is not None:
            sets.append(f"flows.video.app.size_cv={job.size_cv}")
    return sets + list(job.overrides)


def run_job(job: Job) -> dict[str, Any]:
    sc, raw = load(scenario_name(job.experiment, job.discipline), job_overrides(job), job.seed)
    res = simulate(sc, progress=False)
    if job.records_dir:
        tag = f"{job.experiment}-{job.discipline}-n{job.n}-d{job.delta_ms:g}-r{job.rate_mbps:g}-seed{job.seed}"
        write_results(res, raw, Path(job.records_dir) / tag, force=True)
    base = {"experiment": job.experiment, "discipline": job.discipline, "n": job.n, "seed": job.seed,
            "delta_ms": job.delta_ms, "rate_mbps": job.rate_mbps, "size_cv": job.size_cv}
    start, end = int(job.warmup_s * 1e9), int(job.duration_s * 1e9)
    if job.experiment == "model":
        return base | measure_model(res.tables, job, start, end)
    out = base | measure_testbed(res.tables, start, end)
    if job.quality:
        from aqmlab.viewer import group_quality

        out["picture"] = group_quality(res.tables, _members(res.tables["flows"], "video"), 1, (start, end))
    return out


# ---- measurements ----------------------------------------------------------------------------


def _members(flows: pd.DataFrame, group: str) -> list[int]:
    return flows.loc[flows["group_name"] == group, "flow"].tolist()


def bottleneck_loss_pct(packets: pd.DataFrame, members: list[int], start_ns: int, end_ns: int) -> float:
    """Share of the packets that arrived at the bottleneck in the period and were dropped there,
    on arrival or later (evicted by longest queue drop)."""
    p = packets[packets["flow"].isin(members)]
    t = p["t_ns"]
    arrived = p.loc[(p["event"] == ARRIVE) & (t >= start_ns) & (t < end_ns), "uid"]
    if not len(arrived):
        return float("nan")
    dropped = p.loc[p["event"] == DROP, "uid"]
    return 100.0 * int(dropped.isin(arrived).sum()) / len(arrived)


def measure_testbed(t: dict[str, pd.DataFrame], start: int, end: int) -> dict[str, Any]:
    flows, packets = t["flows"], t["packets"]
    out: dict[str, Any] = {}
    quality = flow_quality(t["media"], start, end).set_index("flow") if len(t["media"]) else pd.DataFrame()
    for group in ("audio", "video"):
        members = _members(flows, group)
        out[f"{group}_loss_pct"] = bottleneck_loss_pct(packets, members, start, end)
        q = quality.reindex(members)
        out[f"{group}_ipdv_ms"] = float(q["ipdv_mean_ms"].mean()) if len(q) else float("nan")
        out[f"{group}_jitter_ms"] = float(q["jitter_rfc3550_ms"].mean()) if len(q) else float("nan")
    tcp = flows[flows["group_name"] == "tcp"]
    goodput = flow_goodput(t["flow_samples"], tcp, start, end)
    out["tcp_share_mbps"] = float(goodput.sum()) / 1e6
    out["tcp_jain"] = jain_index(goodput.to_numpy())
    deq = packets[(packets["event"] == DEQUEUE) & (packets["t_ns"] >= start) & (packets["t_ns"] < end)]
    out["utilization_mbps"] = float(deq["size"].sum()) * 8 / ((end - start) / 1e9) / 1e6
    out["tcp_timeouts_per_flow"] = float(tcp["timeouts"].mean())
    return out


def flow_backlog_bytes(packets: pd.DataFrame, flow: int) -> tuple[np.ndarray, np.ndarray]:
    """The bytes `flow` holds in the bottleneck buffer after each of its events: + size on
    enqueue, - size on dequeue or eviction (a drop of a packet that was in the buffer)."""
    p = packets[packets["flow"] == flow]
    ev = p["event"]
    evicted = ((ev == DROP) & (p["reason"] == "evicted")).to_numpy()
    sign = np.where((ev == ENQUEUE).to_numpy(), 1, np.where((ev == DEQUEUE).to_numpy() | evicted, -1, 0))
    return p["t_ns"].to_numpy(), np.cumsum(sign * p["size"].to_numpy())


def time_fraction_at_or_above(t_ns: np.ndarray, level: np.ndarray, threshold: float, start: int, end: int) -> float:
    """Share of [start, end) during which a piecewise-constant series is >= threshold."""
    if end <= start:
        return float("nan")
    edges = np.clip(np.append(t_ns, end), start, end)
    durations = np.diff(edges)
    return float(durations[level >= threshold].sum()) / (end - start)


def measure_model(t: dict[str, pd.DataFrame], job: Job, start: int, end: int) -> dict[str, Any]:
    """De-prioritization of the Poisson stream in the terms of the model: condition (1) is
    violated when the stream holds x >= B/(n+1) packets."""
    flows, packets = t["flows"], t["packets"]
    stream = _members(flows, "poisson")[0]
    t_ns, backlog = flow_backlog_bytes(packets, stream)
    threshold = model.priority_threshold(MODEL_BUFFER_PKTS, job.n) * MODEL_PACKET_B
    inside = (t_ns >= start) & (t_ns < end)
    violated = bool(np.any(backlog[inside] >= threshold))
    return {
        "deprioritized": violated,
        "time_deprioritized": time_fraction_at_or_above(t_ns, backlog, threshold, start, end),
        "stream_loss_pct": bottleneck_loss_pct(packets, [stream], start, end),
        "model_p": model.deprioritization_probability(
            (end - start) / 1e9, job.rate_mbps * 1e6, job.n, buffer_pkts=MODEL_BUFFER_PKTS,
            packet_size_bytes=MODEL_PACKET_B),
    }


# ---- tables ------------------------------------------------------------------------------------


def _cell(values: list[float], fmt: str, metric: str = "") -> str:
    """Mean ± 95 % CI over seeds, clipped to the range of `metric` (aqmlab.stats.ci_text)."""
    return ci_text([v for v in values if v == v], fmt, physical_range(metric))


def _select(results: list[dict], **keys: Any) -> list[dict]:
    return [r for r in results if all(r[k] == v for k, v in keys.items())]


#: Under a table with a marked cell (`aqmlab.stats.mark_if_mostly_lost`).
MOSTLY_LOST_NOTE = (f"{MOSTLY_LOST_MARK}: the stream lost more than {MOSTLY_LOST_PCT:.0f} % of its packets at the "
                    "bottleneck (in at least one seed; Figure 6), so its jitter is that of the few packets it "
                    "delivered, not a smooth stream's.")


def table_note(df: pd.DataFrame) -> str | None:
    """MOSTLY_LOST_NOTE when a cell of `df` carries the mark (the report and the terminal print
    it under the table)."""
    marked = df.astype(str).apply(lambda c: c.str.endswith(MOSTLY_LOST_MARK)).to_numpy().any()
    return MOSTLY_LOST_NOTE if marked else None


def media_table(results: list[dict], metric: str, fmt: str) -> pd.DataFrame:
    """One row per discipline, one column per (stream, n): Figure 6 (loss) or 7 (jitter). A
    jitter cell of a stream that lost most of its packets carries MOSTLY_LOST_MARK."""
    rows = []
    for d in DISCIPLINES:
        row: dict[str, Any] = {"discipline": DISPLAY[d]}
        for group in ("audio", "video"):
            for n in NS:
                rs = _select(results, experiment="testbed", discipline=d, n=n)
                if rs:
                    cell = _cell([r[f"{group}_{metric}"] for r in rs], fmt, metric)
                    if metric != "loss_pct":
                        cell = mark_if_mostly_lost(cell, [r[f"{group}_loss_pct"] for r in rs])
                    row[f"{group}_n{n}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def table1(results: list[dict]) -> pd.DataFrame:
    rows = []
    for d in DISCIPLINES:
        for n in NS:
            rs = _select(results, experiment="testbed", discipline=d, n=n)
            if not rs:
                continue
            pub = TABLE1.get(d, {}).get(n)
            rows.append({
                "discipline": DISPLAY[d], "n": n,
                "tcp_share_mbps": _cell([r["tcp_share_mbps"] for r in rs], ".2f", "tcp_share_mbps"),
                "published_tcp_share_mbps": f"{pub[0]:.1f}" if pub else "-",
                "jain": _cell([r["tcp_jain"] for r in rs], ".2f", "tcp_jain"),
                "published_jain": f"{pub[1]:.2f}" if pub else "-",
                "video_loss_pct": _cell([r["video_loss_pct"] for r in rs], ".1f", "video_loss_pct"),
                "utilization_mbps": _cell([r["utilization_mbps"] for r in rs], ".2f", "utilization_mbps"),
                "tcp_timeouts_per_flow": _cell([r["tcp_timeouts_per_flow"] for r in rs], ".1f"),
            })
    return pd.DataFrame(rows)


def quality_table(results: list[dict]) -> pd.DataFrame:
    """What the video's viewer sees per discipline and n (not in the paper): mean PSNR and SSIM
    of the shown pictures, freezes and frozen seconds, beside the loss-free PSNR."""
    from aqmlab.viewer import quality_cells

    rows = []
    for d in DISCIPLINES:
        for n in NS:
            ps = [r["picture"] for r in _select(results, experiment="testbed", discipline=d, n=n) if r.get("picture")]
            if not ps:
                continue
            rows.append({"discipline": DISPLAY[d], "n": n, **quality_cells(ps, _cell)})
    return pd.DataFrame(rows)


def fig8_table(results: list[dict]) -> pd.DataFrame:
    rows = []
    for rate in FIG8_RATES_MBPS:
        for delta in sorted({r["delta_ms"] for r in results if r["experiment"] == "jitter"}):
            rs = _select(results, experiment="jitter", rate_mbps=rate, delta_ms=delta)
            if rs:
                rows.append({"link_mbps": rate, "delta_ms": delta,
                             "video_loss_pct": _cell([r["video_loss_pct"] for r in rs], ".2f", "video_loss_pct")})
    return pd.DataFrame(rows)


def smoothness_table(results: list[dict]) -> pd.DataFrame:
    rows = []
    for n in SMOOTHNESS_NS:
        for cv in SMOOTHNESS_CVS:
            rs = _select(results, experiment="smoothness", n=n, size_cv=cv)
            if rs:
                rows.append({"n": n, "frame_size_cv": cv, "runs": len(rs),
                             "runs_with_video_loss_over_1pct": sum(r["video_loss_pct"] >= 1.0 for r in rs),
                             "video_loss_pct": _cell([r["video_loss_pct"] for r in rs], ".2f", "video_loss_pct"),
                             "tcp_share_mbps": _cell([r["tcp_share_mbps"] for r in rs], ".2f", "tcp_share_mbps")})
    return pd.DataFrame(rows)


def model_check_table(results: list[dict]) -> pd.DataFrame:
    rows = []
    for n in MODEL_NS:
        for rate in MODEL_RATES_MBPS:
            rs = _select(results, experiment="model", n=n, rate_mbps=rate)
            if not rs:
                continue
            rows.append({
                "n": n, "peak_rate_mbps": rate, "runs": len(rs),
                "model_p_T": f"{rs[0]['model_p']:.3f}",
                "sim_share_of_runs_deprioritized": f"{np.mean([r['deprioritized'] for r in rs]):.2f}",
                "sim_time_deprioritized": _cell([r["time_deprioritized"] for r in rs], ".3f", "time_deprioritized"),
                "sim_stream_loss_pct": _cell([r["stream_loss_pct"] for r in rs], ".1f", "stream_loss_pct"),
            })
    return pd.DataFrame(rows)


def model_tables() -> dict[str, pd.DataFrame]:
    rates = np.linspace(0.25e6, 10e6, 40)
    return {"fig3": model.figure3(rates), "fig4": model.figure4(rates)}


# ---- the command -------------------------------------------------------------------------------


def jobs_for(seeds: list[int], overrides: tuple[str, ...], quick: bool, records_dir: str | None,
             quality: bool = False) -> list[Job]:
    timing = QUICK if quick else FULL
    jobs = [Job("testbed", d, n, s, overrides=overrides, records_dir=records_dir, quality=quality, **timing)
            for s in seeds for d in DISCIPLINES for n in NS]
    deltas = (0, 2, 5, 20) if quick else DELTAS_MS
    jobs += [Job("jitter", "sqf", FIG8_N, s, delta_ms=float(dl), rate_mbps=float(r), overrides=overrides,
                 records_dir=records_dir, **timing)
             for s in seeds for r in FIG8_RATES_MBPS for dl in deltas]
    jobs += [Job("smoothness", "sqf", n, s, size_cv=cv, overrides=overrides, records_dir=records_dir, **timing)
             for s in seeds for n in SMOOTHNESS_NS for cv in SMOOTHNESS_CVS]
    model_rates = (2, 4, 6) if quick else MODEL_RATES_MBPS
    model_timing: Timing = {"duration_s": MODEL_WARMUP_S + (20 if quick else 60), "warmup_s": MODEL_WARMUP_S}
    jobs += [Job("model", "sqf", n, s, rate_mbps=float(r), overrides=overrides, records_dir=records_dir,
                 **model_timing)
             for s in seeds for n in MODEL_NS for r in model_rates]
    return jobs


def reproduce(out_dir: Path, seeds: list[int], overrides: tuple[str, ...] = (), keep_records: bool = False,
              workers: int | None = None, quick: bool = False, quality_flows: int = 0) -> dict[str, pd.DataFrame]:
    """Runs everything and writes tables, figures and report.md into `out_dir` (a fresh
    directory: the caller replaces the destination atomically). With `quality_flows` > 0 the
    testbed's video (one stream) is decoded for real and scored (the "quality" table)."""
    records_dir = str(out_dir / "runs") if keep_records else None
    results = parallel_map(run_job, jobs_for(seeds, overrides, quick, records_dir, quality_flows > 0), workers)
    figs = model_tables()
    tables = {
        "fig6_loss": media_table(results, "loss_pct", ".2f"),
        "fig7_jitter": media_table(results, "ipdv_ms", ".2f"),
        "table1": table1(results),
        "fig8": fig8_table(results),
        "smoothness": smoothness_table(results),
        "model_check": model_check_table(results),
    }
    if quality_flows:
        tables["quality"] = quality_table(results)
    write_tables({**tables, **figs}, out_dir / "tables")
    draw_all(results, figs, out_dir / "figures")
    write_report(tables, seeds, overrides, quick, out_dir / "report.md")
    (out_dir / "measurements.json").write_text(json.dumps(results, sort_keys=True, default=float) + "\n")
    return tables


TITLES = {
    "fig6_loss": "Figure 6: packet loss (%) of audio and video against the number n of downloads",
    "fig7_jitter": "Figure 7: jitter (mean |IPDV|, RFC 3393, ms) of audio and video against n",
    "table1": "Table I: data bandwidth share (Mbit/s) and Jain's index of the n downloads",
    "fig8": "Figure 8: video loss (%) under SQF against the source delay s.d. delta (n = 5)",
    "smoothness": "Extra: SQF's video loss against the frame-size variability (VLC-like 200 ms shaping)",
    "model_check": "Section IV checked: Poisson stream vs n TCP flows under SQF, model p(T) beside simulation",
    "quality": "Extra: what the video's viewer sees (real H.264 decode, docs/quality.md) against n",
}


def write_report(tables: dict[str, pd.DataFrame], seeds: list[int], overrides: tuple[str, ...], quick: bool,
                 path: Path) -> None:
    timing = QUICK if quick else FULL
    lines = [f"# SQF reproduction ({SOURCE})", "",
             f"Seeds: {', '.join(map(str, seeds))} (mean ± 95 % CI when more than one). Runs of "
             f"{timing['duration_s']} s measured from {timing['warmup_s']} s. Overrides: "
             f"{', '.join(overrides) or 'none'}. Scenario choices: scenarios/sqf/*.toml and "
             "docs/reproductions/sqf.md. The paper gives Figures 6-8 only as plots: its text's claims "
             "are quoted under each table.", ""]
    notes = {"fig6_loss": CLAIMS["fig6"], "fig7_jitter": CLAIMS["fig7"], "fig8": CLAIMS["fig8"],
             "table1": "Published: the paper's Table I (share/Jain).",
             "smoothness": "Not in the paper: Section IV says a stream whose peak rate is strictly below C is "
                           "always prioritized; this varies how far the 200 ms slices' rate strays from the mean.",
             "model_check": "Model: equation (2) over T = the stream's measured life; simulation: the stream "
                            "holds >= B/(n+1) packets (condition (1) violated) at least once (share of runs), "
                            "and the share of time it does.",
             "quality": "Not in the paper: the loss of Figure 6 as pictures; means over the measurement period "
                        "of the one video stream (docs/quality.md)."}
    for name, df in tables.items():
        lines += [f"## {TITLES[name]}", "", df.to_markdown(index=False), "", f"Paper: {notes[name]}", ""]
        if note := table_note(df):
            lines += [note, ""]
    lines += ["Figures: figures/fig3.png, fig4.png (model), fig6.png, fig7.png, fig8.png, model_check.png.", ""]
    path.write_text("\n".join(lines))


# ---- figures -------------------------------------------------------------------------------


def _mean_by(results: list[dict], key: str, **sel: Any) -> float:
    vals = [r[key] for r in _select(results, **sel) if r[key] == r[key]]
    return float(np.mean(vals)) if vals else float("nan")


def draw_all(results: list[dict], figs: dict[str, pd.DataFrame], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    model.plot_figure3(figs["fig3"], folder / "fig3.png")
    model.plot_figure4(figs["fig4"], folder / "fig4.png")
    _per_n_figure(results, "loss_pct", "packet loss rate (%)", folder / "fig6.png", log=True)
    _per_n_figure(results, "ipdv_ms", "jitter, mean |IPDV| (ms)", folder / "fig7.png", log=False)
    _fig8(results, folder / "fig8.png")
    _model_check_figure(results, folder / "model_check.png")


def _axes(ncols: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * ncols, 3.8))
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def _per_n_figure(results: list[dict], metric: str, ylabel: str, path: Path, log: bool) -> None:
    """The paper's Figures 6 and 7: (a) audio, (b) video; one line per discipline against n."""
    fig, axes = _axes(2)
    for ax, group in zip(axes, ("audio", "video"), strict=False):
        ringed = False
        for i, d in enumerate(DISCIPLINES):
            ys = [_mean_by(results, f"{group}_{metric}", experiment="testbed", discipline=d, n=n) for n in NS]
            ax.plot(NS, ys, marker="o", color=f"C{i}", ls="--" if d not in PAPER_DISCIPLINES else "-",
                    label=DISPLAY[d])
            if metric == "loss_pct":
                continue
            # As the table's mark: a jitter over a stream that lost most of its packets.
            lost = [(n, y) for n, y in zip(NS, ys, strict=True)
                    if mostly_lost(r[f"{group}_loss_pct"] for r in _select(results, experiment="testbed",
                                                                          discipline=d, n=n))]
            if lost:
                ax.scatter(*zip(*lost, strict=True), s=160, facecolors="none", edgecolors="black", zorder=3,
                           label=None if ringed else f"stream lost > {MOSTLY_LOST_PCT:.0f} % ({MOSTLY_LOST_MARK})")
                ringed = True
        ax.set_title(f"({'a' if group == 'audio' else 'b'}) {group.capitalize()}")
        ax.set_xlabel("number of data downloads n")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("symlog", linthresh=0.1)
        ax.set_xticks(NS)
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda k: labels[k].startswith("stream lost"))  # the ring last
        ax.legend([handles[k] for k in order], [labels[k] for k in order])
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def _fig8(results: list[dict], path: Path) -> None:
    fig, (ax,) = _axes(1)
    for i, rate in enumerate(FIG8_RATES_MBPS):
        deltas = sorted({r["delta_ms"] for r in _select(results, experiment="jitter", rate_mbps=rate)})
        ys = [_mean_by(results, "video_loss_pct", experiment="jitter", rate_mbps=rate, delta_ms=dl) for dl in deltas]
        ax.plot(deltas, ys, marker="o", color=f"C{i}", label=f"{rate} Mbit/s")
    ax.set_xlabel("source delay standard deviation delta (ms)")
    ax.set_ylabel("video packet loss rate (%)")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("symlog", linthresh=0.1)
    ax.legend(title=f"SQF, n = {FIG8_N}")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def _model_check_figure(results: list[dict], path: Path) -> None:
    fig, (ax,) = _axes(1)
    for i, n in enumerate(MODEL_NS):
        rs = sorted(_select(results, experiment="model", n=n), key=lambda r: r["rate_mbps"])
        rates = sorted({r["rate_mbps"] for r in rs})
        if not rates:
            continue
        ax.plot(rates, [_mean_by(rs, "model_p", rate_mbps=x) for x in rates], color=f"C{i}", label=f"model p(T), n={n}")
        ax.plot(rates, [_mean_by(rs, "deprioritized", rate_mbps=x) for x in rates], color=f"C{i}", ls="none",
                marker="o", label=f"simulated, n={n}")
    ax.set_xlabel("Poisson stream peak rate lambda (Mbit/s)")
    ax.set_ylabel("probability of de-prioritization")
    ax.set_ylim(-0.05, 1.05)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=130)
