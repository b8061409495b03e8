"""A flow group: `count` identical flows of one application."""

from __future__ import annotations

from pydantic import Field, model_validator

from aqmlab.scenario.applications import App
from aqmlab.scenario.base import Strict
from aqmlab.units import Duration, Rate, written


class FlowGroup(Strict):
    """`count` identical flows, each between its own sender and receiver host."""

    name: str = Field(..., min_length=1, description="label used in tables and RNG stream names")
    count: int = Field(..., ge=1, le=100_000, json_schema_extra={"unit": "flows"}, description="number of flows")
    app: App = Field(..., description="what each flow sends (see Applications)")
    start: Duration = Field(written("0s"), description="start time")
    start_jitter: Duration = Field(written("0s"), description="each flow starts at start + U[0, start_jitter)")
    stop: Duration | None = Field(None, description="stop time; default: the end of the run")
    access_rate: Rate = Field(written("100Mbps"), description="rate of each host access link")
    sender_delay: Duration | tuple[Duration, Duration] = Field(
        written("1ms"), description="sender access delay, or [lo, hi] spread linearly over the group")
    receiver_delay: Duration = Field(written("1ms"), description="receiver access delay")
    class_weights: tuple[float, float, float] | None = Field(
        None, description="random per-packet class marks, weights of (class1, class2, class3); "
                          "default: unclassified (video packets take their frame type's class)")
    dscp: int = Field(0, ge=0, le=63, description="DiffServ code point of the flow's packets")
    path_loss: float = Field(0.0, ge=0.0, lt=1.0, description="random loss of data packets before "
                                                              "the bottleneck (Internet path)")
    path: tuple[int, int] | None = Field(
        None, description="[enter, exit] routers (0 = R1) where senders and receivers attach; enter > exit "
                    "runs the flow toward R1 over the reverse links (an upload); default the whole row")

    @model_validator(mode="after")
    def _sane(self) -> FlowGroup:
        """stop not before start; class_weights >= 0 with a positive sum; access_rate positive."""
        if self.stop is not None and self.stop < self.start:
            raise ValueError("stop must not be before start")
        if self.class_weights is not None and (
                any(not w >= 0 for w in self.class_weights) or not sum(self.class_weights) > 0):
            raise ValueError(f"class_weights {list(self.class_weights)} must be >= 0 and sum to a positive number")
        if self.access_rate <= 0:
            raise ValueError("access_rate must be positive")
        return self

    def sender_delay_range(self) -> tuple[int, int]:
        d = self.sender_delay
        lo, hi = (d, d) if isinstance(d, int) else d
        if lo > hi:
            raise ValueError("sender_delay range is reversed")
        return lo, hi
