"""The topology: links, parking-lot hops and the dumbbell."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from aqmlab.scenario.base import Strict
from aqmlab.scenario.disciplines import DropTail, Qdisc
from aqmlab.scenario.impairments import Impairments
from aqmlab.scenario.link_schedule import ScheduleError, ScheduleStep, resolve
from aqmlab.scenario.link_traces import SyntheticTrace
from aqmlab.units import Duration, Rate


class Link(Strict):
    """One direction of a point-to-point link: a fixed `rate`, or a delivery `trace`; with a
    `schedule`, a rate and a delay that change at given times."""

    rate: Rate | None = Field(None, description="link rate, e.g. \"25Mbps\"; exclusive with trace")
    trace: SyntheticTrace | str | None = Field(
        None, description="delivery opportunities the link sends by instead of a rate: a mahimahi trace "
                          "file (one line per opportunity to send 1500 bytes, in whole ms, looping; path "
                          "relative to the scenario file) or a generated one ({kind = \"constant\" | "
                          "\"square\" | \"markov\", ...}); disciplines that need a rate get its mean "
                          "(opportunities x 1500 B x 8 / last timestamp)")
    delay: Duration = Field(..., description="one-way propagation delay, e.g. \"20ms\"")
    qdisc: Qdisc = Field(default_factory=lambda: DropTail(kind="droptail", limit="1000p"),
                         description="egress discipline")
    impairments: Impairments | None = Field(None, description="netem's loss, duplication and jitter on the "
                                                              "link's wire; default none")
    schedule: list[ScheduleStep] | str | None = Field(
        None, description="rate and delay steps, as tc qdisc change scripts them: [{at = \"5s\", rate = "
                          "\"2Mbps\"}, {at = \"10s\", delay = \"80ms\"}, ...] in time order, or a CSV file (path "
                          "relative to the scenario file; a header naming the column time and one or both of rate and "
                          "delay, then one "
                          "line per step, cells written as here, an empty cell unchanged); the link's rate and "
                          "delay hold from 0 until a step changes them; on a trace link, delay steps only (the "
                          "trace decides when it sends); default none")
    schedule_period: Duration | None = Field(
        None, description="repeat the schedule every period (its steps at their times within each period); "
                          "default: the last step holds to the end")

    @model_validator(mode="after")
    def _rate_or_trace(self) -> Link:
        """exactly one of rate and trace; rate positive."""
        if self.rate is not None and self.trace is not None:
            raise ValueError("a link has either a rate or a trace, not both")
        if self.rate is None and self.trace is None:
            raise ValueError("a link needs a rate (e.g. \"25Mbps\") or a trace (a mahimahi trace file)")
        if self.rate is not None and self.rate <= 0:
            raise ValueError("rate must be positive")
        if isinstance(self.schedule, list) and self.trace is not None:
            rated = next((i for i, s in enumerate(self.schedule) if s.rate is not None), None)
            if rated is not None:
                raise ValueError(f"schedule.{rated}.rate: a trace link's schedule changes its delay only (the "
                                 "trace decides when it sends); leave rate out")
        if self.schedule_period is not None and self.schedule is None:
            raise ValueError("schedule_period repeats a schedule; give a schedule too")
        if isinstance(self.schedule, list):
            self.engine_schedule()  # refuses steps out of order, a never-ending outage, a short period
        return self

    def engine_schedule(self, steps: list[tuple[int, int | None, int | None]] | None = None) -> dict[str, Any]:
        """The schedule as the engines take it (`aqmlab-core link/schedule.rs`), from the
        scenario's steps or from `steps` read from the schedule's file."""
        if steps is None:
            assert isinstance(self.schedule, list)
            steps = [(s.at, s.rate, s.delay) for s in self.schedule]
        try:
            # A trace link has no rate: its schedule changes the delay alone.
            return resolve(steps, self.rate, self.delay, self.schedule_period)
        except ScheduleError as e:
            raise ValueError(f"schedule: {e}") from None

    def same_service(self) -> Link:
        """A FIFO link with this one's rate or trace and delay, and its schedule (the default way
        back)."""
        if self.trace is not None:
            return Link.model_validate({"trace": self.trace, "delay": f"{self.delay}ns", "schedule": self.schedule,
                                        "schedule_period": self.schedule_period and f"{self.schedule_period}ns"})
        if self.schedule is not None:
            return Link.model_validate({"rate": f"{self.rate}bps", "delay": f"{self.delay}ns",
                                        "schedule": self.schedule, "schedule_period": self.schedule_period
                                        and f"{self.schedule_period}ns"})
        return Link(rate=f"{self.rate}bps", delay=f"{self.delay}ns")


class Hop(Strict):
    """One router-to-router hop of a parking lot."""

    forward: Link = Field(..., description="the way away from R1")
    reverse: Link | None = Field(None, description="the way back; default: the forward rate (or trace) and "
                                                   "delay, FIFO 1000p")


class Dumbbell(Strict):
    """Senders -- R1 == bottleneck ==> R2 -- receivers; the reverse direction carries ACKs.
    With `chain`, a parking lot: more routers in a row after R2 (router 0 is R1, 1 is R2, hop i
    of the chain leads to router i + 2), and flow groups enter and leave at routers of their
    `path`."""

    kind: Literal["dumbbell"] = Field("dumbbell", description="the only topology")
    bottleneck: Link = Field(..., description="R1->R2, where the discipline under study sits")
    reverse: Link | None = Field(None, description="R2->R1; default: the bottleneck's rate (or trace) and delay, "
                                                   "FIFO 1000p")
    access_qdisc: Qdisc = Field(default_factory=lambda: DropTail(kind="droptail", limit="10000p"),
                                description="discipline of every host access link")
    chain: list[Hop] = Field(default_factory=list, description="further router hops after R2 (a parking lot)")

    def routers(self) -> int:
        return 2 + len(self.chain)
