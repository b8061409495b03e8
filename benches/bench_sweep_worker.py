"""A sweep worker's time per run beside the simulation (issue 22's target: under 10 ms).

`aqmlab.sweep.execute` is what a worker runs per task: validate the resolved scenario, simulate,
build the tables, compute the period metrics and the table the sweep stores. This times it in one
process (CPU time, `time.process_time`, which counts the simulation's thread too) on the
benchmark sweep's scenario (`bench_sweep.base_scenario`), with the simulation step timed apart, and
prints medians over interleaved seeds. Storing the run (Parquet) and shipping it between
processes are not in it (`bench_sweep.py` measures those as "overhead per task").

    python3 benches/bench_sweep_worker.py                 # 21 runs of 10 s
    python3 benches/bench_sweep_worker.py --runs 41 --duration 30s
    python3 benches/bench_sweep_worker.py --against OLD_REF        # A/B: that commit's worker in turn
    valgrind --tool=callgrind --separate-threads=yes \
        python3 benches/bench_sweep_worker.py --against OLD_REF --only other --runs 11

`--against` takes a git commit of this repository whose `sweep.py` still builds its table from
`aqmlab.run.simulate` (before issue 22's lean worker, e.g. faf48b0): its `sweep.execute` and
`metrics.py` (loaded from git under other names) run in turn with the installed ones, on the same
seeds, interleaved, and the two tables must be equal (bit for bit) run by run. `--only` runs one
of the two alone, for instruction counts: callgrind's count of the main thread (`-01`; the
simulation runs in others) with `--runs 11` minus that with `--runs 1`, over 10, is the worker's
instructions per run beside the simulation. Everything else
(the simulator, `aqmlab.run.simulate` and `aqmlab.records`) is the installed code for both.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sweep import base_scenario  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--against", metavar="REF",
                    help="a git commit whose sweep worker to alternate with the installed one")
    ap.add_argument("--only", choices=("installed", "other"), help="run only this variant")
    a = ap.parse_args()

    import aqmlab.run  # noqa: F401 - loads the module that sys.modules holds below
    from aqmlab import metrics
    from aqmlab.sweep import execute

    run = sys.modules["aqmlab.run"]  # the module (aqmlab.run is also a function's name)
    variants = {"installed": (metrics, execute)}
    if a.against:
        old = {name: _from_git(a.against, f"python/aqmlab/{name}.py") for name in ("metrics", "sweep")}
        variants["other"] = (old["metrics"], old["sweep"].execute)
    step = run._run_with_progress
    last = [0.0]

    def timed(*args, **kw):  # the simulation step alone
        c = time.process_time()
        step(*args, **kw)
        last[0] = time.process_time() - c

    run._run_with_progress = timed
    raw = base_scenario(a.duration)
    names = [a.only] if a.only else list(variants)
    if a.only and a.only not in variants:
        sys.exit("bench_sweep_worker: --only other needs --against")

    def call(name: str, seed: int) -> dict:
        m, worker = variants[name]
        run.period_metrics, run.flow_period_metrics = m.period_metrics, m.flow_period_metrics
        return worker(dict(raw, seed=seed))

    for name in names:
        call(name, 1)  # warm-up: imports, first validation, each path's first use
    total: dict[str, list[float]] = {k: [] for k in variants}
    rest: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(a.runs):
        tables = {}
        for name in names if i % 2 == 0 else names[::-1]:
            c = time.process_time()
            out = call(name, 1 + i)
            total[name].append(time.process_time() - c)
            rest[name].append(total[name][-1] - last[0])
            if "metrics" not in out:
                sys.exit(f"bench_sweep_worker: run failed: {out.get('error')}")
            tables[name] = out["metrics"]
        if len(tables) == 2 and not tables["installed"].equals(tables["other"]):
            sys.exit(f"bench_sweep_worker: the two tables differ at seed {1 + i}")
    for name in names:
        print(f"{name:9}: per run {statistics.median(total[name]) * 1e3:.1f} ms of CPU, "
              f"{statistics.median(rest[name]) * 1e3:.1f} ms of it beside the simulation "
              f"(medians of {a.runs} interleaved runs, {a.duration} simulated)")
    if len(names) == 2:
        ratio = statistics.median(x / y for x, y in zip(rest["installed"], rest["other"], strict=True))
        print(f"beside the simulation, installed / other: {ratio:.3f} (median of the pairs)")


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _from_git(ref: str, path: str):
    """The module at `path` as commit `ref` of this repository has it (loaded under another name)."""
    text = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "show", f"{ref}:{path}"],
                          capture_output=True, text=True, check=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="aqmlab-bench-worker-"))
    file = folder / f"{Path(path).stem}_{ref.replace('/', '_')}.py"
    file.write_text(text)
    return _module(file.stem, file)


if __name__ == "__main__":
    main()
