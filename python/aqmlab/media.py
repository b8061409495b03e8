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

from aqmlab.metrics import ARRIVE, DEQUEUE, DROP


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
            # NaN, without numpy's "Mean of empty slice" warning on the user's terminal, for a
            # stream with fewer than two packets in the period (a starved video).
            "jitter_rfc3550_ms": float(np.nanmean(j)) if np.isfinite(j).any() else float("nan"),
        })
    return pd.DataFrame(rows)


def loss_against_sent_pct(tables: dict[str, pd.DataFrame], flow: int, start_ns: int, end_ns: int,
                          run_end_ns: int, after_bottleneck_ns: int) -> float:
    """Share of a media flow's packets sent in [start, end) that its receiver did not get:
    1 - received / sent. Unlike ``flow_quality``'s RFC 3550 count (highest - lowest received
    sequence number), it sees packets lost after the last one received, e.g. a stream starved
    until the period ends.

    ``tables`` are a run's records (``packets``, ``flows``, ``media``). What was sent is read
    at the bottleneck: every packet a source sends arrives there (the access links before it
    do not drop), ``sender_delay_ns`` after it was sent. So the sent packets are the flow's
    bottleneck arrivals in [start, end) shifted by that delay, and the received ones the
    receiver log's packets with a send time in [start, end). Packets whose fate the run did not
    see are left out of both: still queued when the run ended (``run_end_ns``), or dequeued
    less than ``after_bottleneck_ns`` (the bottleneck's and the receiver's delays) before it.
    The access link's serialization time (about 0.1 ms for 1356 B at 100 Mbit/s) is in neither
    shift, so at each edge one packet may be counted on one side only. NaN when nothing was
    sent."""
    flows, packets, media = tables["flows"], tables["packets"], tables["media"]
    shift = int(flows.loc[flows["flow"] == flow, "sender_delay_ns"].iloc[0])
    p = packets[packets["flow"] == flow]
    t = p["t_ns"].to_numpy(dtype=np.int64)
    event = p["event"].to_numpy()
    uid = p["uid"].to_numpy()
    arrived = uid[(event == ARRIVE) & (t - shift >= start_ns) & (t - shift < end_ns)]
    settled = np.concatenate([uid[event == DROP], uid[(event == DEQUEUE) & (t + after_bottleneck_ns <= run_end_ns)]])
    sent = int(np.isin(arrived, settled).sum())
    m = media[media["flow"] == flow]
    sent_ns = m["sent_ns"].to_numpy(dtype=np.int64)
    received = int(((sent_ns >= start_ns) & (sent_ns < end_ns)).sum())
    # The edge effect above can make received exceed sent by a packet: read that as no loss.
    return max(0.0, 100.0 * (1 - received / sent)) if sent else float("nan")


def _pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q)) if a.size else float("nan")
