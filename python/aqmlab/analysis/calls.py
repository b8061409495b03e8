"""A real-time video call across runs: what its viewer sees under each discipline and link,
with confidence over seeds (docs/links.md).

Input: result directories of `aqmlab run` of a scenario with one RTP video flow group (the
call) and TCP groups beside it, each scored by `aqmlab quality DIR --deadline D` (the call
played out D after each frame was due, a late packet counting as lost). Per run:

- `ssim`, `psnr_db`, `freeze_s`: the quality tool's per-flow scores at that deadline (time
  frozen is time the picture did not move, the viewer's stall);
- `late_pct`: the call's packets that arrived but after the deadline, % of those sent;
- `loss_pct`: the call's packets that never arrived, % of those sent;
- `delay_p95_ms`: the 95th percentile of the call's one-way packet delay;
- `tcp_goodput_mbps`: the TCP groups' goodput summed, over the scenario's first period.

The interval of each mean is Student's t 95 % over the seeds (`aqmlab.stats.mean_ci`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.outdir import atomic_write
from aqmlab.stats import (
    MOSTLY_LOST_MARK,
    MOSTLY_LOST_PCT,
    NON_NEGATIVE,
    PERCENT,
    UNIT,
    ci_text,
    error_bar,
    mark_if_mostly_lost,
    mean_ci,
)
from aqmlab.viewer import received_seqs

MEASURES = ("ssim", "psnr_db", "freeze_s", "late_pct", "loss_pct", "delay_p95_ms", "tcp_goodput_mbps")


def call_run(path: Path, video_group: str = "video") -> dict[str, float]:
    """The measures of one scored run (see the module's docstring)."""
    quality = pd.read_csv(path / "quality_flows.csv")
    if "deadline_ms" not in quality:
        raise ValueError(f"{path}: scored without a deadline; run aqmlab quality {path} --deadline 150ms")
    flows = pd.read_parquet(path / "flows.parquet")
    video = flows.loc[flows["group_name"] == video_group, "flow"].tolist()
    if not video:
        raise ValueError(f"{path}: no flow group named {video_group!r}")
    deadline_ns = round(float(quality["deadline_ms"].iloc[0]) * 1e6)
    media = pd.read_parquet(path / "media.parquet")
    media = media[media["flow"].isin(video)]
    frames = pd.read_parquet(path / "media_frames.parquet")
    frames = frames[frames["flow"].isin(video)].sort_values(["flow", "frame_id"])
    sent = int(flows.loc[flows["flow"].isin(video), "packets_sent"].sum())
    # Late: received, but not in time for the quality tool's playout (the same rule it scored by).
    late = 0
    for flow, f in frames.groupby("flow"):
        m = media[media["flow"] == flow]
        on_time = received_seqs(m, f["first_seq"].to_numpy(np.int64), f["packets"].to_numpy(np.int64),
                                f["t_ns"].to_numpy(np.int64), deadline_ns)
        late += len(m) - len(on_time)
    periods = pd.read_parquet(path / "flow_periods.parquet")
    first_period = periods[periods["start_s"] == periods["start_s"].min()]
    tcp = first_period[first_period["group_name"] != video_group]["goodput_mbps"].sum()
    q = quality[quality["flow"].isin(video)]
    return {
        "ssim": float(q["ssim"].mean()), "psnr_db": float(q["psnr_db"].mean()), "freeze_s": float(q["freeze_s"].mean()),
        "late_pct": 100.0 * late / sent, "loss_pct": 100.0 * (sent - len(media)) / sent,
        "delay_p95_ms": float(np.percentile(media["recv_ns"] - media["sent_ns"], 95)) / 1e6,
        "tcp_goodput_mbps": float(tcp),
    }


def calls(runs: Iterable[tuple[str, str, int, Path]]) -> pd.DataFrame:
    """One row per run: `link`, `discipline`, `seed` and the measures."""
    rows = [{"link": link, "discipline": disc, "seed": seed, **call_run(path)} for link, disc, seed, path in runs]
    if not rows:
        raise ValueError("runs: no result directory given")
    return pd.DataFrame(rows)


def summary(c: pd.DataFrame) -> pd.DataFrame:
    """Per (link, discipline), in the order they first appear: each measure's mean over seeds
    and its 95 % half-width (`<m>_ci`, NaN with one seed), and the number of seeds."""
    out = []
    for (link, disc), g in c.groupby(["link", "discipline"], sort=False):
        row: dict[str, object] = {"link": link, "discipline": disc, "seeds": len(g)}
        for m in MEASURES:
            row[m], row[f"{m}_ci"] = mean_ci(g[m].tolist())
        out.append(row)
    return pd.DataFrame(out)


#: The table's columns: (measure, header, format, the values it can take).
COLUMNS = (("ssim", "SSIM", ".3f", UNIT), ("psnr_db", "PSNR (dB)", ".1f", NON_NEGATIVE),
           ("freeze_s", "frozen (s)", ".1f", NON_NEGATIVE), ("late_pct", "late (%)", ".1f", PERCENT),
           ("loss_pct", "lost (%)", ".1f", PERCENT), ("delay_p95_ms", "delay p95 (ms)", ".0f", NON_NEGATIVE),
           ("tcp_goodput_mbps", "TCP goodput (Mbit/s)", ".2f", NON_NEGATIVE))


#: Under the table when a call's delay cell is marked (`aqmlab.stats.mark_if_mostly_lost`).
MOSTLY_LOST_NOTE = (f"{MOSTLY_LOST_MARK} the call lost more than {MOSTLY_LOST_PCT:.0f} % of its packets in at least "
                    "one seed: its delay p95 there is that of the few packets that arrived.")


def markdown(c: pd.DataFrame) -> str:
    """Per (link, discipline) of the per-run rows `c`, docs/links.md's table: mean ± 95 %
    half-width over seeds, an interval that leaves the measure's range cut and marked
    (`aqmlab.stats.ci_text`), a delay over a call that lost most of its packets marked and the
    mark explained under the table."""
    head = ("| link | discipline | " + " | ".join(h for _, h, _, _ in COLUMNS) + " |\n"
            + "| --- " * (2 + len(COLUMNS)) + "|\n")
    rows, marked = [], False
    for (link, disc), g in c.groupby(["link", "discipline"], sort=False):
        cells = []
        for m, _, fmt, bounds in COLUMNS:
            cell = ci_text(g[m].tolist(), fmt, bounds)
            if m == "delay_p95_ms":
                cell = mark_if_mostly_lost(cell, g["loss_pct"].tolist())
                marked = marked or cell.endswith(MOSTLY_LOST_MARK)
            cells.append(cell)
        rows.append(f"| {link} | {disc} | " + " | ".join(cells) + " |")
    return head + "\n".join(rows) + "\n" + (f"\n{MOSTLY_LOST_NOTE}\n" if marked else "")


def figure(s: pd.DataFrame, path: Path, deadline_ms: float) -> None:
    """Two panels, one per link: the call's SSIM against its one-way delay p95, one point per
    discipline with its 95 % intervals, the deadline as a vertical line (`draw`), saved to `path`."""
    fig = draw(s, deadline_ms)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=120))


def draw(s: pd.DataFrame, deadline_ms: float) -> Any:
    """The matplotlib Figure of `figure`."""
    import matplotlib.ticker  # noqa: PLC0415 - plotting only when a figure is asked for
    from matplotlib.figure import Figure  # noqa: PLC0415

    links = list(dict.fromkeys(s["link"]))
    # A Figure, not pyplot: no backend is chosen or changed (as aqmlab.plots draws).
    fig = Figure(figsize=(5.2 * len(links), 4.2))
    axes = fig.subplots(1, len(links), squeeze=False, sharex=True, sharey=True)
    markers = dict(zip(dict.fromkeys(s["discipline"]), "osD^v<>p", strict=False))
    for ax, link in zip(axes[0], links, strict=True):
        for r in s[s["link"] == link].itertuples():
            # The bars stop where the table's intervals are cut: SSIM at 1, a delay at 0.
            xerr = np.array(error_bar(r.delay_p95_ms, r.delay_p95_ms_ci, NON_NEGATIVE)).reshape(2, 1)
            yerr = np.array(error_bar(r.ssim, r.ssim_ci, UNIT)).reshape(2, 1)
            ax.errorbar(r.delay_p95_ms, r.ssim, xerr=xerr, yerr=yerr, marker=markers[r.discipline], linestyle="none",
                        capsize=3, label=r.discipline)
        ax.axvline(deadline_ms, color="grey", linestyle=":", linewidth=1)
        ax.text(deadline_ms, 1.0, " deadline", transform=ax.get_xaxis_transform(), va="top", fontsize="small",
                color="grey")
        ax.set_xscale("log")
        ax.set_xticks([10, 20, 50, 100, 200, 500, 1000, 2000])
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(link)
        ax.set_xlabel("call's one-way delay, 95th percentile (ms, log)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel(f"call's SSIM, played {deadline_ms:g} ms after due")
    axes[0][-1].legend(title="discipline", loc="lower left", fontsize="small")
    fig.tight_layout()
    return fig


def main(argv: list[str] | None = None) -> None:
    """python -m aqmlab.analysis.calls RUNS_DIR TABLE.md FIGURE.png: the table and figure of
    docs/links.md from run directories named <link>-call-<discipline>-<seed>."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3:
        raise SystemExit("usage: python -m aqmlab.analysis.calls RUNS_DIR TABLE.md FIGURE.png")
    runs_dir, table, fig = (Path(a) for a in args)
    names = {"fifo": "FIFO", "codel": "CoDel", "fq-codel": "FQ-CoDel", "pie": "PIE", "sqf": "SQF", "cake": "CAKE",
             "dualpi2": "DualPI2"}
    runs = []
    for d in sorted(runs_dir.iterdir()):
        link, _, rest = d.name.partition("-call-")
        disc, _, seed = rest.rpartition("-")
        if d.is_dir() and disc in names and seed.isdigit():
            runs.append((link, disc, int(seed), d))
    order = list(names)
    runs.sort(key=lambda r: (r[0], order.index(r[1]), r[2]))
    c = calls((link, names[disc], seed, d) for link, disc, seed, d in runs)
    s = summary(c)
    deadline = float(pd.read_csv(runs[0][3] / "quality_flows.csv")["deadline_ms"].iloc[0])
    table.write_text(markdown(c))
    figure(s, fig, deadline)
    print(json.dumps({"runs": len(runs), "table": str(table), "figure": str(fig)}))


if __name__ == "__main__":
    main()
