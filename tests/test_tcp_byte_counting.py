"""`tcp.byte_counting`: window growth by acknowledged bytes (RFC 3465, L = 2), as a kernel grows
behind a delayed-ACK receiver. One NewReno flow with delayed ACKs through a one-BDP FIFO: with
byte counting congestion avoidance climbs one segment per RTT instead of half of one, so the
sawtooth is twice as fast and the flow has about twice the loss episodes; the L limit keeps a
cumulative ACK after a loss from bursting the window open (no timeouts either way)."""

from __future__ import annotations

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import validate
from conftest import one_tcp_flow_in_a_bdp_fifo


def _flow(byte_counting: bool):
    tcp = {"congestion_control": "newreno", "sack": True, "delayed_ack": True, "delayed_ack_timeout": "40ms",
           "initial_cwnd": 10, "min_rto": "200ms", "mss": "1460B", "byte_counting": byte_counting}
    sc = validate(one_tcp_flow_in_a_bdp_fifo("byte-counting", tcp), "test")
    return simulate(sc, progress=False).tables["flows"].iloc[0]


def test_byte_counting_doubles_the_sawtooth_behind_delayed_acks():
    per_ack, counted = _flow(False), _flow(True)
    assert per_ack["timeouts"] == 0 and counted["timeouts"] == 0
    ratio = counted["fast_retransmits"] / per_ack["fast_retransmits"]
    assert ratio == pytest.approx(2.0, rel=0.25), (per_ack["fast_retransmits"], counted["fast_retransmits"])
