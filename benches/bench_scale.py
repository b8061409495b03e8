#!/usr/bin/env python3
"""Cost per bottleneck packet against the number of flows, on scenarios/scale/newreno-10k.toml
(NewReno flows, Drop-Tail, 1 Mbit/s fair share per flow): from 60 flows through 60 Mbit/s up to
10,000 flows through 10 Gbit/s, with the bottleneck rate and both router buffers scaled with the
flow count so that every size sees the same per-flow dynamics.

The binary is built first (`cargo build --release -p aqmlab-sim --example run_config`) when it
is missing or older than any Rust source or manifest of the workspace. Each size runs the
simulator alone, without Python (the `run_config` example of aqmlab-sim, the same binary the
profiles in benches/README.md were taken of), in its own process, which reports the wall and CPU
time of `Simulation::run` only (set-up apart) and its peak resident memory.
The curve uses CPU time: on a shared machine the wall time of a run depends on the load.

    python3 benches/bench_scale.py                       # 60 ... 10,000 flows, 10 s each
    python3 benches/bench_scale.py --sizes 60 600 --duration 5s --repeat 1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from aqmlab._core import parse_time
from aqmlab.display import Cells, TablePrinter
from aqmlab.scenario import load

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "examples" / "run_config"
BUILD_COMMAND = ["cargo", "build", "--release", "-p", "aqmlab-sim", "--example", "run_config"]


def newest_source_mtime() -> float:
    """The latest modification time of what the binary is built from: every Rust source and
    manifest under crates/, and the workspace's Cargo.toml and Cargo.lock."""
    sources = [p for p in (ROOT / "crates").rglob("*") if p.suffix == ".rs" or p.name == "Cargo.toml"]
    sources += [p for p in (ROOT / "Cargo.toml", ROOT / "Cargo.lock") if p.exists()]
    return max(p.stat().st_mtime for p in sources)


def ensure_binary() -> None:
    """Build run_config when it is missing or older than its sources. Cargo decides what
    actually needs recompiling; a source touched without effect only costs a no-op cargo call."""
    if BINARY.exists() and BINARY.stat().st_mtime >= newest_source_mtime():
        return
    why = "missing" if not BINARY.exists() else "older than the Rust sources"
    print(f"{BINARY.relative_to(ROOT)} is {why}: running {' '.join(BUILD_COMMAND)} "
          f"(a first release build takes minutes)", flush=True)
    try:
        subprocess.run(BUILD_COMMAND, cwd=ROOT, check=True)
    except FileNotFoundError:
        sys.exit("bench_scale.py: cargo not found on PATH; install Rust (https://rustup.rs) or build "
                 f"{BINARY.relative_to(ROOT)} yourself")
    except subprocess.CalledProcessError as e:
        sys.exit(f"bench_scale.py: building run_config failed (exit {e.returncode}); see cargo's output above")
    if not BINARY.exists():
        sys.exit(f"bench_scale.py: cargo succeeded but {BINARY} is still missing")


def config_for(flows: int, duration: str) -> dict:
    """The scale scenario at `flows` flows: rate 1 Mbit/s per flow, buffers scaled alike (8,000
    and 20,000 packets at 10,000 flows, at least 100). The measured period is the scenario's
    (from 2 s, once every flow has started, to the end), cut to the run when it is shorter."""
    k = flows / 10_000
    rate = round(10e9 * k)
    end_ns = parse_time(duration)
    start = "2s" if end_ns > 2_000_000_000 else "0s"
    sc, _ = load("scale/newreno-10k", [
        f"flows.bulk.count={flows}", f"duration={duration}", f'metrics.periods=[["{start}", "{duration}"]]',
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


def per_cpu_s(count: float, cpu_s: float, unit: str, digits: int) -> str:
    """`count` per CPU second as a cell; "-" for a run too short for the CPU clock to see."""
    return f"{count / cpu_s:,.{digits}f} {unit}" if cpu_s > 0 else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[60, 600, 2000, 5000, 10_000])
    ap.add_argument("--duration", default="10s", help="simulated time per size")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per size; the row is the run of median CPU time (the 60-flow run "
                         "takes under 0.1 s, so one sample is at the mercy of the machine)")
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    ensure_binary()
    rows = []
    # "events": the model's (summary.json's count); "dispatched": those taken from the event
    # list (transmissions that end with nothing queued behind them need none, see
    # Simulation::end_needs_no_event), which is what the rates below are per.
    table = Cells(["flows", "bottleneck", "set-up s", "run wall s", "run CPU s", "events",
                   "dispatched", "dispatched/CPU s", "bottleneck pkts/CPU s", "CPU ns/bottleneck pkt",
                   "dispatched/pkt", "util %", "drop %", "peak RSS MB"], [])
    for n in args.sizes:
        runs = sorted((run_size(n, args.duration) for _ in range(args.repeat)), key=lambda r: r["cpu_s"])
        r = runs[len(runs) // 2]
        r["cpu_s_all_runs"] = [x["cpu_s"] for x in runs]
        rows.append(r)
        pkts, cpu = r["bottleneck_packets"], r["cpu_s"]
        print(f"{n} flows: run {r['wall_s']:.2f} s wall, {cpu:.2f} s CPU, {pkts:,.0f} bottleneck "
              f"packets, {cpu * 1e9 / pkts:,.0f} CPU ns/pkt, peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
        table.rows.append([f"{n:,}", f"{r['rate_bps'] / 1e6:g} Mbit/s", f"{r['build_s']:.2f}", f"{r['wall_s']:.3f}",
                           f"{cpu:.3f}", f"{r['events'] / 1e6:.1f} M", f"{r['dispatched_events'] / 1e6:.1f} M",
                           per_cpu_s(r["dispatched_events"] / 1e6, cpu, "M", 2), per_cpu_s(pkts / 1e3, cpu, "k", 0),
                           f"{cpu * 1e9 / pkts:,.0f}", f"{r['dispatched_events'] / pkts:.1f}",
                           f"{r['utilization_pct']:.1f}", f"{r['drop_rate_pct']:.2f}", f"{r['peak_rss_mb']:,.0f}"])
    # A terminal gets rich's layout; a pipe or a file a Markdown table with every column whole.
    printer = TablePrinter()
    printer.table("scale", f"scale/newreno-10k, 1 Mbit/s per flow, {args.duration} simulated", table,
                  left_columns=())
    per_pkt = [r["cpu_s"] / r["bottleneck_packets"] for r in rows]
    if min(per_pkt) > 0:
        printer.note(f"CPU time per bottleneck packet, largest / smallest over the sizes: "
                     f"{max(per_pkt) / min(per_pkt):.2f}x (target: within 2x)")
    printer.finish()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
