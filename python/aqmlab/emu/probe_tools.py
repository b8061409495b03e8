"""The latency probes Flent itself runs, for the emulated RRUL: iputils `ping` for the ICMP
series and `irtt` for the UDP series (flent/runners.py: PingRunner in timestamped mode, and
IrttRunner, which UdpRttRunner prefers to netperf UDP_RR). When a binary is missing, the
emulator's own probe of that kind runs instead (:class:`aqmlab.emu.endpoints.PingClient`:
raw-socket ICMP echoes, or UDP requests answered by an echo process), and the run records
which source produced each series.

This module builds the command lines (as Flent builds them, with the flow's own addresses and
ports so that the router recognizes each probe as the scenario's flow) and reads the tools'
output back into probe rows. What is kept is what Flent keeps:

* ping (``-n -D``): each reply line's ``[wall-clock receive time]``, ``icmp_seq`` and
  ``time=`` (iputils rounds it to 0.01 ms between 1 and 10 ms, 0.1 ms between 10 and 100 ms,
  1 ms above: ping_common.c; Flent keeps the same rounded value). A request without a reply
  line is lost; ping does not print when it sent it, so its send time is interpolated by
  sequence number between the requests that came back (ping sends one per interval).
* irtt (``-o`` JSON): each round trip's ``seqno``, the client's send wall time and irtt's own
  ``delay.rtt`` (the client's receive minus send time, less the server's processing time
  between its own receive and send stamps, recorder.go ``RTT``), or ``lost`` ("true",
  "true_up", "true_down"). The full client-side round trip and the server's processing time
  are kept beside it.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Which tool answers for which probe protocol (the plan's ``proto`` of a ping flow).
TOOLS = {"icmp": "ping", "udp": "irtt"}
#: The source named in the summary and the Flent file when a tool is missing.
FALLBACK = {"icmp": "aqmlab raw-socket ICMP echo", "udp": "aqmlab UDP request/echo"}
#: The Flent runner class that produces each kind of series (its files' SERIES_META RUNNER).
FLENT_RUNNER = {"ping": "PingRunner", "irtt": "IrttRunner"}
#: Seconds irtt's client waits after its last request for replies (`--wait`), past the run's
#: end for a probe flow stopping before it: a reply after the run's end does not count (as in
#: the simulator), so there is no reason to wait longer. irtt's default (3 x the largest RTT,
#: or 4 s) would only make the run end later. A choice.
IRTT_WAIT_S = 0.5
#: irtt's handshake timeouts (`--timeouts`), as Flent's connection check uses them.
IRTT_OPEN_TIMEOUTS = "200ms,300ms,400ms"


def find(which: Callable[[str], str | None] = shutil.which) -> dict[str, str]:
    """The probe tools installed: {"icmp": path of ping, "udp": path of irtt}, each only if
    found on PATH (`which` is replaceable, for tests)."""
    return {proto: path for proto, tool in TOOLS.items() if (path := which(tool)) is not None}


def version(path: str) -> str:
    """The tool's version line (`ping -V`, `irtt version`), or its name when it gives none."""
    tool = "irtt" if path.rsplit("/", 1)[-1].startswith("irtt") else "ping"
    args = [path, "version"] if tool == "irtt" else [path, "-V"]
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return tool
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if lines else tool


def source(flow: dict[str, Any]) -> str:
    """Where a ping flow's series comes from: the tool's name, or the emulator's own probe."""
    tool = flow.get("tool")
    return str(tool) if tool else FALLBACK[flow["proto"]]


# ---- command lines --------------------------------------------------------------------------


def _seconds_text(ns: int) -> str:
    return f"{ns / 1e9:g}s"


def ping_argv(path: str, flow: dict[str, Any], dest_ip: str, run_left_ns: int) -> list[str]:
    """Flent's ping command (PingRunner.use_ping: ``-n -D -i INTERVAL -w LENGTH [-Q TOS]``)
    with the flow's interval and packet size (``-s``: IP size - 20 IPv4 - 8 ICMP bytes). The
    deadline covers what is left of the run (whole seconds, as ping takes them); the endpoint
    stops ping at the run's end if it still runs."""
    interval_s = flow["interval_ns"] / 1e9
    argv = [path, "-n", "-D", "-i", f"{interval_s:g}", "-w", str(max(1, math.ceil(run_left_ns / 1e9))),
            "-s", str(max(int(flow["packet_size"]) - 28, 0))]
    if flow.get("dscp"):
        argv += ["-Q", str(int(flow["dscp"]) << 2)]  # the TOS byte, as Flent's marking map gives it
    return [*argv, dest_ip]


def irtt_client_argv(path: str, flow: dict[str, Any], local: tuple[str, int], remote: tuple[str, int],
                     out_json: str, wait_ns: int) -> list[str]:
    """Flent's irtt command (IrttRunner: ``client -o - --fill=rand -Q -d LENGTH -i INTERVAL
    --dscp=TOS``) from the flow's own port to the server's, its JSON written to `out_json`.
    irtt's packets keep its own default length (60 bytes of UDP payload, an 88-byte IP packet
    with the timestamps Flent asks for), as under Flent."""
    length = _seconds_text(flow["stop_ns"] - flow["start_ns"])
    return [path, "client", "-o", out_json, "--fill=rand", "-Q", "-d", length,
            "-i", _seconds_text(flow["interval_ns"]), f"--dscp={int(flow.get('dscp', 0)) << 2:#x}",
            f"--local={local[0]}:{local[1]}", f"--timeouts={IRTT_OPEN_TIMEOUTS}", f"--wait={_seconds_text(wait_ns)}",
            "-4", f"{remote[0]}:{remote[1]}"]


def irtt_server_argv(path: str, binds: list[tuple[str, int]]) -> list[str]:
    """One irtt server listening on every UDP probe flow's far-side address and port (its
    default settings otherwise, as a Flent test server runs it)."""
    return [path, "server", "-b", ",".join(f"{ip}:{port}" for ip, port in binds)]


def endpoints(flow: dict[str, Any], spec: dict[str, Any]) -> tuple[tuple[str, int], tuple[str, int]]:
    """A ping flow's client and server (address, port), as the emulator's own probe uses them:
    the client on the flow's sending side at its own port (R2's side: `port`; R1's: `sport`),
    the server on the other; the router knows the flow by its R2-side port."""
    r1 = (spec["sender_ip"], flow["sport"])
    r2 = (spec["receiver_ip"], flow["port"])
    return (r2, r1) if flow.get("upload") else (r1, r2)


def client_argv(flow: dict[str, Any], spec: dict[str, Any], out_json: str) -> list[str]:
    """The command a ping flow's tool runs with, started at the flow's start: ping for the
    rest of the run, or irtt until the flow's stop, its JSON to `out_json` (irtt's client
    waits `IRTT_WAIT_S` past the run's end at most)."""
    local, remote = endpoints(flow, spec)
    if flow["tool"] == "ping":
        return ping_argv(flow["tool_path"], flow, remote[0], spec["duration_ns"] - flow["start_ns"])
    wait = max(spec["duration_ns"] - flow["stop_ns"], 0) + int(IRTT_WAIT_S * 1e9)
    return irtt_client_argv(flow["tool_path"], flow, local, remote, out_json, wait)


# ---- output ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    """One request of a tool's run: sequence number from 0, send time on the wall clock (ns
    since the Unix epoch), the round trip the tool reports (ns; -1 when lost), the client's
    receive minus send time (ns; -1 when lost) and the server's processing time (ns; -1 when
    the tool has none)."""

    seq: int
    sent_wall_ns: int
    rtt_ns: int
    round_trip_ns: int = -1
    server_ns: int = -1


_PING_REPLY = re.compile(r"^\[(?P<t>\d+\.\d+)\] .*\bicmp_[sr]eq=(?P<seq>\d+)\b.*\btime=(?P<ms>\d+(?:\.\d+)?) ms$")
_PING_SENT = re.compile(r"^(?P<n>\d+) packets transmitted\b")


def parse_ping(text: str, interval_ns: int, start_wall_ns: int) -> list[Probe]:
    """ping's output (``-n -D``) as one Probe per request sent. A line not ending in "ms" (a
    duplicate reply, marked "(DUP!)", an ICMP error) is not a reply, as in Flent's parser; the
    first reply of a sequence number counts. The number sent is ping's closing statistics line
    (the highest sequence number seen if ping was killed before it). icmp_seq is 16 bits: a
    wrap is undone. A lost request's send time is interpolated by sequence number between the
    nearest requests that came back (extrapolated by `interval_ns` beyond them; from
    `start_wall_ns`, the time ping was started, when none came back)."""
    replies: dict[int, tuple[int, int]] = {}  # seq from 0 -> (receive wall ns, rtt ns)
    transmitted = 0
    last_raw, wraps = -1, 0
    for line in text.splitlines():
        line = line.rstrip()
        m = _PING_REPLY.match(line)
        if m:
            raw = int(m["seq"])
            if last_raw >= 0 and raw < last_raw - 32768:
                wraps += 1
            last_raw = raw
            seq = raw + 65536 * wraps - 1  # iputils numbers its requests from 1
            if seq >= 0 and seq not in replies:
                receive_ns = int(round(float(m["t"]) * 1e6)) * 1000  # microseconds printed
                replies[seq] = (receive_ns, int(round(float(m["ms"]) * 1e6)))
            continue
        m = _PING_SENT.match(line)
        if m:
            transmitted = int(m["n"])
    count = max(transmitted, max(replies, default=-1) + 1)
    known = sorted(replies)
    sent_known = np.array([replies[k][0] - replies[k][1] for k in known], dtype=np.float64)
    out = []
    for k in range(count):
        if k in replies:
            receive_ns, rtt_ns = replies[k]
            out.append(Probe(k, receive_ns - rtt_ns, rtt_ns, rtt_ns))
            continue
        if not known:
            sent = start_wall_ns + k * interval_ns
        elif k < known[0]:
            sent = int(sent_known[0]) - (known[0] - k) * interval_ns
        elif k > known[-1]:
            sent = int(sent_known[-1]) + (k - known[-1]) * interval_ns
        else:
            sent = int(round(float(np.interp(k, known, sent_known))))
        out.append(Probe(k, sent, -1))
    return out


def parse_irtt(text: str) -> list[Probe]:
    """irtt's JSON output (``-o``) as one Probe per round trip, in sequence order. Raises
    ValueError on output that is not irtt's JSON."""
    try:
        doc = json.loads(text)
        trips = doc["round_trips"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"not irtt's JSON output ({e})") from None
    out = []
    for trip in trips:
        client = trip["timestamps"]["client"]
        sent_wall = int(client["send"]["wall"])
        if trip["lost"] != "false":
            out.append(Probe(int(trip["seqno"]), sent_wall, -1))
            continue
        # irtt's monotonic readings are since the client (server) started: only differences count.
        round_trip = int(client["receive"]["monotonic"]) - int(client["send"]["monotonic"])
        server = trip["timestamps"].get("server", {})
        has_server = "monotonic" in server.get("receive", {}) and "monotonic" in server.get("send", {})
        server_ns = int(server["send"]["monotonic"]) - int(server["receive"]["monotonic"]) if has_server else -1
        out.append(Probe(int(trip["seqno"]), sent_wall, int(trip["delay"]["rtt"]), round_trip, server_ns))
    return sorted(out, key=lambda p: p.seq)
