"""Receiver-side video accounting: which frames were received and which could be decoded.

A frame is *received* when all of its packets arrived. It is *decodable* when it is received
and every frame it references is decodable (display order, MPEG-1):

* I: alone;
* P: the previous anchor (I or P) of the chain;
* B: the anchor before it and the anchor after it.

A B frame at the end of a stream whose next anchor was never produced is not decodable.
Frame loss and decodable-frame loss are relative to the frames the sender actually sent
(frames a responsive sender skipped are neither sent nor lost), as in the Rb-RIO paper's
Tables 1 and 2.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

FRAME_I, FRAME_P, FRAME_B = 1, 2, 3  # aqmlab_core::FrameType as u8 (0 = none)


def decodable(frame_type: np.ndarray, received: np.ndarray) -> np.ndarray:
    """Decodability of one stream's frames, given in display order (frame id order)."""
    n = len(frame_type)
    dec = np.zeros(n, dtype=bool)
    anchors = np.flatnonzero(frame_type != FRAME_B)
    prev_ok = False  # is the previous anchor decodable?
    for k, i in enumerate(anchors):
        if frame_type[i] == FRAME_I:
            dec[i] = received[i]
        else:
            dec[i] = received[i] and k > 0 and prev_ok
        prev_ok = bool(dec[i])
    # B frames: anchor before and after (searchsorted over anchor positions).
    bs = np.flatnonzero(frame_type == FRAME_B)
    if bs.size:
        after = np.searchsorted(anchors, bs)  # index into anchors of the next anchor
        has_before = after > 0
        has_after = after < anchors.size
        before_ok = np.zeros(bs.size, dtype=bool)
        after_ok = np.zeros(bs.size, dtype=bool)
        before_ok[has_before] = dec[anchors[after[has_before] - 1]]
        after_ok[has_after] = dec[anchors[after[has_after]]]
        dec[bs] = received[bs] & before_ok & after_ok
    return dec


def annotate_frames(frames: pd.DataFrame) -> pd.DataFrame:
    """Adds `received` and `decodable` columns to a frames table (any number of streams)."""
    frames = frames.sort_values(["flow", "frame_id"], kind="stable").reset_index(drop=True)
    sent = frames["sent"].to_numpy().astype(bool)
    received = sent & (frames["packets_received"].to_numpy() >= frames["packets"].to_numpy()) & (
        frames["packets"].to_numpy() > 0)
    dec = np.zeros(len(frames), dtype=bool)
    ftype = frames["frame_type"].to_numpy()
    for _, idx in frames.groupby("flow", sort=False).indices.items():
        dec[idx] = decodable(ftype[idx], received[idx])
    return frames.assign(received=received, decodable=dec)


def stream_stats(frames: pd.DataFrame, flows: Sequence[int], start_ns: int, end_ns: int) -> dict[str, float]:
    """Aggregate statistics of a set of streams over frames sent in [start, end)."""
    f = frames[frames["flow"].isin(flows) & (frames["t_ns"] >= start_ns) & (frames["t_ns"] < end_ns)]
    sent = f[f["sent"] == 1]
    n_sent = len(sent)
    pkts = int(sent["packets"].sum())
    pkts_rx = int(sent["packets_received"].sum())
    n_rx = int(sent["received"].sum())
    n_dec = int(sent["decodable"].sum())

    def pct_lost(ok: int, total: int) -> float:
        return 100.0 * (1 - ok / total) if total else float("nan")

    return {
        "frames_produced": len(f),
        "frames_sent": n_sent,
        "frames_received": n_rx,
        "frames_decodable": n_dec,
        "packets_sent": pkts,
        "packets_received": pkts_rx,
        "packet_loss_pct": pct_lost(pkts_rx, pkts),
        "frame_loss_pct": pct_lost(n_rx, n_sent),
        "decodable_loss_pct": pct_lost(n_dec, n_sent),
    }


def decoded_sequence(frames: pd.DataFrame, flow: int) -> pd.DataFrame:
    """The decodable frames of one stream: frame number and time (the paper's Figure 7)."""
    f = frames[(frames["flow"] == flow) & frames["decodable"]]
    return f[["frame_id", "t_ns", "frame_type"]].reset_index(drop=True)
