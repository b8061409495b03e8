"""`tcp.profile`: "rfc" (the default) changes nothing; "linux" sets a current kernel's
defaults for every field the scenario leaves unset, and a field set explicitly wins."""

from __future__ import annotations

import pytest

from aqmlab.scenario import load
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp

BASE = ["flows.tcp.count=1", "duration=2s", 'metrics.periods=[["0s","2s"]]']


def _engine_tcp(overrides: list[str]) -> dict:
    sc, _ = load("sqf/testbed-fifo", BASE + overrides)
    groups = sc.to_sim_config()["flow_groups"]
    return next(g["app"]["tcp"] for g in groups if g["name"] == "tcp")


def test_rfc_profile_is_the_default_and_normalizes_exactly_as_before():
    unset = _engine_tcp([])
    explicit = _engine_tcp(["flows.tcp.app.tcp.profile=rfc"])
    assert unset == explicit
    # The new engine options are left out when off: the engine config is what it was.
    assert "prr" not in unset and "limited_transmit" not in unset
    assert Tcp().profile == "rfc" and not Tcp().prr and not Tcp().limited_transmit


def test_linux_profile_sets_the_kernel_defaults():
    t = Tcp.model_validate({"profile": "linux"})
    assert (t.congestion_control, t.sack, t.prr, t.limited_transmit, t.delayed_ack) == ("cubic", True, True, True, True)
    assert t.initial_cwnd == 10
    assert t.min_rto == 200_000_000 and t.delayed_ack_timeout == 40_000_000
    engine = _engine_tcp(["flows.tcp.app.tcp.profile=linux"])
    assert engine["prr"] is True and engine["limited_transmit"] is True
    assert engine["congestion_control"] == "cubic" and engine["initial_cwnd_segments"] == 10
    assert engine["min_rto_ns"] == 200_000_000


@pytest.mark.parametrize("field, value, read", [
    ("congestion_control", "newreno", "newreno"),
    ("prr", "false", False),
    ("sack", "false", False),
    ("initial_cwnd", "4", 4),
    ("min_rto", "1s", 1_000_000_000),
])
def test_an_explicit_field_wins_over_the_profile(field, value, read):
    sc, _ = load("sqf/testbed-fifo", BASE + ["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{field}={value}"])
    tcp = next(g.app.tcp for g in sc.flows if g.name == "tcp")
    assert getattr(tcp, field) == read
    # Every other profile field keeps the profile's value.
    linux = Tcp.model_validate({"profile": "linux"})
    for other in LINUX_PROFILE:
        if other != field:
            assert getattr(tcp, other) == getattr(linux, other), other
