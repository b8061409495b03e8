"""The `aqmlab` command line: run, plot, list."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from aqmlab import api, progress
from aqmlab.api import DISPLAY  # noqa: F401 - the name this module had before the API held it
from aqmlab.display import TablePrinter
from aqmlab.outdir import OutputRefused
from aqmlab.reproduce import PAPERS
from aqmlab.scenario import ScenarioError
from aqmlab.schema import LIST_SECTIONS


class _LazyConsole:
    """A rich Console made on first use: importing rich costs tens of milliseconds of CPU, and
    a command whose output goes to a pipe or a file (a script, a sweep's log) often prints
    nothing through rich at all (see _note)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Any = None

    def get(self) -> Any:
        """The Console itself, for rich APIs that take one (Progress)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


out: Any = _LazyConsole(stderr=False)
err: Any = _LazyConsole(stderr=True)


def _note(text: str) -> None:
    """A dimmed line of progress on stderr; plain text, without loading rich, when stderr is
    not a terminal (where rich would print the same characters, less its hard wrap at 80
    columns and its reading of brackets in names as markup)."""
    if sys.stderr.isatty():
        from rich.markup import escape

        err.print(f"[dim]{escape(text)}[/]", highlight=False)
    else:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

#: Exit status for bad input (as argparse and click use it).
EXIT_USAGE = 2
#: Exit status after Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


def _fail(lines: list[str] | str, status: int = EXIT_USAGE) -> NoReturn:
    for line in [lines] if isinstance(lines, str) else lines:
        err.print(f"[bold red]error:[/] {line}", highlight=False, markup=True, soft_wrap=True)
    sys.exit(status)


def _check_out(target: Path, force: bool) -> None:
    """Refuses, in one line and before any work, an output path that aqmlab may not write
    (see aqmlab.outdir: --force replaces only a directory aqmlab wrote)."""
    from aqmlab.outdir import check_output

    try:
        check_output(target, force)
    except OutputRefused as e:
        _fail(str(e))


def _interrupted(what: str) -> None:
    """Ends the process after Ctrl-C, once our own cleanup (temporary result directories,
    the simulation thread) is done. os._exit skips interpreter finalization, where native
    thread pools of the data libraries can abort ("FATAL: exception not rethrown") when torn
    down mid-operation."""
    err.print(f"[bold red]error:[/] interrupted; {what}", highlight=False)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="aqmlab")
def main() -> None:
    """aqmlab: router queue management and scheduling when video and data share a bottleneck."""


@main.command()
@click.argument("scenarios", nargs=-1, required=True)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True,
              help="results directory (with several scenarios: one subdirectory each)")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="override the scenario seed")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field, e.g. --set topology.bottleneck.rate=30Mbps (repeatable)")
@click.option("--force", is_flag=True, help="replace an existing results directory")
@click.option("--plot/--no-plot", default=False, help="also draw the figures into the results directory")
@click.option("--progress/--no-progress", default=True, help="progress bar for long runs")
@click.option("--json", "as_json", is_flag=True, help="print the table as one JSON document")
def run(scenarios: tuple[str, ...], out_dir: Path, seed: int | None, overrides: tuple[str, ...],
        force: bool, plot: bool, progress: bool, as_json: bool) -> None:
    """Run one or more SCENARIO files (or built-in names such as rb-rio/tcp-red)."""
    try:
        results = _run_all(scenarios, out_dir, seed, overrides, force, plot, progress)
    except KeyboardInterrupt:
        # Also covers an interrupt while the data libraries are still importing.
        _interrupted("the run in progress wrote nothing")
    _print_period_table([run for _, run in results], as_json, [api._withheld(sc) for sc, _ in results])


def _run_all(scenarios: tuple[str, ...], out_dir: Path, seed: int | None, overrides: tuple[str, ...],
             force: bool, plot: bool, progress: bool) -> list[tuple[api.LoadedScenario, Any]]:
    """Each scenario run and written, with what its row of the table is printed from. The
    results go from the engine's columns to Parquet without pandas
    (`aqmlab.run.simulate_to_directory`: issue 22); --plot then draws from the written
    directory, as `aqmlab plot` would."""
    loaded = _load_all(scenarios, list(overrides), seed)
    targets = _targets(loaded, out_dir)
    for target in targets:
        _check_out(target, force)
    # Imported once the scenarios and outputs are accepted: a refusal does not pay for it.
    from aqmlab.run import simulate_to_directory

    results = []
    for sc, target in zip(loaded, targets, strict=True):
        run = simulate_to_directory(sc.model, sc.raw, target, force=force, progress=progress)
        if plot:
            from aqmlab.plots import plot_results

            plot_results(target)
        _note(f"{sc.name}: {run.summary['sim']['events']:,} events in {run.wall_s:.2f} s -> {target}")
        results.append((sc, run))
    return results


def _load_all(names: tuple[str, ...], overrides: list[str], seed: int | None) -> list[api.LoadedScenario]:
    loaded, problems = [], []
    for name in names:
        try:
            loaded.append(api.load(name, set=overrides, seed=seed))
        except ScenarioError as e:
            problems.extend(e.lines)
    if problems:
        _fail(problems)
    _print_warnings(api.advisories([(sc.name, sc.model) for sc in loaded]))
    return loaded


def _print_warnings(lines: list[str]) -> None:
    """One warning line per questionable setting (aqmlab.api.advisories); the run goes ahead."""
    if not lines:
        return  # the usual case: nothing to say, and rich stays unloaded
    from rich.markup import escape

    for line in lines:
        err.print(f"[bold yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)


def _targets(loaded: list[api.LoadedScenario], out_dir: Path) -> list[Path]:
    if len(loaded) == 1:
        return [out_dir]
    names = [sc.name for sc in loaded]
    if len(set(names)) != len(names):
        _fail("several scenarios share a name; their result subdirectories would collide")
    return [out_dir / n for n in names]


def _print_period_table(results: list[Any], as_json: bool = False, withheld: list[list[str]] | None = None) -> None:
    """The Figure 5 form: one block per period, one row per run, published values beside
    unless `withheld` gives, per result, the overrides that make its scenario not the paper's."""
    from aqmlab.reproduce.published import note

    table = api.period_table(results, withheld)
    printer = TablePrinter(as_json)
    if len(table.cells) or as_json:  # no empty table in text: the note below says why there is none
        # the DataFrame of the JSON rows only in JSON mode: text is printed without pandas
        printer.table("periods", "Bottleneck per period", table.cells, json_df=table.data if as_json else None,
                      sections=table.sections)
    for src in table.sources:
        printer.note(f"published: {src}")
    for res, reasons in zip(results, table.withheld, strict=True):
        if reasons:
            printer.note(f"{res.scenario.name}: {note(reasons)}")
        if not res.summary["periods"]:
            printer.note(f"{res.scenario.name}: {api.no_periods_reason(res.scenario)}")
    printer.finish(published=table.sources)


def _paper_options(default_out: str, seeds_help: str) -> Any:
    """The PAPER argument and the --out, --seeds and --seed options of reproduce and compare."""
    decorators = [
        click.argument("paper", type=click.Choice(sorted(PAPERS))),
        click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
                     help=f"output directory (default: {default_out})"),
        click.option("--seeds", type=click.IntRange(min=1, max=100), default=1, show_default=True,
                     help=seeds_help),
        click.option("--seed", "first_seed", type=click.IntRange(min=0), default=1, show_default=True,
                     help="first seed (seeds are consecutive)"),
    ]

    def apply(f: Any) -> Any:
        for d in reversed(decorators):
            f = d(f)
        return f
    return apply


@main.command()
@_paper_options("results/<paper>", "seeds per experiment, run in parallel on the local cores; > 1 gives 95 % CIs")
@click.option("--quick", is_flag=True, help="one seed (and shorter runs where a paper's are long): a fast check")
@click.option("--records", is_flag=True, help="also keep every run's full results directory under runs/")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field of every scenario, e.g. --set topology.bottleneck.delay=30ms; "
                   "flows.*.app.tcp.profile=linux sets every TCP flow group")
@click.option("--force", is_flag=True, help="replace an existing output directory")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="parallel processes (default: cores)")
@click.option("--clips", type=click.IntRange(min=1, max=1000), default=None,
              help="head-to-head: clips in the population (default 79, --quick 8)")
@click.option("--quality-flows", type=click.IntRange(min=0), default=None, metavar="N",
              help="rb-rio, sqf: video streams per kind decoded with a real codec and scored for the "
                   "quality table (default 2, 0 with --quick; 0 turns it off)")
@click.option("--json", "as_json", is_flag=True, help="print the tables as one JSON document")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar (there is none when stderr is not a terminal)")
def reproduce(paper: str, out_dir: Path | None, seeds: int, first_seed: int, quick: bool, records: bool,
              overrides: tuple[str, ...], force: bool, workers: int | None, clips: int | None,
              quality_flows: int | None, as_json: bool, quiet: bool) -> None:
    """Reproduce every table and figure of a PAPER's evaluation."""
    try:
        from aqmlab.run import atomic_directory
    except KeyboardInterrupt:
        _interrupted("nothing was written")

    mod = api.reproducer_module(paper)
    out_dir = out_dir or Path("results") / paper
    _check_out(out_dir, force)
    try:
        reasons, warned = api.check_reproduction(paper, mod, seeds, records, clips, quality_flows, overrides)
    except api.AqmlabError as e:
        _fail(e.lines)
    _print_warnings(warned)
    seed_list = [first_seed] if quick else list(range(first_seed, first_seed + seeds))
    try:
        with progress.shown(quiet), atomic_directory(out_dir) as tmp:
            tables = api.reproduce_into(paper, mod, tmp, seed_list, first_seed, quick, records, overrides, workers,
                                        clips, quality_flows, reasons)
    except KeyboardInterrupt:
        _interrupted("nothing was written")
    from aqmlab.reproduce import published

    printer = TablePrinter(as_json)
    if reasons:
        printer.note(published.note(reasons, api.unchanged_sources(mod, overrides)))
    for name, df in tables.items():
        _print_table(printer, name, mod.TITLES[name], df)
        note = getattr(mod, "table_note", lambda _: None)(df)  # what a mark in the table means
        if note:
            printer.note(note)
    printer.note(f"tables, figures and report.md in {out_dir}")
    printer.finish(paper=paper, out=str(out_dir))


def _print_table(printer: Any, key: str, title: str, df: Any) -> None:
    """A reproduction's or comparison's table; "published_" columns read "pub. " in text."""
    shown = df.rename(columns=lambda c: str(c).replace("published_", "pub. "))
    printer.table(key, title, shown, json_df=df)


@main.command()
@_paper_options("results/compare/<paper>",
                "seeds per discipline, run in parallel on the local cores; the table shows means")
@click.option("--quick", is_flag=True, help="one seed and short runs: a fast check")
@click.option("--force", is_flag=True, help="replace an existing output directory")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="parallel processes (default: cores)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field of every row's scenario except the discipline, e.g. "
                   "--set flows.*.app.tcp.profile=linux (every TCP flow group)")
@click.option("--json", "as_json", is_flag=True, help="print the table as one JSON document")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar (there is none when stderr is not a terminal)")
def compare(paper: str, out_dir: Path | None, seeds: int, first_seed: int, quick: bool, force: bool,
            workers: int | None, overrides: tuple[str, ...], as_json: bool, quiet: bool) -> None:
    """Rerun a PAPER's main video scenario with modern baseline disciplines (FIFO, FQ, and
    CoDel, FQ-CoDel, PIE where built) beside the paper's own mechanism."""
    try:
        from aqmlab import compare as cmp
        from aqmlab.run import atomic_directory
    except KeyboardInterrupt:
        _interrupted("nothing was written")
    out_dir = out_dir or Path("results") / "compare" / paper
    _check_out(out_dir, force)
    problems = cmp.check_overrides(paper, overrides, quick)
    if problems:
        _fail(problems)
    seed_list = [first_seed] if quick else list(range(first_seed, first_seed + seeds))
    try:
        with progress.shown(quiet), atomic_directory(out_dir) as tmp:
            t = cmp.compare(paper, tmp, seed_list, quick=quick, workers=workers, overrides=overrides)
    except KeyboardInterrupt:
        _interrupted("nothing was written")
    printer = TablePrinter(as_json)
    _print_table(printer, paper, f"{cmp.TITLE}: {cmp.PAPERS[paper].title}", t)
    printer.note(f"table and figure in {out_dir}")
    printer.finish(paper=paper, out=str(out_dir))


@main.command()
@click.argument("sweep_file", metavar="SWEEP.toml", type=click.Path(path_type=Path))
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True,
              help="sweep directory: finished runs under runs/, then the tables (rerun to resume)")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="local processes (default: one per core; 1 runs in this process); "
                   "with --dask local: Dask worker processes")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="run on the Dask scheduler at ADDRESS (tcp://host:8786), or \"local\" for a LocalCluster")
@click.option("--progress/--no-progress", default=True, help="progress bar")
@click.option("--seeds", type=click.IntRange(min=1, max=1000), default=None,
              help="seeds per point, consecutive from the file's first seed (default: the file's)")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field of the base scenario, after the file's own set list (repeatable)")
@click.option("--quick", is_flag=True, help="one seed per point (the file's first): a fast check")
def sweep(sweep_file: Path, out_dir: Path, workers: int | None, dask_address: str | None, progress: bool,
          seeds: int | None, overrides: tuple[str, ...], quick: bool) -> None:
    """Run every point of a SWEEP over axes and seeds; resumable (see docs/sweeps.md)."""
    try:
        swp = api.plan_sweep(sweep_file, seeds, overrides, quick)
    except (ScenarioError, api.AqmlabError) as e:
        _fail(e.lines)
    counts: dict[str, int] = {}
    try:
        res = api._sweep_into(swp, out_dir, workers, dask_address, progress, console=err.get(), counts=counts,
                              notice=lambda text: err.print(f"[yellow]note:[/] {text}", highlight=False))
    except OutputRefused as e:
        _fail(str(e))
    except api.AqmlabError as e:
        _fail(e.lines)
    except KeyboardInterrupt:
        finished = counts.get("done", 0) + counts.get("failed", 0)
        _interrupted(f"{finished} runs finished and stored under {out_dir}/runs; "
                     "rerun the same command to run the rest")
    failed = len(res.failed)
    err.print(f"[dim]{swp.name}: {len(swp.tasks)} runs: {res.ran_now} run now, {res.done_before} done before, "
              f"{failed} failed; tables in {out_dir} (aqmlab report {out_dir})[/]", highlight=False, soft_wrap=True)
    for row in res.failed.itertuples(index=False):
        err.print(f"[bold red]failed:[/] run {row.run} seed {row.seed}: {row.error}", highlight=False, soft_wrap=True)
    if failed:
        sys.exit(1)


@main.command()
@click.argument("sweep_dir", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--out", "dest", type=click.Path(path_type=Path), default=None,
              help="the HTML file to write (default: DIR/report.html)")
def report(sweep_dir: Path, dest: Path | None) -> None:
    """Write a self-contained HTML report of a sweep directory (plots with CI bands, tables)."""
    from aqmlab.report import NotASweep, write_report

    try:
        out.print(str(write_report(sweep_dir, dest)), highlight=False)
    except (NotASweep, OutputRefused) as e:
        _fail(str(e))


@main.group()
def analyze() -> None:
    """Run a paper's analyses on measured traffic (a packet capture)."""


@analyze.command(name="head-to-head")
@click.argument("capture", type=click.Path(path_type=Path))
@click.option("--udp", "udp_filter", default=None, metavar="PROTO:SRC:SPORT:DST:DPORT",
              help="the UDP stream (* for any field); default: the two largest flows")
@click.option("--tcp", "tcp_filter", default=None, metavar="PROTO:SRC:SPORT:DST:DPORT", help="the TCP stream")
@click.option("--bottleneck", default=None, metavar="RATE",
              help="bottleneck rate for Figure 9 (e.g. 600Kbps); default: estimated from the capture")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="output directory (default: <capture>-head-to-head)")
@click.option("--force", is_flag=True, help="replace an existing output directory")
@click.option("--json", "as_json", is_flag=True, help="print the table as one JSON document")
def analyze_head_to_head(capture: Path, udp_filter: str | None, tcp_filter: str | None, bottleneck: str | None,
                         out_dir: Path | None, force: bool, as_json: bool) -> None:
    """The head-to-head analyses (Chung, Zhu, Claypool 2002) of a UDP and a TCP stream in CAPTURE."""
    from aqmlab.analysis import pcap as cap
    from aqmlab.run import atomic_directory

    rate = None
    if bottleneck is not None:
        try:
            from aqmlab import _core
            rate = _core.parse_rate(bottleneck)
        except ValueError as e:
            _fail(f"--bottleneck: {e}")
    try:
        s = cap.analyze_capture(capture, udp_filter, tcp_filter, rate)
    except ValueError as e:
        _fail(str(e))
    out_dir = out_dir or capture.with_name(capture.stem + "-head-to-head")
    _check_out(out_dir, force)
    table = cap.summary_table(s)
    with atomic_directory(out_dir) as tmp:
        cap.write_outputs(s, table, tmp)
    printer = TablePrinter(as_json)
    printer.table("summary", f"Head-to-head: {capture}", table)
    printer.note(f"summary and figures in {out_dir}")
    printer.finish(capture=str(capture), out=str(out_dir))


@main.command()
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("--out", "dest", type=click.Path(path_type=Path), default=None,
              help="the directory to write the PNGs into (default: the results directory); an existing "
                   "queue.png or flow_throughput.png there is replaced only in a directory aqmlab wrote")
def plot(results_dir: Path, dest: Path | None) -> None:
    """Draw the queue time series and per-flow throughput of a results directory."""
    from aqmlab.plots import plot_results

    try:
        for p in plot_results(results_dir, dest):
            out.print(str(p))
    except OutputRefused as e:
        _fail(str(e))
    except (FileNotFoundError, KeyError) as e:
        _fail(str(e).strip("'\""))


@main.command()
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("--flow", "flows", type=click.IntRange(min=0), multiple=True,
              help="score only this video flow (repeatable; default: every video flow)")
@click.option("--video", "videos", is_flag=True,
              help="also write flow<N>-received.mp4 and flow<N>-sent.mp4 to watch (needs --flow)")
@click.option("--deadline", default=None, metavar="DURATION",
              help="score as a real-time receiver playing each frame this long after it was due "
                   "(e.g. 150ms): a packet arriving later counts as lost (default: none)")
@click.option("--json", "as_json", is_flag=True, help="print the table as one JSON document")
@click.option("--quiet", "-q", is_flag=True, help="no progress bar (there is none when stderr is not a terminal)")
def quality(results_dir: Path, flows: tuple[int, ...], videos: bool, deadline: str | None, as_json: bool,
            quiet: bool) -> None:
    """Score what a viewer sees: real-codec pictures after the run's losses (PSNR, SSIM, freezes)."""
    from aqmlab.quality import QualityError
    from aqmlab.viewer import score_results

    if videos and not flows:
        _fail("--video: name the flows to write with --flow N (one pair of mp4s per flow)")
    deadline_ns = None
    if deadline is not None:
        from aqmlab import _core

        try:
            deadline_ns = _core.parse_time(deadline)
        except ValueError as e:
            _fail(f"--deadline {deadline}: {e}")
        if deadline_ns <= 0:
            _fail(f"--deadline {deadline}: must be positive, e.g. 150ms")
    try:
        with progress.shown(quiet):
            _, per_flow, written = score_results(results_dir, list(flows) or None, videos, deadline_ns)
    except (FileNotFoundError, QualityError) as e:
        _fail(str(e).strip("'\""))
    except KeyboardInterrupt:
        _interrupted("no quality file was written")
    printer = TablePrinter(as_json)
    printer.table("flows", f"Picture quality: {results_dir}", per_flow.round(3), json_df=per_flow)
    for p in written:
        printer.note(str(p))
    printer.finish(results=str(results_dir), written=[str(p) for p in written])


@main.command()
@click.argument("scenario", required=False)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=None,
              help="results directory (default: results/emu/<scenario name>)")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="override the scenario seed")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="override a field (repeatable)")
@click.option("--force", is_flag=True, help="replace an existing results directory")
@click.option("--cleanup", is_flag=True, help="only remove namespaces and links left by a killed run")
def emulate(scenario: str | None, out_dir: Path | None, seed: int | None, overrides: tuple[str, ...],
            force: bool, cleanup: bool) -> None:
    """Run SCENARIO on real packets: kernel TCP and UDP senders in network namespaces, the
    scenario's discipline in a userspace router between them (needs root; see docs/emulation.md)."""
    from aqmlab.emu import netns

    if cleanup:
        missing = netns.missing_requirement()
        if missing:
            _fail(missing)
        namespaces, links = netns.cleanup()
        out.print(f"removed {len(namespaces)} namespaces and {len(links)} links"
                  + (f": {', '.join(namespaces + links)}" if namespaces or links else ""), highlight=False)
        return
    if scenario is None:
        _fail("emulate: give a SCENARIO (or --cleanup)")
    sc, = _load_all((scenario,), list(overrides), seed)
    missing = netns.missing_requirement()
    if missing:
        _fail(missing)
    target = out_dir or Path("results") / "emu" / sc.name
    _check_out(target, force)
    try:
        result = _emulate_one(sc, target, force)
    except KeyboardInterrupt:
        _interrupted("the emulation was stopped, its namespaces removed and nothing written")
    _print_period_table([result])


def _emulate_one(sc: api.LoadedScenario, target: Path, force: bool) -> Any:
    try:
        res = api.run(sc, engine="emu")
    except ScenarioError as e:
        _fail(e.lines)
    except api.EmulationFailed as e:
        _fail(str(e), status=1)
    res.save(target, force=force)
    router = res.info["emu"]["router"]
    err.print(f"[dim]{sc.name}: emulated {sc.model.duration / 1e9:g} s, {sum(router['router']['rx_frames']):,} frames "
              f"through the router in {res.wall_s:.1f} s -> {target}[/]", highlight=False)
    return res._run


@main.command()
@click.argument("scenario")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), required=True, help="results directory")
@click.option("--length", "length_s", type=str, default="60", show_default=True,
              help="seconds of TCP load (Flent's --length); probes run DELAY longer at each end")
@click.option("--delay", "delay_s", type=str, default="5", show_default=True,
              help="seconds of probes alone before and after the TCP flows (Flent's --delay)")
@click.option("--step-size", "step_s", type=str, default="0.2", show_default=True,
              help="probe interval and sample step, seconds (Flent's --step-size)")
@click.option("--seed", type=click.IntRange(min=0), default=None, help="override the scenario seed")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="override a field, e.g. --set topology.bottleneck.qdisc.kind=fq_codel (repeatable)")
@click.option("--force", is_flag=True, help="replace an existing results directory")
@click.option("--flent-plots", is_flag=True,
              help="also have flent (pip install flent) draw all_scaled, ping_cdf and box_totals PNGs")
@click.option("--engine", type=str, default="sim", show_default=True,
              help="sim (the simulator) or emu (the netns emulator: kernel TCP, real ICMP echoes, "
                   "ping and irtt as probes where installed; needs root)")
@click.option("--progress/--no-progress", default=True, help="progress bar for long runs")
@click.option("--json", "as_json", is_flag=True, help="print the summary as one JSON document")
def rrul(scenario: str, out_dir: Path, length_s: str, delay_s: str, step_s: str, seed: int | None,
         overrides: tuple[str, ...], force: bool, flent_plots: bool, engine: str, progress: bool,
         as_json: bool) -> None:
    """Flent's RRUL test over SCENARIO's bottleneck in the simulator (or, with --engine emu, the
    emulator): 4 TCP uploads and 4 downloads (BE, BK, CS5, EF) and 4 latency probes (ICMP,
    UDP EF/BK/BE), the discipline on both directions; writes Parquet tables and rrul.flent.gz,
    which flent opens."""
    import json

    from aqmlab import rrul as rr

    try:
        length, delay, step = (rr.seconds(option, text) for option, text in
                               (("--length", length_s), ("--delay", delay_s), ("--step-size", step_s)))
        rr.check_options(length, delay, step)
        if engine not in rr.ENGINES:
            raise rr.RrulError(f"--engine: {engine!r}; allowed: {', '.join(rr.ENGINES)}")
    except rr.RrulError as e:
        _fail(str(e))
    if engine == "emu":
        from aqmlab.emu import netns

        missing = netns.missing_requirement()
        if missing:
            _fail(f"--engine emu: {missing}")
    if flent_plots and not rr.flent_available():
        _fail("--flent-plots: flent is not installed in this Python; pip install flent (or leave the option out)")
    _check_out(out_dir, force)
    try:
        res = rr.run(scenario, out_dir, overrides=overrides, seed=seed, length_s=length, delay_s=delay,
                     step_s=step, force=force, progress=progress, engine=engine)
    except ScenarioError as e:
        _fail(e.lines)
    except rr.RrulError as e:
        _fail(str(e))
    except _emulator_failures() as e:  # a process of the emulated run failed: its one line
        _fail(str(e), status=1)
    except KeyboardInterrupt:
        _interrupted("the run in progress wrote nothing")
    if flent_plots:
        for plot in rr.FLENT_PLOTS:
            try:
                rr.flent_plot(res.flent_file, plot, out_dir / f"flent_{plot}.png")
            except RuntimeError as e:
                _fail(str(e), status=1)
    s = res.summary
    if as_json:
        click.echo(json.dumps(s, indent=2, sort_keys=True))
        return
    what = "frames through the router" if engine == "emu" else "events"
    _note(f"rrul: {res.events:,} {what} in {res.wall_s:.2f} s -> {out_dir} ({res.flent_file.name})")
    click.echo(f"upload   {s['upload_mbps']:8.2f} Mbit/s (4 flows)")
    click.echo(f"download {s['download_mbps']:8.2f} Mbit/s (4 flows)")
    med = s["ping_median_ms"]
    click.echo("ping under load: " + ("no replies" if med is None else
               f"median {med:.1f} ms, p90 {s['ping_p90_ms']:.1f} ms, p99 {s['ping_p99_ms']:.1f} ms, "
               f"{s['probes_lost']} of {s['probes_sent']} probes lost"))
    if "probe_sources" in s:
        by_source: dict[str, list[str]] = {}
        for series, source in s["probe_sources"].items():
            by_source.setdefault(source, []).append(series.removeprefix("Ping (ms) "))
        click.echo("probes: " + "; ".join(f"{', '.join(names)} from {src}" for src, names in by_source.items()))


def _emulator_failures() -> tuple[type[Exception], ...]:
    """The emulator's one-line failures (importing it needs no root)."""
    from aqmlab.emu.netns import EmulationUnavailable
    from aqmlab.emu.run import EmulationError

    return (EmulationError, EmulationUnavailable)


@main.command(name="list")
@click.argument("what", required=False, type=click.Choice(["scenarios", *LIST_SECTIONS]))
@click.option("--json", "as_json", is_flag=True, help="print the tables as one JSON document")
def list_components(what: str | None = None, as_json: bool = False) -> None:
    """Show every scenario field with its unit, default and allowed values: the top-level
    fields, then each discipline, application, the TCP table and each generated trace by kind.
    WHAT shows one section (fields, disciplines, applications, tcp, traces), or every built-in
    scenario and sweep with its one-line description (scenarios)."""
    if what == "scenarios":
        _list_scenarios(as_json)
        return
    import pandas as pd

    from aqmlab.schema import listed_tables

    printer = TablePrinter(as_json)
    for section in [what] if what else LIST_SECTIONS:
        for listed in listed_tables(section):
            rows = [(r.path, r.default, r.unit.split(" (e.g.")[0], r.allowed, r.description) for r in listed.rows]
            printer.table(listed.key, listed.title,
                          pd.DataFrame(rows, columns=["parameter", "default", "unit", "allowed", "meaning"]),
                          left_columns=("parameter", "default", "unit", "allowed", "meaning"), no_wrap=("parameter",))
    printer.finish()


def _list_scenarios(as_json: bool) -> None:
    import pandas as pd

    from aqmlab.catalog import builtin_entries

    entries = builtin_entries()
    table = pd.DataFrame([(e.name, e.kind, e.description) for e in entries], columns=["name", "kind", "description"])
    printer = TablePrinter(as_json)
    printer.table("scenarios", "Built-in scenarios (aqmlab run NAME) and sweeps (aqmlab sweep NAME)", table)
    printer.finish()


@main.command(name="schema")
@click.option("--json", "as_json", is_flag=True, help="the JSON Schema of a scenario file (for editors)")
def schema_command(as_json: bool) -> None:
    """Print the scenario file reference (Markdown) or its JSON Schema, from the models."""
    from aqmlab.schema import json_schema_text, reference_markdown

    sys.stdout.write(json_schema_text() if as_json else reference_markdown())


def entry() -> None:
    """The `aqmlab` executable: click in non-standalone mode so that an interrupt at any point
    after start-up (even while the data libraries import) ends like one during a run."""
    try:
        status = main.main(prog_name="aqmlab", standalone_mode=False)
    except click.exceptions.Abort:
        _interrupted("nothing was written")
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except OutputRefused as e:  # the target changed between the first check and the rename
        _fail(str(e))
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":
    entry()
