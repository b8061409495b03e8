"""Flent's RRUL test in the simulator (`aqmlab rrul`, python/aqmlab/rrul.py): uploads over the
reverse link, the ping application's round trips, the .flent.gz document, and flent itself
opening it (when flent is installed)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from aqmlab import rrul
from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, validate

REPO = Path(__file__).resolve().parents[1]
FIFO = REPO / "scenarios" / "links" / "rrul-fifo.toml"
FQ_CODEL = REPO / "scenarios" / "links" / "rrul-fq_codel.toml"

# A short test: 3 s of load between 1 s of probes alone at each end.
LENGTH, DELAY = 3.0, 1.0


def _scenario(flows: list[dict], duration: str = "3s", reverse: dict | None = None) -> dict:
    topo: dict = {"bottleneck": {"rate": "20Mbps", "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "100p"}}}
    if reverse is not None:
        topo["reverse"] = reverse
    return {"name": "t", "duration": duration, "topology": topo, "flows": flows,
            "records": {"packet_events": False}}


def test_upload_crosses_the_reverse_link():
    """A flow with path [1, 0] sends from R2 to R1: alone, its goodput follows the reverse
    link's rate, not the bottleneck's; swapping the two rates and the flow's direction gives
    the same run (DropTail and these flows draw no random number)."""
    def goodput(path: list[int], down_rate: str, up_rate: str) -> float:
        data = _scenario([{"name": "f", "count": 1, "app": {"kind": "bulk"}, "path": path, "access_rate": "1Gbps"}],
                         duration="10s",
                         reverse={"rate": up_rate, "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "100p"}})
        data["topology"]["bottleneck"]["rate"] = down_rate
        flows = simulate(validate(data, "t"), progress=False).tables["flows"]
        return float(flows["delivered_bytes"].iloc[0] * 8 / 10e6)

    up_slow, up_fast = goodput([1, 0], "20Mbps", "5Mbps"), goodput([1, 0], "5Mbps", "20Mbps")
    assert 3.5 < up_slow <= 5 and 12 < up_fast <= 20, (up_slow, up_fast)
    # The mirror image (a download over the same rates the other way) is the same run.
    assert goodput([0, 1], "5Mbps", "20Mbps") == up_slow
    assert goodput([0, 1], "20Mbps", "5Mbps") == up_fast


def test_path_must_name_two_routers():
    """A path may run either way, not from a router to itself or past the last router."""
    for path in ([1, 1], [0, 2], [2, 0]):
        data = _scenario([{"name": "x", "count": 1, "app": {"kind": "bulk"}, "path": path}])
        with pytest.raises(ScenarioError, match=r"flows\.x\.path"):
            validate(data, "t")


def test_ping_round_trip_on_an_idle_path():
    """Alone on the path, every probe's round trip is the propagation delay plus the 84-byte
    packet's transmission on each link it crosses, and one probe leaves every interval."""
    data = _scenario([{"name": "p", "count": 1, "path": [1, 0], "access_rate": "1Gbps",
                       "app": {"kind": "ping", "interval": "200ms", "packet_size": "84B"}}], duration="2s")
    res = simulate(validate(data, "t"), progress=False)
    probes = res.tables["probes"]
    assert list(probes["seq"]) == list(range(10))
    assert list(probes["sent_ns"]) == [i * 200_000_000 for i in range(10)]
    # 2 x (1 ms + 10 ms + 1 ms) of propagation; 84 B at 20 Mbit/s on the router link each way
    # and at 1 Gbit/s on the four access links.
    expected = 2 * 12_000_000 + 2 * 84 * 8 * 1e9 / 20e6 + 4 * 84 * 8 * 1e9 / 1e9
    assert probes["rtt_ns"].notna().all()
    assert (probes["rtt_ns"].astype(float) - expected).abs().max() < 2, (probes["rtt_ns"].tolist(), expected)


def test_ping_refuses_bad_fields():
    for app, field in (({"kind": "ping", "interval": "0s"}, "interval"),
                       ({"kind": "ping", "packet_size": "20B"}, "packet_size"),
                       ({"kind": "ping", "intervall": "1s"}, "intervall")):
        data = _scenario([{"name": "p", "count": 1, "app": app}])
        with pytest.raises(ScenarioError, match=field):
            validate(data, "t")


def test_engine_guards_ping_and_path():
    """The simulator's own checks (for a caller that skips the models) name the field too."""
    from aqmlab import _core

    ok = validate(_scenario([{"name": "p", "count": 1, "app": {"kind": "ping"}}]), "t").to_sim_config()
    for change, field in ((lambda g: g["app"].update(interval_ns=0), "flows.p.app.interval"),
                          (lambda g: g["app"].update(packet_size=20), "flows.p.app.packet_size"),
                          (lambda g: g.update(path=[1, 1]), "flows.p.path")):
        config = json.loads(json.dumps(ok))
        change(config["flow_groups"][0])
        with pytest.raises(ValueError, match=field):
            _core.check_sim_config(json.dumps(config))
    config = json.loads(json.dumps(ok))
    config["flow_groups"][0]["path"] = [1, 0]
    _core.check_sim_config(json.dumps(config))


def test_rrul_data_is_flents_test():
    """RRUL's twelve groups: four uploads R2 -> R1 and four downloads R1 -> R2 with Flent's four
    markings, starting DELAY in and lasting LENGTH; four probes for the whole test at the step
    size; the reverse link a copy of the bottleneck (its discipline too) when not given."""
    data = _scenario([{"name": "x", "count": 1, "app": {"kind": "bulk"}}])
    data["topology"]["bottleneck"]["qdisc"] = {"kind": "fq_codel"}
    out = rrul.rrul_data(data, 60, 5, 0.2)
    sc = validate(out, "t")
    assert sc.duration == 70 * 10**9
    assert sc.topology.reverse is not None and sc.topology.reverse.qdisc.kind == "fq_codel"
    groups = {g.name: g for g in sc.flows}
    assert len(groups) == 12
    for mark, dscp in (("BE", 0), ("BK", 8), ("CS5", 40), ("EF", 46)):
        up, down = groups[f"tcp_up_{mark}"], groups[f"tcp_down_{mark}"]
        assert up.path == (1, 0) and down.path == (0, 1)
        assert up.dscp == down.dscp == dscp
        assert up.start == 5 * 10**9 and up.stop == 65 * 10**9
        assert up.app.kind == "bulk" and up.app.tcp.congestion_control == "cubic"
    for name, dscp in (("udp_EF", 46), ("udp_BK", 8), ("udp_BE", 0), ("icmp", 0)):
        g = groups[name]
        assert g.app.kind == "ping" and g.app.interval == 200_000_000 and g.dscp == dscp
        assert g.start == 0 and g.stop == 70 * 10**9 and g.path == (1, 0)
    # A reverse link the scenario gives is kept as written.
    data["topology"]["reverse"] = {"rate": "2Mbps", "delay": "10ms"}
    sc = validate(rrul.rrul_data(data, 60, 5, 0.2), "t")
    assert sc.topology.reverse is not None and sc.topology.reverse.rate == 2_000_000
    assert sc.topology.reverse.qdisc.kind == "droptail"


@pytest.mark.parametrize(("length", "delay", "step", "option"), [
    (-1, 5, 0.2, "--length"), (0, 5, 0.2, "--length"), (math.nan, 5, 0.2, "--length"),
    (60, -1, 0.2, "--delay"), (60, 5, 0, "--step-size"), (1, 5, 2, "--step-size")])
def test_bad_options_name_the_option(length, delay, step, option):
    with pytest.raises(rrul.RrulError, match=f"^{option}: "):
        rrul.check_options(length, delay, step)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "aqmlab", *args], capture_output=True, text=True, check=False)


@pytest.mark.parametrize(("args", "needle"), [
    (["--length", "-5"], "--length"),
    (["--length", "abc"], "--length"),
    (["--step-size", "0"], "--step-size"),
    (["--set", "topology.bottleneck.qdisc.kind=fq_codle"], "topology.bottleneck.qdisc"),
    (["--set", "topology.bottleneck.rate=-3Mbps"], "topology.bottleneck"),
])
def test_cli_refuses_bad_input_in_one_line(tmp_path, args, needle):
    proc = _cli("rrul", str(FIFO), "--out", str(tmp_path / "o"), "--no-progress", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "o").exists()


def test_set_of_flows_reaches_the_tests_own_tcp_flows(monkeypatch):
    """The test replaces the file's flows with its twelve: `--set flows.*...` changes those (it
    used to reach the discarded ones and change nothing), and a flow the test has not is refused."""
    captured = {}

    def fake_simulate(rsc, progress=True):
        captured["tcp"] = [g.app.tcp for g in rsc.flows if g.app.kind == "bulk"]
        raise RuntimeError("stop here")

    monkeypatch.setattr(sys.modules["aqmlab.run"], "simulate", fake_simulate)
    with pytest.raises(RuntimeError, match="stop here"):
        rrul.run(str(FIFO), Path("/nonexistent-never-written"), length_s=LENGTH, delay_s=DELAY, progress=False,
                 overrides=["flows.*.app.tcp.rack=false", "flows.tcp_up_BE.app.tcp.congestion_control=bbr"])
    tcps = captured["tcp"]
    assert len(tcps) == 8 and all(t.rack is False and t.profile == "linux" for t in tcps)
    assert sorted(t.congestion_control for t in tcps) == ["bbr"] + ["cubic"] * 7
    with pytest.raises(ScenarioError, match="tcp"):
        rrul.run(str(FIFO), Path("/nonexistent-never-written"), length_s=LENGTH, delay_s=DELAY, progress=False,
                 overrides=["flows.tcp.count=3"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, rrul.RrulRun]:
    base = tmp_path_factory.mktemp("rrul")
    return {name: rrul.run(str(path), base / name, length_s=LENGTH, delay_s=DELAY, progress=False)
            for name, path in (("fifo", FIFO), ("fq_codel", FQ_CODEL))}


def test_flent_file_structure(runs):
    """The document Flent writes (flent/resultset.py, format 4): metadata naming the rrul test,
    x_values on the step grid over LENGTH + 2 DELAY, every rrul.conf series with one value
    (or null) per x, raw values stamped from T0, computed series consistent with their parts."""
    doc = rrul.read_flent(runs["fifo"].flent_file)
    assert set(doc) == {"metadata", "version", "x_values", "results", "raw_values"}
    assert doc["version"] == 4
    meta = doc["metadata"]
    assert meta["NAME"] == "rrul" and meta["STEP_SIZE"] == 0.2
    assert meta["LENGTH"] == LENGTH and meta["TOTAL_LENGTH"] == LENGTH + 2 * DELAY
    assert meta["TIME"].endswith("Z") and meta["T0"] == meta["TIME"]
    xs = doc["x_values"]
    assert xs[0] == 0 and xs[-1] == pytest.approx(LENGTH + 2 * DELAY)
    assert all(b - a == pytest.approx(0.2) for a, b in zip(xs, xs[1:], strict=False))
    expected = [s.name for s in rrul.SERIES] + [c[0] for c in rrul.COMPUTED]
    assert sorted(doc["results"]) == sorted(expected)
    assert sorted(meta["SERIES_META"]) == sorted(expected)
    for name, values in doc["results"].items():
        assert len(values) == len(xs), name
        assert meta["SERIES_META"][name]["UNITS"] == ("ms" if name.startswith("Ping") else "Mbits/s")
    for s in rrul.SERIES:
        raw = doc["raw_values"][s.name]
        assert raw, s.name
        t = [r["t"] - rrul.T0_EPOCH for r in raw]
        assert t == sorted(t) and 0 <= t[0] and t[-1] <= LENGTH + 2 * DELAY + 1
        if s.kind != "probe":  # TCP only while it runs: DELAY to DELAY + LENGTH
            assert DELAY < t[0] and t[-1] <= DELAY + LENGTH + 1e-9
            on_grid = [v for x, v in zip(xs, doc["results"][s.name], strict=True) if v is not None]
            assert on_grid and min(x for x, v in zip(xs, doc["results"][s.name], strict=True) if v is not None) >= DELAY
    res = doc["results"]
    for i, x in enumerate(xs):
        ups = [res[f"TCP upload {m}"][i] for m in ("BE", "BK", "CS5", "EF")]
        present = [v for v in ups if v is not None]
        if present:
            assert res["TCP upload sum"][i] == pytest.approx(sum(present))
            assert res["TCP upload avg"][i] == pytest.approx(sum(present) / len(present))
        else:
            assert res["TCP upload sum"][i] is None, x
    # The tables it came from: throughput per step matches the file's raw values.
    out = runs["fifo"].out_dir
    tp = pd.read_parquet(out / "rrul_throughput.parquet")
    raw = doc["raw_values"]["TCP download BE"]
    mine = tp[tp["series"] == "TCP download BE"].sort_values("t_s")
    assert [r["val"] for r in raw] == pytest.approx(mine["mbps"].tolist())
    probes = pd.read_parquet(out / "rrul_probes.parquet")
    assert set(probes["series"]) == {s.name for s in rrul.SERIES if s.kind == "probe"}
    assert len(probes) == 4 * round((LENGTH + 2 * DELAY) / 0.2)


def test_same_seed_same_bytes(runs, tmp_path):
    again = rrul.run(str(FIFO), tmp_path / "again", length_s=LENGTH, delay_s=DELAY, progress=False)
    assert again.flent_file.read_bytes() == runs["fifo"].flent_file.read_bytes()
    for table in ("rrul_throughput", "rrul_probes"):
        first = runs["fifo"].out_dir / f"{table}.parquet"
        assert (again.out_dir / f"{table}.parquet").read_bytes() == first.read_bytes()


def test_fq_codel_keeps_latency_under_load_low(runs):
    """The result RRUL exists to show: with the link saturated both ways, a 1000-packet FIFO
    adds hundreds of ms to every probe, FQ-CoDel a few ms; both fill the link."""
    fifo, fq = runs["fifo"].summary, runs["fq_codel"].summary
    assert fifo["ping_median_ms"] > 100, fifo
    assert fq["ping_median_ms"] < 40, fq
    for s in (fifo, fq):
        assert s["download_mbps"] > 15 and s["upload_mbps"] > 15, s


HAVE_FLENT = importlib.util.find_spec("flent") is not None


@pytest.mark.skipif(not HAVE_FLENT, reason="flent is not installed (pip install flent, or the test extras)")
@pytest.mark.parametrize("plot", ["all_scaled", "ping_cdf", "box_totals", "totals"])
def test_flent_plots_our_file(runs, tmp_path, plot):
    png = tmp_path / f"{plot}.png"
    rrul.flent_plot(runs["fq_codel"].flent_file, plot, png)
    assert png.stat().st_size > 10_000


@pytest.mark.skipif(not HAVE_FLENT, reason="flent is not installed (pip install flent, or the test extras)")
def test_flent_stats_reads_our_numbers(runs, tmp_path):
    """flent's own statistics of the file: its mean of the ICMP series is the mean of our raw
    round trips (flent computes its stats from the raw values)."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "flent", "-i", str(runs["fq_codel"].flent_file), "-f", "stats"],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Ping (ms) ICMP" in proc.stdout and "TCP download sum" in proc.stdout
    doc = rrul.read_flent(runs["fq_codel"].flent_file)
    raw = [r["val"] for r in doc["raw_values"]["Ping (ms) ICMP"]]
    lines = proc.stdout.splitlines()
    block = lines[lines.index(" Ping (ms) ICMP:") + 1:]
    mean = next(ln for ln in block if ln.strip().startswith("Mean:"))
    assert float(mean.split()[1]) == pytest.approx(sum(raw) / len(raw), abs=1e-5), (mean, sum(raw) / len(raw))


def test_json_summary(tmp_path):
    proc = _cli("rrul", str(FQ_CODEL), "--out", str(tmp_path / "o"), "--length", "1", "--delay", "0.4",
                "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["length_s"] == 1 and s["probes_sent"] == 4 * 5
    assert (tmp_path / "o" / "rrul.flent.gz").exists()


def test_emulator_takes_rrul_and_refuses_what_it_cannot_send_uploading():
    """RRUL's uploads and probes are emulated (tests/test_rrul_emulated.py); a reversed path
    is still refused by field for what the emulator's R2 side cannot send (UDP media)."""
    from aqmlab.emu.run import emulation_problems

    sc = validate(rrul.rrul_data(_scenario([{"name": "x", "count": 1, "app": {"kind": "bulk"}}]), 2, 1, 0.2), "t")
    assert emulation_problems(sc, frozenset({rrul.ICMP_GROUP})) == []
    cbr_up = validate(_scenario([{"name": "v", "count": 1, "path": [1, 0],
                                  "app": {"kind": "cbr", "rate": "1Mbps", "packet_size": "1000B"}}]), "t")
    problems = emulation_problems(cbr_up)
    assert any(p.startswith("flows.v.path: [1, 0] runs toward R1") for p in problems), problems
