#!/usr/bin/env python3
"""End-to-end speed of aqmlab against ns-3 on the Rb-RIO paper's 60-flow TCP dumbbell, and on
a 10x scaled version (600 flows, 250 Mbit/s, 1000-packet buffer, RED thresholds x10, w_q / 10).

For each discipline and size it runs aqmlab and ns-3 3.44 on the same topology, the same
per-flow start times and access delays, `--runs` times each, interleaved (aqmlab, ns-3, aqmlab,
...), and prints side by side: the median CPU and wall time of each engine's simulation step
(aqmlab's `Simulation.run`, ns-3's `Simulator::Run`, set-up and start-up excluded on both sides),
the median of the runs' ns-3 / aqmlab CPU ratios, bottleneck packets per second, and per-period
utilization and drop rate with their relative differences (from the first run: both engines are
deterministic).

ns-3 is either the PyPI `ns3` wheel, in its own virtual environment made by
benches/ns3_setup.sh (the default), or a build of ns-3 3.44 from source given by `--ns3-build
DIR` (its CMake build directory, configured with Python bindings). The wheel is not ns-3's
fastest build: it has NS_ASSERT and logging compiled in. ns-3's "optimized" profile (-O3,
-march=native, no asserts, no logging) is, and issue 22's speed targets are measured against it
(benches/README.md says how to build it).

The timed aqmlab run records no per-packet events (ns-3 is timed without tracing too); the
period metrics come from a second, identical run with recording on. Recording only observes:
the same seed gives the same dynamics either way (tests check determinism).

    python3 benches/bench_tcp_dumbbell.py               # 60 and 600 flows, Drop-Tail and RED, 5 runs
    python3 benches/bench_tcp_dumbbell.py --sizes 60 --qdiscs droptail --ns3-build ~/ns-3.44/build
    python3 benches/bench_tcp_dumbbell.py --sizes 60 --skip-ns3 --runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from aqmlab import _core
from aqmlab._core import parse_time
from aqmlab.display import Cells, TablePrinter
from aqmlab.run import simulate
from aqmlab.scenario import load

HERE = Path(__file__).resolve().parent


def scenario_for(qdisc: str, flows: int, duration: str | None, sack: bool = True):
    """The paper's scenario, scaled by flows/60 in rate, flow count and buffer. SACK is on by
    default because ns-3 3.44's non-SACK NewReno is not usable as a reference (see
    benches/ns3_dumbbell.py, use_sack)."""
    k = flows // 60
    s = "true" if sack else "false"
    overrides = [f"flows.long.app.tcp.sack={s}", f"flows.joining.app.tcp.sack={s}"]
    if k != 1:
        overrides += [
            f"topology.bottleneck.rate={25 * k}Mbps", f"topology.reverse.rate={25 * k}Mbps",
            f"flows.long.count={40 * k}", f"flows.joining.count={20 * k}",
            f"topology.bottleneck.qdisc.limit={100 * k}p",
        ]
        if qdisc == "red":
            overrides += [f"topology.bottleneck.qdisc.min_th={20 * k}",
                          f"topology.bottleneck.qdisc.max_th={60 * k}",
                          f"topology.bottleneck.qdisc.w_q={0.002 / k}"]
    if duration:
        # The paper's periods (0-10, 10-20, 20-30 s), those that begin before the end, cut to it.
        end = parse_time(duration)
        paper, _ = load(f"rb-rio/tcp-{qdisc}")
        periods = ", ".join(f'["{a}ns", "{min(b, end)}ns"]' for a, b in paper.periods() if a < end)
        overrides += [f"duration={duration}", f"metrics.periods=[{periods}]"]
    sc, _ = load(f"rb-rio/tcp-{qdisc}", overrides)
    return sc


def time_aqmlab(sc, with_records: bool = True) -> dict:
    """The timed run (no packet records) and, `with_records`, an identical run with records for
    the metrics and the flows' start times (the same for every run of a scenario: deterministic)."""
    cfg = sc.to_sim_config()
    cfg["records"]["packet_events"] = False
    sim = _core.Simulation(json.dumps(cfg))
    t0, c0 = time.perf_counter(), time.process_time()
    sim.run()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    summary = json.loads(sim.summary_json())
    timed = {
        "wall_run_s": wall,
        "cpu_run_s": cpu,
        "events": summary["events"],
        "bottleneck_packets": summary["bottleneck"]["stats"]["dequeued_packets"],
    }
    if not with_records:
        return timed
    full = simulate(sc, progress=False)
    return {**timed, "wall_with_records_s": full.wall_s, "periods": full.periods.to_dict(orient="records"),
            "flows": full.tables["flows"]}


def ns3_spec(sc, flows) -> dict:
    t = sc.topology
    q = t.bottleneck.qdisc
    tcp = sc.flows[0].app.tcp
    if q.kind == "red":
        qd = {"kind": "red", "limit_packets": q.limit["packets"], "min_th": q.min_th, "max_th": q.max_th,
              "w_q": q.w_q, "max_p": q.max_p, "gentle": q.gentle, "mean_pkt_size": q.mean_pkt_size}
    elif q.kind == "droptail":
        qd = {"kind": "droptail", "limit_packets": q.limit["packets"]}
    else:  # the caller fills in its parameters (bench_aqm_fidelity.ns3_qdisc)
        qd = {"kind": q.kind}
    return {
        "duration_s": sc.duration / 1e9,
        "bottleneck_rate_bps": t.bottleneck.rate,
        "bottleneck_delay_s": t.bottleneck.delay / 1e9,
        "access_rate_bps": sc.flows[0].access_rate,
        "receiver_access_delay_s": sc.flows[0].receiver_delay / 1e9,
        "access_limit_packets": 10000,
        "reverse_limit_packets": t.reverse.qdisc.limit["packets"],
        "qdisc": qd,
        "mss_bytes": tcp.mss,
        "initial_cwnd_segments": tcp.initial_cwnd,
        "min_rto_s": tcp.min_rto / 1e9,
        "delayed_ack": tcp.delayed_ack,
        "rwnd_bytes": tcp.rwnd,
        "sack": tcp.sack,
        "flows": [{"start_s": r.start_ns / 1e9, "stop_s": r.stop_ns / 1e9,
                   "access_delay_s": r.sender_delay_ns / 1e9} for r in flows.itertuples()],
        "periods_s": [[a / 1e9, b / 1e9] for a, b in sc.periods()],
    }


def ns3_python() -> str:
    r = subprocess.run(["bash", str(HERE / "ns3_setup.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ns-3 setup failed:\n{r.stderr[-2000:]}")
    return r.stdout.strip().splitlines()[-1]


def ns3_environment(build: Path | None) -> dict[str, str] | None:
    """The environment ns3_dumbbell.py runs in: with `build`, a source build's Python bindings
    (DIR/bindings/python, which load the build's own libraries) ahead of the wheel's."""
    if build is None:
        return None
    bindings = build / "bindings" / "python"
    if not (bindings / "ns" / "__init__.py").is_file():
        raise SystemExit(f"--ns3-build: {build} has no bindings/python/ns/__init__.py; configure ns-3 "
                         "with -DNS3_PYTHON_BINDINGS=ON and build it (benches/README.md)")
    return {**os.environ, "PYTHONPATH": f"{bindings}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def run_ns3(python: str, spec: dict, env: dict[str, str] | None = None) -> dict:
    r = subprocess.run([python, str(HERE / "ns3_dumbbell.py"), "-"], input=json.dumps(spec),
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit(f"ns-3 run failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout)


def rel(a: float, b: float) -> str:
    return f"{100 * (a - b) / b:+.1f}%" if b else "-"


#: The issue 22 targets for the simulation step: ns-3's CPU time over aqmlab's, by flow count.
TARGET_RATIO = {60: 100.0, 600: 500.0}


def _median_range(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def report(name: str, runs: list[tuple[dict, dict | None]], ns3_label: str, flows: int) -> None:
    """Prints the speed (medians over `runs`, each an aqmlab run and the ns-3 run after it)
    and the first run's per-period results: rich's layout on a terminal, Markdown tables with
    every column whole in a pipe or a file."""
    printer = TablePrinter()
    ours, ns3 = runs[0]
    pk = ours["bottleneck_packets"]
    cpu = [o["cpu_run_s"] for o, _ in runs]
    wall = [o["wall_run_s"] for o, _ in runs]
    # CPU time beside wall time: on a shared machine a process's wall time depends on what else
    # runs; its CPU time much less so.
    speed = Cells(["engine", "runs", "CPU (s), median (range)", "wall (s), median", "bottleneck pkts per CPU s",
                   "CPU ns per bottleneck pkt"], [
        ["aqmlab", str(len(runs)), _median_range(cpu), f"{statistics.median(wall):.3f}",
         f"{pk / statistics.median(cpu):,.0f}", f"{1e9 * statistics.median(cpu) / pk:,.0f}"],
    ])
    if ns3:
        npk = ns3["total"]["dequeued_packets"]
        ncpu = [n["cpu_run_s"] for _, n in runs if n]
        nwall = [n["wall_run_s"] for _, n in runs if n]
        speed.rows.append([ns3_label, str(len(ncpu)), _median_range(ncpu), f"{statistics.median(nwall):.3f}",
                           f"{npk / statistics.median(ncpu):,.0f}", f"{1e9 * statistics.median(ncpu) / npk:,.0f}"])
    printer.table(f"{name}-speed", f"{name}: speed of the simulation step", speed, left_columns=("engine",))
    if ns3:
        ratios = [n["cpu_run_s"] / o["cpu_run_s"] for o, n in runs if n]
        target = TARGET_RATIO.get(flows)
        verdict = (f"; target {target:.0f}x: {'met' if statistics.median(ratios) >= target else 'not met'}"
                   if target else "")
        printer.note(f"ns-3 / aqmlab CPU time, median of the {len(ratios)} runs' ratios: "
                     f"{statistics.median(ratios):.1f}x (range {min(ratios):.1f}-{max(ratios):.1f}x){verdict}")
    periods = Cells(["period (s)", "util aqmlab", "util ns-3", "diff", "drop % aqmlab", "drop % ns-3", "diff"], [])
    for i, p in enumerate(ours["periods"]):
        n = ns3["periods"][i] if ns3 else None
        periods.rows.append([f"{p['start_s']:g}-{p['end_s']:g}", f"{p['utilization_mbps']:.3f}",
                             f"{n['utilization_mbps']:.3f}" if n else "-",
                             rel(p["utilization_mbps"], n["utilization_mbps"]) if n else "-",
                             f"{p['drop_rate_pct']:.2f}", f"{n['drop_rate_pct']:.2f}" if n else "-",
                             rel(p["drop_rate_pct"], n["drop_rate_pct"]) if n else "-"])
    printer.table(f"{name}-periods", f"{name}: results per period", periods, left_columns=())
    printer.finish()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[60, 600], help="flow counts (multiples of 60)")
    ap.add_argument("--qdiscs", nargs="+", default=["droptail", "red"], choices=["droptail", "red"])
    ap.add_argument("--duration", default=None,
                    help='override the 30 s duration, e.g. "15s" (over 10 s: the joining flows start then)')
    ap.add_argument("--runs", type=int, default=5, help="runs of each engine, interleaved (default 5)")
    ap.add_argument("--skip-ns3", action="store_true", help="time aqmlab only")
    ap.add_argument("--ns3-build", type=Path, default=None, metavar="DIR",
                    help="a source build of ns-3 3.44 (its build directory, with Python bindings) "
                         "instead of the PyPI wheel")
    ap.add_argument("--tcp", choices=["sack", "newreno"], default="sack",
                    help="SACK (default) or plain NewReno on both sides")
    ap.add_argument("--json", type=Path, default=None, help="also write all figures here")
    args = ap.parse_args()
    if args.runs < 1:
        raise SystemExit("--runs must be at least 1")
    python = None if args.skip_ns3 else ns3_python()
    env = None if args.skip_ns3 else ns3_environment(args.ns3_build)
    label = f"ns-3 3.44 ({'build ' + str(args.ns3_build) if args.ns3_build else 'PyPI wheel'})"
    dump = {}
    for size in args.sizes:
        if size % 60:
            raise SystemExit("--sizes must be multiples of 60")
        for q in args.qdiscs:
            sc = scenario_for(q, size, args.duration, sack=args.tcp == "sack")
            runs, spec = [], None
            for k in range(args.runs):
                # The metrics and ns-3's spec come from the first run; the others are timed only.
                ours = time_aqmlab(sc, with_records=k == 0)
                spec = spec or ns3_spec(sc, ours["flows"])
                ns3 = run_ns3(python, spec, env) if python else None
                runs.append((ours, ns3))
            name = f"{size} flows, {q}, {args.tcp}"
            report(name, runs, label, size)
            dump[name] = [{"aqmlab": {k: v for k, v in o.items() if k != "flows"}, "ns3": n} for o, n in runs]
    if args.json:
        args.json.write_text(json.dumps(dump, indent=2))


if __name__ == "__main__":
    main()
