"""`tcp.cwnd_limited_growth` (Linux's `tcp_is_cwnd_limited`): off by default and left out of
the engine config when off (every earlier run byte-identical), in the linux profile, listed as
not emulated, and effective: a flow held back by its send buffer keeps about the window it
uses. The rule's bookkeeping is tested in Rust (crates/aqmlab-sim/src/tcp/cwnd_limited.rs)."""

from __future__ import annotations

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp
from conftest import engine_tcp_of_testbed, flow_samples_of_one_flow_on_a_long_path

FIELD = "cwnd_limited_growth"
MSS = 1460


def test_off_by_default_and_absent_from_the_engine_config():
    assert getattr(Tcp(), FIELD) is False
    assert FIELD not in engine_tcp_of_testbed([])
    assert engine_tcp_of_testbed([f"flows.tcp.app.tcp.{FIELD}=true"])[FIELD] is True


def test_the_linux_profile_grows_a_window_as_a_kernel_does():
    assert LINUX_PROFILE[FIELD] is True
    assert engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])[FIELD] is True
    assert FIELD not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{FIELD}=false"])


def test_listed_as_not_emulated():
    assert any(FIELD in line and "grows a window only while it limits sending" in line for line in NOT_EMULATED)


def _largest_window(growth_rule: bool) -> float:
    """One linux-profile cubic flow held back by a 64 KiB send buffer (44 segments at most in
    flight) on a 10 Mbit/s path with a 200 ms base RTT: its largest cwnd, in segments."""
    tcp = {"profile": "linux", "mss": f"{MSS}B", "send_buffer": "64KiB", FIELD: growth_rule}
    return float(flow_samples_of_one_flow_on_a_long_path(tcp)["cwnd_bytes"].max()) / MSS


def test_a_window_the_sender_does_not_use_does_not_grow():
    # Slow start may grow cwnd below twice the most outstanding (2 x 44; the ACK that crosses
    # it adds up to two segments), no further (90 here); without the rule every ACK grows it,
    # up to the autotuned receiver's window (165 here).
    assert _largest_window(True) <= 2 * 44 + 2
    assert _largest_window(False) > 120
