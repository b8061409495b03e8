"""Waiting until the kernel stamps packets as they arrive.

The endpoints time UDP packets and replies by the kernel's receive stamp (SO_TIMESTAMPNS), not
by when a thread reads them. Linux takes that stamp on arrival only once some socket on the
host has asked for stamps, and it turns the host-wide switch on after the first request, from
a work queue (``net_enable_timestamp`` in net/core/dev.c defers the static key). A packet that
arrives before the work has run carries no stamp, and ``recvmsg`` stamps it when it is read: a
packet read 300 ms late then reads as 300 ms late. Measured on the 2-core test host: a fresh
process that asked for stamps and sent at once to itself had its packet stamped at read time
in 8 of 100 runs; waiting 10 ms first, in none of 100.

:func:`keep_arrival_stamps_on` closes that window: it opens a stamping socket that the process
keeps (so the switch stays on however the endpoints' own sockets come and go) and sends it
loopback datagrams until one comes back stamped before it was read.
"""

from __future__ import annotations

import select
import socket
import struct
import sys
import time

#: Linux SO_TIMESTAMPNS (asm-generic/socket.h; also the control message type): Python's socket
#: module does not export it.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
#: How long to wait for the switch; the work queue ran within 10 ms in every measured case.
WAIT_S = 2.0


def realtime_stamp_ns(anc: list[tuple[int, int, bytes]]) -> int | None:
    """The SO_TIMESTAMPNS stamp (CLOCK_REALTIME ns) among a message's ancillary data, if any."""
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec * 1_000_000_000 + nsec
    return None


def stamped_on_arrival(rx: socket.socket, tx: socket.socket) -> bool:
    """Sends one datagram from `tx` to `rx` (a stamping socket) and tells whether the kernel
    stamped it on arrival: its stamp is earlier than the moment just before it was read (a
    stamp taken by the read itself comes after that moment)."""
    tx.sendto(b"stamp?", rx.getsockname())
    if not select.select([rx], [], [], 1.0)[0]:
        return False
    before_read = time.time_ns()  # the stamps are on CLOCK_REALTIME
    _, anc, _, _ = rx.recvmsg(64, 1024)
    stamp = realtime_stamp_ns(anc)
    return stamp is not None and stamp < before_read


#: This process's verdict: the stamping socket it keeps open once stamps were seen on arrival,
#: or None once it waited in vain (not asked again: each wait costs `WAIT_S`).
_verdict: list[socket.socket | None] = []


def keep_arrival_stamps_on(timeout_s: float = WAIT_S) -> bool:
    """Returns True once the kernel stamps packets on arrival and this process holds a stamping
    socket that keeps it so, False if stamps still came at read time after `timeout_s` (said
    once on stderr: a receiver then has only the read time). Later calls return the first
    call's answer at once."""
    if not _verdict:
        _verdict.append(_open_when_stamping(timeout_s))
        if _verdict[0] is None:
            print(f"aqmlab endpoint: the kernel did not stamp packets on arrival within {timeout_s:g} s; "
                  "receive times are the times they were read", file=sys.stderr, flush=True)
    return _verdict[0] is not None


def _open_when_stamping(timeout_s: float) -> socket.socket | None:
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        deadline = time.monotonic() + timeout_s
        while not stamped_on_arrival(rx, tx):
            if time.monotonic() >= deadline:
                rx.close()
                return None
            time.sleep(0.001)
    return rx
