"""ABR clients across runs: per-(discipline, algorithm) quality of experience with confidence
over seeds, and the Puffer-style figure of SSIM against stall ratio (Yan et al., NSDI 2020,
Figure 1 plots time-weighted SSIM against the share of time stalled, one point per scheme).

Input: result directories of `aqmlab run` holding `abr_sessions.parquet` and `flows.parquet`
(docs/video.md), each labelled by the discipline it ran and its seed. A group of clients is
named by its flow group (`flows.group_name`); the statistic of a seed is the mean over that
group's clients, and the interval is Student's t 95 % over the seeds (none with one seed).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

#: Two-sided 97.5 % quantiles of Student's t by degrees of freedom (1..10), for 95 % intervals.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
MEASURES = ("bitrate_bps", "ssim_db", "stall_ratio", "startup_ns", "switches", "qoe_lin")


def sessions(runs: Iterable[tuple[str, int, Path]]) -> pd.DataFrame:
    """Every client's `abr_sessions` row with `discipline`, `seed` and `group` (its flow group)."""
    frames = []
    for discipline, seed, path in runs:
        s = pd.read_parquet(path / "abr_sessions.parquet")
        groups = pd.read_parquet(path / "flows.parquet")[["flow", "group_name"]]
        s = s.merge(groups, on="flow").rename(columns={"group_name": "group"})
        frames.append(s.assign(discipline=discipline, seed=seed))
    if not frames:
        raise ValueError("runs: no result directory given")
    return pd.concat(frames, ignore_index=True)


def summary(s: pd.DataFrame) -> pd.DataFrame:
    """Per (discipline, group): each measure's mean over seeds (`<m>`) and 95 % half-width
    (`<m>_ci`, NaN with one seed), and the number of seeds."""
    per_seed = s.groupby(["discipline", "group", "seed"])[list(MEASURES)].mean()
    grouped = per_seed.groupby(["discipline", "group"])
    n = grouped.size()
    out = grouped.mean()
    t = n.map(lambda k: _T975[min(k, len(_T975) + 1) - 2] if k >= 2 else np.nan)
    for m in MEASURES:
        out[f"{m}_ci"] = grouped[m].std() * t / np.sqrt(n)
    out["seeds"] = n
    return out


def ssim_stall_figure(table: pd.DataFrame, path: Path) -> None:
    """SSIM (dB) against stall ratio (%), one point per discipline and algorithm with its 95 %
    intervals; the x axis inverted so that better is up and right, as in Puffer's figure."""
    from matplotlib.figure import Figure  # noqa: PLC0415 - plotting only when a figure is asked for

    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.subplots()
    markers = "os^Dv<>p"
    groups = sorted(table.index.get_level_values("group").unique())
    disciplines = sorted(table.index.get_level_values("discipline").unique())
    for (d, g), row in table.iterrows():
        color = f"C{disciplines.index(d)}"
        ax.errorbar(row["stall_ratio"] * 100, row["ssim_db"], xerr=row["stall_ratio_ci"] * 100,
                    yerr=row["ssim_db_ci"], fmt=markers[groups.index(g) % len(markers)], color=color,
                    capsize=3, markersize=7, label=f"{d}, {g}")
    # A stall ratio is never negative: the symmetric t interval is cut at the axis, just past 0.
    left = max(0.5, float((table["stall_ratio"] + table["stall_ratio_ci"].fillna(0)).max() * 100) * 1.05)
    ax.set_xlim(left, -0.1 * left)
    ax.set_xlabel("time stalled (%)  (better to the right)")
    ax.set_ylabel("time-weighted SSIM (dB)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
