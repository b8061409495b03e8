"""A sweep worker's time per run beside the simulation (issue 22's target: under 10 ms).

`aqmlab.sweep.execute` is what a worker runs per task: validate the resolved scenario, simulate,
build the tables, compute the period metrics and the table the sweep stores. This times it in one
process (CPU time, `time.process_time`, which counts the simulation's thread too) on the
benchmark sweep's scenario (`bench_sweep.base_scenario`), with the simulation step timed apart, and
prints medians over interleaved seeds. Storing the run (Parquet) and shipping it between
processes are not in it (`bench_sweep.py` measures those as "overhead per task").

    python3 benches/bench_sweep_worker.py                 # 21 runs of 10 s
    python3 benches/bench_sweep_worker.py --runs 41 --duration 30s
    python3 benches/bench_sweep_worker.py --metrics-from OLD.py   # A/B: OLD.py's metrics in turn
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sweep import base_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--metrics-from", metavar="FILE", help="a metrics.py to alternate with the installed one")
    a = ap.parse_args()

    import aqmlab.run  # noqa: F401 - loads the module that sys.modules holds below
    from aqmlab import metrics
    from aqmlab.sweep import execute

    run = sys.modules["aqmlab.run"]  # the module (aqmlab.run is also a function's name)
    variants = {"installed": metrics}
    if a.metrics_from:
        spec = importlib.util.spec_from_file_location("metrics_other", a.metrics_from)
        assert spec and spec.loader
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
        variants["other"] = other
    step = run._run_with_progress
    last = [0.0]

    def timed(*args, **kw):  # the simulation step alone
        c = time.process_time()
        step(*args, **kw)
        last[0] = time.process_time() - c

    run._run_with_progress = timed
    raw = base_scenario(a.duration)
    execute(raw)  # warm-up: imports, first validation
    total: dict[str, list[float]] = {k: [] for k in variants}
    rest: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for i in range(a.runs):
        for name in names if i % 2 == 0 else names[::-1]:
            m = variants[name]
            run.period_metrics, run.flow_period_metrics = m.period_metrics, m.flow_period_metrics
            c = time.process_time()
            out = execute(dict(raw, seed=1 + i))
            total[name].append(time.process_time() - c)
            rest[name].append(total[name][-1] - last[0])
            if "metrics" not in out:
                sys.exit(f"bench_sweep_worker: run failed: {out.get('error')}")
    for name in names:
        print(f"{name:9}: per run {statistics.median(total[name]) * 1e3:.1f} ms of CPU, "
              f"{statistics.median(rest[name]) * 1e3:.1f} ms of it beside the simulation "
              f"(medians of {a.runs} interleaved runs, {a.duration} simulated)")
    if len(names) == 2:
        ratio = statistics.median(x / y for x, y in zip(rest["installed"], rest["other"], strict=True))
        print(f"beside the simulation, installed / other: {ratio:.3f} (median of the pairs)")


if __name__ == "__main__":
    main()
