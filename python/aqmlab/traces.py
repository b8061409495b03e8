"""Delivery traces in mahimahi's format (one line per opportunity to send 1500 bytes, in whole
milliseconds, looping): reading a file a scenario names, generating one from a capacity model,
writing one for mahimahi or a scenario.

The parsing and the generation are aqmlab-core's (`link/trace.rs`, `link/synthetic.rs`, through
`_core.parse_delivery_trace` and `_core.synthetic_trace`), so a file is accepted or refused,
and a model drawn, by the same rules whichever engine runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from aqmlab import _core
from aqmlab.scenario.link_schedule import ScheduleError, read_schedule_csv
from aqmlab.scenario.link_traces import ConstantTrace, MarkovTrace, SquareTrace, SyntheticTrace


class TraceFileError(ValueError):
    """A trace a scenario names cannot be used: `field` is the scenario field that names it,
    `message` why (naming the file, and the line when the content is at fault)."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def read_delivery_trace(path: str, field: str) -> list[int]:
    """The opportunity times (ms) of the trace file at `path`, named by scenario field `field`."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise TraceFileError(field, f"no such trace file: {path}") from None
    except UnicodeDecodeError:
        raise TraceFileError(field, f"{path}: not a text file (a mahimahi trace is lines of digits)") from None
    except OSError as e:
        raise TraceFileError(field, f"{path}: {e.strerror}") from None
    try:
        return _core.parse_delivery_trace(text, path)
    except ValueError as e:
        raise TraceFileError(field, str(e)) from None


def read_link_schedule(path: str, field: str) -> list[tuple[int, int | None, int | None]]:
    """The steps (at, rate, delay; None unchanged) of the schedule CSV file at `path`, named by
    scenario field `field` (`aqmlab.scenario.link_schedule.read_schedule_csv`)."""
    try:
        return read_schedule_csv(path)
    except FileNotFoundError:
        raise TraceFileError(field, f"no such schedule file: {path}") from None
    except OSError as e:
        raise TraceFileError(field, f"{path}: {e.strerror}") from None
    except ScheduleError as e:
        raise TraceFileError(field, str(e)) from None


def synthetic_opportunities(model: ConstantTrace | SquareTrace | MarkovTrace, seed: int, link: str,
                            field: str) -> list[int]:
    """One loop of a generated trace, drawn from stream `link/<link>/trace` of `seed`."""
    try:
        return _core.synthetic_trace(json.dumps(model.engine_spec()), seed, link)
    except ValueError as e:
        raise TraceFileError(field, str(e)) from None


def write_synthetic_trace(model: dict[str, Any] | ConstantTrace | SquareTrace | MarkovTrace, path: str | Path,
                          seed: int = 1, link: str = "bottleneck") -> list[int]:
    """Writes one loop of a generated trace to `path` in mahimahi's format and returns its
    opportunity times (ms). `model` is written as in a scenario (`{"kind": "square", "high":
    "24Mbps", "period": "1s"}`); with the same `seed` and `link` ("bottleneck", "reverse",
    "hop1", ...) the file holds the trace a scenario's link with that model follows."""
    try:
        parsed: ConstantTrace | SquareTrace | MarkovTrace = TypeAdapter(SyntheticTrace).validate_python(model)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"trace model {where}: {first['msg'].removeprefix('Value error, ')}") from None
    opportunities = synthetic_opportunities(parsed, seed, link, "model")
    Path(path).write_text("".join(f"{t}\n" for t in opportunities))
    return opportunities
