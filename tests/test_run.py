"""Running scenarios: results layout, determinism, overrides, interruption, pcap, plots."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import dpkt
import pandas as pd
import pytest

from aqmlab.run import read_results
from conftest import aqmlab, small_scenario

TABLES = {"packets", "queue", "flow_samples", "flows", "periods", "flow_periods"}


def test_results_directory_is_complete_and_loadable(tmp_path, write_scenario):
    out = tmp_path / "r"
    r = aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    tables = read_results(out)
    assert TABLES <= set(tables)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sim"]["bottleneck"]["invariants_ok"] is True
    assert [p["start_s"] for p in summary["periods"]] == [0.0, 2.0]
    assert (out / "periods.csv").exists() and (out / "scenario.toml").exists()
    # The printed table carries the period metrics.
    assert "0-2" in r.stdout and "RED" in r.stdout
    # Events are consistent: every dequeue had an enqueue, arrivals = enqueues + drops.
    p = tables["packets"]
    counts = p["event"].value_counts()
    evicted = int((p["reason"] == "evicted").sum())
    assert counts["arrive"] > 0
    assert counts["arrive"] == counts["enqueue"] + counts["drop"] - evicted
    assert counts["dequeue"] <= counts["enqueue"]


def _files(d):
    return {f.name: f.read_bytes() for f in sorted(d.iterdir())}


def test_same_seed_same_bytes_different_seed_different_bytes(tmp_path, write_scenario):
    path = str(write_scenario(small_scenario()))
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        r = aqmlab("run", path, "--out", str(tmp_path / name), "--seed", seed, "--no-progress")
        assert r.returncode == 0, r.stderr
    a, b, c = (_files(tmp_path / n) for n in "abc")
    assert a == b
    assert a["packets.parquet"] != c["packets.parquet"]


def test_set_overrides_any_field(tmp_path, write_scenario):
    out = tmp_path / "r"
    r = aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out), "--no-progress",
               "--set", "topology.bottleneck.rate=5Mbps", "--set", "flows.bulk.count=3")
    assert r.returncode == 0, r.stderr
    per = pd.read_parquet(out / "periods.parquet")
    assert per["utilization_mbps"].max() <= 5.0 + 1e-9
    assert len(pd.read_parquet(out / "flows.parquet")) == 3
    assert 'rate = "5Mbps"' in (out / "scenario.toml").read_text()


def test_ctrl_c_leaves_no_results(tmp_path, write_scenario):
    long = small_scenario(duration="3000s")
    long["flows"][0]["count"] = 40
    out = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "run", str(write_scenario(long)),
                             "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)  # imports and the start of a 3000 s simulation of 40 flows (tens of seconds)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "scenario.toml"]


def test_pcap_matches_the_dequeue_records(tmp_path, write_scenario):
    s = small_scenario(records={"pcap": True})
    out = tmp_path / "r"
    assert aqmlab("run", str(write_scenario(s)), "--out", str(out), "--no-progress").returncode == 0
    packets = pd.read_parquet(out / "packets.parquet")
    deq = packets[packets["event"] == "dequeue"].reset_index(drop=True)
    with open(out / "bottleneck.pcap", "rb") as f:
        reader = dpkt.pcap.Reader(f)
        assert reader.datalink() == 101  # LINKTYPE_RAW: packets begin with the IP header
        records = [(ts, buf) for ts, buf in reader]
    assert len(records) == len(deq)
    for (ts, buf), (_, row) in zip(records[:200], deq.head(200).iterrows(), strict=True):
        ip = dpkt.ip.IP(buf)
        assert ip.len == row["size"]
        assert isinstance(ip.data, dpkt.tcp.TCP) and ip.data.dport == 5001
        assert abs(float(ts) - row["t_ns"] / 1e9) < 1e-6
    # Distinct flows have distinct source addresses.
    srcs = {dpkt.ip.IP(buf).src for _, buf in records}
    assert len(srcs) == 5


def test_plot_and_list(tmp_path, write_scenario):
    out = tmp_path / "r"
    assert aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out), "--no-progress").returncode == 0
    r = aqmlab("plot", str(out))
    assert r.returncode == 0, r.stderr
    for png in ("queue.png", "flow_throughput.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = aqmlab("plot", str(tmp_path))
    assert r.returncode == 2 and "not an aqmlab results directory" in r.stderr
    r = aqmlab("list")
    assert r.returncode == 0
    for word in ("droptail", "red", "min_th", "bulk", "cbr", "min_rto"):
        assert word in r.stdout


def test_udp_cbr_is_unresponsive(tmp_path, write_scenario):
    # A 12 Mbit/s CBR flow into a 10 Mbit/s link keeps sending and loses the excess.
    s = small_scenario()
    s["flows"] = [{"name": "cbr", "count": 1, "app": {"kind": "cbr", "rate": "12Mbps", "packet_size": "1000B"}}]
    out = tmp_path / "r"
    assert aqmlab("run", str(write_scenario(s)), "--out", str(out), "--no-progress").returncode == 0
    per = pd.read_parquet(out / "periods.parquet")
    late = per.iloc[-1]
    assert late["utilization_mbps"] > 9.5
    assert 100 * 2 / 12 - 3 < late["drop_rate_pct"] < 100 * 2 / 12 + 3


@pytest.mark.parametrize("weights, expect", [([0.0, 0.3, 0.7], {2: 0.3, 3: 0.7}), ([0.0, 0.0, 1.0], {3: 1.0}),
                                             ([1.0, 1.0, 2.0], {1: 0.25, 2: 0.25, 3: 0.5})])
def test_tcp_class_marker_splits_packets_by_weight(weights, expect):
    # The Rb-RIO paper marks TCP packets at random, 7:3 to class3 and class2 (or all class3).
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    s = small_scenario(duration="8s")
    s["flows"][0]["class_weights"] = weights
    packets = simulate(validate(s), progress=False).tables["packets"]
    arrivals = packets[packets["event"] == "arrive"]
    share = arrivals["class"].value_counts(normalize=True).to_dict()
    assert set(share) == set(expect), share
    n = len(arrivals)
    for cls, p in expect.items():
        # Binomial standard error at n ~ 10^4 packets is under 0.005; allow 4 of them.
        assert abs(share[cls] - p) < 4 * (p * (1 - p) / n) ** 0.5 + 1e-9, (cls, share[cls], p, n)


def test_unclassified_flows_carry_class_zero(tmp_path):
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    packets = simulate(validate(small_scenario(duration="4s")), progress=False).tables["packets"]
    assert set(packets["class"].unique()) == {0}


def test_cubic_is_chosen_per_flow_group_from_the_scenario() -> None:
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    def run(cc: str | None) -> pd.DataFrame:
        s = small_scenario()
        if cc:
            s["flows"][0]["app"]["tcp"]["congestion_control"] = cc
        return simulate(validate(s), progress=False).tables["flow_samples"]

    default, reno, cubic = run(None), run("newreno"), run("cubic")
    pd.testing.assert_frame_equal(default, reno)  # newreno is the default, byte for byte
    # CUBIC reduces to 0.7 of the flight, NewReno to half: after the first losses every
    # flow's ssthresh differs.

    def last(df: pd.DataFrame) -> pd.Series:
        return df.groupby("flow")["ssthresh_bytes"].last()

    assert (last(cubic) != last(reno)).all(), (last(cubic), last(reno))


def test_flow_samples_count_each_tcp_flows_packets_and_retransmissions_up_to_its_totals() -> None:
    """`flow_samples.packets_sent` and `.retransmissions` are the sender's running counts: they
    never fall, the last sample (at the end of the run) equals the `flows` table's totals, and
    the differences between samples are what a period's retransmission rate is made of."""
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    s = small_scenario(duration="4s")
    s["flows"].append({"name": "udp", "count": 1, "app": {"kind": "cbr", "rate": "500kbps", "packet_size": "1000B"}})
    tables = simulate(validate(s), progress=False).tables
    samples, flows = tables["flow_samples"], tables["flows"]
    tcp = flows[flows["is_tcp"] == 1]
    assert int(tcp["retransmissions"].sum()) > 0, "the scenario must lose packets for the check to bite"
    for _, f in tcp.iterrows():
        mine = samples[samples["flow"] == f["flow"]].sort_values("t_ns")
        assert mine["packets_sent"].is_monotonic_increasing and mine["retransmissions"].is_monotonic_increasing
        assert mine["t_ns"].iloc[-1] == 4_000_000_000
        assert (mine["packets_sent"].iloc[-1], mine["retransmissions"].iloc[-1]) == (
            f["packets_sent"], f["retransmissions"])
    udp = samples[~samples["flow"].isin(tcp["flow"])]
    assert len(udp) > 0 and udp["delivered_bytes"].max() > 0
    assert (udp[["packets_sent", "retransmissions"]] == 0).all().all()


def test_scale_scenario_runs_scaled_down(tmp_path):
    """The shipped 10,000-flow scenario, shrunk to 40 flows at its 1 Mbit/s per-flow share for
    3 s, runs from the command line and fills its bottleneck; the full size validates."""
    from aqmlab.scenario import load

    full, _ = load("scale/newreno-10k", [])
    assert full.flows[0].count == 10_000 and full.topology.bottleneck.rate == 10_000_000_000
    out = tmp_path / "scale"
    r = aqmlab("run", "scale/newreno-10k", "--out", str(out), "--no-progress",
               "--set", "flows.bulk.count=40", "--set", "topology.bottleneck.rate=40Mbps",
               "--set", "topology.reverse.rate=40Mbps", "--set", "topology.bottleneck.qdisc.limit=100p",
               "--set", "flows.bulk.start_jitter=500ms", "--set", "duration=3s",
               "--set", "metrics.periods=[[\"1s\", \"3s\"]]", "--set", "records.packet_events=true")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sim"]["flows"] == 40
    period = summary["periods"][0]
    assert period["utilization_mbps"] > 0.9 * 40, period


def test_flow_samples_carry_bbrs_delivery_rate() -> None:
    """`flow_samples.delivery_rate_bps` is the delivery rate as Linux reports it: one BBR flow
    alone on a 10 Mbit/s link reads close to the link's rate of TCP payload once it runs; the
    rfc profile's CUBIC runs no estimator and reads 0 (docs/tables.md)."""
    from aqmlab.run import simulate
    from aqmlab.scenario import validate
    from conftest import one_tcp_flow_in_a_bdp_fifo

    def rates(cc: str, profile: str = "linux") -> pd.Series:
        s = one_tcp_flow_in_a_bdp_fifo(cc, {"profile": profile, "congestion_control": cc}, duration="6s",
                                       metrics={"periods": [["1s", "6s"]]})
        samples = simulate(validate(s), progress=False).tables["flow_samples"]
        return samples.set_index("t_ns")["delivery_rate_bps"]

    bbr = rates("bbr")
    assert bbr.iloc[0] == 0  # before the first ACK
    running = bbr[bbr.index >= 2_000_000_000]
    # Payload bytes only (the estimator counts what TCP delivers): the 10 Mbit/s of IP packets
    # less the headers' share (40 of 1500 bytes), 9.73 Mbit/s. The samples sit there (median
    # 0.99 of it) and never above it; a single sample covers about one round trip (17 segments
    # here) and reads lower now and then while the link is busy throughout (this run has no
    # idle gap longer than a packet): as low as 0.84 of it sampled every 10 ms, 0.86 with
    # Linux's skb bursts off (`tso_autosize`, in the linux profile since 2026-11-29).
    payload_bps = 10e6 * 1460 / 1500
    assert abs(running.median() / payload_bps - 1) < 0.02, running.describe()
    assert (running < 1.03 * payload_bps).all() and (running > 0.8 * payload_bps).all(), running.describe()
    assert (rates("cubic", "rfc") == 0).all()


def test_flow_samples_carry_the_pacing_rate_and_bbrs_pacing_gain() -> None:
    """`flow_samples.pacing_rate_bps` and `pacing_gain` (docs/tables.md), as the emulator reads
    them from TCP_INFO and TCP_CC_INFO: one BBR flow alone on a 10 Mbit/s link starts at
    2/ln 2, then cycles PROBE_BW's gains, each sample's rate its gain times its bandwidth
    estimate less 1 %; CUBIC has no gain, and a rate only when `tcp.pacing` asks it to pace."""
    from aqmlab.run import simulate
    from aqmlab.scenario import validate
    from conftest import one_tcp_flow_in_a_bdp_fifo

    def samples(cc: str, **tcp: object) -> pd.DataFrame:
        s = one_tcp_flow_in_a_bdp_fifo(cc, {"profile": "linux", "congestion_control": cc, **tcp}, duration="6s",
                                       metrics={"periods": [["1s", "6s"]]})
        s["records"] = {"flow_sample": "10ms"}
        return simulate(validate(s), progress=False).tables["flow_samples"]

    bbr = samples("bbr")
    first = bbr[bbr["pacing_rate_bps"] > 0].iloc[0]
    assert first["pacing_gain"] == pytest.approx(2.885)
    late = bbr[bbr["t_ns"] >= 2_000_000_000]
    assert set(late["pacing_gain"]) == {0.75, 1.0, 1.25}, late["pacing_gain"].value_counts()
    # The estimate is the windowed maximum of payload rates near the link's 10 Mbit/s.
    estimate = late["pacing_rate_bps"] / late["pacing_gain"] / 0.99
    assert (estimate > 9.0e6).all() and (estimate < 10.5e6).all(), estimate.describe()
    cubic, paced = samples("cubic"), samples("cubic", pacing=True)
    assert (cubic["pacing_gain"] == 0).all() and (cubic["pacing_rate_bps"] == 0).all()
    # 120 % of cwnd / srtt in congestion avoidance, cwnd / srtt being about the link's rate while
    # the FIFO holds a queue (200 % in a slow start after a loss, cwnd below ssthresh / 2).
    rate = paced.loc[paced["t_ns"] >= 2_000_000_000, "pacing_rate_bps"]
    assert (rate > 7e6).all() and 11e6 < rate.median() < 13e6, rate.describe()


@pytest.mark.parametrize("tcp", [{"profile": "linux"}, {"profile": "linux", "sack": False, "rack": False,
                                                        "congestion_control": "newreno"}],
                         ids=["linux-cubic-sack", "newreno-no-sack"])
def test_the_rate_estimator_records_and_changes_nothing_else(tcp) -> None:
    """`tcp.rate_estimator` (on in the linux profile) runs the delivery-rate estimator for a
    controller that does not steer by it: every table comes out as without it, but for
    `flow_samples.delivery_rate_bps`, which it fills (within the 10 Mbit/s link; checked from 2 s
    and once a flow has delivered data: a flow whose first windows ended in timeouts has no valid
    sample for a while, and one whose SYN was lost twice none before it connects, flow 4 at
    2.6 s in the linux run)."""
    from aqmlab.run import simulate
    from aqmlab.scenario import validate

    s = small_scenario(duration="4s")
    s["flows"][0]["app"]["tcp"] = {**tcp, "min_rto": "200ms"}
    on = simulate(validate(s), progress=False).tables
    s["flows"][0]["app"]["tcp"]["rate_estimator"] = False
    off = simulate(validate(s), progress=False).tables
    assert int(on["flows"]["retransmissions"].sum()) > 0, "the run must lose packets for the check to bite"
    for name in on:
        a, b = on[name], off[name]
        if name == "flow_samples":
            assert (b["delivery_rate_bps"] == 0).all()
            late = a[a["t_ns"] >= 2_000_000_000]
            rate = late.loc[late["delivered_bytes"] > 0, "delivery_rate_bps"]
            assert len(rate) >= 0.9 * len(late), "most samples from 2 s on must be checked"
            assert (rate > 0).all() and rate.max() <= 10e6, rate.describe()
            a, b = a.drop(columns="delivery_rate_bps"), b.drop(columns="delivery_rate_bps")
        pd.testing.assert_frame_equal(a, b, obj=name)
