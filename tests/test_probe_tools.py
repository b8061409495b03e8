"""Flent's probe tools in the emulated RRUL (aqmlab.emu.probe_tools): ping's and irtt's output
read back into probes (captured from the real tools: tests/data/ping-lost.txt is
`ping -n -D -i 0.2 -w 2 -s 56` across a veth whose far end was down for 0.4 s, requests 5 and 6
unanswered; tests/data/irtt-lost.json is `irtt client` with the command line the emulator
builds, over the same veth, round trips 4 and 5 lost), the command lines, the choice between
a tool and the emulator's own probe (tool present or missing), and where each runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from aqmlab import rrul
from aqmlab.emu import endpoints, probe_tools
from aqmlab.emu.probe_tools import Probe, parse_irtt, parse_ping
from aqmlab.emu.run import plan_flows, probe_sources
from aqmlab.scenario import load, validate

DATA = Path(__file__).resolve().parent / "data"
REPO = Path(__file__).resolve().parents[1]
SPEC = {"sender_ip": "10.77.0.1", "receiver_ip": "10.77.0.2", "duration_ns": 15_000_000_000}
INTERVAL = 200_000_000


def _rrul_flows(tools: dict[str, str]) -> list[dict]:
    _, raw = load(str(REPO / "scenarios" / "links" / "rrul-fq_codel.toml"), [], None)
    sc = validate(rrul.rrul_data(raw, 5, 5, 0.2), "t")
    return plan_flows(sc, icmp_groups=frozenset({rrul.ICMP_GROUP}), probe_tools=tools)


# ---- ping -----------------------------------------------------------------------------------


def test_ping_output_with_two_lost_requests():
    probes = parse_ping((DATA / "ping-lost.txt").read_text(), INTERVAL, 0)
    # "10 packets transmitted": requests 0..9 (icmp_seq 1..10), 5 and 6 without a reply line.
    assert [p.seq for p in probes] == list(range(10))
    assert [p.seq for p in probes if p.rtt_ns < 0] == [4, 5]
    first = probes[0]
    # "[1795768966.335300] ... icmp_seq=1 ... time=0.209 ms": sent = receive - rtt.
    assert first.rtt_ns == 209_000 and first.round_trip_ns == 209_000 and first.server_ns == -1
    assert first.sent_wall_ns == 1_795_768_966_335_300_000 - 209_000
    # The lost requests' send times lie between their answered neighbours', a third and two
    # thirds of the way (ping sends one per interval).
    s3, s4, s5, s6 = (probes[k].sent_wall_ns for k in (3, 4, 5, 6))
    assert s3 < s4 < s5 < s6
    assert s4 - s3 == pytest.approx((s6 - s3) / 3, abs=1_000) and s5 - s4 == pytest.approx((s6 - s3) / 3, abs=1_000)


def test_ping_ignores_duplicates_and_errors_and_counts_without_statistics():
    """A killed ping prints no statistics: the highest sequence number counts; a "(DUP!)" line
    is not a second reply (nor is an ICMP error line a reply), as in Flent's parser."""
    text = "\n".join([
        "PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.",
        "[100.000500] 64 bytes from 10.0.0.1: icmp_seq=1 ttl=64 time=0.500 ms",
        "[100.200600] 64 bytes from 10.0.0.1: icmp_seq=1 ttl=64 time=200 ms (DUP!)",
        "[100.400000] From 10.0.0.2 icmp_seq=2 Destination Host Unreachable",
        "[100.612000] 64 bytes from 10.0.0.1: icmp_seq=4 ttl=64 time=12.0 ms",
    ])
    probes = parse_ping(text, INTERVAL, 0)
    assert [(p.seq, p.rtt_ns) for p in probes] == [(0, 500_000), (1, -1), (2, -1), (3, 12_000_000)]
    assert probes[1].sent_wall_ns == pytest.approx(100_200_000_000, abs=1_000)


def test_ping_sequence_numbers_wrap_at_16_bits():
    lines = [f"[{100 + k * 0.2:.6f}] 64 bytes from 10.0.0.1: icmp_seq={(k + 65534) % 65536} ttl=64 time=1.00 ms"
             for k in range(4)]
    probes = parse_ping("\n".join(lines), INTERVAL, 0)
    # icmp_seq 65534, 65535, 0, 1: requests 65534 to 65537 counted from 1, so 65533 to 65536 from 0.
    assert [p.seq for p in probes if p.rtt_ns > 0] == [65533, 65534, 65535, 65536]


def test_ping_with_no_reply_places_requests_on_its_schedule():
    probes = parse_ping("3 packets transmitted, 0 received, 100% packet loss, time 402ms", INTERVAL, 7_000)
    assert [(p.seq, p.sent_wall_ns, p.rtt_ns) for p in probes] == [
        (0, 7_000, -1), (1, 7_000 + INTERVAL, -1), (2, 7_000 + 2 * INTERVAL, -1)]


# ---- irtt -----------------------------------------------------------------------------------


def test_irtt_output_with_two_lost_round_trips():
    text = (DATA / "irtt-lost.json").read_text()
    probes = parse_irtt(text)
    assert [p.seq for p in probes] == list(range(6))
    assert [p.seq for p in probes if p.rtt_ns < 0] == [4, 5]
    assert all(p.round_trip_ns == -1 and p.server_ns == -1 for p in probes if p.rtt_ns < 0)
    trip = json.loads(text)["round_trips"][1]
    p = probes[1]
    # irtt's own rtt (Flent's value): the client's round trip less the server's processing time.
    assert p.rtt_ns == trip["delay"]["rtt"] == 3_236_688
    assert p.round_trip_ns == 217_394_671 - 214_147_844
    assert p.server_ns == 447_922_930_717 - 447_922_920_578
    assert p.rtt_ns == p.round_trip_ns - p.server_ns
    assert p.sent_wall_ns == 1_795_768_966_551_063_468
    # A lost round trip keeps irtt's record of when it was sent.
    lost = json.loads(text)["round_trips"][4]
    assert probes[4].sent_wall_ns == lost["timestamps"]["client"]["send"]["wall"] > probes[3].sent_wall_ns


def test_irtt_output_that_is_not_its_json_is_refused():
    with pytest.raises(ValueError, match="not irtt's JSON output"):
        parse_irtt("irtt: connection refused")
    with pytest.raises(ValueError, match="not irtt's JSON output"):
        parse_irtt('{"stats": {}}')


# ---- command lines ----------------------------------------------------------------------------


def test_command_lines_are_flents_with_the_flows_addresses():
    flows = {f["group_name"]: f for f in _rrul_flows({"icmp": "/usr/bin/ping", "udp": "/usr/bin/irtt"})}
    icmp = probe_tools.client_argv(flows["icmp"], SPEC, "OUT.json")
    # PingRunner.use_ping: -n -D -i INTERVAL -w LENGTH, no -Q for an unmarked probe; the far
    # side (R1's address: the probe client sits behind R2).
    assert icmp == ["/usr/bin/ping", "-n", "-D", "-i", "0.2", "-w", "15", "-s", "56", "10.77.0.1"]
    assert probe_tools.ping_argv("ping", {**flows["icmp"], "dscp": 46}, "h", 1)[-3:-1] == ["-Q", "184"]
    ef = flows["udp_EF"]
    irtt = probe_tools.client_argv(ef, SPEC, "OUT.json")
    # IrttRunner: client -o - --fill=rand -Q -d LENGTH -i INTERVAL --dscp=TOS (EF: TOS 0xb8);
    # from the flow's R2-side port (the router knows the flow by it) to the R1-side one.
    assert irtt[:8] == ["/usr/bin/irtt", "client", "-o", "OUT.json", "--fill=rand", "-Q", "-d", "15s"]
    assert irtt[8:11] == ["-i", "0.2s", "--dscp=0xb8"]
    assert f"--local=10.77.0.2:{ef['port']}" in irtt and irtt[-1] == f"10.77.0.1:{ef['sport']}"
    assert probe_tools.irtt_server_argv("irtt", [("10.77.0.1", 15009), ("10.77.0.1", 15010)]) == [
        "irtt", "server", "-b", "10.77.0.1:15009,10.77.0.1:15010"]


# ---- which source --------------------------------------------------------------------------------


@pytest.mark.parametrize("present, icmp_source, udp_source", [
    ({"ping", "irtt"}, "ping", "irtt"),
    ({"ping"}, "ping", "aqmlab UDP request/echo"),
    ({"irtt"}, "aqmlab raw-socket ICMP echo", "irtt"),
    (set(), "aqmlab raw-socket ICMP echo", "aqmlab UDP request/echo"),
])
def test_each_series_from_its_tool_when_present_else_the_emulators_probe(present, icmp_source, udp_source):
    tools = probe_tools.find(lambda name: f"/opt/bin/{name}" if name in present else None)
    assert set(tools) == {p for p, t in probe_tools.TOOLS.items() if t in present}
    flows = _rrul_flows(tools)
    sources = probe_sources(flows, SPEC)
    assert sources["icmp"]["source"] == icmp_source
    assert {sources[g]["source"] for g in ("udp_EF", "udp_BK", "udp_BE")} == {udp_source}
    for f in flows:
        if f["kind"] == "ping":
            assert (f.get("tool_path") is not None) == (probe_tools.source(f) in present), f
            # A tool's entry names its command line; a missing binary's version is its name.
            assert ("command" in sources[f["group_name"]]) == (f.get("tool") is not None)
    # The TCP flows are untouched, and the protocols are as without tools.
    assert [f["proto"] for f in flows] == [f["proto"] for f in _rrul_flows({})]


def test_sides_run_the_tool_clients_behind_r2_and_the_irtt_server_behind_r1(tmp_path):
    flows = _rrul_flows({"icmp": "/usr/bin/ping", "udp": "/usr/bin/irtt"})
    spec = {**SPEC, "flows": flows}
    r2_clients, r2_echoes, r2_irtt = endpoints.ping_threads(spec, r1_side=False, work=tmp_path)
    assert sorted(c.flow["group_name"] for c in r2_clients) == ["icmp", "udp_BE", "udp_BK", "udp_EF"]
    assert all(isinstance(c, endpoints.ToolPing) for c in r2_clients) and r2_echoes == [] and r2_irtt == []
    r1_clients, r1_echoes, r1_irtt = endpoints.ping_threads(spec, r1_side=True, work=tmp_path)
    # No echo process on R1's side: irtt's server answers, on each UDP probe's R1-side port.
    assert r1_clients == [] and r1_echoes == []
    assert sorted(r1_irtt) == sorted(("10.77.0.1", f["sport"]) for f in flows if f["group_name"].startswith("udp"))


def test_tool_rows_keep_the_run_window(tmp_path):
    """Requests a tool sent after the flow's stop are dropped, a reply after the run's end is
    lost, times are moved from the wall clock to the run's clock."""
    flow = {"flow": 8, "tool": "irtt", "start_ns": 0, "stop_ns": 1_000_000_000, "group_name": "udp_EF"}
    client = endpoints.ToolPing(flow, {**SPEC, "duration_ns": 1_200_000_000}, tmp_path)
    epoch = time.monotonic_ns()
    wall0 = epoch + (time.time_ns() - time.monotonic_ns())  # the run's t = 0 on the wall clock
    client._keep([Probe(0, wall0 + 100_000_000, 30_000_000, 30_100_000, 100_000),
                  Probe(1, wall0 + 900_000_000, 30_000_000, 400_000_000, 100_000),  # back after the end
                  Probe(2, wall0 + 1_001_000_000, 30_000_000, 30_000_000, 0)], epoch)  # sent after the stop
    rows = client.rows()
    assert [(r[0], r[1], r[3]) for r in rows] == [(8, 0, 30_000_000), (8, 1, -1)]
    assert rows[0][2] == pytest.approx(100_000_000, abs=2_000_000)
    assert client.detail == [(8, 0, 30_100_000, 100_000)]


# ---- the Flent file ----------------------------------------------------------------------------


def test_flent_file_names_each_probe_series_source():
    import pandas as pd

    empty_tp = pd.DataFrame({"series": [], "t_s": [], "mbps": []})
    probes = pd.DataFrame({"series": ["Ping (ms) ICMP"], "sent_s": [0.1], "reply_s": [0.12], "rtt_ms": [20.0]})
    sources = {"Ping (ms) ICMP": {"source": "ping", "version": "ping from iputils 20221126", "command": "ping -D x"},
               "Ping (ms) UDP EF": {"source": "aqmlab UDP request/echo"}}
    kw = dict(title="t", note="n", length_s=2, delay_s=1, step_s=0.2, command="c", generator="g")
    meta = rrul.flent_document(empty_tp, probes, probe_sources=sources, **kw)["metadata"]["SERIES_META"]
    assert meta["Ping (ms) ICMP"]["RUNNER"] == "PingRunner" and meta["Ping (ms) ICMP"]["COMMAND"] == "ping -D x"
    assert meta["Ping (ms) ICMP"]["PROBE_SOURCE"] == "ping"
    assert meta["Ping (ms) UDP EF"]["PROBE_SOURCE"] == "aqmlab UDP request/echo"
    assert meta["Ping (ms) UDP EF"]["RUNNER"] == "aqmlab"
    # The simulator's document (no sources) is as before.
    simulated = rrul.flent_document(empty_tp, probes, **kw)["metadata"]["SERIES_META"]
    assert "PROBE_SOURCE" not in simulated["Ping (ms) ICMP"] and simulated["Ping (ms) ICMP"]["RUNNER"] == "aqmlab"
