"""`bbr_intervals`: the events of BBR v1's long-term sampling, the policer detection of tcp_bbr.c
(`bbr_lt_bw_sampling`; crates/aqmlab-sim/src/tcp/cc/bbr/policer.rs, docs/tables.md), one row per
event. Checked against the state machine they come from and against what the flows did."""

from __future__ import annotations

import pandas as pd
import pytest

import aqmlab

START, INTERVAL, POLICED, RESTART, EXPIRE = range(5)
#: What may follow each event in one flow's sampling (a restart, an undo's too, may come at any
#: time; a policer needs an interval before it; only a policed rate expires).
NEXT = {START: {INTERVAL, RESTART}, INTERVAL: {INTERVAL, POLICED, RESTART}, POLICED: {RESTART, EXPIRE},
        RESTART: {START, RESTART}, EXPIRE: {START, RESTART}}
#: BBR paces 1 % below gain x bw (tcp_bbr.c `bbr_pacing_margin_percent`).
PACING_MARGIN = 0.01


def _run(cc: str) -> dict[str, pd.DataFrame]:
    """The SQF testbed's FIFO, its downloads as linux-profile `cc` flows, 20 s, sampled every 10 ms:
    BBR's flows lose packets in the 50-packet FIFO and find its share a policer now and then."""
    sets = ["duration=20s", 'metrics.periods=[["5s","20s"]]', "records.flow_sample=10ms",
            "flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.congestion_control={cc}"]
    return aqmlab.run(aqmlab.load("sqf/testbed-fifo", set=sets)).tables


@pytest.fixture(scope="module")
def bbr() -> dict[str, pd.DataFrame]:
    return _run("bbr")


def test_each_flows_events_follow_the_samplers_state_machine(bbr) -> None:
    events = bbr["bbr_intervals"]
    assert set(events["event"]) == {START, INTERVAL, POLICED, RESTART, EXPIRE}, "every event must occur"
    for flow, e in events.groupby("flow"):
        codes = e.sort_values("t_ns", kind="stable")["event"].tolist()
        assert codes[0] in (START, RESTART), (flow, codes)
        for a, b in zip(codes, codes[1:], strict=False):
            assert b in NEXT[a], (flow, codes)
    rates = events.set_index("event")
    assert (rates.loc[[INTERVAL, POLICED], "interval_bps"] > 0).all()
    assert (rates.loc[[START, RESTART, EXPIRE], ["interval_bps", "lt_bps"]] == 0).all().all()


def test_a_policed_flow_paces_at_the_tables_rate_until_the_next_event(bbr) -> None:
    """Between a policer found (event 2) and the flow's next event, BBR's bandwidth is the
    policed rate `lt_bps`: every 10 ms sample's pacing rate over its gain is that rate, less the
    1 % margin (`flow_samples.pacing_rate_bps`, recorded by another path)."""
    events, samples = bbr["bbr_intervals"], bbr["flow_samples"]
    ratios = []
    for flow, e in events.groupby("flow"):
        rows = e.sort_values("t_ns", kind="stable").to_dict("records")
        for row, after in zip(rows, rows[1:] + [None], strict=True):
            if row["event"] != POLICED:
                continue
            end = after["t_ns"] if after else samples["t_ns"].max() + 1
            s = samples[(samples["flow"] == flow) & (samples["t_ns"] > row["t_ns"] + 10_000_000)
                        & (samples["t_ns"] < end - 10_000_000) & (samples["pacing_gain"] > 0)]
            ratios.append(s["pacing_rate_bps"] / s["pacing_gain"] / (1 - PACING_MARGIN) / row["lt_bps"])
    held = pd.concat(ratios)
    assert len(held) > 1000, "the flows must hold policed rates for the check to bite"
    assert held.between(0.9999, 1.0001).all(), held.describe()


def test_only_bbr_flows_write_the_table() -> None:
    assert "bbr_intervals" not in _run("cubic")
