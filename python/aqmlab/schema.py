"""What the scenario models say about each field, read back from their pydantic metadata.

The models in the package :mod:`aqmlab.scenario` are the single definition of the scenario file: each
field's type, unit (:class:`aqmlab.units.Unit` in the type, or ``json_schema_extra={"unit":
...}`` on a plain number), default, range (``ge``/``gt``/``le``/``lt``, lengths, ``Literal``
values), description, and the cross-field checks (the docstrings of the models' validators).
`aqmlab list`, docs/scenario-reference.md and docs/scenario.schema.json are all derived here.

Regenerate both files after changing a model (`aqmlab schema [--json]` prints them)::

    python -m aqmlab.schema --write docs
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from aqmlab import scenario as sc
from aqmlab.units import Unit

#: The command that rewrites the generated files (printed by the staleness test).
REGENERATE = "python -m aqmlab.schema --write docs"
REFERENCE_FILE = "scenario-reference.md"
JSON_SCHEMA_FILE = "scenario.schema.json"


@dataclass(frozen=True)
class FieldDoc:
    """One field as the reference and `aqmlab list` show it."""

    path: str
    type: str
    unit: str
    default: str
    allowed: str
    description: str


# ---- reading one field ------------------------------------------------------------------


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    """`X | None` -> (X, True)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) < len(typing.get_args(annotation)):
            # A Union built at run time from a tuple of types: `|` has no such form (ruff UP007), and
            # mypy reads a subscripted Union as a type alias, which a run-time tuple cannot be.
            union = typing.Union[tuple(args)]  # type: ignore[valid-type]  # noqa: UP007
            return (args[0] if len(args) == 1 else union), True
    return annotation, False


def _unit_of(annotation: Any) -> Unit | None:
    """The unit carried by a quantity type, looking through lists, tuples and unions."""
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in annotation.__metadata__:
            if isinstance(meta, Unit):
                return meta
    for arg in typing.get_args(annotation):
        unit = _unit_of(arg)
        if unit is not None:
            return unit
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    annotation, _ = _strip_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _is_union_of_models(annotation: Any) -> str | None:
    """"qdisc" or "app" when the annotation is one of the discriminated unions."""
    annotation, _ = _strip_optional(annotation)
    if annotation is sc.Qdisc or _strip_annotated(annotation) is _strip_annotated(sc.Qdisc):
        return "qdisc"
    if annotation is sc.App or _strip_annotated(annotation) is _strip_annotated(sc.App):
        return "app"
    return None


def _strip_annotated(annotation: Any) -> Any:
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is typing.Annotated else annotation


def _type_text(annotation: Any) -> str:
    annotation, _ = _strip_optional(annotation)
    union = _is_union_of_models(annotation)
    if union == "qdisc":
        return "discipline table"
    if union == "app":
        return "application table"
    unit = _unit_of(annotation) if typing.get_origin(annotation) is typing.Annotated else None
    if unit is not None:
        return unit.quantity
    annotation = _strip_annotated(annotation)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return "string"
    if origin is list:
        return f"list of {_type_text(args[0])}"
    if origin is tuple:
        return "[" + ", ".join(_type_text(a) for a in args) + "]"
    if origin is dict:
        return f"table of {_type_text(args[0])} to {_type_text(args[1])}"
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_text(a) for a in args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(annotation, str(annotation))


def _field_unit(f: FieldInfo) -> Unit | None:
    """A plain quantity field keeps its type's metadata on the FieldInfo, a nested one in the
    annotation (`Duration | None`, `list[Rate]`)."""
    return next((m for m in f.metadata if isinstance(m, Unit)), None) or _unit_of(f.annotation)


def _unit_text(f: FieldInfo) -> str:
    unit = _field_unit(f)
    if unit is not None:
        return f"{unit.written} (e.g. \"{unit.example}\")"
    extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
    return str(extra.get("unit", ""))


def _number(x: Any) -> str:
    if isinstance(x, int) and not isinstance(x, bool) and x >= 2**16 and (x & (x - 1)) == 0:
        return f"2^{x.bit_length() - 1}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def _bounds_text(metadata: list[Any], items: str = "item") -> str:
    lo = hi = ""
    parts = []
    for m in metadata:
        if isinstance(m, annotated_types.Ge):
            lo = f"[{_number(m.ge)}"
        elif isinstance(m, annotated_types.Gt):
            lo = f"({_number(m.gt)}"
        elif isinstance(m, annotated_types.Le):
            hi = f"{_number(m.le)}]"
        elif isinstance(m, annotated_types.Lt):
            hi = f"{_number(m.lt)})"
        elif isinstance(m, annotated_types.MinLen):
            parts.append(f"at least {m.min_length} {items}{'s' if m.min_length != 1 else ''}")
        elif isinstance(m, annotated_types.MaxLen):
            parts.append(f"at most {m.max_length} items")
    if lo and hi:
        parts.insert(0, f"{lo}, {hi}")
    elif lo:
        parts.insert(0, (">= " if lo[0] == "[" else "> ") + lo[1:])
    elif hi:
        parts.insert(0, ("<= " if hi[-1] == "]" else "< ") + hi[:-1])
    return "; ".join(parts)


def _allowed_text(f: FieldInfo) -> str:
    annotation, _ = _strip_optional(f.annotation)
    annotation = _strip_annotated(annotation)
    if typing.get_origin(annotation) is Literal:
        return ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in typing.get_args(annotation))
    if typing.get_origin(annotation) is list:
        item = _strip_annotated(typing.get_args(annotation)[0])
        if typing.get_origin(item) is Literal:
            values = ", ".join(f'"{v}"' for v in typing.get_args(item))
            return "; ".join(p for p in (f"each one of {values}", _bounds_text(f.metadata)) if p)
    return _bounds_text(f.metadata, "character" if annotation is str else "item")


def _value_text(value: Any) -> str:
    """A default as a scenario file would write it."""
    if isinstance(value, BaseModel):
        if not value.model_fields_set:
            return "(the table's defaults)"
        return "{" + ", ".join(f"{k} = {_value_text(v)}" for k, v in _set_fields(value)) + "}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("packets", "bytes"):
        kind, amount = next(iter(value.items()))
        return f'"{amount}{"p" if kind == "packets" else "B"}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) + "}"
    if value is None:
        return "none"
    return _number(value)


def _set_fields(model: BaseModel) -> list[tuple[str, Any]]:
    """The fields a default instance was built with (limits shown in their parsed form)."""
    return [(k, getattr(model, k)) for k in type(model).model_fields if k in model.model_fields_set]


def _default_text(f: FieldInfo) -> str:
    if f.is_required():
        return "required"
    if f.default_factory is not None:
        return _value_text(f.default_factory())  # type: ignore[call-arg]
    return _value_text(f.default)


def field_docs(model: type[BaseModel], prefix: str = "") -> list[FieldDoc]:
    """Every field of `model`, with nested tables flattened into dotted paths (`[]` marks a
    list item); discipline and application tables and TCP are documented once, on their own."""
    rows = []
    for name, f in model.model_fields.items():
        if name == "kind" and typing.get_origin(f.annotation) is Literal:
            continue
        path = f"{prefix}{name}"
        unit = next((m for m in f.metadata if isinstance(m, Unit)), None)
        rows.append(FieldDoc(path, unit.quantity if unit else _type_text(f.annotation), _unit_text(f), _default_text(f),
                             _allowed_text(f), f.description or ""))
        nested, item = _model_of(f.annotation), ""
        inner = _strip_annotated(_strip_optional(f.annotation)[0])
        # A list of tables, alone or beside another form (`schedule`: steps or a file name).
        forms = typing.get_args(inner) if typing.get_origin(inner) in (typing.Union, types.UnionType) else (inner,)
        lists = [a for a in forms if typing.get_origin(a) is list]
        if nested is None and lists:
            nested, item = _model_of(typing.get_args(lists[0])[0]), "[]"
        if nested is not None and nested is not sc.Tcp:
            rows.extend(field_docs(nested, f"{path}{item}."))
    return rows


def checks(model: type[BaseModel]) -> list[str]:
    """The cross-field rules of `model`: the docstrings of its after-validators."""
    found = []
    for dec in model.__pydantic_decorators__.model_validators.values():
        if dec.info.mode == "after" and dec.func.__doc__:
            found.append(" ".join(dec.func.__doc__.split()))
    return found


def kind_values(model: type[BaseModel]) -> list[str]:
    return list(typing.get_args(model.model_fields["kind"].annotation))


#: What `aqmlab list SECTION` can show, in the order `aqmlab list` shows them all.
LIST_SECTIONS = ("fields", "disciplines", "applications", "tcp", "traces")


@dataclass(frozen=True)
class ListedTable:
    """One table of `aqmlab list`: a JSON key, the title line and the fields."""

    key: str
    title: str
    rows: list[FieldDoc]


def _one_line(doc: str | None) -> str:
    """A docstring as one line (its source indentation is not part of the text)."""
    return " ".join((doc or "").split())


def listed_tables(section: str) -> list[ListedTable]:
    """The tables of one `aqmlab list` section, from the same models as the reference."""
    if section == "fields":
        return [ListedTable("fields", "scenario fields (every table of a scenario file; `qdisc` and `app` tables "
                            "are listed by kind below)", field_docs(sc.Scenario))]
    if section == "tcp":
        return [ListedTable("tcp", f"tcp (flows.app.tcp of bulk, stream and abr) - {_one_line(sc.Tcp.__doc__)}",
                            field_docs(sc.Tcp))]
    title, models, prefix = {
        "disciplines": ("queue disciplines (qdisc.kind)", sc.QDISC_MODELS, "qdisc"),
        "applications": ("applications (flows.app.kind)", sc.APP_MODELS, "app"),
        "traces": ("generated link traces (trace.kind)", sc.TRACE_MODELS, "trace"),
    }[section]
    return [ListedTable(f"{prefix}/{kinds[0]}",
                        f"{title}: {' / '.join(kinds)} - {_one_line(model.__doc__)}", field_docs(model))
            for model, kinds in _distinct_models(models).items()]


# ---- the reference ----------------------------------------------------------------------


def _table(rows: list[FieldDoc]) -> list[str]:
    out = ["| field | type | unit | default | allowed | description |", "|---|---|---|---|---|---|"]
    for r in rows:
        cells = [f"`{r.path}`", r.type, r.unit, f"`{r.default}`" if r.default != "required" else "required",
                 r.allowed, r.description]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return out


def _section(title: str, model: type[BaseModel], prefix: str = "", level: str = "##") -> list[str]:
    lines = [f"{level} {title}", ""]
    if model.__doc__:
        lines += [" ".join(model.__doc__.split()), ""]
    lines += _table(field_docs(model, prefix))
    rules = [r for m in _nested_models(model) for r in checks(m)]
    if rules:
        lines += ["", "Checks across fields: " + " ".join(rules)]
    return lines + [""]


def _nested_models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """`model` and the tables documented inside its section, in field order."""
    found = [model]
    for f in model.model_fields.values():
        inner = _strip_annotated(_strip_optional(f.annotation)[0])
        nested = _model_of(inner) or (
            _model_of(typing.get_args(inner)[0]) if typing.get_origin(inner) is list else None)
        if nested is not None and nested is not sc.Tcp and nested not in found:
            found += [m for m in _nested_models(nested) if m not in found]
    return found


def _distinct_models(models: Mapping[str, type[BaseModel]]) -> dict[type[BaseModel], list[str]]:
    """Model -> the kinds that select it ("drr" and its alias "fq")."""
    by_model: dict[type[BaseModel], list[str]] = {}
    for kind, model in models.items():
        by_model.setdefault(model, []).append(kind)
    return by_model


def reference_markdown() -> str:
    lines = [
        "# Scenario file reference",
        "",
        f"Generated from the pydantic models in `python/aqmlab/scenario/` by `{REGENERATE}`;",
        "do not edit by hand (tests/test_schema.py fails when this file is out of date).",
        "The same models give `aqmlab list` and the JSON Schema docs/scenario.schema.json.",
        "",
        "Quantities are strings with a unit: durations `\"20ms\"` (s, ms, us, ns), rates `\"25Mbps\"`",
        "(bps, kbps, Mbps, Gbps), sizes `\"1500B\"` (B, KB, MB, GB are SI; KiB, MiB, GiB binary), queue",
        "limits `\"100p\"` (packets) or a size. A path `a.b[].c` means key `c` of every item of the list",
        "`b` in table `a`. Unknown keys are errors. `allowed` gives ranges as intervals: `[0, 1)`",
        "includes 0, excludes 1.",
        "",
        "Where the checks live: these models are the one definition of the scenario file. The",
        "simulator (crates/aqmlab-sim config.rs) reads the normalized JSON the models produce and",
        "re-checks only what guards its own invariants; a test (tests/test_schema.py) proves that",
        "every scenario the simulator would refuse is refused here first.",
        "",
        "Why the Python side is the source: the file a user writes has units as strings, defaults",
        "that depend on other fields and names (`flows.<group>`), and its errors must name the field as",
        "written; the models hold all of that already and report there. The simulator's serde types",
        "describe a different document, the normalized one (integer ns, bit/s, bytes), so a JSON",
        "Schema generated from them could not document or check the file. The emulator and sweeps",
        "validate with the same models. The Rust types keep `deny_unknown_fields`, so a mismatch",
        "between the two layers fails loudly (`ConfigError.kind == \"shape\"`).",
        "",
    ]
    lines += _section("Scenario (top level)", sc.Scenario)
    lines += ["## Disciplines (`qdisc`, `access_qdisc`, `bands[]`)", "",
              "Every `qdisc` table names its discipline with `kind`; the fields below are relative "
              "to that table.", ""]
    for model, kinds in _distinct_models(sc.QDISC_MODELS).items():
        title = " / ".join(f"`{k}`" for k in kinds)
        lines += _section(f"kind = {title}", model, level="###")
    lines += ["## Applications (`flows[].app`)", "", "Every `app` table names its application with `kind`.", ""]
    for model, kinds in _distinct_models(sc.APP_MODELS).items():
        lines += _section(f"kind = {' / '.join(f'`{k}`' for k in kinds)}", model, level="###")
    lines += _section("TCP (`flows[].app.tcp` of `bulk`, `stream` and `abr`)", sc.Tcp)
    lines += ["## Generated delivery traces (a link's `trace` as a table)", "",
              "A link's `trace` is a mahimahi trace file or one of these models, named by `kind`.", ""]
    for model, kinds in _distinct_models(sc.TRACE_MODELS).items():
        lines += _section(f"kind = {' / '.join(f'`{k}`' for k in kinds)}", model, level="###")
    return "\n".join(lines).rstrip() + "\n"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (as TOML parses it), for editors."""
    schema = sc.Scenario.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "aqmlab scenario"
    return schema


def json_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def generated_files() -> dict[str, str]:
    """File name in docs/ -> its generated content."""
    return {REFERENCE_FILE: reference_markdown(), JSON_SCHEMA_FILE: json_schema_text()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aqmlab.schema", description=__doc__.split("\n")[0])
    parser.add_argument("--write", metavar="DOCS_DIR", type=Path,
                        help=f"write {REFERENCE_FILE} and {JSON_SCHEMA_FILE} into this folder")
    parser.add_argument("--json", action="store_true", help="print the JSON Schema instead of the reference")
    args = parser.parse_args(argv)
    if args.write:
        for name, text in generated_files().items():
            (args.write / name).write_text(text)
        return 0
    sys.stdout.write(json_schema_text() if args.json else reference_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
