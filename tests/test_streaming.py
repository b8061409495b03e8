"""The adaptive streaming app (`kind = "stream"`) and per-group path loss in whole simulations."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from aqmlab.analysis import head_to_head as h2h
from aqmlab.metrics import DEQUEUE
from aqmlab.run import simulate
from aqmlab.scenario import BUILTIN_DIR, ScenarioError, read_scenario_file, validate
from conftest import aqmlab

PAIR = read_scenario_file(BUILTIN_DIR / "head-to-head" / "pair.toml")


def pair(rate: str = "600Kbps", clip: str = "40s", levels=None, **group_over) -> dict:
    d = copy.deepcopy(PAIR)
    d["duration"] = "70s"
    d["topology"]["bottleneck"]["qdisc"]["rate"] = rate
    for g in d["flows"]:
        g["app"]["clip"] = clip
        if levels is not None:
            g["app"]["levels"] = levels
        g.update(group_over)
    return d


def run(d: dict):
    return simulate(validate(d), progress=False)


def series(res, group: str) -> pd.DataFrame:
    t = res.tables
    f = int(t["flows"].loc[t["flows"]["group_name"] == group, "flow"].iloc[0])
    p = t["packets"]
    d = p[(p["event"] == DEQUEUE) & (p["flow"] == f)]
    return pd.DataFrame({"t_s": d["t_ns"] / 1e9, "bytes": d["size"]})


def levels(res, group: str) -> np.ndarray:
    t = res.tables
    f = int(t["flows"].loc[t["flows"]["group_name"] == group, "flow"].iloc[0])
    return t["flow_samples"].loc[t["flow_samples"]["flow"] == f, "app_level"].to_numpy()


def test_unconstrained_streams_play_at_the_level_rate_after_buffering():
    # One 80 Kbit/s level, 600 Kbps bottleneck: no loss, no scaling.
    res = run(pair(levels=["80Kbps"]))
    # Steady playout (12-28 s) at the level rate: over UDP the packets (IP size) are the
    # content; over TCP the content is payload, plus 40 B of headers per 1460 B segment. TCP's
    # 1500 B segments (6.7 a second) and its catching up after a buffering phase slightly
    # slowed by the window make its 16 s average less exact.
    for group, wire, tol in (("udp", 80_000, 0.03), ("tcp", 80_000 * 1500 / 1460, 0.10)):
        steady = h2h.average_bandwidth(series(res, group), 12.0, 28.0)
        assert steady == pytest.approx(wire, rel=tol), group
    for group, multiple in (("udp", 3.75), ("tcp", 2.0)):
        s = series(res, group)
        # Buffering: UDP at 6x capped at 300 Kbit/s (3.75x), TCP at 2x, over the first 2 s.
        first = h2h.average_bandwidth(s, 0.0, 2.0)
        assert first / 80_000 == pytest.approx(multiple, rel=0.25), group
        assert levels(res, group).max() == 0
    # 40 s of content with a 10 s lead: the last packet leaves near 30 s.
    assert series(res, "udp")["t_s"].max() == pytest.approx(30.0, abs=0.5)


def test_a_tcp_stream_is_app_limited_not_bulk():
    res = run(pair(levels=["45Kbps"]))
    total = series(res, "tcp")["bytes"].sum()
    # 40 s of 45 Kbit/s content (+ headers), not what a bulk flow would take out of 600 Kbps.
    assert total * 8 == pytest.approx(40 * 45_000 * 1.0274, rel=0.05)


def test_a_one_level_clip_never_scales_even_when_it_does_not_fit():
    res = run(pair(rate="75Kbps", levels=["150Kbps"]))
    assert set(levels(res, "udp")) == {0} and set(levels(res, "tcp")) == {0}


def test_scalable_streams_step_down_when_the_bottleneck_is_narrow():
    res = run(pair(rate="75Kbps", levels=["20Kbps", "34Kbps", "45Kbps", "80Kbps", "150Kbps"]))
    for group in ("udp", "tcp"):
        lv = levels(res, group)
        assert lv[0] == 4 and lv.min() <= 1, (group, lv.min())


def test_a_stop_time_ends_both_streams():
    res = run(pair(levels=["80Kbps"], stop="5s"))
    for group in ("udp", "tcp"):
        s = series(res, group)
        # What was sent or written by 5 s drains within a few RTTs; nothing is written after.
        assert s["t_s"].max() < 6.0, group
        assert s["bytes"].sum() * 8 < 5 * 300_000 * 1.1, group


def test_path_loss_drops_that_share_of_the_udp_packets():
    # The UDP stream alone, 300 Kbit/s for 60 s: about 2250 packets, none dropped by the TBF.
    d = pair(levels=["300Kbps"], clip="60s", path_loss=0.05)
    d["flows"] = d["flows"][:1]
    res = run(d)
    m = res.tables["media"]
    assert (res.tables["packets"]["event"] == "drop").sum() == 0
    assert (res.tables["packets"]["event"] == "arrive").sum() > 0
    loss = 1 - len(m) / (m["seq"].max() + 1)
    assert loss == pytest.approx(0.05, abs=0.015)  # 3 standard deviations of the binomial


def test_same_seed_same_packets_and_a_new_seed_changes_the_loss_pattern():
    d = pair(rate="150Kbps", path_loss=0.02)
    a, b = run(d), run(d)
    pd.testing.assert_frame_equal(a.tables["packets"], b.tables["packets"])
    d["seed"] = 2
    c = run(d)
    assert not a.tables["media"]["seq"].equals(c.tables["media"]["seq"])


@pytest.mark.parametrize("field, value, expect", [
    ("levels", ["80Kbps", "20Kbps"], "levels must be positive and strictly ascending"),
    ("transport", "sctp", "transport"),
    ("packet_size", "30B", "packet_size must exceed"),
    ("loss_down", 1.5, "loss_down"),
])
def test_bad_stream_fields_are_refused_naming_the_field(field, value, expect):
    d = pair()
    d["flows"][0]["app"][field] = value
    with pytest.raises(ScenarioError) as e:
        validate(d)
    assert any("flows.0.app" in line and expect in line for line in e.value.lines), e.value.lines


def test_bad_path_loss_is_refused_by_the_cli(tmp_path, write_scenario):
    d = pair()
    d["flows"][1]["path_loss"] = 1.0
    r = aqmlab("run", str(write_scenario(d)), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "flows.1.path_loss" in r.stderr and "less than 1" in r.stderr
    assert not (tmp_path / "out").exists()
