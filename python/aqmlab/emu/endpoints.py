"""Traffic endpoints of an emulation run, each a process inside its namespace:

    ip netns exec SND python3 -m aqmlab.emu.endpoints sender   SPEC.json OUT.npz
    ip netns exec RCV python3 -m aqmlab.emu.endpoints receiver SPEC.json OUT.npz
    ip netns exec SND python3 -m aqmlab.emu.endpoints probe    SPEC.json OUT.npz

* TCP bulk flows use the kernel's own TCP over ordinary sockets, with the congestion control
  chosen per flow (``TCP_CONGESTION``: reno, cubic or bbr); the sender samples ``TCP_INFO`` every
  ``flow_sample_ns`` (delivered = bytes acked, cwnd, ssthresh, srtt, rto), the simulator's
  ``flow_samples`` schema.
* UDP flows send a schedule of packets (CBR, or the simulator's own frame models for video:
  see :mod:`aqmlab.emu.schedule`) paced from an absolute clock, each payload opening with the
  application header the router parses (``AQML``, seq, frame id/type, fragment, send time,
  flow). The receiver timestamps every packet (the simulator's ``media`` schema).
* ``probe`` measures the base RTT with ICMP echoes, as ping does, before the run starts.
* Either side may send: the ``sender`` process (R1's side) runs the downloads' senders and the
  uploads' sinks, the ``receiver`` process (R2's side) the downloads' sinks and the uploads'
  senders (a flow whose ``upload`` is set: its scenario `path` runs toward R1). The endpoint on
  R2's side always uses the flow's ``port`` and the one on R1's side its ``sport``, so the
  router's classifier (keyed on the R2-side port) sees every flow whichever way it runs.
* Ping flows (the ``ping`` application) send a request every ``interval_ns`` whether or not
  replies came, from the flow's sending side; the other side echoes UDP requests from a
  child process of its own, and the kernel answers ICMP echoes (flows planned with ``proto = "icmp"``). Round
  trips are timed with the kernel's receive timestamp (SO_TIMESTAMPNS). A ping flow planned
  with a ``tool`` (the emulated RRUL, when installed) is measured by that tool instead, as
  Flent measures it: iputils ``ping`` for ICMP, ``irtt client`` against an ``irtt server`` on
  the other side for UDP (:class:`ToolPing`, :mod:`aqmlab.emu.probe_tools`).
* Each TCP sink's bytes read by the application are sampled every ``flow_sample_ns``
  (``received`` rows: time, flow, bytes).

A process prints ``ready`` once its sockets are set up and stops on SIGTERM/SIGINT, writing its
records on the way out (the receiver also on ``stop`` on stdin). The sender's times are
CLOCK_MONOTONIC ns minus the spec's ``epoch_ns``; the receiver, started before the epoch is
fixed, logs raw CLOCK_MONOTONIC and the orchestrator subtracts (the clock is shared by all
namespaces).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab import _core
from aqmlab.emu import arrival_stamps, probe_tools
from aqmlab.emu.arrival_stamps import SO_TIMESTAMPNS

APP_MAGIC = b"AQML"
#: magic, seq, frame_id, frame_type, pad, frag_index, frag_count, pad, sent_ns, flow (32 bytes)
APP_HEADER = struct.Struct("!4sIIBBHHHQI")
IP_UDP_HEADERS = _core.UDP_IP_HEADER_BYTES
#: Bytes of struct tcp_info asked for: up to tcpi_total_rto_time (Linux 6.7); older kernels return less.
TCP_INFO_LEN = 248
CHUNK = 256 * 1024
#: Socket timeout between checks for the end of the run, s.
POLL_S = 0.2

stopping = threading.Event()
#: The receiver learns the epoch on stdin (``epoch N``) after it has started (ABR clients wait for it).
epoch_known = threading.Event()
_epoch = [0]


def now_ns(epoch: int) -> int:
    return time.monotonic_ns() - epoch


def sleep_until(epoch: int, t_ns: int) -> bool:
    """Sleeps until run time `t_ns`; False if asked to stop meanwhile."""
    while not stopping.is_set():
        left = t_ns - now_ns(epoch)
        if left <= 0:
            return True
        stopping.wait(min(left / 1e9, 0.2))
    return False


# ---- TCP -----------------------------------------------------------------------------------


#: tcpi_pacing_rate's "no rate" (~0ULL, Linux's sk_pacing_rate before a controller sets one).
UNLIMITED_RATE = 2**64 - 1
#: Linux's TCP_CC_INFO (include/uapi/linux/tcp.h), which Python's socket module does not name.
TCP_CC_INFO = 26
#: Linux's `struct tcp_bbr_info`: bbr_bw_lo, bbr_bw_hi, bbr_min_rtt, bbr_pacing_gain, bbr_cwnd_gain.
TCP_BBR_INFO = struct.Struct("IIIII")


def bbr_pacing_gain(sock: socket.socket) -> int:
    """BBR's pacing gain, in Linux's units of 1/256 (BBR_UNIT), from TCP_CC_INFO."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, TCP_BBR_INFO.size)
    return TCP_BBR_INFO.unpack_from(raw)[3] if len(raw) >= TCP_BBR_INFO.size else 0


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """Fields of Linux `struct tcp_info` (include/uapi/linux/tcp.h) the records use."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN)
    u32 = lambda off: struct.unpack_from("I", raw, off)[0]  # noqa: E731
    u64 = lambda off: struct.unpack_from("Q", raw, off)[0]  # noqa: E731
    return {"rto_us": u32(8), "snd_mss": u32(16), "rtt_us": u32(68), "snd_ssthresh": u32(76),
            "snd_cwnd": u32(80), "total_retrans": u32(100), "bytes_acked": u64(120),
            # tcpi_pacing_rate: bytes per second; ~0 while the socket has none.
            "pacing_rate": 0 if u64(104) == UNLIMITED_RATE else u64(104),
            "segs_out": u32(136), "min_rtt_us": u32(148) if len(raw) >= 152 else 0,
            # tcpi_delivery_rate (Linux >= 4.9): bytes per second of the sample the kernel keeps.
            "delivery_rate": u64(160) if len(raw) >= 168 else 0,
            # tcpi_snd_wnd (Linux >= 5.4): the receive window the peer last advertised, bytes.
            "snd_wnd": u32(228) if len(raw) >= 232 else 0,
            # tcpi_total_rto (__u16, Linux >= 6.7): retransmission timeouts of the connection;
            # -1 when the kernel is older and does not report it.
            "total_rto": struct.unpack_from("H", raw, 240)[0] if len(raw) >= 242 else -1}


def wait_epoch(spec: dict[str, Any]) -> int | None:
    """The run's epoch: the spec's (the sender starts after it is fixed), else once known (the
    receiver learns it on stdin); None if asked to stop first."""
    if spec.get("epoch_ns") is not None:
        return int(spec["epoch_ns"])
    while not epoch_known.wait(0.05):
        if stopping.is_set():
            return None
    return _epoch[0]


class TcpSender(threading.Thread):
    """A bulk TCP sender: from the flow's own port on this side to the far side's listener.
    Downloads run it on R1's side (bound to `sport`, to `port`), uploads on R2's side (bound to
    `port`, to `sport`)."""

    def __init__(self, flow: dict[str, Any], spec: dict[str, Any]):
        super().__init__(name=f"tcp{flow['flow']}", daemon=True)
        self.flow, self.spec = flow, spec
        self.sock: socket.socket | None = None
        self.final: dict[str, int] | None = None

    def run(self) -> None:
        f = self.flow
        epoch = wait_epoch(self.spec)
        if epoch is None or not sleep_until(epoch, f["start_ns"]):
            return
        if f.get("upload"):
            bind, dest = f["port"], (self.spec["sender_ip"], f["sport"])
        else:
            bind, dest = f["sport"], (self.spec["receiver_ip"], f["port"])
        sock = None
        # The far side's listener may start after this flow's start time (an upload's sink runs
        # in the process started last): retry a refused connection until the run stops.
        while not stopping.is_set():
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            _tcp_options(f)(sock)
            # The handshake waits in the bottleneck queue like any packet (a full 250-packet
            # FIFO at 20 Mbit/s holds 150 ms): the connect may take until the flow's stop, the
            # kernel retransmitting a lost SYN itself. A POLL_S timeout here abandoned flows
            # that started behind a full queue (two of gcc-fifo.toml's four bulk flows sent
            # nothing).
            sock.settimeout(max((f["stop_ns"] - now_ns(epoch)) / 1e9, POLL_S))
            try:
                sock.bind(("", bind))
                sock.connect(dest)
                sock.settimeout(POLL_S)
                break
            except ConnectionRefusedError:
                sock.close()
                sock = None
                stopping.wait(0.01)
            except OSError as e:
                print(f"sender: flow {f['flow']}: connect: {e}", file=sys.stderr)
                return
        if sock is None:
            return
        self.sock = sock
        data = memoryview(bytes(CHUNK))
        while not stopping.is_set() and now_ns(epoch) < f["stop_ns"]:
            try:
                sock.send(data)
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                break
        self.final = tcp_info(sock)
        sock.close()


#: Linux's "no threshold yet" (TCP_INFINITE_SSTHRESH, include/net/tcp.h), in segments.
TCP_INFINITE_SSTHRESH = 0x7FFFFFFF
#: The simulator's value for the same state (aqmlab.arrow_records.SSTHRESH_UNSET, u64::MAX / 4);
#: this module runs in the namespaces without pyarrow, so it spells the number itself
#: (tests/test_table_types.py checks they agree).
SSTHRESH_UNSET = 2**64 // 4 - 1


def _ssthresh_bytes(segments: int, mss: int) -> int:
    """tcp_info's snd_ssthresh in bytes, "no threshold yet" as the simulator records it."""
    return SSTHRESH_UNSET if segments >= TCP_INFINITE_SSTHRESH else segments * mss


def sample_tcp(senders: list[Any], spec: dict[str, Any], rows: list[tuple]) -> None:
    """Samples every connected sender's TCP_INFO (and a BBR sender's pacing gain) on a grid of
    `flow_sample_ns`."""
    epoch, every = wait_epoch(spec), spec["flow_sample_ns"]
    if epoch is None:
        return
    k = 0
    while sleep_until(epoch, k * every):
        t = k * every
        for s in senders:
            if s.sock is None or s.final is not None:
                continue
            try:
                i = tcp_info(s.sock)
                gain = bbr_pacing_gain(s.sock) if s.flow.get("cc") == "bbr" else 0
            except OSError:
                continue
            rows.append((t, s.flow["flow"], i["bytes_acked"], i["snd_cwnd"] * i["snd_mss"],
                         _ssthresh_bytes(i["snd_ssthresh"], i["snd_mss"]), i["rtt_us"] * 1000, i["rto_us"] * 1000, 0,
                         i["segs_out"], i["total_retrans"], i["delivery_rate"] * 8, i["snd_wnd"],
                         i["pacing_rate"] * 8, gain))
        k += 1


class Sampler(threading.Thread):
    """A sampling loop in a thread that keeps its failure. An exception would otherwise end the
    thread silently and leave its table short or empty, which reads as "nothing sampled"; the
    endpoint raises it once its records are written (`_raise_errors`)."""

    def __init__(self, loop: Callable[..., None], *args: Any):
        super().__init__(name=loop.__name__, daemon=True)
        self.loop, self.args = loop, args
        self.error: str | None = None

    def run(self) -> None:
        try:
            self.loop(*self.args)
        except Exception as e:  # noqa: BLE001 (raised by the endpoint after its records are written)
            self.error = f"{self.name}: {type(e).__name__}: {e}"


def sample_received(counts: dict[int, int], flows: list[int], spec: dict[str, Any], rows: list[tuple]) -> None:
    """Samples the bytes each TCP sink's application has read (`counts`) every `flow_sample_ns`,
    each row stamped with the time it was read: (t_ns, flow, bytes)."""
    epoch, every = wait_epoch(spec), spec["flow_sample_ns"]
    if epoch is None:
        return
    k = 0
    while sleep_until(epoch, k * every):
        t = now_ns(epoch)
        for flow in flows:
            rows.append((t, flow, counts[flow]))
        k += 1


# ---- ping -----------------------------------------------------------------------------------


def _kernel_stamp_monotonic(anc: list[tuple[int, int, bytes]]) -> int:
    """The SO_TIMESTAMPNS receive time of a message on CLOCK_MONOTONIC (ns), else now. The
    kernel stamps on CLOCK_REALTIME, which a time daemon may step or slew during a run: the
    stamp is moved to the monotonic clock by the offset between the two read just now, a few
    microseconds after the stamp."""
    stamp = arrival_stamps.realtime_stamp_ns(anc)
    if stamp is None:
        return time.monotonic_ns()
    return stamp - (time.time_ns() - time.monotonic_ns())


def stamped_datagrams(sock: socket.socket, stop: threading.Event, epoch: int,
                      size: int) -> Iterator[tuple[bytes, int]]:
    """Each datagram `sock` receives, with the kernel's receive stamp on the run's clock (ns
    after `epoch`), until `stop` is set or the socket is closed. The socket needs a timeout (the
    loop looks at `stop` between datagrams) and SO_TIMESTAMPNS."""
    while not stop.is_set():
        try:
            data, anc, _, _ = sock.recvmsg(size, 1024)
        except TimeoutError:
            continue
        except OSError:
            return
        yield data, _kernel_stamp_monotonic(anc) - epoch


class PingClient(threading.Thread):
    """The sending side of a ping flow: request k leaves at start + k * interval whatever
    became of the earlier ones (as ping -i and irtt do, and the simulator's ping application);
    a second thread takes the replies. UDP requests carry the application header (its sequence
    number); ICMP echoes (`proto = "icmp"`, a raw socket) the sequence number in the echo
    header, answered by the far side's kernel. Times: the send just before the send call, the
    reply by the kernel's receive stamp, both on CLOCK_MONOTONIC; rows (flow, seq, sent_ns,
    rtt_ns or -1)."""

    def __init__(self, flow: dict[str, Any], spec: dict[str, Any]):
        super().__init__(name=f"ping{flow['flow']}", daemon=True)
        self.flow, self.spec = flow, spec
        self.sent: dict[int, int] = {}  # seq -> run time ns
        self.rtt: dict[int, int] = {}
        self.icmp = flow["proto"] == "icmp"
        self.icmp_id = (0x4000 + flow["flow"]) & 0xFFFF

    def _socket(self) -> socket.socket:
        f = self.flow
        if self.icmp:
            sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind(("", f["port"] if f.get("upload") else f["sport"]))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(f.get("dscp", 0)) << 2)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.settimeout(POLL_S)
        return sock

    def _request(self, k: int, sent_ns: int) -> bytes:
        size = int(self.flow["packet_size"])
        if not self.icmp:
            return app_packet(size, k, self.flow["flow"], sent_ns)
        body = bytes(max(size - 28, 0))  # IPv4 20 + ICMP 8 + body = the packet's IP size
        header = struct.pack("!BBHHH", 8, 0, 0, self.icmp_id, k & 0xFFFF)
        return struct.pack("!BBHHH", 8, 0, icmp_checksum(header + body), self.icmp_id, k & 0xFFFF) + body

    def _reply_seq(self, data: bytes) -> int | None:
        if not self.icmp:
            if len(data) >= APP_HEADER.size and data[:4] == APP_MAGIC:
                return int(APP_HEADER.unpack_from(data)[1])
            return None
        ihl = (data[0] & 0x0F) * 4
        if len(data) < ihl + 8:
            return None
        kind, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
        if kind != 0 or rid != self.icmp_id:
            return None
        # The latest request with these low 16 bits (a 16-bit ICMP sequence wraps).
        cands = [k for k in self.sent if k & 0xFFFF == rseq]
        return max(cands) if cands else None

    def _replies(self, sock: socket.socket, epoch: int) -> None:
        for data, reply_ns in stamped_datagrams(sock, stopping, epoch, 2048):
            k = self._reply_seq(data)
            if k is None or k not in self.sent or k in self.rtt:
                continue
            # Only replies within the run count, as in the simulator.
            if reply_ns < self.spec["duration_ns"]:
                self.rtt[k] = reply_ns - self.sent[k]

    def run(self) -> None:
        f = self.flow
        epoch = wait_epoch(self.spec)
        if epoch is None:
            return
        sock = self._socket()
        dest = (self.spec["sender_ip"], f["sport"]) if f.get("upload") else (self.spec["receiver_ip"], f["port"])
        if self.icmp:
            dest = (dest[0], 0)
        rx = threading.Thread(target=self._replies, args=(sock, epoch), daemon=True)
        rx.start()
        k = 0
        while True:
            t = f["start_ns"] + k * f["interval_ns"]
            if t >= f["stop_ns"] or not sleep_until(epoch, t):
                break
            run_ns = now_ns(epoch)
            self.sent[k] = run_ns
            with contextlib.suppress(OSError):
                sock.sendto(self._request(k, run_ns), dest)
            k += 1
        # Replies still in flight until the end of the run.
        sleep_until(epoch, self.spec["duration_ns"])
        rx.join(2 * POLL_S)
        sock.close()

    def rows(self) -> list[tuple]:
        return [(self.flow["flow"], k, run_ns, self.rtt.get(k, -1)) for k, run_ns in sorted(self.sent.items())]


def echo_socket(flow: dict[str, Any], ip: str, port: int) -> socket.socket:
    """The answering side of a UDP ping flow, marked with the flow's DSCP as its requests are."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(flow.get("dscp", 0)) << 2)
    sock.bind((ip, port))
    return sock


def start_echo(socks: list[socket.socket]) -> int | None:
    """Echoes every datagram on `socks` back to where it came from, at once (the simulator's
    echo), in a child process of its own: a thread here would wait for the interpreter lock
    held by this process's TCP threads (measured: under a FIFO's load, UDP probes answered by a
    thread came back a median 3-11 ms, at p90 31-68 ms, after ICMP echoes sent with them).
    Returns the child's pid (None without sockets); :func:`stop_echo` ends it."""
    if not socks:
        return None
    pid = os.fork()
    if pid == 0:  # the child: only this loop, then _exit (no cleanup of the parent's state)
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            parent = os.getppid()
            buf = bytearray(65536)
            while os.getppid() == parent:
                ready, _, _ = select.select(socks, [], [], POLL_S)
                for sock in ready:
                    with contextlib.suppress(OSError):
                        n, addr = sock.recvfrom_into(buf)
                        sock.sendto(buf[:n], addr)
        finally:
            os._exit(0)
    for sock in socks:
        sock.close()
    return pid


def stop_echo(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)


class ToolPing(threading.Thread):
    """A ping flow measured by Flent's own tool (``flow["tool"]``, at ``flow["tool_path"]``):
    started at the flow's start, from the flow's own address and port (irtt) so that the
    router knows it as this flow; its output is read back at the run's end into the same rows
    as :class:`PingClient`'s. Requests the tool sent at or after the flow's stop are dropped
    (the simulator's probes send none), and replies after the run's end count as lost, as
    there. ``error`` is set when the tool failed or gave no output."""

    def __init__(self, flow: dict[str, Any], spec: dict[str, Any], work: Path):
        super().__init__(name=f"{flow['tool']}{flow['flow']}", daemon=True)
        self.flow, self.spec, self.work = flow, spec, work
        self.sent: dict[int, int] = {}  # seq -> run time ns
        self.rtt: dict[int, int] = {}
        self.detail: list[tuple[int, int, int, int]] = []  # (flow, seq, round trip ns, server ns)
        self.error: str | None = None

    def run(self) -> None:
        f = self.flow
        epoch = wait_epoch(self.spec)
        if epoch is None or not sleep_until(epoch, f["start_ns"]):
            return
        end = self.spec["duration_ns"]
        out = self.work / f"{f['tool']}{f['flow']}.{'txt' if f['tool'] == 'ping' else 'json'}"
        argv = probe_tools.client_argv(f, self.spec, str(out))
        err_path = out.with_suffix(".err")
        start_wall = time.time_ns()
        # ping writes to stdout, irtt to the file named in its command.
        stdout_path = out if f["tool"] == "ping" else out.with_suffix(".out")
        with err_path.open("w") as err, stdout_path.open("w") as stdout:
            try:
                proc = subprocess.Popen(argv, stdout=stdout, stderr=err, stdin=subprocess.DEVNULL)
            except OSError as e:
                self.error = f"{f['tool']} (flow {f['flow']}) did not start: {e}"
                return
            self._wait(proc, epoch, end)
        text = out.read_text() if out.exists() else ""
        if proc.returncode not in (0, 1) or not text.strip():
            # ping exits 1 when a request went unanswered; anything else, or no output, failed.
            tail = err_path.read_text().strip().splitlines()[-1:] or [f"exit status {proc.returncode}, no output"]
            self.error = f"{f['tool']} (flow {f['flow']}) failed: {tail[0]}"
            return
        try:
            probes = (probe_tools.parse_ping(text, f["interval_ns"], start_wall) if f["tool"] == "ping"
                      else probe_tools.parse_irtt(text))
        except ValueError as e:
            self.error = f"{f['tool']} (flow {f['flow']}): {e}"
            return
        self._keep(probes, epoch)

    def _wait(self, proc: subprocess.Popen, epoch: int, end: int) -> None:
        """Until the tool ends by itself, at most until the run's end (ping: then SIGINT, which
        makes it print its statistics) or a few seconds past it (irtt: it ends after its
        `--wait`; signalled, it would write nothing). An early stop (the run interrupted) ends
        the tool at once."""
        grace_ns = int((probe_tools.IRTT_WAIT_S + 5) * 1e9)
        ping = self.flow["tool"] == "ping"
        while proc.poll() is None:
            t = now_ns(epoch)
            if stopping.is_set() and t < end:
                proc.kill()
            elif ping and t >= end:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(2.0)
                except subprocess.TimeoutExpired:
                    proc.kill()
            elif t >= end + grace_ns:
                proc.kill()
            time.sleep(0.05)
        proc.wait()

    def _keep(self, probes: list[probe_tools.Probe], epoch: int) -> None:
        f = self.flow
        wall_minus_mono = time.time_ns() - time.monotonic_ns()
        for p in probes:
            sent = p.sent_wall_ns - wall_minus_mono - epoch
            if sent >= f["stop_ns"]:
                continue
            self.sent[p.seq] = sent
            if p.rtt_ns >= 0 and sent + max(p.round_trip_ns, p.rtt_ns) < self.spec["duration_ns"]:
                self.rtt[p.seq] = p.rtt_ns
                self.detail.append((f["flow"], p.seq, p.round_trip_ns, p.server_ns))

    def rows(self) -> list[tuple]:
        return [(self.flow["flow"], k, run_ns, self.rtt.get(k, -1)) for k, run_ns in sorted(self.sent.items())]


#: Seconds the irtt server may take to open its listeners.
IRTT_SERVER_START_S = 10.0


def start_irtt_server(path: str, binds: list[tuple[str, int]], work: Path) -> subprocess.Popen | None:
    """The irtt server answering this side's UDP probe flows (None without any), once it
    listens on every address (its "[ListenerStart]" lines). Raises OSError if it does not."""
    if not binds:
        return None
    log = work / f"irtt-server-{os.getpid()}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(probe_tools.irtt_server_argv(path, binds), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + IRTT_SERVER_START_S
    while time.monotonic() < deadline:
        text = log.read_text()
        if text.count("[ListenerStart]") >= len(binds):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    stop_tool(proc)
    tail = log.read_text().strip().splitlines()[-1:] or ["no output"]
    raise OSError(f"irtt server did not start listening: {tail[0]}")


def stop_tool(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(2.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ping_side(flow: dict[str, Any], r1_side: bool) -> str | None:
    """What this side runs for a ping flow: "client", "echo" (a UDP echo), "irtt" (the flow's
    irtt server) or None (ICMP: the kernel answers)."""
    if flow["kind"] != "ping":
        return None
    sends_here = bool(flow.get("upload")) != r1_side
    if sends_here:
        return "client"
    if flow["proto"] != "udp":
        return None
    return "irtt" if flow.get("tool") == "irtt" else "echo"


# ---- UDP -----------------------------------------------------------------------------------


RTP_HEADER = struct.Struct("!BBHII")
#: RTP payload type: dynamic (RFC 3551 section 6), as video and audio streams negotiate it.
RTP_PAYLOAD_TYPE = 96


def app_packet(size_ip: int, seq: int, flow: int, sent_ns: int, frame_id: int = 0, frame_type: int = 0,
               frag_index: int = 0, frag_count: int = 1, rtp: bool = False) -> bytes:
    """A UDP payload making an IP packet of `size_ip` bytes (or the smallest that holds the
    headers): an optional RTP header (RFC 3550 section 5.1: version 2, 90 kHz timestamp, the
    flow as SSRC), then aqmlab's application header, then zeros."""
    head = b""
    if rtp:
        head = RTP_HEADER.pack(0x80, RTP_PAYLOAD_TYPE, seq & 0xFFFF, (sent_ns * 9 // 100_000) & 0xFFFFFFFF, flow)
    head += APP_HEADER.pack(APP_MAGIC, seq & 0xFFFFFFFF, frame_id, frame_type, 0, frag_index, frag_count, 0,
                            sent_ns & 0xFFFFFFFFFFFFFFFF, flow)
    return head + bytes(max(size_ip - IP_UDP_HEADERS - len(head), 0))


def cbr_schedule(flow: dict[str, Any]) -> dict[str, np.ndarray]:
    """A constant-bit-rate packet schedule: one `packet_size` packet every size*8/rate."""
    interval = flow["packet_size"] * 8 * 1e9 / flow["rate_bps"]
    n = int((flow["stop_ns"] - flow["start_ns"]) / interval)
    t = flow["start_ns"] + (np.arange(n) * interval).astype(np.int64)
    return {"t_ns": t, "size": np.full(n, flow["packet_size"], dtype=np.int64)}


class UdpSender(threading.Thread):
    def __init__(self, flow: dict[str, Any], spec: dict[str, Any]):
        super().__init__(name=f"udp{flow['flow']}", daemon=True)
        self.flow, self.spec = flow, spec
        self.sent = 0
        self.errors = 0

    def run(self) -> None:
        f, epoch = self.flow, self.spec["epoch_ns"]
        sched = f["schedule"] if "schedule" in f else cbr_schedule(f)
        rtp = bool(sched.get("rtp", False))
        n = len(sched["t_ns"])
        cols = {k: np.asarray(sched.get(k, np.zeros(n, dtype=np.int64))) for k in
                ("t_ns", "size", "dscp", "frame_id", "frame_type", "frag_index", "frag_count")}
        if "dscp" not in sched:
            cols["dscp"] = np.full(n, f.get("dscp", 0))
        if "frag_count" not in sched:
            cols["frag_count"] = np.ones(n, dtype=np.int64)
        # The model's sequence numbers (RTP jitter may send them out of order), else send order.
        seqs = np.asarray(sched["seq"]) if "seq" in sched else np.arange(n)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("", f["sport"]))
        dest = (self.spec["receiver_ip"], f["port"])
        tos = None
        ecn_bits = int(f.get("ecn_bits", 0))  # the app's ECN codepoint (RFC 3168 section 5)
        for k in range(n):
            if not sleep_until(epoch, int(cols["t_ns"][k])):
                break
            if int(cols["dscp"][k]) << 2 | ecn_bits != tos:
                tos = int(cols["dscp"][k]) << 2 | ecn_bits
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            pkt = app_packet(int(cols["size"][k]), int(seqs[k]), f["flow"], now_ns(epoch), int(cols["frame_id"][k]),
                             int(cols["frame_type"][k]), int(cols["frag_index"][k]), int(cols["frag_count"][k]), rtp)
            try:
                sock.sendto(pkt, dest)
                self.sent += 1
            except OSError:
                self.errors += 1
        sock.close()


def _tcp_options(flow: dict[str, Any]) -> Callable[[socket.socket], None]:
    """Sets a flow's congestion control and MSS on a socket (before connect or listen)."""
    def apply(sock: socket.socket) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, flow["cc"].encode())
        if flow.get("mss"):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, flow["mss"])
    return apply


def abr_servers(spec: dict[str, Any]) -> list[Any]:
    """The HTTP server of every ABR flow, listening on the flow's sender port
    (:mod:`aqmlab.emu.abr`)."""
    from aqmlab.emu.abr import SegmentServer  # noqa: PLC0415 - only runs with ABR flows load it

    servers = []
    for f in spec["flows"]:
        if f["kind"] == "abr":
            server = SegmentServer(f, (spec["sender_ip"], f["sport"]), _tcp_options(f))
            threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True).start()
            servers.append(server)
    return servers


def call_senders(spec: dict[str, Any]) -> list[Any]:
    """The sender of every GCC call (:mod:`aqmlab.emu.call`)."""
    if not any(f["kind"] == "call" for f in spec["flows"]):
        return []
    from aqmlab.emu.call import CallSender  # noqa: PLC0415 - only runs with calls load it

    return [CallSender(f, spec, stopping) for f in spec["flows"] if f["kind"] == "call"]


def _bulk(f: dict[str, Any]) -> bool:
    return f["proto"] == "tcp" and f["kind"] == "bulk"


def tcp_sinks(flows: list[dict[str, Any]], ip: str, counts: dict[int, int], r1_side: bool) -> list[threading.Thread]:
    """A listener and sink thread per bulk flow received on this side (downloads on R2's side
    at `port`, uploads on R1's side at `sport`)."""
    threads = []
    for f in flows:
        if _bulk(f) and bool(f.get("upload")) == r1_side:
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((ip, f["sport"] if r1_side else f["port"]))
            ls.listen(1)
            counts[f["flow"]] = 0
            threads.append(threading.Thread(target=tcp_sink, args=(ls, counts, f["flow"]), daemon=True))
    return threads


def ping_threads(spec: dict[str, Any], r1_side: bool, work: Path) -> tuple[list[Any], list[socket.socket],
                                                                        list[tuple[str, int]]]:
    """This side's ping clients (:class:`PingClient`, or :class:`ToolPing` for a flow with a
    tool), UDP echo sockets (for :func:`start_echo`) and irtt server addresses (for
    :func:`start_irtt_server`)."""
    ip = spec["sender_ip"] if r1_side else spec["receiver_ip"]
    clients: list[Any] = []
    echoes, irtt = [], []
    for f in spec["flows"]:
        side = _ping_side(f, r1_side)
        if side == "client":
            clients.append(ToolPing(f, spec, work) if f.get("tool") else PingClient(f, spec))
        elif side == "echo":
            echoes.append(echo_socket(f, ip, f["sport"] if r1_side else f["port"]))
        elif side == "irtt":
            irtt.append((ip, f["sport"] if r1_side else f["port"]))
    return clients, echoes, irtt


def _irtt_path(spec: dict[str, Any]) -> str:
    return next(f["tool_path"] for f in spec["flows"] if f.get("tool") == "irtt")


def run_sender(spec: dict[str, Any], out: Path) -> None:
    _epoch[0] = spec["epoch_ns"]
    epoch_known.set()
    flows = spec["flows"]
    pings, echoes, irtt_binds = ping_threads(spec, r1_side=True, work=out.parent)
    echo_pid = start_echo(echoes)  # forked before any thread starts
    irtt_server = start_irtt_server(_irtt_path(spec), irtt_binds, out.parent) if irtt_binds else None
    tcp: list[Any] = [TcpSender(f, spec) for f in flows if _bulk(f) and not f.get("upload")]
    servers = abr_servers(spec)
    udp = [UdpSender(f, spec) for f in flows if f["proto"] == "udp" and f["kind"] not in ("ping", "call")]
    calls = call_senders(spec)
    for f in flows:
        if f["proto"] == "udp" and "schedule_file" in f:
            f["schedule"] = dict(np.load(f["schedule_file"]))
    counts: dict[int, int] = {}
    sinks = tcp_sinks(flows, spec["sender_ip"], counts, r1_side=True)
    rows: list[tuple] = []
    received: list[tuple] = []
    sampler = Sampler(sample_tcp, [*tcp, *servers], spec, rows)
    counter = Sampler(sample_received, counts, sorted(counts), spec, received)
    arrival_stamps.keep_arrival_stamps_on()  # ping replies and call feedback are timed by them
    print("ready", flush=True)
    for t in [*sinks, *tcp, *udp, *calls, *pings, sampler, counter]:
        t.start()
    end = spec["duration_ns"]
    sleep_until(spec["epoch_ns"], end)
    stopping.set()
    stop_echo(echo_pid)
    stop_tool(irtt_server)
    for t in [*tcp, *udp, *calls, *sinks]:
        t.join(2.0)
    _join_pings(pings)
    for server in servers:
        with contextlib.suppress(OSError):
            server.final = tcp_info(server.sock) if server.sock is not None else None
        server.shutdown()
        server.server_close()
    samples = np.array(rows, dtype=np.int64).reshape(-1, _core.LOGGED_SAMPLE_COLUMNS)
    totals = []
    for s in [*tcp, *servers]:
        i = s.final or {}
        totals.append((s.flow["flow"], i.get("segs_out", 0), i.get("total_retrans", 0), i.get("min_rtt_us", 0) * 1000,
                       i.get("total_rto", -1)))
    for u in [*udp, *calls]:
        totals.append((u.flow["flow"], u.sent, 0, 0, 0))
    for p in pings:
        totals.append((p.flow["flow"], len(p.sent), 0, 0, 0))
    arrays: dict[str, Any] = {"samples": samples, "totals": np.array(totals, dtype=np.int64).reshape(-1, 5),
                              **_side_records(received, pings, counts)}
    for c in calls:
        arrays.update(c.records())
    np.savez(out, **arrays)
    _raise_errors([*pings, sampler, counter])


def _join_pings(pings: list[Any]) -> None:
    """Waits for the ping clients; a tool's thread ends by itself a few seconds after the run
    at the latest (it reads the tool's output then), the emulator's own clients at once."""
    for p in pings:
        p.join((probe_tools.IRTT_WAIT_S + 10) if isinstance(p, ToolPing) else 2.0)


def _raise_errors(threads: list[Any]) -> None:
    """A probe tool or a sampling loop that failed fails the endpoint (after its records are
    written), naming it and quoting its error: a series silently missing would read as total
    loss, or as nothing sampled."""
    errors = [t.error for t in threads if getattr(t, "error", None)]
    if errors:
        raise OSError("; ".join(errors))


def _side_records(received: list[tuple], pings: list[Any], counts: dict[int, int]) -> dict[str, np.ndarray]:
    """What either side writes alike: its sinks' sampled and final byte counts, its probes
    (and, for probes a tool measured, the tool's full round trip and server time)."""
    probes = [row for p in pings for row in p.rows()]
    detail = [row for p in pings for row in getattr(p, "detail", [])]
    return {"received": np.array(received, dtype=np.int64).reshape(-1, 3),
            "probes": np.array(probes, dtype=np.int64).reshape(-1, 4),
            "probe_tool_times": np.array(detail, dtype=np.int64).reshape(-1, 4),
            "tcp_bytes": np.array(sorted(counts.items()), dtype=np.int64).reshape(-1, 2)}


# ---- receiver ------------------------------------------------------------------------------


def tcp_sink(listener: socket.socket, counts: dict[int, int], flow: int) -> None:
    listener.settimeout(0.2)
    conn = None
    while not stopping.is_set() and conn is None:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
    if conn is None:
        return
    conn.settimeout(0.2)
    buf = bytearray(CHUNK)
    while not stopping.is_set():
        try:
            n = conn.recv_into(buf)
        except TimeoutError:
            continue
        if n == 0:
            break
        counts[flow] += n
    conn.close()


def udp_sink_socket(ip: str, port: int) -> socket.socket:
    """A UDP socket for :func:`udp_sink`: a 4 MB receive buffer, and the kernel's receive stamps
    on from before the first packet (the kernel stamps a packet as it arrives only once its
    host-wide switch is on, which it turns on a moment after the first request: returned once
    it is, see :mod:`aqmlab.emu.arrival_stamps`; otherwise the read time is all there is)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((ip, port))
    arrival_stamps.keep_arrival_stamps_on()
    return sock


def media_row(buf: bytearray, n: int, t: int) -> tuple[int, int, int, int, int, int] | None:
    """The `media` row of a UDP payload of `n` bytes in `buf` received at `t` (raw
    CLOCK_MONOTONIC ns): (flow, seq, IP size, send time, `t`, frame id), read from the
    application header, after an RTP header if there is one; None for anything else."""
    at = RTP_HEADER.size if n >= RTP_HEADER.size + 4 and buf[0] >> 6 == 2 and buf[12:16] == APP_MAGIC else 0
    if n < at + APP_HEADER.size or buf[at:at + 4] != APP_MAGIC:
        return None
    _, seq, frame_id, _ft, _, _fi, _fc, _, sent, flow = APP_HEADER.unpack_from(buf, at)
    return flow, seq, n + IP_UDP_HEADERS, sent, t, frame_id


def udp_sink(sock: socket.socket, log: list[tuple]) -> None:
    """Logs (flow, seq, IP size, send time, receive time, frame id) of every packet; the receive time is
    the kernel's receive stamp on raw CLOCK_MONOTONIC (the orchestrator subtracts the epoch,
    which it fixes after the receiver has started). The kernel's stamp, not the time this thread
    gets the packet: on a busy 2-core host the thread is sometimes woken milliseconds late, and a
    stamp taken then moved packets across the 100 ms windows a trace test compares."""
    sock.settimeout(0.2)
    buf = bytearray(65536)
    while not stopping.is_set():
        try:
            n, anc, _, _ = sock.recvmsg_into([buf], 1024)
        except TimeoutError:
            continue
        row = media_row(buf, n, _kernel_stamp_monotonic(anc))
        if row is not None:
            log.append(row)


def run_receiver(spec: dict[str, Any], out: Path) -> None:
    ip = spec["receiver_ip"]
    pings, echoes, irtt_binds = ping_threads(spec, r1_side=False, work=out.parent)
    echo_pid = start_echo(echoes)  # forked before any thread starts
    irtt_server = start_irtt_server(_irtt_path(spec), irtt_binds, out.parent) if irtt_binds else None
    threads: list[threading.Thread] = []
    counts: dict[int, int] = {}
    log: list[tuple] = []
    abr = []
    calls: list[Any] = []
    for f in spec["flows"]:
        if f["kind"] == "abr":
            from aqmlab.emu.abr import AbrClientThread  # noqa: PLC0415 - only runs with ABR flows load it

            counts[f["flow"]] = 0
            abr.append(AbrClientThread(f, ip, spec["sender_ip"], epoch_known, lambda: _epoch[0], stopping, counts))
            threads.append(abr[-1])
        elif f["kind"] == "call":
            from aqmlab.emu.call import CallReceiver  # noqa: PLC0415 - only runs with calls load it

            calls.append(CallReceiver(f, spec, udp_sink_socket(ip, f["port"]), log, (stopping, epoch_known),
                                      lambda: _epoch[0]))
            threads.append(calls[-1])
        elif f["proto"] == "udp" and f["kind"] != "ping":
            threads.append(threading.Thread(target=udp_sink, args=(udp_sink_socket(ip, f["port"]), log), daemon=True))
    sink_counts: dict[int, int] = {}
    threads += tcp_sinks(spec["flows"], ip, sink_counts, r1_side=False)
    # Uploads: this side sends (the epoch comes on stdin; each sender waits for it).
    uploads = [TcpSender(f, spec) for f in spec["flows"] if _bulk(f) and f.get("upload")]
    rows: list[tuple] = []
    received: list[tuple] = []
    samplers = [Sampler(sample_tcp, uploads, spec, rows),
                Sampler(sample_received, sink_counts, sorted(sink_counts), spec, received)]
    for t in [*threads, *uploads, *pings, *samplers]:
        t.start()
    threading.Thread(target=_stop_on_stdin, daemon=True).start()
    arrival_stamps.keep_arrival_stamps_on()  # media, ping replies
    print("ready", flush=True)
    while not stopping.wait(0.2):
        pass
    stop_echo(echo_pid)
    stop_tool(irtt_server)
    for t in [*threads, *uploads]:
        t.join(1.0)
    _join_pings(pings)
    media = np.array(log, dtype=np.int64).reshape(-1, 6)
    totals = [(s.flow["flow"], (s.final or {}).get("segs_out", 0), (s.final or {}).get("total_retrans", 0),
               (s.final or {}).get("min_rtt_us", 0) * 1000, (s.final or {}).get("total_rto", -1)) for s in uploads]
    totals += [(p.flow["flow"], len(p.sent), 0, 0, 0) for p in pings]
    side = _side_records(received, pings, sink_counts)
    side["tcp_bytes"] = np.array(sorted({**counts, **sink_counts}.items()), dtype=np.int64).reshape(-1, 2)
    arrays: dict[str, Any] = {"media": media, **side, **abr_records(abr),
                              "samples": np.array(rows, dtype=np.int64).reshape(-1, _core.LOGGED_SAMPLE_COLUMNS),
                              **{f"call/{c.flow['flow']}/reports_sent": np.array(c.reports_sent) for c in calls},
                              "totals": np.array(totals, dtype=np.int64).reshape(-1, 5)}
    np.savez(out, **arrays)
    _raise_errors([*pings, *samplers])


def abr_records(clients: list[Any]) -> dict[str, np.ndarray]:
    """Each ABR client's tables as `abr/<flow>/<table>/<column>` arrays. For the encoded ladder
    the SSIM and PSNR of each segment fetched are measured on the bytes that arrived (decoded
    and scored against the source, :func:`aqmlab.abr_encoded_ladder.score_segment_bytes`),
    replacing the ladder's scores of those segments in the tables."""
    out: dict[str, np.ndarray] = {}
    for c in clients:
        if c.error:
            print(f"receiver: {c.error}", file=sys.stderr)
        ladder_json = measured_ladder(c) if c.bodies else None
        for table, cols in c.tables(ladder_json).items():
            for col, values in cols.items():
                out[f"abr/{c.flow['flow']}/{table}/{col}"] = values
    return out


def measured_ladder(client: Any) -> str:
    """The client's ladder with the scores of the segments it fetched measured on their bytes
    (one decode per distinct body)."""
    from aqmlab import abr_encoded_ladder, viewer  # noqa: PLC0415 - PyAV only for the encoded ladder

    cfg = json.loads(client.config_json)
    ladder, seg_ns = cfg["ladder"], cfg["ladder"]["segment_duration_ns"]
    source = viewer.source_clip(abr_encoded_ladder.FPS)
    scored: dict[bytes, tuple[float, float]] = {}
    for rung, segment, body in client.bodies:
        if body not in scored:
            frames = abr_encoded_ladder.source_segment(seg_ns, segment, source)
            scored[body] = abr_encoded_ladder.score_segment_bytes(body, frames)
        ladder["ssim_db"][rung][segment], ladder["psnr_db"][rung][segment] = scored[body]
    return json.dumps(ladder)


def _stop_on_stdin() -> None:
    """`stop` on stdin, or stdin closing (the orchestrator gone), stops the process; `epoch N`
    tells it the run's epoch (CLOCK_MONOTONIC ns of t = 0)."""
    for line in sys.stdin:
        if line.strip() == "stop":
            break
        if line.startswith("epoch "):
            _epoch[0] = int(line.split()[1])
            epoch_known.set()
    stopping.set()


def realtime() -> None:
    """SCHED_FIFO for the short-lived probe process: on a busy host an ordinary task waits
    for the CPU after each wake-up. Ignored where not permitted."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(40))


def icmp_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def run_probe(spec: dict[str, Any], out: Path) -> None:
    """Round-trip times of `probe_count` 64-byte ICMP echoes, one at a time, as ping measures
    them: the receiver's kernel answers (no process wake-up on that side) and the reply's time
    is the kernel's receive timestamp (SO_TIMESTAMPNS), so neither endpoint's scheduling is
    counted. The minimum is the base RTT."""
    realtime()
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    arrival_stamps.keep_arrival_stamps_on()
    sock.settimeout(1.0)
    ident = os.getpid() & 0xFFFF
    rtts = []
    for k in range(spec.get("probe_count", 20)):
        body = bytes(36)  # 20 (IP) + 8 (ICMP) + 36 = a 64-byte packet
        header = struct.pack("!BBHHH", 8, 0, 0, ident, k)
        packet = struct.pack("!BBHHH", 8, 0, icmp_checksum(header + body), ident, k) + body
        t0 = time.monotonic_ns()
        sock.sendto(packet, (spec["receiver_ip"], 0))
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                data, anc, _, _ = sock.recvmsg(2048, 1024)
            except TimeoutError:
                break
            ihl = (data[0] & 0x0F) * 4
            kind, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
            if kind == 0 and rid == ident and rseq == k:
                # On the monotonic clock: a step of the wall clock during the probe (seen here:
                # a minimum 3.5 ms below the configured path) must not enter the RTT.
                rtts.append(_kernel_stamp_monotonic(anc) - t0)
                break
        time.sleep(0.005)
    np.savez(out, rtt_ns=np.array(rtts, dtype=np.int64))


def request_stop(_signum: int, _frame: Any) -> None:
    """The endpoints' SIGTERM and SIGINT handler: sets `stopping` from a thread of its own. The
    handler runs in the main thread, which may be inside `stopping.wait()` holding the event's
    lock; `stopping.set()` here would wait for that lock forever (a receiver hung so in CI,
    every thread on the one lock, gdb's py-bt showed)."""
    threading.Thread(target=stopping.set, daemon=True, name="aqmlab-stop").start()


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("sender", "receiver", "probe"):
        print("usage: python -m aqmlab.emu.endpoints sender|receiver|probe SPEC.json OUT.npz", file=sys.stderr)
        return 2
    role, spec = argv[0], json.loads(Path(argv[1]).read_text())
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, request_stop)
    try:
        {"sender": run_sender, "receiver": run_receiver, "probe": run_probe}[role](spec, Path(argv[2]))
    except OSError as e:
        print(f"{role}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
