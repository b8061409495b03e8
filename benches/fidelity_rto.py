"""The retransmission timeout against SRTT, the kernel's against the simulator's two estimators
(issue 27, docs/fidelity.md, "RTT samples and the RTO"): cases of the fidelity suite
(`benches/fidelity.py`), each seed run once through the emulator (TCP_INFO's `tcpi_rto` and
`tcpi_rtt` in `flow_samples`) and twice in the simulator with the linux profile, once with
`tcp.rto_estimator = "linux"` (the profile's) and once with `"rfc6298"`. Prints, per run, the
median RTO and SRTT and the 10th, 50th and 90th percentiles of RTO - SRTT over every TCP flow's
samples from 10 s on (samples with an SRTT only).

    sudo python3 benches/fidelity_rto.py                          # 1f-10M-20ms-fifo and 8f-10M-50ms-fifo, seeds 1-2
    python3 benches/fidelity_rto.py --no-kernel --cases 8f-10M-50ms-codel --controller bbr

Needs root for the kernel's runs (the emulator); `--no-kernel` runs the simulator's alone.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from aqmlab.run import simulate
from fidelity import CASES, WARMUP_S, scenario

DEFAULT_CASES = "1f-10M-20ms-fifo,8f-10M-50ms-fifo"
ESTIMATORS = ("linux", "rfc6298")


def rto_above_srtt(samples) -> str:
    """One line: median RTO and SRTT, and RTO - SRTT's 10th/50th/90th percentiles, in ms."""
    s = samples[(samples["t_ns"] >= WARMUP_S * 1e9) & (samples["srtt_ns"] > 0)]
    if s.empty:
        return "no sample with an SRTT after the warm-up"
    gap = (s["rto_ns"] - s["srtt_ns"]).to_numpy() / 1e6
    p10, p50, p90 = np.percentile(gap, [10, 50, 90])
    return (f"RTO {np.median(s['rto_ns']) / 1e6:7.1f} ms, SRTT {np.median(s['srtt_ns']) / 1e6:6.1f} ms, "
            f"RTO - SRTT p10/p50/p90 {p10:6.1f} / {p50:6.1f} / {p90:6.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="comma-separated case names: "
                    + ", ".join(c.name for c in CASES))
    ap.add_argument("--controller", default="cubic", choices=["reno", "cubic", "bbr"])
    ap.add_argument("--seeds", default="1,2", help="comma-separated seeds (one kernel run each)")
    ap.add_argument("--no-kernel", action="store_true", help="the simulator's runs alone")
    args = ap.parse_args()
    names = {c.name: c for c in CASES}
    unknown = [n for n in args.cases.split(",") if n not in names]
    if unknown:
        raise SystemExit(f"--cases: unknown case {unknown[0]!r}; allowed: {', '.join(names)}")
    if not args.no_kernel and os.geteuid() != 0:
        raise SystemExit("the kernel's runs go through the emulator: run as root, or pass --no-kernel")
    for name in args.cases.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            for estimator in ESTIMATORS:
                over = [f"flows.*.app.tcp.rto_estimator={estimator}"]
                sc = scenario(names[name], args.controller, seed, overrides=over)
                line = rto_above_srtt(simulate(sc, progress=False).tables["flow_samples"])
                print(f"{name} seed {seed} simulator, rto_estimator {estimator:8s} {line}", flush=True)
            if not args.no_kernel:
                from aqmlab.emu.run import emulate

                kernel = emulate(scenario(names[name], args.controller, seed)).tables["flow_samples"]
                print(f"{name} seed {seed} kernel (emulator)              {rto_above_srtt(kernel)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
