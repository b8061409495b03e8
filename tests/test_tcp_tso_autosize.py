"""`tcp.tso_autosize` (Linux's TSO autosizing, `tcp_tso_autosize`): off by default and left out
of the engine config when off (every earlier run byte-identical), part of the linux profile,
listed as not emulated, and effective on the wire: a paced BBR sender's segments reach the
bottleneck in back-to-back pairs, as the kernel's leave the emulator's veth (docs/tcp.md). The
burst size and the pacing of bursts are tested in Rust (crates/aqmlab-sim/src/tcp/tso.rs,
pacing.rs, and `tcp::tests::with_tso_autosize_...`)."""

from __future__ import annotations

import pytest

from aqmlab.api import load, run
from aqmlab.emu.run import NOT_EMULATED
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp
from conftest import engine_tcp_of_testbed

FIELD = "tso_autosize"
BASE = ["flows.tcp.count=2", "duration=6s", 'metrics.periods=[["2s","6s"]]']
#: A 1,396-1,500 B packet on sqf/testbed-fifo's 100 Mbit/s access links takes 112-120 µs: two
#: segments sent back to back arrive at the bottleneck that far apart; paced ones, at 10 Mbit/s
#: between two flows, more than a millisecond apart.
BACK_TO_BACK_NS = 200_000


def test_off_by_default_and_absent_from_the_engine_config():
    assert getattr(Tcp(), FIELD) is False
    assert FIELD not in engine_tcp_of_testbed([])
    assert FIELD not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{FIELD}=false"])


def test_the_linux_profile_sizes_skbs_as_a_kernel_does():
    assert LINUX_PROFILE[FIELD] is True
    assert engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])[FIELD] is True


def test_listed_as_not_emulated():
    assert any(FIELD in line and "sizes its skbs by TSO autosizing" in line for line in NOT_EMULATED)


def _back_to_back_share(tso: bool) -> float:
    res = run(load("sqf/testbed-fifo", set=[*BASE, "flows.tcp.app.tcp.profile=linux",
                                              "flows.tcp.app.tcp.congestion_control=bbr",
                                              f"flows.tcp.app.tcp.{FIELD}={str(tso).lower()}"]))
    tcp = res.flows.loc[res.flows["is_tcp"] == 1, "flow"]
    pk = res.packets
    data = pk[(pk["event"] == "arrive") & pk["flow"].isin(tcp) & (pk["t_ns"] >= 2e9) & (pk["size"] > 1000)]
    gaps = data.groupby("flow")["t_ns"].diff().dropna()
    assert len(gaps) > 1000, "the flows must have sent for this check to mean anything"
    return float((gaps < BACK_TO_BACK_NS).mean())


@pytest.mark.parametrize("tso, low, high", [(True, 0.3, 0.6), (False, 0.0, 0.02)])
def test_a_paced_bbr_sender_sends_pairs_only_with_the_option(tso, low, high):
    # 2 Mbit/s-10 Mbit/s of pacing is far below 1 ms of data per segment, so each skb holds the
    # floor of two segments: up to half the gaps are back to back (fewer where the window
    # or a loss cuts a pair short). Without the option a few are too (0.5 % here): a fast
    # retransmission leaves at once, whatever the pacer says (pacing.rs).
    assert low <= _back_to_back_share(tso) <= high
