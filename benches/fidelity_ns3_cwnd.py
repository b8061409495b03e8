"""One flow's congestion window in ns-3 and in the simulator's "ns3" profile, with each of the
two ns-3 rules the profile copies switched back (issue 27: the causes of the ns-3 half's cubic
drop-rate gap): the fidelity suite's one-flow case (`benches/fidelity.py`, default
1f-10M-20ms-fifo) per controller (reno, cubic), run in ns-3 3.44 at its defaults and in the
simulator with `tcp.profile = "ns3"` as it is (ns-3's PRR, `prr_variant = "ns3"`, and, with cubic,
a constant Reno-friendly alpha, `cubic_alpha_to_one = false`), with Linux's PRR instead
(`prr_variant = "linux"`), and, with cubic, with RFC 9438's switch of alpha to 1
(`cubic_alpha_to_one = true`).

    python3 benches/fidelity_ns3_cwnd.py            # docs/fidelity/ns3-cwnd-1f-10M-20ms-fifo.png
    python3 benches/fidelity_ns3_cwnd.py --from 12 --to 14 --out /tmp/zoom.png

ns-3's window comes from TcpSocketBase's CongestionWindow trace (every change), its fast
recoveries and timeouts from its CongState trace (`ns3_dumbbell.py`'s "trace_tcp"); the
simulator's window from `flow_samples` every millisecond, its counts from the flows table.
Prints, per controller and run, the drop rate over the suite's period (10 s to the end), the
fast recoveries and timeouts of the whole run, and the window's time-weighted mean over the
period. Needs ns-3 (`benches/ns3_setup.sh`), not root.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab.run import simulate
from bench_tcp_dumbbell import ns3_python
from fidelity import (
    CASES,
    DURATION_S,
    WARMUP_S,
    ns3_measures_ns3,
    ns3_measures_sim,
    ns3_spec_for,
    run_ns3_niced,
    scenario,
)
from fidelity_cwnd import bdp_kb, save_figure

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "fidelity" / "ns3-cwnd-1f-10M-20ms-fifo.png"
CONTROLLERS = ("reno", "cubic")
#: The simulator's runs: a label and the overrides of the ns3 profile, per controller.
VARIANTS: dict[str, dict[str, list[str]]] = {
    "reno": {
        "simulator, ns3 profile (ns-3's PRR)": [],
        "simulator, ns3 profile with Linux's PRR": ["flows.*.app.tcp.prr_variant=linux"],
    },
    "cubic": {
        "simulator, ns3 profile (ns-3's PRR, constant alpha)": [],
        "simulator, ns3 profile with RFC 9438's alpha switch": ["flows.*.app.tcp.cubic_alpha_to_one=true"],
        "simulator, ns3 profile with Linux's PRR": ["flows.*.app.tcp.prr_variant=linux"],
    },
}


def simulated(case: Any, cc: str, seed: int, duration_s: float, overrides: list[str]) -> tuple[Any, dict[str, Any]]:
    sc = scenario(case, cc, seed, duration_s, [*overrides, "records.flow_sample=1ms"], profile="ns3")
    res = simulate(sc, progress=False)
    flow = res.tables["flows"].iloc[0]
    s = res.tables["flow_samples"].sort_values("t_ns")
    return res, {"t": s["t_ns"].to_numpy() / 1e9, "cwnd_kb": s["cwnd_bytes"].to_numpy() / 1e3,
                 "recoveries": int(flow["fast_retransmits"]), "timeouts": int(flow["timeouts"]),
                 "drop_rate": ns3_measures_sim(res, case)["drop_rate"]}


def ns3_run(case: Any, cc: str, seed: int, duration_s: float, res: Any, python: str) -> dict[str, Any]:
    sc = scenario(case, cc, seed, duration_s, profile="ns3")
    spec = {**ns3_spec_for(sc, res.tables["flows"], case, cc, seed), "trace_tcp": True}
    out = run_ns3_niced(python, spec)
    tr = out["tcp_trace"]
    return {"t": np.array(tr["cwnd0_t_ns"]) / 1e9, "cwnd_kb": np.array(tr["cwnd0_bytes"]) / 1e3,
            "recoveries": tr["recoveries"][0], "timeouts": tr["timeouts"][0],
            "drop_rate": ns3_measures_ns3(out, case)["drop_rate"]}


def mean_over_period(run: dict[str, Any], end_s: float) -> float:
    """The time-weighted mean window over [warm-up, end] (ns-3's trace is event-driven)."""
    t, w = run["t"], run["cwnd_kb"]
    edges = np.clip(np.append(t, end_s), WARMUP_S, end_s)
    return float(np.sum(w * np.diff(edges)) / (end_s - WARMUP_S))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="1f-10M-20ms-fifo", choices=[c.name for c in CASES if c.flows == 1])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=DURATION_S)
    ap.add_argument("--from", dest="t0", type=float, default=WARMUP_S, help="figure starts here (s)")
    ap.add_argument("--to", dest="t1", type=float, default=WARMUP_S + 5, help="figure ends here (s)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    case = next(c for c in CASES if c.name == args.case)
    python = ns3_python()
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for cc in CONTROLLERS:
        runs[cc] = {}
        for label, overrides in VARIANTS[cc].items():
            res, runs[cc][label] = simulated(case, cc, args.seed, args.duration, overrides)
        runs[cc] = {"ns-3 3.44 (TcpPrrRecovery)": ns3_run(case, cc, args.seed, args.duration, res, python), **runs[cc]}
        for label, r in runs[cc].items():
            print(f"{cc:6s} {label:52s} drop rate {100 * r['drop_rate']:.3f} %, fast recoveries {r['recoveries']:3d}, "
                  f"timeouts {r['timeouts']:2d}, mean cwnd {mean_over_period(r, args.duration):5.1f} kB")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(CONTROLLERS), 1, figsize=(8, 6), sharex=True)
    for ax, cc in zip(axes, CONTROLLERS, strict=True):
        for (label, r), style in zip(runs[cc].items(), ("-", "--", ":", "-."), strict=False):
            keep = (r["t"] >= args.t0) & (r["t"] <= args.t1)
            ax.step(r["t"][keep], r["cwnd_kb"][keep], style, where="post", lw=1.1, label=label)
        ax.set_ylabel(f"{cc}\ncwnd (kB)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    axes[-1].set_xlabel("time (s)")
    save_figure(fig, args.out, f"One flow, {case.name} (BDP {bdp_kb(case):.0f} kB): ns-3 and the ns3 profile; "
                f"seed {args.seed}", fontsize=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
