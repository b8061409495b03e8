#!/usr/bin/env python3
"""Cost per bottleneck packet against the number of flows, on scenarios/scale/newreno-10k.toml
(NewReno flows, Drop-Tail, 1 Mbit/s fair share per flow): from 60 flows through 60 Mbit/s up to
10,000 flows through 10 Gbit/s, with the bottleneck rate and both router buffers scaled with the
flow count so that every size sees the same per-flow dynamics.

Each size runs the simulator alone, without Python (the `run_config` example of aqmlab-sim, the
same binary the profiles in benches/README.md were taken of), in its own process, which reports
the wall and CPU time of `Simulation::run` only (set-up apart) and its peak resident memory.
The curve uses CPU time: on a shared machine the wall time of a run depends on the load.

    cargo build --release -p aqmlab-sim --example run_config
    python3 benches/bench_scale.py                       # 60 ... 10,000 flows, 10 s each
    python3 benches/bench_scale.py --sizes 60 600 --duration 5s --repeat 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from aqmlab.scenario import load

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "examples" / "run_config"
console = Console()


def config_for(flows: int, duration: str) -> dict:
    """The scale scenario at `flows` flows: rate 1 Mbit/s per flow, buffers scaled alike (8,000
    and 20,000 packets at 10,000 flows, at least 100)."""
    k = flows / 10_000
    rate = round(10e9 * k)
    sc, _ = load("scale/newreno-10k", [
        f"flows.bulk.count={flows}", f"duration={duration}",
        f"topology.bottleneck.rate={rate}bps", f"topology.reverse.rate={rate}bps",
        f"topology.bottleneck.qdisc.limit={max(100, round(8000 * k))}p",
        f"topology.reverse.qdisc.limit={max(100, round(20000 * k))}p",
    ])
    return sc.to_sim_config()


def run_size(flows: int, duration: str) -> dict:
    cfg = config_for(flows, duration)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(cfg, f)
        f.flush()
        out = subprocess.run([str(BINARY), f.name], check=True, capture_output=True, text=True).stdout
    r = {k: float(v) for k, v in (line.split() for line in out.splitlines())}
    r["flows"] = flows
    r["rate_bps"] = cfg["topology"]["bottleneck"]["rate_bps"]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[60, 600, 2000, 5000, 10_000])
    ap.add_argument("--duration", default="10s", help="simulated time per size")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per size; the row is the run of median CPU time (the 60-flow run "
                         "takes under 0.1 s, so one sample is at the mercy of the machine)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    if not BINARY.exists():
        raise SystemExit(f"{BINARY} missing: cargo build --release -p aqmlab-sim --example run_config")
    rows = []
    t = Table(title=f"scale/newreno-10k, 1 Mbit/s per flow, {args.duration} simulated")
    # "events": the model's (summary.json's count); "dispatched": those taken from the event
    # list (transmissions that end with nothing queued behind them need none, see
    # Simulation::end_needs_no_event), which is what the rates below are per.
    for col in ("flows", "bottleneck", "set-up s", "run wall s", "run CPU s", "events",
                "dispatched", "dispatched/CPU s", "bottleneck pkts/CPU s", "CPU ns/bottleneck pkt",
                "dispatched/pkt", "util %", "drop %", "peak RSS MB"):
        t.add_column(col, justify="right")
    for n in args.sizes:
        runs = sorted((run_size(n, args.duration) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
        r = runs[len(runs) // 2]
        r["cpu_s_all_runs"] = [x["cpu_s"] for x in runs]
        rows.append(r)
        pkts, cpu = r["bottleneck_packets"], r["cpu_s"]
        console.print(f"{n} flows: run {r['wall_s']:.2f} s wall, {cpu:.2f} s CPU, {pkts:,.0f} bottleneck "
                      f"packets, {cpu * 1e9 / pkts:,.0f} CPU ns/pkt, peak RSS {r['peak_rss_mb']:.0f} MB")
        t.add_row(f"{n:,}", f"{r['rate_bps'] / 1e6:g} Mbit/s", f"{r['build_s']:.2f}", f"{r['wall_s']:.2f}",
                  f"{cpu:.2f}", f"{r['events'] / 1e6:.1f} M", f"{r['dispatched_events'] / 1e6:.1f} M",
                  f"{r['dispatched_events'] / cpu / 1e6:.2f} M", f"{pkts / cpu / 1e3:,.0f} k",
                  f"{cpu * 1e9 / pkts:,.0f}", f"{r['dispatched_events'] / pkts:.1f}",
                  f"{r['utilization_pct']:.1f}", f"{r['drop_rate_pct']:.2f}", f"{r['peak_rss_mb']:,.0f}")
    console.print(t)
    per_pkt = [r["cpu_s"] / r["bottleneck_packets"] for r in rows]
    console.print(f"CPU time per bottleneck packet, largest / smallest over the sizes: "
                  f"{max(per_pkt) / min(per_pkt):.2f}x (target: within 2x)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
