"""The TCP fidelity suite of issue 27: the simulator's "linux" TCP profile against the Linux
kernel's TCP through the emulator, on dumbbells the paper reproductions never use.

    python3 benches/fidelity.py                       # every case, simulator and kernel (root)
    python3 benches/fidelity.py --no-kernel           # the simulator half alone (no root needed)
    python3 benches/fidelity.py --cases 1f-10M-20ms-fifo,8f-10M-50ms-fqcodel --runs 3 --json out.json
    python3 benches/fidelity.py --kernel-from out.json --cases 1f-10M-20ms-fifo --set flows.*.app.tcp.byte_counting=true

Each case is one dumbbell: n TCP downloads through one bottleneck (rate, base RTT, buffer in
bandwidth-delay products, discipline). Each case runs once per controller: the kernel's reno,
cubic and bbr (``emulation.congestion_control``; the kernel's defaults otherwise: SACK, RACK-TLP,
PRR, HyStart, IW10, its RTO rules, delayed ACKs) and the simulator with ``tcp.profile = "linux"``
and the same controller (reno is the simulator's newreno). ``--runs N`` repeats each with seeds
1..N; the table gives the median over runs.

Measured over [warm-up, end] of each run: utilization (share of the bottleneck rate), each
flow's share of the delivered bytes, Jain's index, the retransmission rate (retransmitted over
sent segments, whole run), queueing delay p50 and p99 at the bottleneck. Targets, per case and
controller (issue 27): utilization within 3 %, each flow's share within 10 % and Jain within
0.05, retransmission rate within 20 %, queueing delay p50 and p99 within 10 % (relative to the
kernel's value). A miss is printed with the two values; its cause is for docs/fidelity.md to
state, measured, never guessed here.

Choices the issue leaves open, written here: runs of 30 s measured from 10 s (CUBIC and BBR
leave start-up within a few seconds at these BDPs; the 200 ms case starts later and is said
so); access links of 1 ms each way, so the base RTT is 2 x (bottleneck delay + 2 ms); buffers
of max(4, factor x BDP / 1500 B) packets; the two-RTT case puts one flow at 10 ms and one at
80 ms base RTT through sender access delays.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.run import simulate
from aqmlab.scenario import apply_override, validate

MSS = 1460
PACKET = 1500
DURATION_S = 30
WARMUP_S = 10
CONTROLLERS = ("reno", "cubic", "bbr")
#: The simulator's name of each kernel controller.
SIM_CONTROLLER = {"reno": "newreno", "cubic": "cubic", "bbr": "bbr"}
#: Issue 27's targets: (metric, kind, bound): "rel" relative to the kernel's value, "abs" absolute.
TARGETS = (("utilization", "rel", 0.03), ("max_share_error", "abs", 0.10), ("jain", "abs", 0.05),
           ("retrans_rate", "rel", 0.20), ("qdelay_p50_ms", "rel", 0.10), ("qdelay_p99_ms", "rel", 0.10))


@dataclass(frozen=True)
class Case:
    """One dumbbell of the suite."""

    name: str
    flows: int
    rate_mbps: float
    rtt_ms: float
    buffer_bdp: float
    qdisc: str
    #: Base RTT of the second half of the flows, if it differs (the two-RTT case).
    rtt2_ms: float | None = None

    def buffer_packets(self) -> int:
        bdp_bytes = self.rate_mbps * 1e6 / 8 * self.rtt_ms / 1e3
        return max(4, round(self.buffer_bdp * bdp_bytes / PACKET))


CASES = (
    Case("1f-10M-20ms-fifo", 1, 10, 20, 1.0, "fifo"),
    Case("1f-10M-200ms-fifo-shallow", 1, 10, 200, 0.25, "fifo"),
    Case("1f-100M-40ms-fifo-deep", 1, 100, 40, 4.0, "fifo"),
    Case("2f-10M-10+80ms-fifo", 2, 10, 10, 1.0, "fifo", rtt2_ms=80),
    Case("2f-10M-10+80ms-codel", 2, 10, 10, 1.0, "codel", rtt2_ms=80),
    Case("8f-10M-50ms-fifo", 8, 10, 50, 1.0, "fifo"),
    Case("8f-10M-50ms-codel", 8, 10, 50, 2.0, "codel"),
    Case("8f-10M-50ms-fqcodel", 8, 10, 50, 2.0, "fq_codel"),
    Case("8f-10M-100ms-sqf", 8, 10, 100, 1.0, "sqf"),
    Case("8f-100M-20ms-fifo", 8, 100, 20, 1.0, "fifo"),
    Case("50f-100M-40ms-fifo-shallow", 50, 100, 40, 0.5, "fifo"),
    Case("50f-100M-40ms-fqcodel", 50, 100, 40, 2.0, "fq_codel"),
)


def _qdisc(case: Case) -> dict[str, Any]:
    limit = f"{case.buffer_packets()}p"
    if case.qdisc == "fifo":
        return {"kind": "droptail", "limit": limit}
    if case.qdisc == "fq_codel":
        # FQ-CoDel's own limit is in packets too; the buffer factor sets it as for the others.
        return {"kind": "fq_codel", "limit": limit}
    return {"kind": case.qdisc, "limit": limit}


def _group(name: str, count: int, rtt_ms: float, bottleneck_delay_ms: float, cc: str) -> dict[str, Any]:
    # base RTT = 2 x (bottleneck delay + sender access + receiver access delay), receiver 1 ms.
    sender_ms = rtt_ms / 2 - bottleneck_delay_ms - 1
    return {"name": name, "count": count, "start_jitter": "1s", "access_rate": "1Gbps",
            "sender_delay": f"{sender_ms:g}ms", "receiver_delay": "1ms",
            "app": {"kind": "bulk", "tcp": {"profile": "linux", "congestion_control": SIM_CONTROLLER[cc],
                                            "mss": f"{MSS}B"}}}


def scenario(case: Case, cc: str, seed: int, duration_s: float = DURATION_S, overrides: Sequence[str] = ()) -> Any:
    """The case as a scenario for either engine (the emulator reads emulation.congestion_control),
    with `--set`-style overrides applied last."""
    rtts = [case.rtt_ms] if case.rtt2_ms is None else [case.rtt_ms, case.rtt2_ms]
    bottleneck_delay_ms = min(rtts) / 2 - 2
    if case.rtt2_ms is None:
        groups = [_group("tcp", case.flows, case.rtt_ms, bottleneck_delay_ms, cc)]
    else:
        groups = [_group("near", case.flows // 2, case.rtt_ms, bottleneck_delay_ms, cc),
                  _group("far", case.flows - case.flows // 2, case.rtt2_ms, bottleneck_delay_ms, cc)]
    data = {
        "name": f"{case.name}-{cc}", "seed": seed, "duration": f"{duration_s:g}s",
        "topology": {
            "bottleneck": {"rate": f"{case.rate_mbps:g}Mbps", "delay": f"{bottleneck_delay_ms:g}ms",
                           "qdisc": _qdisc(case)},
            "reverse": {"rate": f"{case.rate_mbps:g}Mbps", "delay": f"{bottleneck_delay_ms:g}ms",
                        "qdisc": {"kind": "droptail", "limit": "1000p"}},
        },
        "flows": groups,
        "records": {"packet_events": True, "queue_sample": "10ms", "flow_sample": "100ms"},
        "metrics": {"periods": [[f"{WARMUP_S}s", f"{duration_s:g}s"]]},
        "emulation": {"congestion_control": {g["name"]: cc for g in groups}},
    }
    for assignment in overrides:
        apply_override(data, assignment)
    return validate(data, f"fidelity case {case.name}")


def measures(result: Any, case: Case) -> dict[str, float]:
    """The suite's measures of one run (both engines write the same tables)."""
    period = result.periods.iloc[0]
    fp = result.flow_periods
    tput = fp.groupby("flow")["throughput_mbps"].sum()
    shares = (tput / tput.sum()).sort_index()
    flows = result.tables["flows"]
    flows = flows[flows["is_tcp"] == 1]
    sent = float(flows["packets_sent"].sum())
    return {
        "utilization": float(period["utilization_mbps"]) / case.rate_mbps,
        "shares": [float(s) for s in shares],
        "jain": float(period["jain"]),
        "retrans_rate": float(flows["retransmissions"].sum()) / sent if sent else math.nan,
        "qdelay_p50_ms": float(period["qdelay_p50_ms"]),
        "qdelay_p99_ms": float(period["qdelay_p99_ms"]),
    }


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: float(np.median([r[k] for r in runs])) for k in runs[0] if k != "shares"}
    out["shares"] = [float(x) for x in np.median(np.array([r["shares"] for r in runs]), axis=0)]
    return out


def compare(sim: dict[str, Any], kernel: dict[str, Any]) -> dict[str, Any]:
    """The gap of each target measure and whether it is within its target."""
    rows = {}
    for metric, kind, bound in TARGETS:
        if metric == "max_share_error":
            # Flow by flow in the order of the flows table (the same flows with the same access
            # delays in both engines): the largest absolute difference of shares.
            s = k = math.nan
            gap = float(np.max(np.abs(np.subtract(sim["shares"], kernel["shares"]))))
        else:
            s, k = sim[metric], kernel[metric]
            if kind == "rel":
                gap = abs(s - k) / abs(k) if k else (0.0 if s == k else math.inf)
            else:
                gap = abs(s - k)
        rows[metric] = {"sim": s, "kernel": k, "gap": gap, "bound": bound, "kind": kind, "ok": bool(gap <= bound)}
    return rows


def run_case(case: Case, cc: str, runs: int, kernel: bool, duration_s: float, sim_overrides: Sequence[str] = (),
             saved_kernel: dict[str, Any] | None = None) -> dict[str, Any]:
    seeds = range(1, runs + 1)
    sims = [measures(simulate(scenario(case, cc, seed, duration_s, sim_overrides), progress=False), case)
            for seed in seeds]
    out: dict[str, Any] = {"case": asdict(case), "controller": cc, "sim_runs": sims, "sim": _median(sims)}
    if saved_kernel is not None:
        out["kernel_runs"] = saved_kernel["kernel_runs"]
        out["kernel"] = saved_kernel["kernel"]
        out["targets"] = compare(out["sim"], out["kernel"])
    elif kernel:
        from aqmlab.emu.run import emulate

        kernels = [measures(emulate(scenario(case, cc, seed, duration_s)), case) for seed in seeds]
        out["kernel_runs"] = kernels
        out["kernel"] = _median(kernels)
        out["targets"] = compare(out["sim"], out["kernel"])
    return out


def _fmt(x: float, metric: str) -> str:
    if x != x:
        return "-"
    if metric in ("utilization", "retrans_rate"):
        return f"{100 * x:.2f} %"
    if metric == "jain":
        return f"{x:.3f}"
    return f"{x:.1f}"


def table(results: list[dict[str, Any]]) -> str:
    """Markdown: one row per case and controller, simulator / kernel per measure, a mark on misses."""
    head = ["case", "cc", "utilization", "max share error", "jain", "retrans rate", "qdelay p50 ms", "qdelay p99 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r["case"]["name"], r["controller"]]
        if "targets" not in r:
            s = r["sim"]
            cells += [_fmt(s["utilization"], "utilization"), "-", _fmt(s["jain"], "jain"),
                      _fmt(s["retrans_rate"], "retrans_rate"), _fmt(s["qdelay_p50_ms"], "p50"),
                      _fmt(s["qdelay_p99_ms"], "p99")]
        else:
            for metric, _kind, _bound in TARGETS:
                t = r["targets"][metric]
                mark = "" if t["ok"] else " **miss**"
                if metric == "max_share_error":
                    cells.append(f"{t['gap']:.3f}{mark}")
                else:
                    cells.append(f"{_fmt(t['sim'], metric)} / {_fmt(t['kernel'], metric)}{mark}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def misses(results: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in results:
        for metric, t in r.get("targets", {}).items():
            if not t["ok"]:
                bound = f"{100 * t['bound']:.0f} %" if t["kind"] == "rel" else f"{t['bound']:g}"
                out.append(f"{r['case']['name']} {r['controller']}: {metric} gap {t['gap']:.3f} > {bound}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", help="comma-separated case names (default: all): " + ", ".join(c.name for c in CASES))
    ap.add_argument("--controllers", default=",".join(CONTROLLERS), help="comma-separated: reno, cubic, bbr")
    ap.add_argument("--runs", type=int, default=3, help="seeds (simulator) and repetitions (kernel) per case")
    ap.add_argument("--duration", type=float, default=DURATION_S, help="seconds per run (measured from 10 s)")
    ap.add_argument("--no-kernel", action="store_true", help="the simulator half alone")
    ap.add_argument("--json", help="write every run's measures here")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="override a field of the simulator's scenarios (repeatable), e.g. "
                         "flows.*.app.tcp.byte_counting=true; the kernel half runs as it is")
    ap.add_argument("--kernel-from", metavar="JSON",
                    help="take the kernel half from an earlier --json file (same cases, controllers and "
                         "duration) instead of running it: compares a changed simulator with kernel runs made "
                         "on a quiet machine")
    args = ap.parse_args(argv)
    by_name = {c.name: c for c in CASES}
    names = args.cases.split(",") if args.cases else list(by_name)
    unknown = [n for n in names if n not in by_name]
    controllers = args.controllers.split(",")
    bad_cc = [c for c in controllers if c not in CONTROLLERS]
    if unknown or bad_cc or args.runs < 1 or args.duration <= WARMUP_S:
        print(f"error: unknown case(s) {unknown} (allowed: {', '.join(by_name)}); controllers {bad_cc} "
              f"(allowed: {', '.join(CONTROLLERS)}); --runs >= 1; --duration > {WARMUP_S}", file=sys.stderr)
        return 2
    saved: dict[tuple[str, str], dict[str, Any]] = {}
    if args.kernel_from:
        with open(args.kernel_from) as f:
            earlier = json.load(f)
        if earlier["duration_s"] != args.duration:
            print(f"error: --kernel-from: {args.kernel_from} ran {earlier['duration_s']} s, not --duration "
                  f"{args.duration}", file=sys.stderr)
            return 2
        saved = {(r["case"]["name"], r["controller"]): r for r in earlier["results"] if "kernel" in r}
        missing = [f"{n} {c}" for n in names for c in controllers if (n, c) not in saved]
        if missing:
            print(f"error: --kernel-from: {args.kernel_from} has no kernel runs of {', '.join(missing)}",
                  file=sys.stderr)
            return 2
    kernel = not args.no_kernel and not saved
    if kernel and os.geteuid() != 0:
        print("error: the kernel half needs root (network namespaces); run with sudo or pass --no-kernel",
              file=sys.stderr)
        return 2
    results = []
    for name in names:
        for cc in controllers:
            r = run_case(by_name[name], cc, args.runs, kernel, args.duration, args.overrides, saved.get((name, cc)))
            results.append(r)
            print(f"done {name} {cc}", file=sys.stderr, flush=True)
    print(table(results))
    found = misses(results)
    print(f"\n{len(found)} misses" + (":\n- " + "\n- ".join(found) if found else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "duration_s": args.duration, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    sys.exit(main())
