"""Emulator benchmark: forwarding throughput, rate accuracy, added latency, overload memory.

    sudo python3 benches/bench_emulator.py                  # about 1.5 minutes
    sudo python3 benches/bench_emulator.py --overload 60    # also 10x overload for 60 s
    sudo python3 benches/bench_emulator.py --overload-only --overload 60   # only that

Prints:
1. unshaped forwarding throughput through FIFO, DRR and SQF: iperf3 UDP with 1500-byte IP
   packets at full speed through an unshaped, zero-delay router (Gbit/s at the IP layer leaving
   the discipline, from the router's dequeue records, middle of the run);
2. rate error of the pacer at 10, 25 and 100 Mbit/s: iperf3 UDP at 1.5x the rate into a
   FIFO; the IP-layer rate of the dequeue records over the middle of the run against the set rate;
3. added one-way latency at low load (1 Mbit/s of 1000-byte UDP, unshaped, zero delay): the
   time between a frame passing the router's ingress interface and its egress interface,
   from kernel timestamps of tcpdump on both (nanosecond precision), p50 and p99, with the
   router sleeping between packets (the default) and busy polling;
4. with --overload S: a 10 Mbit/s FIFO fed 100 Mbit/s for S seconds; the router's resident
   memory and the bits it sent per window (a stall would show as a window near 0), sampled
   over time, its peak frames held, and that it stays alive;
5. a bottleneck that follows a delivery trace (mahimahi's format: one 1500-byte opportunity per
   line), constant capacity of 1, 10, 100, 720 (mahimahi's own failure case: a 720 Mbit/s trace
   delivered about 300) and 1000 Mbit/s, fed iperf3 UDP at 1.2x into a 1000-packet FIFO: per
   100 ms window in the middle of the run, the IP-layer bits the link delivered (dequeue
   records: the schedule) and the frames that left the router's egress interface (tcpdump's
   kernel stamps: what was delivered) against the trace's opportunities in that window, as the
   worst and median error and the share of windows within 2 % or one packet, over the windows
   whose queue never ran empty (the others, where the source fell short, are counted apart);
   the arrivals' rate is the offered load.

Needs root, iproute2, ethtool, iperf3 and tcpdump. Figures are wall-clock on whatever machine
runs it; benches/README.md records one run.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab.emu import netns
from aqmlab.emu.run import standalone_router
from aqmlab.scenario.link_traces import ConstantTrace
from aqmlab.traces import synthetic_opportunities

FIFO = {"kind": "droptail", "limit": {"packets": 1000}}
DRR = {"kind": "drr", "limit": {"packets": 1000}, "quantum": 1500,
       "flow_key": {"fields": ["src", "dst", "sport", "dport", "proto"]}}
SQF = {"kind": "sqf", "limit": {"packets": 1000}, "flow_key": {"fields": ["src", "dst", "sport", "dport", "proto"]}}


def router(qdisc: dict[str, Any], rate_bps: int, delay_ns: int = 0, events: bool = True, busy_poll: bool = False):
    return standalone_router({"rate_bps": rate_bps, "delay_ns": delay_ns, "qdisc": qdisc},
                             {"rate_bps": 0, "delay_ns": delay_ns, "qdisc": FIFO}, events, busy_poll)


def stop_router(r: Any, work: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    r.finish()
    return dict(np.load(work / "router.npz")), json.loads((work / "router.json").read_text())


def iperf_udp(tb: netns.Testbed, rate: str, seconds: float, length: int = 1472) -> None:
    """iperf3 UDP from the sender to the receiver namespace (length: UDP payload bytes)."""
    server = subprocess.Popen([*tb.exec_prefix(tb.receiver_ns), "iperf3", "-s", "-1", "-B", netns.RECEIVER_IP],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        subprocess.run([*tb.exec_prefix(tb.sender_ns), "iperf3", "-c", netns.RECEIVER_IP, "-u", "-b", rate,
                        "-l", str(length), "-t", str(seconds)], check=True, capture_output=True, timeout=seconds + 30)
    finally:
        server.wait(timeout=10)


def dequeue_rate_bps(arrays: dict[str, np.ndarray], trim: float = 0.2) -> float:
    """IP-layer rate of the dequeues over the middle of the busy span (`trim` cut each side)."""
    ev = arrays["packets/event"]
    t = arrays["packets/t_ns"][ev == 3]
    size = arrays["packets/size"][ev == 3]
    if len(t) < 10:
        return 0.0
    lo, hi = t[0] + (t[-1] - t[0]) * trim, t[-1] - (t[-1] - t[0]) * trim
    sel = (t >= lo) & (t < hi)
    return float(size[sel].sum()) * 8 / ((hi - lo) / 1e9)


def throughput(seconds: float) -> None:
    print("\n1. unshaped forwarding throughput, 1500-byte IP packets (iperf3 UDP at full speed)")
    print(f"   {'discipline':<10} {'Gbit/s':>8} {'kpps':>8} {'tx errors':>10}")
    for name, q in (("FIFO", FIFO), ("DRR", DRR), ("SQF", SQF)):
        with router(q, 0) as (tb, r, work, _):
            iperf_udp(tb, "0", seconds)
            arrays, summary = stop_router(r, work)
        bps = dequeue_rate_bps(arrays)
        print(f"   {name:<10} {bps / 1e9:8.3f} {bps / 1500 / 8 / 1e3:8.1f} {summary['router']['tx_errors'][1]:10d}")


def rate_error(seconds: float) -> None:
    print("\n2. pacer rate error, iperf3 UDP at 1.5x the rate into a 1000-packet FIFO")
    print(f"   {'set':>10} {'measured':>12} {'error':>8}")
    for mbps in (10, 25, 100):
        with router(FIFO, mbps * 1_000_000) as (tb, r, work, _):
            iperf_udp(tb, f"{int(mbps * 1.5)}M", seconds)
            arrays, _ = stop_router(r, work)
        bps = dequeue_rate_bps(arrays)
        print(f"   {mbps:>6} Mb/s {bps / 1e6:>9.3f} Mb/s {100 * (bps - mbps * 1e6) / (mbps * 1e6):>+7.3f} %")


def read_pcap(path: Path) -> dict[int, int]:
    """IPv4 UDP packets of a nanosecond pcap (LINKTYPE_ETHERNET): iperf3's payload starts
    with its sequence fields; key = (IP id << 32 | UDP checksum) identifies a packet on both
    interfaces (the router does not change either), value = timestamp in ns."""
    data = path.read_bytes()
    out, at = {}, 24
    while at + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from("<IIII", data, at)
        frame = data[at + 16: at + 16 + incl]
        at += 16 + incl
        if len(frame) >= 42 and frame[12:14] == b"\x08\x00" and frame[23] == 17:
            ip_id = struct.unpack_from("!H", frame, 18)[0]
            check = struct.unpack_from("!H", frame, 40)[0]
            out[ip_id << 32 | check] = sec * 1_000_000_000 + frac
    return out


def latency(seconds: float, busy_poll: bool) -> None:
    mode = "busy polling (a core spent)" if busy_poll else "sleeping in ppoll (the default)"
    print(f"\n3. added one-way latency at low load (1 Mbit/s, 1000-byte UDP, unshaped, no delay), {mode}")
    with router(FIFO, 0, busy_poll=busy_poll) as (tb, r, work, _):
        caps = []
        for dev in (tb.router_sender_if, tb.router_receiver_if):
            pcap = work / f"{dev}.pcap"
            caps.append((pcap, subprocess.Popen(
                [*tb.exec_prefix(tb.router_ns), "tcpdump", "-i", dev,
                 "-Q", "in" if dev == tb.router_sender_if else "out",
                 "-j", "adapter_unsynced", "--time-stamp-precision=nano", "-s", "64", "-w", str(pcap), "udp"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        time.sleep(1.0)
        iperf_udp(tb, "1M", seconds, length=972)
        time.sleep(0.5)
        for _, p in caps:
            p.terminate()
            p.wait(timeout=10)
        stop_router(r, work)
        ingress, egress = read_pcap(caps[0][0]), read_pcap(caps[1][0])
    delays = np.array([egress[k] - t for k, t in ingress.items() if k in egress], dtype=float) / 1e3
    if not len(delays):
        print("   no packets matched (tcpdump timestamps unavailable?)")
        return
    print(f"   {len(delays)} packets: p50 {np.percentile(delays, 50):.1f} us, p99 {np.percentile(delays, 99):.1f} us, "
          f"max {delays.max():.1f} us")


def egress_bytes(tb: netns.Testbed) -> int:
    """Bytes the router has sent towards the receiver (its egress interface's counter)."""
    counter = f"/sys/class/net/{tb.router_receiver_if}/statistics/tx_bytes"
    out = subprocess.run([*tb.exec_prefix(tb.router_ns), "cat", counter], capture_output=True, text=True, check=True)
    return int(out.stdout)


def overload(seconds: float) -> None:
    print(f"\n4. 10x overload: 100 Mbit/s into a 10 Mbit/s FIFO for {seconds:g} s (no packet records)")
    with router(FIFO, 10_000_000, events=False) as (tb, r, work, _):
        sender = [*tb.exec_prefix(tb.sender_ns), 'iperf3', '-c', netns.RECEIVER_IP, '-u', '-b', '100M', '-l', '1472',
                  '-t', str(seconds)]
        client = subprocess.Popen([sys.executable, "-c", f"""
import subprocess, time
s = subprocess.Popen({[*tb.exec_prefix(tb.receiver_ns), 'iperf3', '-s', '-1', '-B', netns.RECEIVER_IP]!r},
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.5)
subprocess.run({sender!r},
               capture_output=True)
s.wait()
"""])
        samples = []
        start = time.monotonic()
        sent_before, t_before = egress_bytes(tb), start
        while client.poll() is None:
            time.sleep(min(5.0, seconds / 6))
            status = Path(f"/proc/{r.proc.pid}/status").read_text()
            rss = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS")))
            sent, now = egress_bytes(tb), time.monotonic()
            # What left the bottleneck in this window: a stalled router would show 0 here.
            samples.append((now - start, rss / 1024, (sent - sent_before) * 8 / (now - t_before) / 1e6))
            sent_before, t_before = sent, now
        alive = r.proc.poll() is None
        _, summary = stop_router(r, work)
    fwd = summary["forward"]
    print("   RSS over time (s, MiB): " + ", ".join(f"{t:.0f}: {m:.1f}" for t, m, _ in samples))
    print("   sent per window (s, Mbit/s on the wire): " + ", ".join(f"{t:.0f}: {b:.2f}" for t, _, b in samples))
    busy = samples[1:-1] or samples  # the first window holds iperf3's start, the last the drain
    print(f"   peak RSS {max(m for _, m, _ in samples):.1f} MiB; slowest busy window "
          f"{min(b for _, _, b in busy):.2f} Mbit/s (on the wire, Ethernet headers included)")
    print(f"   router alive at the end: {alive}; peak frames held {fwd['link']['peak_stored_frames']}; "
          f"dropped {fwd['stats']['dropped_packets'][0]:,} of {fwd['stats']['received_packets']:,}")


ARRIVE, ENQUEUE, DEQUEUE = 0, 1, 3
MTU_BYTES = 1500


def window_errors(arrays: dict[str, np.ndarray], opportunities_ms: list[int], egress_ns: np.ndarray | None = None,
                  window_ms: int = 100, trim: float = 0.2) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int]:
    """Per `window_ms` window in the middle of the busy span (`trim` cut each side) whose queue
    never ran empty: the relative error of the IP bytes dequeued against the trace's
    opportunities in the window (times in (start, end] ms since the epoch, the trace looping
    every `max(opportunities)` ms, `MTU_BYTES` each); the same for the frames that left the
    router's egress interface (`egress_ns`, kernel stamps, each `MTU_BYTES`), when given, and
    whether each of those is within 2 % or one packet (a window of a 1 Mbit/s trace holds 8 or 9
    opportunities: one packet moved across its edge by microseconds is 12 % of it); the
    arrivals' rate over the span, bit/s; and how many windows were left out because their queue
    ran empty."""
    ev, t = arrays["packets/event"], arrays["packets/t_ns"]
    size = arrays["packets/size"].astype(np.int64)
    sent_t, sent_size = t[ev == DEQUEUE], size[ev == DEQUEUE]
    if len(sent_t) < 10:
        return np.array([]), np.array([]), np.array([]), 0.0, 0
    lo_ms = int((sent_t[0] + (sent_t[-1] - sent_t[0]) * trim) / 1e6) // window_ms * window_ms + window_ms
    hi_ms = int((sent_t[-1] - (sent_t[-1] - sent_t[0]) * trim) / 1e6) // window_ms * window_ms
    loop = max(opportunities_ms)
    one_loop = np.asarray(opportunities_ms, dtype=np.int64)
    times = np.concatenate([one_loop + k * loop for k in range(hi_ms // loop + 2)])
    # The backlog left after each dequeue: a window whose queue never ran empty was saturated,
    # so what it missed of the trace the link missed, not the source.
    enq_t = np.sort(t[ev == ENQUEUE])
    backlog = np.searchsorted(enq_t, sent_t, side="right") - np.arange(1, len(sent_t) + 1)
    # What left the router's egress interface, timed by the kernel (tcpdump), put on the
    # router's clock: the n-th frame out is the n-th dequeue (one flow through a FIFO), and the
    # median of their differences is taken as the clocks' offset.
    out_t = None
    if egress_ns is not None and len(egress_ns):
        n = min(len(egress_ns), len(sent_t))
        out_t = egress_ns - np.median(egress_ns[:n] - sent_t[:n])
    errors, delivered, within, unsaturated = [], [], [], 0
    for start in range(lo_ms, hi_ms, window_ms):
        end = start + window_ms
        sel = (sent_t > start * 1e6) & (sent_t <= end * 1e6)
        if not sel.any() or backlog[sel].min() <= 0:
            unsaturated += 1
            continue
        want = np.count_nonzero((times > start) & (times <= end)) * MTU_BYTES
        errors.append((int(sent_size[sel].sum()) - want) / want)
        if out_t is not None:
            got = np.count_nonzero((out_t > start * 1e6) & (out_t <= end * 1e6)) * MTU_BYTES
            delivered.append((got - want) / want)
            within.append(abs(got - want) <= max(0.02 * want, MTU_BYTES))
    arrive_t, arrive_size = t[ev == ARRIVE], size[ev == ARRIVE]
    sel = (arrive_t > lo_ms * 1e6) & (arrive_t <= hi_ms * 1e6)
    offered = float(arrive_size[sel].sum()) * 8 / ((hi_ms - lo_ms) / 1e3)
    return np.array(errors), np.array(delivered), np.array(within), offered, unsaturated


def trace_following(seconds: float) -> None:
    print("\n5. a constant-capacity delivery trace at saturation (1500-byte opportunities; iperf3 UDP at "
          "1.2x into a 1000-packet FIFO), per 100 ms window")
    print("   schedule: the link's dequeues; delivered: frames out of the router's egress interface (tcpdump)")
    print(f"   {'trace':>10} {'offered':>10} {'windows':>8} {'schedule worst':>15} {'delivered median':>17} "
          f"{'delivered worst':>16} {'within 2 % or 1 packet':>23} {'max late':>9} {'not saturated':>14}")
    for mbps in (1, 10, 100, 720, 1000):
        trace = ConstantTrace(kind="constant", rate=f"{mbps}Mbps")
        opportunities = synthetic_opportunities(trace, 1, "bottleneck", "trace")
        link = {"rate_bps": 0, "delay_ns": 0, "qdisc": FIFO, "trace": {"opportunities_ms": opportunities}}
        with standalone_router(link, {"rate_bps": 0, "delay_ns": 0, "qdisc": FIFO}) as (tb, r, work, _):
            pcap = work / "egress.pcap"
            cap = subprocess.Popen(
                [*tb.exec_prefix(tb.router_ns), "tcpdump", "-i", tb.router_receiver_if, "-Q", "out", "-B", "65536",
                 "-j", "adapter_unsynced", "--time-stamp-precision=nano", "-s", "64", "-w", str(pcap), "udp"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            iperf_udp(tb, f"{int(mbps * 1.2)}M", seconds)
            time.sleep(0.5)
            cap.terminate()
            cap.wait(timeout=10)
            arrays, summary = stop_router(r, work)
            egress = np.sort(np.array(list(read_pcap(pcap).values()), dtype=np.float64))
        errors, delivered, within, offered, unsaturated = window_errors(arrays, opportunities, egress)
        late_ms = summary["forward"]["link"]["max_lateness_ns"] / 1e6 if "forward" in summary else float("nan")
        if len(errors) == 0:
            print(f"   {mbps:>5} Mb/s   too few packets delivered to measure")
            continue
        d = delivered if len(delivered) else np.full(len(errors), np.nan)
        print(f"   {mbps:>5} Mb/s {offered / 1e6:>7.1f} Mb/s {len(errors):>8d} "
              f"{100 * errors[np.argmax(np.abs(errors))]:>+14.2f} % {100 * np.median(d):>+16.2f} % "
              f"{100 * d[np.argmax(np.abs(d))]:>+15.2f} % {100 * np.mean(within):>22.0f} % "
              f"{late_ms:>6.1f} ms {unsaturated:>14d}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each measurement")
    ap.add_argument("--overload", type=float, default=0.0, help="also run the 10x overload test this long")
    ap.add_argument("--overload-only", action="store_true", help="run only the overload test")
    ap.add_argument("--trace-only", action="store_true", help="run only the trace-following test (5)")
    args = ap.parse_args()
    missing = netns.missing_requirement()
    if missing:
        print(f"error: {missing}", file=sys.stderr)
        return 1
    if args.overload_only:
        overload(args.overload or 60.0)
        return 0
    if args.trace_only:
        trace_following(args.seconds)
        return 0
    throughput(args.seconds)
    rate_error(args.seconds)
    latency(args.seconds, busy_poll=False)
    latency(args.seconds, busy_poll=True)
    trace_following(args.seconds)
    if args.overload:
        overload(args.overload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
