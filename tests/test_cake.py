"""CAKE through the scenario schema and the simulator: the shaper holds a TCP dumbbell to its
bandwidth with a short queue, diffserv4 gives DSCP-marked video its tin, `aqmlab list` shows
every parameter with its tc-cake default, rtt presets resolve, and a value outside what tc-cake
accepts is refused in one line naming the field."""

from __future__ import annotations

import os

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import Cake, ScenarioError, validate
from conftest import aqmlab, small_scenario


def _run(qdisc: dict, flows: list | None = None, duration: str = "8s"):
    s = small_scenario(duration=duration)
    s["metrics"]["periods"] = [["2s", duration]]
    s["topology"]["bottleneck"]["qdisc"] = qdisc
    if flows is not None:
        s["flows"] = flows
    res = simulate(validate(s), progress=False)
    assert res.summary["sim"]["bottleneck"]["invariants_ok"] is True
    return res


def test_the_shaper_holds_tcp_to_the_bandwidth_with_a_short_queue():
    # 5 TCP flows on a 10 Mbit/s link, CAKE shaping at 8 Mbit/s: the link carries 8 Mbit/s
    # and COBALT keeps the queue near its 5 ms target.
    res = _run({"kind": "cake", "bandwidth": "8Mbps"})
    row = res.periods.iloc[0]
    assert 7.6 < row["utilization_mbps"] < 8.1, row
    assert row["qdelay_p50_ms"] < 15, row
    assert row["jain"] > 0.95, row
    # Unlimited: the link's own rate.
    row = _run({"kind": "cake"}).periods.iloc[0]
    assert row["utilization_mbps"] > 9.5, row


def test_diffserv4_carries_marked_video_in_its_tin():
    # A 3.5 Mbit/s CBR marked AF41 beside 5 TCP flows at 8 Mbit/s: in diffserv4's video tin
    # (threshold 4 Mbit/s) it passes whole; in besteffort it is one flow of six and loses what
    # exceeds its fair share (8/6 Mbit/s).
    cbr = {"name": "video", "count": 1, "dscp": 34, "app": {"kind": "cbr", "rate": "3.5Mbps"}}
    bulk = small_scenario()["flows"][0]

    def video_mbps(diffserv: str) -> float:
        res = _run({"kind": "cake", "bandwidth": "8Mbps", "diffserv": diffserv}, flows=[bulk, cbr])
        fp = res.flow_periods
        return float(fp[fp["group_name"] == "video"]["throughput_mbps"].iloc[0])

    assert video_mbps("diffserv4") > 3.4
    assert video_mbps("besteffort") < 2.0

def test_list_shows_every_parameter_with_its_default():
    # Wide enough that rich does not break the long allowed values over lines.
    r = aqmlab("list", env={**os.environ, "COLUMNS": "250"})
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "qdisc.kind): cake -" in text
    for name in Cake.model_fields:
        assert name in text, name
    for default in ("unlimited", "diffserv3", "triple-isolate", "no-ack-filter", "noatm", "internet (100ms)"):
        assert default in text, default


def test_rtt_presets_and_unlimited_resolve():
    c = Cake(kind="cake", rtt="lan", bandwidth="unlimited")
    assert (c.rtt, c.bandwidth, c.target) == (1_000_000, 0, None)
    assert Cake(kind="cake", rtt="interplanetary").rtt == 1000 * 10**9


@pytest.mark.parametrize("field, value", [
    ("overhead", 257),
    ("overhead", -65),
    ("mpu", 257),
    ("mpu", -1),
    ("diffserv", "diffserv5"),
    ("flowmode", "triple"),
    ("ack_filter", "yes"),
    ("atm", "adsl"),
    ("rtt", "galactic"),
    ("rtt", "0s"),
    ("rtt", "5000s"),
    ("target", "100ns"),
    ("memlimit", "5GB"),
    ("bandwidth", "fast"),
])
def test_a_bad_value_is_refused_naming_the_field(field, value):
    s = small_scenario()
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "cake", field: value}
    with pytest.raises(ScenarioError) as err:
        validate(s)
    assert field in str(err.value), str(err.value)
