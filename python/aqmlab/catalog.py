"""The built-in scenarios and sweeps (python/aqmlab/scenarios/), each with a one-line
description, for `aqmlab list scenarios`.

A scenario's description is its `description` field (inherited through `extends` when the file
has none); a file without one (the sweeps) is described by the first sentence of its leading
comment block. Names are as the command line takes them: the path under scenarios/ without
".toml" (`rb-rio/tcp-red`, `sweeps/sqf-load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aqmlab.scenario import BUILTIN_DIR, ScenarioError, read_scenario_file

#: Built-in files under this folder are sweep files (aqmlab sweep), not scenarios.
SWEEP_FOLDER = "sweeps"


@dataclass(frozen=True)
class Entry:
    name: str
    kind: str  # "scenario" or "sweep"
    description: str


def builtin_entries(root: Path = BUILTIN_DIR) -> list[Entry]:
    """Every built-in scenario and sweep, sorted by name."""
    entries = []
    for path in root.rglob("*.toml"):
        name = str(path.relative_to(root).with_suffix(""))
        kind = "sweep" if path.relative_to(root).parts[0] == SWEEP_FOLDER else "scenario"
        entries.append(Entry(name, kind, describe(path, kind)))
    # By name, not by file: "mix/dualpi2-l4s.toml" sorts before "mix/dualpi2.toml" ('-' < '.').
    return sorted(entries, key=lambda e: e.name)


def describe(path: Path, kind: str = "scenario") -> str:
    """The one-line description of a built-in file (see the module docstring)."""
    if kind == "scenario":
        try:
            text = read_scenario_file(path).get("description")
        except ScenarioError:
            text = None
        if isinstance(text, str) and text.strip():
            return " ".join(text.split())
    return first_comment_sentence(path.read_text())


def first_comment_sentence(text: str) -> str:
    """The first sentence of the file's leading block of `#` comments ("" if it has none)."""
    block = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        block.append(line.lstrip("#").strip())
    joined = " ".join(part for part in block if part)
    depth = 0
    for i, ch in enumerate(joined):
        depth += (ch == "(") - (ch == ")")
        # a sentence ends at a full stop outside parentheses that a space (or the end) follows
        if ch == "." and depth == 0 and (i + 1 == len(joined) or joined[i + 1].isspace()):
            return joined[:i]
    return joined
