"""Metrics per measurement period, computed from a run's records (either engine).

All functions take the record tables with the columns aqmlab writes: ``packets`` (bottleneck
events), ``flows`` (one row per flow) and ``flow_samples``, as pandas DataFrames or, where the
signature says `Table`, as dicts of their columns (`aqmlab.records.to_columns`, a sweep worker's
way: the same arrays, so the same values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from aqmlab import _core

if TYPE_CHECKING:  # pandas loads only where a DataFrame is made: `aqmlab run` needs none (issue 22)
    import pandas as pd

#: The ``packets`` table's events, by name: its ``event`` column is a categorical of these
#: (see ``aqmlab.records``), so ``packets["event"] == DEQUEUE`` selects the dequeues.
ARRIVE, ENQUEUE, DROP, DEQUEUE = "arrive", "enqueue", "drop", "dequeue"
#: Each event's code in the binding's records: its position in ``_core.PACKET_EVENT_NAMES``.
_EVENT_CODES = {name: code for code, name in enumerate(_core.PACKET_EVENT_NAMES)}
NS = 1e9
#: The queueing delay percentiles of `period_metrics`.
PERCENTILES = (50, 95, 99)

#: A record table: a DataFrame, or a dict of its columns (numpy arrays). ``packets``' ``event`` is
#: a categorical, as `aqmlab.records.name_packet_events` makes it in either, or in a dict the
#: binding's integer codes (`aqmlab run`'s road without pandas): a code is the position of its
#: name in ``_core.PACKET_EVENT_NAMES``.
Table: TypeAlias = "pd.DataFrame | Mapping[str, Any]"


def jain_index(x: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes all.
    R. Jain, The Art of Computer Systems Performance Analysis, 1991."""
    a = np.asarray(x, dtype=float)
    if a.size == 0 or not np.any(a):
        return float("nan")
    return float(a.sum() ** 2 / (a.size * np.square(a).sum()))


def active_flows(flows: Table, start_ns: int, end_ns: int) -> pd.Index | np.ndarray:
    """Flows whose [start, stop) overlaps the period: the DataFrame's index labels (a dict of
    columns: the rows' positions). With numpy: `period_rows` asks it for every period in every
    sweep worker."""
    mask = (np.asarray(flows["start_ns"]) < end_ns) & (np.asarray(flows["stop_ns"]) > start_ns)
    return np.flatnonzero(mask) if isinstance(flows, Mapping) else flows.index[mask]


class _Records:
    """A table's columns as numpy arrays, read once for every period: the metrics select a
    period's rows with boolean masks and add per flow with `np.bincount`, where selecting
    DataFrame rows and grouping them per period cost most of a sweep worker's time beside the
    simulation (issue 22). Integer sums (bytes) stay exact: float64 holds them below 2^53."""

    def __init__(self, table: Table, flows: Table, columns: Sequence[str]) -> None:
        self.t = np.asarray(table["t_ns"])
        self.cols = {c: np.asarray(table[c]) for c in columns if c in table}  # `in`: a column, either kind
        # Each row's flow as a position in `flows` (-1: a flow `flows` does not list).
        ids = np.asarray(flows["flow"])
        self.pos = _positions(ids, np.asarray(table["flow"]))
        self.n = ids.size

    def in_period(self, start_ns: int, end_ns: int) -> np.ndarray:
        return (self.t >= start_ns) & (self.t < end_ns)

    def per_flow_sum(self, rows: np.ndarray, column: str) -> np.ndarray:
        """The sum of `column` over `rows` (a mask) per flow of `flows`, as float."""
        pos = self.pos[rows]
        keep = pos >= 0
        return np.bincount(pos[keep], weights=self.cols[column][rows][keep], minlength=self.n)


def _positions(ids: np.ndarray, flows: np.ndarray) -> np.ndarray:
    """Each of `flows` as its position in `ids` (-1: not there), as ``pd.Index(ids).get_indexer``
    gives it. The engines number flows 0 .. n-1, so a lookup table indexed by id does it without
    hashing every row; other ids (repeated ones raise there) go to pandas."""
    n = ids.size
    # Integers of at most 32 bits (the engines' flow columns are u32) widen to int64 exactly.
    if (n and ids.dtype.kind in "ui" and flows.dtype.kind in "ui" and flows.dtype.itemsize <= 4
            and 0 <= ids.min() and ids.max() < 4 * n + 1024
            and not (flows.dtype.kind == "i" and flows.size and flows.min() < 0)):
        table = np.full(int(ids.max()) + 2, -1, dtype=np.intp)  # the last slot: every larger id
        table[ids] = np.arange(n)
        if np.array_equal(table[ids], np.arange(n)):  # the ids are distinct
            return table[np.minimum(flows.astype(np.int64), table.size - 1)]
    import pandas as pd

    return pd.Index(ids).get_indexer(flows)


def _series(values: np.ndarray, flows: pd.DataFrame, name: str) -> pd.Series:
    """Per flow of `flows`, indexed by flow id (the index and name the pandas groupby gave)."""
    import pandas as pd

    return pd.Series(values, index=pd.Index(flows["flow"].to_numpy(), name="flow"), name=name)


def _is(packets: Table, event: str) -> np.ndarray:
    """Which rows are `event`s, as a numpy mask (from a Series, a Categorical, or the binding's
    integer codes). Codes are compared as codes: naming 2.9 M of them first to compare strings
    took the 600-flow `aqmlab run`'s metrics from 109 to 174 ms and an 80 MB array (issue 22)."""
    column = packets["event"]
    if isinstance(column, np.ndarray) and column.dtype.kind in "iu":
        return column == _EVENT_CODES[event]
    return np.asarray(column == event)


def _dequeued(packets: Table) -> np.ndarray:
    return _is(packets, DEQUEUE)


def flow_throughput(packets: pd.DataFrame, flows: pd.DataFrame, start_ns: int, end_ns: int) -> pd.Series:
    """Bits per second each flow sent through the bottleneck in the period (bottleneck
    dequeues, retransmissions included: the transport-layer throughput of the papers)."""
    rec = _Records(packets, flows, ("size",))
    sent = rec.per_flow_sum(rec.in_period(start_ns, end_ns) & _dequeued(packets), "size")
    return _series(sent * 8 / ((end_ns - start_ns) / NS), flows, "size")


def _count_at(samples: _Records, t_ns: int, column: str = "delivered_bytes") -> np.ndarray:
    """Each flow's cumulative `column` at its own latest sample at or before `t_ns` (0 before
    its first), as int64; of equal times, the later row."""
    rows = np.flatnonzero(samples.t <= t_ns)
    rows = rows[np.argsort(samples.t[rows], kind="stable")]
    rows = rows[samples.pos[rows] >= 0]
    # The last row of each flow: the first of the reversed sequence.
    flows, first = np.unique(samples.pos[rows][::-1], return_index=True)
    out = np.zeros(samples.n, dtype=np.int64)
    out[flows] = samples.cols[column][rows[len(rows) - 1 - first]].astype(np.int64)
    return out


def flow_count_increase(samples: pd.DataFrame, flows: pd.DataFrame, column: str, start_ns: int,
                        end_ns: int) -> pd.Series:
    """How much each flow's cumulative `flow_samples` column (`delivered_bytes`, `packets_sent`,
    `retransmissions`) grew during the period, each flow read at its own latest sample at or
    before each edge, as `flow_goodput` reads it (signed, 0 before a flow's first sample)."""
    rec = _Records(samples, flows, (column,))
    return _series(_count_at(rec, end_ns, column) - _count_at(rec, start_ns, column), flows, column)


def flow_goodput(samples: pd.DataFrame, flows: pd.DataFrame, start_ns: int, end_ns: int) -> pd.Series:
    """Bits per second each flow delivered in order to its receiver during the period,
    from each flow's cumulative count at its own latest sample at or before each edge (0 before
    its first sample).

    Each flow is looked up on its own: the emulator's TCP senders sample on their own clocks,
    so a flow may have no row at the table's latest time (taking the latest time for all flows
    read such a flow as 0 delivered at the end, and the unsigned difference wrapped to ~2^64
    bytes). The counts are signed before subtracting for the same reason. The simulator samples
    every flow at every sample time, where both readings agree."""
    rec = _Records(samples, flows, ("delivered_bytes",))
    return _series(_goodput(rec, start_ns, end_ns), flows, "delivered_bytes")


def _goodput(samples: _Records, start_ns: int, end_ns: int) -> np.ndarray:
    delivered = _count_at(samples, end_ns) - _count_at(samples, start_ns)
    return delivered.astype(float) * 8 / ((end_ns - start_ns) / NS)


def period_metrics(packets: Table, flows: Table, periods: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """One row per period: utilization, drop rate, Jain's index over active flows, queueing delay."""
    import pandas as pd

    return pd.DataFrame(period_rows(packets, flows, periods))


def period_rows(packets: Table, flows: Table, periods: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    """`period_metrics`' rows, one dict per period (a sweep worker adds its columns to them and
    builds its table once)."""
    rec = _Records(packets, flows, ("size", "sojourn_ns"))
    arrive, drop, dequeue = (_is(packets, e) for e in (ARRIVE, DROP, DEQUEUE))
    rows = []
    for start, end in periods:
        period = rec.in_period(start, end)
        arrivals = int((period & arrive).sum())
        drops = int((period & drop).sum())
        deq = period & dequeue
        seconds = (end - start) / NS
        tput = rec.per_flow_sum(deq, "size") * 8 / seconds  # flow_throughput's, from the same rows
        active = active_flows(flows, start, end)
        delay_ms = rec.cols["sojourn_ns"][deq].astype(float) / 1e6 if "sojourn_ns" in rec.cols else np.array([])
        # one np.percentile for the three: the same order statistics and interpolation, bit for bit
        p50, p95, p99 = ([float(x) for x in np.percentile(delay_ms, PERCENTILES)] if delay_ms.size
                         else [float("nan")] * 3)
        rows.append({
            "start_s": start / NS,
            "end_s": end / NS,
            "utilization_mbps": float(rec.cols["size"][deq].sum()) * 8 / seconds / 1e6,
            "drop_rate_pct": 100.0 * drops / arrivals if arrivals else 0.0,
            "arrivals": arrivals,
            "drops": drops,
            "jain": jain_index(tput[np.asarray(active)]),
            "active_flows": len(active),
            "qdelay_mean_ms": float(delay_ms.mean()) if delay_ms.size else float("nan"),
            "qdelay_p50_ms": p50,
            "qdelay_p95_ms": p95,
            "qdelay_p99_ms": p99,
        })
    return rows


def flow_period_values(packets: Table, samples: Table, flows: Table,
                       periods: Sequence[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per period: each flow's throughput at the bottleneck and goodput at the receiver, in
    Mbit/s, in the order of `flows` (the columns of `flow_period_metrics`, which takes them
    from here; a sweep worker takes them without the table)."""
    sent, got = _Records(packets, flows, ("size",)), _Records(samples, flows, ("delivered_bytes",))
    dequeue = _dequeued(packets)
    values = []
    for start, end in periods:
        seconds = (end - start) / NS
        values.append((sent.per_flow_sum(sent.in_period(start, end) & dequeue, "size") * 8 / seconds / 1e6,
                       _goodput(got, start, end) / 1e6))
    return values


def flow_period_metrics(packets: Table, samples: Table, flows: pd.DataFrame,
                        periods: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """One row per (period, flow): throughput at the bottleneck and goodput at the receiver."""
    import pandas as pd

    frames = []
    for (start, end), (throughput, goodput) in zip(periods, flow_period_values(packets, samples, flows, periods),
                                                   strict=True):
        frames.append(pd.DataFrame({
            "start_s": start / NS,
            "end_s": end / NS,
            "flow": flows["flow"].to_numpy(),
            "group": flows["group"].to_numpy(),  # the group's index, as in flows.parquet
            "group_name": flows["group_name"].to_numpy(),
            "throughput_mbps": throughput,
            "goodput_mbps": goodput,
        }))
    return pd.concat(frames, ignore_index=True)
