"""Queue disciplines: one model per `qdisc.kind`, the `Qdisc` union and `QDISC_MODELS`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from aqmlab.scenario.base import MAX_BANDS, U32, Strict
from aqmlab.units import Duration, Limit, Rate, Size, format_ns, written

#: Largest alpha and beta tc-dualpi2 accepts, Hz: (2^31 - 1) / 256 (Linux ALPHA_BETA_MAX).
ALPHA_BETA_MAX = (2**31 - 1) / 256


class DropTail(Strict):
    """FIFO that drops arrivals once full."""

    kind: Literal["droptail"]
    limit: Limit = Field(written("100p"), description="capacity: packets (\"100p\") or bytes (\"150KB\")")


class Red(Strict):
    """Random Early Detection (Floyd and Jacobson 1993), with gentle, byte mode and ECN."""

    kind: Literal["red"]
    limit: Limit = Field(written("100p"), description="physical capacity, packets or bytes")
    min_th: float = Field(20.0, ge=0, json_schema_extra={"unit": "packets"},
                          description="lower average-queue threshold")
    max_th: float = Field(60.0, gt=0, json_schema_extra={"unit": "packets"},
                          description="upper average-queue threshold")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the average queue")
    max_p: float = Field(0.1, gt=0, le=1, description="drop probability at max_th")
    gentle: bool = Field(True, description="ramp to 1 between max_th and 2*max_th")
    mode: Literal["packets", "bytes"] = Field("packets", description="measure the queue in packets or bytes")
    ecn: bool = Field(False, description="mark ECN-capable packets instead of dropping")
    mean_pkt_size: Size = Field(written("1000B"), ge=1,
                                description="typical packet size: byte-mode unit and idle decay")
    wait: bool = Field(False, description="wait between drops as ns-2's wait_ and ns-3's RedQueueDisc Wait do "
                                          "(on by default there; off here, as the papers' runs had it): no early "
                                          "drop until count * p_b reaches 1, then p_b / (2 - count * p_b)")

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> Red:
        """min_th < max_th."""
        if self.min_th >= self.max_th:
            raise ValueError(f"min_th ({self.min_th:g}) must be smaller than max_th ({self.max_th:g})")
        return self


class RbRed(Strict):
    """Rate-based RED: drops from the estimated arrival rate against the link rate, adjusted
    by the average queue and the aggressiveness AP (see aqmlab-core qdisc/rb_red.rs)."""

    kind: Literal["rb_red"]
    limit: Limit = Field(written("100p"), description="physical capacity, packets or bytes")
    time_constant: Duration = Field(written("100ms"), gt=0, description="time constant of the arrival-rate estimator")
    aggressiveness: float = Field(2.0, gt=0, description="AP: the average queue settles near 2*target/AP")
    target_queue: float | None = Field(None, gt=0, json_schema_extra={"unit": "packets"},
                                       description="target average queue; default half the limit")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the average queue")
    mean_pkt_size: Size = Field(written("1000B"), ge=1, description="typical packet size (byte-mode unit)")

    @model_validator(mode="after")
    def _target_within_limit(self) -> RbRed:
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
    def _ordered(self) -> RioCurve:
        """min_th < max_th."""
        if self.min_th >= self.max_th:
            raise ValueError(f"min_th ({self.min_th:g}) must be smaller than max_th ({self.max_th:g})")
        return self


class Rio(Strict):
    """RIO (Clark and Fang) with three drop precedences and coupled averages: class k's
    average counts the packets of classes >= k."""

    kind: Literal["rio"]
    limit: Limit = Field(written("100p"), description="physical capacity, packets or bytes")
    class1: RioCurve = Field(default_factory=lambda: RioCurve(min_th=10, max_th=30, max_p=0.2),
                             description="RED curve of the lowest class")
    class2: RioCurve = Field(default_factory=lambda: RioCurve(min_th=20, max_th=50, max_p=0.1),
                             description="RED curve of the middle class")
    class3: RioCurve = Field(default_factory=lambda: RioCurve(min_th=30, max_th=70, max_p=0.05),
                             description="RED curve of the highest class")
    w_q: float = Field(0.002, gt=0, le=1, description="EWMA weight of the averages")
    mean_pkt_size: Size = Field(written("1000B"), ge=1, description="typical packet size")


FLOW_FIELDS = ("src", "dst", "sport", "dport", "proto", "flow")
FlowField = Literal["src", "dst", "sport", "dport", "proto", "flow"]


def _five_tuple() -> list[FlowField]:
    return ["src", "dst", "sport", "dport", "proto"]


class FlowKey(Strict):
    """Which header fields identify a flow for per-flow disciplines."""

    fields: list[FlowField] = Field(
        default_factory=_five_tuple,
        description="5-tuple by default; e.g. [\"sport\"] aggregates an application")

    @model_validator(mode="after")
    def _distinct(self) -> FlowKey:
        """fields is non-empty and has no repeats."""
        if not self.fields or len(set(self.fields)) != len(self.fields):
            raise ValueError(f"fields must be a non-empty list without repeats of: {', '.join(FLOW_FIELDS)}")
        return self


class Sqf(Strict):
    """Shortest queue first with longest queue drop (Bonald, Muscariello, Ostallo 2011)."""

    kind: Literal["sqf"]
    limit: Limit = Field(written("100p"), description="shared buffer, packets or bytes")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification")


class Drr(Strict):
    """Fair queueing as deficit round robin (Shreedhar and Varghese 1995) with longest queue drop."""

    kind: Literal["drr", "fq"]
    limit: Limit = Field(written("100p"), description="shared buffer, packets or bytes")
    quantum: int = Field(1500, ge=1, lt=U32, json_schema_extra={"unit": "bytes"},
                         description="DRR bytes per round (one MTU)")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification")


class Pfq(Strict):
    """Priority fair queueing: flows with little queued are served first, the rest by DRR
    (see aqmlab-core qdisc/pfq.rs for the exact rule and its known difference from the paper)."""

    kind: Literal["pfq"]
    limit: Limit = Field(written("100p"), description="shared buffer, packets or bytes")
    quantum: int = Field(1500, ge=1, lt=U32, json_schema_extra={"unit": "bytes"}, description="DRR bytes per round")
    priority_threshold: int = Field(1500, ge=0, lt=U32, json_schema_extra={"unit": "bytes"},
                                    description="bytes queued below which a flow has priority")
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
    limit: Limit = Field(written("1000p"), description="physical capacity, packets or bytes (Linux default 1000p)")
    target: Duration = Field(written("5ms"), description="acceptable standing sojourn time (RFC 8289 4.3)")
    interval: Duration = Field(written("100ms"),
                               description="window the sojourn must stay above target in (RFC 8289 4.4)")
    mtu: Size = Field(written("1500B"), description="no drop while at most this many bytes are queued (RFC 8289 5.3)")
    ecn: bool = Field(False, description="CE-mark ECN-capable packets instead of dropping (Linux default off)")

    @model_validator(mode="after")
    def _ordered(self) -> Codel:
        """0 < target < interval (RFC 8289 suggests target 5-10 % of interval)."""
        _target_below_interval(self)
        return self


class FqCodel(Strict):
    """FQ-CoDel (RFC 8290): hashed flow queues served by DRR with new/old flow lists, CoDel in
    each queue, overflow drops half the fattest queue (Linux batch, at most drop_batch packets)."""

    kind: Literal["fq_codel"]
    limit: Limit = Field(written("10240p"), description="capacity over all queues, packets or bytes (RFC 8290 5.1)")
    memory_limit: Size | None = Field(None,
                                      description="optional cap on bytes queued (Linux memory_limit); none by default")
    flows: int = Field(1024, ge=1, le=65536, json_schema_extra={"unit": "queues"},
                       description="hash buckets, i.e. flow queues (RFC 8290 5.1)")
    quantum: Size = Field(written("1514B"), description="DRR bytes per round per queue (Linux: one Ethernet frame)")
    target: Duration = Field(written("5ms"), description="CoDel target per queue")
    interval: Duration = Field(written("100ms"), description="CoDel interval per queue")
    mtu: Size = Field(written("1500B"), description="CoDel's one-MTU no-drop test (on the whole backlog, as Linux)")
    ecn: bool = Field(True, description="CE-mark ECN-capable packets instead of dropping (RFC 8290 default on)")
    drop_batch: int = Field(64, ge=1, json_schema_extra={"unit": "packets"},
                            description="most packets dropped from the fattest queue per overflow (Linux)")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification for the hash")

    @model_validator(mode="after")
    def _sane(self) -> FqCodel:
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
    limit: Limit = Field(written("1000p"), description="physical capacity, packets or bytes (Linux default 1000p)")
    target: Duration = Field(written("15ms"), description="target queue delay QDELAY_REF (RFC 8033 4.2)")
    t_update: Duration = Field(written("15ms"), description="drop-probability update period (RFC 8033 4.2)")
    alpha: float = Field(0.125, ge=0, json_schema_extra={"unit": "1/s"},
                         description="weight of the delay error (RFC 8033 4.2)")
    beta: float = Field(1.25, ge=0, json_schema_extra={"unit": "1/s"},
                        description="weight of the delay trend (RFC 8033 4.2)")
    max_burst: Duration = Field(written("150ms"), description="burst allowance (RFC 8033 4.4)")
    ecn: bool = Field(False, description="CE-mark ECN-capable packets while drop_prob <= mark_ecn_threshold")
    mark_ecn_threshold: float = Field(0.1, ge=0, le=1, description="highest drop probability that marks (RFC 8033 5.1)")
    bytemode: bool = Field(False, description="scale the drop probability by size/mtu (Linux bytemode)")
    mtu: Size = Field(written("1500B"), description="packet size of the 2-packet no-drop floor and the bytemode unit")
    derandomize: bool = Field(False, description="spread drops by the accumulated probability (RFC 8033 5.4)")
    estimator: Literal["timestamp", "rate"] = Field(
        "timestamp",
        description="queue delay from packet timestamps (Linux, ns-3 default) or the departure rate (RFC 8033 5.2)")
    dq_threshold: Size = Field(written("16384B"),
                               description="bytes per departure-rate measurement (estimator = \"rate\")")

    @model_validator(mode="after")
    def _sane(self) -> Pie:
        """target and t_update positive; mtu and dq_threshold at least 1 byte."""
        _positive_durations(self, "target", "t_update")
        if self.mtu <= 0 or self.dq_threshold <= 0:
            raise ValueError("mtu and dq_threshold must be at least 1 byte")
        return self


class Dualpi2(Strict):
    """DualPI2 (RFC 9332, Linux sch_dualpi2): an L queue for ECT(1)/CE packets coupled to a
    classic queue; a PI controller's base probability p' drops or marks classic packets with
    p'^2 and marks L packets with k*p' or, above step_thresh, always; a credit scheduler gives
    the classic queue classic_protection % under saturation. Defaults as tc-dualpi2."""

    kind: Literal["dualpi2"]
    limit: Limit = Field(written("10000p"), description="capacity of both queues together, packets or bytes "
                                                        "(Linux default 10000p)")
    target: Duration = Field(written("15ms"), description="PI target queue delay (Linux default 15 ms)")
    tupdate: Duration = Field(written("16ms"), description="update period of p' (Linux default 16 ms; at least 1 us)")
    alpha: float = Field(0.16, ge=1 / 256, le=ALPHA_BETA_MAX, json_schema_extra={"unit": "Hz"},
                         description="integral gain (tc-dualpi2 default 0.16)")
    beta: float = Field(3.2, ge=1 / 256, le=ALPHA_BETA_MAX, json_schema_extra={"unit": "Hz"},
                        description="proportional gain (tc-dualpi2 default 3.2)")
    coupling_factor: int = Field(2, ge=1, le=255, description="k: L packets are marked with k * p' (Linux default 2)")
    step_thresh: Duration = Field(written("1ms"), description="L-queue sojourn time above which L packets are "
                                                              "always marked (Linux default 1 ms)")
    step_thresh_packets: int | None = Field(None, ge=0, le=U32, json_schema_extra={"unit": "packets"},
                                            description="step threshold in packets left in the L queue instead "
                                                        "of step_thresh (tc-dualpi2 step_thresh Np); off by default")
    min_qlen_step: int = Field(0, ge=0, le=U32, json_schema_extra={"unit": "packets"},
                               description="fewest L packets an arrival must find for the step to apply (Linux 0)")
    drop_on_overload: bool = Field(True, description="once k*p' > 1, drop L packets too with p'^2 (Linux default); "
                                                     "false (overflow): keep marking them, cap p' at 1/k")
    drop_enqueue: bool = Field(False, description="drop or mark on arrival instead of at dequeue (Linux default "
                                                  "drop_dequeue)")
    ecn_mask: Literal["l4s_ect", "any_ect"] = Field("l4s_ect", description="codepoints of the L queue: ECT(1) and CE "
                                                                        "(default), or any ECN-capable")
    classic_protection: int = Field(10, ge=0, le=100, json_schema_extra={"unit": "%"},
                                    description="classic queue's scheduler share under saturation (Linux default 10)")
    mtu: Size = Field(written("1500B"), description="2-MTU no-drop floor and scheduler credit unit")

    @model_validator(mode="after")
    def _sane(self) -> Dualpi2:
        """tupdate at least 1 us (tc-dualpi2); mtu at least 1 byte."""
        if self.tupdate < 1_000:
            raise ValueError(f"tupdate must be at least 1us, got {format_ns(self.tupdate)}")
        if self.mtu <= 0:
            raise ValueError("mtu must be at least 1 byte")
        return self


class Cobalt(Strict):
    """COBALT (Linux sch_cake's cobalt_* functions, on one FIFO as ns-3's CobaltQueueDisc):
    CoDel with count decay between dropping states, in parallel with BLUE, whose drop
    probability rises by p_inc on overflow (or a sojourn above blue_threshold) and falls by
    p_dec when the queue is found empty."""

    kind: Literal["cobalt"]
    limit: Limit = Field(written("1500000B"), description="physical capacity, packets or bytes (ns-3 CobaltQueueDisc "
                                                          "default 1000 x 1500 B)")
    target: Duration = Field(written("5ms"), description="CoDel target and BLUE's update spacing (Linux cake, ns-3)")
    interval: Duration = Field(written("100ms"), description="CoDel interval (Linux cake, ns-3)")
    p_inc: float = Field(1 / 256, gt=0, le=1, description="BLUE's step up of p_drop (Linux cake_set_rate 1/256)")
    p_dec: float = Field(1 / 4096, gt=0, le=1, description="BLUE's step down of p_drop (Linux cake_set_rate 1/4096)")
    blue_threshold: Duration = Field(written("400ms"), description="sojourn time above which a dequeue raises p_drop "
                                                                   "like an overflow (ns-3 BlueThreshold)")
    ecn: bool = Field(False, description="CE-mark ECN-capable packets instead of CoDel's drop (ns-3 default off); "
                                         "BLUE always drops")

    @model_validator(mode="after")
    def _sane(self) -> Cobalt:
        """target and interval positive."""
        _positive_durations(self, "target", "interval")
        return self


class FqPie(Strict):
    """FQ-PIE (Linux sch_fq_pie): hashed flow queues served by FQ-CoDel's DRR with new/old flow
    lists, PIE in each queue (drop or mark on arrival by the queue's own probability), overflow
    drops the arrival. Defaults as tc-fq_pie."""

    kind: Literal["fq_pie"]
    limit: Limit = Field(written("10240p"), description="capacity over all queues, packets or bytes (Linux default "
                                                        "10240p)")
    flows: int = Field(1024, ge=1, le=65536, json_schema_extra={"unit": "queues"},
                       description="hash buckets, i.e. flow queues (Linux default 1024)")
    quantum: Size = Field(written("1514B"), description="DRR bytes per round per queue (Linux: psched_mtu; "
                                                        "at most 1048576 B)")
    target: Duration = Field(written("15ms"), description="PIE target delay per queue (Linux default 15 ms)")
    t_update: Duration = Field(written("15ms"), description="probability update period (Linux default 15 ms)")
    alpha: float = Field(0.125, ge=0, json_schema_extra={"unit": "1/s"},
                         description="weight of the delay error (Linux 2/16)")
    beta: float = Field(1.25, ge=0, json_schema_extra={"unit": "1/s"},
                        description="weight of the delay trend (Linux 20/16)")
    max_burst: Duration = Field(written("150ms"), description="burst allowance per queue (Linux default 150 ms)")
    ecn: bool = Field(False, description="CE-mark ECN-capable arrivals while the queue's probability <= ecn_prob")
    ecn_prob: int = Field(10, ge=0, le=100, json_schema_extra={"unit": "%"},
                          description="highest drop probability that marks instead of drops (Linux default 10)")
    bytemode: bool = Field(False, description="scale the drop probability by size/mtu (Linux default off)")
    mtu: Size = Field(written("1500B"), description="packet size of the 2-packet no-drop floor and the bytemode unit")
    derandomize: bool = Field(False, description="spread drops by the accumulated probability (RFC 8033 5.4)")
    estimator: Literal["timestamp", "rate"] = Field(
        "timestamp", description="queue delay from timestamps (Linux default) or the departure rate")
    dq_threshold: Size = Field(written("16384B"),
                               description="bytes per departure-rate measurement (estimator = \"rate\")")
    flow_key: FlowKey = Field(default_factory=FlowKey, description="flow identification for the hash")

    @model_validator(mode="after")
    def _sane(self) -> FqPie:
        """target and t_update positive; quantum 1 B to 1 MiB; mtu and dq_threshold at least 1 byte."""
        _positive_durations(self, "target", "t_update")
        if not 1 <= self.quantum <= 1 << 20:
            raise ValueError("quantum must be 1 to 1048576 bytes (default 1514B)")
        if self.mtu <= 0 or self.dq_threshold <= 0:
            raise ValueError("mtu and dq_threshold must be at least 1 byte")
        return self


#: tc-cake's rtt presets (iproute2 tc/q_cake.c `presets`): each sets rtt and target = rtt / 20.
CAKE_RTT_PRESETS = {"datacentre": "100us", "lan": "1ms", "metro": "10ms", "regional": "30ms",
                    "internet": "100ms", "oceanic": "300ms", "satellite": "1s", "interplanetary": "1000s"}
#: tc passes rtt and target as a u32 of microseconds.
_CAKE_MAX_US = 2**32 - 1


class Cake(Strict):
    """CAKE (Linux sch_cake): DiffServ tins with bandwidth thresholds, set-associative flow
    queues with host isolation and DRR++, COBALT (CoDel + BLUE) in every queue, a deficit-mode
    shaper with overhead compensation, a memory limit and an optional ACK filter. Parameters and
    defaults as tc-cake(8); hosts are the packets' source and destination nodes."""

    kind: Literal["cake"]
    bandwidth: Rate = Field(written("unlimited"), description="shaper rate, or \"unlimited\" (tc-cake default: "
                                                              "unlimited, tins then shared by DRR weights)")
    rtt: Duration = Field(written("100ms"), description="COBALT's interval, a duration or a preset: "
                                                        + ", ".join(f"{k} ({v})" for k, v in CAKE_RTT_PRESETS.items())
                                                        + " (tc-cake default internet, 100ms)")
    target: Duration | None = Field(None, description="COBALT's target; default rtt / 20, at least 1us (tc-cake)")
    diffserv: Literal["besteffort", "diffserv3", "diffserv4", "diffserv8", "precedence"] = Field(
        "diffserv3", description="DSCP to tin map and tin thresholds (tc-cake default diffserv3)")
    flowmode: Literal["flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost",
                      "triple-isolate"] = Field(
        "triple-isolate", description="flow isolation: per flow, per host, or per flow within per-host fairness "
                                      "(tc-cake default triple-isolate)")
    overhead: int = Field(0, ge=-64, le=256, json_schema_extra={"unit": "bytes"},
                          description="bytes added to each IP packet's length for the shaper (tc-cake: -64 to 256, "
                                      "default 0, raw)")
    mpu: int = Field(0, ge=0, le=256, json_schema_extra={"unit": "bytes"},
                     description="smallest length the shaper charges (tc-cake: 0 to 256, default 0)")
    atm: Literal["noatm", "atm", "ptm"] = Field("noatm", description="link-layer framing: ATM cells (48 B in 53) or "
                                                                     "PTM 64b/65b (tc-cake default noatm)")
    memlimit: Size | None = Field(None, description="buffer memory; default as Linux: 4 x bandwidth x rtt, at least "
                                                    "4 MiB, at most 10240 x 1514 B (unlimited: 10240 x 1514 B)")
    ack_filter: Literal["no-ack-filter", "ack-filter", "ack-filter-aggressive"] = Field(
        "no-ack-filter", description="drop TCP ACKs made redundant by a newer one in the same queue "
                                     "(tc-cake default no-ack-filter)")
    wash: bool = Field(False, description="clear the DSCP after choosing the tin (tc-cake default nowash)")
    ingress: bool = Field(False, description="ingress mode: packets CAKE drops are charged to the shaper too "
                                             "(tc-cake default egress)")

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _unlimited(cls, v: object) -> object:
        """\"unlimited\" is a rate of 0, as Linux keeps it."""
        return "0bps" if v == "unlimited" else v

    @field_validator("rtt", mode="before")
    @classmethod
    def _preset(cls, v: object) -> object:
        """An rtt preset name stands for its duration; any other word is refused with the list."""
        if isinstance(v, str) and v.strip() in CAKE_RTT_PRESETS:
            return CAKE_RTT_PRESETS[v.strip()]
        if isinstance(v, str) and v.strip()[:1].isalpha():
            raise ValueError(f"must be a duration (e.g. \"100ms\") or one of {', '.join(CAKE_RTT_PRESETS)}, "
                             f"got {v!r}")
        return v

    @model_validator(mode="after")
    def _sane(self) -> Cake:
        """rtt and target 1us to 2^32-1 us (tc-cake's u32 of microseconds); memlimit 1 B to 2^32-1 B."""
        for name in ("rtt", "target"):
            v = getattr(self, name)
            if v is not None and not 1000 <= v <= _CAKE_MAX_US * 1000:
                raise ValueError(f"{name} must be 1us to {_CAKE_MAX_US}us (tc-cake's range), got {format_ns(v)}")
        if self.bandwidth < 0:
            raise ValueError("bandwidth must be a rate or \"unlimited\"")
        if self.memlimit is not None and not 1 <= self.memlimit <= 2**32 - 1:
            raise ValueError(f"memlimit must be 1 to {2**32 - 1} bytes (tc-cake's u32), got {self.memlimit}")
        return self


class Tbf(Strict):
    """Token bucket filter, as Linux tbf: tokens at `rate` up to `burst` bytes; a packet leaves
    when the bucket holds its size."""

    kind: Literal["tbf"]
    rate: Rate = Field(..., description="token rate")
    burst: Size = Field(written("1600B"), description="bucket size (largest burst)")
    limit: Limit = Field(written("10KB"), description="queue limit, bytes or packets")

    @model_validator(mode="after")
    def _sane(self) -> Tbf:
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
    map: list[tuple[int, int]] | None = Field(None,
                                              description="[value, band] pairs; default by class: 3->0, 2->1, 1->2")
    default_band: int | None = Field(None, ge=0, lt=MAX_BANDS,
                                     description="band of unlisted packets; default the last band")

    @model_validator(mode="after")
    def _dscp_needs_map(self) -> Classifier:
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
    bands: list[Qdisc] = Field(..., min_length=1, max_length=MAX_BANDS,
                                 description="child disciplines, highest priority first")
    classifier: Classifier = Field(default_factory=Classifier, description="packet to band")

    @model_validator(mode="after")
    def _bands_exist(self) -> Prio:
        """The classifier names existing bands only."""
        self.classifier.check_bands(len(self.bands))
        return self


class WrrBand(Strict):
    """One weighted child of WRR."""

    weight: int = Field(..., ge=1, lt=U32, json_schema_extra={"unit": "bytes"},
                        description="bytes served per round")
    qdisc: Qdisc = Field(..., description="the child discipline")


class Wrr(Strict):
    """Weighted round robin (deficit-based, weights in bytes per round) over child disciplines."""

    kind: Literal["wrr"]
    bands: list[WrrBand] = Field(..., min_length=1, max_length=MAX_BANDS, description="weighted child disciplines")
    classifier: Classifier = Field(default_factory=Classifier, description="packet to band")

    @model_validator(mode="after")
    def _bands_exist(self) -> Wrr:
        """The classifier names existing bands only."""
        self.classifier.check_bands(len(self.bands))
        return self


class PelsFeedback(Strict):
    """PELS router feedback (Kang et al. 2004, eq. 11) around a discipline: every `interval` the
    PELS arrival rate R and loss p = (R - C)/R for C = share x link rate, an epoch count, and a
    (router id, epoch, p) label on every passing coloured packet (kept when upstream's p is larger)."""

    kind: Literal["pels_feedback"]
    router_id: int = Field(1, ge=0, lt=2**32, description="id written into labels; distinct per router")
    interval: Duration = Field(written("30ms"), description="measurement interval T")
    share: float = Field(0.5, gt=0, le=1, description="PELS share of the link rate (C = share x rate)")
    qdisc: Qdisc = Field(...,
                         description="the discipline that queues: normally WRR of PRIO (green, yellow, red) and a FIFO")

    @model_validator(mode="after")
    def _positive_interval(self) -> PelsFeedback:
        """interval positive."""
        if self.interval <= 0:
            raise ValueError("interval must be positive")
        return self


Qdisc = Annotated[DropTail | Red | RbRed | RbRio | Rio | Sqf | Drr | Pfq | Tbf | Prio | Wrr | PelsFeedback | Codel
                  | FqCodel | Pie | Dualpi2 | Cobalt | FqPie | Cake,
                  Field(discriminator="kind")]
for _model in (Prio, WrrBand, Wrr, PelsFeedback):
    _model.model_rebuild()
QDISC_MODELS: dict[str, type[Strict]] = {"droptail": DropTail, "red": Red, "rb_red": RbRed,
                                         "rb_rio": RbRio, "rio": Rio, "sqf": Sqf, "drr": Drr,
                                         "fq": Drr, "pfq": Pfq, "tbf": Tbf, "prio": Prio, "wrr": Wrr,
                                         "pels_feedback": PelsFeedback, "codel": Codel,
                                         "fq_codel": FqCodel, "pie": Pie, "dualpi2": Dualpi2,
                                         "cobalt": Cobalt, "fq_pie": FqPie, "cake": Cake}
