"""`tcp.rack` (RACK-TLP, RFC 8985): off by default and left out of the engine config when off
(every existing run byte-identical), passed to the simulator when on, part of the linux profile
(as a kernel runs it), and listed as not emulated (the kernel runs its own)."""

from __future__ import annotations

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp
from conftest import engine_tcp_of_testbed


def test_rack_is_off_by_default_and_absent_from_the_engine_config():
    assert Tcp().rack is False
    assert "rack" not in engine_tcp_of_testbed([])
    assert "rack" not in engine_tcp_of_testbed(["flows.tcp.app.tcp.sack=true"])


def test_the_linux_profile_runs_rack_as_a_kernel_does():
    assert LINUX_PROFILE["rack"] is True
    assert engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])["rack"] is True


def test_rack_on_reaches_the_engine():
    engine = engine_tcp_of_testbed(["flows.tcp.app.tcp.sack=true", "flows.tcp.app.tcp.rack=true"])
    assert engine["rack"] is True and engine["sack"] is True


def test_rack_is_listed_as_not_emulated():
    assert any("rack" in line and "RACK-TLP whenever sack is on" in line for line in NOT_EMULATED)
