"""A DualPI2 run seen per queue (docs/aqm.md): the queueing delay each of its two queues gives,
and each flow's throughput over time.

DualPI2 (RFC 9332) sends ECT(1) and CE packets to its L queue and everything else to its
classic queue. Which flow group went where is read from the run's resolved `scenario.toml`:
a UDP source with `ecn = "ect1"`, or TCP with `ecn = true` and `ecn_codepoint = "ect1"`, is
L4S; every other group is classic. (The packet records carry no ECN codepoint, so the queue
is known per group, not per packet: a classic flow's CE-marked packets would still count as
classic here, which is how DualPI2 classified them on arrival anyway, since only ECT(1) and
CE enter L and a classic flow's packets are Not-ECT or ECT(0).)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from aqmlab.outdir import atomic_write
from aqmlab.scenario.load import read_toml


def l4s_groups(run: Path) -> set[str]:
    """The flow groups of a run that send ECT(1) (DualPI2's L queue)."""
    sc = read_toml(run / "scenario.toml", "results directory's scenario.toml")
    out = set()
    for g in sc.get("flows", []):
        app = g.get("app", {})
        tcp = app.get("tcp", {})
        if app.get("ecn") == "ect1" or (tcp.get("ecn") and tcp.get("ecn_codepoint") == "ect1"):
            out.add(g["name"])
    return out


def queue_delays(run: Path, start_s: float = 0.0) -> pd.DataFrame:
    """One row per packet that left the bottleneck from `start_s` on: `flow`, `group`,
    `queue` ("L" or "classic") and `sojourn_ms`."""
    packets = pd.read_parquet(run / "packets.parquet", columns=["t_ns", "event", "flow", "sojourn_ns"])
    groups = pd.read_parquet(run / "flows.parquet")[["flow", "group_name"]]
    left = packets[(packets["event"] == "dequeue") & (packets["t_ns"] >= start_s * 1e9)]
    left = left.merge(groups, on="flow").rename(columns={"group_name": "group"})
    l4s = l4s_groups(run)
    left["queue"] = np.where(left["group"].isin(l4s), "L", "classic")
    left["sojourn_ms"] = left["sojourn_ns"] / 1e6
    return left[["flow", "group", "queue", "sojourn_ms"]].reset_index(drop=True)


def throughput(run: Path, bin_s: float = 0.5) -> pd.DataFrame:
    """Each flow's throughput through the bottleneck per `bin_s` (Mbit/s): columns `t_s` (bin
    start), `flow`, `group`, `mbps`."""
    packets = pd.read_parquet(run / "packets.parquet", columns=["t_ns", "event", "flow", "size"])
    groups = pd.read_parquet(run / "flows.parquet")[["flow", "group_name"]]
    left = packets[packets["event"] == "dequeue"].copy()
    left["t_s"] = (left["t_ns"] // int(bin_s * 1e9)) * bin_s
    out = left.groupby(["t_s", "flow"], observed=True)["size"].sum().reset_index()
    out["mbps"] = out["size"] * 8 / bin_s / 1e6
    out = out.merge(groups, on="flow").rename(columns={"group_name": "group"})
    return out[["t_s", "flow", "group", "mbps"]]


def figure(run: Path, path: Path, start_s: float = 5.0) -> None:
    """Left: the CDF of queueing delay per queue from `start_s` on (log x). Right: each flow's
    throughput over time, coloured by group."""
    import matplotlib  # noqa: PLC0415 - plotting only when a figure is asked for
    from matplotlib.figure import Figure  # noqa: PLC0415

    d = queue_delays(run, start_s)
    tp = throughput(run)
    # A Figure, not pyplot: no backend is chosen or changed (as aqmlab.plots draws).
    fig = Figure(figsize=(11, 4.2))
    left, right = fig.subplots(1, 2)
    for queue, g in d.groupby("queue"):
        x = np.sort(np.maximum(g["sojourn_ms"].to_numpy(), 1e-3))
        members = ", ".join(sorted(g["group"].unique()))
        left.plot(x, np.arange(1, len(x) + 1) / len(x), label=f"{queue} queue ({members})")
    left.set_xscale("log")
    left.set_xlabel(f"queueing delay (ms, log), from {start_s:g} s")
    left.set_ylabel("fraction of packets")
    left.grid(True, which="both", alpha=0.3)
    left.legend(title="DualPI2", loc="upper left", fontsize="small")
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    colours = dict(zip(dict.fromkeys(tp["group"]), cycle, strict=False))
    for (_flow, group), g in tp.groupby(["flow", "group"]):
        right.plot(g["t_s"], g["mbps"], color=colours[group], label=group, linewidth=1)
    handles, labels = right.get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    right.legend(unique.values(), unique.keys(), title="flow group", loc="upper right", fontsize="small")
    right.set_ylim(0, tp["mbps"].max() * 1.3)  # headroom for the legend above the lines
    right.set_xlabel("time (s)")
    right.set_ylabel("throughput per flow (Mbit/s, 0.5 s bins)")
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120))
