"""Tables fit where they go (aqmlab.display): whole Markdown tables when stdout is not a
terminal, the rich layout on one, one JSON document with --json."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from aqmlab.display import Cells, TablePrinter, markdown
from conftest import aqmlab, small_scenario


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def wide_table() -> pd.DataFrame:
    return pd.DataFrame({"discipline with a long name": ["Drop-Tail " * 8, "Rb-RIO"],
                         "utilization (Mbit/s)": [24.123456789, 19.5], "drop (%)": [float("nan"), 3.25]})


def test_markdown_keeps_every_cell_whole():
    text = markdown(wide_table())
    assert ("Drop-Tail " * 8).strip() in text and "24.123456789" in text and "…" not in text
    assert text.splitlines()[1].count("|") == 4  # a pipe table: header, rule, rows


def test_numbers_align_right_with_separators_units_and_blank_cells():
    """A column of numbers is right-aligned in Markdown even when its cells carry thousands
    separators, a unit or nothing at all (the benches' tables); a text column stays left."""
    cells = Cells(["flows", "rate", "CPU (s)", "engine"],
                  [["10,000", "4,156 k", "0.044", "aqmlab"], ["60", "52 k", "", "ns-3 3.44"]])
    rule = [c.strip() for c in markdown(cells).splitlines()[1].strip("|").split("|")]
    assert ["right" if c.endswith(":") and not c.startswith(":") else "left" for c in rule] == \
        ["right", "right", "right", "left"], rule


def test_the_printer_chooses_by_where_stdout_goes():
    piped, terminal = io.StringIO(), Terminal()
    TablePrinter(stream=piped).table("t", "Title", wide_table())
    TablePrinter(stream=terminal).table("t", "Title", wide_table())
    assert piped.getvalue().startswith("Title\n\n| discipline with a long name")
    assert "┃" in terminal.getvalue() and "|" not in terminal.getvalue()
    as_json = io.StringIO()
    p = TablePrinter(as_json=True, stream=as_json)
    p.table("t", "Title", wide_table())
    assert as_json.getvalue() == ""  # nothing until finish: stdout holds one document
    p.finish(extra=1)
    doc = json.loads(as_json.getvalue())
    assert doc["extra"] == 1 and doc["tables"]["t"]["title"] == "Title"
    assert doc["tables"]["t"]["rows"][0]["drop (%)"] is None
    assert doc["tables"]["t"]["rows"][1]["utilization (Mbit/s)"] == 19.5


def test_run_piped_prints_the_whole_table_and_json_matches_the_files(tmp_path, write_scenario):
    sc = str(write_scenario(small_scenario(name="a-scenario-with-a-rather-long-name-to-show-it-is-not-cut")))
    r = aqmlab("run", sc, "--out", str(tmp_path / "r"), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "a-scenario-with-a-rather-long-name-to-show-it-is-not-cut" in r.stdout and "…" not in r.stdout
    periods = pd.read_csv(tmp_path / "r" / "periods.csv")
    for util in periods["utilization_mbps"]:
        assert f"{util:.3f}" in r.stdout
    r = aqmlab("run", sc, "--out", str(tmp_path / "r"), "--force", "--json", "--no-progress")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["tables"]["periods"]["rows"]
    assert [row["utilization_mbps"] for row in rows] == pytest.approx(list(periods["utilization_mbps"]), rel=1e-5)
    assert [(row["start_s"], row["end_s"]) for row in rows] == [(0, 2), (2, 4)]


def test_reproduce_json_is_one_document_with_every_table(tmp_path):
    out = tmp_path / "rb"
    r = aqmlab("reproduce", "rb-rio", "--quick", "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["out"] == str(out) and doc["paper"] == "rb-rio"
    names = sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert sorted(doc["tables"]) == names
    for name in names:
        csv = pd.read_csv(out / "tables" / f"{name}.csv")
        assert len(doc["tables"][name]["rows"]) == len(csv)
        assert list(doc["tables"][name]["rows"][0]) == list(csv.columns)
