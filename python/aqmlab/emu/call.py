"""The real-time video call of an emulation run (`app = { kind = "video", congestion_control =
"gcc" }`): a GCC sender in the sender namespace and its receiver in the receiver namespace, over
UDP, running the simulator's own controller, feedback and encoder code through the binding.

* The sender (:class:`CallSender`) makes frame k at ``start + k * round(1e9 / fps)`` ns with
  ``_core.SyntheticCodec`` (aqmlab-model's encoder model, the simulated call's own RNG stream),
  cuts it into RTP packets at the flow's MTU (``rtp::packetize``) and paces them evenly over
  the frame interval, packet i of n at ``capture + i * (interval // n)``, as the simulator's
  call does (``aqmlab-sim``'s ``rtc``). Each packet is an RTP header and the application header
  the router parses (:func:`aqmlab.emu.endpoints.app_packet`, the frame's id and fragment), its
  sequence number the transport-wide one; every send is told to ``_core.GccSender``
  (aqmlab-model's ``app::gcc``) with the time just before the send call and the packet's IP size.
* The receiver (:class:`CallReceiver`) logs every packet in the ``media`` schema, stamped by the
  kernel (as :func:`aqmlab.emu.endpoints.udp_sink` does), and feeds ``_core.FeedbackBuilder``
  with the arrival on the run's clock; every ``feedback_interval`` from the call's start it
  sends the report (if anything arrived) back to the sender's port over UDP, from the flow's
  port, so the router carries it on the way back as this flow's (its access delays, the reverse
  link). A report is the application header (seq = the report's number) followed by the
  report's contents (:data:`REPORT`), padded to the IP size the simulator gives it
  (draft-holmer-rmcat-transport-wide-cc-extensions-01's, ``FeedbackReport::size``) when it is
  smaller; it is larger when it lists more than about a packet per 15 bytes of that size (the
  arrival times go as 8-byte ns, not the draft's 250 us ticks).
* The sender's second thread takes the reports (kernel receive stamp as the arrival time),
  drops one older than a report already applied (the simulator drops an overtaken report too)
  and hands it to the ``GccSender``; the new target goes to the encoder at once (in force after
  its reaction lag, the encoder model's rule).

Records: the receiver's packet log joins the run's ``media`` table; the sender writes each
frame (capture, payload, key, rate, packets), the ``gcc_rate`` rows of its ``GccSender`` and
its counts; the orchestrator joins them with the log into ``rtc_frames`` and ``rtc_sessions``
by the simulator's table code (``_core.call_tables``) and sets the call's
``flow_samples.app_level`` to its target in kbit/s at each sample time, as the simulator does.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from aqmlab import _core

# The helpers alone: the endpoint process runs that module as __main__, so its events (stop,
# epoch) are handed in rather than imported (they would be a second copy).
from aqmlab.emu.endpoints import (
    APP_HEADER,
    APP_MAGIC,
    IP_UDP_HEADERS,
    SO_TIMESTAMPNS,
    _kernel_stamp_monotonic,
    app_packet,
    media_row,
    stamped_datagrams,
)

#: The report after the application header: magic, report number, base, end, made (run ns),
#: arrivals, CE-marked; then per arrival (seq u64, arrival run ns u64), then per CE seq (u64).
REPORT = struct.Struct("!4sIQQQII")
REPORT_MAGIC = b"AQFB"
ARRIVAL = struct.Struct("!QQ")
CE = struct.Struct("!Q")
#: Socket timeout between checks for the end of the run, s.
POLL_S = 0.05


def call_config(app_json: str) -> dict[str, Any]:
    """The settings the endpoints read from a GCC video flow's engine `app` config."""
    app = json.loads(app_json)
    g = app["gcc"]
    return {"fps": float(app["media"]["fps"]), "feedback_interval_ns": int(g["feedback_interval_ns"]),
            "deadline_ns": int(g["deadline_ns"])}


def frame_interval_ns(fps: float) -> int:
    """The simulator's frame spacing (``Time::from_secs_f64(1 / fps)``: whole ns, rounded)."""
    return round(1e9 / fps)


def encode_report(number: int, flow: int, sent_ns: int, report: tuple) -> bytes:
    """A feedback report as a UDP payload (see the module's documentation)."""
    base, end, arrivals, ce, made, size = report
    body = APP_HEADER.pack(APP_MAGIC, number & 0xFFFFFFFF, 0, 0, 0, 0, 1, 0, sent_ns, flow)
    body += REPORT.pack(REPORT_MAGIC, number & 0xFFFFFFFF, base, end, made, len(arrivals), len(ce))
    body += b"".join(ARRIVAL.pack(s, t) for s, t in arrivals) + b"".join(CE.pack(s) for s in ce)
    return body + bytes(max(size - IP_UDP_HEADERS - len(body), 0))


def decode_report(data: bytes) -> tuple[int, int, int, list[tuple[int, int]], list[int], int] | None:
    """(number, base, end, arrivals, ce, made) of a report payload, None if it is not one."""
    at = APP_HEADER.size
    if len(data) < at + REPORT.size or data[at:at + 4] != REPORT_MAGIC:
        return None
    _, number, base, end, made, n, n_ce = REPORT.unpack_from(data, at)
    at += REPORT.size
    if len(data) < at + n * ARRIVAL.size + n_ce * CE.size:
        return None
    arrivals = [ARRIVAL.unpack_from(data, at + i * ARRIVAL.size) for i in range(n)]
    at += n * ARRIVAL.size
    ce = [CE.unpack_from(data, at + i * CE.size)[0] for i in range(n_ce)]
    return number, base, end, arrivals, ce, made


class CallSender(threading.Thread):
    """The sending side of a GCC call (see the module's documentation). The events are
    the endpoint process's own (its module runs as ``__main__``, so importing it here would make
    a second copy of them)."""

    def __init__(self, flow: dict[str, Any], spec: dict[str, Any], stopping: threading.Event):
        super().__init__(name=f"call{flow['flow']}", daemon=True)
        self.flow, self.spec, self.stopping = flow, spec, stopping
        cfg = call_config(flow["app_json"])
        self.interval = frame_interval_ns(cfg["fps"])
        self.codec = _core.SyntheticCodec(flow["app_json"], spec["seed"], flow["flow"])
        self.gcc = _core.GccSender(flow["app_json"])
        self.lock = threading.Lock()
        #: (capture ns, payload bytes, key, rate bit/s, packets) per frame.
        self.frames: list[tuple[int, int, bool, float, int]] = []
        self.sent = 0
        self.errors = 0
        self.reports_received = 0
        self.last_report = -1
        #: (run ns, target bit/s) after every report applied.
        self.targets: list[tuple[int, float]] = []

    def run(self) -> None:
        f, epoch = self.flow, self.spec["epoch_ns"]
        sleep_until = self._sleep_until
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("", f["sport"]))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, int(f.get("dscp", 0)) << 2 | int(f.get("ecn_bits", 0)))
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)  # the reports' arrival stamps
        sock.settimeout(POLL_S)
        rx = threading.Thread(target=self._reports, args=(sock, epoch), daemon=True, name=f"call{f['flow']}-fb")
        rx.start()
        dest = (self.spec["receiver_ip"], f["port"])
        seq = 0
        k = 0
        while True:
            capture = f["start_ns"] + k * self.interval
            if capture >= f["stop_ns"] or not sleep_until(epoch, capture):
                break
            with self.lock:
                payload, key, rate, sizes = self.codec.next_frame(capture)
            self.frames.append((capture, payload, key, rate, len(sizes)))
            spacing = self.interval // len(sizes)
            for i, size in enumerate(sizes):
                due = capture + spacing * i
                if due >= f["stop_ns"] or not sleep_until(epoch, due):
                    break
                t = time.monotonic_ns() - epoch
                pkt = app_packet(size, seq, f["flow"], t, k, 0, i, len(sizes), rtp=True)
                try:
                    sock.sendto(pkt, dest)
                    self.sent += 1
                except OSError:
                    self.errors += 1
                with self.lock:
                    # The IP size the network carries (at least the RTP and application headers).
                    self.gcc.on_sent(seq, len(pkt) + 28, t)
                seq += 1
            k += 1
        # Reports still in flight until the end of the run.
        sleep_until(epoch, self.spec["duration_ns"])
        rx.join(2 * POLL_S)
        sock.close()

    def _sleep_until(self, epoch: int, t_ns: int) -> bool:
        """Sleeps until run time `t_ns`; False if asked to stop meanwhile."""
        while not self.stopping.is_set():
            left = t_ns - (time.monotonic_ns() - epoch)
            if left <= 0:
                return True
            self.stopping.wait(min(left / 1e9, 0.2))
        return False

    def _reports(self, sock: socket.socket, epoch: int) -> None:
        for data, now in stamped_datagrams(sock, self.stopping, epoch, 65536):
            r = decode_report(data)
            if r is None or now >= self.spec["duration_ns"]:
                continue
            number, base, end, arrivals, ce, made = r
            if number <= self.last_report:
                continue  # overtaken by a later report: dropped, as the simulator drops it
            self.last_report = number
            with self.lock:
                target = self.gcc.on_feedback(base, end, arrivals, made, now, ce)
                self.codec.set_target(now, target)
            self.reports_received += 1
            self.targets.append((now, target))

    def records(self) -> dict[str, np.ndarray]:
        """The sender's records as `call/<flow>/...` arrays for its .npz."""
        p = f"call/{self.flow['flow']}/"
        out = {p + "frames_t_ns": np.array([fr[0] for fr in self.frames], dtype=np.int64),
               p + "frames_payload": np.array([fr[1] for fr in self.frames], dtype=np.int64),
               p + "frames_key": np.array([fr[2] for fr in self.frames], dtype=np.int64),
               p + "frames_rate_bps": np.array([fr[3] for fr in self.frames], dtype=np.float64),
               p + "frames_packets": np.array([fr[4] for fr in self.frames], dtype=np.int64),
               p + "reports_received": np.array(self.reports_received, dtype=np.int64)}
        with self.lock:
            for col, dt, buf in self.gcc.rate_table(self.flow["flow"]):
                out[p + "gcc_rate/" + col] = np.frombuffer(buf, dtype=np.dtype(f"<{dt}"))
        return out


class CallReceiver(threading.Thread):
    """The receiving side of a GCC call: logs packets into `log` (the receiver's `media` rows,
    raw CLOCK_MONOTONIC receive stamps) and sends the feedback reports."""

    def __init__(self, flow: dict[str, Any], spec: dict[str, Any], sock: socket.socket, log: list[tuple],
                 events: tuple[threading.Event, threading.Event], epoch_ns: Callable[[], int]):
        super().__init__(name=f"call{flow['flow']}-rx", daemon=True)
        self.flow, self.spec, self.sock, self.log, self.epoch_ns = flow, spec, sock, log, epoch_ns
        self.stopping, self.epoch_known = events
        self.builder = _core.FeedbackBuilder()
        self.every = call_config(flow["app_json"])["feedback_interval_ns"]
        self.reports_sent = 0

    def run(self) -> None:
        f, sock, stopping = self.flow, self.sock, self.stopping
        while not self.epoch_known.wait(POLL_S):
            if stopping.is_set():
                return
        epoch = self.epoch_ns()
        dest = (self.spec["sender_ip"], f["sport"])
        next_report = f["start_ns"] + self.every
        buf = bytearray(65536)
        while not stopping.is_set():
            now = time.monotonic_ns() - epoch
            if now >= next_report:
                if next_report < f["stop_ns"]:
                    self._report(dest, now)
                next_report += self.every
                continue
            sock.settimeout(min(POLL_S, max((next_report - now) / 1e9, 1e-4)))
            try:
                n, anc, _, _ = sock.recvmsg_into([buf], 1024)
            except TimeoutError:
                continue
            except OSError:
                return
            t = _kernel_stamp_monotonic(anc)
            row = media_row(buf, n, t)
            if row is not None:
                self.log.append(row)
                if t >= epoch:
                    # No CE flag: GCC reads none (and this socket does not ask for the TOS byte).
                    self.builder.on_packet(row[1], t - epoch)

    def _report(self, dest: tuple[str, int], now: int) -> None:
        """The report of the timer just due, made when this thread got to it (`now`)."""
        r = self.builder.take(now)
        if r is None:
            return
        with contextlib.suppress(OSError):
            self.sock.sendto(encode_report(self.reports_sent, self.flow["flow"], now, r), dest)
            self.reports_sent += 1
