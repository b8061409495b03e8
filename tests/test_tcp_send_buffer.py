"""`tcp.send_buffer` (the sender's socket buffer, net.ipv4.tcp_wmem's third value): unset by
default and left out of the engine config when unset (every earlier run byte-identical), 4 MiB
in the linux profile, emulated as the namespaces' tcp_wmem, and effective: a bulk flow whose
path holds more than the buffer keeps no more than the buffer in flight. The writer's rule and
the memory per segment are tested in Rust (crates/aqmlab-sim/src/tcp/send_buffer.rs)."""

from __future__ import annotations

import pytest

from aqmlab.emu.run import NOT_EMULATED, namespace_sysctls
from aqmlab.scenario import load
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp
from conftest import engine_tcp_of_testbed, flow_samples_of_one_flow_on_a_long_path

FIELD = "send_buffer"
MSS = 1460


def test_unset_by_default_and_absent_from_the_engine_config():
    assert getattr(Tcp(), FIELD) is None
    assert FIELD not in engine_tcp_of_testbed([])
    assert FIELD not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=ns3"])


def test_the_linux_profile_has_the_kernels_four_mebibytes():
    assert LINUX_PROFILE[FIELD] == "4194304B"
    assert engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])[FIELD] == 4 * 1024 * 1024
    one_mb = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{FIELD}=1MB"])
    assert one_mb[FIELD] == 1_000_000


def test_emulated_as_the_namespaces_tcp_wmem():
    sc, _ = load("sqf/testbed-fifo", [f"flows.tcp.app.tcp.{FIELD}=8MiB"])
    assert namespace_sysctls(sc)["net.ipv4.tcp_wmem"] == f"4096 16384 {8 * 1024 * 1024}"
    sc, _ = load("sqf/testbed-fifo", [])
    assert "net.ipv4.tcp_wmem" not in namespace_sysctls(sc)
    assert any(f"{FIELD} when unset" in line for line in NOT_EMULATED)


def test_zero_is_unlimited_and_gives_the_profile_before_back():
    assert FIELD not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{FIELD}=0B"])
    sc, _ = load("sqf/testbed-fifo", [f"flows.tcp.app.tcp.{FIELD}=0B"])
    assert "net.ipv4.tcp_wmem" not in namespace_sysctls(sc)


@pytest.mark.parametrize("value, says", [("lots", "size"), ("100B", "allowed: at least 4096 B, or 0 B")])
def test_bad_values_are_refused_naming_the_field(value, says):
    with pytest.raises(Exception, match=FIELD) as e:
        load("sqf/testbed-fifo", [f"flows.tcp.app.tcp.{FIELD}={value}"])
    assert says in str(e.value)


def _goodput_mbps(send_buffer: str | None) -> float:
    """One linux-profile cubic flow, 10 Mbit/s, 200 ms base RTT (250 kB in the path), a 2 BDP
    FIFO: its goodput over 5-20 s."""
    tcp = {"profile": "linux", "mss": f"{MSS}B", **({FIELD: send_buffer} if send_buffer else {})}
    fs = flow_samples_of_one_flow_on_a_long_path(tcp)
    delivered = fs.loc[fs["t_ns"] >= 5e9, "delivered_bytes"]
    return float(delivered.iloc[-1] - delivered.iloc[0]) * 8 / 15 / 1e6


def test_a_flow_keeps_no_more_than_the_buffer_in_flight():
    # 64 KiB: a write fills it (63,196 B of payload at 1.037 B of memory per byte: 44 segments
    # of 1460 B) and the next waits until two thirds of its memory (29 segments) is left: 29-44
    # segments a round trip of 0.2 s, 1.69-2.57 Mbit/s of payload.
    assert 1.6 < _goodput_mbps("64KiB") < 2.57
    assert _goodput_mbps(None) > 8.0
