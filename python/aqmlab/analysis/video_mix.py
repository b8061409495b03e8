"""Every kind of video under each discipline (`scenarios/video/mix/`): per run, the ABR clients'
quality of experience pooled over every client, each real-time call's goodput, frame delay and
late frames, and the bulk flows' goodput; per discipline their means over seeds with Student's t
95 % intervals; and a two-panel figure: the ABR clients in Puffer's axes (SSIM against time
stalled) and the calls' frame delay p95 against their goodput, one point per discipline.

Input: result directories of `aqmlab run`, each labelled by the discipline it ran and its seed
(docs/video.md, "Every discipline"). The calls are the flow groups whose names are given
(`calls`, by default the mix's `gcc-call` and `scream-call`), the bulk flows the group `bulk`,
the ABR clients every flow with an `abr_sessions` row.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from aqmlab.analysis import rtc
from aqmlab.stats import MOSTLY_LOST_MARK, MOSTLY_LOST_PCT, mark_if_mostly_lost, mostly_lost, t975

#: The mix's call groups, in the order the table and the figure show them.
CALLS = ("gcc-call", "scream-call")
#: ABR measures pooled over the clients (means of the clients of a run).
ABR_MEASURES = ("bitrate_bps", "ssim_db", "stall_ratio", "startup_ns", "switches")


def run_row(discipline: str, seed: int, path: Path, start_s: float, end_s: float,
            calls: tuple[str, ...] = CALLS, deadline_ms: float = 150.0) -> dict[str, object]:
    """One run's row: the ABR measures averaged over its clients, for each call its goodput
    (Mbit/s), frame delay p95 (ms) and share of frames late or lost (of the frames captured in
    [start_s, end_s - deadline)), and the bulk group's goodput (Mbit/s, summed)."""
    flows = pd.read_parquet(path / "flows.parquet")[["flow", "group_name"]]
    sessions = pd.read_parquet(path / "abr_sessions.parquet")
    row: dict[str, object] = {"discipline": discipline, "seed": seed}
    for m in ABR_MEASURES:
        row[f"abr_{m}"] = float(sessions[m].mean())
    for call in calls:
        ids = flows.loc[flows["group_name"] == call, "flow"].tolist()
        if len(ids) != 1:
            raise ValueError(f"{path}: flow group {call!r}: expected one call, found {len(ids)} flows")
        s = rtc.summary([(discipline, path)], start_s, end_s, flow=int(ids[0]), deadline_ms=deadline_ms).iloc[0]
        row[f"{call}_goodput_mbps"] = float(s["call_goodput_mbps"])
        row[f"{call}_delay_p95_ms"] = float(s["frame_delay_p95_ms"])
        row[f"{call}_late_or_lost"] = (s["frames_late"] + s["frames_lost"]) / s["frames"] if s["frames"] else np.nan
        row[f"{call}_lost"] = s["frames_lost"] / s["frames"] if s["frames"] else np.nan
    periods = pd.read_parquet(path / "flow_periods.parquet")
    periods = periods[(periods["start_s"] == start_s) & (periods["end_s"] == end_s)]
    row["bulk_goodput_mbps"] = float(periods.loc[periods["group_name"] == "bulk", "goodput_mbps"].sum())
    return row


def runs_table(runs: Iterable[tuple[str, int, Path]], start_s: float, end_s: float,
               calls: tuple[str, ...] = CALLS) -> pd.DataFrame:
    """`run_row` of every (discipline, seed, path)."""
    rows = [run_row(d, seed, p, start_s, end_s, calls) for d, seed, p in runs]
    if not rows:
        raise ValueError("runs: no result directory given")
    return pd.DataFrame(rows)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per discipline (in the order first seen): each measure's mean over the seeds where it is
    defined (a call that completed no frame has no frame delay), its 95 % half-width
    (`<measure>_ci`, Student's t over those seeds; NaN with fewer than two) and their number
    (`<measure>_n`), the largest share of frames lost in a seed (`<call>_lost_max`), and the
    number of seeds."""
    measures = [c for c in table.columns if c not in ("discipline", "seed")]
    order = list(dict.fromkeys(table["discipline"]))
    grouped = table.groupby("discipline", sort=False)[measures]
    out, sd, n, most = grouped.mean(), grouped.std(), grouped.count(), grouped.max()
    for m in measures:
        t = n[m].map(lambda k: t975(k - 1) if k >= 2 else np.nan)
        out[f"{m}_ci"] = sd[m] * t / np.sqrt(n[m])
        out[f"{m}_n"] = n[m]
        if m.endswith("_lost"):
            out[f"{m}_max"] = most[m]
    out["seeds"] = grouped.size()
    return out.loc[order]


def markdown(s: pd.DataFrame, calls: tuple[str, ...] = CALLS) -> str:
    """The summary as a Markdown table: mean +- half-width per cell."""
    def cell(d: str, m: str, scale: float, digits: int) -> str:
        mean, ci, n = s.loc[d, m] * scale, s.loc[d, f"{m}_ci"] * scale, int(s.loc[d, f"{m}_n"])
        if n == 0:
            return "-"
        text = f"{mean:.{digits}f}" + ("" if np.isnan(ci) else f" +- {ci:.{digits}f}")
        return text + (f" ({n} of {int(s.loc[d, 'seeds'])} seeds)" if n < s.loc[d, "seeds"] else "")

    head = ["discipline", "ABR bitrate Mbit/s", "ABR SSIM dB", "ABR stalled %", "ABR startup s", "ABR switches"]
    for call in calls:
        head += [f"{call} Mbit/s", f"{call} frame p95 ms", f"{call} late or lost %"]
    head.append("bulk Mbit/s")
    lines = ["| " + " | ".join(head) + " |", "| :-- |" + " --: |" * (len(head) - 1)]
    for d in s.index:
        cells = [d, cell(d, "abr_bitrate_bps", 1e-6, 2), cell(d, "abr_ssim_db", 1, 1),
                 cell(d, "abr_stall_ratio", 100, 2), cell(d, "abr_startup_ns", 1e-9, 2),
                 cell(d, "abr_switches", 1, 1)]
        for call in calls:
            # A delay over the few frames of a call that lost most of them is marked (aqmlab.stats).
            p95 = mark_if_mostly_lost(cell(d, f"{call}_delay_p95_ms", 1, 0), [s.loc[d, f"{call}_lost_max"] * 100])
            cells += [cell(d, f"{call}_goodput_mbps", 1, 2), p95, cell(d, f"{call}_late_or_lost", 100, 1)]
        cells.append(cell(d, "bulk_goodput_mbps", 1, 2))
        lines.append("| " + " | ".join(cells) + " |")
    note = (f"\n{MOSTLY_LOST_MARK}: in at least one seed the call lost more than {MOSTLY_LOST_PCT:g} % of its "
            "frames; its delay is over the few it completed.\n")
    return "\n".join(lines) + "\n" + (note if MOSTLY_LOST_MARK in "".join(lines) else "")


#: Colours past matplotlib's ten cycle colours (C0-C9), so that an eleventh discipline (Rb-RIO)
#: and more do not repeat the first ones.
EXTRA_COLOURS = ("black", "darkgoldenrod", "navy", "lime", "magenta")


def colour(i: int) -> str:
    """The figure's colour of the i-th discipline: C0-C9, then EXTRA_COLOURS (cycling)."""
    return f"C{i}" if i < 10 else EXTRA_COLOURS[(i - 10) % len(EXTRA_COLOURS)]


def figure(s: pd.DataFrame, path: Path, calls: tuple[str, ...] = CALLS) -> None:
    """Left: every discipline's ABR clients, time-weighted SSIM against time stalled (x inverted:
    better up and right, as Puffer draws it). Right: each call's frame delay p95
    against its goodput, one marker per controller, hollow where the call lost most of its
    frames in a seed. Colours are disciplines; bars 95 % intervals over seeds, cut at 0."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    fig = Figure(figsize=(11.0, 4.6))
    left, right = fig.subplots(1, 2)
    markers = "o^sDv"
    for i, d in enumerate(s.index):
        r, c = s.loc[d], colour(i)
        stall, stall_ci = r["abr_stall_ratio"] * 100, np.nan_to_num(r["abr_stall_ratio_ci"]) * 100
        left.errorbar(stall, r["abr_ssim_db"], xerr=[[min(stall_ci, stall)], [stall_ci]],
                      yerr=np.nan_to_num(r["abr_ssim_db_ci"]), fmt="o", color=c, capsize=3, label=d)
        for j, call in enumerate(calls):
            # Hollow: the call lost most of its frames in a seed (its delay is over the rest).
            hollow = mostly_lost([r[f"{call}_lost_max"] * 100])
            rate, rate_ci = r[f"{call}_goodput_mbps"], np.nan_to_num(r[f"{call}_goodput_mbps_ci"])
            delay, delay_ci = r[f"{call}_delay_p95_ms"], np.nan_to_num(r[f"{call}_delay_p95_ms_ci"])
            # Intervals cut at 0: a goodput or a delay is never negative.
            right.errorbar(rate, delay, xerr=[[min(rate_ci, rate)], [rate_ci]],
                           yerr=[[min(delay_ci, delay)], [delay_ci]],
                           fmt=markers[(j + 1) % len(markers)], color=c, capsize=3, markersize=7,
                           markerfacecolor="none" if hollow else c)
    widest = float((s["abr_stall_ratio"] + s["abr_stall_ratio_ci"].fillna(0)).max() * 100)
    left.set_xlim(max(0.5, widest * 1.05), -0.05 * max(0.5, widest * 1.05))
    left.set_xlabel("ABR clients: time stalled (%)  (better to the right)")
    left.set_ylabel("ABR clients: time-weighted SSIM (dB)")
    left.set_title("10 ABR clients (5 algorithms), mean per run", fontsize=9)
    left.legend(fontsize=7, ncol=2, title="discipline", title_fontsize=7)
    right.set_xlim(left=0)
    right.set_ylim(bottom=0)
    right.set_xlabel("call goodput (Mbit/s)")
    right.set_ylabel("call frame delay p95 (ms)")
    right.axhline(150, color="0.3", ls="--", lw=0.8)
    right.text(0.01, 150, "150 ms deadline", fontsize=7, va="bottom", color="0.3",
               transform=right.get_yaxis_transform())  # x in axes fraction, y in ms
    for j, call in enumerate(calls):
        right.plot([], [], markers[(j + 1) % len(markers)], color="0.4", label=call)
    right.plot([], [], "o", color="0.4", markerfacecolor="none",
               label=f"hollow: > {MOSTLY_LOST_PCT:g} % of frames lost in a seed")
    right.set_title("the two calls, one marker each per discipline", fontsize=9)
    right.legend(fontsize=7, title="call", title_fontsize=7)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def algorithm_figure(runs: Iterable[tuple[str, int, Path]], path: Path) -> dict[str, list[str]]:
    """The ABR clients in Puffer's axes, one panel per algorithm (the flow group) and one point
    per discipline in it: time-weighted SSIM against time stalled, means over seeds with 95 %
    intervals (`aqmlab.analysis.abr.summary`), x inverted (better up and right), intervals cut
    at 0; the disciplines' colours are `figure`'s. The panels share the SSIM axis; each has its
    own stall axis (one discipline's 30 % would flatten the others' tenths), and the last cell
    holds the legend. Returns, per panel, the disciplines drawn in it."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    from aqmlab.analysis import abr  # noqa: PLC0415

    runs = list(runs)
    table = abr.summary(abr.sessions(runs))
    disciplines = list(dict.fromkeys(d for d, _, _ in runs))
    groups = sorted(table.index.get_level_values("group").unique())
    drawn: dict[str, list[str]] = {g: [] for g in groups}
    columns = 3
    rows = (len(groups) + 1 + columns - 1) // columns
    fig = Figure(figsize=(4.0 * columns, 3.4 * rows))
    cells = fig.subplots(rows, columns, sharey=True, squeeze=False).ravel()
    for ax, g in zip(cells, groups, strict=False):
        widest = 0.0
        for i, d in enumerate(disciplines):
            if (d, g) not in table.index:
                continue
            r = table.loc[(d, g)]
            stall, stall_ci = r["stall_ratio"] * 100, np.nan_to_num(r["stall_ratio_ci"]) * 100
            widest = max(widest, stall + stall_ci)
            drawn[g].append(d)
            ax.errorbar(stall, r["ssim_db"], xerr=[[min(stall_ci, stall)], [stall_ci]],
                        yerr=np.nan_to_num(r["ssim_db_ci"]), fmt="o", color=colour(i), capsize=3, label=d)
        ax.set_xlim(max(0.5, widest * 1.05), -0.05 * max(0.5, widest * 1.05))
        ax.set_title(g, fontsize=10)
        ax.set_xlabel("time stalled (%)  (better to the right)", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in cells[::columns]:
        ax.set_ylabel("time-weighted SSIM (dB)")
    handles, labels = cells[0].get_legend_handles_labels()
    for ax in cells[len(groups):]:
        ax.axis("off")
    cells[len(groups)].legend(handles, labels, loc="center", ncol=2, fontsize=8, title="discipline")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return drawn
