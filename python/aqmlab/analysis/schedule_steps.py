"""A link's rate and delay schedule seen from its traffic (docs/links.md, "A rate and delay
schedule"): per run, the bottleneck's throughput of each flow group and the queueing delay of
its packets over time, the schedule's steps marked.

Input: result directories of `aqmlab run` with packet events recorded (`packets.parquet`, the
bottleneck's) and a scheduled bottleneck (`scenario.toml`). Per bin of `BIN_S`:

- throughput: the bytes the bottleneck started sending (dequeue events) of each group, as
  Mbit/s;
- queueing delay: the median sojourn of those packets in the bottleneck's queue (time from
  enqueue to dequeue), per group.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from aqmlab import _core
from aqmlab.outdir import atomic_write
from aqmlab.scenario.link_schedule import read_schedule_csv
from aqmlab.scenario.load import read_toml

#: Width of a time bin (s).
BIN_S = 0.1


def series(run: Path) -> pd.DataFrame:
    """Per bin and flow group: `t_s` (bin start), `group`, `mbps`, `sojourn_ms` (median)."""
    packets = pd.read_parquet(run / "packets.parquet", columns=["t_ns", "event", "flow", "size", "sojourn_ns"])
    flows = pd.read_parquet(run / "flows.parquet", columns=["flow", "group_name"])
    sent = packets[packets["event"] == "dequeue"].merge(flows, on="flow")
    sent = sent.assign(bin=(sent["t_ns"] // int(BIN_S * 1e9)).astype(np.int64))
    g = sent.groupby(["group_name", "bin"], observed=True)
    out = pd.DataFrame({"mbps": g["size"].sum() * 8 / BIN_S / 1e6, "sojourn_ms": g["sojourn_ns"].median() / 1e6})
    out = out.reset_index().rename(columns={"group_name": "group"})
    return out.assign(t_s=out["bin"] * BIN_S).drop(columns="bin")


def steps(run: Path) -> list[tuple[float, str]]:
    """The bottleneck's schedule steps after 0 as (time in s, label)."""
    link = read_toml(run / "scenario.toml")["topology"]["bottleneck"]
    schedule = link.get("schedule") or []
    if isinstance(schedule, str):  # a CSV file: its steps, as the scenario read them
        written = [(at, rate, delay) for at, rate, delay in read_schedule_csv(schedule)]
    else:
        written = [(_core.parse_time(s["at"]), s.get("rate") and _core.parse_rate(s["rate"]),
                    s.get("delay") and _core.parse_time(s["delay"])) for s in schedule]
    out = []
    for at, rate, delay in written:
        if at == 0:
            continue
        label = ", ".join(text for text in (rate is not None and f"{rate / 1e6:g} Mbit/s",
                                             delay is not None and f"{delay / 1e6:g} ms") if text)
        out.append((at / 1e9, label))
    return out


def figure(runs: list[tuple[str, Path]], path: Path) -> None:
    """One column per run: throughput per group on top, queueing delay per group below (log)."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    fig = Figure(figsize=(5.2 * len(runs), 6.0))
    axes = fig.subplots(2, len(runs), squeeze=False, sharex=True)
    for col, (title, run) in enumerate(runs):
        s = series(run)
        top, bottom = axes[0][col], axes[1][col]
        for group, d in s.groupby("group", sort=True):
            top.plot(d["t_s"], d["mbps"], linewidth=0.8, label=str(group))
            bottom.plot(d["t_s"], d["sojourn_ms"].clip(lower=0.01), linewidth=0.8, label=str(group))
        for t, label in steps(run):
            for ax in (top, bottom):
                ax.axvline(t, color="grey", linestyle=":", linewidth=1)
            top.text(t, 1.0, f" {label}", transform=top.get_xaxis_transform(), va="top", fontsize="small",
                     color="grey")
        top.set_title(title)
        top.set_ylabel("throughput (Mbit/s)")
        bottom.set_ylabel("queueing delay (ms, log; 0 at 0.01)")
        bottom.set_yscale("log")
        bottom.set_xlabel("time (s)")
        for ax in (top, bottom):
            ax.grid(True, which="both", alpha=0.3)
        top.legend(title="group", loc="center right", fontsize="small")
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110))


def main(argv: list[str] | None = None) -> None:
    """python -m aqmlab.analysis.schedule_steps FIGURE.png TITLE=RUN_DIR ...: the figure of
    docs/links.md from run directories."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or not all("=" in a for a in args[1:]):
        raise SystemExit("usage: python -m aqmlab.analysis.schedule_steps FIGURE.png TITLE=RUN_DIR ...")
    runs = [(title, Path(d)) for title, _, d in (a.partition("=") for a in args[1:])]
    figure(runs, Path(args[0]))
    print(json.dumps({"runs": len(runs), "figure": args[0]}))


if __name__ == "__main__":
    main()
