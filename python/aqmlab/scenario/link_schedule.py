"""A piecewise rate and delay schedule on a link (aqmlab-core `link/schedule.rs`): steps that
change the link's rate, its delay or both at given times, as `tc qdisc change` scripts do,
written in the scenario or read from a CSV file, optionally repeating with a period.

The engines take the schedule resolved: every step with both values, the first at 0 with the
link's own `rate` and `delay` (which a step at 0 overrides), times strictly increasing (steps
at the same time merge, the later's values winning). A link that follows a delivery trace takes
delay steps alone (`resolve` without a rate): the trace decides when it sends."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from aqmlab.scenario.base import Strict
from aqmlab.units import Duration, Rate, format_ns

#: The CSV file's columns (a header line names them, in any order).
CSV_COLUMNS = ("time", "rate", "delay")


class ScheduleStep(Strict):
    """From `at` on (since the run's start, or each period's start), the link sends at `rate`
    and delays by `delay`; a value left out keeps the one before."""

    at: Duration = Field(..., ge=0, description="when the step takes effect, e.g. \"5s\"")
    rate: Rate | None = Field(None, ge=0, description="the link's rate from then on, e.g. \"2Mbps\"; \"0bps\" is an "
                                                      "outage (nothing starts until a later step's rate); default: "
                                                      "unchanged")
    delay: Duration | None = Field(None, ge=0, description="the one-way delay from then on, e.g. \"80ms\"; default: "
                                                           "unchanged")

    @model_validator(mode="after")
    def _changes_something(self) -> ScheduleStep:
        """a step gives a rate, a delay or both."""
        if self.rate is None and self.delay is None:
            raise ValueError("a step changes the rate, the delay or both; give rate or delay")
        return self


class ScheduleError(ValueError):
    """A schedule that cannot be used; the message says where (field, or file and line)."""


def resolve(steps: list[tuple[int, int | None, int | None]], rate: int | None, delay: int,
            period: int | None) -> dict[str, Any]:
    """The engines' schedule from `(at, rate, delay)` steps in time order (None: unchanged),
    starting from the link's `rate` and `delay`. `rate` None: the link follows a delivery
    trace, which decides when it sends, so its steps change the delay alone and every resolved
    step's rate is 0, which the engines read as "no rate of its own" (aqmlab-core
    `ScheduleConfig::delay_only`); there is no outage to check."""
    follows_trace = rate is None
    if follows_trace:
        for at, r, _ in steps:
            if r is not None:
                raise ScheduleError(f"the step at {format_ns(at)} gives a rate; a trace link's schedule changes "
                                    "its delay only (the trace decides when it sends)")
    merged: list[dict[str, int]] = [{"at_ns": 0, "rate_bps": rate or 0, "delay_ns": delay}]
    for at, r, d in steps:
        if at < merged[-1]["at_ns"]:
            raise ScheduleError(f"step at {format_ns(at)} is before the step before it "
                                f"({format_ns(merged[-1]['at_ns'])}); steps go in time order")
        if at > merged[-1]["at_ns"]:
            merged.append(dict(merged[-1], at_ns=at))
        if r is not None:
            merged[-1]["rate_bps"] = r
        if d is not None:
            merged[-1]["delay_ns"] = d
    if not follows_trace and merged[0]["rate_bps"] == 0:
        raise ScheduleError("the rate at 0s is 0: a link starts sending (a later step may be an outage)")
    out: dict[str, Any] = {"steps": merged}
    if period is not None:
        if period <= merged[-1]["at_ns"]:
            raise ScheduleError(f"schedule_period ({format_ns(period)}) must be after the last step "
                                f"({format_ns(merged[-1]['at_ns'])})")
        out["period_ns"] = period
    elif not follows_trace and merged[-1]["rate_bps"] == 0:
        raise ScheduleError(f"the outage from {format_ns(merged[-1]['at_ns'])} never ends: add a later step "
                            "with a positive rate, or a schedule_period")
    return out


def read_schedule_csv(path: str) -> list[tuple[int, int | None, int | None]]:
    """The steps of the CSV file at `path`: a header naming the columns time, rate and delay, then
    one row per step, each cell written as in a scenario ("5s", "2Mbps", "80ms"; an empty rate or
    delay cell keeps the value before). Raises ScheduleError naming the file (and the line and
    column when the content is at fault); FileNotFoundError when there is no file."""
    parsers = {"time": TypeAdapter(Duration), "rate": TypeAdapter(Rate), "delay": TypeAdapter(Duration)}
    try:
        text = Path(path).read_text()
    except UnicodeDecodeError:
        raise ScheduleError(f"{path}: not a text file (a CSV with columns time, rate, delay)") from None
    rows = [(n, row) for n, row in enumerate(csv.reader(text.splitlines()), start=1)
            if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")]
    if not rows:
        raise ScheduleError(f"{path}: empty schedule file (a header line time,rate,delay, then one line per step)")
    header_line, header = rows[0]
    names = [c.strip() for c in header]
    if "time" not in names or len(set(names)) != len(names) or not set(names) <= set(CSV_COLUMNS) or len(names) < 2:
        raise ScheduleError(f"{path} line {header_line}: the header must name the column time and one or both of "
                            f"rate and delay (in any order), not {', '.join(names)}")
    if len(rows) == 1:
        raise ScheduleError(f"{path}: no step after the header (one line per step: time,rate,delay)")
    steps: list[tuple[int, int | None, int | None]] = []
    for n, row in rows[1:]:
        if len(row) != len(names):
            raise ScheduleError(f"{path} line {n}: {len(row)} cells, the header names {len(names)}")
        values: dict[str, int | None] = {}
        for name, cell in zip(names, row, strict=True):
            cell = cell.strip()
            if cell == "" and name != "time":
                values[name] = None
                continue
            try:
                values[name] = parsers[name].validate_python(cell)
            except ValidationError as e:
                why = e.errors()[0]["msg"].removeprefix("Value error, ")
                raise ScheduleError(f"{path} line {n} column {name}: {cell!r} is not a "
                                    f"{'duration' if name != 'rate' else 'rate'} ({why})") from None
        at = values["time"]
        assert at is not None
        values.setdefault("rate", None)  # a column the header leaves out: unchanged in every step
        values.setdefault("delay", None)
        if steps and at < steps[-1][0]:
            raise ScheduleError(f"{path} line {n} column time: {format_ns(at)} goes back in time "
                                f"(the line before is at {format_ns(steps[-1][0])})")
        if values["rate"] is None and values["delay"] is None:
            raise ScheduleError(f"{path} line {n}: a step changes the rate, the delay or both; this one neither")
        steps.append((at, values["rate"], values["delay"]))
    return steps
