"""DCTCP (RFC 8257) with ECT(1) through DualPI2 (RFC 9332) at 100 Mbit/s, in the built-in
`l4s/dctcp-cubic-video` scenario: the L queue's delay, that ECT(1) is what puts DCTCP there,
the rates of DCTCP and CUBIC side by side, and the emulator's refusal of what it cannot run."""

from __future__ import annotations

import pytest

from aqmlab.emu.run import emulation_problems
from aqmlab.run import simulate
from aqmlab.scenario import load

# One full-sized TCP packet (mss 1460 B + 40 B of headers) at 100 Mbit/s.
ONE_PACKET_NS = 1500 * 8 / 100e6 * 1e9


def _dequeues(*overrides: str, duration: str = "8s", since_s: float = 3.0):
    sc, _ = load("l4s/dctcp-cubic-video", overrides=[f"duration={duration}",
                                                     f'metrics.periods=[["{since_s:g}s", "{duration}"]]',
                                                     *overrides])
    res = simulate(sc, progress=False)
    assert res.summary["sim"]["bottleneck"]["invariants_ok"] is True
    p = res.tables["packets"]
    flows = res.tables["flows"]
    d = p[(p["event"] == "dequeue") & (p["t_ns"] >= since_s * 1e9)]
    group = dict(zip(flows["flow"], flows["group_name"], strict=True))
    return d.assign(group=d["flow"].map(group))


def test_dctcp_with_ect1_keeps_the_l_queue_under_1ms_plus_one_packet():
    d = _dequeues()
    dctcp, cubic = d[d["group"] == "dctcp"], d[d["group"] == "cubic"]
    # RFC 9332's L queue: measured p99 0.68-0.87 ms per DCTCP flow in 3-8 s.
    for flow, g in dctcp.groupby("flow"):
        assert g["sojourn_ns"].quantile(0.99) < 1e6 + ONE_PACKET_NS, (flow, g["sojourn_ns"].quantile(0.99))
    assert dctcp["marked"].mean() > 0.01, "DCTCP runs on the L queue's CE marks"
    # CUBIC (Not-ECT) waits in the classic queue near PI2's 15 ms target.
    assert cubic["sojourn_ns"].quantile(0.5) > 5e6
    assert not cubic["marked"].any()


def test_with_ect0_dctcp_is_classic_traffic_and_waits_in_the_classic_queue():
    # The same DCTCP flows with ECT(0): DualPI2's default l4s_ect mask sends them to the C
    # queue, whose delay they then share (so ECT(1) is what gave the sub-millisecond delay).
    d = _dequeues("flows.dctcp.app.tcp.ecn_codepoint=ect0")
    assert d[d["group"] == "dctcp"]["sojourn_ns"].quantile(0.5) > 5e6


def _rates(*overrides: str) -> tuple[float, float]:
    d = _dequeues("flows.dctcp.count=1", "flows.cubic.count=1", "flows.video.app.rate=1Mbps", *overrides,
                  duration="20s", since_s=5.0)
    mbps = d.groupby("group")["size"].sum() * 8 / 15 / 1e6
    return float(mbps["dctcp"]), float(mbps["cubic"])


@pytest.mark.xfail(strict=True, reason="measured: DCTCP 69.4 Mbit/s vs CUBIC 29.6 (ratio 2.35) at a "
                                       "16 ms base RTT with DualPI2's defaults; see docs/aqm.md")
def test_dctcp_and_cubic_get_rates_within_a_factor_2_through_dualpi2():
    # RFC 9332 section 2.1's aim for the coupling (k = 2): one DCTCP and one CUBIC flow with
    # the same base RTT get rates within a factor 2.
    dctcp, cubic = _rates("flows.dctcp.sender_delay=2ms", "flows.cubic.sender_delay=2ms")
    assert 0.5 < dctcp / cubic < 2, (dctcp, cubic)


def test_the_emulator_refuses_dctcp_and_ect1_naming_the_field():
    sc, _ = load("l4s/dctcp-cubic-video")
    problems = emulation_problems(sc)
    assert any(p.startswith("flows.dctcp.app.tcp.congestion_control: 'dctcp' is simulator-only") for p in problems)
    assert any(p.startswith("flows.dctcp.app.tcp.ecn_codepoint: 'ect1' is simulator-only") for p in problems)
