"""Synthetic delivery traces a link can follow instead of a trace file: a constant capacity, a
square wave, or a Markov chain of two or three capacity states (aqmlab-core
`link/synthetic.rs`, which generates them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from aqmlab.scenario.base import Strict
from aqmlab.units import Duration, Rate, format_ns, written

MS = 1_000_000


def _whole_ms(name: str, ns: int) -> int:
    """`ns` in milliseconds: a trace's resolution is 1 ms (mahimahi's format)."""
    if ns <= 0 or ns % MS:
        raise ValueError(f"{name} ({format_ns(ns)}) must be a positive whole number of milliseconds")
    return ns // MS


class ConstantTrace(Strict):
    """The same capacity all the time."""

    kind: Literal["constant"] = Field(..., description="constant capacity")
    rate: Rate = Field(..., gt=0, description="capacity, e.g. \"12Mbps\" (one 1500-byte packet per ms)")
    length: Duration = Field(written("1s"), description="one loop of the trace (whole ms)")

    @model_validator(mode="after")
    def _ms(self) -> ConstantTrace:
        """length a positive whole number of ms."""
        _whole_ms("length", self.length)
        return self

    def engine_spec(self) -> dict[str, Any]:
        return {"kind": "constant", "rate_bps": self.rate, "length_ms": self.length // MS}


class SquareTrace(Strict):
    """`high` for the first `duty` of each period, then `low` (a Wi-Fi-like on-off link)."""

    kind: Literal["square"] = Field(..., description="square wave")
    high: Rate = Field(..., gt=0, description="capacity of the high phase")
    low: Rate = Field(written("0bps"), ge=0, description="capacity of the low phase (0: an outage)")
    period: Duration = Field(..., description="one high and one low phase (whole ms); one loop of the trace")
    duty: float = Field(0.5, gt=0, lt=1, description="fraction of the period at the high capacity")

    @model_validator(mode="after")
    def _phases(self) -> SquareTrace:
        """period a whole number of ms; both phases at least 1 ms; low not above high."""
        period = _whole_ms("period", self.period)
        high = round(self.duty * period)
        if not 0 < high < period:
            raise ValueError(f"duty {self.duty} of a {period} ms period leaves a phase shorter than 1 ms")
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self

    def engine_spec(self) -> dict[str, Any]:
        period = self.period // MS
        return {"kind": "square", "high_bps": self.high, "low_bps": self.low, "period_ms": period,
                "high_ms": round(self.duty * period)}


class MarkovState(Strict):
    """One capacity state of a Markov model."""

    rate: Rate = Field(..., ge=0, description="capacity in this state (0: an outage)")
    mean_dwell: Duration = Field(..., description="mean time in the state before the chain moves (at least 1 ms)")


class MarkovTrace(Strict):
    """A Markov chain over 2 or 3 capacity states, stepping every ms: it leaves a state after a
    geometric time of its `mean_dwell`, for one of the other states chosen uniformly. One loop
    of `length` is drawn from the link's own stream (`link/<link>/trace`) and repeated."""

    kind: Literal["markov"] = Field(..., description="Markov model of cellular capacity")
    states: list[MarkovState] = Field(..., min_length=2, max_length=3, description="the 2 or 3 states")
    length: Duration = Field(written("60s"), description="one loop of the trace (whole ms)")

    @model_validator(mode="after")
    def _states(self) -> MarkovTrace:
        """length a whole number of ms; every mean_dwell at least 1 ms; some state carries packets."""
        _whole_ms("length", self.length)
        for i, s in enumerate(self.states):
            if s.mean_dwell < MS:
                raise ValueError(f"states.{i}.mean_dwell ({format_ns(s.mean_dwell)}) must be at least 1ms")
        if all(s.rate == 0 for s in self.states):
            raise ValueError("states: every rate is 0; at least one state must carry packets")
        return self

    def engine_spec(self) -> dict[str, Any]:
        return {"kind": "markov", "length_ms": self.length // MS,
                "states": [{"rate_bps": s.rate, "mean_dwell_ms": s.mean_dwell / MS} for s in self.states]}


SyntheticTrace = Annotated[ConstantTrace | SquareTrace | MarkovTrace, Field(discriminator="kind")]
TRACE_MODELS: dict[str, type[Strict]] = {"constant": ConstantTrace, "square": SquareTrace, "markov": MarkovTrace}
