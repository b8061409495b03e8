"""The Python API, for notebooks and scripts; the command line (aqmlab.cli) is built on it.

    import aqmlab
    sc = aqmlab.load("rb-rio/tcp-red", topology__bottleneck__rate="30Mbps")   # or set=["k=v"]
    res = aqmlab.run(sc, seed=1)             # in memory: nothing is written
    res.periods, res.flows, res.packets      # pandas DataFrames
    res.queue_figure()                       # a matplotlib Figure
    res.save("results/red30")                # the results directory `aqmlab run` writes

    aqmlab.sweep("sweeps/rb-rio-buffer", quick=True).points
    aqmlab.reproduce("rb-rio", quick=True).tables["fig5"]

Nothing touches the disk unless asked (`out=` or :meth:`Results.save`), and then with the
command line's safety: an existing target is replaced only with ``force=True`` and only if
aqmlab wrote it (aqmlab.outdir). Problems raise exceptions whose text is the command line's
one-line errors: :class:`aqmlab.ScenarioError` (``.problems``: origin, field path, kind,
message), :class:`AqmlabError` for a request that cannot be carried out (``.lines``), and
:class:`aqmlab.outdir.OutputRefused` for an output path aqmlab may not write.

Keyword overrides name a field by its dotted path with ``__`` for the dots
(``flows__joining__count=40`` is ``--set flows.joining.count=40``) and take Python values
(strings, numbers, booleans, lists, dicts for inline tables); messages show them in the
``--set`` form, as the command line would.
"""

from __future__ import annotations

import copy
import math
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.display import Cells

if TYPE_CHECKING:  # the data libraries load on first use, not at `import aqmlab`
    import pandas as pd
    from matplotlib.figure import Figure

    from aqmlab.run import RunResult
    from aqmlab.scenario import Scenario
    from aqmlab.sweep import Sweep

#: How the API's refusals spell the override (the command line says `--force`).
FORCE = "force=True"

#: Display names of the disciplines in the period table of `aqmlab run`.
DISPLAY = {"droptail": "Drop-Tail", "red": "RED", "rb_red": "Rb-RED", "rb_rio": "Rb-RIO", "rio": "RIO",
           "sqf": "SQF", "drr": "FQ (DRR)", "fq": "FQ (DRR)", "pfq": "PFQ", "tbf": "TBF",
           "prio": "PRIO", "wrr": "WRR", "codel": "CoDel", "fq_codel": "FQ-CoDel", "pie": "PIE",
           "dualpi2": "DualPI2", "cobalt": "COBALT", "fq_pie": "FQ-PIE", "cake": "CAKE"}


class AqmlabError(ValueError):
    """A request that cannot be carried out, one line per problem (what the command line
    prints after ``error:``)."""

    def __init__(self, lines: Sequence[str] | str):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class AqmlabWarning(UserWarning):
    """A questionable setting (aqmlab.scenario.advisories); the run goes ahead."""


# ---- scenarios ----------------------------------------------------------------------------

def _inline_toml(value: Any) -> str:
    """A Python value as a TOML inline value (what follows ``=`` in ``--set key=value``)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, Mapping):
        items = ", ".join(f"{_toml_key(str(k))} = {_inline_toml(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_inline_toml(v) for v in value) + "]"
    raise AqmlabError(f"cannot express {value!r} ({type(value).__name__}) as a scenario value; "
                      "give a string, number, boolean, list or dict")


def _toml_key(key: str) -> str:
    import re

    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _inline_toml(key)


def as_override(key: str, value: Any) -> str:
    """A keyword override (``topology__bottleneck__rate="30Mbps"``) in the ``--set`` form
    (``topology.bottleneck.rate=30Mbps``); strings that --set would read as strings anyway stay
    unquoted, so that messages read as the command line's."""
    from aqmlab.scenario.overrides import _parse_override_value

    path = key.replace("__", ".")
    if isinstance(value, str) and value.strip() == value and _parse_override_value(value) == value:
        return f"{path}={value}"
    return f"{path}={_inline_toml(value)}"


@dataclass(frozen=True, repr=False)
class LoadedScenario:
    """A validated scenario and how it was made: `model` (the pydantic
    :class:`aqmlab.scenario.Scenario`: ``sc.model.topology.bottleneck.rate``), `raw` (the merged
    data as written to ``scenario.toml``), `source` (the name, path or "scenario" for a dict)
    and `overrides` (in the ``--set`` form). Attributes of the model read through:
    ``sc.name``, ``sc.duration`` (ns)."""

    model: Scenario
    raw: dict[str, Any]
    source: str
    overrides: tuple[str, ...] = ()
    seed_override: int | None = None
    _data: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        model = self.__dict__.get("model")  # absent while unpickling: no recursion then
        if model is None or name.startswith("_"):
            raise AttributeError(name)
        return getattr(model, name)

    def __repr__(self) -> str:
        changes = "".join(f" --set {o}" for o in self.overrides)
        seed = f" --seed {self.seed_override}" if self.seed_override is not None else ""
        return f"<aqmlab.LoadedScenario {self.source}{changes}{seed}: {self.model.name}>"

    def set(self, *assignments: str, **fields: Any) -> LoadedScenario:
        """A new scenario with more overrides (``"key=value"`` strings and keyword fields)
        applied after this one's."""
        more = [*assignments, *(as_override(k, v) for k, v in fields.items())]
        return _load_source(self.source, self._data, [*self.overrides, *more], self.seed_override)

    def with_seed(self, seed: int) -> LoadedScenario:
        """The same scenario with another seed (as ``--seed``)."""
        return _load_source(self.source, self._data, list(self.overrides), seed)

    def to_toml(self) -> str:
        """The resolved scenario as ``scenario.toml`` holds it."""
        import tomli_w

        return tomli_w.dumps(self.raw)


def load(scenario: str | os.PathLike[str] | Mapping[str, Any], *, set: Sequence[str] = (),
         seed: int | None = None, **fields: Any) -> LoadedScenario:
    """Reads and validates a scenario: a built-in name (``"rb-rio/tcp-red"``, see ``aqmlab
    list scenarios``), a TOML file, or a dict of the file's content. `set` takes ``--set``
    assignments (``"topology.bottleneck.rate=30Mbps"``), keyword `fields` the same with ``__``
    for the dots; `seed` replaces the scenario's. Raises :class:`aqmlab.ScenarioError` (one
    line per problem, each naming the field) when it cannot run."""
    if isinstance(set, str):
        set = [set]  # one assignment given bare
    overrides = [*set, *(as_override(k, v) for k, v in fields.items())]
    if isinstance(scenario, Mapping):
        return _load_source("scenario", copy.deepcopy(dict(scenario)), overrides, seed)
    return _load_source(os.fspath(scenario), None, overrides, seed)


def _load_source(source: str, data: dict[str, Any] | None, overrides: Sequence[str],
                 seed: int | None) -> LoadedScenario:
    from aqmlab import scenario as s

    if data is None:
        model, raw = s.load(source, list(overrides), seed)
    else:
        raw = copy.deepcopy(data)
        for assignment in overrides:
            s.apply_override(raw, assignment)
        if seed is not None:
            raw["seed"] = seed
        model = s.validate(raw, source)
    return LoadedScenario(model, raw, source, tuple(overrides), seed, data)


def _loaded(scenario: LoadedScenario | str | os.PathLike[str] | Mapping[str, Any]) -> LoadedScenario:
    return scenario if isinstance(scenario, LoadedScenario) else load(scenario)


def advisories(named: Sequence[tuple[str, Scenario]]) -> list[str]:
    """One line per questionable setting, with the scenarios it concerns (what the command line
    prints after ``warning:``)."""
    from aqmlab.scenario.advisories import advisories as find

    where: dict[str, list[str]] = {}
    for name, sc in named:
        for line in find(sc):
            where.setdefault(line, []).append(name)
    return [f"{line} (in {', '.join(names)})" for line, names in where.items()]


def _warn(lines: list[str]) -> None:
    for line in lines:
        warnings.warn(line, AqmlabWarning, stacklevel=3)


# ---- one run ------------------------------------------------------------------------------

class Results:
    """One run's results in memory. Tables are pandas DataFrames (the columns of each are
    documented in the README's Results table): :attr:`periods`, :attr:`flow_periods`,
    :attr:`flows`, :attr:`packets`, :attr:`queue`, :attr:`flow_samples`, and any other record
    by :meth:`table`; :attr:`summary` is the table ``aqmlab run`` prints, :attr:`info` the run's
    facts (``summary.json``). Figures are matplotlib Figures; :meth:`save` writes the results
    directory."""

    def __init__(self, run: RunResult, scenario: LoadedScenario):
        self._run = run
        self.scenario = scenario

    def __repr__(self) -> str:
        where = f", saved in {self.out_dir}" if self.out_dir else ""
        return f"<aqmlab.Results {self.scenario.name} seed {self.scenario.model.seed}: {', '.join(self.tables)}{where}>"

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by the name of its Parquet file (``packets``, ``flows``, ...)."""
        t = dict(self._run.tables)
        if len(self._run.periods):
            t["periods"] = self._run.periods
            t["flow_periods"] = self._run.flow_periods
        return t

    def table(self, name: str) -> pd.DataFrame:
        """The table `name`; an :class:`AqmlabError` names the ones this run has when it has not
        that one (a record the scenario did not keep: see its ``records`` section)."""
        tables = self.tables
        if name not in tables:
            raise AqmlabError(f"{self.scenario.name}: no table {name!r} in this run (not recorded, see the "
                              f"scenario's records, or not this kind of run); it has: {', '.join(sorted(tables))}")
        return tables[name]

    @property
    def periods(self) -> pd.DataFrame:
        """Per measurement period: utilization, drop rate, Jain's index, queueing delay."""
        return self.table("periods")

    @property
    def flow_periods(self) -> pd.DataFrame:
        """Per period and flow: bottleneck throughput and receiver goodput."""
        return self.table("flow_periods")

    @property
    def flows(self) -> pd.DataFrame:
        """One row per flow: group, start/stop, access delays, base RTT, totals."""
        return self.table("flows")

    @property
    def packets(self) -> pd.DataFrame:
        """Every bottleneck event (arrive, enqueue, drop, dequeue)."""
        return self.table("packets")

    @property
    def queue(self) -> pd.DataFrame:
        """Bottleneck queue samples."""
        return self.table("queue")

    @property
    def flow_samples(self) -> pd.DataFrame:
        """Per flow over time: delivered bytes, cwnd, ssthresh, srtt, rto."""
        return self.table("flow_samples")

    @property
    def info(self) -> dict[str, Any]:
        """The run's facts and period metrics, as ``summary.json`` holds them."""
        return self._run.summary

    @property
    def summary(self) -> pd.DataFrame:
        """The table ``aqmlab run --json`` prints: one row per period, with the paper's
        published values beside when the scenario is a paper's own and not overridden."""
        return period_table([self._run], [_withheld(self.scenario)]).data

    @property
    def out_dir(self) -> Path | None:
        """Where :meth:`save` (or ``out=``) wrote the results directory, if anywhere."""
        return self._run.out_dir

    @property
    def wall_s(self) -> float:
        """Seconds of wall time the engine ran."""
        return self._run.wall_s

    def flow_packets(self, flow: int) -> pd.DataFrame:
        """The bottleneck events of one flow (its rows of :attr:`packets`)."""
        pk = self.packets
        return pk[pk["flow"] == flow].reset_index(drop=True)

    def queue_figure(self) -> Figure:
        """Instantaneous and average bottleneck queue against time (``queue.png``)."""
        from aqmlab.plots import queue_figure

        return queue_figure(self.queue, f"{self.scenario.name}: bottleneck queue")

    def throughput_figure(self) -> Figure:
        """Per-flow throughput, one panel per period (``flow_throughput.png``)."""
        from aqmlab.plots import throughput_figure

        return throughput_figure(self.flow_periods, f"{self.scenario.name}: per-flow throughput")

    def flow_figure(self, flow: int) -> Figure:
        """One flow over time: its congestion window and its packets' fate at the bottleneck
        (queueing delay of each dequeued packet, drops marked)."""
        from aqmlab.plots import flow_figure

        samples = self.flow_samples
        return flow_figure(samples[samples["flow"] == flow], self.flow_packets(flow),
                           f"{self.scenario.name}: flow {flow}")

    def save(self, out: str | os.PathLike[str], force: bool = False, plot: bool = False) -> Path:
        """Writes the results directory (what ``aqmlab run --out`` writes), atomically. An
        existing `out` is replaced only with `force` and only if aqmlab wrote it; anything else
        raises :class:`aqmlab.outdir.OutputRefused` and is left as it was."""
        from aqmlab.outdir import check_output
        from aqmlab.run import write_results

        target = Path(out)
        check_output(target, force, option="out", force_name=FORCE)
        write_results(self._run, self.scenario.raw, target, force=force)
        if plot:
            from aqmlab.plots import plot_results

            plot_results(target)
        return target


def _withheld(sc: LoadedScenario) -> list[str]:
    """The overrides that make a paper's scenario not the paper's (its published values give
    way to a note); none for a scenario that is no paper's."""
    if not sc.model.reference or sc._data is not None:
        return []
    from aqmlab.reproduce.published import departures

    return departures([sc.source], sc.overrides)


def run(scenario: LoadedScenario | str | os.PathLike[str] | Mapping[str, Any], seed: int | None = None, *,
        out: str | os.PathLike[str] | None = None, force: bool = False, plot: bool = False,
        engine: str = "sim", progress: bool = False) -> Results:
    """Runs a scenario (a :func:`load` result, or anything :func:`load` takes) and returns its
    :class:`Results` in memory. `seed` replaces the scenario's. With `out` the results directory
    is also written (as :meth:`Results.save`; checked before the run starts). `engine` is
    ``"sim"`` (the simulator) or ``"emu"`` (the netns emulator: needs root and iproute2; an
    :class:`AqmlabError` says what is missing). `progress` draws a bar on a terminal's stderr
    for runs longer than two seconds."""
    sc = _loaded(scenario)
    if seed is not None:
        sc = sc.with_seed(seed)
    if engine not in ("sim", "emu"):
        raise AqmlabError(f"engine {engine!r}: allowed: sim, emu")
    if out is not None:
        from aqmlab.outdir import check_output

        check_output(Path(out), force, option="out", force_name=FORCE)
    if engine == "emu":
        result = _emulate(sc.model)
    else:
        from aqmlab.run import simulate

        result = simulate(sc.model, progress=progress)
    res = Results(result, sc)
    if out is not None:
        res.save(out, force=force, plot=plot)
    return res


class EmulationFailed(AqmlabError):
    """The emulator could not run (not root, no ``ip netns``) or failed; the one line says why."""


def _emulate(model: Scenario) -> RunResult:
    from aqmlab.emu import netns

    missing = netns.missing_requirement()
    if missing:
        raise EmulationFailed(missing)
    from aqmlab.emu.netns import EmulationUnavailable
    from aqmlab.emu.run import EmulationError, emulate

    try:
        return emulate(model)
    except (EmulationUnavailable, EmulationError) as e:
        raise EmulationFailed(str(e)) from None


@dataclass
class PeriodTable:
    """The period table of ``aqmlab run``: `cells` (the text cells as printed, under their
    headers), `rows` (the ``--json`` rows), the published sources shown, and per result the
    overrides that withheld its published values. Lists, not DataFrames, so that printing it
    as text imports no pandas (issue 22); `shown` and `data` give the DataFrames."""

    cells: Cells
    rows: list[dict[str, Any]]
    sections: list[int]
    sources: list[str]
    withheld: list[list[str]]

    @property
    def shown(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.cells.rows, columns=self.cells.headers)

    @property
    def data(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows)


def period_table(results: Sequence[Any], withheld: Sequence[list[str]] | None = None) -> PeriodTable:
    """The Figure 5 form: one block per period, one row per run, published values beside
    unless `withheld` gives, per result, the overrides that make its scenario not the paper's.
    A result is anything with `summary` (summary.json's dict), `scenario` (the model) and
    `out_dir`: a `RunResult` or an `aqmlab.run.WrittenRun`."""
    withheld = list(withheld) if withheld is not None else [[] for _ in results]
    shown, data, sections = [], [], []
    periods = sorted({(r["start_s"], r["end_s"]) for res in results for r in res.summary["periods"]})
    for a, b in periods:
        for res, reasons in zip(results, withheld, strict=True):
            row = next((r for r in res.summary["periods"] if (r["start_s"], r["end_s"]) == (a, b)), None)
            if row is None:
                continue
            ref = None if reasons else _reference(res.scenario, a, b)
            qdisc = DISPLAY.get(res.scenario.topology.bottleneck.qdisc.kind, "?")
            pub_util = ref.utilization_mbps if ref else None
            pub_drop = ref.drop_rate_pct if ref else None
            shown.append([f"{a:g}-{b:g}", res.scenario.name, qdisc, f"{row['utilization_mbps']:.3f}",
                          f"{row['drop_rate_pct']:.2f}", _fmt(row["jain"], ".3f"), _fmt(row["qdelay_mean_ms"], ".2f"),
                          _fmt(pub_util, ".3f"), _fmt(pub_drop, ".2f")])
            data.append({"start_s": a, "end_s": b, "scenario": res.scenario.name, "qdisc": qdisc,
                         "results": str(res.out_dir) if res.out_dir else None, **row,
                         "published_utilization_mbps": pub_util, "published_drop_rate_pct": pub_drop})
        sections.append(len(shown) - 1)
    columns = ["period (s)", "scenario", "qdisc", "util (Mbps)", "drop (%)", "Jain", "qdelay (ms)",
               "published util", "published drop"]
    refs = {res.scenario.reference.source for res, reasons in zip(results, withheld, strict=True)
            if res.scenario.reference and not reasons}
    if any(withheld) and not refs:  # every published value withheld: the note replaces the columns
        columns, shown = columns[:-2], [row[:-2] for row in shown]
        for d in data:
            del d["published_utilization_mbps"], d["published_drop_rate_pct"]
    return PeriodTable(Cells(columns, shown), data, sections[:-1], sorted(refs), withheld)


def no_periods_reason(sc: Scenario) -> str:
    """Why a run has no period metrics (they are computed from the bottleneck's events)."""
    if not sc.records.packet_events:
        return ("no period metrics: records.packet_events is off, and they are computed from the bottleneck's "
                "events (--set records.packet_events=true to have them; summary.json keeps the bottleneck's "
                "counters)")
    return "no period metrics: the scenario's metrics.periods is empty"


def _reference(sc: Scenario, a: float, b: float) -> Any:
    if not sc.reference:
        return None
    return next((p for p in sc.reference.periods if (p.start / 1e9, p.end / 1e9) == (a, b)), None)


def _fmt(v: float | None, spec: str) -> str:
    if v is None or v != v:
        return "-"
    return format(v, spec)


def run_seeds(scenario: LoadedScenario | str | os.PathLike[str] | Mapping[str, Any], seeds: Sequence[int] = (1, 2, 3),
              table: str = "periods") -> pd.DataFrame:
    """Runs the scenario once per seed (in this process, one after the other) and returns one
    of its tables (default ``periods``) for all of them, with a ``seed`` column first."""
    import pandas as pd

    sc = _loaded(scenario)
    frames = []
    for s in seeds:
        df = run(sc, seed=s).table(table)
        frames.append(df.assign(seed=s)[["seed", *df.columns]])
    return pd.concat(frames, ignore_index=True)


def confidence(df: pd.DataFrame, by: str | Sequence[str], columns: Sequence[str]) -> pd.DataFrame:
    """Mean and 95 % confidence interval (Student's t over the rows of each group, as the
    reproductions' tables) of `columns` per group of `by`: columns ``<c>_mean``, ``<c>_ci95``
    (the half-width; NaN for one row), ``<c>_low``, ``<c>_high`` and ``n``."""
    import pandas as pd

    from aqmlab.stats import mean_ci

    keys = [by] if isinstance(by, str) else list(by)
    rows = []
    for key, g in df.groupby(keys, sort=False):
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        for c in columns:
            m, h = mean_ci(list(g[c].dropna()))
            row.update({f"{c}_mean": m, f"{c}_ci95": h, f"{c}_low": m - h, f"{c}_high": m + h})
        row["n"] = len(g)
        rows.append(row)
    return pd.DataFrame(rows)


# ---- sweeps -------------------------------------------------------------------------------

@dataclass
class SweepResults:
    """A sweep's tables: `runs` (one row per run and period), `points` (per point and period:
    mean, 95 % CI half-width and n of each metric), `failed` (runs that failed, with the
    error); `out` is the sweep directory, or None when it ran in a temporary one."""

    name: str
    runs: pd.DataFrame
    points: pd.DataFrame
    failed: pd.DataFrame
    out: Path | None
    ran_now: int
    done_before: int


def plan_sweep(sweep_file: str | os.PathLike[str], seeds: int | None = None, overrides: Sequence[str] = (),
               quick: bool = False) -> Sweep:
    """Reads a sweep file (or built-in name) and validates every run before anything runs."""
    from aqmlab.sweep import plan

    if quick and seeds is not None:
        raise AqmlabError("--quick runs one seed per point; give either --quick or --seeds")
    return plan(Path(sweep_file), seeds, overrides, quick)


def sweep(sweep_file: str | os.PathLike[str], *, seeds: int | None = None, set: Sequence[str] = (),
          quick: bool = False, out: str | os.PathLike[str] | None = None, workers: int | None = None,
          dask: str | None = None, progress: bool = False, **fields: Any) -> SweepResults:
    """Runs every point of a sweep (a file or a built-in name such as ``sweeps/rb-rio-buffer``)
    and returns its tables. `seeds`, `set` (and keyword fields, as in :func:`load`) and `quick`
    are ``aqmlab sweep``'s ``--seeds``, ``--set`` and ``--quick``. With `out` the sweep directory
    is kept there (resumable: finished runs are reused); without, the runs go to a temporary
    directory that is removed afterwards. `workers` local processes (default: one per core; 1
    runs in this process). `dask` is ``--dask``: a Dask scheduler's address, or ``"local"`` for
    a LocalCluster of `workers` processes (needs ``pip install 'aqmlab[sweep]'``); the tables are
    the same bytes as the local pool's."""
    overrides = [*([set] if isinstance(set, str) else set), *(as_override(k, v) for k, v in fields.items())]
    swp = plan_sweep(sweep_file, seeds, overrides, quick)
    if dask is not None and not _has_dask():
        raise AqmlabError("dask: dask.distributed is not installed; pip install 'aqmlab[sweep]'")
    if out is not None:
        return _sweep_into(swp, Path(out), workers, dask, progress)
    with tempfile.TemporaryDirectory(prefix="aqmlab-sweep-") as tmp:
        res = _sweep_into(swp, Path(tmp) / "sweep", workers, dask, progress)
    res.out = None
    return res


def _has_dask() -> bool:
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def _sweep_into(swp: Sweep, out_dir: Path, workers: int | None, dask_address: str | None,
                progress: bool, console: Any = None, counts: dict[str, int] | None = None,
                notice: Callable[[str], None] | None = None) -> SweepResults:
    from aqmlab.outdir import check_sweep_dir, write_marker
    from aqmlab.sweep import assemble, is_done

    check_sweep_dir(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_marker(out_dir)
    if dask_address is not None and not _has_dask():
        raise AqmlabError("--dask: dask.distributed is not installed; pip install 'aqmlab[sweep]'")
    before = {t.run_id for t in swp.tasks if is_done(out_dir, t)}
    pending = list({t.run_id: t for t in swp.tasks if t.run_id not in before}.values())
    counts = counts if counts is not None else {}
    counts.update(done=0, failed=0)
    run_sweep_tasks(swp, out_dir, pending, len(before), workers, dask_address, progress, counts, console, notice)
    tables = assemble(out_dir, swp)
    return SweepResults(swp.name, tables["runs"], tables["points"], tables["failed"], out_dir,
                        counts["done"], len(before))


def run_sweep_tasks(swp: Sweep, out_dir: Path, pending: list[Any], done_before: int, workers: int | None,
                    dask_address: str | None, progress: bool, counts: dict[str, int], console: Any = None,
                    notice: Callable[[str], None] | None = None) -> None:
    """Runs the pending tasks on the chosen engine, storing each as it finishes, under a
    progress bar (on a terminal, when `progress`); `counts` holds the runs done and failed so
    far, also after an interruption."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from aqmlab import sweep_engines as engines
    from aqmlab.sweep import store

    console = console or Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.fields[done]} done, {task.fields[failed]} failed, {task.fields[left]} remaining"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not progress or not console.is_terminal) as bar:
        task_id = bar.add_task(f"{swp.name} ({done_before} done before)", total=len(pending),
                               done=0, failed=0, left=len(pending))

        def on_outcome(task: Any, outcome: dict[str, Any]) -> None:
            store(out_dir, swp, task, outcome)
            counts["failed" if "error" in outcome else "done"] += 1
            bar.update(task_id, advance=1, done=counts["done"], failed=counts["failed"],
                       left=len(pending) - counts["done"] - counts["failed"])

        try:
            if not pending:
                pass
            elif dask_address is not None:
                _run_on_dask(pending, dask_address, workers, on_outcome)
            elif (workers or os.cpu_count() or 1) == 1:
                engines.run_serial(pending, on_outcome)
            else:
                engines.run_pool(pending, workers or os.cpu_count() or 1, on_outcome,
                                 notice=notice or (lambda text: warnings.warn(text, AqmlabWarning, stacklevel=2)))
        except KeyboardInterrupt:
            bar.stop()
            raise


def _run_on_dask(pending: list[Any], address: str, workers: int | None, on_outcome: Any) -> None:
    from aqmlab.sweep_engines import run_dask

    try:
        run_dask(pending, address, workers, on_outcome)
    except OSError as e:  # includes the timeout of an unreachable scheduler
        raise AqmlabError(f"--dask {address}: cannot reach the Dask scheduler: {e}".splitlines()[0]) from None


# ---- reproductions ------------------------------------------------------------------------

@dataclass
class Reproduction:
    """A paper's reproduced tables (DataFrames by name, as ``aqmlab reproduce --json`` names
    them; `titles` their captions), the note that stands for withheld published values, and the
    output directory (None when it was a temporary one)."""

    paper: str
    tables: dict[str, pd.DataFrame]
    titles: dict[str, str]
    notes: list[str]
    out: Path | None


def reproducer_module(paper: str) -> Any:
    """The module of a reproduction, or an :class:`AqmlabError` listing the papers."""
    from aqmlab.reproduce import PAPERS, reproducer

    if paper not in PAPERS:
        raise AqmlabError(f"paper {paper!r}: allowed: {', '.join(sorted(PAPERS))}")
    return reproducer(paper)


def check_reproduction(paper: str, mod: Any, seeds: int, records: bool, clips: int | None,
                       quality_flows: int | None, overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """Refuses (:class:`AqmlabError`) options that do not apply to `paper` and overrides that
    it cannot take; returns the reasons its published values are withheld and the advisory
    warnings of its scenarios under the overrides."""
    import inspect

    from aqmlab.reproduce import published, varied

    if paper == "head-to-head" and (records or seeds != 1):
        raise AqmlabError("head-to-head: --records and --seeds are not supported; use --seed and --clips")
    if paper != "head-to-head" and clips is not None:
        raise AqmlabError(f"{paper}: --clips applies only to head-to-head")
    if quality_flows and "quality_flows" not in inspect.signature(mod.reproduce).parameters:
        raise AqmlabError(f"{paper}: --quality-flows applies only to rb-rio and sqf")
    refused = varied.refusal(paper, getattr(mod, "VARIED", {}), overrides)
    if refused:
        raise AqmlabError(refused)
    warned = check_overrides(list(mod.scenarios()), overrides)
    return published.departures(mod.scenarios(), overrides), warned


def check_overrides(names: list[str], overrides: Sequence[str]) -> list[str]:
    """Validates the overrides on every scenario before anything runs. A problem that several
    scenarios share is one line, with the scenarios it concerns (or "every scenario"), in an
    :class:`AqmlabError`; returns the advisory warnings."""
    from aqmlab.scenario import ScenarioError, load as load_scenario

    where: dict[str, list[str]] = {}
    loaded = []
    for name in names:
        try:
            loaded.append((name, load_scenario(name, list(overrides))[0]))
        except ScenarioError as err:
            for p in err.problems:
                # the origin is "<scenario>: --set ..." when the overrides cause it: keep the --set part
                cause = p.origin.partition(": ")[2] if p.origin.startswith(f"{name}: ") else p.origin
                line = ": ".join(part for part in (cause, p.path, p.message) if part)
                where.setdefault(line, []).append(name)
    if where:
        raise AqmlabError([f"{line} (in {'every scenario' if len(found) == len(names) else ', '.join(found)})"
                           for line, found in where.items()])
    return advisories(loaded)


def unchanged_sources(mod: Any, overrides: Sequence[str]) -> list[str]:
    """The tables and figures of a reproduction whose own scenarios `overrides` leave as the
    paper's (they keep their published values); [] for a module that does not say its sources."""
    from aqmlab.reproduce import published

    return published.unchanged_sources(mod.sources(), overrides) if hasattr(mod, "sources") else []


def reproduce_into(paper: str, mod: Any, tmp: Path, seed_list: list[int], first_seed: int, quick: bool,
                   records: bool, overrides: Sequence[str], workers: int | None, clips: int | None,
                   quality_flows: int | None, reasons: list[str]) -> dict[str, pd.DataFrame]:
    """Runs the reproduction into the (fresh) directory `tmp` and returns its tables, with the
    published columns withheld for `reasons`."""
    import inspect

    from aqmlab.reproduce import published

    tables: dict[str, pd.DataFrame]
    if paper == "head-to-head":
        tables = mod.reproduce(tmp, first_seed, clips, quick, workers=workers, overrides=tuple(overrides))
    else:
        params = inspect.signature(mod.reproduce).parameters
        kwargs: dict[str, Any] = {"quick": quick} if "quick" in params else {}
        if "quality_flows" in params:
            kwargs["quality_flows"] = quality_flows if quality_flows is not None else (0 if quick else 2)
        tables = mod.reproduce(tmp, seed_list, tuple(overrides), keep_records=records, workers=workers, **kwargs)
    if reasons:
        unchanged = unchanged_sources(mod, overrides)
        keep = [*getattr(mod, "SCENARIO_FREE_PUBLISHED", ()), *(n for n in unchanged if not n.endswith(".png"))]
        keep_figures = [*getattr(mod, "SCENARIO_FREE_FIGURES", ()), *(n for n in unchanged if n.endswith(".png"))]
        tables = published.withhold(tables, reasons, tmp, keep=keep, keep_figures=keep_figures, unchanged=unchanged)
    return tables


def reproduce(paper: str, *, quick: bool = False, seeds: int = 1, seed: int = 1, set: Sequence[str] = (),
              out: str | os.PathLike[str] | None = None, force: bool = False, workers: int | None = None,
              records: bool = False, clips: int | None = None, quality_flows: int | None = None,
              progress: bool = False, **fields: Any) -> Reproduction:
    """Reproduces a paper's tables (``rb-rio``, ``sqf``, ``pels``, ``head-to-head``) and returns
    them as DataFrames: ``aqmlab reproduce`` with the same options (`seeds` runs per experiment
    from `seed` on, `set` and keyword fields as in :func:`load`). The figures and report go to
    `out` when given (replaced only with `force` and only if aqmlab wrote it), else to a
    temporary directory that is removed. Questionable settings are warned about
    (:class:`AqmlabWarning`); options or overrides the paper cannot take raise
    :class:`AqmlabError`."""
    from aqmlab import progress as bars
    from aqmlab.reproduce import published

    overrides = [*([set] if isinstance(set, str) else set), *(as_override(k, v) for k, v in fields.items())]
    mod = reproducer_module(paper)
    target = Path(out) if out is not None else None
    if target is not None:
        from aqmlab.outdir import check_output

        check_output(target, force, option="out", force_name=FORCE)
    reasons, warned = check_reproduction(paper, mod, seeds, records, clips, quality_flows, overrides)
    _warn(warned)
    seed_list = [seed] if quick else list(range(seed, seed + seeds))
    with bars.shown(not progress), _directory(target) as tmp:
        tables = reproduce_into(paper, mod, tmp, seed_list, seed, quick, records, overrides, workers, clips,
                                quality_flows, reasons)
    notes = [published.note(reasons, unchanged_sources(mod, set))] if reasons else []
    return Reproduction(paper, tables, {k: mod.TITLES[k] for k in tables}, notes, target)


def compare(paper: str, *, quick: bool = False, seeds: int = 1, seed: int = 1, set: Sequence[str] = (),
            out: str | os.PathLike[str] | None = None, force: bool = False, workers: int | None = None,
            progress: bool = False) -> Reproduction:
    """``aqmlab compare PAPER`` (``aqmlab.api.compare``: not exported as ``aqmlab.compare``, the
    name of the module that does the work, which ``from aqmlab import compare`` keeps giving):
    the paper's main video scenario with the modern baselines
    (FIFO, FQ, CoDel, FQ-CoDel, PIE where built) beside its own mechanism; the table (means
    over `seeds` seeds from `seed` on) under the paper's name; `set` takes ``--set`` overrides
    for every row (not its discipline, which is what the rows vary). Its figure goes to `out`
    when given (as :func:`reproduce`), else to a temporary directory that is removed."""
    from aqmlab import compare as cmp, progress as bars

    reproducer_module(paper)  # the same papers, the same error
    problems = cmp.check_overrides(paper, set, quick)
    if problems:
        raise AqmlabError(problems)
    target = Path(out) if out is not None else None
    if target is not None:
        from aqmlab.outdir import check_output

        check_output(target, force, option="out", force_name=FORCE)
    seed_list = [seed] if quick else list(range(seed, seed + seeds))
    with bars.shown(not progress), _directory(target) as tmp:
        table = cmp.compare(paper, tmp, seed_list, quick=quick, workers=workers, overrides=set)
    return Reproduction(paper, {paper: table}, {paper: f"{cmp.TITLE}: {cmp.PAPERS[paper].title}"}, [], target)


@contextmanager
def _directory(target: Path | None) -> Iterator[Path]:
    """The atomic output directory for `target`, or a temporary one removed afterwards."""
    if target is None:
        with tempfile.TemporaryDirectory(prefix="aqmlab-") as tmp:
            yield Path(tmp)
        return
    from aqmlab.run import atomic_directory

    with atomic_directory(target) as tmp:
        yield tmp
