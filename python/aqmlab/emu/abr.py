"""The ABR client of an emulation run (`flows.app.kind = "abr"`): a real HTTP/1.1 server in the
sender namespace and a real HTTP/1.1 client in the receiver namespace, over kernel TCP.

* The server (one per flow, :class:`SegmentServer`, Python's ``http.server``) listens on the
  flow's sender port and answers ``GET /<rung>/<segment>`` with the segment's bytes: for the
  encoded ladder the real libx264 segment files (:func:`aqmlab.abr_encoded_ladder.segment_files`,
  an H.264 elementary stream each, the clip's segments in a loop as the ladder itself loops
  them), for a synthetic or CSV ladder a body of the ladder's size (zero bytes: only its length
  matters to the network). ``Content-Length`` frames each response, so one connection carries
  every segment (HTTP/1.1 persistent connection, RFC 9112 section 9.3).
* The client (one thread per flow, :class:`AbrClientThread`) binds the flow's port, so the
  router classifies the connection as the flow (its server port is the client's port, as the
  classifier reads the destination port forward), connects at the flow's start, and asks
  ``_core.AbrClient`` (aqmlab-model's ``app::abr::client``, the simulator's own client code)
  what to do: wait for room in the buffer, or fetch a segment at the rung the algorithm chose.
  It sends one GET per segment and completes the segment when the last byte of its body has been
  read. The playback buffer, startup, stalls and the ``abr_segments`` / ``abr_sessions`` rows are
  that same Rust code's.

Why a raw socket client and ``http.server`` for the server: both are the standard library; the
client must be able to abandon a response at the session's end (the flow's stop or the run's end)
and count bytes as they arrive, which ``http.client``'s blocking ``read()`` does not allow, while
the server needs nothing beyond ``BaseHTTPRequestHandler`` with ``protocol_version =
"HTTP/1.1"`` (keep-alive and ``Content-Length``).

Differences from the simulator's client, by construction: the request is a real HTTP request
carried by kernel TCP (retransmitted by TCP, so ``requests`` is always 1); the response carries
the body's exact bytes plus about 100 bytes of HTTP headers (the simulator pads to whole MSS);
completion is when the application reads the last byte (the simulator's is when TCP has it in
order), so receiver scheduling delay is part of each download time here.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

#: Bytes read from the socket at a time, and the socket timeout between checks for the end.
CHUNK = 256 * 1024
POLL_S = 0.2


def segment_path(rung: int, segment: int) -> str:
    return f"/{rung}/{segment}"


class Bodies:
    """The bytes the server sends for (rung, segment): the encoded files, or zeros of the
    ladder's size."""

    def __init__(self, ladder: dict[str, Any], files: str | None):
        self.sizes = ladder["sizes_bytes"]
        self.files: list[list[bytes]] | None = None
        if files is not None:
            # files/<rung>/<k>.h264 for the clip's k = 0..n-1; segment s plays clip segment s % n.
            root = Path(files)
            self.files = [[p.read_bytes() for p in sorted((root / str(r)).glob("*.h264"), key=lambda p: int(p.stem))]
                          for r in range(len(self.sizes))]
        self.zeros = memoryview(bytes(max(max(row) for row in self.sizes)))

    def body(self, rung: int, segment: int) -> bytes | memoryview:
        if self.files is not None:
            row = self.files[rung]
            return row[segment % len(row)]
        return self.zeros[:self.sizes[rung][segment]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SegmentServer

    def setup(self) -> None:
        super().setup()
        self.server.conn = self.connection

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        parts = self.path.strip("/").split("/")
        try:
            rung, segment = int(parts[0]), int(parts[1])
            body = self.server.bodies.body(rung, segment)
        except (ValueError, IndexError):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "video/h264" if self.server.bodies.files is not None
                         else "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.server.served.append((segment, rung))
        try:
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        pass


class SegmentServer(ThreadingHTTPServer):
    """The HTTP server of one ABR flow; `flow`, `sock` and `final` as the TCP sampler of
    :mod:`aqmlab.emu.endpoints` reads them from its senders (`sock` is the accepted
    connection, so `TCP_INFO` is the connection's)."""

    daemon_threads = True

    def __init__(self, flow: dict[str, Any], address: tuple[str, int], setsockopt: Callable[[socket.socket], None]):
        self.flow = flow
        self.setsockopt_hook = setsockopt
        self.bodies = Bodies(json.loads(Path(flow["abr_config"]).read_text())["ladder"], flow.get("abr_files"))
        self.conn: socket.socket | None = None
        self.final: dict[str, int] | None = None
        self.served: list[tuple[int, int]] = []
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # Congestion control and MSS on the listener: accepted connections inherit them.
        self.setsockopt_hook(self.socket)
        super().server_bind()

    @property
    def sock(self) -> socket.socket | None:
        return self.conn


class AbrClientThread(threading.Thread):
    """One ABR client in the receiver namespace (see the module's documentation)."""

    def __init__(self, flow: dict[str, Any], receiver_ip: str, sender_ip: str, epoch: threading.Event,
                 epoch_ns: Callable[[], int], stopping: threading.Event, counts: dict[int, int]):
        super().__init__(name=f"abr{flow['flow']}", daemon=True)
        self.flow, self.receiver_ip, self.sender_ip = flow, receiver_ip, sender_ip
        self.epoch_set, self.epoch_ns, self.stopping, self.counts = epoch, epoch_ns, stopping, counts
        self.config_json = Path(flow["abr_config"]).read_text()
        self.client: Any = None
        #: (rung, segment, body) of each completed segment, kept for decoding (encoded ladder).
        self.bodies: list[tuple[int, int, bytes]] = []
        self.keep_bodies = flow.get("abr_files") is not None
        self.error: str | None = None

    def now(self) -> int:
        return time.monotonic_ns() - self.epoch_ns()

    def sleep_until(self, t_ns: int) -> bool:
        while not self.stopping.is_set():
            left = t_ns - self.now()
            if left <= 0:
                return True
            self.stopping.wait(min(left / 1e9, POLL_S))
        return False

    def run(self) -> None:
        from aqmlab import _core  # noqa: PLC0415 - the binding is loaded in the namespace's process

        while not self.epoch_set.wait(POLL_S):
            if self.stopping.is_set():
                return
        f = self.flow
        if not self.sleep_until(f["start_ns"]):
            return
        self.client = _core.AbrClient(self.config_json, f["start_ns"])
        sock = self.connect()
        if sock is None:
            return
        try:
            self.session(sock)
        except OSError as e:
            self.error = f"abr flow {f['flow']}: {e}"
        finally:
            sock.close()

    def connect(self) -> socket.socket | None:
        """The connection to the flow's server, from the flow's port; retried while the server
        is not yet listening (the sender process starts after the epoch is fixed)."""
        f = self.flow
        while not self.stopping.is_set() and self.now() < f["stop_ns"]:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.receiver_ip, f["port"]))
            sock.settimeout(1.0)
            try:
                sock.connect((self.sender_ip, f["sport"]))
                sock.settimeout(POLL_S)
                return sock
            except OSError:
                sock.close()
                self.stopping.wait(0.05)
        return None

    def session(self, sock: socket.socket) -> None:
        stop = self.flow["stop_ns"]
        buf = bytearray(CHUNK)
        pending = b""
        while not self.stopping.is_set() and self.now() < stop:
            step = self.client.next(self.now())
            if step[0] == "done":
                return
            if step[0] == "wait":
                self.sleep_until(min(self.now() + step[1], stop))
                continue
            _, segment, rung, size = step
            request = (f"GET {segment_path(rung, segment)} HTTP/1.1\r\nHost: {self.sender_ip}\r\n\r\n").encode()
            sock.sendall(request)
            body, pending = self.response(sock, buf, pending, stop)
            if body is None:
                return  # the session ended before the response did
            if len(body) != size:
                raise OSError(f"segment {segment} rung {rung}: {len(body)} bytes, the ladder says {size}")
            self.client.complete(self.now(), 1)
            if self.keep_bodies:
                self.bodies.append((rung, segment, bytes(body)))

    def recv(self, sock: socket.socket, buf: bytearray, stop: int) -> bytes | None:
        while not self.stopping.is_set() and self.now() < stop:
            try:
                n = sock.recv_into(buf)
            except TimeoutError:
                continue
            if n == 0:
                raise OSError("the server closed the connection")
            self.counts[self.flow["flow"]] += n
            return bytes(buf[:n])
        return None

    def response(self, sock: socket.socket, buf: bytearray, data: bytes,
                 stop: int) -> tuple[bytearray | None, bytes]:
        """One response's body (None if the session ends first) and the bytes read past it."""
        while b"\r\n\r\n" not in data:
            got = self.recv(sock, buf, stop)
            if got is None:
                return None, b""
            data += got
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        if not lines[0].startswith("HTTP/1.1 200"):
            raise OSError(f"server answered {lines[0]!r}")
        length = next(int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length")
        body = bytearray(rest)
        while len(body) < length:
            got = self.recv(sock, buf, stop)
            if got is None:
                return None, b""
            body += got
        return body[:length], bytes(body[length:])

    def tables(self, ladder_json: str | None = None) -> dict[str, dict[str, np.ndarray]]:
        """The client's `abr_segments` and `abr_sessions` columns (as numpy arrays) at the end
        of its session (a client that never connected has no segments, as in the simulator
        every client has its session row)."""
        from aqmlab import _core  # noqa: PLC0415

        if self.client is None:
            self.client = _core.AbrClient(self.config_json, self.flow["start_ns"])
        out = {}
        for name, cols in self.client.tables(self.flow["flow"], self.flow["stop_ns"], ladder_json).items():
            out[name] = {c: np.frombuffer(b, dtype=np.dtype(f"<{d}")) for c, d, b in cols}
        return out
