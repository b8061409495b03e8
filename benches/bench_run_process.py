#!/usr/bin/env python3
"""What a user waits for: the CPU time of the whole `aqmlab run` process (issue 22), interpreter
start, imports, simulation, metrics and files, on the 60-flow Rb-RIO Drop-Tail dumbbell and its
600-flow scaling (bench_tcp_dumbbell.py's: rate, flows and buffer x10), with packet records on
(the scenario's default) and off.

Each run is a fresh `python -m aqmlab run ... --out DIR --force` with stdout and stderr to pipes,
as a script would call it; its CPU time (user + system) is read from the kernel's account of
the finished child (`os.wait4`). Runs of the cases are interleaved, so the machine's load falls
on all alike; the table gives the median and range of each. With `--against PYTHON` every run
is paired with the same command under a second interpreter (another checkout's venv), and the
table adds the median of the per-pair ratios (this / that).

    python3 benches/bench_run_process.py                        # 7 runs of each case
    python3 benches/bench_run_process.py --runs 9 --against /path/to/old-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: Issue 22's targets for the whole process with packet records on, CPU seconds.
TARGETS = {"60 flows": 0.25, "600 flows": 1.2}


def scaled(k: int) -> list[str]:
    """bench_tcp_dumbbell.py's scaling of rb-rio/tcp-droptail by k (k = 1: the scenario itself)."""
    if k == 1:
        return []
    return [f"topology.bottleneck.rate={25 * k}Mbps", f"topology.reverse.rate={25 * k}Mbps",
            f"flows.long.count={40 * k}", f"flows.joining.count={20 * k}",
            f"topology.bottleneck.qdisc.limit={100 * k}p"]


CASES = {
    ("60 flows", True): scaled(1),
    ("60 flows", False): [*scaled(1), "records.packet_events=false"],
    ("600 flows", True): scaled(10),
    ("600 flows", False): [*scaled(10), "records.packet_events=false"],
}


def cpu_of_run(python: str, overrides: list[str], out: Path) -> float:
    """CPU seconds (user + system) of one whole `aqmlab run` process; a failed run stops the bench."""
    cmd = [python, "-m", "aqmlab", "run", "rb-rio/tcp-droptail", "--out", str(out), "--force"]
    for o in overrides:
        cmd += ["--set", o]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each case (default 7)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter whose aqmlab is measured")
    ap.add_argument("--against", default=None, metavar="PYTHON", help="a second interpreter, run in pairs")
    ap.add_argument("--sizes", nargs="+", default=["60 flows", "600 flows"], choices=list(TARGETS))
    ap.add_argument("--records", choices=["on", "off", "both"], default="both", help="packet records (default both)")
    args = ap.parse_args()
    cases = [c for c in CASES if c[0] in args.sizes and args.records in ("both", "on" if c[1] else "off")]
    this: dict[tuple[str, bool], list[float]] = {c: [] for c in cases}
    that: dict[tuple[str, bool], list[float]] = {c: [] for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for case in cases:
                out = Path(tmp) / "run"
                # alternate which interpreter goes first, so that neither always follows the other
                order = [(args.python, this), (args.against, that)] if args.against else [(args.python, this)]
                for python, store in order if i % 2 == 0 else order[::-1]:
                    store[case].append(cpu_of_run(python, CASES[case], out))
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    head = "| case | packet records | CPU s, median (range) | target |"
    if args.against:
        head += " against, median (range) | median of pair ratios (this / against) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for case in cases:
        size, records = case
        target = f"under {TARGETS[size]:.2f} s" if records else "-"
        row = f"| {size} | {'on' if records else 'off'} | {_median_range(this[case])} | {target} |"
        if args.against:
            ratios = [a / b for a, b in zip(this[case], that[case], strict=True)]
            row += f" {_median_range(that[case])} | {statistics.median(ratios):.3f} |"
        print(row)


def _median_range(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


if __name__ == "__main__":
    main()
