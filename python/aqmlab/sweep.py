"""Parameter sweeps: a base scenario, axes over any dotted scenario path, seeds per point.

A sweep file (TOML, see docs/sweeps.md and scenarios/sweeps/) names a base scenario, axes (each
a dotted path as ``--set`` takes it, with a list of values or a range), seeds per point and the
metrics to collect. :func:`plan` expands the cartesian product and validates every run's
scenario before anything runs, so a bad path or value fails at once with the field named.

Every run is one task. A task carries its fully resolved scenario (a plain dict) to a worker,
which simulates it and sends back only its period metrics; the caller stores each finished run
atomically under ``DIR/runs/<run id>/`` as soon as it arrives. The run id is a hash of the
resolved scenario (axis values and seed included), so rerunning the same sweep finds what is
done and runs only what is missing; an extended grid reuses every point it shares with the old.
The tables (``runs.parquet``: one row per run and period; ``points.parquet``: mean and 95 % CI
over seeds per point and period) are assembled from the stored runs in the sweep's own order,
so every engine gives the same bytes.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import os
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import Field, ValidationError, model_validator

from aqmlab.scenario import (
    BUILTIN_DIR,
    Problem,
    Scenario,
    ScenarioError,
    Strict,
    _format_errors,
    apply_override,
    read_scenario_file,
    read_toml,
    resolve_path,
    set_path,
    validate,
)

#: Period metrics every run has (columns of periods.parquet, see aqmlab.metrics.period_metrics).
PERIOD_METRICS = ("utilization_mbps", "drop_rate_pct", "arrivals", "drops", "jain", "active_flows",
                  "qdelay_mean_ms", "qdelay_p50_ms", "qdelay_p95_ms", "qdelay_p99_ms")
#: Per flow group and period, summed over the group's flows: "<group>.<metric>".
GROUP_METRICS = ("throughput_mbps", "goodput_mbps")
#: Columns of the tables that an axis may not be named after.
RESERVED = {"run", "seed", "seeds", "start_s", "end_s"}


# ---- the sweep file ---------------------------------------------------------------------------


class Range(Strict):
    """Evenly spaced numbers from `start` to `stop` inclusive."""

    start: float
    stop: float
    step: float = Field(..., gt=0)

    def numbers(self) -> list[float | int]:
        n = int(math.floor((self.stop - self.start) / self.step + 1e-9)) + 1
        xs = [round(self.start + i * self.step, 12) for i in range(max(n, 0))]
        integral = all(float(v).is_integer() for v in (self.start, self.step))
        return [int(x) for x in xs] if integral else xs


class Axis(Strict):
    path: str = Field(..., min_length=1, description="dotted scenario path, as --set takes it")
    name: str | None = Field(None, description="column name in the tables; default the path's last part")
    values: list[Any] | None = Field(None, description="the values, each as a --set value (TOML)")
    range: Range | None = Field(None, description="or evenly spaced numbers")
    unit: str = Field("", description="appended to each number of a range (\"p\" gives \"25p\")")
    labels: list[str] | None = Field(None, description="a label per value (default: the value, or a table's kind)")

    @model_validator(mode="after")
    def _one_source(self) -> Axis:
        if (self.values is None) == (self.range is None):
            raise ValueError(f"axis {self.path}: give either values or range")
        if not self.points():
            raise ValueError(f"axis {self.path}: no values")
        if self.labels is not None and len(self.labels) != len(self.points()):
            raise ValueError(f"axis {self.path}: {len(self.labels)} labels for {len(self.points())} values")
        labels = self.point_labels()
        repeated = sorted({x for x in labels if labels.count(x) > 1})
        if repeated:
            raise ValueError(f"axis {self.path}: two values share the label {repeated[0]!r}; give labels = [...]")
        return self

    @property
    def column(self) -> str:
        return self.name or self.path.split(".")[-1]

    def points(self) -> list[Any]:
        if self.values is not None:
            return list(self.values)
        nums = self.range.numbers()  # type: ignore[union-attr]
        return [f"{x}{self.unit}" for x in nums] if self.unit else nums

    def point_labels(self) -> list[str]:
        return list(self.labels) if self.labels else [_label(v) for v in self.points()]

    def numeric(self) -> bool:
        """Whether the table column holds the values as numbers (else as labels)."""
        return self.labels is None and all(_is_number(v) for v in self.points())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _label(v: Any) -> str:
    if isinstance(v, dict):
        return str(v["kind"]) if "kind" in v else tomli_w.dumps({"v": v}).strip().removeprefix("v = ")
    return str(v).lower() if isinstance(v, bool) else str(v)


class SweepFile(Strict):
    name: str | None = Field(None, description="default: the file name")
    base: str = Field(..., description="base scenario: a file (relative to the sweep file) or a built-in name")
    set: list[str] = Field(default_factory=list, description="--set overrides applied to every run")
    seeds: int | list[int] = Field(3, description="seeds per point: a count (from first_seed) or a list")
    first_seed: int = Field(1, ge=0)
    metrics: list[str] | None = Field(None, description="period metrics to collect; default all")
    axes: list[Axis] = Field(..., min_length=1)

    def seed_list(self) -> list[int]:
        if isinstance(self.seeds, int):
            if self.seeds < 1:
                raise ValueError("seeds must be at least 1")
            return list(range(self.first_seed, self.first_seed + self.seeds))
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError("seeds: a list of distinct non-negative integers")
        return list(self.seeds)

    @model_validator(mode="after")
    def _distinct_columns(self) -> SweepFile:
        self.seed_list()
        cols = [a.column for a in self.axes]
        clash = [c for c in cols if cols.count(c) > 1 or c in RESERVED or c in PERIOD_METRICS]
        if clash:
            raise ValueError(f"axis name {clash[0]!r} is repeated or reserved; give the axis another name")
        return self


# ---- the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One run: a point of the grid and a seed, with its fully resolved scenario."""

    run_id: str
    point: int
    seed: int
    labels: tuple[str, ...]
    raw: dict[str, Any] = field(compare=False, hash=False)


@dataclass
class Sweep:
    name: str
    spec: SweepFile
    tasks: list[Task]
    metrics: list[str]

    @property
    def axes(self) -> list[Axis]:
        return self.spec.axes

    def describe(self) -> dict[str, Any]:
        """What the report needs to know about the sweep (written as sweep.json)."""
        return {
            "name": self.name,
            "base": self.spec.base,
            "axes": [{"name": a.column, "path": a.path, "labels": a.point_labels(), "numeric": a.numeric()}
                     for a in self.axes],
            "seeds": self.spec.seed_list(),
            "set": list(self.spec.set),
            "metrics": self.metrics,
            "runs": len(self.tasks),
        }


def run_id(raw: dict[str, Any]) -> str:
    """A stable name for what a run computes: the hash of its resolved scenario."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_sweep_file(path: Path) -> SweepFile:
    data = read_toml(path, "sweep file")
    try:
        return SweepFile.model_validate(data)
    except ValidationError as e:
        raise ScenarioError([f"{path}: {line}" for line in _format_errors(e)]) from None


def _base_path(source: Path, base: str) -> Path:
    """The sweep's `base`: a file relative to the sweep file's own folder (wherever it lives,
    built in or not), else a built-in scenario name. Anything else is one line naming `base`."""
    beside = source.parent / base
    if beside.is_file():
        return beside
    builtin = BUILTIN_DIR / (base if base.endswith(".toml") else f"{base}.toml")
    if not Path(base).is_absolute() and builtin.is_file():
        return builtin
    hint = ""
    named = Path(base)
    if len(named.parts) >= 2 and (BUILTIN_DIR / named.parts[-2] / named.name).is_file():
        # a built-in sweep copied elsewhere: its "../rb-rio/x.toml" is a built-in scenario
        hint = f"; the built-in scenario is base = \"{named.parts[-2]}/{named.with_suffix('').name}\""
    what = "no such file" if not beside.exists() else "not a file"
    raise ScenarioError([f"{source}: base: {base!r}: {what} (looked for {beside.resolve()} beside the sweep "
                         f"file and for a built-in scenario of that name){hint}"])


def plan(path: Path, seeds: int | None = None, overrides: Sequence[str] = (), quick: bool = False) -> Sweep:
    """Reads a sweep file and validates every run's scenario before anything runs. Raises
    ScenarioError with the problems of the first run that has any (one line each, naming the
    field and the point), and how many other runs fail too.

    The command line's changes apply on top of the file: `seeds` replaces its seed count
    (consecutive from its first_seed), `overrides` (``--set``) follow its own `set` list, and
    `quick` keeps one seed per point (the first), the fast check the reproductions' --quick is."""
    path = resolve_path(str(path))  # a file, or a built-in name such as sweeps/sqf-load
    spec = read_sweep_file(path)
    if seeds is not None or quick:
        lowest = spec.seed_list()[0]
        spec = spec.model_copy(update={"seeds": 1 if quick else seeds, "first_seed": lowest})
    if overrides:
        spec = spec.model_copy(update={"set": [*spec.set, *overrides]})
    base = read_scenario_file(_base_path(path, spec.base))
    for assignment in spec.set:
        apply_override(base, assignment)
    tasks: list[Task] = []
    scenarios: list[Scenario] = []
    failing: list[list[str]] = []
    points = zip(itertools.product(*(a.points() for a in spec.axes)),
                 itertools.product(*(a.point_labels() for a in spec.axes)), strict=True)
    for point, (values, labels) in enumerate(points):
        where = ", ".join(f"{a.column}={lab}" for a, lab in zip(spec.axes, labels, strict=True))
        for seed in spec.seed_list():
            try:
                raw = _resolve(base, spec.axes, values, seed)
                scenarios.append(Scenario.model_validate(raw))
            except (ScenarioError, ValidationError) as e:
                lines = e.lines if isinstance(e, ScenarioError) else _format_errors(e)
                failing.append([f"{path}: {line} (at {where})" for line in lines])
                continue
            tasks.append(Task(run_id(raw), point, seed, labels, raw))
    if failing:
        first = failing[0]
        if len(failing) > 1:
            first[-1] += f"; {len(failing) - 1} more of the {len(failing) + len(tasks)} runs fail"
        raise ScenarioError(first)
    metrics = spec.metrics or list(PERIOD_METRICS)
    _check_metrics(path, metrics, scenarios)
    return Sweep(spec.name or path.stem, spec, tasks, metrics)


def _resolve(base: dict[str, Any], axes: list[Axis], values: tuple[Any, ...], seed: int) -> dict[str, Any]:
    """The base scenario with every axis set to its value at this point, and the seed."""
    raw = copy.deepcopy(base)
    for axis, value in zip(axes, values, strict=True):
        try:
            set_path(raw, axis.path, copy.deepcopy(value))
        except ScenarioError as e:
            raise ScenarioError([Problem(f"axis {axis.path}", p.path, p.kind, p.message) for p in e.problems]) from None
    raw["seed"] = seed
    return raw


def _check_metrics(path: Path, metrics: list[str], scenarios: list[Scenario]) -> None:
    """Every metric must exist in every run, and the period metrics need the packet records."""
    if any(not sc.records.packet_events for sc in scenarios):
        raise ScenarioError([f"{path}: records.packet_events: must be true in a sweep (the period metrics "
                             "are computed from the bottleneck's packet records)"])
    groups = set.intersection(*({g.name for g in sc.flows} for sc in scenarios)) if scenarios else set()
    allowed = list(PERIOD_METRICS) + [f"{g}.{m}" for g in sorted(groups) for m in GROUP_METRICS]
    unknown = [m for m in metrics if m not in allowed]
    if unknown:
        raise ScenarioError([f"{path}: metrics: unknown metric {unknown[0]!r}; allowed: {', '.join(allowed)}"])


# ---- running one task (on a worker) -----------------------------------------------------------


def execute(raw: dict[str, Any]) -> dict[str, Any]:
    """Simulates one resolved scenario and returns its period metrics (every period metric and
    every flow group's throughput and goodput), or the error that stopped it. Runs on a worker:
    takes and returns plain data only."""
    from aqmlab import _core
    from aqmlab.run import simulate_periods

    started = time.perf_counter()
    try:
        table = _metrics_table(simulate_periods(validate(raw)))
    except BaseException as e:  # noqa: BLE001 - a failed run is recorded, the sweep goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        # BaseException: a panic in the Rust core arrives as pyo3's PanicException, which is one.
        return {"error": f"{type(e).__name__}: {e}".splitlines()[0], "detail": traceback.format_exc(),
                "wall_s": time.perf_counter() - started, "aqmlab_version": _core.__version__}
    return {"metrics": table, "wall_s": time.perf_counter() - started, "aqmlab_version": _core.__version__}


def _metrics_table(values: Any) -> Any:
    """The run's ``periods`` table with "<group>.<metric>" columns: per flow group and period,
    the sum over the group's flows of their ``flow_periods`` values (`aqmlab.run.PeriodValues`),
    built as one DataFrame from the rows (the dtypes of `metrics.period_metrics`' table).

    A period's sum covers the rows of every period with its (start_s, end_s), in the order of
    ``flow_periods`` (period by period, flows in table order); `_group_sums` adds them exactly
    as the pandas groupby this replaced did (tests/test_sweep_table_equivalence.py keeps it)."""
    import numpy as np
    import pandas as pd

    from aqmlab.metrics import NS

    rows = [dict(row) for row in values.periods]
    keys = [(start / NS, end / NS) for start, end in values.bounds]  # the tables' start_s, end_s
    rank = {key: i for i, key in enumerate(sorted(set(keys)))}
    period_ids = np.array([rank[key] for key in keys], dtype=np.intp)
    names = values.group_names
    for group in values.scenario.flows:
        members = np.array([i for i, name in enumerate(names) if name == group.name], dtype=np.intp)
        block = np.array([[v[members] for v, _ in values.flow_values], [g[members] for _, g in values.flow_values]])
        sums = _group_sums(np.repeat(period_ids, members.size), block.reshape(len(GROUP_METRICS), -1), len(rank))
        for m, metric in enumerate(GROUP_METRICS):
            for row, total in zip(rows, sums[m][period_ids].tolist(), strict=True):
                row[f"{group.name}.{metric}"] = total
    return pd.DataFrame(rows)


def _group_sums(ids: Any, values: Any, groups: int) -> Any:
    """Sums of each row of `values` (metrics x rows) per id in `ids` (0 .. groups - 1), bit for
    bit what ``DataFrame.groupby(ids, sort=True).sum()`` gives for one block of float64
    columns: with the ids in increasing order and no NaN in the block, one `np.add.reduceat`
    over each id's run of rows (numpy's pairwise sum after the run's first value; pandas 3.1's
    path for sorted groups, pandas/core/groupby/ops.py `_reduceat_aggregate`), else Kahan's
    compensated sum in row order skipping NaN (pandas/_libs/groupby.pyx `group_sum`). A plain
    `np.bincount` adds left to right and differs in the last bits. An id with no rows sums to 0."""
    import numpy as np

    out = np.zeros((values.shape[0], groups))
    if ids.size == 0:
        return out
    if np.all(ids[1:] >= ids[:-1]) and not np.isnan(values).any():
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        out[:, ids[starts]] = np.add.reduceat(values, starts, axis=1)
        return out
    for m, row in enumerate(values.tolist()):  # periods out of order, or NaN: seldom, and short
        total, comp = [0.0] * groups, [0.0] * groups
        for lab, val in zip(ids.tolist(), row, strict=True):
            if val != val:
                continue
            y = val - comp[lab]
            t = total[lab] + y
            c = t - total[lab] - y
            comp[lab] = 0.0 if c != c else c  # an infinite value: no compensation (pandas GH#53606)
            total[lab] = t
        out[m] = total
    return out


# ---- the run store ----------------------------------------------------------------------------


def run_dir(out_dir: Path, task: Task) -> Path:
    return Path(out_dir) / "runs" / task.run_id


def is_done(out_dir: Path, task: Task) -> bool:
    return (run_dir(out_dir, task) / "metrics.parquet").is_file()


def store(out_dir: Path, sweep: Sweep, task: Task, outcome: dict[str, Any]) -> None:
    """Writes one finished (or failed) run atomically: a hidden sibling renamed into place."""
    from aqmlab.run import atomic_directory, write_parquet

    info = {"run": task.run_id, "seed": task.seed, "wall_s": round(outcome["wall_s"], 3),
            "point": dict(zip((a.column for a in sweep.axes), task.labels, strict=True)),
            "worker_aqmlab_version": outcome.get("aqmlab_version")}
    with atomic_directory(run_dir(out_dir, task)) as tmp:
        (tmp / "scenario.toml").write_text(tomli_w.dumps(task.raw))
        if "error" in outcome:
            info["error"] = outcome["error"]
            (tmp / "error.txt").write_text(outcome["detail"])
        else:
            write_parquet(outcome["metrics"], tmp / "metrics.parquet")
        (tmp / "run.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def failure_of(out_dir: Path, task: Task) -> str | None:
    info = run_dir(out_dir, task) / "run.json"
    if is_done(out_dir, task) or not info.is_file():
        return None
    return json.loads(info.read_text()).get("error")


def write_file_atomically(path: Path, data: bytes) -> None:
    """A single file written to a hidden sibling and renamed over the target."""
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def assemble(out_dir: Path, sweep: Sweep) -> dict[str, Any]:
    """Writes runs.parquet, points.parquet, failed.csv and sweep.json from the stored runs, in
    the sweep's order (point, seed, period), so the bytes do not depend on the engine. Each
    file is written to a hidden sibling and renamed over the old one."""
    import pandas as pd

    from aqmlab.run import write_parquet

    out_dir = Path(out_dir)
    frames, failed = [], []
    for task in sweep.tasks:
        if not is_done(out_dir, task):
            error = failure_of(out_dir, task)
            failed.append({"run": task.run_id, **_point_columns(sweep, task), "seed": task.seed,
                           "error": error or "not run"})
            continue
        m = pd.read_parquet(run_dir(out_dir, task) / "metrics.parquet")
        head = {"run": task.run_id, **_point_columns(sweep, task), "seed": task.seed}
        frames.append(pd.concat([pd.DataFrame({k: [v] * len(m) for k, v in head.items()}),
                                 m[["start_s", "end_s", *sweep.metrics]]], axis=1))
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    points = per_point(runs, sweep) if len(runs) else pd.DataFrame()
    for name, df in (("runs", runs), ("points", points)):
        if len(df):
            tmp = out_dir / f".{name}.parquet.tmp-{os.getpid()}"
            write_parquet(df, tmp)
            os.replace(tmp, out_dir / f"{name}.parquet")
    failed_df = pd.DataFrame(failed, columns=["run", *(a.column for a in sweep.axes), "seed", "error"])
    write_file_atomically(out_dir / "failed.csv", failed_df.to_csv(index=False).encode())
    write_file_atomically(out_dir / "sweep.json", (json.dumps(sweep.describe(), indent=2) + "\n").encode())
    return {"runs": runs, "points": points, "failed": failed_df}


def _point_columns(sweep: Sweep, task: Task) -> dict[str, Any]:
    """The point's axis values: numbers where the axis is numeric, else the labels."""
    cols: dict[str, Any] = {}
    for axis, label in zip(sweep.axes, task.labels, strict=True):
        cols[axis.column] = axis.points()[axis.point_labels().index(label)] if axis.numeric() else label
    return cols


def per_point(runs: Any, sweep: Sweep) -> Any:
    """Mean and 95 % confidence half-width over seeds, per point and period (Student's t)."""
    import pandas as pd

    from aqmlab.stats import mean_ci

    keys = [a.column for a in sweep.axes] + ["start_s", "end_s"]
    rows = []
    for key, group in runs.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        row["seeds"] = len(group)
        for metric in sweep.metrics:
            row[f"{metric}_mean"], row[f"{metric}_ci95"] = mean_ci(group[metric].tolist())
        rows.append(row)
    return pd.DataFrame(rows)
