"""Unit-bearing scenario values.

Scenario files write quantities as strings with units ("25Mbps", "20ms", "150KB", "100p").
The parsing itself lives in Rust (``aqmlab-core::units``) so that both layers accept exactly
the same spellings; these pydantic types call it and keep the parsed integer.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

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


def format_ns(ns: int) -> str:
    """Inverse of parse_time, for resolved scenario files (exact, in the largest whole unit)."""
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"


#: Integer nanoseconds, written "20ms".
Duration = Annotated[int, BeforeValidator(_parser(_core.parse_time, "duration"))]
#: Integer bits per second, written "25Mbps".
Rate = Annotated[int, BeforeValidator(_parser(_core.parse_rate, "rate"))]
#: Integer bytes, written "1500B" or "150KB".
Size = Annotated[int, BeforeValidator(_parser(_core.parse_bytes, "size"))]
#: {"packets": n} or {"bytes": n}, written "100p" or "150KB".
Limit = Annotated[dict[str, int], BeforeValidator(_limit), PlainSerializer(lambda v: v)]
