"""`aqmlab list scenarios`: every built-in scenario and sweep, once, with a one-line
description from its file."""

from __future__ import annotations

import json

from aqmlab.catalog import builtin_entries, first_comment_sentence
from aqmlab.scenario import BUILTIN_DIR, load
from conftest import aqmlab


def test_every_builtin_file_is_listed_once_with_a_description():
    entries = builtin_entries()
    names = [e.name for e in entries]
    files = sorted(str(p.relative_to(BUILTIN_DIR).with_suffix("")) for p in BUILTIN_DIR.rglob("*.toml"))
    assert names == files and len(set(names)) == len(names)
    for e in entries:
        assert e.description and "\n" not in e.description and "  " not in e.description, e
    by_name = {e.name: e for e in entries}
    assert by_name["rb-rio/tcp-red"].description == load("rb-rio/tcp-red")[0].description
    assert by_name["sweeps/sqf-load"].kind == "sweep"
    assert by_name["sweeps/sqf-load"].description.startswith("Load (number of TCP downloads) x discipline")


def test_the_first_comment_sentence_skips_full_stops_in_names_and_parentheses():
    text = "# One (see a.toml. really) thing: two.\n# Second sentence.\nname = 'x'\n# not leading\n"
    assert first_comment_sentence(text) == "One (see a.toml. really) thing: two"
    assert first_comment_sentence("name = 'x'\n") == ""


def test_the_command_prints_every_name_whole():
    r = aqmlab("list", "scenarios")
    assert r.returncode == 0, r.stderr
    for e in builtin_entries():
        assert f"| {e.name} " in r.stdout and e.description in r.stdout
    doc = json.loads(aqmlab("list", "scenarios", "--json").stdout)
    assert [row["name"] for row in doc["tables"]["scenarios"]["rows"]] == [e.name for e in builtin_entries()]
    r = aqmlab("list", "nonsense")
    assert r.returncode == 2 and "scenarios" in r.stderr
