"""The UDP sources' `ecn` field: ECT(1) video lands in DualPI2's L queue (the built-in
`l4s/dualpi2-video` scenario, shortened), and the default leaves the engines' config as it was
before the field existed."""

from __future__ import annotations

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, load, validate
from conftest import small_scenario


def _sojourns(ecn: str):
    sc, _ = load("l4s/dualpi2-video", overrides=[f"flows.video.app.ecn={ecn}", "duration=8s",
                                                "metrics.periods=[[\"3s\", \"8s\"]]"])
    res = simulate(sc, progress=False)
    assert res.summary["sim"]["bottleneck"]["invariants_ok"] is True
    p = res.tables["packets"]
    d = p[(p["event"] == "dequeue") & (p["t_ns"] >= 3e9)]
    video, tcp = d[d["flow"] == 0], d[d["flow"] != 0]
    return video, tcp


def test_ect1_video_is_served_from_the_l_queue():
    video, tcp = _sojourns("ect1")
    # The L queue: step marking at 1 ms keeps it short; measured p99 0.23 ms over 15 s.
    assert video["sojourn_ns"].quantile(0.99) < 1e6
    assert video["marked"].mean() > 0  # coupled CE marks (k p')
    # Classic TCP waits near PI2's 15 ms target (measured p50 14.8 ms).
    assert 8e6 < tcp["sojourn_ns"].quantile(0.5) < 25e6
    # Not-ECT video shares the classic queue and its delay instead.
    video, _ = _sojourns("not-ect")
    assert video["sojourn_ns"].quantile(0.5) > 5e6
    assert not video["marked"].any()


def test_the_default_leaves_the_engine_config_unchanged():
    s = small_scenario(flows=[{"name": "cbr", "count": 1, "app": {"kind": "cbr", "rate": "1Mbps"}},
                              {"name": "v", "count": 1, "app": {"kind": "video", "rate": "1Mbps"}}])
    apps = [g["app"] for g in validate(s).to_sim_config()["flow_groups"]]
    assert all("ecn" not in a for a in apps), apps
    s["flows"][0]["app"]["ecn"] = "ect1"
    s["flows"][1]["app"]["ecn"] = "ect0"
    apps = [g["app"] for g in validate(s).to_sim_config()["flow_groups"]]
    assert [a["ecn"] for a in apps] == ["Ect1", "Ect0"]


def test_a_bad_codepoint_is_refused_naming_the_field():
    s = small_scenario(flows=[{"name": "cbr", "count": 1, "app": {"kind": "cbr", "rate": "1Mbps", "ecn": "ce"}}])
    with pytest.raises(ScenarioError) as err:
        validate(s)
    assert "ecn" in str(err.value), str(err.value)
