"""`--set dotted.key=value`: parsing the value and setting it in the raw scenario data."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (requires-python) has no tomllib; tomli is the same parser under its own name
    import tomli as tomllib

from aqmlab.scenario.errors import Problem, ScenarioError


def _parse_override_value(text: str) -> Any:
    """A --set value: a TOML value if it parses as one ("3", "true", "[1, 2]"), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Applies one `dotted.key=value`. List items are addressed by index or by their `name`."""
    if "=" not in assignment:
        raise ScenarioError([f"--set {assignment!r}: expected key=value, e.g. topology.bottleneck.rate=30Mbps"])
    key, _, raw = assignment.partition("=")
    set_path(data, key.strip(), _parse_override_value(raw.strip()))


def set_path(data: dict[str, Any], key: str, value: Any) -> None:
    """Sets the field at dotted path `key` (as `--set` names it) to an already parsed value."""
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            node = _list_item(node, part, where)
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ScenarioError([Problem("--set", key, "override", f"{where} is a value, not a table")])
    last = parts[-1]
    if isinstance(node, list):
        idx = _list_index(node, last, key)
        node[idx] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError([Problem("--set", key, "override", "cannot set a key inside a value")])


def _list_index(items: list[Any], part: str, where: str) -> int:
    if part.isdigit() and int(part) < len(items):
        return int(part)
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return i
    names = [str(i) for i in range(len(items))] + [
        str(it["name"]) for it in items if isinstance(it, dict) and "name" in it]
    raise ScenarioError([Problem("--set", where, "override",
                                 f"no item {part!r}; use an index or a name: {', '.join(names)}")])


def _list_item(items: list[Any], part: str, where: str) -> Any:
    return items[_list_index(items, part, where)]
