"""Why a scenario cannot run, as data (:class:`Problem`), and pydantic's errors turned into
problems at the fields the user wrote."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from aqmlab.scenario.applications import APP_MODELS
from aqmlab.scenario.disciplines import QDISC_MODELS
from aqmlab.scenario.link_traces import TRACE_MODELS


@dataclass(frozen=True)
class Problem:
    """One reason a scenario cannot run, as data: where it was read (a file, "--set"), the field
    (dotted, as the file spells it; "" for the file as a whole), the kind (pydantic's error
    type, "value_error" for a model's own check, "engine:<kind>" when the simulator refused)
    and the message."""

    origin: str
    path: str
    kind: str
    message: str

    def __str__(self) -> str:
        return ": ".join(part for part in (self.origin, self.path, self.message) if part)


class ScenarioError(ValueError):
    """A scenario that cannot be run: `problems` as data, `lines` one message per problem."""

    def __init__(self, lines: Sequence[str | Problem]):
        self.problems = [p if isinstance(p, Problem) else Problem("", "", "other", p) for p in lines]
        self.lines = [str(p) for p in self.problems]
        super().__init__("\n".join(self.lines))


def _format_errors(err: ValidationError) -> list[str]:
    return [str(p) for p in _problems(err)]


def _problems(err: ValidationError, origin: str = "") -> list[Problem]:
    """pydantic's errors as problems at the fields the user wrote, one per problem."""
    problems = []
    seen_unions = set()
    for e in err.errors():
        union = _union_field(e["loc"])
        if union is not None:
            # A value that fits no member of a union ("20ms" or ["1ms", "40ms"]) is one
            # problem, not one per member: report the first member's complaint.
            if union in seen_unions:
                continue
            seen_unions.add(union)
        loc = ".".join(_user_location(e["loc"]))
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "union_tag_invalid":
            ctx = e.get("ctx", {})
            msg = f"unknown kind {ctx.get('tag')!r}; allowed: {ctx.get('expected_tags')}"
        elif e["type"] == "union_tag_not_found":
            models = QDISC_MODELS if loc.endswith("qdisc") else TRACE_MODELS if loc.endswith("trace") else APP_MODELS
            msg = "missing 'kind'; allowed: " + ", ".join(models)
        problems.append(Problem(origin, loc, e["type"], msg))
    return problems


_UNION_FIELDS = {"qdisc": QDISC_MODELS, "access_qdisc": QDISC_MODELS, "app": APP_MODELS, "trace": TRACE_MODELS}


def _is_member_tag(part: Any) -> bool:
    """Whether a location part is pydantic's name for a union member, not a field."""
    return isinstance(part, str) and ("[" in part or part in ("int", "str", "function-before"))


def _union_field(loc: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The location of the non-discriminated union an error belongs to, if any."""
    for i, part in enumerate(loc):
        if _is_member_tag(part):
            return tuple(loc[:i])
    return None


def _user_location(loc: tuple[Any, ...]) -> list[str]:
    """The error location as the user wrote it: pydantic inserts the discriminator tag of a
    union ("...qdisc.red.min_th") and the type of a tuple-or-scalar field; drop those."""
    out: list[str] = []
    for part in loc:
        if out and out[-1] in _UNION_FIELDS and part in _UNION_FIELDS[out[-1]]:
            continue
        if _is_member_tag(part):
            continue
        out.append(str(part))
    return out
