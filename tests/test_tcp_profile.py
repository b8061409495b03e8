"""`tcp.profile`: "rfc" (the default) changes nothing; "linux" sets a current kernel's
defaults and "ns3" ns-3 3.44's for every field the scenario leaves unset, and a field set
explicitly wins; an unknown profile is refused naming the allowed values."""

from __future__ import annotations

import pytest

from aqmlab.scenario import ScenarioError, load
from aqmlab.scenario.applications import LINUX_PROFILE, NS3_PROFILE, Tcp
from conftest import engine_tcp_of_testbed

BASE = ["flows.tcp.count=1", "duration=2s", 'metrics.periods=[["0s","2s"]]']


def test_rfc_profile_is_the_default_and_normalizes_exactly_as_before():
    unset = engine_tcp_of_testbed([])
    explicit = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=rfc"])
    assert unset == explicit
    # The new engine options are left out when off: the engine config is what it was.
    assert "prr" not in unset and "limited_transmit" not in unset
    assert "ssthresh_basis" not in unset and "tso_autosize" not in unset
    assert Tcp().profile == "rfc" and not Tcp().prr and not Tcp().limited_transmit


def test_linux_profile_sets_the_kernel_defaults():
    t = Tcp.model_validate({"profile": "linux"})
    assert (t.congestion_control, t.sack, t.prr, t.limited_transmit, t.delayed_ack) == ("cubic", True, True, True, True)
    assert (t.rack, t.cubic_hystart, t.byte_counting) == (True, True, True)
    # tcp_cubic.c keeps alpha_cubic in its Reno-friendly region (RFC 9438 4.3's switch unset).
    assert t.cubic_alpha_to_one is False
    assert t.initial_cwnd == 10 and t.rwnd == 6291456
    # The receiver's window autotuned as a kernel's is, with rwnd its ceiling (tcp_rmem[2]).
    assert t.rwnd_autotuning is True and t.quickack is False
    assert t.min_rto == 200_000_000 and t.delayed_ack_timeout == 40_000_000
    assert not (t.hystart or t.frto or t.paced())
    engine = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])
    assert engine["prr"] is True and engine["limited_transmit"] is True and "prr_variant" not in engine
    assert engine["rack"] is True and engine["cubic_hystart"] is True and engine["byte_counting"] is True
    assert engine["cubic_alpha_to_one"] is False and engine["rwnd_autotuning"] is True
    assert engine["rto_restart_on_head_retransmit"] is True
    # Linux's skb-sized bursts: set, though they shape only paced senders (bbr; not this cubic).
    assert t.tso_autosize is True and engine["tso_autosize"] is True and "pacing" not in engine
    assert "quickack" not in engine
    assert engine["congestion_control"] == "cubic" and engine["initial_cwnd_segments"] == 10
    assert engine["min_rto_ns"] == 200_000_000
    # sqf/testbed-fifo writes its own receive window: the scenario's value wins over the profile's.
    assert engine["rwnd"] == 4_000_000


@pytest.mark.parametrize("written, off, kept", [
    ({"congestion_control": "bbr"}, "cubic_hystart", "rack"),
    ({"congestion_control": "newreno"}, "cubic_hystart", "byte_counting"),
    ({"congestion_control": "newreno"}, "cubic_alpha_to_one", "byte_counting"),
    ({"congestion_control": "bbr"}, "cubic_alpha_to_one", "rack"),
    ({"hystart": True}, "cubic_hystart", "hystart"),
    ({"sack": False}, "rack", "cubic_hystart"),
])
def test_linux_profile_values_that_the_stack_cannot_run_are_left_off(written, off, kept):
    """CUBIC's HyStart exists inside cubic alone and yields to a scenario's HyStart++; RACK-TLP
    needs SACK: the profile leaves them off there instead of refusing the scenario."""
    t = Tcp.model_validate({"profile": "linux", **written})
    profile_value = LINUX_PROFILE[off]
    assert Tcp.model_validate({"profile": "linux"}).model_dump()[off] is profile_value
    # Left off: a flag falls back to false, CUBIC's alpha rule (a cubic-only tri-state) to unset.
    assert getattr(t, off) is (None if off == "cubic_alpha_to_one" else False)
    assert getattr(t, kept) is True


def test_a_contradiction_the_scenario_writes_itself_is_still_refused():
    with pytest.raises(ScenarioError) as e:
        load("sqf/testbed-fifo", BASE + ["flows.tcp.app.tcp.profile=linux", "flows.tcp.app.tcp.congestion_control=bbr",
                                         "flows.tcp.app.tcp.cubic_hystart=true"])
    assert "cubic_hystart" in str(e.value) and "allowed with bbr: false" in str(e.value)


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
    # ... except a value the profile sets only where the stack can run it (the test above).
    # (sqf/testbed-fifo writes its own rwnd, which wins too.)
    left_off = {"congestion_control": {"cubic_hystart", "cubic_alpha_to_one"}, "sack": {"rack"}}.get(field, set())
    for other in LINUX_PROFILE:
        if other not in {field, "rwnd"} | left_off:
            assert getattr(tcp, other) == getattr(linux, other), other
    for other in left_off:
        assert getattr(tcp, other) is (None if other == "cubic_alpha_to_one" else False), other


def _ns3_engine_tcp(overrides: list[str]) -> dict:
    """links/wifi-call-fifo's TCP group (it sets only `profile`) with profile ns3."""
    sc, _ = load("links/wifi-call-fifo", ["duration=2s", 'metrics.periods=[["0s","2s"]]',
                                          "flows.tcp.app.tcp.profile=ns3", *overrides])
    groups = sc.to_sim_config()["flow_groups"]
    return next(g["app"]["tcp"] for g in groups if g["name"] == "tcp")


def test_ns3_profile_sets_ns3_344_defaults():
    t = Tcp.model_validate({"profile": "ns3"})
    assert (t.congestion_control, t.sack, t.prr, t.limited_transmit) == ("cubic", True, True, True)
    assert t.prr_variant == "ns3" and t.cubic_alpha_to_one is False
    assert t.initial_cwnd == 10 and t.delayed_ack is True and t.delayed_ack_timeout == 200_000_000
    assert t.min_rto == 1_000_000_000 and t.initial_rto == 1_000_000_000 and t.max_rto == 60_000_000_000
    assert t.clock_granularity == 1_000_000 and t.mss == 536 and t.rwnd == 131072
    # What ns-3 3.44 has not, or has off by default, stays off.
    assert not (t.ecn or t.frto or t.rack or t.hystart or t.paced())
    engine = _ns3_engine_tcp([])
    assert engine["congestion_control"] == "cubic" and engine["sack"] is True
    assert engine["prr"] is True and engine["limited_transmit"] is True and engine["prr_variant"] == "ns3"
    assert engine["cubic_alpha_to_one"] is False
    # ns-3's receive buffer is fixed and its RTO restarts on new ACKs alone.
    assert "rwnd_autotuning" not in engine and "rto_restart_on_head_retransmit" not in engine
    assert "quickack" not in engine
    assert engine["initial_cwnd_segments"] == 10 and engine["mss"] == 536 and engine["rwnd"] == 131072
    assert engine["delayed_ack"] is True and engine["delayed_ack_timeout_ns"] == 200_000_000
    assert engine["min_rto_ns"] == 1_000_000_000 and engine["initial_rto_ns"] == 1_000_000_000
    assert "rack" not in engine and "hystart" not in engine and "pacing" not in engine
    assert "tso_autosize" not in engine  # ns-3 has no segmentation offload
    # sqf/testbed-fifo writes mss, initial_cwnd, min_rto and rwnd itself: those win.
    own = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=ns3"])
    assert (own["mss"], own["rwnd"], own["min_rto_ns"]) == (1460, 4_000_000, 200_000_000)
    assert own["delayed_ack_timeout_ns"] == 200_000_000 and own["prr"] is True
    # Every field the profile names differs from the rfc default or is one ns-3 states itself.
    rfc = Tcp()
    assert {f for f in NS3_PROFILE if getattr(t, f) != getattr(rfc, f)} == {
        "congestion_control", "sack", "prr", "prr_variant", "cubic_alpha_to_one", "limited_transmit", "initial_cwnd",
        "delayed_ack", "mss", "rwnd"}


def test_the_ns3_prr_variant_follows_prr_and_reaches_the_engine_only_when_set():
    # A scenario that switches PRR off under the ns3 profile runs ns-3's classic recovery: the
    # profile's variant is dropped with it, not refused.
    engine = _ns3_engine_tcp(["flows.tcp.app.tcp.prr=false"])
    assert "prr" not in engine and "prr_variant" not in engine
    assert Tcp.model_validate({"profile": "ns3", "prr": False}).prr_variant == "linux"
    # Linux's variant (the default) normalizes as before the field existed.
    assert "prr_variant" not in _ns3_engine_tcp(["flows.tcp.app.tcp.prr_variant=linux"])
    assert "prr_variant" not in engine_tcp_of_testbed(["flows.tcp.app.tcp.prr=true", "flows.tcp.app.tcp.sack=true"])


@pytest.mark.parametrize("field, value, read", [
    ("congestion_control", "newreno", "newreno"),
    ("mss", "1460B", 1460),
    ("rwnd", "4MiB", 4 * 1024 * 1024),
    ("delayed_ack", "false", False),
    ("min_rto", "200ms", 200_000_000),
])
def test_an_explicit_field_wins_over_the_ns3_profile(field, value, read):
    sc, _ = load("links/wifi-call-fifo", ["flows.tcp.app.tcp.profile=ns3", f"flows.tcp.app.tcp.{field}={value}"])
    tcp = next(g.app.tcp for g in sc.flows if g.name == "tcp")
    assert getattr(tcp, field) == read
    ns3 = Tcp.model_validate({"profile": "ns3"})
    # CUBIC's alpha rule is CUBIC's: with newreno the profile leaves it unset.
    left_off = {"cubic_alpha_to_one"} if field == "congestion_control" else set()
    for other in NS3_PROFILE:
        if other != field and other not in left_off:
            assert getattr(tcp, other) == getattr(ns3, other), other
    for other in left_off:
        assert getattr(tcp, other) is None, other


def test_an_unknown_profile_is_refused_naming_the_allowed_values():
    with pytest.raises(ScenarioError) as e:
        load("sqf/testbed-fifo", BASE + ["flows.tcp.app.tcp.profile=bsd"])
    text = str(e.value)
    assert len(text.strip().splitlines()) == 1, text
    assert "profile" in text and "'rfc', 'linux' or 'ns3'" in text, text


def test_ssthresh_basis_reaches_the_engine_only_when_it_is_not_flight_size():
    pipe = engine_tcp_of_testbed(["flows.tcp.app.tcp.sack=true", "flows.tcp.app.tcp.ssthresh_basis=pipe"])
    cwnd = engine_tcp_of_testbed(["flows.tcp.app.tcp.sack=true", "flows.tcp.app.tcp.ssthresh_basis=cwnd"])
    flight = engine_tcp_of_testbed(["flows.tcp.app.tcp.sack=true", "flows.tcp.app.tcp.ssthresh_basis=flight_size"])
    assert pipe["ssthresh_basis"] == "pipe" and cwnd["ssthresh_basis"] == "cwnd"
    assert "ssthresh_basis" not in flight
    # Neither profile sets it: ns-3's CUBIC reduces from cwnd, not from the pipe.
    assert "ssthresh_basis" not in NS3_PROFILE and "ssthresh_basis" not in LINUX_PROFILE
