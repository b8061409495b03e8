"""Reproduction of Chung and Claypool, "Rate-Based Active Queue Management with Priority
Classes for Better Video Transmission" (ISCC 2002), section 4.

Three experiment sets (tcp, mpeg, mixed) under Drop-Tail, RED and Rb-RIO (the paper's rows)
plus Rb-RED and RIO (extra rows), over one or more seeds run in parallel. Writes every table
of the paper as CSV and Markdown with the published value beside ours (Figure 5's table,
Jain's index per period for Figures 5, 6 and 8, Tables 1 and 2, the per-class throughput of
Figures 6 and 8) and draws Figures 4, 6, 7 and 8.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.metrics import DEQUEUE
from aqmlab.reproduce import parallel_map, write_tables
from aqmlab.run import simulate, write_results
from aqmlab.scenario import BUILTIN_DIR, load
from aqmlab.stats import ci_text, mean_ci, physical_range
from aqmlab.video import decoded_sequence, stream_stats

SETS = ("tcp", "mpeg", "mixed")
PAPER_ROWS = ("droptail", "red", "rb-rio")
EXTRA_ROWS = ("rb-red", "rio")
DISPLAY = {"droptail": "Drop-Tail", "red": "RED", "rb-rio": "Rb-RIO", "rb-red": "Rb-RED", "rio": "RIO"}
PERIODS_S = ((0, 10), (10, 20), (20, 30))

# ---- published values (the paper's text; its figures' plotted values are lost) ------------

#: Figure 5, top: link utilization (Mbit/s) and drop rate (%) per period.
FIG5 = {
    ("droptail", 0): (24.230, 2.87), ("red", 0): (24.332, 2.88), ("rb-rio", 0): (24.367, 2.98),
    ("droptail", 10): (24.707, 3.41), ("red", 10): (24.993, 3.51), ("rb-rio", 10): (24.953, 3.68),
    ("droptail", 20): (24.724, 2.31), ("red", 20): (24.929, 2.25), ("rb-rio", 20): (24.918, 2.27),
}
TABLE_COLUMNS = ("throughput_mbps", "frames_received", "frames_decodable", "packet_loss_pct",
                 "frame_loss_pct", "decodable_loss_pct")
#: Table 1: the 40 responsive MPEG streams, 0-30 s.
TABLE1 = {
    "droptail": (19.819, 10369, 7620, 13.08, 22.8, 43.2),
    "red": (18.650, 7706, 5054, 8.99, 29.4, 53.7),
    "rb-rio": (20.812, 7553, 7211, 11.19, 36.9, 39.8),
}
#: Table 2: the 20 unresponsive MPEG streams, 10-20 s.
TABLE2 = {
    "droptail": (14.272, 3616, 768, 23.4, 38.7, 87.0),
    "red": (15.182, 3331, 467, 20.6, 43.5, 92.1),
    "rb-rio": (9.696, 656, 656, 34.5, 88.8, 88.8),
}
SOURCE = "Chung and Claypool, ISCC 2002"


def disciplines(extra: bool = True) -> tuple[str, ...]:
    rows = PAPER_ROWS + (EXTRA_ROWS if extra else ())
    return tuple(d for d in rows if all((BUILTIN_DIR / "rb-rio" / f"{s}-{d}.toml").exists() for s in SETS))


@dataclass(frozen=True)
class Job:
    experiment: str
    discipline: str
    seed: int
    overrides: tuple[str, ...] = ()
    records_dir: str | None = None
    keep_traces: bool = False
    #: Video flows per group whose pictures are scored (aqmlab.viewer); 0 = none.
    quality_flows: int = 0


def scenario_name(experiment: str, discipline: str) -> str:
    return f"rb-rio/{experiment}-{discipline}"


#: Fields the reproduction varies across its runs, with what for: `--set` may not change them.
VARIED = {"topology.bottleneck.qdisc.kind": "the disciplines compared, one scenario file each"}


def scenarios() -> list[str]:
    """Every built-in scenario the reproduction runs (to validate overrides up front)."""
    return [scenario_name(e, d) for e in SETS for d in disciplines()]


#: The experiment set each table and figure comes from.
_SET_OF = {"fig5": "tcp", "fig5_jain": "tcp", "fig6_jain": "mpeg", "fig8_jain": "mixed", "table1": "mpeg",
           "table2": "mpeg", "fig6_throughput": "mpeg", "fig8_throughput": "mixed", "quality": "mpeg",
           "fig4.png": "tcp", "fig6.png": "mpeg", "fig7.png": "mpeg", "fig8.png": "mixed"}


def sources() -> dict[str, list[str]]:
    """The scenarios behind each table and figure: an override that leaves a table's own
    scenarios as the paper's (a TCP setting, for the MPEG-only set) keeps its published values
    and leaves its figure unmarked."""
    return {name: [scenario_name(s, d) for d in disciplines()] for name, s in _SET_OF.items()}


def run_job(job: Job) -> dict[str, Any]:
    """One simulation; returns only the small measurements the tables and figures need."""
    sc, raw = load(scenario_name(job.experiment, job.discipline), list(job.overrides), job.seed)
    res = simulate(sc, progress=False)
    if job.records_dir:
        write_results(res, raw, Path(job.records_dir) / f"{sc.name}-seed{job.seed}", force=True)
    return measure(job, res)


def _group_flows(flows: pd.DataFrame, group: str) -> list[int]:
    return flows.loc[flows["group_name"] == group, "flow"].tolist()


def measure(job: Job, res: Any) -> dict[str, Any]:
    t = res.tables
    flows, packets = t["flows"], t["packets"]
    deq = packets[packets["event"] == DEQUEUE]
    out: dict[str, Any] = {"experiment": job.experiment, "discipline": job.discipline, "seed": job.seed,
                           "periods": res.periods.to_dict(orient="records"), "groups": []}
    # Per group, period and class: bits per second through the bottleneck.
    for group in flows["group_name"].unique():
        members = set(_group_flows(flows, group))
        d = deq[deq["flow"].isin(members)]
        for a, b in PERIODS_S:
            dp = d[(d["t_ns"] >= a * 1e9) & (d["t_ns"] < b * 1e9)]
            by_class = dp.groupby("class")["size"].sum()
            active = flows[(flows["group_name"] == group) & (flows["start_ns"] < b * 1e9)
                           & (flows["stop_ns"] > a * 1e9)]
            out["groups"].append({
                "group": group, "start_s": a, "end_s": b, "active": len(active),
                "mbps": float(dp["size"].sum()) * 8 / (b - a) / 1e6,
                **{f"class{c}_mbps": float(by_class.get(c, 0)) * 8 / (b - a) / 1e6 for c in (0, 1, 2, 3)},
            })
    if "frames" in t:
        out["video"] = _video_tables(t["frames"], flows, deq)
        if job.quality_flows:
            out["picture"] = _picture_quality(t, flows, job.quality_flows)
        if job.keep_traces and job.experiment == "mpeg":
            out["decoded"] = _decoded_samples(t["frames"], flows)
    if job.keep_traces and job.experiment == "tcp":
        q = t["queue"]
        out["queue"] = {"t_s": (q["t_ns"] / 1e9).tolist(), "qlen": q["qlen_pkts"].tolist(),
                        "avg": q["avg"].tolist()}
    return out


def _video_tables(frames: pd.DataFrame, flows: pd.DataFrame, deq: pd.DataFrame) -> dict[str, Any]:
    rows = {}
    for key, group, (a, b) in (("table1", "responsive", (0, 30)), ("table2", "unresponsive", (10, 20))):
        members = _group_flows(flows, group)
        if not members:
            continue
        s = stream_stats(frames, members, int(a * 1e9), int(b * 1e9))
        d = deq[deq["flow"].isin(members) & (deq["t_ns"] >= a * 1e9) & (deq["t_ns"] < b * 1e9)]
        s["throughput_mbps"] = float(d["size"].sum()) * 8 / (b - a) / 1e6
        rows[key] = s
    return rows


def _picture_quality(t: dict[str, pd.DataFrame], flows: pd.DataFrame, max_flows: int) -> dict[str, Any]:
    """PSNR, SSIM and freezes of the first `max_flows` streams of each kind, over their life."""
    from aqmlab.viewer import group_quality  # noqa: PLC0415 - PyAV only when pictures are asked for

    return {group: group_quality(t, _group_flows(flows, group), max_flows)
            for group in ("responsive", "unresponsive") if _group_flows(flows, group)}


def _decoded_samples(frames: pd.DataFrame, flows: pd.DataFrame) -> dict[str, Any]:
    """Decoded frame numbers of three sampled streams of each kind (Figure 7)."""
    out = {}
    for group in ("responsive", "unresponsive"):
        members = _group_flows(flows, group)
        picks = [members[i] for i in np.linspace(0, len(members) - 1, 3).astype(int)] if members else []
        out[group] = [{"flow": f, "t_s": (decoded_sequence(frames, f)["t_ns"] / 1e9).tolist()} for f in picks]
    return out


# ---- aggregation over seeds ------------------------------------------------------------------


def _ci_cell(values: list[float], fmt: str, metric: str = "") -> str:
    """Mean ± 95 % CI over seeds, clipped to the range of `metric` (aqmlab.stats.ci_text)."""
    return ci_text(values, fmt, physical_range(metric))


def _pub(v: float | None, fmt: str) -> str:
    return "-" if v is None else f"{v:{fmt}}"


def fig5_table(results: list[dict], discs: tuple[str, ...]) -> pd.DataFrame:
    rows = []
    for a, b in PERIODS_S:
        for d in discs:
            rs = [p for r in results if r["experiment"] == "tcp" and r["discipline"] == d
                  for p in r["periods"] if p["start_s"] == a]
            pub = FIG5.get((d, a), (None, None))
            rows.append({
                "period_s": f"{a}-{b}", "discipline": DISPLAY[d],
                "utilization_mbps": _ci_cell([p["utilization_mbps"] for p in rs], ".3f"),
                "published_utilization_mbps": _pub(pub[0], ".3f"),
                "drop_rate_pct": _ci_cell([p["drop_rate_pct"] for p in rs], ".2f", "drop_rate_pct"),
                "published_drop_rate_pct": _pub(pub[1], ".2f"),
                "jain": _ci_cell([p["jain"] for p in rs], ".3f", "jain"),
            })
    return pd.DataFrame(rows)


def jain_table(results: list[dict], experiment: str, discs: tuple[str, ...]) -> pd.DataFrame:
    """Jain's index over all flows active in each period (published values: lost with the figures)."""
    rows = []
    for d in discs:
        row: dict[str, Any] = {"discipline": DISPLAY[d]}
        for a, b in PERIODS_S:
            vals = [p["jain"] for r in results if r["experiment"] == experiment and r["discipline"] == d
                    for p in r["periods"] if p["start_s"] == a]
            row[f"jain_{a}-{b}s"] = _ci_cell(vals, ".3f", "jain")
        rows.append(row)
    return pd.DataFrame(rows)


def video_table(results: list[dict], key: str, published: dict, discs: tuple[str, ...]) -> pd.DataFrame:
    fmts = (".3f", ".0f", ".0f", ".2f", ".1f", ".1f")
    rows = []
    for d in discs:
        rs = [r["video"][key] for r in results if r["experiment"] == "mpeg" and r["discipline"] == d
              and key in r.get("video", {})]
        row: dict[str, Any] = {"discipline": DISPLAY[d]}
        pub = published.get(d)
        for i, (col, fmt) in enumerate(zip(TABLE_COLUMNS, fmts, strict=False)):
            row[col] = _ci_cell([r[col] for r in rs], fmt, col)
            row[f"published_{col}"] = _pub(pub[i] if pub else None, fmt)
        rows.append(row)
    return pd.DataFrame(rows)


def quality_table(results: list[dict], discs: tuple[str, ...]) -> pd.DataFrame:
    """What the viewers see per discipline and kind of stream (not in the paper): mean PSNR and
    SSIM of the shown pictures, freezes and frozen seconds per stream, and the loss-free PSNR."""
    from aqmlab.viewer import quality_cells

    rows = []
    for group in ("responsive", "unresponsive"):
        for d in discs:
            ps = [r["picture"][group] for r in results if r["experiment"] == "mpeg" and r["discipline"] == d
                  and r.get("picture", {}).get(group)]
            if not ps:
                continue
            rows.append({"group": group, "discipline": DISPLAY[d], "streams_scored": ps[0]["flows"],
                         **quality_cells(ps, _ci_cell)})
    return pd.DataFrame(rows)


def class_throughput_table(results: list[dict], experiment: str, discs: tuple[str, ...],
                           per_flow: bool, periods: tuple[tuple[int, int], ...] = PERIODS_S) -> pd.DataFrame:
    """Throughput of each flow group (aggregate, or average per active flow) by packet class."""
    rows = []
    groups = sorted({g["group"] for r in results if r["experiment"] == experiment for g in r["groups"]})
    for a, b in periods:
        for d in discs:
            for group in groups:
                gs = [g for r in results if r["experiment"] == experiment and r["discipline"] == d
                      for g in r["groups"] if g["group"] == group and g["start_s"] == a]
                if not gs or not any(g["active"] for g in gs):
                    continue
                scale = [1 / g["active"] if per_flow and g["active"] else 1.0 for g in gs]
                row: dict[str, Any] = {"period_s": f"{a}-{b}", "discipline": DISPLAY[d], "group": group}
                row["mbps"] = _ci_cell([g["mbps"] * s for g, s in zip(gs, scale, strict=True)], ".3f")
                for c in (1, 2, 3):
                    row[f"class{c}_mbps"] = _ci_cell([g[f"class{c}_mbps"] * s for g, s in zip(gs, scale, strict=True)],
                                                     ".3f")
                rows.append(row)
    return pd.DataFrame(rows)


def mean_of(results: list[dict], experiment: str, d: str, group: str, a: int, col: str = "mbps",
            per_flow: bool = False) -> float:
    vals = [g[col] / (g["active"] if per_flow else 1) for r in results
            if r["experiment"] == experiment and r["discipline"] == d
            for g in r["groups"] if g["group"] == group and g["start_s"] == a and g["active"]]
    return mean_ci(vals)[0]


# ---- the command ----------------------------------------------------------------------------


def jobs_for(seeds: list[int], overrides: tuple[str, ...], discs: tuple[str, ...],
             records_dir: str | None, quality_flows: int = 0) -> list[Job]:
    jobs = []
    for i, seed in enumerate(seeds):
        for e in SETS:
            for d in discs:
                jobs.append(Job(e, d, seed, overrides, records_dir, keep_traces=(i == 0),
                                quality_flows=quality_flows if e == "mpeg" else 0))
    return jobs


def reproduce(out_dir: Path, seeds: list[int], overrides: tuple[str, ...] = (), keep_records: bool = False,
              workers: int | None = None, quality_flows: int = 0) -> dict[str, pd.DataFrame]:
    """Runs everything and writes tables, figures and report.md into `out_dir` (which must be
    a fresh directory: the caller handles atomic replacement). With `quality_flows` > 0 that
    many streams of each kind are also decoded for real and scored (the "quality" table)."""
    discs = disciplines()
    records_dir = str(out_dir / "runs") if keep_records else None
    results = parallel_map(run_job, jobs_for(seeds, overrides, discs, records_dir, quality_flows), workers)
    tables = {
        "fig5": fig5_table(results, discs),
        "fig5_jain": jain_table(results, "tcp", discs),
        "fig6_jain": jain_table(results, "mpeg", discs),
        "fig8_jain": jain_table(results, "mixed", discs),
        "table1": video_table(results, "table1", TABLE1, discs),
        "table2": video_table(results, "table2", TABLE2, discs),
        "fig6_throughput": class_throughput_table(results, "mpeg", discs, per_flow=True, periods=((10, 20),)),
        "fig8_throughput": class_throughput_table(results, "mixed", discs, per_flow=False),
    }
    if quality_flows:
        tables["quality"] = quality_table(results, discs)
    write_tables(tables, out_dir / "tables")
    from aqmlab.reproduce import rb_rio_figures

    rb_rio_figures.draw_all(results, discs, out_dir / "figures")
    write_report(tables, seeds, overrides, out_dir / "report.md")
    (out_dir / "measurements.json").write_text(json.dumps(results, sort_keys=True, default=float) + "\n")
    return tables



TITLES = {
    "fig5": "Figure 5: link utilization, drop rate and Jain's index, 60 TCP flows",
    "fig5_jain": "Figure 5 (bottom): Jain's index per period, TCP flows",
    "fig6_throughput": "Figure 6 (top): average per-flow throughput by class, MPEG streams, 10-20 s",
    "fig6_jain": "Figure 6 (bottom): Jain's index per period, MPEG streams",
    "table1": "Table 1: 40 responsive MPEG streams, 0-30 s",
    "table2": "Table 2: 20 unresponsive MPEG streams, 10-20 s",
    "fig8_throughput": "Figure 8 (top): aggregate throughput by flow type and class, TCP + MPEG mix",
    "fig8_jain": "Figure 8 (bottom): Jain's index per period, TCP + MPEG mix",
    "quality": "Extra: what the viewers see (real MPEG-2 decode, docs/quality.md), MPEG streams",
}


def write_report(tables: dict[str, pd.DataFrame], seeds: list[int], overrides: tuple[str, ...], path: Path) -> None:
    lines = [f"# Rb-RIO reproduction ({SOURCE})", "",
             f"Seeds: {', '.join(map(str, seeds))} (mean ± 95 % CI when more than one). "
             f"Overrides: {', '.join(overrides) or 'none'}. Published values are the paper's text; "
             "its figures' plotted values (Jain's indices, Figure 6 and 8 bars) were lost, marked '-'. "
             "Scenario choices: scenarios/rb-rio/*.toml and docs/reproductions/rb-rio.md.", ""]
    for name, df in tables.items():
        lines += [f"## {TITLES[name]}", "", df.to_markdown(index=False), ""]
    lines += ["Figures: figures/fig4.png, fig6.png, fig7.png, fig8.png.", ""]
    path.write_text("\n".join(lines))
