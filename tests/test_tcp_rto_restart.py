"""`tcp.rto_restart_on_head_retransmit` (Linux's `tcp_xmit_retransmit_queue` restarting the RTO
at each retransmission of the head): off by default and left out of the engine config when off
(every existing run byte-identical), part of the linux profile, listed as not emulated, and
effective: on the SQF testbed's FIFO with the linux profile it takes away most timeouts
(docs/tcp.md: 25-38 a run without it, 0-7 with it, the kernel's 0-2)."""

from __future__ import annotations

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.run import simulate
from aqmlab.scenario import load
from aqmlab.scenario.applications import LINUX_PROFILE, Tcp
from conftest import engine_tcp_of_testbed

FIELD = "rto_restart_on_head_retransmit"


def test_off_by_default_and_absent_from_the_engine_config():
    assert getattr(Tcp(), FIELD) is False
    assert FIELD not in engine_tcp_of_testbed([])
    assert FIELD not in engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.{FIELD}=false"])


def test_the_linux_profile_restarts_the_timer_as_a_kernel_does():
    assert LINUX_PROFILE[FIELD] is True
    assert engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])[FIELD] is True


def test_listed_as_not_emulated():
    assert any(FIELD in line and "restarts the RTO when it retransmits the head" in line for line in NOT_EMULATED)


#: The linux profile as it was when the restart was measured (2026-11-28, morning): RFC 6298's
#: timed segment and RTO, no handshake. With the RTT samples from every ACK and Linux's RTO
#: estimator the profile now has, this run times out 3 times without the restart (docs/tcp.md).
MORNING_PROFILE = ["flows.tcp.app.tcp.rtt_sample_every_ack=false", "flows.tcp.app.tcp.rto_estimator=rfc6298",
                   "flows.tcp.app.tcp.handshake=false"]


def _timeouts(restart: bool) -> int:
    overrides = ["duration=60s", 'metrics.periods=[["10s","60s"]]', "flows.tcp.app.tcp.profile=linux",
                 *MORNING_PROFILE, f"flows.tcp.app.tcp.{FIELD}={str(restart).lower()}"]
    sc, _ = load("sqf/testbed-fifo", overrides)
    flows = simulate(sc, progress=False).tables["flows"]
    return int(flows.query("is_tcp == 1")["timeouts"].sum())


def test_the_restart_takes_away_most_timeouts_of_the_sqf_testbed():
    """Five CUBIC flows and the video through the 50-packet FIFO, seed 1, 60 s: without the
    restart a recovery whose retransmissions are lost times out one RTO after SND.UNA last
    moved while RACK is still resending them (25 timeouts when measured); with it, 2."""
    off, on = _timeouts(False), _timeouts(True)
    assert off >= 10, f"the run must time out without the restart for the check to bite: {off}"
    assert on * 4 <= off, f"timeouts with the restart {on}, without {off}"
