"""`tcp.quickack`: Linux's quick-ACK start at a delayed-ACK receiver in a whole simulation. One
NewReno flow with an initial window of 10 and per-ACK growth (RFC 5681) over a 20 ms path: its
first round of 10 segments brings 10 ACKs with the quick-ACK start (16 quick ACKs at a 1 MB
window) and 5 without, so after the first round trip cwnd is 20 segments instead of 15."""

from __future__ import annotations

import pytest

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, validate
from conftest import one_tcp_flow_in_a_bdp_fifo

MSS = 1460


def _cwnd_after_first_round(quickack: bool) -> float:
    tcp = {"congestion_control": "newreno", "delayed_ack": True, "delayed_ack_timeout": "40ms", "initial_cwnd": 10,
           "min_rto": "200ms", "mss": f"{MSS}B", "quickack": quickack}
    sc = validate(one_tcp_flow_in_a_bdp_fifo("quickack", tcp, duration="1s", records={"flow_sample": "1ms"},
                                             metrics={"periods": [["0s", "1s"]]}), "test")
    samples = simulate(sc, progress=False).tables["flow_samples"]
    # The first round's ACKs are back by 35 ms (10 segments of 1.2 ms behind a 20 ms RTT); the
    # second round's first ACK comes after 40 ms.
    at = samples[samples["t_ns"] >= 37_000_000].iloc[0]
    return at["cwnd_bytes"] / MSS


def test_the_quick_ack_start_acks_every_segment_of_the_first_round():
    assert _cwnd_after_first_round(False) == 15
    assert _cwnd_after_first_round(True) == 20


def test_quickack_without_delayed_acks_is_refused_in_one_line_naming_the_field():
    with pytest.raises(ScenarioError) as e:
        validate({"name": "x", "duration": "1s", "topology": {"bottleneck": {"rate": "10Mbps", "delay": "1ms"}},
                  "flows": [{"name": "t", "app": {"kind": "bulk", "tcp": {"quickack": True}}}]}, "test")
    message = str(e.value)
    assert "quickack: the quick-ACK start belongs to a delayed-ACK receiver" in message
    assert "allowed without delayed_ack: false" in message


def test_quickack_is_on_the_emulators_not_emulated_list():
    assert any("quickack" in line and "always runs the quick-ACK start" in line for line in NOT_EMULATED)
