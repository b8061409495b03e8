"""Sweep engines: the same 48-run sweep on 1 process, on all local cores and on a Dask
LocalCluster with 2 workers.

    python3 benches/bench_sweep.py                 # about 2 minutes on 2 busy cores
    python3 benches/bench_sweep.py --duration 10s  # shorter runs: overhead matters more

The sweep: a 20-flow TCP dumbbell (10 Mbit/s, 30 s simulated) under Drop-Tail and RED with
4 buffer sizes and 6 seeds = 48 runs. Each engine runs `aqmlab sweep` from scratch into its own
directory. Prints per engine: wall time of the whole command, runs per minute, the summed
simulation time of the runs (each run's own wall time inside the worker, from run.json), the
fixed cost of the command (interpreter start-up, planning every run, assembling the tables;
measured alone by rerunning the finished sweep, which runs nothing) and the overhead per task:
((wall time - fixed cost) x processes - summed run time) / runs, i.e. the worker time per run
not spent simulating (pool or cluster start-up, shipping the scenario and the result, storing
the run). It also checks that every engine wrote the same table bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomli_w


def base_scenario(duration: str) -> dict:
    return {
        "name": "bench-sweep", "seed": 1, "duration": duration,
        "topology": {"bottleneck": {"rate": "10Mbps", "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "50p"}}},
        "flows": [{"name": "bulk", "count": 20, "start_jitter": "1s", "sender_delay": ["2ms", "40ms"],
                   "app": {"kind": "bulk", "tcp": {"min_rto": "200ms"}}}],
    }


SWEEP = {
    "name": "bench-sweep", "base": "base.toml", "seeds": 6,
    "metrics": ["utilization_mbps", "drop_rate_pct", "jain", "qdelay_p95_ms"],
    "axes": [
        {"path": "topology.bottleneck.qdisc", "name": "discipline",
         "values": [{"kind": "droptail"}, {"kind": "red", "min_th": 5, "max_th": 15}]},
        {"path": "topology.bottleneck.qdisc.limit", "name": "buffer", "values": ["25p", "50p", "100p", "200p"]},
    ],
}
RUNS = 2 * 4 * 6

ENGINES = [  # (label, extra arguments, processes that run simulations)
    ("1 process", ["--workers", "1"], 1),
    (f"process pool, all {os.cpu_count()} cores", [], os.cpu_count() or 1),
    ("Dask LocalCluster, 2 workers", ["--dask", "local", "--workers", "2"], 2),
]


def sweep(sweep_file: Path, out: Path, extra: list[str]) -> float:
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "aqmlab", "sweep", str(sweep_file), "--out", str(out),
                        "--no-progress", *extra], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if r.returncode != 0:
        sys.exit(f"aqmlab sweep failed:\n{r.stderr}")
    return wall


def summed_run_time(out: Path) -> float:
    return sum(json.loads(p.read_text())["wall_s"] for p in (out / "runs").glob("*/run.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", default="30s", help="simulated time per run (default 30s)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aqmlab-bench-sweep-") as tmp:
        folder = Path(tmp)
        (folder / "base.toml").write_text(tomli_w.dumps(base_scenario(args.duration)))
        sweep_file = folder / "sweep.toml"
        sweep_file.write_text(tomli_w.dumps(SWEEP))
        rows, tables = [], []
        for label, extra, procs in ENGINES:
            out = folder / label.split(",")[0].replace(" ", "-")
            wall = sweep(sweep_file, out, extra)
            fixed = sweep(sweep_file, out, extra)  # nothing left to run: no pool, no cluster
            run_s = summed_run_time(out)
            rows.append((label, wall, RUNS / wall * 60, run_s, ((wall - fixed) * procs - run_s) / RUNS, fixed))
            tables.append(((out / "runs.parquet").read_bytes(), (out / "points.parquet").read_bytes()))
    print(f"{RUNS} runs of {args.duration} simulated, {os.cpu_count()} cores\n")
    print("| engine | wall | runs/min | summed run time | fixed cost | overhead per task |")
    print("|---|---|---|---|---|---|")
    for label, wall, rpm, run_s, over, fixed in rows:
        print(f"| {label} | {wall:.1f} s | {rpm:.0f} | {run_s:.1f} s | {fixed:.1f} s | {over * 1000:.0f} ms |")
    same = all(t == tables[0] for t in tables)
    print(f"\nsame runs.parquet and points.parquet bytes from every engine: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
