"""`tcp.cubic_hystart`: tcp_cubic.c's HyStart in a whole simulation. One CUBIC flow with an ACK
per segment through a one-BDP FIFO at 10 Mbit/s (BDP 17 packets, 34 packets fit in the path):
without it slow start overshoots into a loss; with it the ACK train test ends slow start first,
so ssthresh is set below 34 segments before any retransmission, and the run retransmits less."""

from __future__ import annotations

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, validate
from conftest import one_tcp_flow_in_a_bdp_fifo

MSS = 1460


def _run(cubic_hystart: bool):
    tcp = {"congestion_control": "cubic", "sack": True, "delayed_ack": False, "initial_cwnd": 10, "min_rto": "200ms",
           "mss": f"{MSS}B", "cubic_hystart": cubic_hystart}
    sc = validate(one_tcp_flow_in_a_bdp_fifo("cubic-hystart", tcp, records={"flow_sample": "5ms"}), "test")
    r = simulate(sc, progress=False)
    samples = r.tables["flow_samples"]
    first = samples[samples["ssthresh_bytes"].notna()].iloc[0]
    return first["ssthresh_bytes"] / MSS, r.tables["flows"].iloc[0]


def test_cubic_hystart_ends_slow_start_before_the_path_overflows():
    plain_ssthresh, plain = _run(False)
    hystart_ssthresh, hystart = _run(True)
    # Without HyStart slow start ends by a loss, its ssthresh 0.7 of a window above 34.
    assert plain_ssthresh > 34 * 0.7
    assert plain["fast_retransmits"] >= 1
    # With it, ssthresh = cwnd below what the path holds, and fewer segments resent overall.
    assert hystart_ssthresh < 34
    assert hystart["retransmissions"] < plain["retransmissions"]


@pytest.mark.parametrize(("tcp", "message"), [
    ({"congestion_control": "newreno", "cubic_hystart": True}, "cubic_hystart: CUBIC's own HyStart needs"),
    ({"congestion_control": "cubic", "cubic_hystart": True, "hystart": True}, "one slow-start exit at a time"),
])
def test_cubic_hystart_refusals_name_the_field(tcp, message):
    with pytest.raises(ScenarioError) as e:
        validate({"name": "x", "duration": "1s", "topology": {"bottleneck": {"rate": "10Mbps", "delay": "1ms"}},
                  "flows": [{"name": "t", "app": {"kind": "bulk", "tcp": tcp}}]}, "test")
    assert message in str(e.value)
