"""The receive window each TCP sender holds, the kernel's against the simulator's with and
without `tcp.rwnd_autotuning` (issue 27: the start-up gap docs/fidelity.md traces to the
kernel's receive window): one case of the fidelity suite (`benches/fidelity.py`, default the
8-flow FQ-CoDel case, cubic), run once in each engine with the same seed and sampled every
10 ms: the simulator with the linux profile as it is (the window autotuned, since 2026-11-28)
and with the profile's 6 MB window from the first segment (`rwnd_autotuning = false`, the
profile before), and the kernel; `flow_samples.snd_wnd_bytes` (the kernel's `tcpi_snd_wnd`,
the simulator's window) and `cwnd_bytes` of every flow over the first seconds, one column per
run.

    sudo python3 benches/fidelity_rwnd.py        # docs/fidelity/rwnd-8f-10M-50ms-fqcodel.png
    sudo python3 benches/fidelity_rwnd.py --case 1f-100M-40ms-fifo-deep --out /tmp/rwnd.png

Needs root (the emulator). Prints, per engine, each second's median window over the flows and
the time the flows spent with cwnd at or above the window (held back by the receiver; on the
10 ms grid), and the retransmission rate of the run and of its first 5 s.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from aqmlab.run import simulate
from fidelity import CASES, DURATION_S, scenario
from fidelity_cwnd import FIGURES, save_figure

DEFAULT_CASE = "8f-10M-50ms-fqcodel"
SHOWN_S = 5.0
SAMPLE = "10ms"
#: The profile before it took the autotuned window: the 6 MB ceiling from the first segment.
FIXED_WINDOW = ["flows.*.app.tcp.rwnd_autotuning=false"]


def tcp_samples(result):
    """The TCP flows' rows of flow_samples, once each flow has a window."""
    s = result.tables["flow_samples"]
    tcp = set(result.tables["flows"].query("is_tcp == 1")["flow"])
    return s[s["flow"].isin(tcp) & (s["cwnd_bytes"] > 0)]


def report(name: str, s) -> None:
    t = s["t_ns"].to_numpy() / 1e9
    seconds = [f"{np.median(s.loc[(t >= k) & (t < k + 1), 'snd_wnd_bytes']) / 1e3:.0f}" for k in range(int(SHOWN_S))]
    held = (s["cwnd_bytes"] >= s["snd_wnd_bytes"]) & (t < SHOWN_S)
    last = s.sort_values("t_ns").groupby("flow").last()
    early = s[t <= SHOWN_S].sort_values("t_ns").groupby("flow").last()
    rate = lambda rows: rows["retransmissions"].sum() / max(rows["packets_sent"].sum(), 1)  # noqa: E731
    print(f"{name:30s} median window by second (kB): {', '.join(seconds)}; held back {held.sum() * 10} "
          f"flow-ms in the first {SHOWN_S:g} s; retransmitted {rate(last):.2%} of the run, "
          f"{rate(early):.2%} by {SHOWN_S:g} s")


def draw(runs: dict, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(runs), figsize=(4 * len(runs), 6.5), sharex=True, sharey="row")
    for col, (engine, s) in enumerate(runs.items()):
        for _, rows in s.groupby("flow"):
            t = rows["t_ns"].to_numpy() / 1e9
            keep = t <= SHOWN_S
            axes[0, col].plot(t[keep], rows["snd_wnd_bytes"].to_numpy()[keep] / 1e3, lw=0.9)
            axes[1, col].plot(t[keep], rows["cwnd_bytes"].to_numpy()[keep] / 1e3, lw=0.9)
        axes[0, col].set_title(engine, fontsize=9)
        for ax in axes[:, col]:
            ax.set_yscale("log")
            ax.grid(alpha=0.3, which="both")
        axes[1, col].set_xlabel("time (s)")
    axes[0, 0].set_ylabel("receive window held\nby the sender (kB)")
    axes[1, 0].set_ylabel("cwnd (kB)")
    save_figure(fig, out, title, fontsize=10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default=DEFAULT_CASE, choices=[c.name for c in CASES])
    ap.add_argument("--controller", default="cubic", choices=["reno", "cubic", "bbr"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=DURATION_S)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the kernel's half runs in the emulator: run as root")
    from aqmlab.emu.run import emulate

    case = next(c for c in CASES if c.name == args.case)
    base = [f"records.flow_sample={SAMPLE}"]
    runs = {}
    for name, extra in (("simulator, linux profile", []),
                        ("simulator, fixed 6 MB window", FIXED_WINDOW)):
        sc = scenario(case, args.controller, args.seed, args.duration, overrides=base + extra)
        runs[name] = tcp_samples(simulate(sc, progress=False))
    kernel = scenario(case, args.controller, args.seed, args.duration, overrides=base)
    runs["kernel (emulator)"] = tcp_samples(emulate(kernel))
    for name, s in runs.items():
        report(name, s)
    out = args.out or FIGURES / f"rwnd-{case.name}.png"
    draw(runs, out, f"Receive window and cwnd of each flow, {case.name}, {args.controller}, seed {args.seed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
