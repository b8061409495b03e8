"""Figures 4, 6, 7 and 8 of the Rb-RIO paper, in the paper's form, from the measurements of
`aqmlab.reproduce.rb_rio` (first seed for the time series, all seeds for the bars)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from aqmlab.reproduce.rb_rio import DISPLAY, PERIODS_S, mean_of  # noqa: E402
from aqmlab.stats import mean_ci  # noqa: E402


def _first(results, experiment, d, key):
    return next((r[key] for r in results if r["experiment"] == experiment and r["discipline"] == d and key in r), None)


def fig4(results, discs, path: Path) -> None:
    """Queue statistics under RED (top) and Rb-RIO (bottom) with the TCP flows."""
    shown = [d for d in ("red", "rb-rio", "rb-red", "rio") if d in discs]
    fig = Figure(figsize=(7, 2.4 * len(shown)))
    axes = fig.subplots(len(shown), 1, sharex=True, squeeze=False)
    for ax, d in zip(axes[:, 0], shown, strict=False):
        q = _first(results, "tcp", d, "queue")
        if q is None:
            continue
        ax.plot(q["t_s"], q["qlen"], lw=0.5, color="0.6", label="instantaneous")
        ax.plot(q["t_s"], q["avg"], lw=1.3, color="C3", label="average")
        ax.set_ylim(0, 105)
        ax.set_ylabel("queue (pkts)")
        ax.set_title(DISPLAY[d], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle("Figure 4: queue statistics with 60 TCP flows")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def _jain_panel(ax, results, experiment, discs) -> None:
    x = np.arange(len(PERIODS_S))
    width = 0.8 / len(discs)
    for i, d in enumerate(discs):
        vals = [mean_ci([p["jain"] for r in results if r["experiment"] == experiment and r["discipline"] == d
                         for p in r["periods"] if p["start_s"] == a])[0] for a, _ in PERIODS_S]
        ax.bar(x + (i - (len(discs) - 1) / 2) * width, vals, width, label=DISPLAY[d], color=f"C{i}")
    ax.set_xticks(x, [f"{a}-{b} s" for a, b in PERIODS_S])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("Jain's index")
    ax.grid(axis="y", alpha=0.3)


def fig6(results, discs, path: Path) -> None:
    """Average per-flow throughput by class (10-20 s) and Jain's index, MPEG streams."""
    fig = Figure(figsize=(7, 6))
    (top, bottom) = fig.subplots(2, 1)
    labels, x = [], 0
    for d in discs:
        for group in ("responsive", "unresponsive"):
            bottom_acc = 0.0
            for c, color in ((3, "C0"), (2, "C1"), (1, "C2")):
                v = mean_of(results, "mpeg", d, group, 10, f"class{c}_mbps", per_flow=True)
                top.bar(x, v, bottom=bottom_acc, color=color, label=f"class{c}" if x == 0 else None)
                bottom_acc += v
            labels.append(f"{DISPLAY[d]}\n{group[:5]}.")
            x += 1
    top.set_xticks(range(len(labels)), labels, fontsize=7)
    top.set_ylabel("Mbit/s per flow")
    top.legend(fontsize=7)
    top.grid(axis="y", alpha=0.3)
    top.set_title("average per-flow throughput, 10-20 s", fontsize=9)
    _jain_panel(bottom, results, "mpeg", discs)
    bottom.legend(fontsize=7, ncol=len(discs))
    fig.suptitle("Figure 6: MPEG streams")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def fig7(results, discs, path: Path) -> None:
    """Decoded frames of three sampled responsive (0-30 s) and unresponsive (10-20 s) streams."""
    shown = [d for d in ("droptail", "red", "rb-rio") if d in discs]
    fig = Figure(figsize=(7, 6))
    axes = fig.subplots(2, 1)
    for ax, group, span in ((axes[0], "responsive", (0, 30)), (axes[1], "unresponsive", (10, 20))):
        row = 0
        ticks, names = [], []
        for d in shown:
            dec = _first(results, "mpeg", d, "decoded")
            if not dec:
                continue
            for s in dec[group]:
                ax.plot(s["t_s"], np.full(len(s["t_s"]), row), "|", ms=4, color=f"C{shown.index(d)}")
                ticks.append(row)
                names.append(f"{DISPLAY[d]} #{s['flow']}")
                row += 1
        ax.set_yticks(ticks, names, fontsize=7)
        ax.set_xlim(*span)
        ax.set_xlabel("time (s)")
        ax.set_title(f"{group} streams: each mark is a decoded frame", fontsize=9)
    fig.suptitle("Figure 7: user-perceived frames")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def fig8(results, discs, path: Path) -> None:
    """Aggregate throughput of TCP, responsive and unresponsive MPEG per period, and Jain."""
    fig = Figure(figsize=(8, 6))
    (top, bottom) = fig.subplots(2, 1)
    groups = ("tcp", "responsive", "unresponsive")
    x: float = 0
    labels = []
    for a, b in PERIODS_S:
        for d in discs:
            acc = 0.0
            for i, g in enumerate(groups):
                v = mean_of(results, "mixed", d, g, a)
                v = 0.0 if v != v else v
                top.bar(x, v, bottom=acc, color=f"C{i}", label=g if x == 0 else None)
                acc += v
            labels.append(f"{DISPLAY[d]}\n{a}-{b}")
            x += 1
        x += 0.5
    top.set_xticks([i + (i // len(discs)) * 0.5 for i in range(len(labels))], labels, fontsize=6)
    top.set_ylabel("Mbit/s")
    # Beside the bars, not on them: the stacks reach the top of the panel.
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    top.grid(axis="y", alpha=0.3)
    _jain_panel(bottom, results, "mixed", discs)
    bottom.legend(fontsize=7, ncol=len(discs))
    fig.suptitle("Figure 8: aggregate class throughput, TCP and MPEG mix")
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def draw_all(results, discs, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    fig4(results, discs, folder / "fig4.png")
    fig6(results, discs, folder / "fig6.png")
    fig7(results, discs, folder / "fig7.png")
    fig8(results, discs, folder / "fig8.png")
