"""The metrics (`aqmlab.metrics`) compute with numpy masks and `np.bincount` (issue 22: they were
most of a sweep worker's time beside the simulation). This checks them, bit for bit, against a
plain pandas statement of the same definitions (the implementation they replaced) on a whole
run's tables: every period metric, every per-flow one, flow subsets, and samples out of time
order as the emulator writes them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aqmlab import _core, metrics
from aqmlab.run import simulate
from aqmlab.scenario.load import load

NS = 1e9


def _throughput(packets: pd.DataFrame, flows: pd.DataFrame, start: int, end: int) -> pd.Series:
    p = packets[(packets["t_ns"] >= start) & (packets["t_ns"] < end)]
    sent = p[p["event"] == metrics.DEQUEUE].groupby("flow")["size"].sum()
    return sent.reindex(flows["flow"], fill_value=0).astype(float) * 8 / ((end - start) / NS)


def _goodput(samples: pd.DataFrame, flows: pd.DataFrame, start: int, end: int) -> pd.Series:
    def at(t: int) -> pd.Series:
        s = samples[samples["t_ns"] <= t].sort_values("t_ns", kind="stable")
        last = s.groupby("flow", sort=False)["delivered_bytes"].last()
        return last.reindex(flows["flow"], fill_value=0).astype("int64")
    return (at(end) - at(start)).astype(float) * 8 / ((end - start) / NS)


def _period_metrics(packets: pd.DataFrame, flows: pd.DataFrame, periods: list[tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for start, end in periods:
        p = packets[(packets["t_ns"] >= start) & (packets["t_ns"] < end)]
        arrivals, drops = int((p["event"] == metrics.ARRIVE).sum()), int((p["event"] == metrics.DROP).sum())
        deq = p[p["event"] == metrics.DEQUEUE]
        seconds = (end - start) / NS
        active = flows.index[(flows["start_ns"] < end) & (flows["stop_ns"] > start)]  # the pandas definition
        delay = deq["sojourn_ns"].to_numpy(dtype=float) / 1e6
        rows.append({"start_s": start / NS, "end_s": end / NS,
                     "utilization_mbps": float(deq["size"].sum()) * 8 / seconds / 1e6,
                     "drop_rate_pct": 100.0 * drops / arrivals if arrivals else 0.0,
                     "arrivals": arrivals, "drops": drops,
                     "jain": metrics.jain_index(_throughput(packets, flows, start, end).to_numpy()[np.asarray(active)]),
                     "active_flows": len(active),
                     "qdelay_mean_ms": float(delay.mean()) if delay.size else float("nan"),
                     **{f"qdelay_p{q}_ms": float(np.percentile(delay, q)) if delay.size else float("nan")
                        for q in (50, 95, 99)}})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    sc, _ = load("links/wifi-call-fifo")  # TCP and a video call over a varying link, drops and queueing
    return simulate(sc, progress=False).tables


PERIODS = [(0, 30_000_000_000), (5_000_000_000, 30_000_000_000), (1_234_567_891, 7_654_321_987),
           (29_000_000_000, 29_500_000_000), (40_000_000_000, 41_000_000_000)]  # the last after the run


def test_period_metrics_are_the_pandas_definitions_bit_for_bit(tables):
    packets, flows = tables["packets"], tables["flows"]
    pd.testing.assert_frame_equal(metrics.period_metrics(packets, flows, PERIODS),
                                  _period_metrics(packets, flows, PERIODS), check_exact=True)


def test_per_flow_metrics_are_the_pandas_definitions_bit_for_bit(tables):
    packets, flows, samples = tables["packets"], tables["flows"], tables["flow_samples"]
    shuffled = samples.sample(frac=1.0, random_state=3)  # the emulator's rows need not be in time order
    some = flows.iloc[[2, 0]]  # a subset, out of order
    for start, end in PERIODS:
        for f in (flows, some):
            pd.testing.assert_series_equal(metrics.flow_throughput(packets, f, start, end),
                                           _throughput(packets, f, start, end), check_exact=True)
            for s in (samples, shuffled):
                pd.testing.assert_series_equal(metrics.flow_goodput(s, f, start, end), _goodput(s, f, start, end),
                                               check_exact=True)
    per = metrics.flow_period_metrics(packets, samples, flows, PERIODS)
    for start, end in PERIODS:
        rows = per[per["start_s"] == start / NS]
        assert rows["throughput_mbps"].tolist() == (_throughput(packets, flows, start, end) / 1e6).tolist()
        assert rows["goodput_mbps"].tolist() == (_goodput(samples, flows, start, end) / 1e6).tolist()
    assert per["goodput_mbps"].gt(0).any() and per["throughput_mbps"].gt(0).any()


def test_the_bindings_event_codes_give_the_metrics_of_the_named_events(tables):
    # `aqmlab run` hands the metrics the binding's event codes (a code is its name's position in
    # PACKET_EVENT_NAMES) where the pandas road names them; the rows must be the same.
    packets, flows, samples = tables["packets"], tables["flows"], tables["flow_samples"]
    columns = {c: packets[c].to_numpy() for c in packets.columns if c != "event"}
    coded = {**columns, "event": packets["event"].cat.codes.to_numpy().astype(np.uint8)}
    assert list(packets["event"].cat.categories) == list(_core.PACKET_EVENT_NAMES)
    named = pd.DataFrame(metrics.period_rows(packets, flows, PERIODS))  # a frame: NaN equals NaN
    pd.testing.assert_frame_equal(pd.DataFrame(metrics.period_rows(coded, flows, PERIODS)), named, check_exact=True)
    for (t1, g1), (t2, g2) in zip(metrics.flow_period_values(coded, samples, flows, PERIODS),
                                  metrics.flow_period_values(packets, samples, flows, PERIODS), strict=True):
        assert t1.tolist() == t2.tolist() and g1.tolist() == g2.tolist()
    # A wrong code would show: dequeues counted as drops give another drop rate.
    wrong = {**coded, "event": np.where(coded["event"] == list(_core.PACKET_EVENT_NAMES).index("drop"),
                                        list(_core.PACKET_EVENT_NAMES).index("dequeue"), coded["event"])}
    assert not pd.DataFrame(metrics.period_rows(wrong, flows, PERIODS)).equals(named)


def test_flow_positions_are_pandas_get_indexer():
    """`_positions` looks flow ids up in a table (issue 22); it gives what pd.Index.get_indexer
    gave: ids out of order, ids not listed (below, between and past the listed ones: -1), and
    other ids (repeated, negative, huge) through pandas itself."""
    rows = np.array([0, 5, 3, 9, 2, 2, 40, 7, 1_000_000], dtype=np.uint32)
    for ids in ([3, 0, 7], [0, 1, 2], [5], [2, 9, 4_000_000]):
        listed = np.array(ids, dtype=np.uint32)
        assert metrics._positions(listed, rows).tolist() == pd.Index(listed).get_indexer(rows).tolist()
    for dtype in (np.uint8, np.int16, np.uint64):  # narrow ids past a wide table; 64-bit ids via pandas
        small = np.array([0, 3, 200], dtype=dtype)
        wide = np.arange(0, 600, 3, dtype=np.uint32)
        assert metrics._positions(wide, small).tolist() == pd.Index(wide).get_indexer(small).tolist()
    signed = np.array([-1, 0, 3], dtype=np.int64)
    assert metrics._positions(signed, np.array([3, -1, 5])).tolist() == [2, 0, -1]
    with pytest.raises(Exception, match="uniquely valued"):
        metrics._positions(np.array([1, 1], dtype=np.uint32), rows)


def test_active_flows_at_the_period_edges(tables):
    """Periods that end where a flow starts and start where one stops: period_metrics counts
    the flows active_flows names, and neither counts either edge (the numpy form, issue 22)."""
    packets, flows = tables["packets"], tables["flows"]
    second = int(flows["start_ns"].iloc[1])
    edges = [(0, second), (second, second + 1), (1_000_000, int(flows["start_ns"].iloc[2])),
             (int(flows["stop_ns"].iloc[0]), 40_000_000_000)]
    got = metrics.period_metrics(packets, flows, edges)
    assert got["active_flows"].tolist() == [len(metrics.active_flows(flows, a, b)) for a, b in edges] == [1, 2, 2, 0]
    pd.testing.assert_frame_equal(got, _period_metrics(packets, flows, edges), check_exact=True)
