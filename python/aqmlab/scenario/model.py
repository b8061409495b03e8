"""The top level of a scenario file: records, metrics, reference, emulation and `Scenario`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from aqmlab.scenario.applications import Abr, Mpeg, Video
from aqmlab.scenario.base import Strict
from aqmlab.scenario.flows import FlowGroup
from aqmlab.scenario.topology import Dumbbell
from aqmlab.units import Duration, format_ns, written


class Records(Strict):
    """What the simulator records besides the summary."""

    packet_events: bool = Field(True, description="log arrive/enqueue/drop/dequeue at the bottleneck")
    queue_sample: Duration = Field(written("10ms"), gt=0, description="bottleneck queue sampling interval")
    flow_sample: Duration = Field(written("100ms"), gt=0, description="per-flow sampling interval")
    pcap: bool = Field(False, description="write bottleneck.pcap (headers only)")


class Engine(Strict):
    """How the simulator runs the model, without changing the model."""

    access_link_events: bool = Field(
        False, description="true: every step on an access link (host <-> router, used by its flow's packets "
                           "alone) is its own event, as in aqmlab before issue 22's fewer-events round, whose "
                           "results this gives byte for byte; false: those links are crossed by arithmetic, "
                           "the same physics with about a third fewer events, results that differ in the last "
                           "digits where two events fall on the same nanosecond (README, Results)")


class Metrics(Strict):
    """How results are summarised."""

    periods: list[tuple[Duration, Duration]] | None = Field(
        None, description="measurement periods [start, end]; default: the whole run")


class ReferencePeriod(Strict):
    """One measurement period's published values."""

    start: Duration = Field(..., description="period start")
    end: Duration = Field(..., description="period end")
    utilization_mbps: float | None = Field(None, ge=0, json_schema_extra={"unit": "Mb/s"},
                                           description="bottleneck utilization")
    drop_rate_pct: float | None = Field(None, ge=0, le=100, json_schema_extra={"unit": "%"},
                                        description="bottleneck drop rate")
    jain: float | None = Field(None, ge=0, le=1, description="Jain's fairness index over the flows")


class Marking(Strict):
    """Priority classes (a packet's class 1..3, which Rb-RIO and RIO read: class1 dropped first,
    class3 last) that the senders set, beyond a flow group's own `class_weights` and the MPEG
    source's `classes`. Simulator only: the emulator's classes come from DSCP marks."""

    video: Literal["none", "frame_type"] = Field(
        "none", description="frame_type: ABR segments and real-time calls (congestion_control gcc or scream) "
                            "mark each packet by the frame it carries, key (IDR) frames class3 and the others "
                            "class2 (the Rb-RIO paper's I -> 3, P -> 2; these encoders make no B-frames); an "
                            "ABR segment's IDR is its first 4/(N+3) of bytes, N = 25 fps x segment_duration "
                            "(docs/video.md); none: ABR packets take class_weights, calls class 0")
    others: tuple[float, float, float] | None = Field(
        None, description="class weights (class1, class2, class3) of every flow group that sets no class_weights "
                          "and is not marked by frame type: bulk, ABR (with video = none), stream, CBR, ping and "
                          "open-loop RTP flows (not MPEG, PELS or calls, which mark their own); the Rb-RIO paper's "
                          "TCP policy is [0, 0.3, 0.7]; default: as class_weights")

    @model_validator(mode="after")
    def _sane(self) -> Marking:
        """others >= 0 with a positive sum."""
        if self.others is not None and (any(not w >= 0 for w in self.others) or not sum(self.others) > 0):
            raise ValueError(f"others {list(self.others)} must be >= 0 and sum to a positive number")
        return self

    def by_frame_type(self, app: object) -> bool:
        """Whether a flow of `app` marks its packets by frame type under this marking."""
        if self.video != "frame_type":
            return False
        return isinstance(app, Abr) or (isinstance(app, Video) and app.is_call())


class Reference(Strict):
    """Published values to print beside ours."""

    source: str = Field(..., description="where the values come from (paper, figure)")
    periods: list[ReferencePeriod] = Field(default_factory=list, description="published values per period")


class Emulation(Strict):
    """Settings only `aqmlab emulate` reads (the simulator ignores them)."""

    congestion_control: dict[str, Literal["reno", "cubic", "bbr"]] = Field(
        default_factory=dict, description='kernel TCP congestion control per flow group name, over the '
                                          'group\'s tcp.congestion_control (newreno -> reno, cubic -> '
                                          'cubic, bbr -> bbr); "default" for groups that set neither '
                                          '(else reno)')
    dscp_classes: list[tuple[int, int]] | None = Field(
        None, description="[dscp, class] pairs for the router's classifier; default AF11->3, AF12->2, AF13->1")
    default_class: int = Field(0, ge=0, le=3, description="class of packets whose DSCP is not listed")
    busy_poll: bool = Field(False, description="router polls without sleeping: lowest latency, costs a core")

    @model_validator(mode="after")
    def _ranges(self) -> Emulation:
        """dscp_classes pairs are DSCP 0..63 and class 0..3."""
        for dscp, cls in self.dscp_classes or []:
            if not (0 <= dscp <= 63 and 0 <= cls <= 3):
                raise ValueError(f"dscp_classes: [{dscp}, {cls}]: DSCP must be 0..63 and class 0..3")
        return self


class Scenario(Strict):
    """A scenario file: one run of the simulator (or the emulator)."""

    name: str = Field(..., min_length=1, description="label of the run in results and tables")
    description: str = Field("", description="free text")
    seed: int = Field(1, ge=0, lt=2**64, description="seed of every random stream of the run")
    duration: Duration = Field(..., description="simulated time")
    topology: Dumbbell = Field(..., description="routers, links and disciplines")
    flows: list[FlowGroup] = Field(..., min_length=1, description="groups of identical flows")
    records: Records = Field(default_factory=Records, description="what is recorded")
    engine: Engine = Field(default_factory=Engine, description="how the simulator runs the model (not the model)")
    metrics: Metrics = Field(default_factory=Metrics, description="how results are summarised")
    marking: Marking = Field(default_factory=Marking, description="priority classes the senders set (Rb-RIO, RIO)")
    reference: Reference | None = Field(None, description="published values to print beside ours")
    emulation: Emulation | None = Field(None, description="settings of `aqmlab emulate` only")

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        """duration positive; no flow group starts after the end of the run (start <= duration); flow group
        names unique; sender_delay ranges [lo, hi] with lo <= hi; no class_weights on a group marked by
        frame type; a flow path within the routers
        (two different routers in 0..last, either way round); metrics periods within the run; an MPEG
        frame fits the bottleneck buffer."""
        if self.duration <= 0:
            raise ValueError("duration must be positive")
        late = [g for g in self.flows if g.start > self.duration]
        if late:
            # Checked here, before the simulator's own check (config.rs), which sees only the
            # group's stop cut to the duration and would blame a stop the user never set.
            raise ValueError(f"duration {format_ns(self.duration)} ends before flow group "
                             + ", ".join(f"{g.name} starts ({format_ns(g.start)})" for g in late)
                             + ": lengthen duration or move flows." + late[0].name + ".start")
        names = [g.name for g in self.flows]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"flow group names must be unique, repeated: {', '.join(sorted(dup))}")
        for g in self.flows:
            g.sender_delay_range()
            last = self.topology.routers() - 1
            if g.path is not None and (g.path[0] == g.path[1] or not all(0 <= r <= last for r in g.path)):
                raise ValueError(f"flows.{g.name}.path: {list(g.path)} must name two different routers in 0..{last} "
                                 "(enter > exit: the flow runs toward R1, an upload)")
            if isinstance(g.app, Mpeg):
                self._frames_fit_the_buffer(g.name, g.app)
            if g.class_weights is not None and self.marking.by_frame_type(g.app):
                raise ValueError(f"flows.{g.name}.class_weights: the group is marked by frame type "
                                 "(marking.video = frame_type); remove one of the two")
        for a, b in self.periods():
            if not (0 <= a < b <= self.duration):
                raise ValueError(f"metrics.periods: [{format_ns(a)}, {format_ns(b)}] must satisfy "
                                 f"0 <= start < end <= duration ({format_ns(self.duration)})")
        return self

    def _frames_fit_the_buffer(self, group: str, m: Mpeg) -> None:
        """A frame larger than the bottleneck buffer could never be delivered whole."""
        limit = getattr(self.topology.bottleneck.qdisc, "limit", None)
        if limit is None:
            return  # classful: each band has its own limit; the check is per single buffer
        biggest = m.largest_frame()
        if "bytes" in limit and biggest > limit["bytes"]:
            raise ValueError(f"flows.{group}.app.frame_sizes: a {biggest} B frame exceeds the "
                             f"bottleneck buffer of {limit['bytes']} B")
        if "packets" in limit and m.packets_per_frame(biggest) > limit["packets"]:
            raise ValueError(f"flows.{group}.app.frame_sizes: a {biggest} B frame needs "
                             f"{m.packets_per_frame(biggest)} packets, more than the bottleneck buffer "
                             f"of {limit['packets']} packets")

    def periods(self) -> list[tuple[int, int]]:
        return list(self.metrics.periods) if self.metrics.periods else [(0, self.duration)]

    def to_sim_config(self) -> dict[str, Any]:
        """The normalized form `aqmlab._core.Simulation` takes (see aqmlab-sim's config.rs)."""
        from aqmlab.scenario.normalize import sim_config

        return sim_config(self)
