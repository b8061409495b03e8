"""Head-to-head analyses from a pcap: round trip through aqmlab's own capture, hand-made captures
with known RTT and RTP loss, and bad input."""

from __future__ import annotations

import copy
import json
import socket
import struct

import dpkt
import pandas as pd
import pytest

from aqmlab.analysis import head_to_head as h2h, pcap as cap
from aqmlab.metrics import DEQUEUE
from aqmlab.run import simulate, write_results
from aqmlab.scenario import BUILTIN_DIR, read_scenario_file, validate
from conftest import aqmlab


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """A 150 Kbps head-to-head pair with 1 % path loss, written with its bottleneck pcap."""
    d = copy.deepcopy(read_scenario_file(BUILTIN_DIR / "head-to-head" / "pair.toml"))
    d["duration"] = "150s"
    d["topology"]["bottleneck"]["qdisc"]["rate"] = "150Kbps"
    d["records"]["pcap"] = True
    for g in d["flows"]:
        g["app"]["clip"] = "110s"
        g["path_loss"] = 0.01
    sc = validate(d)
    res = simulate(sc, progress=False)
    out = write_results(res, d, tmp_path_factory.mktemp("sim") / "pair")
    return res, out / "bottleneck.pcap"


def _records_series(res, group: str) -> pd.DataFrame:
    t = res.tables
    f = int(t["flows"].loc[t["flows"]["group_name"] == group, "flow"].iloc[0])
    p = t["packets"]
    d = p[(p["event"] == DEQUEUE) & (p["flow"] == f)]
    return pd.DataFrame({"t_s": d["t_ns"].to_numpy() / 1e9, "bytes": d["size"].to_numpy()})


def test_pcap_round_trip_gives_the_figures_of_the_records(simulated):
    res, pcap_path = simulated
    s = cap.analyze_capture(pcap_path, bottleneck_bps=150_000)
    assert s["udp_flow"].startswith("udp:") and s["tcp_flow"].startswith("tcp:")
    udp, tcp = _records_series(res, "udp"), _records_series(res, "tcp")
    # The capture's clock starts at its first packet of the pair; do the same on the records.
    t0 = min(udp["t_s"].min(), tcp["t_s"].min())
    udp["t_s"] -= t0
    tcp["t_s"] -= t0
    media = res.tables["media"]
    loss = 1 - len(media) / (media["seq"].max() - media["seq"].min() + 1)
    ref = h2h.pair_summary(udp, tcp, 150_000, None, loss)
    assert s["udp_packets"] == len(udp) and s["tcp_packets"] == len(tcp)
    for key in ("udp_avg_bps", "tcp_avg_bps", "normalized_difference", "udp_buffering_ratio",
                "tcp_buffering_ratio", "udp_smoothness_within", "tcp_smoothness_within", "loss"):
        assert s[key] == pytest.approx(ref[key], rel=1e-6), key
    assert 0.005 < s["udp_rtp_loss"] < 0.5
    # aqmlab captures one direction only: no RTT, so no TCP-friendly verdict.
    assert s["rtt_s"] != s["rtt_s"] and s["udp_tcp_friendly"] is None


def test_filters_pick_the_same_flows_as_the_largest_two(simulated):
    _, pcap_path = simulated
    auto = cap.analyze_capture(pcap_path, bottleneck_bps=150_000)
    dst_udp = auto["udp_flow"].split(":")[3]
    by_filter = cap.analyze_capture(pcap_path, f"udp:*:*:{dst_udp}:5004", "tcp:*:*:*:5001", 150_000)
    assert by_filter["udp_avg_bps"] == auto["udp_avg_bps"]
    assert by_filter["tcp_avg_bps"] == auto["tcp_avg_bps"]


def test_analyze_command_writes_summary_and_figures(simulated, tmp_path):
    _, pcap_path = simulated
    out = tmp_path / "an"
    r = aqmlab("analyze", "head-to-head", str(pcap_path), "--bottleneck", "150Kbps", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert {"summary.csv", "summary.md", "summary.json", "fig06.png", "fig21.png"} <= {p.name for p in out.iterdir()}
    assert "(TCP - UDP) / bottleneck" in (out / "summary.md").read_text()
    as_json = aqmlab("analyze", "head-to-head", str(pcap_path), "--bottleneck", "150Kbps", "--out",
                     str(tmp_path / "an2"), "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)  # stdout is one JSON document; the note goes to stderr
    assert doc["out"] == str(tmp_path / "an2") and doc["capture"] == str(pcap_path)
    rows = doc["tables"]["summary"]["rows"]
    assert len(rows) == len(pd.read_csv(out / "summary.csv"))
    assert as_json.stderr.strip() == f"summary and figures in {tmp_path / 'an2'}"


# ---- hand-made captures ---------------------------------------------------------------------

def _ip(src: str, dst: str, l4, proto: int) -> dpkt.ip.IP:
    ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=proto, data=l4)
    ip.len = 20 + len(bytes(l4))
    return ip


def _write(path, packets, nano: bool = False) -> None:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_RAW, nano=nano)
        for ts, ip in packets:
            w.writepkt(bytes(ip), ts)


def _tcp(sport, dport, flags, payload=b"", tsval=None, tsecr=0):
    opts = b"" if tsval is None else b"\x01\x01\x08\x0a" + struct.pack("!II", tsval, tsecr)
    return dpkt.tcp.TCP(sport=sport, dport=dport, flags=flags, off=(20 + len(opts)) // 4, opts=opts, data=payload)


def _rtp(seq: int, payload: bytes = b"x" * 100) -> dpkt.udp.UDP:
    body = bytes([0x80, 96]) + struct.pack("!HII", seq & 0xFFFF, 0, 1) + payload
    return dpkt.udp.UDP(sport=6970, dport=5004, ulen=8 + len(body), data=body)


S, C = "192.0.2.1", "198.51.100.7"


def test_rtt_from_tcp_timestamps_and_loss_across_the_rtp_wrap(tmp_path):
    pkts = []
    # TCP: a data segment every 100 ms (TSval = k); the client echoes it 80 ms later.
    for k in range(1, 51):
        t = 0.1 * k
        pkts.append((t, _ip(S, C, _tcp(554, 40000, dpkt.tcp.TH_ACK, b"y" * 500, tsval=k, tsecr=1), 6)))
        pkts.append((t + 0.080, _ip(C, S, _tcp(40000, 554, dpkt.tcp.TH_ACK, tsval=900 + k, tsecr=k), 6)))
    # UDP: RTP sequence 65500 .. 65500 + 99 (wraps at 65536), every 10th packet lost.
    for i in range(100):
        if i % 10 == 9:
            continue
        pkts.append((0.05 * i + 0.01, _ip(S, C, _rtp(65500 + i), 17)))
    pkts.sort(key=lambda p: p[0])
    path = tmp_path / "hand.pcap"
    _write(path, pkts, nano=True)
    s = cap.analyze_capture(path, "udp:*:*:*:5004", f"tcp:{S}:554:{C}:40000", 200_000)
    assert s["tcp_rtt_s"] == pytest.approx(0.080, abs=1e-6)
    # Expected 65500 .. 65598 (the last one, i = 99, is lost): 99 expected, 90 received.
    assert s["udp_rtp_loss"] == pytest.approx(1 - 90 / 99)
    assert s["tcp_friendly_evaluated"] is True
    assert s["tcp_friendly_Bps"] == pytest.approx(h2h.tcp_friendly_rate(1500, 0.080, 1 - 90 / 99))


def test_rtt_from_the_handshake_when_there_are_no_timestamps(tmp_path):
    pkts = [
        (1.000, _ip(C, S, _tcp(40000, 554, dpkt.tcp.TH_SYN), 6)),
        (1.123, _ip(S, C, _tcp(554, 40000, dpkt.tcp.TH_SYN | dpkt.tcp.TH_ACK), 6)),
    ]
    pkts += [(1.2 + 0.1 * k, _ip(S, C, _tcp(554, 40000, dpkt.tcp.TH_ACK, b"y" * 500), 6)) for k in range(10)]
    pkts += [(1.2 + 0.1 * k, _ip(S, C, _rtp(k), 17)) for k in range(10)]
    path = tmp_path / "syn.pcap"
    _write(path, sorted(pkts, key=lambda p: p[0]))
    s = cap.analyze_capture(path, "udp:*:*:*:*", f"tcp:{S}:554:*:*", 100_000)
    assert s["tcp_rtt_s"] == pytest.approx(0.123, abs=1e-6)
    assert s["udp_rtp_loss"] == 0.0


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("make, expect", [
    (lambda p, good: p.write_bytes(good.read_bytes()[:-7]), "truncated pcap"),
    (lambda p, good: p.write_bytes(good.read_bytes()[:12]), "truncated pcap"),
    (lambda p, good: p.write_text("time,bytes\n0,1500\n"), "not a pcap file"),
])
def test_truncated_or_foreign_files_are_one_clear_error(tmp_path, simulated, make, expect):
    _, good = simulated
    bad = tmp_path / "bad.pcap"
    make(bad, good)
    r = aqmlab("analyze", "head-to-head", str(bad), "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expect in lines[0] and "bad.pcap" in lines[0], r.stderr
    assert not (tmp_path / "out").exists()


def test_a_filter_matching_nothing_names_the_filter(tmp_path, simulated):
    _, good = simulated
    r = aqmlab("analyze", "head-to-head", str(good), "--udp", "udp:*:*:10.99.0.1:*", "--tcp", "tcp:*:*:*:*",
               "--out", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "--udp: filter udp:*:*:10.99.0.1:* matches no UDP packet" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, expect", [
    ("udp:*", "is not PROTO:SRC:SPORT:DST:DPORT"),
    ("icmp:*:*:*:*", "protocol 'icmp' is not one of udp, tcp"),
    ("udp:*:70000:*:*", "SPORT '70000' is not a port number"),
])
def test_malformed_filters_are_explained(text, expect):
    with pytest.raises(cap.PcapError, match=expect.replace("(", r"\(").replace("*", r"\*")):
        cap.FlowFilter.parse(text, "--udp")


def test_one_filter_without_the_other_is_refused(simulated):
    _, good = simulated
    with pytest.raises(cap.PcapError, match="give both filters or neither"):
        cap.analyze_capture(good, "udp:*:*:*:*", None)
