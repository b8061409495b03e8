"""Reading scenario files: built-in names, `extends`, trace paths, and validation by the models
then by the simulator's own guard."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10 (requires-python) has no tomllib; tomli is the same parser under its own name
    import tomli as tomllib
from pydantic import ValidationError

from aqmlab import _core
from aqmlab.scenario.errors import Problem, ScenarioError, _problems
from aqmlab.scenario.model import Scenario
from aqmlab.scenario.overrides import apply_override
from aqmlab.traces import TraceFileError

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "scenarios"


def read_toml(path: Path, what: str = "scenario file") -> dict[str, Any]:
    """A TOML file as data; anything else at `path` (nothing, a directory, an unreadable or
    non-TOML file) is one line naming the path and `what` was expected there."""
    path = Path(path)
    if path.is_dir():
        raise ScenarioError([f"{path}: is a directory, not a {what}{_directory_hint(path)}"])
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ScenarioError([f"{path}: no such {what}{_builtin_hint(path)}"]) from None
    except PermissionError:
        raise ScenarioError([f"{path}: cannot read the {what} (permission denied)"]) from None
    except OSError as e:
        raise ScenarioError([f"{path}: cannot read the {what} ({e.strerror or e})"]) from None
    except UnicodeDecodeError:
        raise ScenarioError([f"{path}: not a {what}: not a TOML text file (not UTF-8)"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError([f"{path}: not valid TOML: {e}"]) from None


def _directory_hint(folder: Path) -> str:
    """What to give instead of a directory: its TOML files (as built-in names where built in)."""
    files = sorted(folder.glob("*.toml"))
    if not files:
        return ""
    try:
        names = [str(f.resolve().relative_to(BUILTIN_DIR).with_suffix("")) for f in files]
    except ValueError:
        names = [str(f) for f in files]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"; give one of its files: {shown}"


def _builtin_hint(path: Path) -> str:
    """A name that is a folder of built-in scenarios (``rb-rio``) gets its scenarios listed."""
    folder = BUILTIN_DIR / str(path)
    if not path.is_absolute() and folder.is_dir():
        return f" (built-in {path} is a folder{_directory_hint(folder)})"
    if not path.is_absolute() and path.suffix != ".toml":
        return " (`aqmlab list scenarios` shows the built-in names)"
    return ""


def resolve_path(name: str) -> Path:
    """A file path, or a built-in scenario name such as `rb-rio/tcp-red`."""
    p = Path(name)
    if p.exists():
        return p
    builtin = BUILTIN_DIR / (name if name.endswith(".toml") else f"{name}.toml")
    if builtin.exists():
        return builtin
    return p


def validate(data: dict[str, Any], origin: str = "scenario") -> Scenario:
    """The scenario model, after pydantic's checks and the simulator's own (aqmlab-sim
    config.rs), so that whatever either refuses is refused here, before anything runs."""
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(_problems(e, origin)) from None
    try:
        config = sc.to_sim_config()  # reads trace files
    except TraceFileError as e:
        raise ScenarioError([Problem(origin, e.field, "trace", e.message)]) from None
    except ValueError as e:
        raise ScenarioError([Problem(origin, "", "trace", str(e))]) from None
    try:
        # The simulator's guard: the models above hold every user-facing check, so this only
        # fires when one is missing there (tests/test_schema.py proves it does not).
        _core.check_sim_config(json.dumps(config))
    except _core.ConfigError as e:
        raise ScenarioError([Problem(origin, _scenario_path(e.path), f"engine:{e.kind}", e.message)]) from None
    return sc


#: The simulator's config keeps the topology's tables at its top level.
_ENGINE_TOPOLOGY_KEYS = ("bottleneck", "reverse", "access_qdisc", "chain")


def _scenario_path(engine_path: str) -> str:
    """A location in the simulator's config as the scenario file spells it."""
    first = engine_path.split(".", 1)[0]
    return f"topology.{engine_path}" if first in _ENGINE_TOPOLOGY_KEYS else engine_path


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`: tables merge key by key, everything else (arrays too) replaces.
    A table that names another `kind` than the base's (a discipline, an application, a trace
    model) replaces it whole: the base's other keys belong to its kind (a FIFO's `limit` means
    nothing to CAKE, a Markov trace's `states` nothing to a square wave)."""
    merged = dict(base)
    for k, v in over.items():
        old = merged.get(k)
        if isinstance(v, dict) and isinstance(old, dict) and not _other_kind(old, v):
            merged[k] = deep_merge(old, v)
        else:
            merged[k] = v
    return merged


def _other_kind(base: dict[str, Any], over: dict[str, Any]) -> bool:
    return "kind" in over and "kind" in base and over["kind"] != base["kind"]


def _anchor_traces(data: dict[str, Any], folder: Path) -> None:
    """Trace and schedule files are named relative to the scenario file that names them."""
    for g in data.get("flows", []) if isinstance(data.get("flows"), list) else []:
        app = g.get("app") if isinstance(g, dict) else None
        if isinstance(app, dict) and isinstance(app.get("trace"), str):
            app["trace"] = str((folder / app["trace"]).resolve())
    for link in _links(data.get("topology")):
        for key in ("trace", "schedule"):
            if isinstance(link.get(key), str):
                link[key] = str((folder / link[key]).resolve())


def _links(topology: Any) -> list[dict[str, Any]]:
    """The link tables of a scenario's topology as written (bottleneck, reverse, chain hops)."""
    if not isinstance(topology, dict):
        return []
    found = [topology.get("bottleneck"), topology.get("reverse")]
    for hop in topology.get("chain", []) if isinstance(topology.get("chain"), list) else []:
        if isinstance(hop, dict):
            found += [hop.get("forward"), hop.get("reverse")]
    return [link for link in found if isinstance(link, dict)]


def read_scenario_file(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Reads a scenario, resolving `extends = "other.toml"` (relative to the file) recursively."""
    data = read_toml(path)
    _anchor_traces(data, path.parent)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ScenarioError([f"{path}: extends must be a file name"])
    base_path = (path.parent / parent).resolve()
    if base_path in seen:
        raise ScenarioError([f"{path}: extends forms a cycle through {base_path.name}"])
    return deep_merge(read_scenario_file(base_path, seen + (base_path,)), data)


def load(name: str, overrides: Sequence[str] = (), seed: int | None = None) -> tuple[Scenario, dict[str, Any]]:
    """Reads, overrides and validates a scenario. Returns the model and the raw merged data.
    A problem that only the overrides cause names them (``--set duration=5s``) after the
    scenario's name as the user gave it (a built-in's name, not its installed path)."""
    path = resolve_path(name)
    data = read_scenario_file(path)
    origin = display_name(name, path)
    untouched = copy.deepcopy(data) if overrides else None
    for assignment in overrides:
        apply_override(data, assignment)
    if seed is not None:
        data["seed"] = seed
    try:
        return validate(data, origin), data
    except ScenarioError as e:
        if untouched is None:
            raise
        raise ScenarioError(_blame_overrides(e.problems, untouched, overrides, origin)) from None


def display_name(name: str, path: Path) -> str:
    """How messages name a scenario: as given, when it is a built-in name; else its path."""
    if not Path(name).exists() and path.is_relative_to(BUILTIN_DIR):
        return name
    return str(path)


def _blame_overrides(problems: list[Problem], untouched: dict[str, Any], overrides: Sequence[str],
                     origin: str) -> list[Problem]:
    """The problems that the file alone does not have are the overrides' doing: each names the
    overrides of its field (or all of them when none is of its field)."""
    try:
        validate(untouched, origin)
        before: set[tuple[str, str]] = set()
    except ScenarioError as e:
        before = {(p.path, p.message) for p in e.problems}
    blamed = []
    for p in problems:
        if (p.path, p.message) in before:
            blamed.append(p)
            continue
        related = [a for a in overrides if _related(a.partition("=")[0].strip(), p.path)]
        shown = " ".join(f"--set {a}" for a in related or overrides)
        blamed.append(Problem(f"{origin}: {shown}", p.path, p.kind, p.message))
    return blamed


def _related(key: str, field: str) -> bool:
    """Whether an override of `key` touches `field` (one contains the other), or the message
    is about the whole scenario. A `*` in the key stands for any list item (an index or a
    name), as `--set` reads it."""
    if not field:
        return False
    key_parts, field_parts = key.split("."), field.split(".")
    common = min(len(key_parts), len(field_parts))
    return all(k in ("*", f) for k, f in zip(key_parts[:common], field_parts[:common], strict=True))
