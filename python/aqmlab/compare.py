"""`aqmlab compare PAPER`: each paper's main video scenario rerun with modern baseline
disciplines at the bottleneck, beside the paper's own mechanism(s).

Every discipline gets the paper's buffer limit; everything else about the scenario (flows,
links, seeds, measurement window) stays. One table (CSV + Markdown) and one figure (PNG) per
paper, with the paper's video metric, queueing delay, TCP throughput and Jain's index.

The baselines are data (`BASELINES`): a baseline whose discipline kind this build does not
know (CoDel, FQ-CoDel and PIE before they are merged) is left out, and appears by itself once
its kind is in the scenario model (`aqmlab.scenario.QDISC_MODELS`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.metrics import DEQUEUE, flow_goodput, jain_index
from aqmlab.reproduce import parallel_map, write_tables
from aqmlab.run import RunResult, simulate
from aqmlab.scenario import QDISC_MODELS, Scenario, load

#: Baseline disciplines: display name -> qdisc table (the paper's buffer limit is added). Values
#: not given are the discipline's defaults, which are the RFCs' (see `aqmlab list`): CoDel
#: target 5 ms and interval 100 ms (RFC 8289 section 4.2); FQ-CoDel 1024 flow queues, quantum
#: 1514 B, CoDel's target and interval per queue (RFC 8290 sections 4 and 5.1); PIE target
#: 15 ms, t_update 15 ms, alpha 0.125, beta 1.25, max_burst 150 ms (RFC 8033 section 4 and
#: 5.1). FIFO is Drop-Tail; FQ is aqmlab's DRR with longest queue drop (quantum one MTU).
#: DualPI2 has tc-dualpi2's defaults (RFC 9332 with Linux sch_dualpi2's values: target 15 ms,
#: tupdate 16 ms, alpha 0.16, beta 3.2, k = 2, step 1 ms, classic_protection 10 %). CAKE has
#: tc-cake's defaults (rtt 100 ms, triple-isolate, no ACK filter) but for its tins (besteffort,
#: or diffserv4 with the paper's media in the tins of `Paper.dscp`), its shaper (set to the
#: paper's bottleneck rate, `Paper.rate`) and its memory (the paper's buffer, `Paper.memlimit`:
#: CAKE has no packet limit). docs/baselines.md says why.
BASELINES: dict[str, dict[str, Any]] = {
    "FIFO": {"kind": "droptail"},
    "FQ": {"kind": "fq", "quantum": 1500},
    "CoDel": {"kind": "codel"},
    "FQ-CoDel": {"kind": "fq_codel"},
    "PIE": {"kind": "pie"},
    "DualPI2": {"kind": "dualpi2"},
    "CAKE": {"kind": "cake", "diffserv": "besteffort"},
    "CAKE diffserv4": {"kind": "cake", "diffserv": "diffserv4"},
}

#: The extra row of a paper whose media sources have an `ecn` field (`Paper.ect1`): DualPI2 with
#: those sources sending ECT(1), i.e. in DualPI2's L queue.
DUALPI2_ECT1 = "DualPI2 ECT(1)"


def available_baselines() -> dict[str, dict[str, Any]]:
    """The baselines whose kind this build's scenario model knows."""
    return {name: q for name, q in BASELINES.items() if q["kind"] in QDISC_MODELS}


@dataclass(frozen=True)
class Paper:
    title: str
    #: The paper's own mechanism(s): display name -> built-in scenario.
    mechanisms: dict[str, str]
    #: The scenario the baselines replace the bottleneck discipline of.
    base: str
    #: Where the discipline sits in the scenario (PELS keeps its feedback wrapper around it).
    qdisc_key: str
    #: The paper's buffer, given to every baseline.
    limit: str
    #: Measurement window (s): full and --quick.
    window: tuple[float, float]
    quick_window: tuple[float, float]
    #: Overrides for every run (full / --quick), e.g. shorter durations.
    overrides: tuple[str, ...]
    quick_overrides: tuple[str, ...]
    #: Paper-specific measurements of one run in the window (s).
    measure: Callable[[RunResult, float, float], dict[str, float]]
    #: Columns drawn in the figure: column -> axis label.
    figure: dict[str, str]
    #: The bottleneck's rate, CAKE's shaper rate (`bandwidth`).
    rate: str
    #: The paper's buffer in bytes of the paper's packets, CAKE's `memlimit`.
    memlimit: str
    #: Media flow group -> DSCP, set in the CAKE diffserv4 row only: AF41 (34) for video (RFC
    #: 4594's multimedia conferencing class, RFC 8837's for WebRTC video; diffserv4 puts every
    #: AF2x-AF4x in its video tin) and EF (46) for audio (RFC 4594's telephony; the voice tin).
    dscp: dict[str, int]
    #: Media flow groups whose source has an `ecn` field: the DualPI2 ECT(1) row sets it to ect1.
    ect1: tuple[str, ...] = ()


def _members(flows: pd.DataFrame, group: str) -> list[int]:
    return flows.loc[flows["group_name"] == group, "flow"].tolist()


def _common(res: RunResult, a: float, b: float) -> dict[str, float]:
    """Queueing delay and Jain's index over the active flows (metrics.period_metrics), and the
    TCP (bulk) flows' goodput, in the window."""
    from aqmlab.metrics import period_metrics

    t = res.tables
    flows, start, end = t["flows"], int(a * 1e9), int(b * 1e9)
    per = period_metrics(t["packets"], flows, [(start, end)]).iloc[0]
    bulk = [i for i, g in enumerate(res.scenario.flows) if g.app.kind == "bulk"]
    tcp = flows[flows["group"].isin(bulk)]
    goodput = flow_goodput(t["flow_samples"], tcp, start, end) if len(tcp) else pd.Series(dtype=float)
    return {
        "qdelay_mean_ms": float(per["qdelay_mean_ms"]),
        "qdelay_p99_ms": float(per["qdelay_p99_ms"]),
        "tcp_mbps": float(goodput.sum()) / 1e6 if len(tcp) else math.nan,
        "tcp_jain": jain_index(goodput.to_numpy()) if len(tcp) > 1 else math.nan,
        "jain_all": float(per["jain"]),
        "utilization_mbps": float(per["utilization_mbps"]),
    }


def _measure_rb_rio(res: RunResult, a: float, b: float) -> dict[str, float]:
    """Decodable frames (frames.parquet, video.stream_stats) of both MPEG groups."""
    from aqmlab.video import stream_stats

    t, out = res.tables, {}
    for group in ("responsive", "unresponsive"):
        s = stream_stats(t["frames"], _members(t["flows"], group), int(a * 1e9), int(b * 1e9))
        out[f"{group}_decodable_pct"] = 100.0 - s["decodable_loss_pct"]
        out[f"{group}_packet_loss_pct"] = s["packet_loss_pct"]
    return out


def _measure_sqf(res: RunResult, a: float, b: float) -> dict[str, float]:
    """The SQF reproduction's testbed measurements (media loss and jitter via aqmlab.media)."""
    from aqmlab.reproduce.sqf import measure_testbed

    m = measure_testbed(res.tables, int(a * 1e9), int(b * 1e9))
    return {k: m[k] for k in ("video_loss_pct", "video_jitter_ms", "audio_loss_pct", "audio_jitter_ms")}


def _measure_pels(res: RunResult, a: float, b: float) -> dict[str, float]:
    """Utility (eq. 3) and useful packets per frame of the FGS video, enhancement-layer loss."""
    from aqmlab.analysis import pels as pa

    frames = res.tables["pels_frames"]
    w = frames[(frames["t_ns"] >= a * 1e9) & (frames["t_ns"] < b * 1e9)]
    return {"utility": float(w["utility"].mean()), "useful_per_frame": float(w["useful"].mean()),
            "enhancement_loss_pct": 100.0 * pa.colour_losses(frames, a, b)["enhancement"]}


def _measure_head_to_head(res: RunResult, a: float, b: float) -> dict[str, float]:
    """The streams' bandwidth and the pair analysis (analysis.head_to_head.pair_summary)."""
    from aqmlab.analysis import head_to_head as h2h
    from aqmlab.reproduce.head_to_head import _series

    t = res.tables
    deq = t["packets"][t["packets"]["event"] == DEQUEUE]
    ids = dict(zip(t["flows"]["group_name"], t["flows"]["flow"], strict=True))
    udp, tcp = _series(deq, ids["udp"]), _series(deq, ids["tcp"])
    s = h2h.pair_summary(udp, tcp, SHAPED_BPS, None, None)
    return {"udp_kbps": s["udp_avg_bps"] / 1e3, "tcp_stream_kbps": s["tcp_avg_bps"] / 1e3,
            "normalized_difference": s["normalized_difference"],
            "udp_smoothness_within": s["udp_smoothness_within"],
            "tcp_smoothness_within": s["tcp_smoothness_within"]}


#: Head-to-head: the baselines get the token bucket's rate as their link rate (DSL-TBF-600).
SHAPED_BPS = 600e3
_H2H_QUICK_CLIP = "40s"

PAPERS: dict[str, Paper] = {
    "rb-rio": Paper(
        "Rb-RIO MPEG set: 40 responsive + 20 unresponsive MPEG-1 streams, 25 Mbit/s, 100 packets",
        {"Rb-RIO": "rb-rio/mpeg-rb-rio", "RED": "rb-rio/mpeg-red"}, "rb-rio/mpeg-droptail",
        "topology.bottleneck.qdisc", "100p", (10, 20), (10, 20), (), (),
        _measure_rb_rio,
        {"unresponsive_decodable_pct": "unresponsive decodable frames (%)",
         "responsive_decodable_pct": "responsive decodable frames (%)", "qdelay_mean_ms": "queueing delay (ms)",
         "jain_all": "Jain's index"},
        rate="25Mbps", memlimit="100KB",  # 100 packets of the streams' 1000 B
        dscp={"responsive": 34, "unresponsive": 34}),
    "sqf": Paper(
        "SQF testbed: 5 Mbit/s VBR video + audio vs 10 TCP downloads, 10 Mbit/s, 50 packets",
        {"SQF": "sqf/testbed-sqf"}, "sqf/testbed-fifo", "topology.bottleneck.qdisc", "50p",
        (10, 120), (10, 30), ("flows.tcp.count=10", "duration=120s", 'metrics.periods=[["10s", "120s"]]'),
        ("flows.tcp.count=10", "duration=30s", 'metrics.periods=[["10s", "30s"]]'),
        _measure_sqf,
        {"video_loss_pct": "video loss (%)", "video_jitter_ms": "video jitter (ms)",
         "qdelay_mean_ms": "queueing delay (ms)", "tcp_mbps": "TCP goodput (Mbit/s)"},
        rate="10Mbps", memlimit="75000B",  # 50 packets of 1500 B
        dscp={"video": 34, "audio": 46}, ect1=("video", "audio")),
    "pels": Paper(
        "PELS dumbbell (gamma-7): 4 FGS video flows + 4 TCP, 4 Mbit/s; baselines inside PELS's feedback",
        {"PELS": "pels/gamma-7", "best effort": "pels/best-effort-7"}, "pels/gamma-7",
        "topology.bottleneck.qdisc.qdisc", "67p", (10, 55), (10, 35),
        ("records.packet_events=true",), ("records.packet_events=true", "duration=40s"),
        _measure_pels,
        {"utility": "utility (eq. 3)", "enhancement_loss_pct": "enhancement loss (%)",
         "qdelay_mean_ms": "queueing delay (ms)", "tcp_mbps": "TCP goodput (Mbit/s)"},
        rate="4Mbps", memlimit="50500B",  # the PELS queue's 50 packets of 500 B + the Internet queue's 17 of 1500 B
        dscp={"pels": 34}),
    "head-to-head": Paper(
        "Head-to-head pair: one UDP and one TCP stream of a clip through DSL-TBF-600",
        {"TBF": "head-to-head/pair"}, "head-to-head/pair", "topology.bottleneck.qdisc", "10KB",
        (0, 180), (0, 40), (),
        ("duration=60s", f"flows.udp.app.clip={_H2H_QUICK_CLIP}", f"flows.tcp.app.clip={_H2H_QUICK_CLIP}"),
        _measure_head_to_head,
        {"udp_kbps": "UDP stream (Kbit/s)", "tcp_stream_kbps": "TCP stream (Kbit/s)",
         "qdelay_mean_ms": "queueing delay (ms)", "normalized_difference": "(TCP - UDP) / bottleneck"},
        rate=f"{int(SHAPED_BPS)}bps", memlimit="10KB",  # the TBF's rate and limit
        dscp={"udp": 34, "tcp": 34}),
}

TITLE = "Modern baselines against the paper's mechanism"


def _inline_table(q: dict[str, Any]) -> str:
    """A qdisc dict as a TOML inline table for an override (flat values only)."""
    return "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in q.items()) + "}"


def rows(paper: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """display name -> (scenario, discipline overrides) for every row of a paper's table."""
    p = PAPERS[paper]
    out: dict[str, tuple[str, tuple[str, ...]]] = {name: (scenario, ()) for name, scenario in p.mechanisms.items()}
    for name, q in available_baselines().items():
        if q["kind"] == "cake":
            sets = [f"{p.qdisc_key}={_inline_table(q | {'bandwidth': p.rate, 'memlimit': p.memlimit})}"]
        else:
            sets = [f"{p.qdisc_key}={_inline_table(q | {'limit': p.limit})}"]
        if paper == "head-to-head":
            sets.append(f"topology.bottleneck.rate={int(SHAPED_BPS)}bps")  # the TBF's rate as the link's
        if q.get("diffserv") == "diffserv4":
            sets += [f"flows.{group}.dscp={dscp}" for group, dscp in p.dscp.items()]
        out[name] = (p.base, tuple(sets))
        if q["kind"] == "dualpi2" and p.ect1:
            out[DUALPI2_ECT1] = (p.base, (*sets, *(f'flows.{group}.app.ecn="ect1"' for group in p.ect1)))
    return out


@dataclass(frozen=True)
class Job:
    paper: str
    discipline: str
    seed: int
    quick: bool
    #: The user's `--set` overrides, applied to every row after the paper's own.
    overrides: tuple[str, ...] = ()


def _load(paper: str, name: str, overrides: list[str], seed: int) -> Scenario:
    if paper == "pels":
        from aqmlab.reproduce.pels import load_pels

        return load_pels(name.removeprefix("pels/"), overrides, seed)
    return load(name, overrides, seed)[0]


def scenario_of(job: Job) -> Scenario:
    p = PAPERS[job.paper]
    scenario, sets = rows(job.paper)[job.discipline]
    base = list(p.quick_overrides if job.quick else p.overrides)
    return _load(job.paper, scenario, base + list(job.overrides) + list(sets), job.seed)


def refused_override(paper: str, overrides: Sequence[str]) -> str | None:
    """The reason an override cannot apply to a comparison, or None: the discipline is what
    a comparison varies, one row each, so `--set` may not change it."""
    key = PAPERS[paper].qdisc_key
    for assignment in overrides:
        field = assignment.partition("=")[0].strip()
        if field == key or field.startswith(key + "."):
            return (f"--set {assignment}: compare varies {key} itself (one row per discipline); "
                    "compare another discipline with aqmlab run, or set any other field")
    return None


def check_overrides(paper: str, overrides: Sequence[str], quick: bool) -> list[str]:
    """Every row's scenario loaded with the overrides, before anything runs: the problems, one
    line each (the rows that share one named once), [] when every row takes them."""
    from aqmlab.scenario import ScenarioError

    refused = refused_override(paper, overrides)
    if refused:
        return [refused]
    where: dict[str, list[str]] = {}
    for name in rows(paper):
        try:
            scenario_of(Job(paper, name, 1, quick, tuple(overrides)))
        except ScenarioError as err:
            for problem in err.problems:
                # Name the user's own overrides, not the ones each row adds.
                mine = " ".join(f"--set {a}" for a in overrides if a in problem.origin)
                line = ": ".join(part for part in (mine, problem.path, problem.message) if part)
                where.setdefault(line, []).append(name)
    every = len(rows(paper))
    return [f"{line} (in {'every row' if len(names) == every else 'rows ' + ', '.join(names)})"
            for line, names in where.items()]


def run_job(job: Job) -> dict[str, Any]:
    p = PAPERS[job.paper]
    a, b = p.quick_window if job.quick else p.window
    res = simulate(scenario_of(job), progress=False)
    return {"discipline": job.discipline, "seed": job.seed} | p.measure(res, a, b) | _common(res, a, b)


def table(results: list[dict[str, Any]], order: list[str]) -> pd.DataFrame:
    """One row per discipline (in `order`), each measurement the mean over seeds."""
    df = pd.DataFrame(results)
    means = df.drop(columns="seed").groupby("discipline", sort=False).mean()
    # Columns a paper has no data for (TCP goodput without bulk TCP flows) are left out.
    out = means.reindex(order).dropna(axis=1, how="all").round(3).reset_index()
    out.insert(1, "seeds", df.groupby("discipline").size().reindex(order).to_numpy())
    return out


def compare(paper: str, out_dir: Path, seeds: list[int], quick: bool = False,
            workers: int | None = None, overrides: Sequence[str] = ()) -> pd.DataFrame:
    """Runs every row of `paper` for every seed, with the user's `overrides` on every row;
    writes tables/ and figures/ into `out_dir` (a fresh directory: the caller replaces it
    atomically)."""
    order = list(rows(paper))
    jobs = [Job(paper, d, s, quick, tuple(overrides)) for s in seeds for d in order]
    results = parallel_map(run_job, jobs, workers)
    t = table(results, order)
    write_tables({paper: t}, out_dir / "tables")
    draw(t, PAPERS[paper], out_dir / "figures" / f"{paper}.png", overrides)
    if overrides:
        (out_dir / "overrides.txt").write_text("".join(f"--set {a}\n" for a in overrides))
    (out_dir / "measurements.json").write_text(json.dumps(results, sort_keys=True, default=float) + "\n")
    return t


def draw(t: pd.DataFrame, p: Paper, path: Path, overrides: Sequence[str] = ()) -> None:
    """One bar chart per figure column, disciplines on the x axis, the paper's own in colour;
    the title names the `--set` overrides the rows ran with."""
    from matplotlib.artist import setp
    from matplotlib.figure import Figure

    path.parent.mkdir(parents=True, exist_ok=True)
    cols = list(p.figure.items())
    fig = Figure(figsize=(3.2 * len(cols), 3.4))
    axes = fig.subplots(1, len(cols))
    colours = ["tab:red" if d in p.mechanisms else "tab:gray" for d in t["discipline"]]
    for ax, (col, label) in zip(np.atleast_1d(axes), cols, strict=False):
        ax.bar(t["discipline"], t[col], color=colours)
        ax.set_title(label, fontsize=9)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        # Rotated labels end under their bar, so that long names do not run into the next one.
        setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    fig.suptitle(p.title + "".join(f"\n--set {a}" for a in overrides), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
