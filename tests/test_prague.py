"""TCP Prague (draft-briscoe-iccrg-prague-congestion-control, crates/aqmlab-sim/src/tcp/cc/prague.rs)
through DualPI2: its reduced RTT-dependence measured against DCTCP's, the built-in
`l4s/prague-cubic-video` scenario, the schema's refusals and the emulator's."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqmlab.emu.run import emulation_problems
from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, load

# Two bulk flows through DualPI2 (tc-dualpi2 defaults) at 40 Mbit/s: base RTT 10 ms (2 + 2 ms
# on the bottleneck and back, 2 ms sender access each way, 1 ms receiver access each way) and
# 80 ms (37 ms sender access). 40 s: Prague's RTT independence starts after 500 rounds of
# congestion avoidance (Linux's default), about 6 s for the 10 ms flow; rates from 15 s on.
_TWO_RTTS = """
name = "prague-two-rtts"
description = "a 10 ms and an 80 ms base-RTT flow through DualPI2 at 40 Mbit/s"
seed = 1
duration = "40s"

[topology.bottleneck]
rate = "40Mbps"
delay = "2ms"
qdisc = {{ kind = "dualpi2" }}

[topology.reverse]
rate = "40Mbps"
delay = "2ms"
qdisc = {{ kind = "droptail", limit = "1000p" }}

[[flows]]
name = "short"
count = 1
access_rate = "1Gbps"
sender_delay = "2ms"
app = {{ kind = "bulk", tcp = {tcp} }}

[[flows]]
name = "long"
count = 1
access_rate = "1Gbps"
sender_delay = "37ms"
app = {{ kind = "bulk", tcp = {tcp} }}

[records]
packet_events = true

[metrics]
periods = [["15s", "40s"]]
"""


def _rates(tmp_path: Path, cc: str, *overrides: str) -> dict[str, float]:
    path = tmp_path / f"{cc}.toml"
    tcp = (f'{{ congestion_control = "{cc}", ecn = true, ecn_codepoint = "ect1", initial_cwnd = 10, '
           f'min_rto = "200ms", rwnd = "8MB" }}')
    path.write_text(_TWO_RTTS.format(tcp=tcp))
    sc, _ = load(str(path), overrides=list(overrides))
    res = simulate(sc, progress=False)
    p, flows = res.tables["packets"], res.tables["flows"]
    group = dict(zip(flows["flow"], flows["group_name"], strict=True))
    d = p[(p["event"] == "dequeue") & (p["t_ns"] >= 15e9)]
    mbps = d.groupby(d["flow"].map(group))["size"].sum() * 8 / 25 / 1e6
    return {g: float(mbps[g]) for g in ("short", "long")}


def test_prague_flows_at_10_and_80_ms_get_rates_closer_than_dctcp_flows(tmp_path):
    prague = _rates(tmp_path, "prague")
    dctcp = _rates(tmp_path, "dctcp")
    r_prague = prague["short"] / prague["long"]
    r_dctcp = dctcp["short"] / dctcp["long"]
    # Measured (seed 1, 15-40 s): Prague 28.7 vs 11.3 Mbit/s (ratio 2.53); DCTCP 39.2 vs 0.39
    # (ratio 99: the 80 ms flow sits at its 2-segment floor). Paced DCTCP gives 14.5 and Prague
    # without RTT independence 18.4, so the RTT-scaled increase is what closes the gap
    # (docs/tcp.md). Margins: Prague must at least halve the RTT ratio of 8 that 1/RTT sharing
    # would give (ratio < 4; measured 2.53), and beat DCTCP's ratio by at least 4x (measured 39x).
    assert sum(prague.values()) > 0.9 * 40, prague  # the link stays full
    assert r_prague < 4, (prague, dctcp)
    assert r_prague * 4 < r_dctcp, (prague, dctcp)


def test_the_scenario_puts_prague_in_the_l_queue_under_1ms_plus_one_packet():
    sc, _ = load("l4s/prague-cubic-video", overrides=["duration=8s", 'metrics.periods=[["3s", "8s"]]'])
    res = simulate(sc, progress=False)
    assert res.summary["sim"]["bottleneck"]["invariants_ok"] is True
    p, flows = res.tables["packets"], res.tables["flows"]
    group = dict(zip(flows["flow"], flows["group_name"], strict=True))
    d = p[(p["event"] == "dequeue") & (p["t_ns"] >= 3e9)]
    d = d.assign(group=d["flow"].map(group))
    prague = d[d["group"] == "prague"]
    one_packet_ns = 1500 * 8 / 100e6 * 1e9
    for flow, g in prague.groupby("flow"):
        assert g["sojourn_ns"].quantile(0.99) < 1e6 + one_packet_ns, (flow, g["sojourn_ns"].quantile(0.99))
    assert prague["marked"].mean() > 0.001, "Prague runs on the L queue's CE marks"


@pytest.mark.parametrize(("tcp", "message"), [
    ('{ congestion_control = "prague", ecn_codepoint = "ect1" }', "congestion_control: prague needs ecn = true"),
    ('{ congestion_control = "prague", ecn = true }', "ecn_codepoint: prague needs ect1"),
    ('{ congestion_control = "prague", ecn = true, ecn_codepoint = "ect1", pacing = false }',
     "pacing: prague needs pacing"),
])
def test_prague_without_ecn_ect1_or_pacing_is_refused_in_one_line(tcp, message):
    with pytest.raises(ScenarioError) as err:
        load("l4s/prague-cubic-video", overrides=[f"flows.prague.app.tcp={tcp}"])
    assert message in str(err.value)
    assert "Traceback" not in str(err.value)


def test_the_emulator_refuses_prague_in_one_line():
    sc, _ = load("l4s/prague-cubic-video")
    problems = [p for p in emulation_problems(sc) if p.startswith("flows.prague.")]
    assert problems == ["flows.prague.app.tcp.congestion_control: 'prague' is simulator-only; allowed when "
                        "emulated: newreno, cubic, bbr"], problems
