"""The modern AQMs (CoDel, FQ-CoDel, PIE) in the simulator on the small dumbbell: each keeps
the queueing delay well below Drop-Tail's with the same 60-packet buffer while the link stays
busy, and its drops show up in the packet records with their reason."""

from __future__ import annotations

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import validate
from conftest import small_scenario

EARLY = "early"  # DropReason::Early: CoDel's head drops, PIE's coin


def _run(kind: str):
    s = small_scenario(duration="8s")
    s["metrics"]["periods"] = [["2s", "8s"]]
    s["topology"]["bottleneck"]["qdisc"] = {"kind": kind, "limit": "60p"}
    res = simulate(validate(s), progress=False)
    assert res.summary["sim"]["bottleneck"]["invariants_ok"] is True
    return res.periods.iloc[0], res.tables["packets"]


@pytest.fixture(scope="module")
def droptail():
    return _run("droptail")[0]


@pytest.mark.parametrize("kind, max_delay_ratio, min_jain", [
    ("codel", 0.4, 0.85),     # 5 ms target: measured p50 12 ms against Drop-Tail's 54 ms
    ("fq_codel", 0.4, 0.98),  # per-flow queues: Jain near 1 (Drop-Tail 0.77)
    ("pie", 0.5, 0.85),       # 15 ms target: measured p50 17 ms
])
def test_aqm_keeps_delay_low_and_the_link_busy(droptail, kind, max_delay_ratio, min_jain):
    row, packets = _run(kind)
    assert row["qdelay_p50_ms"] < max_delay_ratio * droptail["qdelay_p50_ms"], (row, droptail)
    assert row["utilization_mbps"] > 9.5
    assert row["jain"] >= min_jain
    # The AQM's own drops are recorded as drop events with reason "early".
    assert ((packets["event"] == "drop") & (packets["reason"] == EARLY)).sum() > 10


def test_list_shows_every_parameter_of_the_new_disciplines_with_its_default():
    from aqmlab.scenario import Codel, FqCodel, Pie
    from conftest import aqmlab

    r = aqmlab("list")
    assert r.returncode == 0, r.stderr
    text = r.stdout
    for kind, model in (("codel", Codel), ("fq_codel", FqCodel), ("pie", Pie)):
        assert f"qdisc.kind): {kind} -" in " ".join(text.split()), kind
        for name in model.model_fields:
            assert name in text, (kind, name)
    for default in ("5ms", "100ms", "1514B", "10240p", "15ms", "150ms", "0.125", "1.25", "16384B", "timestamp"):
        assert default in text, default
