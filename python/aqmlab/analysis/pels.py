"""Measurements of PELS simulation runs (Kang, Zhang, Dai and Loguinov, ICDCS 2004, section 6).

They read the three PELS tables a run writes (see aqmlab-sim's ``src/sim/apps/pels.rs``):

* ``pels_frames``: one row per frame sent: send time ``t_ns``, the rate and gamma it was cut
  with, packets sent per colour (``green``, ``yellow``, ``red``) and received per colour,
  ``useful`` (enhancement packets received from the bottom of the frame before the first loss)
  and ``utility`` (eq. 3: useful / enhancement packets received).
* ``pels_control``: one row per fresh feedback a source acted on: the label (router id, epoch,
  loss p) and the rate and gamma it set.
* ``pels_packets``: one row per video packet received: colour (3 green, 2 yellow, 1 red), send
  and receive times.

Windows are half-open ``[start_s, end_s)`` in seconds of send time.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLOURS = {3: "green", 2: "yellow", 1: "red"}


def _window(df: pd.DataFrame, start_s: float, end_s: float, column: str = "t_ns") -> pd.DataFrame:
    return df[(df[column] >= start_s * 1e9) & (df[column] < end_s * 1e9)]


def colour_losses(frames: pd.DataFrame, start_s: float = 0.0, end_s: float = np.inf) -> dict[str, float]:
    """Loss rate of green, yellow and red packets, of the enhancement layer and of all PELS
    packets, over the frames sent in the window (NaN for a colour that was never sent)."""
    w = _window(frames, start_s, end_s)

    def loss(sent: float, received: float) -> float:
        return float(1.0 - received / sent) if sent > 0 else float("nan")

    s = w[["green", "yellow", "red", "green_received", "yellow_received", "red_received"]].sum()
    enh, enh_rx = s.yellow + s.red, s.yellow_received + s.red_received
    return {
        "green": loss(s.green, s.green_received),
        "yellow": loss(s.yellow, s.yellow_received),
        "red": loss(s.red, s.red_received),
        "enhancement": loss(enh, enh_rx),
        "all": loss(enh + s.green, enh_rx + s.green_received),
    }


def colour_delays(packets: pd.DataFrame, start_s: float = 0.0, end_s: float = np.inf) -> dict[str, float]:
    """Mean one-way delay (ms) of received green, yellow and red packets sent in the window."""
    w = _window(packets, start_s, end_s, "sent_ns")
    ms = (w["recv_ns"] - w["sent_ns"]) / 1e6
    means = ms.groupby(w["class"]).mean()
    return {name: float(means.get(c, np.nan)) for c, name in COLOURS.items()}


def delay_series(packets: pd.DataFrame, bin_s: float = 1.0) -> pd.DataFrame:
    """Mean one-way delay (ms) per colour in bins of send time (Figures 8 and 9 left). Columns:
    t_s (bin start), colour, delay_ms."""
    t = (packets["sent_ns"] / 1e9 // bin_s) * bin_s
    ms = (packets["recv_ns"] - packets["sent_ns"]) / 1e6
    df = pd.DataFrame({"t_s": t, "class": packets["class"], "delay_ms": ms})
    out = df.groupby(["t_s", "class"], as_index=False)["delay_ms"].mean()
    out["colour"] = out["class"].map(COLOURS)
    return out[["t_s", "colour", "delay_ms"]]


def mean_rates(frames: pd.DataFrame, start_s: float, end_s: float) -> pd.Series:
    """Mean sending rate (bits/s) per flow over the window: bytes of the frames sent in it."""
    w = _window(frames, start_s, end_s)
    # Every packet of a PELS stream has the same size; the frame's rate column is the rate it
    # was cut with, whose mean over frames is the sending rate (frames are equally spaced).
    return w.groupby("flow")["rate_bps"].mean()


def rate_series(frames: pd.DataFrame, bin_s: float = 0.5) -> pd.DataFrame:
    """Rate (bits/s) per flow in bins of time (Figure 9 right). Columns: t_s, flow, rate_bps."""
    t = (frames["t_ns"] / 1e9 // bin_s) * bin_s
    df = pd.DataFrame({"t_s": t, "flow": frames["flow"], "rate_bps": frames["rate_bps"]})
    return df.groupby(["t_s", "flow"], as_index=False)["rate_bps"].mean()


def gamma_red_series(frames: pd.DataFrame, bin_s: float = 1.0) -> pd.DataFrame:
    """Mean gamma and red loss in bins of send time over all flows (Figure 7). Columns: t_s,
    gamma, red_loss (NaN in bins without red packets), enhancement_loss."""
    t = (frames["t_ns"] / 1e9 // bin_s) * bin_s
    g = frames.assign(t_s=t).groupby("t_s")
    s = g[["red", "red_received", "yellow", "yellow_received"]].sum()
    enh = s.red + s.yellow
    return pd.DataFrame({
        "t_s": s.index,
        "gamma": g["gamma"].mean().to_numpy(),
        "red_loss": np.where(s.red > 0, 1 - s.red_received / s.red.where(s.red > 0, 1), np.nan),
        "enhancement_loss": np.where(enh > 0, 1 - (s.red_received + s.yellow_received) / enh.where(enh > 0, 1), np.nan),
    }).reset_index(drop=True)


def controller_summary(control: pd.DataFrame, start_s: float, end_s: float) -> dict[str, float]:
    """Mean router loss p and gamma of the feedback applied in the window."""
    w = _window(control, start_s, end_s)
    return {"loss": float(w["loss"].mean()), "gamma": float(w["gamma"].mean()), "steps": int(len(w))}


def epochs_applied_once(control: pd.DataFrame) -> bool:
    """Whether every source acted on each router epoch at most once, in increasing order."""
    for _, g in control.groupby(["flow", "router_id"]):
        if not (np.diff(g["epoch"].to_numpy().astype(np.int64)) > 0).all():
            return False
    return True
