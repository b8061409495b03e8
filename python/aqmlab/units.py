"""Unit-bearing scenario values.

Scenario files write quantities as strings with units ("25Mbps", "20ms", "150KB", "100p").
The parsing itself lives in Rust (``aqmlab-core::units``) so that both layers accept exactly
the same spellings; these pydantic types call it and keep the parsed integer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from aqmlab import _core


def _parser(fn, what: str):
    def parse(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, str):
            raise ValueError(f"{what} must be a string with a unit, e.g. {_EXAMPLES[what]}, got {value!r}")
        return fn(value)

    return parse


_EXAMPLES = {"duration": '"20ms"', "rate": '"25Mbps"', "size": '"1500B"', "queue limit": '"100p" or "150KB"'}


def _limit(value: Any) -> dict[str, int]:
    if isinstance(value, dict):
        # The resolved form a results directory's scenario.toml holds: {packets = 100}.
        kind, amount = next(iter(value.items())) if len(value) == 1 else (None, None)
        if kind not in ("packets", "bytes") or isinstance(amount, bool) or not isinstance(amount, int):
            raise ValueError(f"queue limit must be a string such as {_EXAMPLES['queue limit']}, got {value!r}")
    else:
        kind, amount = _parser(_core.parse_limit, "queue limit")(value)
    if amount < 1:
        raise ValueError("queue limit must hold at least 1 packet or 1 byte")
    return {kind: amount}


def written(text: str) -> Any:
    """A quantity field's default as a scenario file writes it (``Field(written("20ms"))``).

    The field is typed as what it holds (``Duration`` is an ``int``) while its default stays in
    the written form, which the reference, the JSON Schema and `aqmlab list` show as is and which
    the field's validator parses like any user value (the models set ``validate_default``). The
    return type is ``Any`` because the written form is not yet the held type: this is the one
    place that says so, instead of a type-ignore on every field."""
    return text


def format_ns(ns: int) -> str:
    """Inverse of parse_time, for resolved scenario files (exact, in the largest whole unit)."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


@dataclass(frozen=True)
class Unit:
    """How a unit-bearing field is written in a scenario file and what it holds once parsed;
    carried in the type's metadata so that the reference and `aqmlab list` read it from there."""

    #: What the quantity is ("duration").
    quantity: str
    #: The spellings a file may use.
    written: str
    #: The integer the model holds after parsing.
    held: str
    example: str


DURATION = Unit("duration", "s, ms, us, ns", "integer ns", "20ms")
RATE = Unit("rate", "bps, kbps, Mbps, Gbps", "integer bit/s", "25Mbps")
SIZE = Unit("size", "B, KB, MB, GB (SI), KiB, MiB, GiB", "integer bytes", "1500B")
LIMIT = Unit("queue limit", "p (packets) or a size", "{packets = n} or {bytes = n}", "100p")


def _string_schema(unit: Unit) -> dict[str, Any]:
    return {"type": "string", "description": f"a {unit.quantity} with a unit ({unit.written})",
            "examples": [unit.example]}


#: Integer nanoseconds, written "20ms".
Duration = Annotated[int, BeforeValidator(_parser(_core.parse_time, "duration")), DURATION,
                     WithJsonSchema(_string_schema(DURATION))]
#: Integer bits per second, written "25Mbps".
Rate = Annotated[int, BeforeValidator(_parser(_core.parse_rate, "rate")), RATE, WithJsonSchema(_string_schema(RATE))]
#: Integer bytes, written "1500B" or "150KB".
Size = Annotated[int, BeforeValidator(_parser(_core.parse_bytes, "size")), SIZE, WithJsonSchema(_string_schema(SIZE))]
#: {"packets": n} or {"bytes": n}, written "100p" or "150KB".
Limit = Annotated[dict[str, int], BeforeValidator(_limit), PlainSerializer(lambda v: v), LIMIT,
                  WithJsonSchema({"anyOf": [
                      _string_schema(LIMIT),
                      {"type": "object", "minProperties": 1, "maxProperties": 1, "additionalProperties": False,
                       "properties": {"packets": {"type": "integer", "minimum": 1},
                                      "bytes": {"type": "integer", "minimum": 1}}}]})]
