"""Scenario files: TOML validated by pydantic models.

Every field has a unit (see :mod:`aqmlab.units`) and a documented default; unknown keys are
errors that list the allowed ones. :func:`load` reads a file, applies ``--set key=value``
overrides, validates, and raises :class:`ScenarioError` with one line per problem, each
naming the field (``topology.bottleneck.rate: ...``).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from aqmlab import _core
from aqmlab.units import Duration, Limit, Rate, Size, format_ns

BUILTIN_DIR = Path(__file__).parent / "scenarios"
#: Integer fields the engines hold in 32 bits stay below this.
U32 = 2**32
#: Most bands of a classful discipline (aqmlab-core prio.rs MAX_BANDS).
MAX_BANDS = 16


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


class Strict(BaseModel):
    """Base model: unknown keys are rejected with the list of allowed ones."""

    # NaN and infinity are never a meaningful setting (a NaN threshold compares false with
    # everything, so range checks would let it through).
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = set(cls.model_fields)
            unknown = [k for k in data if k not in allowed]
            if unknown:
                raise ValueError(
                    f"unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(allowed))}"
                )
        return data


# ---- disciplines ------------------------------------------------------------------------


class DropTail(Strict):
    """FIFO that drops arrivals once full."""

    kind: Literal["droptail"]
    limit: Limit = Field("100p", description="capacity: packets (\"100p\") or bytes (\"150KB\")")


class Red(Strict):
    """Random Early Detection (Floyd and Jacobson 1993), with gentle, byte mode and ECN."""

    kind: Literal["red"]
    limit: Limit = Field("100p", description="physical capacity, packets or bytes")
    min_th: float = Field(20.0, ge=0, json_schema_extra={"unit": "packets"}, description="lower average-queue threshold")
    max_th: float = Field(60.0, gt=0, json_schema_extra={"unit": "packets"}, description="upper average-queue threshold")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the average queue")
    max_p: float = Field(0.1, gt=0, le=1, description="drop probability at max_th")
    gentle: bool = Field(True, description="ramp to 1 between max_th and 2*max_th")
    mode: Literal["packets", "bytes"] = Field("packets", description="measure the queue in packets or bytes")
    ecn: bool = Field(False, description="mark ECN-capable packets instead of dropping")
    mean_pkt_size: Size = Field("1000B", ge=1, description="typical packet size: byte-mode unit and idle decay")

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> "Red":
        """min_th < max_th."""
        if self.min_th >= self.max_th:
            raise ValueError(f"min_th ({self.min_th:g}) must be smaller than max_th ({self.max_th:g})")
        return self


class RbRed(Strict):
    """Rate-based RED: drops from the estimated arrival rate against the link rate, adjusted
    by the average queue and the aggressiveness AP (see aqmlab-core qdisc/rb_red.rs)."""

    kind: Literal["rb_red"]
    limit: Limit = Field("100p", description="physical capacity, packets or bytes")
    time_constant: Duration = Field("100ms", gt=0, description="time constant of the arrival-rate estimator")
    aggressiveness: float = Field(2.0, gt=0, description="AP: the average queue settles near 2*target/AP")
    target_queue: float | None = Field(None, gt=0, json_schema_extra={"unit": "packets"}, description="target average queue; default half the limit")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the average queue")
    mean_pkt_size: Size = Field("1000B", ge=1, description="typical packet size (byte-mode unit)")

    @model_validator(mode="after")
    def _target_within_limit(self) -> "RbRed":
        """target_queue, if given, at most the limit (in packets, or mean_pkt_size packets)."""
        limit = self.limit.get("packets") or self.limit["bytes"] / self.mean_pkt_size
        if self.target_queue is not None and self.target_queue > limit:
            raise ValueError(f"target_queue ({self.target_queue:g}) must not exceed the limit "
                             f"({limit:g} packets)")
        return self


class RbRio(RbRed):
    """Rb-RIO: Rb-RED with three priority classes and per-class arrival rates; every class1
    packet is dropped before any class2, every class2 before any class3 (Chung and Claypool)."""

    kind: Literal["rb_rio"]  # type: ignore[assignment]


class RioCurve(Strict):
    """One drop-precedence class's RED curve."""

    min_th: float = Field(..., ge=0, json_schema_extra={"unit": "packets"}, description="lower average-queue threshold")
    max_th: float = Field(..., gt=0, json_schema_extra={"unit": "packets"}, description="upper average-queue threshold")
    max_p: float = Field(..., gt=0, le=1, description="drop probability at max_th")

    @model_validator(mode="after")
    def _ordered(self) -> "RioCurve":
        """min_th < max_th."""
        if self.min_th >= self.max_th:
            raise ValueError(f"min_th ({self.min_th:g}) must be smaller than max_th ({self.max_th:g})")
        return self


class Rio(Strict):
    """RIO (Clark and Fang) with three drop precedences and coupled averages: class k's
    average counts the packets of classes >= k."""

    kind: Literal["rio"]
    limit: Limit = Field("100p", description="physical capacity, packets or bytes")
    class1: RioCurve = Field(default_factory=lambda: RioCurve(min_th=10, max_th=30, max_p=0.2),
                             description="RED curve of the lowest class")
    class2: RioCurve = Field(default_factory=lambda: RioCurve(min_th=20, max_th=50, max_p=0.1),
                             description="RED curve of the middle class")
    class3: RioCurve = Field(default_factory=lambda: RioCurve(min_th=30, max_th=70, max_p=0.05),
                             description="RED curve of the highest class")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the averages")
    mean_pkt_size: Size = Field("1000B", ge=1, description="typical packet size")


FLOW_FIELDS = ("src", "dst", "sport", "dport", "proto", "flow")


class FlowKey(Strict):
    """Which header fields identify a flow for per-flow disciplines."""

    fields: list[Literal["src", "dst", "sport", "dport", "proto", "flow"]] = Field(
        default_factory=lambda: ["src", "dst", "sport", "dport", "proto"],
        description="5-tuple by default; e.g. [\"sport\"] aggregates an application")

    @model_validator(mode="after")
    def _distinct(self) -> "FlowKey":
        """fields is non-empty and has no repeats."""
        if not self.fields or len(set(self.fields)) != len(self.fields):
            raise ValueError(f"fields must be a non-empty list without repeats of: {', '.join(FLOW_FIELDS)}")
        return self


class Sqf(Strict):
    """Shortest queue first with longest queue drop (Bonald, Muscariello, Ostallo 2011)."""

    kind: Literal["sqf"]
    limit: Limit = Field("100p", description="shared buffer, packets or bytes")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification")


class Drr(Strict):
    """Fair queueing as deficit round robin (Shreedhar and Varghese 1995) with longest queue drop."""

    kind: Literal["drr", "fq"]
    limit: Limit = Field("100p", description="shared buffer, packets or bytes")
    quantum: int = Field(1500, ge=1, lt=U32, json_schema_extra={"unit": "bytes"}, description="DRR bytes per round (one MTU)")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification")


class Pfq(Strict):
    """Priority fair queueing: flows with little queued are served first, the rest by DRR
    (see aqmlab-core qdisc/pfq.rs for the exact rule and its known difference from the paper)."""

    kind: Literal["pfq"]
    limit: Limit = Field("100p", description="shared buffer, packets or bytes")
    quantum: int = Field(1500, ge=1, lt=U32, json_schema_extra={"unit": "bytes"}, description="DRR bytes per round")
    priority_threshold: int = Field(1500, ge=0, lt=U32, json_schema_extra={"unit": "bytes"}, description="bytes queued below which a flow has priority")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification")


def _positive_durations(model: Strict, *names: str) -> None:
    for name in names:
        if getattr(model, name) <= 0:
            raise ValueError(f"{name} must be a positive duration, got {format_ns(getattr(model, name))}")


def _target_below_interval(model: Strict) -> None:
    _positive_durations(model, "target", "interval")
    if model.target >= model.interval:  # type: ignore[attr-defined]
        raise ValueError(f"target ({format_ns(model.target)}) must be smaller than interval "  # type: ignore[attr-defined]
                         f"({format_ns(model.interval)}); RFC 8289 suggests 5-10 % of it")  # type: ignore[attr-defined]


class Codel(Strict):
    """CoDel (RFC 8289): drops (or ECN-marks) at dequeue once the sojourn time has stayed above
    target for an interval, then at interval/sqrt(count)."""

    kind: Literal["codel"]
    limit: Limit = Field("1000p", description="physical capacity, packets or bytes (Linux default 1000p)")
    target: Duration = Field("5ms", description="acceptable standing sojourn time (RFC 8289 4.3)")
    interval: Duration = Field("100ms", description="window the sojourn must stay above target in (RFC 8289 4.4)")
    mtu: Size = Field("1500B", description="no drop while at most this many bytes are queued (RFC 8289 5.3)")
    ecn: bool = Field(False, description="CE-mark ECN-capable packets instead of dropping (Linux default off)")

    @model_validator(mode="after")
    def _ordered(self) -> "Codel":
        """0 < target < interval (RFC 8289 suggests target 5-10 % of interval)."""
        _target_below_interval(self)
        return self


class FqCodel(Strict):
    """FQ-CoDel (RFC 8290): hashed flow queues served by DRR with new/old flow lists, CoDel in
    each queue, overflow drops half the fattest queue (Linux batch, at most drop_batch packets)."""

    kind: Literal["fq_codel"]
    limit: Limit = Field("10240p", description="capacity over all queues, packets or bytes (RFC 8290 5.1)")
    memory_limit: Size | None = Field(None, description="optional cap on bytes queued (Linux memory_limit); none by default")
    flows: int = Field(1024, ge=1, le=65536, json_schema_extra={"unit": "queues"}, description="hash buckets, i.e. flow queues (RFC 8290 5.1)")
    quantum: Size = Field("1514B", description="DRR bytes per round per queue (Linux: one Ethernet frame)")
    target: Duration = Field("5ms", description="CoDel target per queue")
    interval: Duration = Field("100ms", description="CoDel interval per queue")
    mtu: Size = Field("1500B", description="CoDel's one-MTU no-drop test (on the whole backlog, as Linux)")
    ecn: bool = Field(True, description="CE-mark ECN-capable packets instead of dropping (RFC 8290 default on)")
    drop_batch: int = Field(64, ge=1, json_schema_extra={"unit": "packets"}, description="most packets dropped from the fattest queue per overflow (Linux)")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification for the hash")

    @model_validator(mode="after")
    def _sane(self) -> "FqCodel":
        """0 < target < interval; quantum and memory_limit (if given) at least 1 byte."""
        _target_below_interval(self)
        if self.quantum <= 0:
            raise ValueError("quantum must be at least 1 byte (default 1514B)")
        if self.memory_limit is not None and self.memory_limit <= 0:
            raise ValueError("memory_limit must be at least 1 byte, or left out for none")
        return self


class Pie(Strict):
    """PIE (RFC 8033): drop on arrival with a probability updated every t_update from the queue
    delay (PI control with auto-tuned alpha/beta), burst allowance, optional ECN and
    derandomization."""

    kind: Literal["pie"]
    limit: Limit = Field("1000p", description="physical capacity, packets or bytes (Linux default 1000p)")
    target: Duration = Field("15ms", description="target queue delay QDELAY_REF (RFC 8033 4.2)")
    t_update: Duration = Field("15ms", description="drop-probability update period (RFC 8033 4.2)")
    alpha: float = Field(0.125, ge=0, json_schema_extra={"unit": "1/s"}, description="weight of the delay error (RFC 8033 4.2)")
    beta: float = Field(1.25, ge=0, json_schema_extra={"unit": "1/s"}, description="weight of the delay trend (RFC 8033 4.2)")
    max_burst: Duration = Field("150ms", description="burst allowance (RFC 8033 4.4)")
    ecn: bool = Field(False, description="CE-mark ECN-capable packets while drop_prob <= mark_ecn_threshold")
    mark_ecn_threshold: float = Field(0.1, ge=0, le=1, description="highest drop probability that marks (RFC 8033 5.1)")
    bytemode: bool = Field(False, description="scale the drop probability by size/mtu (Linux bytemode)")
    mtu: Size = Field("1500B", description="packet size of the 2-packet no-drop floor and the bytemode unit")
    derandomize: bool = Field(False, description="spread drops by the accumulated probability (RFC 8033 5.4)")
    estimator: Literal["timestamp", "rate"] = Field(
        "timestamp", description="queue delay from packet timestamps (Linux, ns-3 default) or the departure rate (RFC 8033 5.2)")
    dq_threshold: Size = Field("16384B", description="bytes per departure-rate measurement (estimator = \"rate\")")

    @model_validator(mode="after")
    def _sane(self) -> "Pie":
        """target and t_update positive; mtu and dq_threshold at least 1 byte."""
        _positive_durations(self, "target", "t_update")
        if self.mtu <= 0 or self.dq_threshold <= 0:
            raise ValueError("mtu and dq_threshold must be at least 1 byte")
        return self


class Tbf(Strict):
    """Token bucket filter, as Linux tbf: tokens at `rate` up to `burst` bytes; a packet leaves
    when the bucket holds its size."""

    kind: Literal["tbf"]
    rate: Rate = Field(..., description="token rate")
    burst: Size = Field("1600B", description="bucket size (largest burst)")
    limit: Limit = Field("10KB", description="queue limit, bytes or packets")

    @model_validator(mode="after")
    def _sane(self) -> "Tbf":
        """rate and burst positive."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if self.burst <= 0:
            raise ValueError("burst must be positive")
        return self


class Classifier(Strict):
    """How a classful discipline maps packets to bands: by class mark (also spelled "color",
    green = 3, yellow = 2, red = 1) or by DSCP, with optional [value, band] pairs."""

    by: Literal["class", "color", "dscp"] = Field("class", description="packet field to classify on")
    map: list[tuple[int, int]] | None = Field(None, description="[value, band] pairs; default by class: 3->0, 2->1, 1->2")
    default_band: int | None = Field(None, ge=0, lt=MAX_BANDS, description="band of unlisted packets; default the last band")

    @model_validator(mode="after")
    def _dscp_needs_map(self) -> "Classifier":
        """by = "dscp" needs a map; map keys are classes 0..3 (by class or color) or DSCPs 0..63,
        each listed once; bands and default_band name existing bands (checked by the parent)."""
        if self.by == "dscp" and not self.map:
            raise ValueError("by = \"dscp\" needs a map of [dscp, band] pairs")
        key, key_max = ("dscp", 63) if self.by == "dscp" else ("class", 3)
        for i, (k, _) in enumerate(self.map or []):
            if not 0 <= k <= key_max:
                raise ValueError(f"map.{i}: {key} {k} is out of range 0..={key_max}")
            if any(k == k2 for k2, _ in (self.map or [])[:i]):
                raise ValueError(f"map.{i}: {key} {k} is listed twice")
        return self

    def check_bands(self, bands: int) -> None:
        """Every band the classifier names exists among the parent's `bands` children."""
        if self.default_band is not None and self.default_band >= bands:
            raise ValueError(f"classifier.default_band: band {self.default_band} does not exist "
                             f"(there are {bands} bands, 0..={bands - 1})")
        for i, (_, band) in enumerate(self.map or []):
            if not 0 <= band < bands:
                raise ValueError(f"classifier.map.{i}: band {band} does not exist (there are {bands} bands)")


class Prio(Strict):
    """Strict priority over child disciplines (band 0 first), as Linux prio."""

    kind: Literal["prio"]
    bands: list["Qdisc"] = Field(..., min_length=1, max_length=MAX_BANDS,
                                 description="child disciplines, highest priority first")
    classifier: Classifier = Field(default_factory=Classifier, description="packet to band")

    @model_validator(mode="after")
    def _bands_exist(self) -> "Prio":
        """The classifier names existing bands only."""
        self.classifier.check_bands(len(self.bands))
        return self


class WrrBand(Strict):
    """One weighted child of WRR."""

    weight: int = Field(..., ge=1, lt=U32, json_schema_extra={"unit": "bytes"},
                        description="bytes served per round")
    qdisc: "Qdisc" = Field(..., description="the child discipline")


class Wrr(Strict):
    """Weighted round robin (deficit-based, weights in bytes per round) over child disciplines."""

    kind: Literal["wrr"]
    bands: list[WrrBand] = Field(..., min_length=1, max_length=MAX_BANDS, description="weighted child disciplines")
    classifier: Classifier = Field(default_factory=Classifier, description="packet to band")

    @model_validator(mode="after")
    def _bands_exist(self) -> "Wrr":
        """The classifier names existing bands only."""
        self.classifier.check_bands(len(self.bands))
        return self


class PelsFeedback(Strict):
    """PELS router feedback (Kang et al. 2004, eq. 11) around a discipline: every `interval` the
    PELS arrival rate R and loss p = (R - C)/R for C = share x link rate, an epoch count, and a
    (router id, epoch, p) label on every passing coloured packet (kept when upstream's p is larger)."""

    kind: Literal["pels_feedback"]
    router_id: int = Field(1, ge=0, lt=2**32, description="id written into labels; distinct per router")
    interval: Duration = Field("30ms", description="measurement interval T")
    share: float = Field(0.5, gt=0, le=1, description="PELS share of the link rate (C = share x rate)")
    qdisc: "Qdisc" = Field(..., description="the discipline that queues: normally WRR of PRIO (green, yellow, red) and a FIFO")

    @model_validator(mode="after")
    def _positive_interval(self) -> "PelsFeedback":
        """interval positive."""
        if self.interval <= 0:
            raise ValueError("interval must be positive")
        return self


Qdisc = Annotated[Union[DropTail, Red, RbRed, RbRio, Rio, Sqf, Drr, Pfq, Tbf, Prio, Wrr, PelsFeedback,
                        Codel, FqCodel, Pie],
                  Field(discriminator="kind")]
for _model in (Prio, WrrBand, Wrr, PelsFeedback):
    _model.model_rebuild()
QDISC_MODELS: dict[str, type[Strict]] = {"droptail": DropTail, "red": Red, "rb_red": RbRed,
                                         "rb_rio": RbRio, "rio": Rio, "sqf": Sqf, "drr": Drr,
                                         "fq": Drr, "pfq": Pfq, "tbf": Tbf, "prio": Prio, "wrr": Wrr,
                                         "pels_feedback": PelsFeedback, "codel": Codel,
                                         "fq_codel": FqCodel, "pie": Pie}


# ---- topology ---------------------------------------------------------------------------


class Link(Strict):
    """One direction of a point-to-point link."""

    rate: Rate = Field(..., description="link rate, e.g. \"25Mbps\"")
    delay: Duration = Field(..., description="one-way propagation delay, e.g. \"20ms\"")
    qdisc: Qdisc = Field(default_factory=lambda: DropTail(kind="droptail", limit="1000p"),
                         description="egress discipline")

    @model_validator(mode="after")
    def _positive_rate(self) -> "Link":
        """rate positive."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        return self


class Hop(Strict):
    """One router-to-router hop of a parking lot."""

    forward: Link = Field(..., description="the way away from R1")
    reverse: Link | None = Field(None, description="the way back; default: the forward rate and delay, FIFO 1000p")


class Dumbbell(Strict):
    """Senders -- R1 == bottleneck ==> R2 -- receivers; the reverse direction carries ACKs.
    With `chain`, a parking lot: more routers in a row after R2 (router 0 is R1, 1 is R2, hop i
    of the chain leads to router i + 2), and flow groups enter and leave at routers of their
    `path`."""

    kind: Literal["dumbbell"] = Field("dumbbell", description="the only topology")
    bottleneck: Link = Field(..., description="R1->R2, where the discipline under study sits")
    reverse: Link | None = Field(None, description="R2->R1; default: the bottleneck's rate and delay, FIFO 1000p")
    access_qdisc: Qdisc = Field(default_factory=lambda: DropTail(kind="droptail", limit="10000p"),
                                description="discipline of every host access link")
    chain: list[Hop] = Field(default_factory=list, description="further router hops after R2 (a parking lot)")

    def routers(self) -> int:
        return 2 + len(self.chain)


# ---- applications -----------------------------------------------------------------------


# The simulator's congestion controllers and the Linux module `aqmlab emulate` loads for each.
KERNEL_CONGESTION_CONTROL = {"newreno": "reno", "cubic": "cubic"}


class Tcp(Strict):
    """TCP with NewReno or CUBIC window rules (RFC 5681, RFC 6582, RFC 6298; RFC 9438)."""

    mss: Size = Field("1460B", description="payload per segment; packets are mss + 40 B")
    initial_cwnd: int = Field(2, ge=1, le=100, json_schema_extra={"unit": "segments"}, description="initial congestion window")
    initial_rto: Duration = Field("1s", description="RTO before the first RTT sample (RFC 6298 2.1)")
    min_rto: Duration = Field("1s", description="lower bound on the RTO (RFC 6298 2.4)")
    max_rto: Duration = Field("60s", description="upper bound on the RTO")
    clock_granularity: Duration = Field("1ms", description="RFC 6298's G")
    delayed_ack: bool = Field(False, description="ACK every second segment or after the timeout")
    delayed_ack_timeout: Duration = Field("200ms", description="delayed-ACK timer")
    rwnd: Size = Field("1MB", description="receiver window (caps cwnd)")
    ecn: bool = Field(False, description="negotiate ECN (RFC 3168)")
    sack: bool = Field(False, description="selective acknowledgments (RFC 2018, RFC 6675 recovery)")
    frto: bool = Field(False, description="F-RTO spurious-timeout detection (RFC 5682)")
    congestion_control: Literal["newreno", "cubic"] = Field(
        "newreno", description="window rules: newreno (RFC 5681) or cubic (RFC 9438); emulated as "
                               "kernel reno or cubic")

    @model_validator(mode="after")
    def _sane(self) -> "Tcp":
        """mss positive; min_rto <= max_rto."""
        if self.mss <= 0:
            raise ValueError("mss must be positive")
        if self.min_rto > self.max_rto:
            raise ValueError("min_rto must not exceed max_rto")
        return self


class Bulk(Strict):
    """FTP-like bulk transfer with unlimited data over TCP."""

    kind: Literal["bulk"]
    tcp: Tcp = Field(default_factory=Tcp, description="TCP settings")


class Cbr(Strict):
    """Constant-bit-rate UDP, the simplest unresponsive source."""

    kind: Literal["cbr"]
    rate: Rate = Field(..., description="sending rate at the IP layer")
    packet_size: Size = Field("1000B", description="IP packet size")

    @model_validator(mode="after")
    def _sane(self) -> "Cbr":
        """rate positive; packet_size at least 28 B (IPv4 + UDP headers)."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if self.packet_size < 28:
            raise ValueError("packet_size must be at least 28 B (IPv4 + UDP headers)")
        return self


class FrameSizesByType(Strict):
    """Mean frame size per MPEG frame type."""

    I: Size = Field("11KB", description="mean I-frame size")
    P: Size = Field("8KB", description="mean P-frame size")
    B: Size = Field("2KB", description="mean B-frame size")


class FrameClasses(Strict):
    """Class mark (0 = unclassified, 1 = dropped first .. 3 = dropped last) per MPEG frame type."""

    I: int = Field(3, ge=0, le=3, description="class of I-frame packets")
    P: int = Field(2, ge=0, le=3, description="class of P-frame packets")
    B: int = Field(1, ge=0, le=3, description="class of B-frame packets")


class Mpeg(Strict):
    """MPEG-1 video over UDP (the Rb-RIO paper's MPEG_APP): GOP frames fragmented into packets
    marked by frame type; unresponsive, or responsive by skipping B then P frames at the sender."""

    kind: Literal["mpeg"]
    gop: str = Field("IBBPBBPBB", description="GOP pattern of I, P, B starting with I")
    fps: float = Field(30.0, gt=0, le=1000, json_schema_extra={"unit": "frames/s"}, description="frames per second")
    frame_sizes: FrameSizesByType = Field(default_factory=FrameSizesByType, description="mean size per type")
    size_model: Literal["constant", "normal"] = Field("constant", description="constant means or normal spread")
    size_cv: float = Field(0.0, ge=0, description="coefficient of variation for size_model = normal")
    trace: str | None = Field(None, description="file of frame sizes in bytes, one per line, in GOP order")
    max_packet: Size = Field("1000B", description="largest IP packet of a fragment")
    classes: FrameClasses = Field(default_factory=FrameClasses, description="class mark per frame type")
    responsive: bool = Field(False, description="scale down on receiver-reported loss")
    feedback_interval: Duration | None = Field(None, description="receiver report period; default: base RTT")
    up_after: int = Field(2, ge=1, lt=U32, json_schema_extra={"unit": "reports"}, description="loss-free reports before scaling up one level")

    @model_validator(mode="after")
    def _sane(self) -> "Mpeg":
        """gop of I, P, B starting with I; max_packet above 28 B; frame sizes positive."""
        bad = sorted(set(self.gop) - set("IPB"))
        if bad:
            raise ValueError(f"gop {self.gop!r}: letters must be I, P or B, found {', '.join(bad)}")
        if not self.gop.startswith("I"):
            raise ValueError(f"gop {self.gop!r} must start with I")
        if self.max_packet <= 28:
            raise ValueError("max_packet must exceed the 28 B of IP and UDP headers")
        if min(self.frame_sizes.I, self.frame_sizes.P, self.frame_sizes.B) <= 0:
            raise ValueError("frame_sizes must be positive")
        return self

    def largest_frame(self) -> int:
        s = self.frame_sizes
        return max(s.I, s.P, s.B)

    def packets_per_frame(self, size: int) -> int:
        return -(-size // (self.max_packet - 28))


class Video(Strict):
    """VBR video over RTP/UDP: frames at a frame rate, sizes around rate/fps, packets up to the MTU."""

    kind: Literal["video"]
    rate: Rate = Field("5Mbps", description="mean payload rate")
    fps: float = Field(25.0, gt=0, le=1000, json_schema_extra={"unit": "frames/s"}, description="frames per second")
    size_cv: float = Field(0.5, ge=0, description="coefficient of variation of frame sizes (log-normal)")
    trace: str | None = Field(None, description="file of frame sizes in bytes, one per line (overrides rate)")
    mtu: Size = Field("1500B", description="largest IP packet")
    burst: bool = Field(False, description="send a frame's packets back to back instead of paced over the frame interval")
    shaping: Duration = Field("0s", description="pace the frames of each window of this length at one rate, "
                                                 "as VLC's TS muxer (200 ms there); 0 = pace each frame alone")
    jitter: Duration = Field("0s", description="source jitter: s.d. of a half-normal delay per packet")

    @model_validator(mode="after")
    def _sane(self) -> "Video":
        """mtu above 40 B; rate positive unless a trace is given; burst and shaping exclude each other."""
        if self.mtu <= 40:
            raise ValueError("mtu must exceed the 40 B of IP, UDP and RTP headers")
        if self.rate <= 0 and not self.trace:
            raise ValueError("rate must be positive")
        if self.burst and self.shaping > 0:
            raise ValueError("burst and shaping exclude each other: a shaped stream is paced")
        return self


class Audio(Strict):
    """Audio over RTP/UDP: one packet per period, sizes around rate*period."""

    kind: Literal["audio"]
    rate: Rate = Field("64kbps", description="mean rate at the IP layer")
    period: Duration = Field("20ms", description="packet interval")
    size_cv: float = Field(0.1, ge=0, description="coefficient of variation of packet sizes (VBR)")
    jitter: Duration = Field("0s", description="source jitter: s.d. of a half-normal delay per packet")

    @model_validator(mode="after")
    def _sane(self) -> "Audio":
        """rate and period positive; rate x period above 40 B of headers."""
        if self.rate <= 0 or self.period <= 0:
            raise ValueError("rate and period must be positive")
        if self.rate / 8 * self.period / 1e9 <= 40:
            raise ValueError("rate x period must exceed the 40 B of headers per packet")
        return self


class Poisson(Strict):
    """Fixed-size packets with exponential gaps at a peak rate (the SQF paper's section IV)."""

    kind: Literal["poisson"]
    rate: Rate = Field(..., description="mean rate lambda at the IP layer")
    packet_size: Size = Field("1250B", description="IP packet size")
    jitter: Duration = Field("0s", description="source jitter: s.d. of a half-normal delay per packet")

    @model_validator(mode="after")
    def _sane(self) -> "Poisson":
        """rate positive; packet_size above 40 B."""
        if self.rate <= 0:
            raise ValueError("rate must be positive")
        if self.packet_size <= 40:
            raise ValueError("packet_size must exceed the 40 B of headers")
        return self


class Stream(Strict):
    """Adaptive streaming server and player (RealPlayer-like; see aqmlab-sim app/streaming.rs)."""

    kind: Literal["stream"]
    transport: Literal["udp", "tcp"] = Field(..., description="udp or tcp")
    levels: list[Rate] = Field(..., min_length=1, description="encoded rates, ascending")
    clip: Duration = Field(..., description="length of the content")
    preroll: Duration = Field("10s", description="content lead built before steady playout")
    buffer_multiple: float = Field(2.0, ge=1.0, description="buffering send rate / level rate")
    buffer_rate_cap: Rate = Field("0bps", description="cap on the buffering send rate (0: none)")
    packet_size: Size = Field("1000B", description="UDP packet IP size; TCP write size")
    report_interval: Duration = Field("1s", description="UDP receiver report spacing")
    loss_down: float = Field(0.05, ge=0.0, le=1.0, description="UDP: step down above this report loss")
    loss_up: float = Field(0.01, ge=0.0, le=1.0, description="UDP: step up only at or below this loss")
    rtt_up_factor: float = Field(2.0, ge=1.0, description="UDP: step up only with RTT <= this x min RTT")
    silence_reports: int = Field(3, ge=1, lt=U32, json_schema_extra={"unit": "report intervals"}, description="UDP: step down after this many silent intervals")
    up_after: Duration = Field("10s", description="time in good conditions before a step up")
    tcp_check: Duration = Field("5s", description="TCP: how often the server looks at its backlog")
    tcp_backlog_down: Duration = Field("5s", description="TCP: backlog (content time) that scales down")
    tcp: Tcp = Field(default_factory=Tcp, description="TCP settings")

    @model_validator(mode="after")
    def _sane(self) -> "Stream":
        """levels positive and strictly ascending; clip, report_interval and tcp_check positive; packet_size above 40 B."""
        if any(r <= 0 for r in self.levels) or any(a >= b for a, b in zip(self.levels, self.levels[1:])):
            raise ValueError("levels must be positive and strictly ascending")
        if self.clip <= 0:
            raise ValueError("clip must be positive")
        if self.packet_size <= 40:
            raise ValueError("packet_size must exceed the 40 B of IP/UDP/RTP headers")
        if self.report_interval <= 0 or self.tcp_check <= 0:
            raise ValueError("report_interval and tcp_check must be positive")
        return self


class Pels(Strict):
    """PELS FGS video (Kang et al. 2004): per frame `base_packets` green packets plus the
    enhancement layer cut to the MKC rate, its lower 1 - gamma yellow and upper gamma red; MKC
    (eq. 8) and the gamma controller (eq. 5) act once per fresh router epoch echoed in ACKs.
    Defaults: the paper's 500 B packets, 126-packet full frame, MKC and gamma gains; 10 fps and
    3 green packets (120 kb/s, the paper's 128 kb/s base rate) are our choice, since the paper's
    21 green packets per frame cannot be both a 128 kb/s base and leave room for 1 mb/s flows."""

    kind: Literal["pels"]
    fps: float = Field(10.0, gt=0, json_schema_extra={"unit": "frames/s"}, description="frames per second (our choice; not in the paper)")
    packet_size: Size = Field("500B", description="IP size of every packet (section 6.1)")
    base_packets: int = Field(3, ge=1, le=128, json_schema_extra={"unit": "packets"}, description="green packets per frame (base layer)")
    max_packets: int = Field(126, ge=1, le=128, json_schema_extra={"unit": "packets"}, description="packets of a full-rate frame (section 6.1)")
    initial_rate: Rate = Field("128kbps", description="MKC initial rate r0 (section 6.3)")
    alpha: Rate = Field("20kbps", description="MKC additive gain per control step (section 6.4)")
    beta: float = Field(0.5, gt=0, description="MKC multiplicative gain (stable for 0 < beta < 2)")
    sigma: float = Field(0.5, gt=0, description="gamma controller gain (stable for 0 < sigma < 2)")
    p_thr: float = Field(0.75, gt=0, le=1, description="target red loss")
    gamma_low: float = Field(0.05, ge=0, le=1, description="lowest gamma")
    gamma_init: float = Field(0.5, ge=0, le=1, description="initial gamma")
    partition: bool = Field(True, description="false: best-effort, every enhancement packet yellow (section 6.5)")

    @model_validator(mode="after")
    def _sane(self) -> "Pels":
        """base_packets <= max_packets; packet_size above 28 B; gamma_low <= gamma_init; initial_rate between the base layer's and the full frame's rate."""
        if self.max_packets < self.base_packets:
            raise ValueError(f"max_packets {self.max_packets} must be at least base_packets {self.base_packets}")
        if self.packet_size <= 28:
            raise ValueError("packet_size must exceed the 28 B of IP + UDP headers")
        if self.gamma_init < self.gamma_low:
            raise ValueError(f"gamma_init {self.gamma_init} must be at least gamma_low {self.gamma_low}")
        lo, hi = (n * self.packet_size * 8 * self.fps for n in (self.base_packets, self.max_packets))
        if not lo <= self.initial_rate <= hi:
            raise ValueError(f"initial_rate {self.initial_rate} b/s must lie between the base layer's "
                             f"{lo:.0f} and the full frame's {hi:.0f} b/s (MKC's rate bounds)")
        return self


MEDIA = (Video, Audio, Poisson)
App = Annotated[Union[Bulk, Cbr, Mpeg, Video, Audio, Poisson, Stream, Pels], Field(discriminator="kind")]
APP_MODELS: dict[str, type[Strict]] = {"bulk": Bulk, "cbr": Cbr, "mpeg": Mpeg, "video": Video,
                                       "audio": Audio, "poisson": Poisson, "stream": Stream, "pels": Pels}


class FlowGroup(Strict):
    """`count` identical flows, each between its own sender and receiver host."""

    name: str = Field(..., min_length=1, description="label used in tables and RNG stream names")
    count: int = Field(..., ge=1, le=100_000, json_schema_extra={"unit": "flows"}, description="number of flows")
    app: App = Field(..., description="what each flow sends (see Applications)")
    start: Duration = Field("0s", description="start time")
    start_jitter: Duration = Field("0s", description="each flow starts at start + U[0, start_jitter)")
    stop: Duration | None = Field(None, description="stop time; default: the end of the run")
    access_rate: Rate = Field("100Mbps", description="rate of each host access link")
    sender_delay: Duration | tuple[Duration, Duration] = Field(
        "1ms", description="sender access delay, or [lo, hi] spread linearly over the group")
    receiver_delay: Duration = Field("1ms", description="receiver access delay")
    class_weights: tuple[float, float, float] | None = Field(
        None, description="random per-packet class marks, weights of (class1, class2, class3); "
                          "default: unclassified (video packets take their frame type's class)")
    dscp: int = Field(0, ge=0, le=63, description="DiffServ code point of the flow's packets")
    path_loss: float = Field(0.0, ge=0.0, lt=1.0, description="random loss of data packets before "
                                                              "the bottleneck (Internet path)")
    path: tuple[int, int] | None = Field(
        None, description="[enter, exit] routers (0 = R1) where senders and receivers attach; default the whole row")

    @model_validator(mode="after")
    def _sane(self) -> "FlowGroup":
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


# ---- records, metrics, reference ---------------------------------------------------------


class Records(Strict):
    """What the simulator records besides the summary."""

    packet_events: bool = Field(True, description="log arrive/enqueue/drop/dequeue at the bottleneck")
    queue_sample: Duration = Field("10ms", gt=0, description="bottleneck queue sampling interval")
    flow_sample: Duration = Field("100ms", gt=0, description="per-flow sampling interval")
    pcap: bool = Field(False, description="write bottleneck.pcap (headers only)")


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


class Reference(Strict):
    """Published values to print beside ours."""

    source: str = Field(..., description="where the values come from (paper, figure)")
    periods: list[ReferencePeriod] = Field(default_factory=list, description="published values per period")


class Emulation(Strict):
    """Settings only `aqmlab emulate` reads (the simulator ignores them)."""

    congestion_control: dict[str, Literal["reno", "cubic"]] = Field(
        default_factory=dict, description='kernel TCP congestion control per flow group name, over the '
                                          'group\'s tcp.congestion_control (newreno -> reno, cubic -> '
                                          'cubic); "default" for groups that set neither (else reno)')
    dscp_classes: list[tuple[int, int]] | None = Field(
        None, description="[dscp, class] pairs for the router's classifier; default AF11->3, AF12->2, AF13->1")
    default_class: int = Field(0, ge=0, le=3, description="class of packets whose DSCP is not listed")
    busy_poll: bool = Field(False, description="router polls without sleeping: lowest latency, costs a core")

    @model_validator(mode="after")
    def _ranges(self) -> "Emulation":
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
    metrics: Metrics = Field(default_factory=Metrics, description="how results are summarised")
    reference: Reference | None = Field(None, description="published values to print beside ours")
    emulation: Emulation | None = Field(None, description="settings of `aqmlab emulate` only")

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        """duration positive; flow group names unique; sender_delay ranges [lo, hi] with lo <= hi; a flow path within the routers (0 <= enter < exit <= last); metrics periods within the run; an MPEG frame fits the bottleneck buffer."""
        if self.duration <= 0:
            raise ValueError("duration must be positive")
        names = [g.name for g in self.flows]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"flow group names must be unique, repeated: {', '.join(sorted(dup))}")
        for g in self.flows:
            g.sender_delay_range()
            last = self.topology.routers() - 1
            if g.path is not None and not (0 <= g.path[0] < g.path[1] <= last):
                raise ValueError(f"flows.{g.name}.path: {list(g.path)} must satisfy 0 <= enter < exit <= {last} "
                                 f"(routers 0..{last})")
            if isinstance(g.app, Mpeg):
                self._frames_fit_the_buffer(g.name, g.app)
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
        t = self.topology
        reverse = t.reverse or Link(rate=f"{t.bottleneck.rate}bps", delay=f"{t.bottleneck.delay}ns")
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "topology": {
                "bottleneck": _link(t.bottleneck),
                "reverse": _link(reverse),
                "access_qdisc": _qdisc(t.access_qdisc),
                "chain": [_hop(h) for h in t.chain],
            },
            "flow_groups": [_group(g, self.duration) for g in self.flows],
            "records": {
                "packet_events": self.records.packet_events,
                "queue_sample_ns": self.records.queue_sample,
                "flow_sample_ns": self.records.flow_sample,
                "pcap": self.records.pcap,
            },
        }


def _qdisc(q: Any) -> dict[str, Any]:
    if isinstance(q, Prio):
        return {"kind": "prio", "bands": [_qdisc(b) for b in q.bands], "classifier": _classifier(q.classifier)}
    if isinstance(q, Wrr):
        return {"kind": "wrr", "classifier": _classifier(q.classifier),
                "bands": [{"weight": b.weight, "qdisc": _qdisc(b.qdisc)} for b in q.bands]}
    if isinstance(q, PelsFeedback):
        return {"kind": "pels_feedback", "router_id": q.router_id, "interval_ns": q.interval,
                "share": q.share, "qdisc": _qdisc(q.qdisc)}
    d = q.model_dump()
    if d["kind"] == "fq":
        d["kind"] = "drr"
    for key in _DURATION_KEYS & d.keys():
        d[f"{key}_ns"] = d.pop(key)
    return d


#: Duration fields of single disciplines, which the core takes in nanoseconds as `<name>_ns`.
_DURATION_KEYS = {"time_constant", "target", "interval", "t_update", "max_burst"}


def _classifier(c: Classifier) -> dict[str, Any]:
    d: dict[str, Any] = {"by": "class" if c.by == "color" else c.by}
    if c.map is not None:
        d["map"] = [list(p) for p in c.map]
    if c.default_band is not None:
        d["default_band"] = c.default_band
    return d


def _link(link: Link) -> dict[str, Any]:
    return {"rate_bps": link.rate, "delay_ns": link.delay, "qdisc": _qdisc(link.qdisc)}


def _hop(hop: Hop) -> dict[str, Any]:
    back = hop.reverse or Link(rate=f"{hop.forward.rate}bps", delay=f"{hop.forward.delay}ns")
    return {"forward": _link(hop.forward), "reverse": _link(back)}


def _app(app: Any) -> dict[str, Any]:
    if isinstance(app, Cbr):
        return {"kind": "cbr", "rate_bps": app.rate, "packet_size": app.packet_size}
    if isinstance(app, Mpeg):
        return _mpeg(app)
    if isinstance(app, Pels):
        return {"kind": "pels", "fps": app.fps, "packet_size": app.packet_size,
                "base_packets": app.base_packets, "max_packets": app.max_packets,
                "initial_rate_bps": float(app.initial_rate), "alpha_bps": float(app.alpha),
                "beta": app.beta, "sigma": app.sigma, "p_thr": app.p_thr, "gamma_low": app.gamma_low,
                "gamma_init": app.gamma_init, "partition": app.partition}
    if isinstance(app, MEDIA):
        return {"kind": "rtp", "media": _media(app), "jitter_sd_ns": app.jitter}
    if isinstance(app, Stream):
        return _stream(app)
    return {"kind": "bulk", "tcp": _tcp(app.tcp)}


def _tcp(t: Tcp) -> dict[str, Any]:
    return {
        "mss": t.mss, "initial_cwnd_segments": t.initial_cwnd, "initial_rto_ns": t.initial_rto,
        "min_rto_ns": t.min_rto, "max_rto_ns": t.max_rto, "clock_granularity_ns": t.clock_granularity,
        "delayed_ack": t.delayed_ack, "delayed_ack_timeout_ns": t.delayed_ack_timeout,
        "rwnd": t.rwnd, "ecn": t.ecn, "sack": t.sack, "frto": t.frto,
        "congestion_control": t.congestion_control,
    }


def _stream(s: Stream) -> dict[str, Any]:
    return {
        "kind": "stream", "transport": s.transport, "levels_bps": list(s.levels), "clip_ns": s.clip,
        "preroll_ns": s.preroll, "buffer_multiple": s.buffer_multiple,
        "buffer_rate_cap_bps": s.buffer_rate_cap, "packet_size": s.packet_size,
        "report_interval_ns": s.report_interval, "loss_down": s.loss_down, "loss_up": s.loss_up,
        "rtt_up_factor": s.rtt_up_factor, "silence_reports": s.silence_reports,
        "up_after_ns": s.up_after, "tcp_check_ns": s.tcp_check,
        "tcp_backlog_down_ns": s.tcp_backlog_down, "tcp": _tcp(s.tcp),
    }


def _media(m: Any) -> dict[str, Any]:
    if isinstance(m, Video):
        return {"kind": "video", "mean_rate_bps": m.rate, "fps": m.fps, "size_cv": m.size_cv,
                "trace": read_trace(m.trace) if m.trace else None, "mtu": m.mtu, "burst": m.burst,
                "shaping_ns": m.shaping}
    if isinstance(m, Audio):
        return {"kind": "audio", "mean_rate_bps": m.rate, "period_ns": m.period, "size_cv": m.size_cv}
    return {"kind": "poisson", "rate_bps": m.rate, "packet_size": m.packet_size}


def _mpeg(m: Mpeg) -> dict[str, Any]:
    if m.trace:
        sizes: dict[str, Any] = {"kind": "trace", "sizes": read_trace(m.trace)}
    elif m.size_model == "normal":
        sizes = {"kind": "normal", "cv": m.size_cv}
    else:
        sizes = {"kind": "constant"}
    fs, cl = m.frame_sizes, m.classes
    return {
        "kind": "mpeg", "gop": m.gop, "fps": m.fps, "mean_sizes": [fs.I, fs.P, fs.B], "sizes": sizes,
        "max_packet": m.max_packet, "classes": [cl.I, cl.P, cl.B], "responsive": m.responsive,
        "feedback_interval_ns": m.feedback_interval or 0, "up_after": m.up_after,
    }


def read_trace(path: str) -> list[int]:
    """Frame sizes in bytes, one per line; blank lines and '#' comments are skipped."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise ValueError(f"trace {path!r}: {e.strerror}") from None
    sizes = []
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not text.isdigit() or int(text) == 0:
            raise ValueError(f"trace {path!r} line {n}: {text!r} is not a positive whole number of bytes")
        sizes.append(int(text))
    if not sizes:
        raise ValueError(f"trace {path!r}: no frame sizes")
    return sizes


def _group(g: FlowGroup, duration: int) -> dict[str, Any]:
    lo, hi = g.sender_delay_range()
    return {
        "name": g.name, "count": g.count, "start_ns": g.start, "start_jitter_ns": g.start_jitter,
        "stop_ns": duration if g.stop is None else min(g.stop, duration),
        "access_rate_bps": g.access_rate, "sender_delay_ns": [lo, hi],
        "receiver_delay_ns": g.receiver_delay, "class_weights": list(g.class_weights or (0.0, 0.0, 0.0)),
        "dscp": g.dscp, "app": _app(g.app), "path_loss": g.path_loss,
        **({"path": list(g.path)} if g.path is not None else {}),
    }


# ---- loading -------------------------------------------------------------------------------


def _parse_override_value(text: str) -> Any:
    """A --set value: a TOML value if it parses as one ("3", "true", "[1, 2]"), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Applies one `dotted.key=value`. List items are addressed by index or by their `name`."""
    if "=" not in assignment:
        raise ScenarioError([f"--set {assignment!r}: expected key=value, e.g. topology.bottleneck.rate=30Mbps"])
    key, _, raw = assignment.partition("=")
    set_path(data, key.strip(), _parse_override_value(raw.strip()))


def set_path(data: dict[str, Any], key: str, value: Any) -> None:
    """Sets the field at dotted path `key` (as `--set` names it) to an already parsed value."""
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        where = ".".join(parts[: i + 1])
        if isinstance(node, list):
            node = _list_item(node, part, where)
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ScenarioError([Problem("--set", key, "override", f"{where} is a value, not a table")])
    last = parts[-1]
    if isinstance(node, list):
        idx = _list_index(node, last, key)
        node[idx] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError([Problem("--set", key, "override", "cannot set a key inside a value")])


def _list_index(items: list[Any], part: str, where: str) -> int:
    if part.isdigit() and int(part) < len(items):
        return int(part)
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == part:
            return i
    names = [str(i) for i in range(len(items))] + [
        str(it["name"]) for it in items if isinstance(it, dict) and "name" in it]
    raise ScenarioError([Problem("--set", where, "override",
                                 f"no item {part!r}; use an index or a name: {', '.join(names)}")])


def _list_item(items: list[Any], part: str, where: str) -> Any:
    return items[_list_index(items, part, where)]


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
            msg = "missing 'kind'; allowed: " + ", ".join(
                QDISC_MODELS if loc.endswith("qdisc") else APP_MODELS)
        problems.append(Problem(origin, loc, e["type"], msg))
    return problems


_UNION_FIELDS = {"qdisc": QDISC_MODELS, "access_qdisc": QDISC_MODELS, "app": APP_MODELS}


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


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ScenarioError([f"{path}: no such scenario file"]) from None
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError([f"{path}: not valid TOML: {e}"]) from None


def resolve_path(name: str) -> Path:
    """A file path, or a built-in scenario name such as `rb-rio/tcp-red`."""
    p = Path(name)
    if p.exists():
        return p
    builtin = BUILTIN_DIR / (name if name.endswith(".toml") else f"{name}.toml")
    if builtin.exists():
        return builtin
    return p


def validate(data: dict[str, Any], origin: str = "scenario") -> Scenario:
    """The scenario model, after pydantic's checks and the simulator's own (aqmlab-sim
    config.rs), so that whatever either refuses is refused here, before anything runs."""
    try:
        sc = Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(_problems(e, origin)) from None
    try:
        config = sc.to_sim_config()  # reads trace files
    except ValueError as e:
        raise ScenarioError([Problem(origin, "", "trace", str(e))]) from None
    try:
        # The simulator's guard: the models above hold every user-facing check, so this only
        # fires when one is missing there (tests/test_schema.py proves it does not).
        _core.check_sim_config(json.dumps(config))
    except _core.ConfigError as e:
        raise ScenarioError([Problem(origin, _scenario_path(e.path), f"engine:{e.kind}", e.message)]) from None
    return sc


#: The simulator's config keeps the topology's tables at its top level.
_ENGINE_TOPOLOGY_KEYS = ("bottleneck", "reverse", "access_qdisc", "chain")


def _scenario_path(engine_path: str) -> str:
    """A location in the simulator's config as the scenario file spells it."""
    first = engine_path.split(".", 1)[0]
    return f"topology.{engine_path}" if first in _ENGINE_TOPOLOGY_KEYS else engine_path


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`: tables merge key by key, everything else (arrays too) replaces."""
    merged = dict(base)
    for k, v in over.items():
        merged[k] = deep_merge(merged[k], v) if isinstance(v, dict) and isinstance(merged.get(k), dict) else v
    return merged


def _anchor_traces(data: dict[str, Any], folder: Path) -> None:
    """Trace files are named relative to the scenario file that names them."""
    for g in data.get("flows", []) if isinstance(data.get("flows"), list) else []:
        app = g.get("app") if isinstance(g, dict) else None
        if isinstance(app, dict) and isinstance(app.get("trace"), str):
            app["trace"] = str((folder / app["trace"]).resolve())


def read_scenario_file(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Reads a scenario, resolving `extends = "other.toml"` (relative to the file) recursively."""
    data = read_toml(path)
    _anchor_traces(data, path.parent)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ScenarioError([f"{path}: extends must be a file name"])
    base_path = (path.parent / parent).resolve()
    if base_path in seen:
        raise ScenarioError([f"{path}: extends forms a cycle through {base_path.name}"])
    return deep_merge(read_scenario_file(base_path, seen + (base_path,)), data)


def load(name: str, overrides: list[str] = (), seed: int | None = None) -> tuple[Scenario, dict[str, Any]]:
    """Reads, overrides and validates a scenario. Returns the model and the raw merged data."""
    path = resolve_path(name)
    data = read_scenario_file(path)
    for assignment in overrides:
        apply_override(data, assignment)
    if seed is not None:
        data["seed"] = seed
    return validate(data, str(path)), data
