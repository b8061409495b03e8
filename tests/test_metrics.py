"""Metric definitions on hand-made records with known answers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aqmlab import _core
from aqmlab.metrics import DROP, jain_index, period_metrics
from aqmlab.records import DROP_REASONS, EVENT_NAMES, name_packet_events
from conftest import small_scenario


def test_jain_index_bounds():
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([3, 1]) == pytest.approx(16 / 20)
    assert math.isnan(jain_index([]))


def test_period_metrics_by_hand():
    # Two flows; in [0, 1 s): flow 0 sends 3 packets of 1000 B, flow 1 one; one drop of 4 arrivals...
    rows = []
    def ev(t, e, flow, size=1000, soj=0):
        rows.append({"t_ns": int(t * 1e9), "event": e, "flow": flow, "size": size, "sojourn_ns": soj,
                     "reason": _core.NO_REASON if e != 2 else 0})
    for i, f in enumerate([0, 0, 0, 1, 1]):
        ev(0.1 * i, 0, f)
    for i, f in enumerate([0, 0, 0, 1]):
        ev(0.1 * i, 1, f)
    ev(0.4, 2, 1)
    for i, f in enumerate([0, 0, 0, 1]):
        ev(0.5 + 0.1 * i, 3, f, soj=int(2e6 * (i + 1)))
    packets = name_packet_events(pd.DataFrame(rows))
    flows = pd.DataFrame({"flow": [0, 1], "start_ns": [0, 0], "stop_ns": [10**9, 10**9]})
    m = period_metrics(packets, flows, [(0, 10**9)]).iloc[0]
    assert m["utilization_mbps"] == pytest.approx(4 * 1000 * 8 / 1e6)
    assert m["drop_rate_pct"] == pytest.approx(20.0)
    assert m["jain"] == pytest.approx(jain_index([3, 1]))
    assert m["qdelay_mean_ms"] == pytest.approx(5.0)
    assert m["active_flows"] == 2


def test_record_codes_are_named_by_the_binding():
    # A CBR flow overflowing a drop-tail buffer: the records' codes read through the names the
    # binding exposes say what happened, and the payload the simulator delivers is the IP size
    # minus the header size the binding exposes.
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    s = small_scenario(duration="2s", metrics={"periods": [["0s", "2s"]]})
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "droptail", "limit": "20p"}
    s["flows"] = [{"name": "cbr", "count": 1, "app": {"kind": "cbr", "rate": "12Mbps", "packet_size": "1000B"}}]
    tables = simulate(validate(s), progress=False).tables
    packets = tables["packets"]
    # The codes arrive named: categoricals whose categories are the binding's names in code
    # order, so .cat.codes gives the codes back; a non-drop has no reason (missing).
    assert list(packets["event"].cat.categories) == EVENT_NAMES
    assert list(packets["reason"].cat.categories) == DROP_REASONS
    assert set(packets["event"]) == {"arrive", "enqueue", "drop", "dequeue"}
    drops = packets[packets["event"] == DROP]
    assert len(drops) > 0
    assert set(drops["reason"]) == {"overflow"}
    assert drops["reason"].cat.codes.eq(DROP_REASONS.index("overflow")).all()
    assert packets.loc[packets["event"] != DROP, "reason"].isna().all()
    delivered = int(tables["flows"]["delivered_bytes"].iloc[0])
    assert delivered > 0 and delivered % (1000 - _core.UDP_IP_HEADER_BYTES) == 0


def test_goodput_reads_each_flow_at_its_own_latest_sample():
    # The emulator's TCP senders sample on their own clocks: at the period's end flow 1's
    # latest sample (0.9 s) is older than flow 0's (0.95 s). Its goodput is what it delivered
    # between its own samples, not 0 - delivered wrapped around 2^64 (unsigned counts).
    from aqmlab.metrics import flow_goodput

    samples = pd.DataFrame({
        "t_ns": [0, 0, 900_000_000, 900_000_000, 950_000_000],
        "flow": [0, 1, 0, 1, 0],
        "delivered_bytes": [0, 1000, 100_000, 51_000, 125_000],
    }).astype({"t_ns": "u8", "flow": "u4", "delivered_bytes": "u8"})
    flows = pd.DataFrame({"flow": [0, 1]}).astype({"flow": "u4"})
    goodput = flow_goodput(samples, flows, 0, 10**9)
    assert goodput.tolist() == pytest.approx([125_000 * 8.0, 50_000 * 8.0])
