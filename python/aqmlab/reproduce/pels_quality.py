"""Section 6.5 and Figure 10 of the PELS paper with the rate-quality substitution of
:mod:`aqmlab.quality`: per-frame PSNR of PELS and of best-effort streaming (the same MKC flows,
base layer protected, random loss in the enhancement layer) at the two loss levels, and the
mean improvement over the base layer."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from aqmlab import quality
from aqmlab.analysis import pels as pa
from aqmlab.reproduce.pels import STEADY_FROM_S, measured_end

#: (PELS run, best-effort run, published best-effort and PELS improvements over the base layer).
PAIRS = (("gamma-7", "best-effort-7", "10 %", 0.24, 0.60), ("gamma-14", "best-effort-14", "19 %", 0.16, 0.55))


def _steady(frames: pd.DataFrame, end_s: float) -> pd.DataFrame:
    return frames[(frames["t_ns"] >= STEADY_FROM_S * 1e9) & (frames["t_ns"] < end_s * 1e9)]


def quality_of(run: dict[str, pd.DataFrame], curve: pd.DataFrame) -> pd.DataFrame:
    app = run["pels_app"].iloc[0]
    end = measured_end(run)
    return quality.frame_quality(_steady(run["pels_frames"], end), curve, int(app["payload_bytes"]), float(app["fps"]))


def quality_table(runs: dict, curve: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    rows, per_frame = [], {}
    for pels_run, be_run, published_loss, pub_be, pub_pels in PAIRS:
        for name, scheme, pub in ((be_run, "best effort", pub_be), (pels_run, "PELS", pub_pels)):
            q = quality_of(runs[name], curve)
            per_frame[name] = q
            end = measured_end(runs[name])
            losses = pa.colour_losses(runs[name]["pels_frames"], STEADY_FROM_S, end)
            rows.append({
                "paper loss": published_loss, "scheme": scheme, "run": name,
                "our loss (all PELS) %": round(losses["all"] * 100, 2),
                "our enhancement loss %": round(losses["enhancement"] * 100, 2),
                "base PSNR (dB)": round(q["base_psnr_db"].mean(), 2),
                "PSNR (dB)": round(q["psnr_db"].mean(), 2),
                "PSNR s.d. (dB)": round(q["psnr_db"].std(), 2),
                "published improvement %": round(pub * 100),
                "our improvement %": round(quality.improvement_over_base(q) * 100, 1),
                "undecodable frames": int(q["psnr_db"].isna().sum()),
            })
    return pd.DataFrame(rows), per_frame


def figure10(per_frame: dict[str, pd.DataFrame], path: Path) -> pd.DataFrame:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2, sharey=True)
    data = []
    for ax, (pels_run, be_run, published_loss, _, _) in zip(axes, PAIRS, strict=False):
        for name, label, colour in ((pels_run, "PELS", "C0"), (be_run, "best effort", "C3")):
            q = per_frame[name]
            first = q[q["flow"] == q["flow"].min()].head(300)
            n = range(len(first))
            ax.plot(n, first["psnr_db"], color=colour, lw=0.9, label=label)
            data.append(first.assign(run=name)[["run", "flow", "frame_id", "base_psnr_db", "psnr_db"]])
        ax.plot(n, first["base_psnr_db"], color="0.4", ls=":", lw=1, label="base layer")
        ax.set_title(f"paper: {published_loss} loss ({pels_run} / {be_run})", fontsize=9)
        ax.set_xlabel("frame (first flow, from 10 s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("PSNR (dB), rate-quality substitution")
    fig.suptitle("Figure 10 (form): per-frame PSNR of PELS and best-effort streaming")
    # One legend below both panels: the curves fill each panel from edge to edge.
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=130)
    return pd.concat(data, ignore_index=True)


def reproduce_quality(runs: dict, out_dir: Path, quick: bool = False) -> dict[str, pd.DataFrame]:
    """Measures the rate-quality curve (1 s of video with --quick, 3 s otherwise), writes
    figures/fig10.png, data/quality_curve.csv and data/fig10.csv; returns the quality table."""
    fps = float(runs[PAIRS[0][0]]["pels_app"]["fps"].iloc[0])
    curve = quality.rate_quality_curve(fps=fps, seconds=1.0 if quick else 3.0)
    table, per_frame = quality_table(runs, curve)
    fig = figure10(per_frame, out_dir / "figures" / "fig10.png")
    curve.to_csv(out_dir / "data" / "quality_curve.csv", index=False)
    fig.to_csv(out_dir / "data" / "fig10.csv", index=False)
    return {"quality": table, "quality_curve": curve}
