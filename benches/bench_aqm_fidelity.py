#!/usr/bin/env python3
"""Fidelity of aqmlab's CoDel, FQ-CoDel, PIE, COBALT, FQ-PIE and CAKE's flow-queue COBALT against
ns-3's implementations (ns-3 3.44 traffic-control: CoDelQueueDisc, FqCoDelQueueDisc,
PieQueueDisc, CobaltQueueDisc, FqPieQueueDisc, FqCobaltQueueDisc) on a TCP-only dumbbell: the
Rb-RIO paper's 60-flow, 25 Mbit/s dumbbell (benches/bench_tcp_dumbbell.py keeps the two models
the same: topology, per-flow start times and access delays, TCP with SACK, 1-packet device
queues in ns-3) with the bottleneck discipline replaced, every parameter at aqmlab's default
and passed to ns-3 explicitly (ns-3's own defaults differ: PIE's buffer is 25 packets there, its
MeanPktSize 1000 B; FQ-PIE and FQ-COBALT mark ECN by default).

CAKE ("cake") is compared with ns-3's FqCobaltQueueDisc, which is CAKE's flow-queue COBALT
alone (aqmlab has no standalone FQ-COBALT). aqmlab's CAKE is configured to be that algorithm:

* diffserv = "besteffort": one tin, so no DSCP classes or tin thresholds (FqCobalt has none).
* flowmode = "flows": per-flow isolation only; host fairness (triple-isolate, the default)
  divides quanta by per-host flow counts, which FqCobalt does not do.
* bandwidth unlimited: no shaper (FqCobalt has none; ns-3's link paces instead). In unlimited
  mode Linux's `cake_set_rate` leaves COBALT's target and interval as given (its 1.5- and
  4-MTU-time floors are zero) and the flow quantum at 1514 B, which is passed as FqCobalt's
  quantum; overhead, mpu and atm only feed the shaper and do not matter.
* ack_filter off, ingress off, wash off (nothing FqCobalt has).
* target and interval: CAKE's per-tin values (rtt / 20 = 5 ms and rtt = 100 ms by default)
  passed as FqCobalt's Target and Interval; BLUE's steps 1/256 and 1/4096 as Increment and
  Decrement (Linux `cake_set_rate`, fixed in CAKE).
* BlueThreshold = Time::Max: Linux CAKE raises BLUE only on overflow (ns-3's 400 ms extra
  trigger is its own addition).
* UseEcn = true: CAKE marks ECN-capable packets always (the dumbbell's TCP does not negotiate
  ECN, so no packet is ECN-capable either way).
* Flows = 1024 with ns-3's set-associative hash, SetWays = 8 (CAKE_QUEUES, CAKE_SET_WAYS).
  ns-3's set search differs from Linux's (it takes the first free or inactive way of the set
  from its start; Linux tries the hashed way first and prefers a way already tagged with the
  flow), and the hash functions differ (ns-3's of the 5-tuple with perturbation 0, aqmlab's
  SplitMix64 with fixed salts), so which flows share a queue differs anyway.
* MaxSize = memlimit / packet size in packets (ns-3's FqCobalt counts packets, CAKE bytes; all
  bottleneck packets of this dumbbell are 1000-byte data segments), DropBatchSize = 1 (CAKE's
  `cake_drop` takes one packet from the fattest queue at a time). With 60 flows of at most 20
  segments in flight neither buffer can fill, so neither setting acts here.

What stays different, and is not a parameter on either side: CAKE's DRR++ has a third,
"decaying" list and counts sparse and bulk flows (ns-3 uses FQ-CoDel's two lists); CAKE never
drops a queue's last packet (ns-3's COBALT child drops until it finds one to send); Linux and
aqmlab CAKE dither each DRR refill by a random fraction of a byte.

FQ-PIE: ns-3's FqPieQueueDisc with aqmlab's fq_pie parameters (ECN off, as Linux; no
set-associative hash, as Linux's fq_pie; DropBatchSize = 1, though Linux's and aqmlab's fq_pie
drop the arrival on overflow rather than from the fattest queue: the buffer never fills here).
PIE's no-drop floor differs and is not an ns-3 attribute: ns-3's packet-limited PIE children skip
the early drop while a queue holds at most 2 packets, Linux's fq_pie (backlog < 2 MTU) and aqmlab
(backlog <= 2 mtu) while it holds up to 3 of this dumbbell's 1000-byte packets. With
--set 'topology.bottleneck.qdisc.mtu="1000B"' aqmlab's floor is ns-3's (benches/README.md, issue
24: most of the median-delay gap).
COBALT: ns-3's CobaltQueueDisc with aqmlab's cobalt parameters (its defaults are ns-3's).

Printed per discipline, for the measurement period: queueing delay p50/p99 (aqmlab: sojourn of
every departure from its packet records; ns-3: the root queue disc's SojournTime trace, logged
in C++), bottleneck utilization and drop rate, with the relative differences. With several
seeds (each seed draws the per-flow start times and access delays in aqmlab, which ns-3 then
uses, and is ns-3's RngRun) the figures are means over the seeds, and the per-seed differences
are printed too.

    python3 benches/bench_aqm_fidelity.py                      # codel, fq_codel, pie; 20 s
    python3 benches/bench_aqm_fidelity.py --kinds cobalt fq_pie cake --seeds 1 2 3
    python3 benches/bench_aqm_fidelity.py --kinds codel --duration 10s
    python3 benches/bench_aqm_fidelity.py --kinds cake --seeds 1 2 3 --ns3-set set_ways=0   # one change, ns-3 side
    python3 benches/bench_aqm_fidelity.py --kinds fq_pie --set topology.bottleneck.qdisc.flows=1   # both sides
"""

from __future__ import annotations

import argparse
import json

from aqmlab.display import Cells, TablePrinter
from aqmlab.run import simulate
from aqmlab.scenario import load
from bench_tcp_dumbbell import ns3_python, ns3_spec, rel, run_ns3

KINDS = ("codel", "fq_codel", "pie", "cobalt", "fq_pie", "cake")
DEFAULT_KINDS = ("codel", "fq_codel", "pie")
#: aqmlab's CAKE set up as ns-3's FqCobaltQueueDisc (module docstring); everything else default.
CAKE_AS_FQ_COBALT = 'topology.bottleneck.qdisc={kind="cake", diffserv="besteffort", flowmode="flows"}'
#: CAKE's settings that must hold for the comparison with FqCobalt (module docstring).
CAKE_REQUIRED = {"diffserv": "besteffort", "flowmode": "flows", "bandwidth": 0, "ack_filter": "no-ack-filter",
                 "ingress": False}
#: Linux CAKE_QUEUES and CAKE_SET_WAYS, fixed in CAKE; the unlimited flow quantum of cake_set_rate.
CAKE_QUEUES, CAKE_SET_WAYS, CAKE_UNLIMITED_QUANTUM = 1024, 8, 1514
#: Linux cake's memory limit when unlimited (cake_reconfigure: 10240 x psched_mtu 1514 B).
CAKE_UNLIMITED_MEMLIMIT = 10240 * 1514


def scenario_for(kind: str, duration: str, start: str, seed: int = 1, extra: tuple[str, ...] = ()):
    qdisc = CAKE_AS_FQ_COBALT if kind == "cake" else f'topology.bottleneck.qdisc={{kind="{kind}"}}'
    overrides = ["flows.long.app.tcp.sack=true", "flows.joining.app.tcp.sack=true",
                 f"duration={duration}", f'metrics.periods=[["{start}", "{duration}"]]', qdisc,
                 f"seed={seed}", *extra]
    sc, _ = load("rb-rio/tcp-droptail", overrides)
    return sc


def data_packet_bytes(sc) -> int:
    """IP size of the bottleneck's packets: every flow's MSS plus 40 B of headers (one size)."""
    sizes = {f.app.tcp.mss + 40 for f in sc.flows}
    if len(sizes) != 1:
        raise SystemExit(f"flows have different MSS {sorted(sizes)}; a byte limit has no packet count")
    return sizes.pop()


def cake_as_fq_cobalt(q, packet_bytes: int) -> dict:
    """aqmlab's CAKE, in the configuration the module docstring names, as an FqCobalt spec."""
    for field, want in CAKE_REQUIRED.items():
        if getattr(q, field) != want:
            raise SystemExit(f"cake.{field} must be {want!r} to compare with ns-3's FqCobalt, got "
                             f"{getattr(q, field)!r}")
    target = q.target if q.target is not None else max(q.rtt // 20, 1000)  # tc-cake: rtt / 20, >= 1 us
    # Linux cake_set_rate at rate 0: target as given, interval max(rtt + 0, 2 x target).
    interval = max(q.rtt, 2 * target)
    memlimit = q.memlimit if q.memlimit is not None else CAKE_UNLIMITED_MEMLIMIT
    return {"kind": "fq_cobalt", "limit_packets": memlimit // packet_bytes, "flows": CAKE_QUEUES,
            "quantum": CAKE_UNLIMITED_QUANTUM, "drop_batch": 1, "set_ways": CAKE_SET_WAYS,
            "target_s": target / 1e9, "interval_s": interval / 1e9, "p_inc": 1 / 256, "p_dec": 1 / 4096,
            "blue_threshold_s": None, "ecn": True}


def ns3_qdisc(q, packet_bytes: int = 1000) -> dict:
    """aqmlab's discipline as ns3_dumbbell.py's spec (times in seconds, sizes in bytes)."""
    if q.kind == "cake":
        return cake_as_fq_cobalt(q, packet_bytes)
    if q.kind == "cobalt":
        limit = ({"limit_packets": q.limit["packets"]} if "packets" in q.limit
                 else {"limit_bytes": q.limit["bytes"]})
        return {"kind": "cobalt", **limit, "target_s": q.target / 1e9, "interval_s": q.interval / 1e9,
                "p_inc": q.p_inc, "p_dec": q.p_dec, "blue_threshold_s": q.blue_threshold / 1e9, "ecn": q.ecn}
    d = {"kind": q.kind, "limit_packets": q.limit["packets"], "target_s": q.target / 1e9, "mtu": q.mtu,
         "ecn": q.ecn}
    if q.kind in ("codel", "fq_codel"):
        d["interval_s"] = q.interval / 1e9
    if q.kind == "fq_codel":
        d.update(flows=q.flows, quantum=q.quantum, drop_batch=q.drop_batch)
    if q.kind in ("pie", "fq_pie"):
        d.update(t_update_s=q.t_update / 1e9, alpha=q.alpha, beta=q.beta, max_burst_s=q.max_burst / 1e9,
                 derandomize=q.derandomize, estimator=q.estimator, dq_threshold=q.dq_threshold)
    if q.kind == "pie":
        d["mark_ecn_threshold"] = q.mark_ecn_threshold
    if q.kind == "fq_pie":
        if q.bytemode:
            raise SystemExit("fq_pie.bytemode has no counterpart in ns-3's FqPie")
        # Linux fq_pie: no set-associative hash; ns-3 drops from the fattest queue on overflow where
        # Linux drops the arrival: one packet at a time is the nearest (module docstring).
        d.update(flows=q.flows, quantum=q.quantum, drop_batch=1, set_ways=0,
                 mark_ecn_threshold=q.ecn_prob / 100)
    return d


METRICS = (("qdelay p50 (ms)", "qdelay_p50_ms", ".2f"), ("qdelay p99 (ms)", "qdelay_p99_ms", ".2f"),
           ("utilization (Mbit/s)", "utilization_mbps", ".3f"), ("drop rate (%)", "drop_rate_pct", ".2f"))


def parse_setting(text: str) -> tuple[str, object]:
    """KEY=VALUE for --ns3-set, VALUE as JSON (numbers, true/false, null) or else a string."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--ns3-set takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def compare(kind: str, duration: str, start: str, python: str, seed: int = 1, extra: tuple[str, ...] = (),
            ns3_set: dict | None = None) -> dict:
    sc = scenario_for(kind, duration, start, seed, extra)
    ours = simulate(sc, progress=False)
    spec = ns3_spec(sc, ours.tables["flows"])
    spec["qdisc"] = {**ns3_qdisc(sc.topology.bottleneck.qdisc, data_packet_bytes(sc)), **(ns3_set or {})}
    spec["record_sojourn"] = True
    spec["seed"] = seed
    theirs = run_ns3(python, spec)
    a = ours.periods.iloc[0].to_dict()
    b = {**theirs["periods"][0], **theirs["sojourn"][0]}
    assert theirs["other_queue_drops"] == 0, theirs["other_queue_drops"]
    return {"aqmlab": {key: float(a[key]) for _, key, _ in METRICS},
            "ns3": {key: float(b[key]) for _, key, _ in METRICS},
            "ns3_drops_by_reason": theirs["total"]["drops_by_reason"], "ns3_qdisc": spec["qdisc"]}


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", default=list(DEFAULT_KINDS), choices=KINDS)
    ap.add_argument("--duration", default="20s", help="simulated time (default 20s)")
    ap.add_argument("--start", default="5s", help="start of the measurement period (default 5s)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1], help="scenario seeds = ns-3 RngRun (default 1)")
    ap.add_argument("--set", dest="extra", action="append", default=[],
                    help="extra aqmlab scenario override, e.g. topology.bottleneck.qdisc.flows=64 (to test a cause)")
    ap.add_argument("--ns3-set", action="append", default=[],
                    help="override one key of the ns-3 qdisc spec, e.g. set_ways=0 (to test a cause)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    ns3_set = dict(parse_setting(x) for x in args.ns3_set)
    python = ns3_python()
    seeds = "seed " + ", ".join(map(str, args.seeds))
    title = f"60 TCP flows, 25 Mbit/s, period {args.start}-{args.duration}, {seeds}: aqmlab vs ns-3 3.44"
    cols = ["discipline", "metric", "aqmlab", "ns-3", "diff"]
    if len(args.seeds) > 1:
        cols.append("diff per seed")
    table, sections = Cells(cols, []), []
    dump = {}
    for kind in args.kinds:
        runs = {seed: compare(kind, args.duration, args.start, python, seed, tuple(args.extra), ns3_set)
                for seed in args.seeds}
        dump[kind] = {str(s): r for s, r in runs.items()}
        name = "cake (FqCobalt)" if kind == "cake" else kind
        for i, (label, key, fmt) in enumerate(METRICS):
            a = mean([r["aqmlab"][key] for r in runs.values()])
            b = mean([r["ns3"][key] for r in runs.values()])
            row = [name if i == 0 else "", label, format(a, fmt), format(b, fmt), rel(a, b)]
            if len(args.seeds) > 1:
                row.append(" ".join(rel(r["aqmlab"][key], r["ns3"][key]) for r in runs.values()))
            table.rows.append(row)
        sections.append(len(table.rows) - 1)
        for seed, r in runs.items():
            print(f"{kind} seed {seed}: ns-3 drops by reason {r['ns3_drops_by_reason']}", flush=True)
    # A terminal gets rich's layout; a pipe or a file a Markdown table with every column whole.
    printer = TablePrinter()
    printer.table("fidelity", title, table, sections=sections, left_columns=("discipline", "metric"))
    printer.finish()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dump, f, indent=2)


if __name__ == "__main__":
    main()
