"""Metrics per measurement period, computed from a run's records (either engine).

All functions take the record tables as pandas DataFrames with the columns aqmlab writes:
``packets`` (bottleneck events), ``flows`` (one row per flow) and ``flow_samples``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

#: The ``packets`` table's events, by name: its ``event`` column is a categorical of these
#: (see ``aqmlab.records``), so ``packets["event"] == DEQUEUE`` selects the dequeues.
ARRIVE, ENQUEUE, DROP, DEQUEUE = "arrive", "enqueue", "drop", "dequeue"
NS = 1e9


def jain_index(x: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes all.
    R. Jain, The Art of Computer Systems Performance Analysis, 1991."""
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.any(a):
        return float("nan")
    return float(a.sum() ** 2 / (a.size * np.square(a).sum()))


def active_flows(flows: pd.DataFrame, start_ns: int, end_ns: int) -> pd.Index:
    """Flows whose [start, stop) overlaps the period."""
    mask = (flows["start_ns"] < end_ns) & (flows["stop_ns"] > start_ns)
    return flows.index[mask]


def _only(df: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The columns a metric reads (those of them the table has), so that selecting a period's
    rows copies those and not every column of a table of ~10^5-10^6 events: that copying was
    most of the metrics' CPU time. Values and their order are untouched."""
    return df[[c for c in columns if c in df.columns]]


def _in_period(df: pd.DataFrame, start_ns: int, end_ns: int) -> pd.DataFrame:
    t = df["t_ns"]
    return df[(t >= start_ns) & (t < end_ns)]


def flow_throughput(packets: pd.DataFrame, flows: pd.DataFrame, start_ns: int, end_ns: int) -> pd.Series:
    """Bits per second each flow sent through the bottleneck in the period (bottleneck
    dequeues, retransmissions included: the transport-layer throughput of the papers)."""
    p = _in_period(_only(packets, ("t_ns", "event", "flow", "size")), start_ns, end_ns)
    return _throughput(p, flows, (end_ns - start_ns) / NS)


def _throughput(in_period: pd.DataFrame, flows: pd.DataFrame, seconds: float) -> pd.Series:
    """flow_throughput from the period's rows, already selected."""
    sent = in_period[in_period["event"] == DEQUEUE].groupby("flow")["size"].sum()
    return sent.reindex(flows["flow"], fill_value=0).astype(float) * 8 / seconds


def flow_goodput(samples: pd.DataFrame, flows: pd.DataFrame, start_ns: int, end_ns: int) -> pd.Series:
    """Bits per second each flow delivered in order to its receiver during the period,
    from each flow's cumulative count at its own latest sample at or before each edge (0 before
    its first sample).

    Each flow is looked up on its own: the emulator's TCP senders sample on their own clocks,
    so a flow may have no row at the table's latest time (taking the latest time for all flows
    read such a flow as 0 delivered at the end, and the unsigned difference wrapped to ~2^64
    bytes). The counts are signed before subtracting for the same reason. The simulator samples
    every flow at every sample time, where both readings agree."""
    def at(t_ns: int) -> pd.Series:
        s = samples[samples["t_ns"] <= t_ns].sort_values("t_ns", kind="stable")
        last = s.groupby("flow", sort=False)["delivered_bytes"].last()
        return last.reindex(flows["flow"], fill_value=0).astype("int64")

    seconds = (end_ns - start_ns) / NS
    return (at(end_ns) - at(start_ns)).astype(float) * 8 / seconds


def period_metrics(packets: pd.DataFrame, flows: pd.DataFrame, periods: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """One row per period: utilization, drop rate, Jain's index over active flows, queueing delay."""
    packets = _only(packets, ("t_ns", "event", "flow", "size", "sojourn_ns"))
    rows = []
    for start, end in periods:
        p = _in_period(packets, start, end)
        ev = p["event"]
        arrivals = int((ev == ARRIVE).sum())
        drops = int((ev == DROP).sum())
        deq = p[ev == DEQUEUE]
        seconds = (end - start) / NS
        tput = _throughput(p, flows, seconds)  # flow_throughput, without selecting the rows again
        active = active_flows(flows, start, end)
        delay_ms = deq["sojourn_ns"].to_numpy(dtype=float) / 1e6
        rows.append({
            "start_s": start / NS,
            "end_s": end / NS,
            "utilization_mbps": float(deq["size"].sum()) * 8 / seconds / 1e6,
            "drop_rate_pct": 100.0 * drops / arrivals if arrivals else 0.0,
            "arrivals": arrivals,
            "drops": drops,
            "jain": jain_index(tput.to_numpy()[np.asarray(active)]),
            "active_flows": len(active),
            "qdelay_mean_ms": float(delay_ms.mean()) if delay_ms.size else float("nan"),
            "qdelay_p50_ms": _pct(delay_ms, 50),
            "qdelay_p95_ms": _pct(delay_ms, 95),
            "qdelay_p99_ms": _pct(delay_ms, 99),
        })
    return pd.DataFrame(rows)


def _pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q)) if a.size else float("nan")


def flow_period_metrics(packets: pd.DataFrame, samples: pd.DataFrame, flows: pd.DataFrame,
                        periods: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """One row per (period, flow): throughput at the bottleneck and goodput at the receiver."""
    frames = []
    for start, end in periods:
        frames.append(pd.DataFrame({
            "start_s": start / NS,
            "end_s": end / NS,
            "flow": flows["flow"].to_numpy(),
            "group": flows["group"].to_numpy(),  # the group's index, as in flows.parquet
            "group_name": flows["group_name"].to_numpy(),
            "throughput_mbps": flow_throughput(packets, flows, start, end).to_numpy() / 1e6,
            "goodput_mbps": flow_goodput(samples, flows, start, end).to_numpy() / 1e6,
        }))
    return pd.concat(frames, ignore_index=True)
