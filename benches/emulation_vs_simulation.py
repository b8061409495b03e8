"""Runs scenarios in both engines and prints their key figures side by side (Markdown), the
tables of docs/emulation.md:

    sudo python3 benches/emulation_vs_simulation.py sqf      # SQF testbed, FIFO and SQF, 5 TCP
    sudo python3 benches/emulation_vs_simulation.py rb-rio   # unresponsive MPEG, Drop-Tail and Rb-RIO
    sudo python3 benches/emulation_vs_simulation.py sqf --runs 5

The SQF testbed scenarios (scenarios/sqf/testbed-*.toml) run shortened to 20 s (measured over
5-20 s); the MPEG scenarios are scenarios/emu/rb-rio-mpeg-*.toml as they are. Each scenario runs
with seeds 1..N (`--runs`, default 3) in both engines: the simulator's runs differ by their seed,
the emulator's also from run to run (the kernel's timing). Each figure is printed as the median
and, in brackets, the range of its N runs.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from aqmlab.emu.run import emulate
from aqmlab.media import flow_quality, loss_against_sent_pct
from aqmlab.run import simulate
from aqmlab.scenario import load
from aqmlab.video import stream_stats

SQF_SETS = ["duration=20s", 'metrics.periods=[["5s", "20s"]]']


def both(name: str, sets: list[str]):
    sc, _ = load(name, sets)
    return simulate(sc, progress=False), emulate(sc)


def sqf_rows(engine: str, r) -> dict:
    start, end = r.scenario.periods()[0]
    t = r.tables
    q = flow_quality(t["media"], start, end).set_index("flow")
    per = r.periods.iloc[0]
    tcp = r.flow_periods[r.flow_periods["group_name"] == "tcp"]["throughput_mbps"].sum()

    # Against what was sent, not RFC 3550's received sequence range, which cannot see packets
    # lost after the last one received (a stream starved to the end of the period read as 0 %).
    def lost(flow: int) -> float:
        receiver_delay = int(t["flows"].loc[t["flows"]["flow"] == flow, "receiver_delay_ns"].iloc[0])
        after_bottleneck = r.scenario.topology.bottleneck.delay + receiver_delay
        return round(loss_against_sent_pct(t, flow, start, end, r.scenario.duration, after_bottleneck), 2)

    return {"engine": engine, "qdisc": r.scenario.topology.bottleneck.qdisc.kind,
            "video loss %": lost(0), "audio loss %": lost(1),
            "video delay p95 ms": round(q.loc[0, "delay_p95_ms"], 1),
            "audio delay p95 ms": round(q.loc[1, "delay_p95_ms"], 1),
            "TCP Mbit/s": round(tcp, 2), "util Mbit/s": round(per["utilization_mbps"], 2),
            "drop %": round(per["drop_rate_pct"], 2)}


def mpeg_rows(engine: str, r) -> dict:
    start, end = r.scenario.periods()[0]
    frames = r.tables["frames"]
    flows = sorted(frames["flow"].unique())
    row = {"engine": engine, "qdisc": r.scenario.topology.bottleneck.qdisc.kind,
           "util Mbit/s": round(r.periods.iloc[0]["utilization_mbps"], 2)}
    for code, t in ((1, "I"), (2, "P"), (3, "B")):
        s = stream_stats(frames[frames["frame_type"] == code], flows, start, end)
        row[f"{t} decodable loss %"] = round(s["decodable_loss_pct"], 1)
    s = stream_stats(frames, flows, start, end)
    row["packet loss %"] = round(s["packet_loss_pct"], 1)
    row["decodable loss %"] = round(s["decodable_loss_pct"], 1)
    return row


def summarize(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (engine, qdisc), in the order first met; each other column as "median (min-max)"
    over its runs ("median" alone when the runs agree)."""
    def cell(values: pd.Series) -> str:
        lo, mid, hi = values.min(), values.median(), values.max()
        return f"{mid:g}" if lo == hi else f"{mid:g} ({lo:g}-{hi:g})"
    return rows.groupby(["engine", "qdisc"], sort=False).agg(cell).reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("which", nargs="?", default="sqf", choices=["sqf", "rb-rio"])
    ap.add_argument("--runs", type=int, default=3, help="seeds 1..N in each engine (default 3)")
    args = ap.parse_args(argv)
    if args.runs < 1:
        print(f"error: --runs: must be at least 1, not {args.runs}", file=sys.stderr)
        return 2
    rows = []
    names, sets, measure = ((("sqf/testbed-fifo", "sqf/testbed-sqf"), SQF_SETS, sqf_rows) if args.which == "sqf"
                            else (("emu/rb-rio-mpeg-droptail", "emu/rb-rio-mpeg-rb-rio"), [], mpeg_rows))
    for name in names:
        for seed in range(1, args.runs + 1):
            sim, emu = both(name, [*sets, f"seed={seed}"])
            rows += [measure("sim", sim), measure("emu", emu)]
    print(f"{args.runs} runs per engine and scenario (seeds 1-{args.runs}): median (range)")
    print(summarize(pd.DataFrame(rows)).to_markdown(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
