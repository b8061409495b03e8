"""`--set dotted.key=value`: parsing the value and setting it in the raw scenario data."""

from __future__ import annotations

import difflib
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
    """Sets the field at dotted path `key` (as `--set` names it) to an already parsed value.
    `*` in place of a list item sets the rest of the path in every item that can have it (see
    `_takes`): `flows.*.app.tcp.profile=linux` changes every flow group whose application runs
    TCP and leaves video, audio and MPEG groups alone, so one `--set` serves a reproduction
    whose scenarios mix them."""
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[: i + 1])
        if part == "*":
            if not isinstance(node, list):
                raise ScenarioError([Problem("--set", key, "override", f"{where}: * selects list items; "
                                             f"{'.'.join(parts[:i]) or 'the scenario'} is not a list")])
            rest = parts[i + 1:]
            _check_known(rest, key)
            for item in node:
                if isinstance(item, dict) and _takes(item, rest):
                    set_path(item, ".".join(rest), value)
            return
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


def _app_fields() -> dict[str, set[str]]:
    """Each application kind and the fields its table can have (from the one schema)."""
    from typing import get_args

    from aqmlab.scenario.applications import App

    models = get_args(get_args(App)[0])
    return {get_args(m.model_fields["kind"].annotation)[0]: set(m.model_fields) for m in models}


def _takes(item: dict[str, Any], rest: list[str]) -> bool:
    """Whether a list item selected by `*` can have the field at `rest`: a path into an
    application's table (`app.tcp....`) only where the item's application kind has that
    field; any other path in every item."""
    if len(rest) < 2 or rest[0] != "app":
        return True
    app = item.get("app")
    kind = app.get("kind") if isinstance(app, dict) else None
    return rest[1] in _app_fields().get(str(kind), set())


def _check_known(rest: list[str], key: str) -> None:
    """A path below `*` that no application can have is a typo, not a selection of no item."""
    if len(rest) < 2 or rest[0] != "app":
        return
    fields = _app_fields()
    if not any(rest[1] in f for f in fields.values()):
        close = difflib.get_close_matches(rest[1], sorted(set().union(*fields.values())), n=1)
        hint = f"did you mean {close[0]!r}?" if close else "`aqmlab list applications` shows every field"
        raise ScenarioError([Problem("--set", key, "override", f"no application has {rest[1]!r}; {hint}")])
