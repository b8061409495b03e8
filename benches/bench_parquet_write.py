#!/usr/bin/env python3
"""CPU time of writing a run's Parquet tables: aqmlab's layout (aqmlab.run._write_table) against
pyarrow's defaults with the same zstd compression, interleaved, and the files' sizes.

Runs `aqmlab run rb-rio/tcp-droptail` at bench_run_process.py's 600-flow scaling (packet
records on: `packets` has about 2.9 M rows) unless given a results directory, then writes each
table both ways `--runs` times in turn.

    python3 benches/bench_parquet_write.py                 # about 1 min
    python3 benches/bench_parquet_write.py --from DIR --runs 9
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from aqmlab.run import _write_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_run_process import scaled  # noqa: E402

TABLES = ("packets", "flow_samples", "queue", "flows")


def _run_scenario(out: Path) -> None:
    cmd = [sys.executable, "-m", "aqmlab", "run", "rb-rio/tcp-droptail", "--out", str(out), "--force"]
    for o in scaled(10):
        cmd += ["--set", o]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def _cpu(write) -> float:
    t0 = time.process_time()
    write()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="source", type=Path, help="a results directory (default: run the 600-flow case)")
    ap.add_argument("--runs", type=int, default=7, help="writes of each table each way (default 7)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or Path(tmp) / "run"
        if args.source is None:
            _run_scenario(source)
        print("| table | rows | pyarrow's defaults, CPU s median (range) | aqmlab's layout "
              "| median of pair ratios (defaults / ours) | MB, defaults -> ours |")
        print("|---|---|---|---|---|---|")
        for name in TABLES:
            table = pq.read_table(source / f"{name}.parquet")
            default, ours = Path(tmp) / "default.parquet", Path(tmp) / "ours.parquet"
            a, b = [], []
            for _ in range(args.runs):
                a.append(_cpu(lambda t=table, p=default: pq.write_table(t, p, compression="zstd")))
                b.append(_cpu(lambda t=table, p=ours: _write_table(t, p)))
            assert pq.read_table(ours).equals(table), f"{name}: aqmlab's file does not read back as the table"
            ratio = statistics.median(x / y for x, y in zip(a, b, strict=True)) if min(b) > 0 else float("nan")
            print(f"| {name} | {table.num_rows:,} | {statistics.median(a):.3f} ({min(a):.3f}-{max(a):.3f}) "
                  f"| {statistics.median(b):.3f} ({min(b):.3f}-{max(b):.3f}) | {ratio:.2f} "
                  f"| {default.stat().st_size / 1e6:.2f} -> {ours.stat().st_size / 1e6:.2f} |")


if __name__ == "__main__":
    main()
