"""The scenario model turned into the simulator's config (aqmlab-sim config.rs): the renaming to
`*_ns`/`*_bps` keys and the defaults that depend on other fields."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqmlab.abr_ladder import ladder as abr_ladder
from aqmlab.scenario.applications import MEDIA, Abr, Audio, Bulk, Cbr, Mpeg, Pels, Ping, Stream, Tcp, Video
from aqmlab.scenario.disciplines import Classifier, PelsFeedback, Prio, Wrr
from aqmlab.scenario.flows import FlowGroup
from aqmlab.scenario.topology import Hop, Link
from aqmlab.traces import TraceFileError, read_delivery_trace, read_link_schedule, synthetic_opportunities

if TYPE_CHECKING:
    from aqmlab.scenario.model import Marking, Scenario


def sim_config(sc: Scenario) -> dict[str, Any]:
    """The normalized form `aqmlab._core.Simulation` takes (see aqmlab-sim's config.rs):
    nanoseconds, bits per second and bytes, every default filled in."""
    t = sc.topology
    reverse = t.reverse or t.bottleneck.same_service()
    return {
        "seed": sc.seed,
        "duration_ns": sc.duration,
        "topology": {
            "bottleneck": _link(t.bottleneck, "topology.bottleneck", sc.seed, "bottleneck"),
            # The default way back follows the bottleneck's own trace, the same draws included.
            "reverse": _link(reverse, "topology.reverse", sc.seed, "reverse") if t.reverse
            else _link(reverse, "topology.bottleneck", sc.seed, "bottleneck"),
            "access_qdisc": _qdisc(t.access_qdisc),
            "chain": [_hop(h, i, sc.seed) for i, h in enumerate(t.chain)],
        },
        "flow_groups": [_group(g, sc.duration, sc.marking) for g in sc.flows],
        "records": {
            "packet_events": sc.records.packet_events,
            "queue_sample_ns": sc.records.queue_sample,
            "flow_sample_ns": sc.records.flow_sample,
            "pcap": sc.records.pcap,
        },
        "engine": {"access_link_events": sc.engine.access_link_events},
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
_DURATION_KEYS = {"time_constant", "target", "interval", "t_update", "max_burst", "tupdate", "step_thresh",
                  "blue_threshold", "rtt"}


def _classifier(c: Classifier) -> dict[str, Any]:
    d: dict[str, Any] = {"by": "class" if c.by == "color" else c.by}
    if c.map is not None:
        d["map"] = [list(p) for p in c.map]
    if c.default_band is not None:
        d["default_band"] = c.default_band
    return d


def _link(link: Link, field: str, seed: int, name: str) -> dict[str, Any]:
    """A link as the engines take it; `field` is where the scenario names it, for errors, and
    `name` the simulator's name of the link whose stream draws a generated trace. A trace link
    carries its opportunities and a rate of 0; a rate link is unchanged (no `trace` key), so
    the configs of rate links are what they always were."""
    out: dict[str, Any]
    if link.trace is None:
        out = {"rate_bps": link.rate, "delay_ns": link.delay, "qdisc": _qdisc(link.qdisc)}
    else:
        if isinstance(link.trace, str):
            opportunities = read_delivery_trace(link.trace, f"{field}.trace")
        else:
            opportunities = synthetic_opportunities(link.trace, seed, name, f"{field}.trace")
        out = {"rate_bps": 0, "delay_ns": link.delay, "qdisc": _qdisc(link.qdisc),
               "trace": {"opportunities_ms": opportunities}}
    if link.impairments is not None:
        out["impairments"] = link.impairments.engine_config()
    if link.schedule is not None:
        # A scheduled link's rate and delay in the config are its first step's (a step at 0
        # may override the link's own); configs of links without a schedule are unchanged.
        steps = read_link_schedule(link.schedule, f"{field}.schedule") if isinstance(link.schedule, str) else None
        try:
            schedule = link.engine_schedule(steps)
        except ValueError as e:
            raise TraceFileError(f"{field}.schedule", f"{link.schedule}: {str(e).removeprefix('schedule: ')}") from None
        # (A trace link's steps carry rate 0, "no rate of its own", as the link does.)
        out["rate_bps"], out["delay_ns"] = schedule["steps"][0]["rate_bps"], schedule["steps"][0]["delay_ns"]
        out["schedule"] = schedule
    return out


def _hop(hop: Hop, i: int, seed: int) -> dict[str, Any]:
    """Hop `i` of the chain, named as the simulator names its links (`hop<i+1>`, `hop<i+1>-rev`);
    without its own way back, the forward link's service, trace draws included."""
    field, name = f"topology.chain.{i}", f"hop{i + 1}"
    back = hop.reverse or hop.forward.same_service()
    reverse = _link(back, f"{field}.reverse", seed, f"{name}-rev") if hop.reverse \
        else _link(back, f"{field}.forward", seed, name)
    return {"forward": _link(hop.forward, f"{field}.forward", seed, name), "reverse": reverse}


def _app(app: Any) -> dict[str, Any]:
    if isinstance(app, Cbr):
        return {"kind": "cbr", "rate_bps": app.rate, "packet_size": app.packet_size, **_ecn(app.ecn)}
    if isinstance(app, Mpeg):
        return _mpeg(app)
    if isinstance(app, Pels):
        return {"kind": "pels", "fps": app.fps, "packet_size": app.packet_size,
                "base_packets": app.base_packets, "max_packets": app.max_packets,
                "initial_rate_bps": float(app.initial_rate), "alpha_bps": float(app.alpha),
                "beta": app.beta, "sigma": app.sigma, "p_thr": app.p_thr, "gamma_low": app.gamma_low,
                "gamma_init": app.gamma_init, "partition": app.partition}
    if isinstance(app, MEDIA):
        return {"kind": "rtp", "media": _media(app), "jitter_sd_ns": app.jitter, **_ecn(app.ecn),
                **_call_rate_control(app)}
    if isinstance(app, Stream):
        return _stream(app)
    if isinstance(app, Bulk):
        return {"kind": "bulk", "tcp": _tcp(app.tcp)}
    if isinstance(app, Abr):
        return _abr(app)
    if isinstance(app, Ping):
        return {"kind": "ping", "interval_ns": app.interval, "packet_size": app.packet_size}
    # A new application model without its arm here must fail loudly, not run as bulk TCP.
    raise TypeError(f"no simulator config for application {type(app).__name__}")


#: The engines' names of the ECN codepoints a UDP source may set.
_ECN_CODEPOINTS = {"not-ect": "NotEct", "ect0": "Ect0", "ect1": "Ect1"}


def _ecn(codepoint: str) -> dict[str, str]:
    """The engine's `ecn` key, left out at the default (Not-ECT) so that the normalized config
    of a scenario without the field is what it was before the field existed."""
    return {} if codepoint == "not-ect" else {"ecn": _ECN_CODEPOINTS[codepoint]}


def _tcp(t: Tcp) -> dict[str, Any]:
    return {
        "mss": t.mss, "initial_cwnd_segments": t.initial_cwnd, "initial_rto_ns": t.initial_rto,
        "min_rto_ns": t.min_rto, "max_rto_ns": t.max_rto, "clock_granularity_ns": t.clock_granularity,
        "delayed_ack": t.delayed_ack, "delayed_ack_timeout_ns": t.delayed_ack_timeout,
        "rwnd": t.rwnd, "ecn": t.ecn, "sack": t.sack, "frto": t.frto,
        "congestion_control": t.congestion_control,
        # Left out at the default (ECT(0)) so that a scenario without the field normalizes as
        # it did before the field existed.
        **({"ecn_codepoint": t.ecn_codepoint} if t.ecn_codepoint != "ect0" else {}),
        # Left out when off, so that a scenario without them normalizes as it did before they
        # existed.
        **({"prr": True} if t.prr else {}),
        **({"prr_variant": t.prr_variant} if t.prr_variant != "linux" else {}),
        **({"limited_transmit": True} if t.limited_transmit else {}),
        **({"rack": True} if t.rack else {}),
        **({"rto_restart_on_head_retransmit": True} if t.rto_restart_on_head_retransmit else {}),
        **({"rtt_sample_every_ack": True} if t.rtt_sample_every_ack else {}),
        **({"rto_estimator": t.rto_estimator} if t.rto_estimator != "rfc6298" else {}),
        **({"hystart": True} if t.hystart else {}),
        **({"cubic_hystart": True} if t.cubic_hystart else {}),
        **({"cubic_alpha_to_one": False} if t.cubic_alpha_to_one is False else {}),
        **({"rate_estimator": True} if t.rate_estimator else {}),
        **({"rwnd_autotuning": True} if t.rwnd_autotuning else {}),
        **({"send_buffer": t.send_buffer} if t.send_buffer else {}),  # 0 and unset: unlimited
        **({"cwnd_limited_growth": True} if t.cwnd_limited_growth else {}),
        **({"pacing": True} if t.paced() else {}),
        **({"tso_autosize": True} if t.tso_autosize else {}),
        **({"byte_counting": True} if t.byte_counting else {}),
        **({"quickack": True} if t.quickack else {}),
        # On unless switched off (the Rust default), so unset they normalize as before.
        **({"bbr_ack_aggregation": False} if t.bbr_ack_aggregation is False else {}),
        **({"bbr_policer_detection": False} if t.bbr_policer_detection is False else {}),
        **({"prague_ecn_fallback": True} if t.prague_ecn_fallback else {}),
        **({"prague_rtt_scaling": t.prague_rtt_scaling} if t.prague_rtt_scaling != "rate" else {}),
        **({"ssthresh_basis": t.ssthresh_basis} if t.ssthresh_basis != "flight_size" else {}),
        **({"handshake": True} if t.handshake else {}),
    }


def _abr(a: Abr) -> dict[str, Any]:
    buffer_s = a.max_buffer / 1e9
    # BBA's defaults keep the paper's proportions of its 240 s buffer (aqmlab-model abr/bba.rs).
    reservoir = a.bba_reservoir / 1e9 if a.bba_reservoir is not None else 90 / 240 * buffer_s
    cushion = a.bba_cushion / 1e9 if a.bba_cushion is not None else 126 / 240 * buffer_s
    target = a.bola_buffer_target / 1e9 if a.bola_buffer_target is not None else buffer_s
    return {
        "kind": "abr",
        "abr": {"algorithm": a.algorithm, "safety_factor": a.safety_factor,
                "throughput_window": a.throughput_window, "bba_reservoir_s": reservoir,
                "bba_cushion_s": cushion, "bola_gamma_p": a.bola_gamma_p, "bola_buffer_target_s": target,
                "mpc_horizon": a.mpc_horizon, "bola_e_variant": a.bola_e_variant},
        "ladder": abr_ladder(a.ladder, a.segment_duration, a.content),
        "max_buffer_ns": a.max_buffer, "startup_ns": a.startup_ns(), "request_size": a.request_size,
        "request_timeout_ns": a.request_timeout, "tcp": _tcp(a.tcp),
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


def _call_rate_control(m: Any) -> dict[str, Any]:
    """The `gcc` or `scream` key of a video flow with that congestion_control; nothing otherwise
    (so that every open-loop flow's configuration is unchanged)."""
    if not isinstance(m, Video) or m.congestion_control not in ("gcc", "scream"):
        return {}
    return {m.congestion_control: getattr(m, m.congestion_control).engine_config()}


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


def _group(g: FlowGroup, duration: int, marking: Marking) -> dict[str, Any]:
    lo, hi = g.sender_delay_range()
    app = _app(g.app)
    weights = g.class_weights
    if marking.by_frame_type(g.app):
        # Left out when off, so that a scenario without marking normalizes as it did before.
        app = {**app, "mark_frames": True}
    elif weights is None and not isinstance(g.app, (Mpeg, Pels)) and not (isinstance(g.app, Video) and g.app.is_call()):
        # MPEG and PELS mark their own packets; a call's take no class_weights (class 0 unless
        # marked by frame type).
        weights = marking.others
    return {
        "name": g.name, "count": g.count, "start_ns": g.start, "start_jitter_ns": g.start_jitter,
        "stop_ns": duration if g.stop is None else min(g.stop, duration),
        "access_rate_bps": g.access_rate, "sender_delay_ns": [lo, hi],
        "receiver_delay_ns": g.receiver_delay, "class_weights": list(weights or (0.0, 0.0, 0.0)),
        "dscp": g.dscp, "app": app, "path_loss": g.path_loss,
        **({"path": list(g.path)} if g.path is not None else {}),
    }
