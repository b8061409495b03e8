"""`aqmlab emulate`: a scenario run on real packets.

The orchestrator builds the testbed (:mod:`aqmlab.emu.netns`), starts the router
(:mod:`aqmlab.emu.router`) and the endpoints (:mod:`aqmlab.emu.endpoints`) in their
namespaces, measures the base RTT with ICMP echoes, fixes the epoch (t = 0 of every record),
lets the flows run for the scenario's duration, stops everything and turns what the processes
wrote into the simulator's tables, so the same metrics, tables and plots apply. Whatever
happens (success, error, Ctrl-C, SIGTERM) every process it started is stopped and every
namespace it created is deleted.

What a scenario can and cannot ask of the emulator is checked up front
(:func:`emulation_problems`): one line per field that cannot be emulated.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab import _core
from aqmlab.emu import netns, schedule
from aqmlab.emu.netns import EmulationUnavailable, Testbed
from aqmlab.emu.probe_tools import TOOLS as PROBE_TOOLS, client_argv, source as probe_source, version as tool_version
from aqmlab.metrics import flow_period_metrics, period_metrics
from aqmlab.records import DROP_REASONS, EVENT_NAMES, name_packet_events, null_unset_ssthresh, to_frame
from aqmlab.run import RunResult
from aqmlab.scenario import KERNEL_CONGESTION_CONTROL, Abr, Bulk, Cbr, Ping, Scenario, ScenarioError
from aqmlab.video import annotate_frames

#: Most flows one run may have (each is a socket and a thread in an endpoint process).
MAX_FLOWS = 64
FLOW_PORT_BASE = 5001
# Each flow's sender binds source port SENDER_PORT_BASE + flow (below the kernel's ephemeral
# range, 32768-60999, so nothing else takes it): the 5-tuples, and so a hashing discipline's
# bucket of each flow (FQ-CoDel, SFQ-like keys), are the same in every run of a scenario instead
# of depending on the ephemeral ports the kernel happens to pick.
SENDER_PORT_BASE = 15001
#: IPv4 + UDP headers, bytes: an emulated UDP packet's IP size minus its payload.
UDP_IP_HEADER = _core.UDP_IP_HEADER_BYTES
#: Smallest emulated UDP packet: IPv4 + UDP headers and the 32-byte application header.
MIN_UDP_PACKET = UDP_IP_HEADER + 32
#: Time between fixing the epoch and t = 0: the sender process starts meanwhile.
LEAD_NS = 1_000_000_000
#: How long a process may take to say "ready".
READY_TIMEOUT_S = 20.0

#: Scenario fields the emulator does not reproduce (kernel TCP has its own), for summary.json.
NOT_EMULATED = [
    "flows.*.access_rate (hosts send at veth speed; their access delays are added in the router)",
    "flows.*.app.tcp: initial_cwnd, initial_rto, min_rto, max_rto, clock_granularity, delayed_ack, "
    "delayed_ack_timeout, rwnd, frto, prr, prr_variant, limited_transmit, pacing, rack, hystart, cubic_hystart, "
    "cubic_alpha_to_one, rate_estimator, rwnd_autotuning, rto_restart_on_head_retransmit, rtt_sample_every_ack, "
    "rto_estimator, tso_autosize, send_buffer when unset or 0 B (the kernel keeps tcp_wmem's 4 MiB), "
    "cwnd_limited_growth, "
    "byte_counting, quickack, bbr_ack_aggregation, bbr_policer_detection, ssthresh_basis, handshake (the kernel's "
    "own TCP settings apply; it always opens with a handshake; the kernel paces bbr by itself and the others "
    "only under fq; it runs RACK-TLP whenever sack is on, net.ipv4.tcp_recovery and tcp_early_retrans at "
    "their defaults; its cubic runs tcp_cubic.c's "
    "HyStart, not HyStart++; it always grows the window by acknowledged segments; its receiver always runs "
    "the quick-ACK start; its bbr always runs the ACK-aggregation allowance and the policer detection; it "
    "always estimates the delivery rate, autotunes its receive buffer, restarts the RTO when it "
    "retransmits the head, takes an RTT sample from every ACK, sets the RTO by its own estimator, sizes its "
    "skbs by TSO autosizing and grows a window only while it limits sending)",
    "topology.access_qdisc (no access-link queues)",
    "flows.*.class_weights (classes come from DSCP marks)",
    "marking (classes come from DSCP marks; no sender marks by frame type)",
    "records.pcap",
    "flows.*.app.request_size, request_timeout (abr: the request is a real HTTP GET, carried and "
    "retransmitted by kernel TCP)",
    "flows.*.app.gcc: the feedback report's size (the simulator's is the transport-wide CC draft's, one byte "
    "per arrival; the emulated report is padded to it but lists each arrival in 16 bytes, so a report of more "
    "than a few arrivals is larger); packets below 72 B (an RTP frame's last fragment) go out as 72 B, the RTP "
    "and application headers",
]


class EmulationError(RuntimeError):
    """A process of the run failed; the message names it and quotes its error."""


# ---- what can be emulated -----------------------------------------------------------------


def emulation_problems(sc: Scenario, icmp_groups: frozenset[str] = frozenset()) -> list[str]:
    """One line per field the emulator cannot honour. `icmp_groups` names ping groups to be
    sent as ICMP echoes (the kernel answers) rather than UDP requests echoed by a process."""
    problems = []
    for name in sorted(icmp_groups):
        g = next((g for g in sc.flows if g.name == name), None)
        if g is None or not isinstance(g.app, Ping):
            problems.append(f"flows.{name}: asked to run as ICMP echoes, but it is not a ping group")
    total = sum(g.count for g in sc.flows)
    if total > MAX_FLOWS:
        problems.append(f"flows: {total} flows; the emulator runs at most {MAX_FLOWS} (one socket each)")
    for g in sc.flows:
        if getattr(g.app, "responsive", False):
            problems.append(f"flows.{g.name}.app.responsive: responsive MPEG needs receiver feedback during "
                            f"the run, which the emulator's senders do not have; allowed: false")
        elif getattr(g.app, "congestion_control", "none") == "scream":
            problems.append(f"flows.{g.name}.app.congestion_control: scream is simulator only; "
                            f"allowed: none, gcc")
        elif not isinstance(g.app, (Bulk, Cbr, Abr, Ping)) and not schedule.supports(g.app):
            problems.append(f"flows.{g.name}.app.kind: {g.app.kind!r} cannot be emulated; allowed: "
                            f"bulk, cbr, abr, ping, {', '.join(schedule.KINDS)}")
        if g.path is not None and g.path[0] > g.path[1] and not isinstance(g.app, (Bulk, Ping)):
            problems.append(f"flows.{g.name}.path: {list(g.path)} runs toward R1 (an upload), which the "
                            f"emulator's endpoints do for bulk and ping only; allowed for {g.app.kind}: "
                            f"enter < exit")
        if isinstance(g.app, Ping) and g.name not in icmp_groups and g.app.packet_size < MIN_UDP_PACKET:
            problems.append(f"flows.{g.name}.app.packet_size: {g.app.packet_size} B; emulated UDP ping "
                            f"requests carry a {MIN_UDP_PACKET - UDP_IP_HEADER}-byte application header, "
                            f"so at least {MIN_UDP_PACKET} B")
        if isinstance(g.app, Cbr) and g.app.packet_size < MIN_UDP_PACKET:
            problems.append(f"flows.{g.name}.app.packet_size: {g.app.packet_size} B; emulated UDP packets "
                            f"carry a {MIN_UDP_PACKET - UDP_IP_HEADER}-byte application header, "
                            f"so at least {MIN_UDP_PACKET} B")
    tcp = [g.app.tcp for g in sc.flows if isinstance(g.app, (Bulk, Abr))]
    for field in ("sack", "ecn"):
        if len({getattr(t, field) for t in tcp}) > 1:
            problems.append(f"flows.*.app.tcp.{field}: must be the same for every TCP group when "
                            f"emulated (it is a per-namespace kernel setting)")
    for g in sc.flows:
        tcp_settings = getattr(g.app, "tcp", None)
        if tcp_settings is None:
            continue
        if tcp_settings.congestion_control not in KERNEL_CONGESTION_CONTROL:
            problems.append(f"flows.{g.name}.app.tcp.congestion_control: {tcp_settings.congestion_control!r} "
                            f"is simulator-only; allowed when emulated: "
                            f"{', '.join(KERNEL_CONGESTION_CONTROL)}")
        # Prague's ect1 is part of prague (refused above, in one line).
        if tcp_settings.ecn_codepoint != "ect0" and tcp_settings.congestion_control != "prague":
            problems.append(f"flows.{g.name}.app.tcp.ecn_codepoint: {tcp_settings.ecn_codepoint!r} is "
                            f"simulator-only (kernel TCP sends ECT(0)); allowed when emulated: ect0")
    cc = sc.emulation.congestion_control if sc.emulation else {}
    for name in cc:
        if name != "default" and name not in {g.name for g in sc.flows}:
            problems.append(f"emulation.congestion_control.{name}: no flow group of that name")
    for g in sc.flows:
        if isinstance(g.app, (Bulk, Abr)) and g.name in cc and _tcp_key_set(g.app) \
                and g.app.tcp.congestion_control in KERNEL_CONGESTION_CONTROL \
                and cc[g.name] != KERNEL_CONGESTION_CONTROL[g.app.tcp.congestion_control]:
            problems.append(f"flows.{g.name}.app.tcp.congestion_control: {g.app.tcp.congestion_control!r} "
                            f"disagrees with emulation.congestion_control.{g.name} = {cc[g.name]!r}; "
                            f"set one of them (newreno is kernel reno, cubic is cubic, bbr is bbr)")
    return problems


def _tcp_key_set(app: Bulk | Abr) -> bool:
    return "congestion_control" in app.tcp.model_fields_set


def kernel_congestion_control(sc: Scenario, g: Any) -> str:
    """The kernel module a bulk group's sockets use: the group's entry in
    ``emulation.congestion_control``, else its own ``tcp.congestion_control`` when the scenario
    sets it (newreno -> reno, cubic -> cubic, bbr -> bbr), else the map's ``default``, else reno (the
    simulator's default NewReno)."""
    cc_map = sc.emulation.congestion_control if sc.emulation else {}
    if g.name in cc_map:
        return cc_map[g.name]
    if _tcp_key_set(g.app):
        return KERNEL_CONGESTION_CONTROL[g.app.tcp.congestion_control]
    return cc_map.get("default", "reno")


# ---- plan -----------------------------------------------------------------------------------


def plan_flows(sc: Scenario, work: Path | None = None, icmp_groups: frozenset[str] = frozenset(),
               probe_tools: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One entry per flow, numbered as the simulator numbers them (groups in order). An ABR
    group's engine config (the simulator's, with its ladder) is written to `work` for its
    server and clients, with the encoded ladder's segment files. `upload` is set on a flow
    whose path runs toward R1 (its sender is on R2's side); ping groups in `icmp_groups` are
    planned as ICMP echoes (`proto = "icmp"`). `probe_tools` ({"icmp": path of ping, "udp":
    path of irtt}, :func:`aqmlab.emu.probe_tools.find`) has ping flows of that protocol measured
    by the tool (`tool`, `tool_path`); a protocol without one keeps the emulator's own probe."""
    tools = probe_tools or {}
    flows: list[dict[str, Any]] = []
    abr_files: dict[int, str] = {}
    for gi, g in enumerate(sc.flows):
        lo, hi = g.sender_delay_range()
        stop = sc.duration if g.stop is None else min(g.stop, sc.duration)
        offsets = _core.start_offsets(sc.seed, g.name, g.count, g.start_jitter)
        for i in range(g.count):
            flow = len(flows)
            # Access delays spread over [lo, hi] by index, as the simulator does.
            sender_delay = lo + (hi - lo) * i // (g.count - 1) if g.count > 1 else lo
            # The simulator's start-time draws: both engines start each flow at the same time.
            start = g.start + offsets[i]
            f: dict[str, Any] = {
                "flow": flow, "group": gi, "group_name": g.name, "port": FLOW_PORT_BASE + flow,
                "sport": SENDER_PORT_BASE + flow,
                "start_ns": start, "stop_ns": stop, "sender_delay_ns": sender_delay,
                "receiver_delay_ns": g.receiver_delay, "dscp": g.dscp,
                "upload": g.path is not None and g.path[0] > g.path[1],
            }
            if isinstance(g.app, Bulk):
                f.update(proto="tcp", kind="bulk", cc=kernel_congestion_control(sc, g),
                         mss=None if g.app.tcp.mss == 1460 else g.app.tcp.mss)
            elif isinstance(g.app, Abr):
                f.update(proto="tcp", kind="abr", cc=kernel_congestion_control(sc, g),
                         mss=None if g.app.tcp.mss == 1460 else g.app.tcp.mss)
                if work is not None:
                    f.update(_abr_files(sc, gi, g.app, work, abr_files))
            elif isinstance(g.app, Cbr):
                f.update(proto="udp", kind="cbr", rate_bps=g.app.rate, packet_size=g.app.packet_size)
            elif isinstance(g.app, Ping):
                f.update(proto="icmp" if g.name in icmp_groups else "udp", kind="ping",
                         interval_ns=g.app.interval, packet_size=g.app.packet_size)
                if f["proto"] in tools:
                    f.update(tool=PROBE_TOOLS[f["proto"]], tool_path=tools[f["proto"]])
            elif getattr(g.app, "congestion_control", "none") == "gcc":
                # A GCC call (aqmlab.emu.call): its endpoints run the simulator's controller,
                # feedback and encoder from the flow's engine config.
                f.update(proto="udp", kind="call", app_json=json.dumps(sc.to_sim_config()["flow_groups"][gi]["app"]))
            else:
                f.update(proto="udp", kind=g.app.kind)
            ecn = getattr(g.app, "ecn", "not-ect")  # the UDP sources' codepoint (Cbr, Video, ...)
            if ecn != "not-ect":
                # The low two bits of the IP TOS byte (RFC 3168 section 5): ECT(1) 01, ECT(0) 10.
                f["ecn_bits"] = {"ect1": 1, "ect0": 2}[ecn]
            flows.append(f)
    return flows


def _abr_files(sc: Scenario, gi: int, app: Abr, work: Path, made: dict[int, str]) -> dict[str, str]:
    """An ABR group's engine config file (written once per group) and, for the encoded ladder,
    the directory of its segment files (made once per segment duration)."""
    config = work / f"abr{gi}.json"
    if not config.exists():
        # The simulator's AbrConfig (the app's engine config without its `kind` tag).
        app_config = {k: v for k, v in sc.to_sim_config()["flow_groups"][gi]["app"].items() if k != "kind"}
        config.write_text(json.dumps(app_config))
    out = {"abr_config": str(config)}
    if app.ladder == "encoded":
        from aqmlab import abr_encoded_ladder  # noqa: PLC0415 - PyAV only for the encoded ladder

        if app.segment_duration not in made:
            made[app.segment_duration] = str(abr_encoded_ladder.segment_files(app.segment_duration))
        out["abr_files"] = made[app.segment_duration]
    return out


#: The rate of the default way back's schedule steps: far above any veth's, so the ACK path
#: stays unshaped (1500 B in 120 ns) while it follows the bottleneck schedule's delays.
UNSHAPED_BPS = 100_000_000_000


def unshaped_way_back(schedule: dict[str, Any]) -> dict[str, Any]:
    """The default way back of a scheduled bottleneck: its delays and outages at the same times
    (the simulator's default way back follows the whole schedule, docs/links.md), its rates
    unshaped, as the emulator's default way back always is. A trace bottleneck's schedule has
    delays alone (every rate 0, "no rate of its own"): the way back is unshaped throughout."""
    delays_only = all(step["rate_bps"] == 0 for step in schedule["steps"])
    steps = [{**step, "rate_bps": UNSHAPED_BPS if step["rate_bps"] > 0 or delays_only else 0}
             for step in schedule["steps"]]
    return {**schedule, "steps": steps}


def router_config(sc: Scenario, tb: Testbed, flows: list[dict[str, Any]]) -> dict[str, Any]:
    sim = sc.to_sim_config()["topology"]
    emu = sc.emulation
    # Without an explicit reverse link the ACK path is unshaped (a FIFO as deep as the access
    # queues), with the bottleneck's delay: the default for emulation.
    reverse = sim["reverse"] if sc.topology.reverse is not None else {
        "rate_bps": 0, "delay_ns": sim["bottleneck"]["delay_ns"],
        "qdisc": {"kind": "droptail", "limit": {"packets": 10000}}}
    if sc.topology.reverse is None and sim["bottleneck"].get("schedule"):
        back = unshaped_way_back(sim["bottleneck"]["schedule"])
        # A scheduled link's own rate and delay are its first step's (the router checks).
        first = back["steps"][0]
        reverse.update(schedule=back, rate_bps=first["rate_bps"], delay_ns=first["delay_ns"])
    cfg = {
        "seed": sc.seed,
        "sender_iface": tb.router_sender_if,
        "receiver_iface": tb.router_receiver_if,
        "forward": sim["bottleneck"],
        "reverse": reverse,
        "flows": [{"proto": f["proto"], "port": f["port"], "flow": f["flow"],
                   "extra_forward_delay_ns": f["sender_delay_ns"] + f["receiver_delay_ns"],
                   "extra_reverse_delay_ns": f["sender_delay_ns"] + f["receiver_delay_ns"]} for f in flows
                  if f["proto"] != "icmp"],
        "records": {"packet_events": sc.records.packet_events, "queue_sample_ns": sc.records.queue_sample},
        "duration_ns": sc.duration,
    }
    if emu is not None and emu.busy_poll:
        cfg["busy_poll"] = True
    if emu is not None and emu.dscp_classes is not None:
        cfg["classify"] = {"dscp_classes": [list(p) for p in emu.dscp_classes], "default_class": emu.default_class}
    icmp = [f for f in flows if f["proto"] == "icmp"]
    if icmp:
        # ICMP has no port to recognize a flow by: packets without ports get the (first) ICMP
        # flow's access delays, as its simulated twin has them (the base-RTT probe's echoes too).
        delay = icmp[0]["sender_delay_ns"] + icmp[0]["receiver_delay_ns"]
        cfg.setdefault("classify", {})["other_extra_delay_ns"] = delay
    return cfg


def namespace_sysctls(sc: Scenario) -> dict[str, str]:
    """Kernel TCP settings of the endpoint namespaces, from the scenario's TCP options."""
    tcp = [g.app.tcp for g in sc.flows if isinstance(g.app, (Bulk, Abr))]
    if not tcp:
        return {}
    sysctls = {"net.ipv4.tcp_sack": str(int(tcp[0].sack)), "net.ipv4.tcp_ecn": str(int(tcp[0].ecn))}
    if tcp[0].send_buffer:
        # The buffer's ceiling (a socket starts at the second value and grows to the third).
        limit = tcp[0].send_buffer
        sysctls["net.ipv4.tcp_wmem"] = f"4096 {min(16384, limit)} {limit}"
    return sysctls


# ---- processes ------------------------------------------------------------------------------


class Process:
    """A child process inside a namespace, in its own session (a terminal's Ctrl-C reaches the
    orchestrator only, which then stops the children in order)."""

    def __init__(self, name: str, tb: Testbed, ns: str, args: list[str]):
        self.name = name
        self.proc = subprocess.Popen(
            [*tb.exec_prefix(ns), sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        # Popen types its pipes as optional; these are set, having been opened with PIPE
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.stdout], [], [], 0.1)
            if ready:
                line = self.stdout.readline()
                if line.strip() == "ready":
                    return
                if line == "":
                    break
        self.fail("did not start")

    def fail(self, what: str) -> None:
        self.stop()
        err = (self.proc.stderr.read() if self.proc.stderr else "").strip().splitlines()
        raise EmulationError(f"{self.name} {what}" + (f": {err[-1]}" if err else ""))

    def tell(self, line: str) -> None:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self.stdin.write(line + "\n")
            self.stdin.flush()

    def stop(self, timeout: float = 10.0) -> int:
        """Asks politely (stdin "stop", SIGTERM), then kills; returns the exit status."""
        if self.proc.poll() is None:
            self.tell("stop")
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # What the process started and left behind (a probe tool, an irtt server) is in its
        # process group (its own session): ended with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def finish(self, timeout: float = 10.0) -> None:
        """Stops the process and raises if it reported an error."""
        if self.stop(timeout) not in (0, -signal.SIGTERM):
            self.fail(f"exited with status {self.proc.returncode}")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C does: through the same cleanup."""
    def handler(*_: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def standalone_router(forward: dict[str, Any], reverse: dict[str, Any], events: bool = True,
                      busy_poll: bool = False) -> Iterator[tuple[Testbed, Process, Path, int]]:
    """A testbed with only the router running (epoch = now), for traffic the caller brings
    (benchmarks, ffmpeg): yields (testbed, router process, work directory, epoch). The router's
    records are in `work/router.npz` after `router.finish()`. Everything is removed on exit."""
    missing = netns.missing_requirement()
    if missing:
        raise EmulationUnavailable(missing)
    tb = netns.new_testbed()
    work = Path(tempfile.mkdtemp(prefix="aqmlab-emu-"))
    procs: list[Process] = []
    try:
        with _sigterm_as_interrupt():
            tb.create()
            cfg = {"seed": 1, "sender_iface": tb.router_sender_if, "receiver_iface": tb.router_receiver_if,
                   "forward": forward, "reverse": reverse,
                   "records": {"packet_events": events, "queue_sample_ns": 0}, "busy_poll": busy_poll}
            (work / "cfg.json").write_text(json.dumps(cfg))
            router = Process("router", tb, tb.router_ns, ["-m", "aqmlab.emu.router", str(work / "cfg.json"), str(work)])
            procs.append(router)
            router.wait_ready()
            epoch = time.monotonic_ns()
            router.tell(f"epoch {epoch}")
            yield tb, router, work, epoch
    finally:
        for p in procs:
            p.stop()
        tb.destroy()
        shutil.rmtree(work, ignore_errors=True)


# ---- the run --------------------------------------------------------------------------------


def emulate(sc: Scenario, progress: bool = False, testbed: Testbed | None = None,
            icmp_groups: frozenset[str] = frozenset(), probe_tools: dict[str, str] | None = None) -> RunResult:
    """Runs the scenario on real packets and computes its metrics, without writing files.
    Ping groups named in `icmp_groups` send ICMP echoes; `probe_tools` (see :func:`plan_flows`)
    has ping groups measured by ping and irtt where given. Raises ScenarioError for fields
    that cannot be emulated, EmulationUnavailable when the machine cannot emulate,
    EmulationError when a process fails."""
    problems = emulation_problems(sc, icmp_groups)
    if problems:
        raise ScenarioError(problems)
    missing = netns.missing_requirement()
    if missing:
        raise EmulationUnavailable(missing)
    tb = testbed or netns.new_testbed()
    work = Path(tempfile.mkdtemp(prefix="aqmlab-emu-"))
    procs: list[Process] = []
    started = time.perf_counter()
    try:
        with _sigterm_as_interrupt():
            tb.create(namespace_sysctls(sc))
            raw = _run(sc, tb, work, procs, icmp_groups, probe_tools)
    finally:
        for p in reversed(procs):
            p.stop(5.0)
        tb.destroy()
        shutil.rmtree(work, ignore_errors=True)
    return _result(sc, raw, time.perf_counter() - started)


def _run(sc: Scenario, tb: Testbed, work: Path, procs: list[Process], icmp_groups: frozenset[str] = frozenset(),
         probe_tools: dict[str, str] | None = None) -> dict[str, Any]:
    flows = plan_flows(sc, work, icmp_groups, probe_tools)
    spec: dict[str, Any] = {"receiver_ip": netns.RECEIVER_IP, "sender_ip": netns.SENDER_IP, "flows": flows,
                            "flow_sample_ns": sc.records.flow_sample, "duration_ns": sc.duration, "seed": sc.seed}
    for f in flows:
        if f["proto"] == "udp" and f["kind"] not in ("cbr", "ping", "call"):
            f["schedule_file"] = str(schedule.write(sc, f, work / f"schedule{f['flow']}.npz"))
    (work / "router.cfg.json").write_text(json.dumps(router_config(sc, tb, flows)))
    (work / "spec.json").write_text(json.dumps(spec))
    router = Process("router", tb, tb.router_ns, ["-m", "aqmlab.emu.router", str(work / "router.cfg.json"), str(work)])
    procs.append(router)
    router.wait_ready()
    receiver = Process("receiver", tb, tb.receiver_ns,
                       ["-m", "aqmlab.emu.endpoints", "receiver", str(work / "spec.json"), str(work / "receiver.npz")])
    procs.append(receiver)
    receiver.wait_ready()
    probe = Process("probe", tb, tb.sender_ns,
                    ["-m", "aqmlab.emu.endpoints", "probe", str(work / "spec.json"), str(work / "probe.npz")])
    procs.append(probe)
    if probe.proc.wait(timeout=60) != 0:
        probe.fail("failed")
    epoch = time.monotonic_ns() + LEAD_NS
    # The epoch on CLOCK_REALTIME (for wall-clock stamps such as a Flent file's), read as close
    # to the monotonic reading as two calls allow.
    epoch_realtime = time.time_ns() + (epoch - time.monotonic_ns())
    router.tell(f"epoch {epoch}")
    receiver.tell(f"epoch {epoch}")  # the ABR clients' t = 0
    spec["epoch_ns"] = epoch
    (work / "spec.json").write_text(json.dumps(spec))
    sender = Process("sender", tb, tb.sender_ns,
                     ["-m", "aqmlab.emu.endpoints", "sender", str(work / "spec.json"), str(work / "sender.npz")])
    procs.append(sender)
    sender.wait_ready()
    end = epoch + sc.duration
    while time.monotonic_ns() < end:
        for p in (router, receiver, sender):
            # The sender ends by itself at the end of the run; before that only by failing.
            if p.proc.poll() is not None and (p is not sender or p.proc.returncode != 0):
                p.fail("stopped during the run")
        time.sleep(min(0.2, max(0.0, (end - time.monotonic_ns()) / 1e9)))
    sender.proc.wait(timeout=15)
    sender.finish()
    # Scoring an encoded ladder's segments as they arrived takes the receiver a while after the run.
    receiver.finish(timeout=600.0 if any("abr_files" in f for f in flows) else 10.0)
    router.finish()
    return {
        "epoch": epoch,
        "epoch_realtime_ns": epoch_realtime,
        "flows": flows,
        "router": dict(np.load(work / "router.npz")),
        "router_summary": json.loads((work / "router.json").read_text()),
        "sender": dict(np.load(work / "sender.npz")),
        "receiver": dict(np.load(work / "receiver.npz")),
        "probe_rtt_ns": np.load(work / "probe.npz")["rtt_ns"],
        "schedules": {f["flow"]: dict(np.load(f["schedule_file"])) for f in flows if "schedule_file" in f},
        "offloads_off": tb.offloads_off(),
        "probe_sources": probe_sources(flows, spec),
    }


def probe_sources(flows: list[dict[str, Any]], spec: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per ping group: where its round trips come from (the tool's name, or the emulator's own
    probe), and for a tool its version line and the command line it ran with (irtt's output
    file shown as OUT.json)."""
    out: dict[str, dict[str, str]] = {}
    for f in flows:
        if f["kind"] != "ping" or f["group_name"] in out:
            continue
        entry = {"source": probe_source(f)}
        if f.get("tool"):
            entry["version"] = tool_version(f["tool_path"])
            entry["command"] = " ".join(client_argv(f, spec, "OUT.json"))
        out[f["group_name"]] = entry
    return out


# ---- records into the simulator's tables -----------------------------------------------------


def _table(arrays: dict[str, np.ndarray], name: str) -> pd.DataFrame:
    cols = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"{name}/")}
    return pd.DataFrame(cols)


def _both(raw: dict[str, Any], key: str, width: int) -> np.ndarray:
    """An array both endpoint processes write (each side's senders, sinks, probes), R1's rows first."""
    parts = [np.asarray(raw[side][key], dtype=np.int64).reshape(-1, width)
             for side in ("sender", "receiver") if key in raw[side]]
    return np.concatenate(parts) if parts else np.zeros((0, width), dtype=np.int64)


def probes_table(rows: np.ndarray) -> pd.DataFrame:
    """The simulator's `probes` table (aqmlab-model's ``record::ProbesTable``) from the ping
    clients' rows (flow, seq, sent_ns, rtt_ns or -1 without a reply), in (flow, seq) order."""
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))] if len(rows) else rows
    rtt = rows[:, 3]
    return pd.DataFrame({"flow": rows[:, 0].astype(np.uint32), "seq": rows[:, 1].astype(np.uint64),
                         "sent_ns": rows[:, 2].astype(np.uint64),
                         "rtt_ns": pd.arrays.IntegerArray(np.maximum(rtt, 0).astype(np.uint64), rtt < 0)})


def probe_tool_times_table(rows: np.ndarray) -> pd.DataFrame:
    """Per answered probe a tool measured: the client's receive minus send time (`round_trip_ns`,
    the server's time included) and the server's own processing time (`server_ns`, irtt's
    stamps; null for ping, whose echo the kernel answers), in (flow, seq) order. The probes
    table's `rtt_ns` is the tool's reported value (irtt's excludes the server's time)."""
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))] if len(rows) else rows
    server = rows[:, 3]
    return pd.DataFrame({"flow": rows[:, 0].astype(np.uint32), "seq": rows[:, 1].astype(np.uint64),
                         "round_trip_ns": rows[:, 2].astype(np.int64),
                         "server_ns": pd.arrays.IntegerArray(np.maximum(server, 0), server < 0)})


def tcp_received_table(rows: np.ndarray) -> pd.DataFrame:
    """Bytes each bulk TCP flow's receiving application had read by `t_ns` (sampled every
    `records.flow_sample`, stamped when read), in (flow, t_ns) order."""
    rows = rows[np.lexsort((rows[:, 0], rows[:, 1]))] if len(rows) else rows
    return pd.DataFrame({"t_ns": rows[:, 0].astype(np.uint64), "flow": rows[:, 1].astype(np.uint32),
                         "received_bytes": rows[:, 2].astype(np.uint64)})


def _result(sc: Scenario, raw: dict[str, Any], wall: float) -> RunResult:
    epoch = raw["epoch"]
    flows_plan = raw["flows"]
    packets = _table(raw["router"], "packets")
    packets = name_packet_events(packets[packets["t_ns"] < sc.duration].reset_index(drop=True))
    queue = _table(raw["router"], "queue")
    received = pd.DataFrame(raw["receiver"]["media"], columns=["flow", "seq", "size", "sent_ns", "recv_ns", "frame_id"])
    received["recv_ns"] = received["recv_ns"] - epoch
    received = received[(received["recv_ns"] >= 0) & (received["recv_ns"] < sc.duration)]
    media = to_frame(_core.replayed_media_table(*(received[c].astype("u8").tolist()
                                                  for c in ("flow", "seq", "size", "sent_ns", "recv_ns"))))
    samples = _flow_samples(sc, _both(raw, "samples", _core.LOGGED_SAMPLE_COLUMNS), media, flows_plan)
    samples = null_unset_ssthresh(samples)  # "no threshold yet" as null, as aqmlab.run.simulate does
    flows = _flows_table(sc, flows_plan, raw, media)
    tables = {"flows": flows, "packets": packets, "queue": queue, "flow_samples": samples}
    mpeg = [f for f in flows_plan if f["kind"] == "mpeg"]
    if mpeg:
        tables["frames"] = annotate_frames(_frames_table(sc, mpeg, raw["schedules"], received))
    if len(media) or any(f["proto"] == "udp" and f["kind"] != "ping" for f in flows_plan):
        tables["media"] = media
    if any(f["kind"] == "ping" for f in flows_plan):
        tables["probes"] = probes_table(_both(raw, "probes", 4))
    if any(f.get("tool") for f in flows_plan):
        tables["probe_tool_times"] = probe_tool_times_table(_both(raw, "probe_tool_times", 4))
    if any(f["kind"] == "bulk" for f in flows_plan):
        tables["tcp_received"] = tcp_received_table(_both(raw, "received", 3))
    tables.update(_abr_tables(raw["receiver"], flows_plan))
    calls = [f for f in flows_plan if f["kind"] == "call"]
    if calls:
        tables.update(_call_tables(sc, calls, raw, received))
        samples = _call_app_levels(sc, samples, tables["gcc_rate"], calls)
        tables["flow_samples"] = samples
    if "abr_segments" in tables:
        samples = _abr_app_levels(samples, tables["abr_segments"])
        tables["flow_samples"] = samples
    video = [schedule.media_frames(raw["schedules"][f["flow"]]) for f in flows_plan if f["kind"] == "video"]
    if video:
        tables["media_frames"] = pd.concat(video, ignore_index=True)
    flows["group_name"] = [f["group_name"] for f in flows_plan]
    periods = sc.periods()
    per = period_metrics(packets, flows, periods)
    flow_per = flow_period_metrics(packets, samples, flows, periods)
    rtt = raw["probe_rtt_ns"]
    summary = {
        "scenario": sc.name,
        "seed": sc.seed,
        "engine": "emu",
        "aqmlab_version": _core.__version__,
        "emu": {
            "router": raw["router_summary"],
            "probe_rtt_ms": {"min": float(rtt.min()) / 1e6 if rtt.size else None,
                             "median": float(np.median(rtt)) / 1e6 if rtt.size else None, "count": int(rtt.size)},
            "offloads_off": raw["offloads_off"],
            "probe_sources": raw.get("probe_sources", {}),
            "congestion_control": {str(f["flow"]): f["cc"] for f in flows_plan if f["proto"] == "tcp"},
            # The kernel's minimum RTT of each TCP connection (tcpi_min_rtt), ms.
            "kernel_min_rtt_ms": {str(int(r[0])): int(r[3]) / 1e6 for r in _both(raw, "totals", 5)
                                  if flows_plan[int(r[0])]["proto"] == "tcp"},
            # t = 0 of the records on CLOCK_REALTIME, ns since the Unix epoch.
            "epoch_realtime_ns": raw.get("epoch_realtime_ns"),
            "not_emulated": NOT_EMULATED,
        },
        "periods": json.loads(per.to_json(orient="records")) if len(per) else [],
        "event_names": EVENT_NAMES,
        "drop_reasons": DROP_REASONS,
    }
    return RunResult(sc, None, tables, per, flow_per, summary, None, wall)


def _abr_tables(receiver: dict[str, np.ndarray], flows: list[dict]) -> dict[str, pd.DataFrame]:
    """The simulator's `abr_segments` and `abr_sessions` tables, from the rows each client's
    `_core.AbrClient` (the simulator's client code) wrote in the receiver."""
    out: dict[str, pd.DataFrame] = {}
    for table in ("abr_segments", "abr_sessions"):
        parts = []
        for f in flows:
            prefix = f"abr/{f['flow']}/{table}/"
            cols = {k[len(prefix):]: v for k, v in receiver.items() if k.startswith(prefix)}
            if cols:
                parts.append(pd.DataFrame(cols))
        if parts:
            out[table] = pd.concat(parts, ignore_index=True)
    return out


def _call_tables(sc: Scenario, calls: list[dict], raw: dict[str, Any],
                 received: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The simulator's `gcc_rate`, `rtc_frames` and `rtc_sessions` tables of the GCC calls: the
    sender's frames and `GccSender` rows with the receiver's log (each frame's packets that
    arrived within the run and the last one's arrival), joined by the simulator's table code
    (`_core.call_tables`)."""
    snd, rcv = raw["sender"], raw["receiver"]
    out: dict[str, list[pd.DataFrame]] = {"gcc_rate": [], "rtc_frames": [], "rtc_sessions": []}
    for f in calls:
        flow, p = f["flow"], f"call/{f['flow']}/"
        rate = pd.DataFrame({k[len(p) + len("gcc_rate/"):]: v for k, v in snd.items()
                             if k.startswith(p + "gcc_rate/")})
        out["gcc_rate"].append(rate)
        got = received[received["flow"] == flow].drop_duplicates("seq")
        per_frame = got.groupby("frame_id")["recv_ns"].agg(["count", "max"])
        count = per_frame["count"].to_dict()
        last = per_frame["max"].to_dict()
        frames = [(int(t), int(size), bool(key), float(r), int(n), int(count.get(i, 0)), int(last.get(i, 0)))
                  for i, (t, size, key, r, n) in enumerate(zip(snd[p + "frames_t_ns"], snd[p + "frames_payload"],
                                                               snd[p + "frames_key"], snd[p + "frames_rate_bps"],
                                                               snd[p + "frames_packets"], strict=True))]
        deadline = json.loads(f["app_json"])["gcc"]["deadline_ns"]
        tables = _core.call_tables(flow, frames, deadline, f["stop_ns"], rate["target_bps"].tolist(),
                                   int(rcv.get(p + "reports_sent", 0)), int(snd[p + "reports_received"]))
        for name, cols in tables.items():
            out[name].append(to_frame(cols))
    return {name: pd.concat(parts, ignore_index=True) for name, parts in out.items()}


def _call_app_levels(sc: Scenario, samples: pd.DataFrame, rate: pd.DataFrame, calls: list[dict]) -> pd.DataFrame:
    """`flow_samples.app_level` of each GCC call as the simulator writes it: the target in
    force at the sample's time, in kbit/s (the start rate before the first report)."""
    samples = samples.copy()
    for f in calls:
        start = json.loads(f["app_json"])["gcc"]["start_rate_bps"]
        mine = rate[rate["flow"] == f["flow"]]
        t = mine["t_ns"].to_numpy(dtype=np.int64)
        targets = np.concatenate([[float(start)], mine["target_bps"].to_numpy(dtype=np.float64)])
        rows = samples["flow"] == f["flow"]
        k = np.searchsorted(t, samples.loc[rows, "t_ns"].to_numpy(dtype=np.int64), side="right")
        # Halves away from zero, as Rust's f64::round (the simulator's rounding).
        samples.loc[rows, "app_level"] = np.floor(targets[k] / 1000.0 + 0.5).astype(samples["app_level"].dtype)
    return samples


def _abr_app_levels(samples: pd.DataFrame, segments: pd.DataFrame) -> pd.DataFrame:
    """`flow_samples.app_level` of each ABR flow as the simulator writes it: the rung of the
    last segment the client completed by the sample's time (0 before the first). The samples
    are taken in the sender namespace; the completions come from the client's own rows
    (request time plus download time, on the run's clock)."""
    samples = samples.copy()
    for flow, rows in segments.groupby("flow", sort=False):
        done = (rows["request_ns"] + rows["download_ns"]).to_numpy(dtype=np.int64)
        order = np.argsort(done, kind="stable")
        done, rungs = done[order], rows["rung"].to_numpy()[order]
        mine = samples["flow"] == flow
        last = np.searchsorted(done, samples.loc[mine, "t_ns"].to_numpy(dtype=np.int64), side="right") - 1
        samples.loc[mine, "app_level"] = np.where(last >= 0, rungs[np.maximum(last, 0)], 0).astype(
            samples["app_level"].dtype)
    return samples


def _frames_table(sc: Scenario, flows: list[dict], schedules: dict[int, dict], received: pd.DataFrame) -> pd.DataFrame:
    """The simulator's frames table for MPEG flows, built by the simulator's table code in
    Rust (aqmlab-model's ``replay.mpeg_frames``): the schedule says what was sent, the receiver
    log what arrived (every frame of a non-responsive source is sent)."""
    entries = []
    for f in flows:
        s = schedules[f["flow"]]
        got = received.loc[received["flow"] == f["flow"], "frame_id"]
        entries.append((f["flow"], len(sc.flows[f["group"]].app.gop), s["t_ns"].tolist(), s["frame_id"].tolist(),
                        s["frame_type"].tolist(), s["size"].tolist(), got.tolist()))
    return to_frame(_core.replayed_frames_table(entries))


def _flow_samples(sc: Scenario, tcp_rows: np.ndarray, media: pd.DataFrame, flows: list[dict]) -> pd.DataFrame:
    """The simulator's flow_samples table: the TCP senders' rows, and each UDP flow's payload
    delivered by every sample time (aqmlab-model's ``replay.flow_samples``)."""
    udp = []
    for f in flows:
        if f["proto"] == "udp" and f["kind"] != "ping":
            m = media[media["flow"] == f["flow"]]
            udp.append((f["flow"], m["recv_ns"].tolist(), m["size"].tolist()))
    tcp = np.asarray(tcp_rows, dtype=np.int64).reshape(-1).tolist()
    return to_frame(_core.replayed_flow_samples(tcp, udp, sc.records.flow_sample, sc.duration))


def _flows_table(sc: Scenario, flows: list[dict], raw: dict[str, Any], media: pd.DataFrame) -> pd.DataFrame:
    """The simulator's flows table, built by its table code in Rust (aqmlab-model's
    ``record::FlowsTable``): the plan says what each flow is, the sender's TCP_INFO and the
    receivers' logs what it did. The kernel reports no per-connection count of fast
    retransmits or spurious timeouts: those cells are missing (null) for TCP flows, and
    ``timeouts`` is ``tcpi_total_rto`` (missing on kernels before 6.7)."""
    t = sc.to_sim_config()["topology"]
    totals = {int(r[0]): r for r in _both(raw, "totals", 5)}
    tcp_bytes = {int(r[0]): int(r[1]) for r in _both(raw, "tcp_bytes", 2)}
    udp_bytes = (media["size"].astype("i8") - UDP_IP_HEADER).groupby(media["flow"]).sum().to_dict()
    rows = []
    for f in flows:
        tcp = f["proto"] == "tcp"
        _, sent, retx, _min_rtt, rto = (int(x) for x in totals.get(f["flow"], (f["flow"], 0, 0, 0, -1 if tcp else 0)))
        access = f["sender_delay_ns"] + f["receiver_delay_ns"]
        base_rtt = (2 * (access + t["bottleneck"]["delay_ns"]) if sc.topology.reverse is None
                    else 2 * access + t["bottleneck"]["delay_ns"] + t["reverse"]["delay_ns"])
        delivered = tcp_bytes.get(f["flow"], 0) if tcp else int(udp_bytes.get(f["flow"], 0))
        description = (f["flow"], f["group"], tcp, f["start_ns"], f["stop_ns"], f["sender_delay_ns"],
                       f["receiver_delay_ns"], base_rtt)
        not_measured = None if tcp else 0  # zero where a counter does not apply (UDP)
        counters = (sent, retx, not_measured, (rto if rto >= 0 else None) if tcp else 0, not_measured, delivered)
        rows.append((description, counters))
    return to_frame(_core.replayed_flows_table(rows))
