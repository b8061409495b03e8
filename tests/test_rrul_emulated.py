"""Flent's RRUL test in the netns emulator (`aqmlab rrul --engine emu`): the flow layout the
emulator plans for it (uploads sent from R2's side, probes from R2's side, ICMP answered by the
kernel), the emulator's tables fed to the same Flent document builder as the simulator's, the
one-line refusals; and, as root with network namespaces, a short run that flent opens, with
four uploads and four downloads carrying traffic and round trips that grow under load."""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from aqmlab import rrul
from aqmlab.emu import netns, probe_tools
from aqmlab.emu.run import emulation_problems, plan_flows, probes_table, router_config, tcp_received_table
from aqmlab.run import simulate
from aqmlab.scenario import load, validate

REPO = Path(__file__).resolve().parents[1]
FIFO = REPO / "scenarios" / "links" / "rrul-fifo.toml"
FQ_CODEL = REPO / "scenarios" / "links" / "rrul-fq_codel.toml"
MISSING = netns.missing_requirement()
needs_netns = pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
HAVE_FLENT = importlib.util.find_spec("flent") is not None
ICMP = frozenset({rrul.ICMP_GROUP})


def _rrul_scenario(path: Path, length: float = 6, delay: float = 2):
    _, raw = load(str(path), [], None)
    return validate(rrul.rrul_data(raw, length, delay, 0.2), "t")


def test_plan_sends_uploads_and_probes_from_r2_with_kernel_cubic():
    sc = _rrul_scenario(FQ_CODEL)
    assert emulation_problems(sc, ICMP) == []
    flows = {f["group_name"]: f for f in plan_flows(sc, icmp_groups=ICMP)}
    assert len(flows) == 12
    for s in rrul.SERIES:
        f = flows[s.group]
        assert f["dscp"] == rrul.DSCP[s.mark], s
        assert f["upload"] is (s.kind != "download"), s  # probes: the client sits behind R2
        if s.kind == "probe":
            assert f["kind"] == "ping" and f["interval_ns"] == 200_000_000 and f["packet_size"] == 84
            assert f["proto"] == ("icmp" if s.group == "icmp" else "udp")
        else:
            assert (f["proto"], f["kind"], f["cc"]) == ("tcp", "bulk", "cubic"), s
    # Without the ICMP request, the icmp group is a UDP probe like the others.
    assert plan_flows(sc)[-1]["proto"] == "udp"


def test_router_carries_the_discipline_both_ways_and_icmp_gets_the_access_delays():
    sc = _rrul_scenario(FQ_CODEL)
    flows = plan_flows(sc, icmp_groups=ICMP)
    tb = netns.Testbed("aqe0test")
    cfg = router_config(sc, tb, flows)
    assert cfg["forward"]["qdisc"]["kind"] == cfg["reverse"]["qdisc"]["kind"] == "fq_codel"
    assert cfg["forward"]["rate_bps"] == cfg["reverse"]["rate_bps"] == 20_000_000
    # ICMP has no port: it is not a known flow; its access delays (1 ms + 1 ms) apply to packets
    # without ports, as the known flows' apply to theirs.
    assert sorted(f["flow"] for f in cfg["flows"]) == [f["flow"] for f in flows if f["proto"] != "icmp"]
    assert cfg["classify"]["other_extra_delay_ns"] == 2_000_000
    assert {f["extra_forward_delay_ns"] for f in cfg["flows"]} == {2_000_000}
    # Without an ICMP probe the router's classify section is left as before.
    assert "classify" not in router_config(sc, tb, plan_flows(sc))


def test_refusals_name_the_field():
    sc = _rrul_scenario(FIFO)
    problems = emulation_problems(sc, frozenset({"tcp_up_BE", "nope"}))
    assert "flows.nope: asked to run as ICMP echoes, but it is not a ping group" in problems
    assert "flows.tcp_up_BE: asked to run as ICMP echoes, but it is not a ping group" in problems
    small = validate({**rrul.rrul_data(load(str(FIFO), [], None)[1], 2, 1, 0.2)} | {"flows": [
        {"name": "p", "count": 1, "app": {"kind": "ping", "packet_size": "40B"}}]}, "t")
    assert any(p.startswith("flows.p.app.packet_size: 40 B") for p in emulation_problems(small))
    assert emulation_problems(small, frozenset({"p"})) == []  # an ICMP echo needs no app header


def test_emulated_tables_feed_the_shared_flent_builder():
    """The emulator's throughput is the bytes the receiving application read (`tcp_received`),
    not the sender's acknowledged bytes in `flow_samples`; probes come as the simulator's
    `probes` table; the document is built by the simulator's code, stamped with real time."""
    flows = pd.DataFrame({"flow": np.arange(12, dtype=np.uint32), "group_name": [s.group for s in rrul.SERIES],
                          "start_ns": [1_000_000_000] * 8 + [0] * 4,
                          "stop_ns": [3_000_000_000] * 8 + [4_000_000_000] * 4})
    t = np.arange(0, 4_000_000_001, 200_000_000)
    # Flow i reads (i + 1) * 25 kB per 0.2 s step: (i + 1) Mbit/s.
    rows = np.array([(tt, i, (i + 1) * 25_000 * (tt // 200_000_000)) for i in range(8) for tt in t], dtype=np.int64)
    tables = {"flows": flows, "tcp_received": tcp_received_table(rows)}
    tp = rrul.throughput_table(rrul.emulated_throughput_tables(tables))
    per = tp.groupby("series")["mbps"].mean()
    assert per["TCP upload BE"] == pytest.approx(1.0) and per["TCP download EF"] == pytest.approx(8.0)
    probe_rows = np.array([(8 + j, k, k * 200_000_000, 30_000_000 if k != 3 else -1)
                           for j in range(4) for k in range(20)], dtype=np.int64)
    probes = probes_table(probe_rows)
    assert probes["rtt_ns"].isna().sum() == 4
    # The simulator's probes table, column for column.
    ping = {"name": "p", "duration": "1s", "topology": {"bottleneck": {"rate": "1Mbps", "delay": "5ms"}},
            "flows": [{"name": "p", "count": 1, "app": {"kind": "ping"}}]}
    sim = simulate(validate(ping), progress=False)
    assert list(probes.dtypes.astype(str)) == list(sim.tables["probes"].dtypes.astype(str)) == [
        "uint32", "uint64", "uint64", "UInt64"]
    p = rrul.probes_table({"flows": flows, "probes": probes})
    doc = rrul.flent_document(tp, p, title="t", note="n", length_s=2, delay_s=1, step_s=0.2, command="c",
                              generator="g", t0_epoch=1_800_000_000.0)
    assert doc["metadata"]["TIME"] == doc["metadata"]["T0"] == "2027-01-15T08:00:00.000000Z"
    assert doc["raw_values"]["Ping (ms) ICMP"][0]["t"] == pytest.approx(1_800_000_000.03)
    assert len(doc["raw_values"]["Ping (ms) ICMP"]) == 19
    # The simulator's call (no t0) keeps its fixed stamp.
    assert rrul.flent_document(tp, p, title="t", note="n", length_s=2, delay_s=1, step_s=0.2, command="c",
                               generator="g")["metadata"]["TIME"] == rrul.T0_ISO


def test_cli_engine_errors_in_one_line(monkeypatch, tmp_path):
    from aqmlab.cli import main

    res = CliRunner().invoke(main, ["rrul", str(FIFO), "--out", str(tmp_path / "o"), "--engine", "ns3"])
    assert res.exit_code == 2 and "--engine: 'ns3'; allowed: sim, emu" in res.output, res.output
    monkeypatch.setattr(netns, "missing_requirement", lambda: "aqmlab emulate needs root (...); run it with sudo")
    res = CliRunner().invoke(main, ["rrul", str(FIFO), "--out", str(tmp_path / "o"), "--engine", "emu"])
    assert res.exit_code == 2, res.output
    assert res.output.strip().splitlines() == ["error: --engine emu: aqmlab emulate needs root (...); run it with sudo"]
    assert not (tmp_path / "o").exists()


# ---- on real packets --------------------------------------------------------------------------

LENGTH, DELAY = 6.0, 2.0


def router_lateness(out_dir: Path) -> str:
    """What a failed round-trip bound prints beside the round trips: how late the router's
    frames left after their due times, each way (its own record of the host's scheduling)."""
    router = json.loads((out_dir / "summary.json").read_text())["emu"]["router"]
    words = []
    for way in ("forward", "reverse"):
        link = router[way]["link"]
        over_1ms = sum(link["lateness_log2_ns"][21:])  # bucket k counts lateness in [2^(k-1), 2^k) ns
        words.append(f"{way}: {over_1ms} of {link['delivered_frames']} frames left >= 1.05 ms late, "
                     f"latest {link['max_lateness_ns'] / 1e6:.2f} ms")
    return "; ".join(words)


_cache: dict[str, rrul.RrulRun] = {}


@pytest.fixture
def emulated(tmp_path_factory) -> rrul.RrulRun:
    """One short run the tests below share; emulated again after a `real_time` test of it fails
    (tests/conftest.py empties `_cache`)."""
    if "fifo" not in _cache:
        _cache["fifo"] = rrul.run(str(FIFO), tmp_path_factory.mktemp("rrul-emu") / "fifo", length_s=LENGTH,
                                  delay_s=DELAY, progress=False, engine="emu")
    return _cache["fifo"]


@pytest.mark.real_time
@needs_netns
def test_short_emulated_rrul_loads_both_ways_and_delays_the_probes(emulated):
    s = emulated.summary
    assert s["engine"] == "emu"
    # Four flows each way, each carrying traffic; each direction near the 20 Mbit/s link.
    for direction in ("upload", "download"):
        per_flow = s[f"{direction}_per_flow_mbps"]
        assert len(per_flow) == 4 and min(per_flow.values()) > 0.5, per_flow
        assert 14 < s[f"{direction}_mbps"] <= 20.5, s
    summary = json.loads((emulated.out_dir / "summary.json").read_text())
    assert set(summary["emu"]["congestion_control"].values()) == {"cubic"}
    # The configured idle round trip: 2 x (10 ms + 1 ms + 1 ms access delays) and the 84-byte
    # probe's serialization at 20 Mbit/s each way. Nothing can come back sooner; a probe
    # missing its access delays (ICMP has no port) would come back 4 ms sooner.
    base_ms = 24.0 + 2 * 84 * 8 / 20e6 * 1e3
    probes = pd.read_parquet(emulated.out_dir / "rrul_probes.parquet")
    assert set(probes["series"]) == {s.name for s in rrul.SERIES if s.kind == "probe"}
    idle = probes[probes["sent_s"] < DELAY - 0.2].groupby("series")["rtt_ms"].median()
    loaded = probes[(probes["sent_s"] > DELAY + 2) & (probes["sent_s"] < DELAY + LENGTH)]
    loaded_median = loaded.groupby("series")["rtt_ms"].median()
    # Idle: the base round trip (plus, for UDP, the echo process's wake-up), less the 0.05 ms
    # by which ping may round its printed value down when ping measured it; under load the
    # 1000-packet FIFO adds tens of milliseconds to every probe.
    printed = pd.Series({name: 0.05 if source == "ping" else 0.0
                         for name, source in s["probe_sources"].items()}).reindex(idle.index)
    assert ((idle > base_ms - printed) & (idle < base_ms + 4)).all(), (idle, router_lateness(emulated.out_dir))
    assert (loaded_median > base_ms + 20).all(), loaded_median


@pytest.mark.real_time
@needs_netns
def test_short_emulated_rrul_file_names_the_emulator_and_real_time(emulated):
    with gzip.open(emulated.flent_file, "rt") as f:
        doc = json.load(f)
    meta = doc["metadata"]
    assert "emulator, kernel TCP cubic" in meta["GENERATOR"]
    for name, source in emulated.summary["probe_sources"].items():
        assert f"{name}: {source}" in meta["NOTE"]
        assert meta["SERIES_META"][name]["PROBE_SOURCE"] == source
    assert meta["TIME"] != rrul.T0_ISO and meta["TIME"].startswith("20")
    for s in rrul.SERIES:
        values = [v for v in doc["results"][s.name] if v is not None]
        assert len(values) > 20 and max(values) > 0, s.name


TOOLS = probe_tools.find()
needs_tools = pytest.mark.skipif(len(TOOLS) < 2, reason="ping (iputils-ping) or irtt not installed "
                                 "(.ci/debian-packages installs them)")


@pytest.mark.real_time
@needs_netns
@needs_tools
def test_short_emulated_rrul_probes_come_from_ping_and_irtt_near_the_idle_rtt(emulated):
    """With ping and irtt installed the ICMP series is ping's and the UDP series irtt's, as
    under Flent; idle, both read the configured round trip."""
    s = emulated.summary
    assert s["probe_sources"] == {"Ping (ms) UDP EF": "irtt", "Ping (ms) UDP BK": "irtt",
                                  "Ping (ms) UDP BE": "irtt", "Ping (ms) ICMP": "ping"}
    with gzip.open(emulated.flent_file, "rt") as f:
        meta = json.load(f)["metadata"]["SERIES_META"]
    assert meta["Ping (ms) ICMP"]["RUNNER"] == "PingRunner" and " -D " in meta["Ping (ms) ICMP"]["COMMAND"]
    assert meta["Ping (ms) UDP EF"]["RUNNER"] == "IrttRunner" and "--dscp=0xb8" in meta["Ping (ms) UDP EF"]["COMMAND"]
    # Configured idle round trip: 2 x (10 ms + 2 ms access delays) plus each packet's
    # serialization at 20 Mbit/s both ways: ping's 84 bytes, irtt's 88 (its default length).
    base = {"ping": 24.0 + 2 * 84 * 8 / 20e6 * 1e3, "irtt": 24.0 + 2 * 88 * 8 / 20e6 * 1e3}
    probes = pd.read_parquet(emulated.out_dir / "rrul_probes.parquet")
    idle = probes[probes["sent_s"] < DELAY - 0.2]
    for name, rows in idle.groupby("series"):
        source = s["probe_sources"][name]
        # Every request of the idle second answered; ping rounds to 0.1 ms at this range.
        assert rows["rtt_ms"].notna().all() and len(rows) >= 8, name
        low = base[source] - (0.05 if source == "ping" else 0.0)
        assert low < rows["rtt_ms"].median() < base[source] + 1.0, (name, rows["rtt_ms"].describe(),
                                                                    router_lateness(emulated.out_dir))
    # irtt's server reports its processing time; ping's echo has none (the kernel answers).
    times = pd.read_parquet(emulated.out_dir / "probe_tool_times.parquet")
    flows = pd.read_parquet(emulated.out_dir / "flows.parquet").set_index("flow")["group_name"]
    server = times.groupby(flows.loc[times["flow"]].to_numpy())["server_ns"].count()
    assert server["icmp"] == 0 and (server[["udp_EF", "udp_BK", "udp_BE"]] > 10).all(), server


@pytest.mark.real_time
@needs_netns
def test_without_irtt_the_emulators_echo_makes_the_udp_series(tmp_path, monkeypatch):
    """A missing binary leaves its series to the emulator's own probe (here irtt: the UDP
    probes are answered by the echo process again), and the run says so."""
    monkeypatch.setattr(probe_tools, "find", lambda which=None: {k: v for k, v in TOOLS.items() if k == "icmp"})
    run = rrul.run(str(FQ_CODEL), tmp_path / "o", length_s=2, delay_s=1, progress=False, engine="emu")
    sources = run.summary["probe_sources"]
    assert sources["Ping (ms) ICMP"] == ("ping" if "icmp" in TOOLS else probe_tools.FALLBACK["icmp"])
    assert {sources[f"Ping (ms) UDP {m}"] for m in ("EF", "BK", "BE")} == {probe_tools.FALLBACK["udp"]}
    summary = json.loads((run.out_dir / "summary.json").read_text())
    assert "command" not in summary["emu"]["probe_sources"]["udp_EF"]
    probes = pd.read_parquet(run.out_dir / "rrul_probes.parquet")
    udp = probes[probes["series"].str.startswith("Ping (ms) UDP") & (probes["sent_s"] < 0.8)]
    base_ms = 24.0 + 2 * 84 * 8 / 20e6 * 1e3  # the echo's requests are 84 bytes
    assert len(udp) >= 9 and udp["rtt_ms"].notna().all()
    assert base_ms < udp["rtt_ms"].median() < base_ms + 4, (udp["rtt_ms"].describe(), router_lateness(run.out_dir))


@needs_netns
@pytest.mark.skipif(not HAVE_FLENT, reason="flent is not installed (pip install flent, or the test extras)")
def test_flent_opens_the_emulated_file(emulated, tmp_path):
    png = tmp_path / "all_scaled.png"
    rrul.flent_plot(emulated.flent_file, "all_scaled", png)
    assert png.stat().st_size > 10_000
    proc = subprocess.run([sys.executable, "-m", "flent", "-i", str(emulated.flent_file), "-f", "stats"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    for s in rrul.SERIES:
        assert s.name in proc.stdout, s.name
