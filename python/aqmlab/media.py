"""Per-flow quality of RTP-like media streams from the receiver log (`media.parquet`).

* loss: 1 - received / expected with expected = highest - lowest sequence number + 1 (RFC 3550
  section 6.4.1), so packets still in flight when a run ends are not counted as lost; the
  same definition applies to a packet capture;
* one-way delay: receive time - send time;
* IPDV after RFC 3393: the difference of the one-way delays of consecutive packets (by
  sequence number, both received); we report the mean and the 99th percentile of |IPDV|;
* interarrival jitter after RFC 3550 section 6.4.1 / A.8: J += (|D(i-1, i)| - J) / 16 over
  packets in arrival order, with D the difference of transit times; we report its mean.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def rfc3550_jitter(transit_in_arrival_order: np.ndarray) -> np.ndarray:
    """The running interarrival jitter J after each packet (same unit as the transit times)."""
    d = np.abs(np.diff(transit_in_arrival_order))
    j = np.zeros(len(d))
    acc = 0.0
    for i, x in enumerate(d):
        acc += (x - acc) / 16.0
        j[i] = acc
    return j


def ipdv(seq: np.ndarray, owd: np.ndarray) -> np.ndarray:
    """RFC 3393 IPDV of consecutive sequence numbers that were both received."""
    order = np.argsort(seq, kind="stable")
    s, d = seq[order], owd[order]
    consecutive = np.diff(s) == 1
    return np.diff(d)[consecutive]


def flow_quality(media: pd.DataFrame, start_ns: int = 0, end_ns: int | None = None) -> pd.DataFrame:
    """One row per media flow: sent, received, loss %, delay and jitter statistics (ms).
    With a period, packets are selected by send time."""
    rows = []
    media_flows = sorted(media["flow"].unique()) if len(media) else []
    for f in media_flows:
        m = media[(media["flow"] == f) & (media["sent_ns"] >= start_ns)]
        if end_ns is not None:
            m = m[m["sent_ns"] < end_ns]
        owd = (m["recv_ns"].to_numpy(dtype=float) - m["sent_ns"].to_numpy(dtype=float)) / 1e6
        seq = m["seq"].to_numpy()
        expected = int(seq.max() - seq.min() + 1) if len(seq) else 0
        arrival = np.argsort(m["recv_ns"].to_numpy(), kind="stable")
        j = rfc3550_jitter(owd[arrival]) if len(owd) > 1 else np.array([np.nan])
        v = np.abs(ipdv(seq, owd)) if len(owd) > 1 else np.array([])
        rows.append({
            "flow": int(f),
            "expected": expected,
            "received": len(m),
            "loss_pct": 100.0 * (1 - len(m) / expected) if expected else float("nan"),
            "delay_mean_ms": float(owd.mean()) if len(owd) else float("nan"),
            "delay_p50_ms": _pct(owd, 50),
            "delay_p95_ms": _pct(owd, 95),
            "delay_p99_ms": _pct(owd, 99),
            "ipdv_mean_ms": float(v.mean()) if v.size else float("nan"),
            "ipdv_p99_ms": _pct(v, 99),
            "jitter_rfc3550_ms": float(np.nanmean(j)),
        })
    return pd.DataFrame(rows)


def _pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q)) if a.size else float("nan")
