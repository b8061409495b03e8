"""The scenario mutation corpus of `test_scenario_mutations.py`: every built-in scenario,
broken one way at a time. Each case is *invalid by construction* (the scenario cannot be run
as written) and lists the names the refusal must mention (the field, or its table).

Kinds of mutation (per leaf unless said otherwise):
* wrong-type: a table, a list, a string or a number where something else belongs;
* negative, zero (only where zero is meaningless), huge (beyond the field's range or 64 bits),
  not-a-number (NaN, infinity);
* unit-typo, no-unit, negative unit values, values too large for 64-bit nanoseconds/bits/bytes;
* unknown-key in every table, missing-required (a key without a default removed);
* unknown-kind for every discipline, application and classifier;
* per scenario: broken TOML (truncated, unclosed, duplicated keys), extends cycles (self,
  two files), extends of a missing file or a non-string, thresholds reversed (every RED curve),
  a flow path through a router that does not exist, a classifier band that does not exist, a
  measurement period outside the run, a trace file that does not exist, a stop before the start,
  a repeated flow group name.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from aqmlab.scenario import BUILTIN_DIR, read_scenario_file

Path_ = tuple[Any, ...]


@dataclass
class Case:
    scenario: str
    kind: str
    where: str
    #: Any of these in the error line names the field well enough.
    names: tuple[str, ...]
    data: dict[str, Any] | None = None
    text: str | None = None
    #: Further files next to the scenario (for `extends`).
    extra: dict[str, str] = field(default_factory=dict)
    #: Lines the refusal must have: one per problem, and a mutation makes one problem.
    problems: int = 1

    @property
    def label(self) -> str:
        return f"{self.scenario}:{self.kind}:{self.where}"

    def write(self, folder: Path) -> Path:
        for name, text in self.extra.items():
            (folder / name).write_text(text)
        p = folder / "scenario.toml"
        p.write_text(self.text if self.text is not None else tomli_w.dumps(self.data))
        return p


def _dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path)


def _names(path: Path_) -> tuple[str, ...]:
    """The names a refusal of a change at `path` may give: the dotted path (with the flow
    group's name in place of its index, as cross-field checks write it), or failing that the
    field's own key (cross-field messages such as "min_th (60) must be smaller than max_th")."""
    keys = [str(p) for p in path if not isinstance(p, int)]
    return tuple(dict.fromkeys([_dotted(path), keys[-1] if keys else _dotted(path)]))


def _get(data: Any, path: Path_) -> Any:
    for p in path:
        data = data[p]
    return data


def _set(data: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    d = copy.deepcopy(data)
    _get(d, path[:-1])[path[-1]] = value
    return d


def _delete(data: dict[str, Any], path: Path_) -> dict[str, Any]:
    d = copy.deepcopy(data)
    del _get(d, path[:-1])[path[-1]]
    return d


def _leaves(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(data, list) and data and all(isinstance(x, (dict, list)) for x in data):
        for i, v in enumerate(data):
            yield from _leaves(v, path + (i,))
    else:
        yield path, data


def _tables(data: Any, path: Path_ = ()) -> Iterator[Path_]:
    if isinstance(data, dict):
        yield path
        for k, v in data.items():
            yield from _tables(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _tables(v, path + (i,))


UNIT = re.compile(r"^(\d+(?:\.\d+)?)\s*([A-Za-z/µ]+)$")

#: Fields of free text, where any string is fine.
FREE_TEXT = {"name", "description", "source"}
#: Leaves whose key is one of these mean nothing at zero.
ZERO_IS_INVALID = {
    "rate", "count", "duration", "limit", "fps", "mss", "w_q", "max_p", "share", "weight", "quantum",
    "interval", "time_constant", "queue_sample", "flow_sample", "mean_pkt_size", "burst",
    "packet_size", "period", "max_packet", "mtu", "initial_cwnd", "aggressiveness", "max_th",
    "access_rate", "report_interval", "clip", "rtt_up_factor", "buffer_multiple", "target_queue",
}
#: Numbers with no upper bound: a RED max_th above the buffer only means no early drops; a
#: published reference value is whatever the paper printed.
UNBOUNDED = {"max_th", "utilization_mbps"}
#: Keys whose value may be an (optional) ordered pair or list of values, mutated as a whole.
PAIRS = {"sender_delay", "path", "class_weights", "levels", "map", "periods", "dscp_classes"}


def _zero_is_an_outage(path: Path_) -> bool:
    """A Markov trace state's rate may be 0 (an outage; only all-zero states are refused)."""
    return len(path) >= 3 and path[-3] == "states" and path[-1] == "rate"


def _unit_mutations(path: Path_, v: str) -> Iterator[tuple[str, Any]]:
    m = UNIT.match(v)
    if not m:
        return
    num, unit = m.groups()
    yield "unit-typo", f"{num}{unit}x"
    yield "unit-typo", f"{num} {unit[::-1]}q"
    yield "no-unit", num
    yield "no-unit", float(num) if "." in num else int(num)
    yield "negative", f"-{num}{unit}"
    yield "huge", f"1{'0' * 30}{unit}"
    yield "not-a-number", f"nan{unit}"
    if path[-1] in ZERO_IS_INVALID and not _zero_is_an_outage(path):
        yield "zero", f"0{unit}"


def _number_mutations(path: Path_, v: float | int) -> Iterator[tuple[str, Any]]:
    key = path[-1]
    yield "wrong-type", "many"
    if key == "seed":
        yield "negative", -1
        yield "huge", 2**64
        return
    yield "negative", -abs(v) - 1
    if key not in UNBOUNDED:
        yield "huge", 2**64 if isinstance(v, int) else float("inf")
    yield "not-a-number", float("nan")
    if key in ZERO_IS_INVALID:
        yield "zero", 0


def _leaf_mutations(path: Path_, v: Any) -> Iterator[tuple[str, Any]]:
    key = path[-1] if path else ""
    yield "wrong-type", {"x": 1}
    if isinstance(v, bool):
        yield "wrong-type", "maybe"
        yield "wrong-type", 2
    elif isinstance(v, (int, float)):
        yield from _number_mutations(path, v)
    elif isinstance(v, str):
        if key in FREE_TEXT:
            yield "wrong-type", 7
            if key == "name":
                yield "zero", ""
            return
        if UNIT.match(v):
            yield "wrong-type", [v, v, v]
            yield from _unit_mutations(path, v)
        elif key == "kind" or key == "by":
            yield "unknown-kind", v + "x"
        else:
            yield "wrong-type", 3.5
            yield "unknown-kind", v + "-nonsense"
    elif isinstance(v, list):
        yield "wrong-type", "[1, 2]"
        if key in PAIRS and v and not isinstance(v[0], (dict, list)):
            yield "wrong-type", [v[0]] * 5 if key != "levels" else [v[0], 2]


def _required_keys() -> set[str]:
    """Keys that every scenario model having them requires (no default), by name."""
    from pydantic import BaseModel

    import aqmlab.scenario as sc

    required, optional = set(), set()
    for obj in vars(sc).values():
        if isinstance(obj, type) and issubclass(obj, BaseModel):
            for n, f in obj.model_fields.items():
                (required if f.is_required() else optional).add(n)
    return required - optional - {"kind"}


def _per_leaf(name: str, data: dict[str, Any]) -> Iterator[Case]:
    required = _required_keys()
    for path, v in _leaves(data):
        if not path:
            continue
        where = _dotted(path)
        for kind, new in _leaf_mutations(path, v):
            yield Case(name, kind, f"{where}={new!r}"[:80], _names(path), data=_set(data, path, new))
        if path[-1] in required and not isinstance(path[-1], int):
            parent = path[:-1]
            yield Case(name, "missing-required", where, _names(path) + ((_dotted(parent),) if parent else ()),
                       data=_delete(data, path))
        # A list entry of a pair or map, broken in place.
        if isinstance(v, list) and path[-1] in PAIRS and v and not isinstance(v[0], (dict, list)):
            yield Case(name, "wrong-type", f"{where}.0", _names(path), data=_set(data, path, [{"x": 1}] + v[1:]))


def _per_table(name: str, data: dict[str, Any]) -> Iterator[Case]:
    for path in _tables(data):
        if not isinstance(_get(data, path), dict):
            continue
        if path and path[-1] in ("frame_sizes", "congestion_control"):
            continue  # maps whose keys are names, not fields
        t = _get(data, path)
        d = copy.deepcopy(data)
        _get(d, path)["colour"] = "green"
        yield Case(name, "unknown-key", _dotted(path) or "(top)", ("colour",), data=d)
        if "kind" in t and isinstance(t["kind"], str):
            d = copy.deepcopy(data)
            del _get(d, path)["kind"]
            yield Case(name, "missing-required", _dotted(path + ("kind",)), ("kind",), data=d)


def _qdisc_tables(data: Any, path: Path_ = ()) -> Iterator[Path_]:
    for p in _tables(data, path):
        t = _get(data, p)
        if isinstance(t, dict) and t.get("kind") in ("red", "rio", "droptail", "prio", "wrr", "sqf", "drr",
                                                     "pfq", "tbf", "rb_red", "rb_rio", "pels_feedback", "fifo"):
            yield p


def _semantic(name: str, data: dict[str, Any]) -> Iterator[Case]:
    qdiscs = list(_qdisc_tables(data))
    for q in qdiscs:
        t = _get(data, q)
        where = _dotted(q)
        kind = t["kind"]
        if kind == "red":
            d = _set(data, q + ("min_th",), 60)
            yield Case(name, "thresholds-reversed", where, ("min_th",), data=_set(d, q + ("max_th",), 20))
        if kind == "rio":
            for c in ("class1", "class2", "class3"):
                yield Case(name, "thresholds-reversed", f"{where}.{c}", ("min_th", c),
                           data=_set(data, q + (c,), {"min_th": 40, "max_th": 10, "max_p": 0.1}))
        if kind in ("prio", "wrr"):
            nb = len(t.get("bands", []))
            yield Case(name, "band-missing", where, ("default_band", "classifier"),
                       data=_set(data, q + ("classifier",), {"by": "class", "default_band": nb + 3}))
            yield Case(name, "band-missing", where, ("map", "classifier"),
                       data=_set(data, q + ("classifier",), {"by": "class", "map": [[3, nb]]}))
            yield Case(name, "zero", f"{where}.bands", ("bands",), data=_set(data, q + ("bands",), []))
        if kind in ("red", "rio", "droptail", "sqf", "drr", "pfq", "tbf", "rb_red", "rb_rio"):
            yield Case(name, "zero", f"{where}.limit", ("limit",), data=_set(data, q + ("limit",), "0p"))
            yield Case(name, "wrong-type", f"{where}.limit", ("limit",),
                       data=_set(data, q + ("limit",), {"packets": 5, "bytes": 5000}))
        if kind in ("rb_red", "rb_rio"):
            yield Case(name, "huge", f"{where}.target_queue", ("target_queue",),
                       data=_set(data, q + ("target_queue",), 1e9))
        yield Case(name, "unknown-kind", where, (where,), data=_set(data, q + ("kind",), "rde"))
    routers = 2 + len(data["topology"].get("chain", []))
    for i, g in enumerate(data["flows"]):
        base = ("flows", i)
        for path in ([0, routers + 1], [routers, 0], [-1, 1], [0, 0]):
            yield Case(name, "path-missing", f"flows.{i}.path={path}", ("path",),
                       data=_set(data, base + ("path",), path))
        yield Case(name, "period-outside", f"flows.{i}.stop", ("stop",),
                   data=_set(_set(data, base + ("start",), "5s"), base + ("stop",), "1s"))
        if isinstance(g.get("app"), dict) and g["app"].get("kind") in ("video", "audio", "stream"):
            yield Case(name, "path-missing", f"flows.{i}.app.trace", ("trace",),
                       data=_set(data, base + ("app",), {**g["app"], "trace": "/nonexistent/trace.csv"}))
        if len(data["flows"]) > 1 and i == 1:
            yield Case(name, "wrong-type", "flows names repeated", ("unique", data["flows"][0]["name"]),
                       data=_set(data, base + ("name",), data["flows"][0]["name"]))
    for period in (["0s", "0s"], ["5s", "1s"], ["0s", "99999s"]):
        yield Case(name, "period-outside", f"metrics.periods={period}", ("metrics.periods",),
                   data=_set(data, ("metrics",), {"periods": [period]}))
    yield Case(name, "missing-required", "flows=[]", ("flows",), data=_set(data, ("flows",), []))


def _files(name: str, text: str) -> Iterator[Case]:
    where_src = ("scenario.toml", "TOML")
    for frac in (0.25, 0.5, 0.75):
        cut = text[: int(len(text) * frac)]
        # Truncation may happen to end at a line boundary and still parse; cut inside a string.
        yield Case(name, "broken-toml", f"truncated@{frac}", where_src, text=cut + '\nname = "')
    yield Case(name, "broken-toml", "unclosed-table", where_src, text="[topology\n" + text)
    yield Case(name, "broken-toml", "duplicate-key", where_src, text=text + '\nname = "again"\n')
    yield Case(name, "broken-toml", "binary", where_src, text="\x00\x01\x02" + text[:50])
    yield Case(name, "broken-toml", "empty", ("name", "duration", "topology", "flows"), text="", problems=4)
    yield Case(name, "extends-cycle", "self", ("cycle",), text='extends = "scenario.toml"\n' + text)
    yield Case(name, "extends-cycle", "pair", ("cycle",), text='extends = "b.toml"\n' + text,
               extra={"b.toml": 'extends = "scenario.toml"\n'})
    yield Case(name, "extends-missing", "file", ("missing.toml", "no such"), text='extends = "missing.toml"\n' + text)
    yield Case(name, "extends-missing", "type", ("extends",), text="extends = 3\n" + text)


def corpus() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(BUILTIN_DIR.rglob("*.toml")):
        if path.parent.name == "sweeps":
            continue  # sweep files (aqmlab sweep), not scenarios: tests/test_sweep.py checks their errors
        name = str(path.relative_to(BUILTIN_DIR).with_suffix(""))
        data = read_scenario_file(path)
        text = tomli_w.dumps(data)
        for gen in (_per_leaf(name, data), _per_table(name, data), _semantic(name, data), _files(name, text)):
            cases.extend(gen)
    return cases


if __name__ == "__main__":
    from collections import Counter

    c = corpus()
    print(len(c), Counter(x.kind for x in c).most_common())
