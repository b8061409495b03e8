"""One flow's congestion window over time, the simulator's "linux" profile against the kernel
(issue 27: "for one flow, the cwnd trajectory of each controller on one figure with the
kernel's"): the fidelity suite's one-flow case (`benches/fidelity.py`, default
1f-10M-20ms-fifo: 10 Mbit/s, 20 ms base RTT, a FIFO of one BDP) run once per controller (reno,
cubic, bbr) in both engines with the same seed, and each run's `flow_samples.cwnd_bytes` (the
simulator's window; the kernel's `tcpi_snd_cwnd` x `tcpi_snd_mss` read through TCP_INFO by the
emulator's sender, every 100 ms) drawn in one panel per controller; and from the same runs
`flow_samples.delivery_rate_bps` (the simulator's estimator, on in the linux profile; the
kernel's `tcpi_delivery_rate`) on a second figure.

    sudo python3 benches/fidelity_cwnd.py   # docs/fidelity/{cwnd,delivery-rate}-1f-10M-20ms-fifo.png
    sudo python3 benches/fidelity_cwnd.py --case 1f-100M-40ms-fifo-deep --out /tmp/cwnd.png --rate-out /tmp/rate.png

Needs root (the emulator). Prints, per controller and engine, the window's mean and its
coefficient of variation over the suite's measured period (10 s to the end) and the number of
reductions (samples whose window fell by more than a fifth from the previous sample), and the
delivery rate's median and 10th percentile over the same period.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

from aqmlab.run import simulate
from fidelity import CASES, CONTROLLERS, DURATION_S, WARMUP_S, scenario

FIGURES = Path(__file__).resolve().parent.parent / "docs" / "fidelity"
DEFAULT_OUT = FIGURES / "cwnd-1f-10M-20ms-fifo.png"
DEFAULT_RATE_OUT = FIGURES / "delivery-rate-1f-10M-20ms-fifo.png"


def trajectory(result, column: str = "cwnd_bytes", scale: float = 1e3) -> tuple[np.ndarray, np.ndarray]:
    """(seconds, `column` / `scale`) of the run's one TCP flow: the window in kB by default."""
    s = result.tables["flow_samples"]
    flow = int(result.tables["flows"].query("is_tcp == 1")["flow"].iloc[0])
    s = s[s["flow"] == flow].sort_values("t_ns")
    return s["t_ns"].to_numpy() / 1e9, s[column].to_numpy().astype(float) / scale


def rate_summary(t: np.ndarray, mbps: np.ndarray) -> str:
    keep = mbps[t >= WARMUP_S]
    return f"delivery rate median {np.median(keep):.2f} Mbit/s, p10 {np.percentile(keep, 10):.2f}"


def panels(runs: dict, ylabel: str, out: Path, title: str, legend_at: str) -> None:
    """One panel per controller, both engines in each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(CONTROLLERS), 1, figsize=(8, 7.5), sharex=True)
    for ax, cc in zip(axes, CONTROLLERS, strict=True):
        for (engine, (t, y)), style in zip(runs[cc].items(), ("-", "--"), strict=True):
            ax.plot(t, y, style, lw=1.1, label=engine)
        ax.axvline(WARMUP_S, color="0.7", lw=0.8)
        ax.set_ylabel(f"{cc}\n{ylabel}")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend(loc=legend_at, fontsize=8)
    axes[-1].set_xlabel("time (s); the suite measures from the grey line")
    save_figure(fig, out, title)


def summary(t: np.ndarray, cwnd: np.ndarray) -> str:
    keep = t >= WARMUP_S
    w = cwnd[keep]
    cuts = int(np.sum(w[1:] < 0.8 * w[:-1]))
    return f"mean {w.mean():7.1f} kB, CV {w.std() / w.mean():.2f}, reductions {cuts}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="1f-10M-20ms-fifo", choices=[c.name for c in CASES if c.flows == 1])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=DURATION_S)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--rate-out", type=Path, default=DEFAULT_RATE_OUT)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the kernel's half runs in the emulator: run as root")
    from aqmlab.emu.run import emulate

    case = next(c for c in CASES if c.name == args.case)
    windows, rates = {}, {}
    for cc in CONTROLLERS:
        sc = scenario(case, cc, args.seed, args.duration)
        results = {"simulator (linux profile)": simulate(sc, progress=False), "kernel (emulator)": emulate(sc)}
        windows[cc] = {engine: trajectory(r) for engine, r in results.items()}
        rates[cc] = {engine: trajectory(r, "delivery_rate_bps", 1e6) for engine, r in results.items()}
        for engine in results:
            print(f"{cc:6s} {engine:26s} {summary(*windows[cc][engine])}; {rate_summary(*rates[cc][engine])}")

    about = f"BDP {bdp_kb(case):.0f} kB, buffer {case.buffer_packets()} packets; seed {args.seed}"
    panels(windows, "cwnd (kB)", args.out, f"One flow, {case.name}: {about}", "upper right")
    panels(rates, "delivery rate (Mbit/s)", args.rate_out, f"Delivery rate, {case.name}: {about}", "lower right")
    return 0


def bdp_kb(case) -> float:
    """The case's bandwidth-delay product in kB."""
    return case.rate_mbps * 1e6 / 8 * case.rtt_ms / 1e3 / 1e3


def save_figure(fig, out: Path, title: str, fontsize: float | None = None) -> None:
    """Titles, lays out and writes a figure of these one-flow benches, and says where."""
    fig.suptitle(title, fontsize=fontsize)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"figure: {out}")


if __name__ == "__main__":
    raise SystemExit(main())
