"""Published values only beside runs of the paper's own scenario.

A `--set` that changes what a paper fixed (its bottleneck rate, a buffer, a discipline's
parameter, the duration, the flows) makes the paper's numbers answer a different question, so
the "published" columns are withheld and a note says which override caused it and what the
paper had: ``published: n/a (--set topology.bottleneck.rate=30Mbps differs from the paper's
25Mbps)``. An override that leaves the validated scenario as it was (the paper's own value,
written differently), or that changes only fields which do not change what is simulated, keeps
them."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.scenario.errors import ScenarioError
from aqmlab.scenario.load import load, read_scenario_file, resolve_path

if TYPE_CHECKING:
    import pandas as pd

#: Top-level scenario fields that do not change what is simulated: labels, the seed (the paper's
#: numbers are for its scenario, whatever the seed), what is recorded, how the engine runs the
#: same model, the published values themselves, and the emulator's own settings.
NEUTRAL_FIELDS = frozenset({"name", "description", "seed", "records", "engine", "reference", "emulation"})

#: A column that holds the paper's values: "published ...", "published_...", "pub. ...".
_PUBLISHED_COLUMN = re.compile(r"^(published|pub\.)($|[ _])", re.IGNORECASE)


def _simulated(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    sc, _ = load(name, overrides)
    return sc.model_dump(mode="json", exclude=set(NEUTRAL_FIELDS))


def _paper_value(raw: Mapping[str, Any], key: str) -> str | None:
    """The value at dotted `key` in the scenario file as written, or None when it is not set
    there (list items by index or by name, as `--set` addresses them; `*`: the distinct values
    of the items that set it, joined by " / ")."""
    node: Any = raw
    parts = key.split(".")
    for i, part in enumerate(parts):
        if part == "*" and isinstance(node, list):
            rest = ".".join(parts[i + 1:])
            values = [v for it in node if isinstance(it, dict) and (v := _paper_value(it, rest)) is not None]
            return " / ".join(dict.fromkeys(values)) or None
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list):
            named = [it for it in node if isinstance(it, dict) and it.get("name") == part]
            if named:
                node = named[0]
            elif part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        else:
            return None
    return str(node) if not isinstance(node, (dict, list)) else None


def _simulated_or_none(name: str, overrides: Sequence[str]) -> dict[str, Any] | None:
    """`_simulated`, or None when these overrides alone make no valid scenario."""
    try:
        return _simulated(name, overrides)
    except ScenarioError:
        return None


def _changes(name: str, overrides: Sequence[str], i: int) -> bool:
    """Whether override `i` changes what scenario `name` simulates: on its own; or, when it is
    valid only beside the others (a BBR part needs `congestion_control = bbr` set by another),
    against all the overrides but it."""
    alone = _simulated_or_none(name, [overrides[i]])
    if alone is not None:
        return alone != _simulated(name, [])
    return _simulated_or_none(name, [*overrides[:i], *overrides[i + 1:]]) != _simulated(name, overrides)


def departures(scenarios: Iterable[str], overrides: Sequence[str]) -> list[str]:
    """One phrase per override that changes what any of `scenarios` simulates, saying what the
    paper had there (all the scenarios' distinct values, in their order); [] when none does.
    The overrides must already be known to load together (cli._check_overrides ran)."""
    names = list(scenarios)
    phrases = []
    for i, assignment in enumerate(overrides):
        key = assignment.partition("=")[0].strip()
        if key.split(".")[0] in NEUTRAL_FIELDS:
            continue
        papers: list[str] = []
        for name in names:
            if not _changes(name, overrides, i):
                continue
            value = _paper_value(read_scenario_file(resolve_path(name)), key)
            shown = value if value is not None else "default (not set in its scenario)"
            if shown not in papers:
                papers.append(shown)
        if papers:
            phrases.append(f"--set {assignment} differs from the paper's {', '.join(papers)}")
    return phrases


def note(reasons: Sequence[str], kept: Sequence[str] = ()) -> str:
    """The line that stands where the published values would be; `kept`: the tables and
    figures whose own scenarios the overrides leave as the paper's, which keep them."""
    also = f"; kept in {', '.join(kept)}, whose scenarios the overrides leave as the paper's" if kept else ""
    return f"published: n/a ({'; '.join(reasons)}){also}"


def unchanged_sources(sources: Mapping[str, Sequence[str]], overrides: Sequence[str]) -> list[str]:
    """The names (tables, figures) of `sources` whose scenarios no override changes."""
    by_scenarios: dict[tuple[str, ...], bool] = {}
    kept = []
    for name, scenarios in sources.items():
        key = tuple(scenarios)
        if key not in by_scenarios:
            by_scenarios[key] = not departures(key, overrides)
        if by_scenarios[key]:
            kept.append(name)
    return kept


def published_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if _PUBLISHED_COLUMN.match(str(c))]


def withhold(tables: Mapping[str, pd.DataFrame], reasons: Sequence[str], out_dir: Path,
             keep: Iterable[str] = (), keep_figures: Iterable[str] = (),
             unchanged: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """`tables` without their published columns (except the tables named in `keep`, whose
    published values do not depend on the scenario, e.g. a closed-form model's), rewritten in
    out_dir/tables/ and in report.md, which starts with the note; every figure marked as not
    the paper's scenario except those named in `keep_figures` (a model's curves, the clip
    population). `unchanged` names the tables and figures (among those kept) whose own
    scenarios the overrides did not change, for the note. Returns the new tables."""
    from aqmlab.reproduce import write_tables

    kept = set(keep)
    report = out_dir / "report.md"
    text = report.read_text() if report.exists() else None
    changed: dict[str, pd.DataFrame] = {}
    new = {}
    for name, df in tables.items():
        cols = [] if name in kept else published_columns(df)
        new[name] = df.drop(columns=cols) if cols else df
        if cols:
            changed[name] = new[name]
            if text is not None:
                text = text.replace(df.to_markdown(index=False), new[name].to_markdown(index=False))
    if changed and (out_dir / "tables").is_dir():
        write_tables(changed, out_dir / "tables")
    if text is not None:
        title, _, rest = text.partition("\n")
        report.write_text(f"{title}\n\n{note(reasons, unchanged)}\n{rest}")
    mark_figures(out_dir / "figures", reasons, keep=keep_figures)
    return new


def mark_figures(folder: Path, reasons: Sequence[str], keep: Iterable[str] = ()) -> None:
    """Every PNG in `folder` gains a strip below it naming what made the run differ from the
    paper's scenario, so that a figure copied out of the directory still says it is not the
    paper's figure (the titles keep the paper's figure numbers, which name what is drawn)."""
    if not folder.is_dir():
        return
    from matplotlib import font_manager
    from PIL import Image, ImageDraw, ImageFont

    # The figures' own font (matplotlib's DejaVu Sans), at the size of their tick labels.
    font_file = font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans"))
    kept = set(keep)
    for path in sorted(folder.glob("*.png")):
        if path.name in kept:
            continue
        with Image.open(path) as img:
            figure = img.convert("RGB")
        font = ImageFont.truetype(font_file, size=max(11, figure.width // 90))
        # Long overrides wrap at the figure's width instead of running off its edge.
        per_line = max(20, int((figure.width - 16) / font.getlength("x")))
        lines = ["Not the paper's scenario:"] + [
            f"  {part}" for r in reasons for part in textwrap.wrap(r, per_line - 2, break_on_hyphens=False)]
        line_height = int(font.getbbox("Ag")[3]) + 4
        strip = Image.new("RGB", (figure.width, line_height * len(lines) + 8), "white")
        for i, line in enumerate(lines):
            ImageDraw.Draw(strip).text((8, 4 + i * line_height), line, fill=(170, 0, 0), font=font)
        marked = Image.new("RGB", (figure.width, figure.height + strip.height), "white")
        marked.paste(figure, (0, 0))
        marked.paste(strip, (0, figure.height))
        marked.save(path)
