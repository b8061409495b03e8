"""`tcp.hystart` (HyStart++, RFC 9406): off by default and left out of the engine config when off
(every existing run byte-identical), passed to the simulator when on, not part of the linux or
ns3 profiles, refused with bbr, and listed as not emulated (the kernel's cubic runs its own
HyStart)."""

from __future__ import annotations

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.scenario.applications import LINUX_PROFILE, NS3_PROFILE, Tcp
from conftest import engine_tcp_of_testbed


def test_hystart_is_off_by_default_and_absent_from_the_engine_config():
    assert Tcp().hystart is False
    assert "hystart" not in engine_tcp_of_testbed([])
    assert "hystart" not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])
    assert "hystart" not in LINUX_PROFILE and "hystart" not in NS3_PROFILE


def test_hystart_on_reaches_the_engine():
    engine = engine_tcp_of_testbed(["flows.tcp.app.tcp.congestion_control=cubic", "flows.tcp.app.tcp.hystart=true"])
    assert engine["hystart"] is True and engine["congestion_control"] == "cubic"
    # With the linux profile too: a field the scenario sets is added to the profile's.
    engine = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", "flows.tcp.app.tcp.hystart=true"])
    assert engine["hystart"] is True and engine["prr"] is True


def test_hystart_is_listed_as_not_emulated():
    assert any("hystart" in line and "HyStart++" in line for line in NOT_EMULATED)
