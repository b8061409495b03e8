"""The emulator under fault: a killed router, sender or receiver, a storm of malformed and
truncated frames, a short 10x overload. Each must end cleanly (one error line, namespaces and
processes gone) without touching a finished result; the 60 s overload is
`benches/bench_emulator.py --overload 60`.

Root and `ip netns` are needed (as for tests/test_emulator.py); elsewhere these skip."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aqmlab.emu import netns
from conftest import aqmlab, small_scenario
from processes import descendants

MISSING = netns.missing_requirement()
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _find(pid: int, role: str) -> int | None:
    """The descendant of `pid` running the emulator's `role` (router, sender, receiver)."""
    marker = b"aqmlab.emu.router" if role == "router" else f"aqmlab.emu.endpoints\0{role}".encode()
    for d in descendants(pid):
        try:
            if marker in Path(f"/proc/{d}/cmdline").read_bytes():
                return d
        except OSError:
            continue
    return None


def _ours(pid: int) -> tuple[list[str], list[str]]:
    """Namespaces and links of the emulations started by process `pid`."""
    namespaces, links = netns.leftovers()
    prefix = f"{netns.PREFIX}{pid:x}"
    return [n for n in namespaces if n.startswith(prefix)], [link for link in links if link.startswith(prefix)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> tuple[Path, Path, str]:
    """A finished result (a short simulation) at the place the faulty runs will write to with
    --force, and the scenario they run: 6 s of 2 TCP flows and a CBR stream."""
    folder = tmp_path_factory.mktemp("faults")
    s = small_scenario(duration="6s", metrics={"periods": [["0s", "6s"]]})
    s["flows"] = [{"name": "tcp", "count": 2, "sender_delay": "0ms", "receiver_delay": "0ms",
                   "app": {"kind": "bulk", "tcp": {"sack": True}}},
                  {"name": "cbr", "count": 1, "sender_delay": "0ms", "receiver_delay": "0ms",
                   "app": {"kind": "cbr", "rate": "1Mbps", "packet_size": "1000B"}}]
    import tomli_w

    scenario = folder / "scenario.toml"
    scenario.write_text(tomli_w.dumps(s))
    out = folder / "results"
    r = aqmlab("run", str(scenario), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    return scenario, out, _tree_digest(out)


@pytest.mark.parametrize("role", ["router", "sender", "receiver"])
def test_a_killed_process_ends_the_run_cleanly_and_keeps_the_finished_result(finished, role):
    scenario, out, digest = finished
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "emulate", str(scenario), "--out", str(out), "--force"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, deadline = None, time.monotonic() + 60
    # The sender starts last (after the router, the receiver and the base-RTT probe): once it
    # runs, traffic flows; give it a second of traffic before the kill.
    while time.monotonic() < deadline and proc.poll() is None:
        if _find(proc.pid, "sender") is not None:
            time.sleep(1.0)
            victim = _find(proc.pid, role)
            break
        time.sleep(0.05)
    assert victim is not None, f"no {role} found: {proc.communicate()[1][-2000:]}"
    os.kill(victim, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert proc.returncode == 1, stderr
    assert len(lines) == 1 and role in lines[0] and "Traceback" not in stderr, stderr
    assert _ours(proc.pid) == ([], []), "namespaces or links left behind"
    assert not descendants(proc.pid)
    assert _tree_digest(out) == digest, "the finished result changed"
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")]


def _frames() -> list[bytes]:
    """Malformed and truncated frames: every truncation of valid IPv4/UDP, IPv4/TCP,
    VLAN-tagged and IPv6 frames, and 300 copies with random bytes flipped in their headers."""
    eth = bytes(6) + bytes.fromhex("020000000001")
    src, dst = bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2])
    udp = struct.pack("!HHHH", 4000, 5001, 8 + 32, 0) + bytes(32)
    ip_udp = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0) + src + dst + udp
    tcp = struct.pack("!HHIIBBHHH", 4000, 5001, 1, 0, 0x50, 0x18, 1000, 0, 0) + bytes(20)
    ip_tcp = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0) + src + dst + tcp
    ip6 = struct.pack("!IHBB", 0x60000000, len(udp), 17, 64) + bytes(15) + b"\x01" + bytes(15) + b"\x02" + udp
    valid = [eth + b"\x08\x00" + ip_udp, eth + b"\x08\x00" + ip_tcp,
             eth + b"\x81\x00\x00\x05\x08\x00" + ip_udp, eth + b"\x86\xdd" + ip6]
    frames = [v[:n] for v in valid for n in range(14, len(v))]
    rng = random.Random(16)
    for _ in range(300):
        f = bytearray(rng.choice(valid))
        for _ in range(rng.randint(1, 4)):
            f[rng.randrange(12, min(len(f), 60))] = rng.randrange(256)
        frames.append(bytes(f))
    return frames


def test_the_router_survives_a_storm_of_malformed_frames_and_keeps_its_books():
    from aqmlab.emu.run import standalone_router

    fifo = {"kind": "droptail", "limit": {"packets": 100}}
    link = {"rate_bps": 0, "delay_ns": 0, "qdisc": fifo}
    frames = _frames()
    good = bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + bytes.fromhex(
        "4500001c0000000040110000") + bytes([10, 77, 0, 1, 10, 77, 0, 2]) + bytes(4) + b"\x00\x08" + bytes(2)
    sender = ("import socket, sys, ast\n"
              "s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n"
              "s.bind((sys.argv[1], 0))\n"
              "sent = 0\n"
              "for f in ast.literal_eval(sys.stdin.read()):\n"
              "    try:\n"
              "        s.send(f); sent += 1\n"
              "    except OSError:\n"
              "        pass\n"
              "print(sent)\n")
    with standalone_router(link, link) as (tb, router, work, _):
        r = subprocess.run([*tb.exec_prefix(tb.sender_ns), sys.executable, "-c", sender, tb.sender_if],
                           input=repr(frames + [good] * 20), capture_output=True, text=True, check=True)
        sent = int(r.stdout)
        time.sleep(0.5)
        assert router.proc.poll() is None, "the router must survive malformed frames"
        router.finish()
        summary = json.loads((work / "router.json").read_text())
    counters, forward = summary["router"], summary["forward"]
    assert sent >= len(frames)  # the kernel sends frames down to the Ethernet header
    # The kernel may drop a few of a burst on the way (socket buffers); the router saw the rest.
    assert counters["rx_frames"][0] >= 0.9 * sent, (counters["rx_frames"], sent)
    assert sum(counters["malformed"].values()) >= len(frames) // 3, counters["malformed"]
    assert forward["invariants"] is None
    # Whatever reached the discipline left it: nothing is stuck, and the good tail got through.
    stats = forward["stats"]
    assert stats["received_packets"] >= 20
    assert stats["dequeued_packets"] + sum(stats["dropped_packets"]) == stats["received_packets"]
    assert counters["tx_frames"][1] >= 20


def test_a_short_10x_overload_holds_memory_and_keeps_the_line_busy():
    """3 s of 100 Mbit/s into a 10 Mbit/s FIFO of 100 packets (the 60 s run is the benchmark):
    the router holds at most the buffer and the frame in transmission, stays alive, and
    sends at the line rate throughout (no stall)."""
    from aqmlab.emu.run import standalone_router

    fifo = {"kind": "droptail", "limit": {"packets": 100}}
    blaster = ("import socket, sys, time\n"
               "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
               "end = time.monotonic() + float(sys.argv[2]); gap = 1472 * 8 / 100e6; t = time.monotonic()\n"
               "while t < end:\n"
               "    try: s.sendto(bytes(1472), (sys.argv[1], 9))\n"
               "    except OSError: pass\n"
               "    t += gap\n"
               "    while time.monotonic() < t: pass\n")
    with standalone_router({"rate_bps": 10_000_000, "delay_ns": 0, "qdisc": fifo},
                           {"rate_bps": 0, "delay_ns": 0, "qdisc": fifo}, events=True) as (tb, router, work, _):
        subprocess.run([*tb.exec_prefix(tb.sender_ns), sys.executable, "-c", blaster, netns.RECEIVER_IP, "3"],
                       check=True, timeout=60)
        assert router.proc.poll() is None
        router.finish()
        summary = json.loads((work / "router.json").read_text())
        import numpy as np

        arrays = dict(np.load(work / "router.npz"))
    fwd = summary["forward"]
    assert fwd["link"]["peak_stored_frames"] <= 101
    stats = fwd["stats"]
    assert stats["received_packets"] > 3 * stats["dequeued_packets"], stats  # really overloaded
    ev, t, size = arrays["packets/event"], arrays["packets/t_ns"], arrays["packets/size"]
    sent_t, sent_size = t[ev == 3], size[ev == 3]
    # Per 0.5 s window of the busy middle, the line stays at 10 Mbit/s.
    start, end = sent_t[0] + 0.5e9, sent_t[0] + 2.5e9
    for lo in np.arange(start, end, 0.5e9):
        sel = (sent_t >= lo) & (sent_t < lo + 0.5e9)
        rate = sent_size[sel].sum() * 8 / 0.5
        assert abs(rate - 10e6) < 0.05 * 10e6, f"window at {(lo - sent_t[0]) / 1e9:.1f} s: {rate / 1e6:.2f} Mbit/s"
