"""Figures from a results directory: the bottleneck queue over time (the form of the Rb-RIO
paper's Figure 4) and per-flow throughput per period."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from aqmlab.outdir import MARKER, OutputRefused, is_aqmlab_output, write_marker
from aqmlab.run import read_results

# Figures are made as matplotlib.figure.Figure objects, not through pyplot: no backend is chosen
# or changed (a notebook keeps its inline backend, a headless run needs no display) and no
# global figure list keeps them alive. Saving a Figure renders PNG with Agg either way.


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=130)
    return path


def plot_queue(queue: pd.DataFrame, title: str, path: Path) -> Path:
    """Instantaneous and average queue length against time, saved to `path`."""
    return _save(queue_figure(queue, title), path)


def queue_figure(queue: pd.DataFrame, title: str) -> Figure:
    """Instantaneous and average queue length against time."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    t = queue["t_ns"] / 1e9
    ax.plot(t, queue["qlen_pkts"], lw=0.6, color="0.55", label="instantaneous queue")
    if queue["avg"].notna().any():
        ax.plot(t, queue["avg"], lw=1.4, color="C3", label="average queue")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("queue (packets)")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def plot_flow_throughput(flow_periods: pd.DataFrame, title: str, path: Path) -> Path:
    """Per-flow throughput at the bottleneck, one panel per measurement period, saved to `path`."""
    return _save(throughput_figure(flow_periods, title), path)


def throughput_figure(flow_periods: pd.DataFrame, title: str) -> Figure:
    """Per-flow throughput at the bottleneck, one panel per measurement period."""
    periods = flow_periods.groupby(["start_s", "end_s"], sort=True)
    fig = Figure(figsize=(3.2 * len(periods) + 1, 3.2))
    axes = fig.subplots(1, len(periods), sharey=True, squeeze=False)
    for ax, ((start, end), df) in zip(axes[0], periods, strict=False):
        for i, (group, g) in enumerate(df.groupby("group_name", sort=False)):
            ax.bar(g["flow"], g["throughput_mbps"], width=0.85, color=f"C{i}", label=group)
        ax.set_title(f"{start:g}-{end:g} s", fontsize=9)
        ax.set_xlabel("flow")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("throughput (Mbit/s)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def flow_figure(samples: pd.DataFrame, packets: pd.DataFrame, title: str) -> Figure:
    """One flow over time: congestion window (and slow-start threshold once set) above, the
    queueing delay of each of its packets leaving the bottleneck below, drops as red marks."""
    fig = Figure(figsize=(7, 4.6))
    top, bottom = fig.subplots(2, 1, sharex=True)
    t = samples["t_ns"] / 1e9
    top.plot(t, samples["cwnd_bytes"] / 1e3, lw=0.9, color="C0", label="cwnd")
    if samples["ssthresh_bytes"].notna().any():
        top.plot(t, samples["ssthresh_bytes"] / 1e3, lw=0.9, ls="--", color="C1", label="ssthresh")
    top.set_ylabel("window (KB)")
    top.set_ylim(0, max(float(samples["cwnd_bytes"].max() / 1e3), 1.0) * 1.3)  # room for the legend
    top.grid(alpha=0.3)
    top.legend(loc="upper right", fontsize=8)
    out = packets[packets["event"] == "dequeue"]
    bottom.plot(out["t_ns"] / 1e9, out["sojourn_ns"] / 1e6, ".", ms=2, color="0.35", label="packet dequeued")
    drops = packets[packets["event"] == "drop"]
    if len(drops):
        bottom.plot(drops["t_ns"] / 1e9, [0.0] * len(drops), "|", ms=8, color="C3", label="packet dropped")
    bottom.set_xlabel("time (s)")
    bottom.set_ylabel("queueing delay (ms)")
    bottom.set_ylim(-0.05 * (top_ms := max(float(out["sojourn_ns"].max() / 1e6) if len(out) else 0.0, 1.0)),
                    top_ms * 1.35)
    bottom.grid(alpha=0.3)
    bottom.legend(loc="upper right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_results(out_dir: Path, dest: Path | None = None) -> list[Path]:
    """Draws every figure of a results directory into `dest` (default: the directory itself)."""
    out_dir = Path(out_dir)
    if not (out_dir / "summary.json").exists():
        raise FileNotFoundError(f"{out_dir} is not an aqmlab results directory (no summary.json)")
    dest = Path(dest) if dest else out_dir
    tables = read_results(out_dir)
    names = ["queue.png"] + (["flow_throughput.png"] if "flow_periods" in tables else [])
    _check_plot_dest(dest, names)
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    if created:
        write_marker(dest)  # ours: a later plot may replace its figures
    name = out_dir.name
    made = [plot_queue(tables["queue"], f"{name}: bottleneck queue", dest / "queue.png")]
    if "flow_periods" in tables:
        made.append(plot_flow_throughput(tables["flow_periods"], f"{name}: per-flow throughput",
                                         dest / "flow_throughput.png"))
    return made


def _check_plot_dest(dest: Path, names: list[str]) -> None:
    """Raises OutputRefused (one line) when drawing into `dest` would replace a file aqmlab did
    not write: `dest` is a file or a link, or a directory that aqmlab did not write holds a file
    of one of the figures' names."""
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise OutputRefused(f"--out {dest} is {'a symbolic link' if dest.is_symlink() else 'a file'}; --out takes "
                            f"a directory to draw {' and '.join(names)} into: choose a directory")
    if not dest.is_dir() or is_aqmlab_output(dest):
        return
    taken = [n for n in names if (dest / n).exists() or (dest / n).is_symlink()]
    if taken:
        raise OutputRefused(f"--out {dest} holds {', '.join(taken)}, which aqmlab did not write (no {MARKER} file "
                            "there); aqmlab will not replace it: choose another directory")


def plot_psnr(quality: pd.DataFrame, title: str, path: Path, max_flows: int = 8) -> Path:
    """PSNR of every shown picture over time, one line per flow (the first `max_flows`), with
    the loss-free encoding's PSNR as the grey reference."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    for i, (flow, f) in enumerate(quality.groupby("flow", sort=True)):
        if i >= max_flows:
            break
        t = f["t_ns"] / 1e9
        if i == 0:
            ax.plot(t, f["clean_psnr_db"], lw=0.6, color="0.6", label="no loss")
        ax.plot(t, f["psnr_db"], lw=0.8, color=f"C{i % 10}", label=f"flow {flow}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("PSNR (dB)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=7, ncol=3)
    fig.tight_layout()
    return _save(fig, path)
