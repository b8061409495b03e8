"""`*` in a `--set` path: one override for every flow group that can take it (every TCP flow of
a reproduction whose scenarios mix TCP with video), and the errors around it."""

from __future__ import annotations

import pytest

from aqmlab.scenario import ScenarioError, load


def _tcp(sc):
    return {g.name: g.app.tcp for g in sc.flows if hasattr(g.app, "tcp")}


def test_star_sets_every_tcp_group_and_leaves_the_others():
    plain, _ = load("rb-rio/mixed-droptail")
    sc, raw = load("rb-rio/mixed-droptail", ["flows.*.app.tcp.profile=linux"])
    assert {n: t.congestion_control for n, t in _tcp(sc).items()} == {"tcp": "cubic"}
    # the scenario's own TCP fields win over the profile, as everywhere
    assert _tcp(sc)["tcp"].initial_cwnd == _tcp(plain)["tcp"].initial_cwnd == 2
    # the MPEG groups get no tcp table and are otherwise as before
    assert all("tcp" not in g["app"] for g in raw["flows"][1:])
    assert sc.flows[1:] == plain.flows[1:]


def test_star_on_a_scenario_without_tcp_changes_nothing():
    plain, _ = load("rb-rio/mpeg-droptail")
    sc, _ = load("rb-rio/mpeg-droptail", ["flows.*.app.tcp.congestion_control=bbr"])
    assert sc == plain


def test_star_applies_to_every_group_for_a_group_field():
    sc, _ = load("rb-rio/tcp-droptail", ["flows.*.start=3s"])
    assert [g.start for g in sc.flows] == [3_000_000_000] * len(sc.flows)


def test_star_on_two_groups_sets_both():
    sc, _ = load("rb-rio/tcp-droptail", ["flows.*.app.tcp.congestion_control=bbr", "flows.*.app.tcp.sack=true"])
    assert {n: (t.congestion_control, t.sack) for n, t in _tcp(sc).items()} == {
        "long": ("bbr", True), "joining": ("bbr", True)}


@pytest.mark.parametrize(("assignment", "message"), [
    ("flows.*.app.tpc.profile=linux", "no application has 'tpc'; did you mean 'tcp'?"),
    ("topology.*.rate=1Mbps", "* selects list items; topology is not a list"),
    ("flows.*.app.tcp.profil=linux", "unknown key 'profil'"),
    ("flows.*.app.tcp.profile=windows", "profile"),
])
def test_star_errors_name_what_was_written(assignment, message):
    with pytest.raises(ScenarioError) as e:
        load("rb-rio/mixed-droptail", [assignment])
    text = str(e.value)
    assert message in text
    assert assignment.partition("=")[0] in text
