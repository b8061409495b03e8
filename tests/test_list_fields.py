"""`aqmlab list`: every field of a scenario file (top level, every discipline, application,
the TCP table and every generated trace) with its default, unit and allowed values, derived
from the same models as docs/scenario-reference.md."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import aqmlab.scenario as sc
from aqmlab.schema import LIST_SECTIONS, field_docs
from conftest import aqmlab


def _rows(section: str) -> dict[str, list[dict[str, str]]]:
    r = aqmlab("list", section, "--json")
    assert r.returncode == 0, r.stderr
    return {key: t["rows"] for key, t in json.loads(r.stdout)["tables"].items()}


def test_the_top_level_section_lists_every_nested_field_with_its_default():
    rows = _rows("fields")["fields"]
    by_path = {row["parameter"]: row for row in rows}
    assert [row["parameter"] for row in rows] == [d.path for d in field_docs(sc.Scenario)]
    for path in ("duration", "topology.bottleneck.rate", "topology.bottleneck.impairments.gemodel.p",
                 "flows[].count", "flows[].start", "records.packet_events", "metrics.periods"):
        assert path in by_path, path
    assert by_path["flows[].start"]["default"] == '"0s"'
    assert by_path["flows[].count"]["allowed"] == "[1, 100000]"
    assert by_path["duration"]["default"] == "required"


@pytest.mark.parametrize("section, models", [("disciplines", sc.QDISC_MODELS), ("applications", sc.APP_MODELS),
                                             ("traces", sc.TRACE_MODELS)])
def test_every_kind_is_listed_once_with_every_parameter(section, models):
    tables = _rows(section)
    listed = {kind for key in tables for kind in [key.split("/", 1)[1]]}
    distinct = {model for model in models.values()}
    assert len(tables) == len(distinct)
    for kind, model in models.items():
        if kind in listed:
            params = [row["parameter"] for row in tables[f"{key_prefix(section)}/{kind}"]]
            assert params == [d.path for d in field_docs(model)], kind
    assert listed <= set(models)


def key_prefix(section: str) -> str:
    return {"disciplines": "qdisc", "applications": "app", "traces": "trace"}[section]


def test_piped_output_keeps_every_name_and_one_line_descriptions():
    r = aqmlab("list")
    assert r.returncode == 0, r.stderr
    titles = [line for line in r.stdout.splitlines() if line and not line.startswith("|")]
    assert len(titles) == sum(len(_rows(s)) for s in LIST_SECTIONS)
    assert all("  " not in t for t in titles), [t for t in titles if "  " in t]
    for d in field_docs(sc.Tcp) + field_docs(sc.Scenario):
        assert f"| {d.path} " in r.stdout, d.path
    assert "(nested)" not in r.stdout


def test_an_unknown_section_names_the_allowed_ones():
    r = aqmlab("list", "topology")
    assert r.returncode == 2
    for section in ("scenarios", *LIST_SECTIONS):
        assert section in r.stderr


def test_on_a_narrow_terminal_every_field_path_stays_on_one_line(monkeypatch):
    """The rich layout folds the descriptions, not the paths a user copies into `--set`."""
    import io

    from aqmlab.display import TablePrinter
    from aqmlab.schema import listed_tables

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "100")
    out = Terminal()
    printer = TablePrinter(stream=out)
    fields = listed_tables("fields")[0]
    frame = pd.DataFrame([(r.path, r.description) for r in fields.rows], columns=["parameter", "meaning"])
    printer.table("fields", fields.title, frame, left_columns=("parameter", "meaning"), no_wrap=("parameter",))
    text = out.getvalue()
    longest = max((r.path for r in fields.rows), key=len)
    assert len(longest) > 30
    assert longest in text, longest
