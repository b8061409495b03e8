"""Real-time video calls (GCC) across runs: per-flow frame delay and lateness, and the figure of
target rate and frame delay over time, one line per run (e.g. FIFO against FQ-CoDel).

Input: result directories of `aqmlab run` holding `gcc_rate.parquet`, `rtc_frames.parquet` and
`rtc_sessions.parquet` (docs/video.md, "Real-time video: GCC"), each with a label.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

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


def rate_delay_figure(runs: Iterable[tuple[str, Path]], path: Path, flow: int = 0,
                      deadline_ms: float | None = 150.0) -> None:
    """Two panels against time: the call's target rate (Mbit/s) at each feedback report, and
    each frame's delay from capture to its last packet (ms; lost frames left out), one colour
    per run; the deadline as a dashed line."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    fig = Figure(figsize=(7.0, 5.6))
    (top, bottom) = fig.subplots(2, 1, sharex=True)
    for i, (label, p) in enumerate(runs):
        rate = pd.read_parquet(p / "gcc_rate.parquet")
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
