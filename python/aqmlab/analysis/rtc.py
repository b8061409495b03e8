"""Real-time video calls (GCC or SCReAM) across runs: per-flow frame delay and lateness, a
per-run summary over a period, and the figure of target rate and frame delay over time, one line
per run (e.g. FIFO against FQ-CoDel).

Input: result directories of `aqmlab run` holding `gcc_rate.parquet` or `scream_rate.parquet`,
`rtc_frames.parquet` and `rtc_sessions.parquet` (docs/video.md, "Real-time video: GCC" and
"Real-time video: SCReAM"), each with a label.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd


def sessions(runs: Iterable[tuple[str, Path]]) -> pd.DataFrame:
    """Every call's `rtc_sessions` row with its run's `label`, delays in ms and the share of
    judged frames that were late."""
    frames = []
    for label, path in runs:
        s = pd.read_parquet(path / "rtc_sessions.parquet")
        s = s.assign(label=label, frame_delay_p50_ms=s["frame_delay_p50_ns"] / 1e6,
                     frame_delay_p95_ms=s["frame_delay_p95_ns"] / 1e6,
                     late_share=s["frames_late"] / s["frames"].where(s["frames"] > 0))
        frames.append(s)
    if not frames:
        raise ValueError("runs: no result directory given")
    return pd.concat(frames, ignore_index=True)


def rate_table(path: Path) -> pd.DataFrame:
    """The call's per-report rate table, whichever controller made it."""
    for name in ("gcc_rate", "scream_rate"):
        if (path / f"{name}.parquet").exists():
            return pd.read_parquet(path / f"{name}.parquet")
    raise ValueError(f"{path}: no gcc_rate or scream_rate table (not a call with congestion_control)")


def summary(runs: Iterable[tuple[str, Path]], start_s: float, end_s: float, flow: int = 0,
            deadline_ms: float = 150.0) -> pd.DataFrame:
    """One row per run over [start_s, end_s): the call's mean target (Mbit/s, over its reports),
    its goodput and every other flow's (`flow_periods` for that period), its frames captured in
    [start_s, end_s - deadline) with their delay p50 and p95 (ms, complete frames, nearest rank),
    how many were late and how many lost."""
    rows = []
    for label, p in runs:
        rate = rate_table(p)
        rate = rate[(rate["flow"] == flow) & (rate["t_ns"] >= start_s * 1e9) & (rate["t_ns"] < end_s * 1e9)]
        fp = pd.read_parquet(p / "flow_periods.parquet")
        fp = fp[(fp["start_s"] == start_s) & (fp["end_s"] == end_s)]
        if fp.empty:
            raise ValueError(f"{p}: no metrics period [{start_s:g}, {end_s:g}) s")
        fr = pd.read_parquet(p / "rtc_frames.parquet")
        fr = fr[(fr["flow"] == flow) & (fr["t_ns"] >= start_s * 1e9) & (fr["t_ns"] < (end_s - deadline_ms / 1e3) * 1e9)]
        complete = fr[fr["received"] >= fr["packets"]]
        d = complete["delay_ns"].sort_values().to_numpy() / 1e6

        def pct(q: float, d: Any = d) -> float:
            return float(d[max(math.ceil(q * len(d)), 1) - 1]) if len(d) else float("nan")

        others = fp[fp["flow"] != flow]["goodput_mbps"]
        rows.append({
            "label": label, "mean_target_mbps": rate["target_bps"].mean() / 1e6,
            "call_goodput_mbps": float(fp[fp["flow"] == flow]["goodput_mbps"].iloc[0]),
            "others_goodput_mbps": float(others.sum()),
            "frame_delay_p50_ms": pct(0.5), "frame_delay_p95_ms": pct(0.95),
            "frames": len(fr), "frames_late": int((d > deadline_ms).sum()), "frames_lost": len(fr) - len(complete),
        })
    return pd.DataFrame(rows)


def rate_delay_figure(runs: Iterable[tuple[str, Path]], path: Path, flow: int = 0,
                      deadline_ms: float | None = 150.0) -> None:
    """Two panels against time: the call's target rate (Mbit/s) at each feedback report, and
    each frame's delay from capture to its last packet (ms; lost frames left out), one colour
    per run; the deadline as a dashed line."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    fig = Figure(figsize=(7.0, 5.6))
    (top, bottom) = fig.subplots(2, 1, sharex=True)
    for i, (label, p) in enumerate(runs):
        rate = rate_table(p)
        rate = rate[rate["flow"] == flow]
        frames = pd.read_parquet(p / "rtc_frames.parquet")
        frames = frames[frames["flow"] == flow]
        top.plot(rate["t_ns"] / 1e9, rate["target_bps"] / 1e6, color=f"C{i}", lw=1.0, label=label)
        bottom.plot(frames["t_ns"] / 1e9, frames["delay_ns"] / 1e6, color=f"C{i}", lw=0.6, label=label)
    if deadline_ms is not None:
        bottom.axhline(deadline_ms, color="0.3", ls="--", lw=0.8, label=f"deadline {deadline_ms:g} ms")
    top.set_ylabel("target rate (Mbit/s)")
    bottom.set_ylabel("frame delay (ms)")
    bottom.set_xlabel("time (s)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    top.set_ylim(bottom=0)
    bottom.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
