"""docs/tables.md lists every column of every result table, and nothing else (issue 23 point 10).

Short runs of built-in scenarios write the tables (ABR, GCC and SCReAM from `video/mix/fifo`,
MPEG frames from `rb-rio/mixed-rb-rio`, RTP media frames and CAKE's statistics from
`cake/diffserv4-video`, PELS from `pels/gamma-7`, BBR's long-term sampling from
`sqf/testbed-fifo` with BBR downloads, probes and the RRUL tables from `aqmlab rrul`), and one
small run per discipline that reports named statistics writes its `queue` columns. For every table written:

* each column is documented under that table's section (its heading names the table in
  backticks; the first column of the section's Markdown tables names the columns);
* each documented column is in the table (rows marked *(emulator only)* excepted), so the
  page cannot list a column that no longer exists;
* `queue`'s named statistics are exactly those the page gives the run's discipline.

`summary.json`'s top-level keys are checked the same way, over all the runs, and `aqmlab
quality`'s `quality` and `quality_flows` tables on the RTP run (scored with a deadline, which
adds `deadline_ms`). Its encoding is cached in the user's cache (`AQMLAB_CACHE`, keyed by every
parameter): a few seconds once cached, about ten more the first time. The one section no run
here writes (`tcp_received`: emulator only) is still parsed, so a malformed section fails too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import REPO, small_scenario

DOC = REPO / "docs" / "tables.md"
EMULATOR_ONLY = "(emulator only)"

#: Built-in scenarios cut short, and what each is here for.
RUNS = {
    "abr-gcc-scream": ("video/mix/fifo", ["duration=10s", "flows.*.start_jitter=1s", 'metrics.periods=[["5s","10s"]]']),
    "mpeg-frames": ("rb-rio/mixed-rb-rio", ["duration=11s", 'metrics.periods=[["1s","11s"]]']),
    "rtp-cake": ("cake/diffserv4-video", ["duration=2s", 'metrics.periods=[["1s","2s"]]']),
    "pels": ("pels/gamma-7", ["duration=3s"]),
    "bbr-intervals": ("sqf/testbed-fifo", ["duration=10s", 'metrics.periods=[["5s","10s"]]',
                                           "flows.tcp.app.tcp.profile=linux",
                                           "flows.tcp.app.tcp.congestion_control=bbr"]),
}

#: A discipline table for each `kind` the page gives named statistics to (the test fails if the
#: page names one that is not here, so a new discipline's row cannot go unchecked).
DISCIPLINES = {
    "droptail": {"kind": "droptail", "limit": "60p"},
    "red": {"kind": "red", "limit": "60p", "min_th": 5, "max_th": 15},
    "pie": {"kind": "pie", "limit": "60p"},
    "codel": {"kind": "codel", "limit": "60p"},
    "fq_codel": {"kind": "fq_codel", "limit": "60p"},
    "fq_pie": {"kind": "fq_pie", "limit": "60p"},
    "cobalt": {"kind": "cobalt", "limit": "60p"},
    "dualpi2": {"kind": "dualpi2", "limit": "60p"},
    "cake": {"kind": "cake", "diffserv": "diffserv8"},
}
CAKE_TINS = {"besteffort": 1, "diffserv3": 3, "diffserv4": 4, "diffserv8": 8, "precedence": 8}


# ---- the page -------------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_doc(text: str) -> dict[str, list[dict[str, str]]]:
    """Section name (the first backticked word of a `## ` heading) -> the rows of its Markdown
    tables, each a dict of header -> cell; the first cell must be one backticked name."""
    sections: dict[str, list[dict[str, str]]] = {}
    current: list[dict[str, str]] | None = None
    header: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            m = re.search(r"`([^`]+)`", line)
            assert m, f"section heading without a table name in backticks: {line!r}"
            assert m.group(1) not in sections, f"two sections for {m.group(1)}"
            current = sections[m.group(1)] = []
            header = None
            continue
        if not line.startswith("|") or current is None:
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
        elif set(line.replace("|", "").strip()) <= set("- :"):
            continue
        else:
            assert len(cells) == len(header), f"row with {len(cells)} cells under {len(header)} headers: {line!r}"
            row = dict(zip(header, cells, strict=True))
            name = re.fullmatch(r"`([A-Za-z0-9_]+)`", cells[0])
            assert name, f"first cell is not one `name`: {line!r}"
            row["name"] = name.group(1)
            current.append(row)
    return sections


@pytest.fixture(scope="module")
def doc() -> dict[str, list[dict[str, str]]]:
    return parse_doc(DOC.read_text())


def documented(doc: dict[str, list[dict[str, str]]], table: str) -> list[dict[str, str]]:
    assert table in doc, f"table {table} has no section in docs/tables.md (sections: {sorted(doc)})"
    rows = doc[table]
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names)), f"{table}: a column documented twice: {names}"
    return rows


def named_statistics(doc: dict[str, list[dict[str, str]]]) -> dict[str, set[str]]:
    """`queue`'s named statistics: column -> the discipline kinds the page gives it to."""
    return {r["name"]: set(re.findall(r"`([a-z0-9_]+)`", r["disciplines"])) for r in documented(doc, "queue")
            if "disciplines" in r}


# ---- the runs -------------------------------------------------------------------------------


def _written(folder: Path) -> dict[str, list[str]]:
    tables = {p.stem: pq.read_schema(p).names for p in sorted(folder.glob("*.parquet"))}
    tables["summary.json"] = list(json.loads((folder / "summary.json").read_text()))
    return tables


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, dict[str, list[str]]]:
    """Run name -> the tables it wrote -> their columns (summary.json: its top-level keys;
    the RTP run also has `aqmlab quality --deadline 150ms`'s two tables)."""
    import pandas as pd

    import aqmlab
    from aqmlab import rrul
    from aqmlab.viewer import score_results

    base = tmp_path_factory.mktemp("tables")
    out = {}
    for name, (scenario, sets) in RUNS.items():
        aqmlab.run(aqmlab.load(scenario, set=sets), out=base / name)
        out[name] = _written(base / name)
    rrul.run("cake/diffserv4-video", base / "rrul", length_s=1.0, delay_s=0.4, step_s=0.2, progress=False)
    out["rrul"] = _written(base / "rrul")
    rtp = base / "rtp-cake"
    score_results(rtp, deadline_ns=150_000_000)
    out["rtp-cake"]["quality"] = pq.read_schema(rtp / "quality.parquet").names
    out["rtp-cake"]["quality_flows"] = list(pd.read_csv(rtp / "quality_flows.csv").columns)
    return out


@pytest.fixture(scope="module")
def queue_columns() -> dict[str, list[str]]:
    """Discipline kind -> the `queue` columns a one-second run through it writes."""
    import aqmlab

    out = {}
    for kind, qdisc in DISCIPLINES.items():
        s = small_scenario(duration="1s", metrics={"periods": [["0s", "1s"]]})
        s["topology"]["bottleneck"]["qdisc"] = qdisc
        res = aqmlab.run(s)
        out[kind] = list(res.queue.columns)
    return out


# ---- the checks -----------------------------------------------------------------------------


def test_the_runs_write_the_tables_they_are_here_for(outputs):
    written = set().union(*(set(t) for t in outputs.values()))
    assert written >= {"packets", "queue", "flow_samples", "flows", "frames", "media", "media_frames", "periods",
                       "flow_periods", "abr_segments", "abr_sessions", "rtc_frames", "rtc_sessions", "gcc_rate",
                       "scream_rate", "probes", "rrul_probes", "rrul_throughput", "pels_frames", "pels_control",
                       "pels_packets", "quality", "quality_flows", "bbr_intervals", "summary.json"}


def undocumented(doc: dict[str, list[dict[str, str]]], outputs: dict[str, dict[str, list[str]]]) -> list[str]:
    """Columns written that the page does not list under their table."""
    found = []
    for run, tables in outputs.items():
        for table, columns in tables.items():
            names = {r["name"] for r in documented(doc, table)}
            found += [f"{run}: {table}.{c}" for c in columns if c not in names]
    return found


def unwritten(doc: dict[str, list[dict[str, str]]], outputs: dict[str, dict[str, list[str]]]) -> list[str]:
    """Columns the page lists that a table lacks: per run, except the queue's (its named
    statistics depend on the discipline: see the queue test) and summary.json's (its keys on
    the command), which must be written by some run; rows marked emulator only excepted."""
    found = []
    seen: dict[str, set[str]] = {}
    statistics = named_statistics(doc)

    def expected(table: str) -> list[str]:
        return [r["name"] for r in documented(doc, table)
                if EMULATOR_ONLY not in " ".join(r.values()) and r["name"] not in statistics]

    for run, tables in outputs.items():
        for table, columns in tables.items():
            seen.setdefault(table, set()).update(columns)
            if table not in ("queue", "summary.json"):
                found += [f"{run}: {table}.{c}" for c in expected(table) if c not in columns]
    for table in ("queue", "summary.json"):
        found += [f"every run: {table}.{c}" for c in expected(table) if c not in seen[table]]
    return found


def test_every_column_written_is_documented_under_its_table(doc, outputs):
    assert undocumented(doc, outputs) == []


def test_every_documented_column_is_written(doc, outputs):
    assert unwritten(doc, outputs) == []


def test_the_checks_see_a_row_removed_or_added(outputs):
    """The checks can fail: without `packets.frame_type`'s row the column is undocumented; with
    a row for a column no table has, that row is reported."""
    text = DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `frame_type` | uint8 | the video frame"))
    cut = parse_doc(text.replace(row + "\n", "", 1))
    assert "abr-gcc-scream: packets.frame_type" in undocumented(cut, outputs)
    added = parse_doc(text.replace(row, row + "\n| `no_such_column` | uint8 | nothing | |", 1))
    assert "abr-gcc-scream: packets.no_such_column" in unwritten(added, outputs)


def test_the_queue_has_exactly_the_named_statistics_documented_for_its_discipline(doc, queue_columns, outputs):
    statistics = named_statistics(doc)
    assert statistics, "docs/tables.md's queue section has no table of named statistics"
    kinds = set().union(*statistics.values())
    assert kinds <= set(DISCIPLINES), f"disciplines documented but not run here: {sorted(kinds - set(DISCIPLINES))}"
    fixed = [r["name"] for r in documented(doc, "queue") if r["name"] not in statistics]
    for kind, columns in queue_columns.items():
        want = {name for name, ks in statistics.items() if kind in ks}
        if kind == "cake":  # the tins its diffserv mode has
            tins = CAKE_TINS[DISCIPLINES["cake"]["diffserv"]]
            want = {c for c in want if not re.fullmatch(r"tin\d+_backlog", c) or int(c[3:-8]) < tins}
        assert columns[:len(fixed)] == fixed, f"{kind}: fixed columns {columns[:len(fixed)]}, documented {fixed}"
        named = columns[len(fixed):]
        assert set(named) == want, f"{kind}: named statistics {named}, documented {sorted(want)}"
    # CAKE in diffserv4 (the cake scenario): tins 0-3 only.
    cake4 = outputs["rtp-cake"]["queue"]
    assert [c for c in cake4 if c.endswith("_backlog")] == [f"tin{i}_backlog" for i in range(4)]
