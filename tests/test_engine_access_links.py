"""The scenario's `engine.access_link_events`: access links (host <-> router, each used by its
flow's packets alone) crossed by arithmetic, the default, or with an event for every step, the
engine before issue 22's fewer-events round. The Rust tests
(crates/aqmlab-sim/tests/exclusive_links.rs) show the two give the same bytes where no two events
fall on one nanosecond; these check that the switch reaches the engine from a scenario file and
that a bad value is refused by name."""

from __future__ import annotations

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError
from aqmlab.scenario.load import load

# The Rb-RIO paper's 60-flow Drop-Tail dumbbell, cut to 10 s (flows start within 1 s).
SHORT = ["duration=10s", 'metrics.periods=[["2s", "10s"]]']


def test_access_links_without_events_carry_the_same_traffic_with_a_third_fewer_events():
    fast, _ = load("rb-rio/tcp-droptail", SHORT)
    slow, _ = load("rb-rio/tcp-droptail", [*SHORT, "engine.access_link_events=true"])
    assert (fast.engine.access_link_events, slow.engine.access_link_events) == (False, True)
    a, b = simulate(fast, progress=False), simulate(slow, progress=False)
    events = a.summary["sim"]["events"], b.summary["sim"]["events"]
    assert events[0] < 0.7 * events[1], events
    pa, pb = a.periods.iloc[0], b.periods.iloc[0]
    utilization = pa["utilization_mbps"], pb["utilization_mbps"]
    assert abs(utilization[0] / utilization[1] - 1) < 0.01, utilization
    drops = pa["drop_rate_pct"], pb["drop_rate_pct"]
    assert abs(drops[0] - drops[1]) < 0.5, drops


def test_a_bad_access_link_events_value_is_refused_by_name():
    with pytest.raises(ScenarioError) as err:
        load("rb-rio/tcp-droptail", ["engine.access_link_events=sometimes"])
    assert "engine.access_link_events" in str(err.value)
    assert "Traceback" not in str(err.value)
