"""Figures 2-4 and 7-21 of the head-to-head paper, in the paper's form, from the measurements of
`aqmlab.reproduce.head_to_head` and the population summary of `aqmlab.analysis.head_to_head`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from aqmlab.analysis.head_to_head import empirical_cdf  # noqa: E402
from aqmlab.reproduce.head_to_head_model import Clip  # noqa: E402

STYLE = {"udp": dict(color="C3", ls="-"), "tcp": dict(color="C0", ls="--")}


def _save(fig, path: Path, title: str) -> None:
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _cdf(ax, values, **kw) -> None:
    x, p = empirical_cdf(values)
    x = x[np.isfinite(x)]
    if x.size:
        ax.step(x, p[:x.size], where="post", **kw)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("CDF")
    ax.grid(alpha=0.3)


def _per_bottleneck(pop: dict[str, Any]):
    """(bottleneck kbps, group summary), 600 first as in the paper's panels."""
    return [(int(bw) // 1000, g) for bw, g in sorted(pop["by_bottleneck"].items(), reverse=True)]


def _grid(n: int):
    fig = Figure(figsize=(8, 6))
    axes = fig.subplots(2, 2, squeeze=False)
    return fig, axes.ravel()[:n]


def fig02_04(results, clips: list[Clip], folder: Path) -> None:
    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    _cdf(ax, [c.length_s / 60 for c in clips], color="k")
    ax.set_xscale("log")
    ax.set_xlabel("clip length (min)")
    _save(fig, folder / "fig02.png", "Figure 2: clip playout lengths (population)")
    for key, label, name, num in (("rtt_s", "RTT (ms)", "fig03.png", 3), ("loss", "loss (%)", "fig04.png", 4)):
        fig = Figure(figsize=(5, 3.2))
        ax = fig.subplots()
        for i, bw in enumerate(sorted({r["bottleneck_bps"] for r in results if r["kind"] == "pair"}, reverse=True)):
            v = [r["pair"][key] * (1e3 if key == "rtt_s" else 100) for r in results
                 if r["kind"] == "pair" and r["bottleneck_bps"] == bw]
            _cdf(ax, v, color=f"C{i}", label=f"{bw // 1000} Kbps")
        ax.set_xlabel(label)
        ax.legend(fontsize=7)
        _save(fig, folder / name, f"Figure {num}: ping {label.split()[0]} per bottleneck (ours: model pings)")


def fig06(results, folder: Path) -> None:
    """Figure 6's form: one pair's bandwidth over time on a wide (600 Kbps, "FairPlayer") and a
    narrow (75 Kbps, "FoulPlayer") bottleneck."""
    pairs = {r["bottleneck_bps"]: r for r in results if r["kind"] == "pair" and "series" in r}
    panels = [(bw, label) for bw, label in ((600_000, "FairPlayer"), (75_000, "FoulPlayer")) if bw in pairs]
    if not panels:
        return
    fig = Figure(figsize=(6, 2.6 * len(panels)))
    axes = fig.subplots(len(panels), 1, squeeze=False)
    for ax, (bw, label) in zip(axes.ravel(), panels, strict=False):
        r = pairs[bw]
        for name in ("udp", "tcp"):
            y = np.asarray(r["series"][name]) / 1e3
            ax.plot(np.arange(y.size), y, label=name.upper(), **STYLE[name])
        ax.set_title(f"{label}: {bw // 1000} Kbps bottleneck, clip {r['clip']}", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("bandwidth (Kbps)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _save(fig, folder / "fig06.png", "Figure 6: head-to-head UDP versus TCP streaming")


def fig07(pop, folder: Path) -> None:
    fig, axes = _grid(4)
    for ax, (kbps, g) in zip(axes, _per_bottleneck(pop), strict=False):
        for name in ("udp", "tcp"):
            x, p = g["avg_bandwidth_cdf"][name]
            ax.step(x / 1e3, p, where="post", label=name.upper(), **STYLE[name])
        ax.set_title(f"{kbps} Kbps", fontsize=9)
        ax.set_xlabel("average bandwidth (Kbps)")
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    _save(fig, folder / "fig07.png", "Figure 7: CDFs of average bandwidth")


def fig08(pop, folder: Path) -> None:
    fig = Figure(figsize=(5, 5))
    ax = fig.subplots()
    top = 0.0
    for i, (kbps, g) in enumerate(_per_bottleneck(pop)):
        s = g["scatter"]
        ax.scatter(s["tcp_avg_bps"] / 1e3, s["udp_avg_bps"] / 1e3, s=12, color=f"C{i}", label=f"{kbps} Kbps")
        top = max(top, float(s.to_numpy().max()) / 1e3)
    ax.plot([0, top], [0, top], "k--", lw=0.8)
    ax.set_xlabel("TCP average bandwidth (Kbps)")
    ax.set_ylabel("UDP average bandwidth (Kbps)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save(fig, folder / "fig08.png", "Figure 8: head-to-head average bandwidth")


def fig09(pop, folder: Path) -> None:
    fig = Figure(figsize=(5.5, 3.5))
    ax = fig.subplots()
    for i, (kbps, g) in enumerate(_per_bottleneck(pop)):
        x, p = g["normalized_difference_cdf"]
        ax.step(x, p, where="post", color=f"C{i}", label=f"{kbps} Kbps")
    ax.axvline(0, color="k", lw=0.6)
    ax.set_xlim(-1, 1)
    ax.set_xlabel("(TCP - UDP) / bottleneck")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save(fig, folder / "fig09.png", "Figure 9: normalized head-to-head difference")


def _diff_panel(ax, df, xkey, fit, scale, xlabel) -> None:
    x = df[xkey].to_numpy() * scale
    y = df["difference_bps"].to_numpy() / 1e3
    ax.scatter(x, y, s=10, color="0.3")
    if fit is not None and np.isfinite(x).any():
        xs = np.linspace(np.nanmin(x), np.nanmax(x), 2)
        ax.plot(xs, (fit.slope * xs / scale + fit.intercept) / 1e3, "C3", lw=1)
        ax.text(0.02, 0.92, f"r = {fit.r:.2f}", transform=ax.transAxes, fontsize=8)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("TCP - UDP (Kbps)")
    ax.grid(alpha=0.3)


def fig10_13(pop, folder: Path) -> None:
    for key, fitkey, scale, xlabel, n_all, n_per in (
            ("difference_vs_rtt", "fit_difference_vs_rtt", 1e3, "RTT (ms)", 10, 11),
            ("difference_vs_loss", "fit_difference_vs_loss", 100, "loss (%)", 12, 13)):
        xkey = "rtt_s" if "rtt" in key else "loss"
        fig = Figure(figsize=(5, 3.5))
        ax = fig.subplots()
        _diff_panel(ax, pop["all"][key], xkey, pop["all"][fitkey], scale, xlabel)
        _save(fig, folder / f"fig{n_all}.png", f"Figure {n_all}: (TCP - UDP) vs {xlabel.split()[0]}, all bottlenecks")
        fig, axes = _grid(4)
        for ax, (kbps, g) in zip(axes, _per_bottleneck(pop), strict=False):
            _diff_panel(ax, g[key], xkey, g[fitkey], scale, xlabel)
            ax.set_title(f"{kbps} Kbps", fontsize=9)
        _save(fig, folder / f"fig{n_per}.png", f"Figure {n_per}: (TCP - UDP) vs {xlabel.split()[0]} per bottleneck")


def fig14_15(pop, results, folder: Path) -> None:
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    b = pop["all"]["buffering"]
    for name in ("udp", "tcp"):
        d = b[b["transport"] == name]
        ax.scatter(d["steady_bps"] / 1e3, d["ratio"], s=10, color=STYLE[name]["color"], label=name.upper())
    ax.axhline(1, color="k", lw=0.6)
    ax.set_xlabel("steady playout rate (Kbps)")
    ax.set_ylabel("buffering / steady rate")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    _save(fig, folder / "fig14.png", "Figure 14: buffering rate ratio vs steady rate (DSL-TBF)")
    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    lan = [r["pair"] for r in results if r["kind"] == "lan"]
    for name in ("udp", "tcp"):
        _cdf(ax, [p[f"{name}_buffering_ratio"] for p in lan], label=name.upper(), **STYLE[name])
    ax.set_xlabel("buffering / steady rate")
    ax.legend(fontsize=7)
    _save(fig, folder / "fig15.png", "Figure 15: buffering rate ratio, LAN (15 Mbit/s)")


def fig16_17(clips: list[Clip], folder: Path) -> None:
    fig = Figure(figsize=(5, 3.2))
    ax = fig.subplots()
    _cdf(ax, [len(c.levels_bps) for c in clips], color="k")
    ax.set_xlabel("number of levels")
    _save(fig, folder / "fig16.png", "Figure 16: media scale levels per clip")
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    order = sorted(clips, key=lambda c: (len(c.levels_bps), c.levels_bps[0]))
    for i, c in enumerate(order):
        ax.scatter([i] * len(c.levels_bps), np.array(c.levels_bps) / 1e3, s=6, color="k")
    ax.set_xlabel("clip (sorted by levels, then lowest rate)")
    ax.set_ylabel("encoded rate (Kbps)")
    ax.grid(alpha=0.3)
    _save(fig, folder / "fig17.png", "Figure 17: scale levels and encoded bandwidths")


def fig18_20(results, clips: list[Clip], folder: Path) -> None:
    sc = {t: {r["clip"]: r for r in results if r["kind"] == "scaling" and r["transport"] == t} for t in ("udp", "tcp")}
    if not sc["udp"]:
        return
    many = sorted(clips, key=lambda c: -len(c.levels_bps))[:2]
    fig = Figure(figsize=(6, 2.6 * len(many)))
    axes = fig.subplots(len(many), 1, squeeze=False)
    for ax, c in zip(axes[:, 0], many, strict=False):
        for name in ("udp", "tcp"):
            tr = sc[name][c.clip_id]["level_trace"]
            ax.step(tr["t_s"], np.array(tr["rate_bps"]) / 1e3, where="post", label=name.upper(), **STYLE[name])
        ax.axhline(35, color="k", lw=0.6)
        ax.set_ylabel("encoded rate (Kbps)")
        ax.set_title(f"clip {c.clip_id}: {len(c.levels_bps)} levels", fontsize=9)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=7)
    axes[-1, 0].set_xlabel("time (s)")
    _save(fig, folder / "fig18.png", "Figure 18: media scaling at 35 Kbps")
    for key, xlabel, name, num in (("scale_changes", "scale changes", "fig19.png", 19),
                                   ("time_to_adapt_s", "time to adapt below 35 Kbps (s)", "fig20.png", 20)):
        fig = Figure(figsize=(5, 3.2))
        ax = fig.subplots()
        for t in ("udp", "tcp"):
            _cdf(ax, [r[key] for r in sc[t].values()], label=t.upper(), **STYLE[t])
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=7)
        _save(fig, folder / name, f"Figure {num}: {xlabel} (35 Kbps, 5 KB queue)")


def fig21(pop, folder: Path) -> None:
    fig, axes = _grid(4)
    for ax, (kbps, g) in zip(axes, _per_bottleneck(pop), strict=False):
        for name in ("udp", "tcp"):
            x, p = g["smoothness"][name]["cdf"]
            ax.step(x, p, where="post", label=name.upper(), **STYLE[name])
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(0, 10)
        ax.set_title(f"{kbps} Kbps", fontsize=9)
        ax.set_xlabel("ratio of consecutive 500 ms rates")
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    _save(fig, folder / "fig21.png", "Figure 21: smoothness")


def draw_all(results: list[dict], pop: dict[str, Any], clips: list[Clip], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    fig02_04(results, clips, folder)
    fig06(results, folder)
    fig07(pop, folder)
    fig08(pop, folder)
    fig09(pop, folder)
    fig10_13(pop, folder)
    fig14_15(pop, results, folder)
    fig16_17(clips, folder)
    fig18_20(results, clips, folder)
    fig21(pop, folder)
