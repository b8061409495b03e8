#!/usr/bin/env python3
"""Fidelity of aqmlab's CoDel, FQ-CoDel and PIE against ns-3's implementations of the same RFCs
(ns-3 3.44 traffic-control: CoDelQueueDisc, FqCoDelQueueDisc, PieQueueDisc) on a TCP-only
dumbbell: the Rb-RIO paper's 60-flow, 25 Mbit/s dumbbell (benches/bench_tcp_dumbbell.py keeps
the two models the same: topology, per-flow start times and access delays, TCP with SACK,
1-packet device queues in ns-3) with the bottleneck discipline replaced, every parameter at
aqmlab's default and passed to ns-3 explicitly (ns-3's own defaults differ: PIE's buffer is
25 packets there, its MeanPktSize 1000 B).

Printed per discipline, for the measurement period: queueing delay p50/p99 (aqmlab: sojourn of
every departure from its packet records; ns-3: the root queue disc's SojournTime trace, logged
in C++), bottleneck utilization and drop rate, with the relative differences.

    python3 benches/bench_aqm_fidelity.py                      # codel, fq_codel, pie; 20 s
    python3 benches/bench_aqm_fidelity.py --kinds codel --duration 10s
"""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.table import Table

from aqmlab.run import simulate
from aqmlab.scenario import load
from bench_tcp_dumbbell import ns3_python, ns3_spec, rel, run_ns3

console = Console()
KINDS = ("codel", "fq_codel", "pie")


def scenario_for(kind: str, duration: str, start: str):
    overrides = ["flows.long.app.tcp.sack=true", "flows.joining.app.tcp.sack=true",
                 f"duration={duration}", f'metrics.periods=[["{start}", "{duration}"]]',
                 f'topology.bottleneck.qdisc={{kind="{kind}"}}']
    sc, _ = load("rb-rio/tcp-droptail", overrides)
    return sc


def ns3_qdisc(q) -> dict:
    """aqmlab's discipline as ns3_dumbbell.py's spec (times in seconds, sizes in bytes)."""
    d = {"kind": q.kind, "limit_packets": q.limit["packets"], "target_s": q.target / 1e9, "mtu": q.mtu,
         "ecn": q.ecn}
    if q.kind in ("codel", "fq_codel"):
        d["interval_s"] = q.interval / 1e9
    if q.kind == "fq_codel":
        d.update(flows=q.flows, quantum=q.quantum, drop_batch=q.drop_batch)
    if q.kind == "pie":
        d.update(t_update_s=q.t_update / 1e9, alpha=q.alpha, beta=q.beta, max_burst_s=q.max_burst / 1e9,
                 mark_ecn_threshold=q.mark_ecn_threshold, derandomize=q.derandomize,
                 estimator=q.estimator, dq_threshold=q.dq_threshold)
    return d


METRICS = (("qdelay p50 (ms)", "qdelay_p50_ms", ".2f"), ("qdelay p99 (ms)", "qdelay_p99_ms", ".2f"),
           ("utilization (Mbit/s)", "utilization_mbps", ".3f"), ("drop rate (%)", "drop_rate_pct", ".2f"))


def compare(kind: str, duration: str, start: str, python: str) -> list[tuple[str, float, float]]:
    sc = scenario_for(kind, duration, start)
    ours = simulate(sc, progress=False)
    spec = ns3_spec(sc, ours.tables["flows"])
    spec["qdisc"] = ns3_qdisc(sc.topology.bottleneck.qdisc)
    spec["record_sojourn"] = True
    theirs = run_ns3(python, spec)
    a = ours.periods.iloc[0].to_dict()
    b = {**theirs["periods"][0], **theirs["sojourn"][0]}
    assert theirs["other_queue_drops"] == 0, theirs["other_queue_drops"]
    return [(label, float(a[key]), float(b[key]), fmt) for label, key, fmt in METRICS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--duration", default="20s", help="simulated time (default 20s)")
    ap.add_argument("--start", default="5s", help="start of the measurement period (default 5s)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    python = ns3_python()
    t = Table(title=f"60 TCP flows, 25 Mbit/s, period {args.start}-{args.duration}: aqmlab vs ns-3 3.44",
              header_style="bold")
    for c in ("discipline", "metric", "aqmlab", "ns-3", "diff"):
        t.add_column(c, justify="right")
    dump = {}
    for kind in args.kinds:
        rows = compare(kind, args.duration, args.start, python)
        dump[kind] = {label: {"aqmlab": a, "ns3": b} for label, a, b, _ in rows}
        for i, (label, a, b, fmt) in enumerate(rows):
            t.add_row(kind if i == 0 else "", label, format(a, fmt), format(b, fmt), rel(a, b),
                      end_section=i == len(rows) - 1)
    console.print(t)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dump, f, indent=2)


if __name__ == "__main__":
    main()
