"""benches/fidelity.py --ns3 (issue 27's ns-3 half) and benches/ns3_dumbbell.py's "tcp" spec key:
each case's ns-3 spec is the dumbbell, controller and ns-3 defaults it claims, the simulator's
side runs the ns3 profile, the verdicts flag exactly the gaps beyond the ns-3 targets, and a spec
without the key sets up ns-3's TCP exactly as before. Nothing here needs ns-3: the attribute
calls are recorded by a stand-in for the bindings."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from conftest import bench_module

_BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(_BENCHES))  # the benches import each other by name

fid = bench_module("fidelity")
driver = bench_module("ns3_dumbbell")

NS3_CASES = [c for c in fid.CASES if c.qdisc in fid.NS3_DISCIPLINES]


def _flows_table(sc: Any) -> pd.DataFrame:
    """The columns ns3_spec reads from a simulator's flows table, from the scenario itself
    (start times spread by a made-up amount: the spec must carry them through)."""
    rows = []
    for g in sc.flows:
        for _ in range(g.count):
            i = len(rows)
            rows.append({"start_ns": i * 1_000_000, "stop_ns": sc.duration, "sender_delay_ns": g.sender_delay})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("case", NS3_CASES, ids=lambda c: c.name)
def test_each_case_builds_its_ns3_spec_and_its_ns3_profile_scenario(case):
    for cc in fid.CONTROLLERS:
        sc = fid.scenario(case, cc, seed=3, profile="ns3")
        for g in sc.flows:
            tcp = g.app.tcp
            assert tcp.profile == "ns3" and tcp.sack and tcp.prr and tcp.prr_variant == "ns3" and tcp.mss == 536
            assert tcp.congestion_control == fid.SIM_CONTROLLER[cc]
            # reno is ns-3's NewReno, which with SACK halves the pipe (docs/tcp.md).
            assert tcp.ssthresh_basis == ("pipe" if cc == "reno" else "flight_size")
            # ns-3's TcpCubic keeps alpha_cubic in its Reno-friendly region.
            assert tcp.cubic_alpha_to_one is (False if tcp.congestion_control == "cubic" else None)
        assert sc.emulation is None  # no kernel in this half
        flows = _flows_table(sc)
        spec = fid.ns3_spec_for(sc, flows, case, cc, seed=3)
        driver.validate_spec(spec)  # accepted by the ns-3 driver, ns3_defaults checks included
        assert spec["tcp"] == {"congestion_control": fid.NS3_CONTROLLER[cc], "ns3_defaults": True, "attributes": {}}
        assert spec["seed"] == 3
        # ns-3's defaults, which the simulator's ns3 profile mirrors.
        assert (spec["mss_bytes"], spec["initial_cwnd_segments"], spec["min_rto_s"], spec["delayed_ack"],
                spec["rwnd_bytes"], spec["sack"]) == (536, 10, 1.0, True, 131072, True)
        assert spec["bottleneck_rate_bps"] == case.rate_mbps * 1e6
        assert spec["qdisc"]["kind"] == {"fifo": "droptail"}.get(case.qdisc, case.qdisc)
        assert spec["qdisc"]["limit_packets"] == case.buffer_packets(576)
        if case.qdisc != "fifo":
            assert (spec["qdisc"]["target_s"], spec["qdisc"]["interval_s"]) == (0.005, 0.1)
        rtts = {round(2 * (spec["bottleneck_delay_s"] + f["access_delay_s"] + spec["receiver_access_delay_s"])
                      * 1e3, 6) for f in spec["flows"]}
        assert rtts == ({case.rtt_ms} if case.rtt2_ms is None else {case.rtt_ms, case.rtt2_ms})
        assert [f["start_s"] for f in spec["flows"]] == [i / 1e3 for i in range(case.flows)]
        assert spec["periods_s"] == [[fid.WARMUP_S, fid.DURATION_S]]


def test_the_ns3_buffers_hold_the_kernel_halfs_bytes_in_576_byte_packets():
    # 10 Mbit/s x 20 ms = 25 kB: 17 packets of 1500 B, 43 of 576 B.
    case = fid.Case("x", 1, 10, 20, 1.0, "fifo")
    assert (case.buffer_packets(), case.buffer_packets(576)) == (17, 43)
    assert fid.scenario(case, "cubic", 1, profile="ns3").topology.bottleneck.qdisc.limit == {"packets": 43}
    assert fid.scenario(case, "cubic", 1).topology.bottleneck.qdisc.limit == {"packets": 17}


def test_sqf_is_said_not_to_be_in_ns3_and_never_run():
    sqf = next(c for c in fid.CASES if c.qdisc == "sqf")
    out = fid.run_ns3_case(sqf, "cubic", 1, 30, python="/nonexistent")  # would fail if it ran ns-3
    assert "targets" not in out and "sqf" in out["not_in_ns3"]
    assert "not run: sqf is not in ns-3" in fid.ns3_table([out])
    with pytest.raises(ValueError, match="sqf"):
        fid.ns3_spec_for(fid.scenario(sqf, "cubic", 1, profile="ns3"), None, sqf, "cubic", 1)


def _m(**kw):
    return {"utilization": 0.90, "drop_rate": 0.010, "jain": 0.90, "shares": [0.5, 0.5], **kw}


def test_ns3_verdicts_flag_exactly_the_gaps_beyond_the_targets_on_both_sides():
    ns3 = _m()
    assert all(t["ok"] for t in fid.compare_ns3(_m(), ns3).values())
    for sign in (1, -1):
        inside = _m(utilization=0.90 * (1 + sign * 0.019), drop_rate=0.010 * (1 + sign * 0.099),
                    jain=0.90 + sign * 0.049)
        assert all(t["ok"] for t in fid.compare_ns3(inside, ns3).values()), fid.compare_ns3(inside, ns3)
        outside = _m(utilization=0.90 * (1 + sign * 0.021), drop_rate=0.010 * (1 + sign * 0.101),
                     jain=0.90 + sign * 0.051)
        verdicts = fid.compare_ns3(outside, ns3)
        assert not any(t["ok"] for t in verdicts.values()), verdicts
        assert set(verdicts) == {"utilization", "drop_rate", "jain"}
        # One measure out at a time: only that one is flagged.
        for metric in verdicts:
            one = fid.compare_ns3({**_m(), metric: outside[metric]}, ns3)
            assert [m for m, t in one.items() if not t["ok"]] == [metric]
    # ns-3 dropping nothing: the same is no gap, any drop an infinite one.
    assert fid.compare_ns3(_m(drop_rate=0.0), _m(drop_rate=0.0))["drop_rate"]["ok"]
    assert math.isinf(fid.compare_ns3(_m(drop_rate=0.001), _m(drop_rate=0.0))["drop_rate"]["gap"])
    row = {"case": {"name": "c"}, "controller": "reno", "targets": fid.compare_ns3(_m(jain=0.8), ns3),
           "max_share_error": 0.2}
    assert fid.misses([row]) == ["c reno: jain gap 0.100 > 0.05"]
    assert "0.800 / 0.900 **miss**" in fid.ns3_table([row])
    assert fid.max_share_error(_m(shares=[0.7, 0.3]), ns3) == pytest.approx(0.2)


def test_ns3_measures_take_jain_and_shares_from_each_flows_received_bytes():
    out = {"periods": [{"utilization_mbps": 9.5, "drop_rate_pct": 1.5, "flow_rx_bytes": [3000, 1000]}]}
    m = fid.ns3_measures_ns3(out, fid.Case("x", 2, 10, 20, 1.0, "fifo"))
    assert m["utilization"] == pytest.approx(0.95) and m["drop_rate"] == pytest.approx(0.015)
    assert m["jain"] == pytest.approx(16 / 20) and m["shares"] == [0.75, 0.25]


def test_ns3_driver_period_rows_count_each_flows_bytes_within_the_period():
    spec = {"periods_s": [[10.0, 30.0]]}
    snap = {"arrivals": 0, "drops": 0, "dequeued_packets": 0, "dequeued_bytes": 0, "dropped_after_dequeue_bytes": 0}
    snaps = {10.0: snap, 30.0: {**snap, "arrivals": 100, "drops": 5, "dequeued_bytes": 2_500_000}}
    rows = driver.period_rows(spec, snaps, {0.0: [0, 0], 10.0: [100, 50], 30.0: [700, 90]})
    assert rows[0]["flow_rx_bytes"] == [600, 40] and rows[0]["drop_rate_pct"] == 5.0
    assert "flow_rx_bytes" not in driver.period_rows(spec, snaps)[0]


class _FakeNs:
    """Stands in for ns-3's bindings in configure_defaults: records Config::SetDefault."""

    def __init__(self):
        self.calls: list[tuple[str, Any]] = []
        fake = self

        class Config:
            @staticmethod
            def SetDefault(name, value):
                fake.calls.append((name, value))

        class TypeId:
            @staticmethod
            def LookupByName(name):
                return name

        class RngSeedManager:
            SetSeed = SetRun = staticmethod(lambda x: None)

        self.Config, self.TypeId, self.RngSeedManager = Config, TypeId, RngSeedManager

    def __getattr__(self, name):  # UintegerValue(5) -> ("UintegerValue", 5), and so on
        return lambda *a: (name, *a)


def _spec(**kw):
    base = {"duration_s": 30.0, "bottleneck_rate_bps": 1e7, "bottleneck_delay_s": 0.008, "access_rate_bps": 1e9,
            "receiver_access_delay_s": 0.001, "access_limit_packets": 10000, "reverse_limit_packets": 1000,
            "qdisc": {"kind": "droptail", "limit_packets": 17}, "mss_bytes": 1460, "initial_cwnd_segments": 2,
            "min_rto_s": 0.2, "delayed_ack": False, "flows": [{"start_s": 0.0, "stop_s": 30.0,
                                                               "access_delay_s": 0.001}],
            "periods_s": [[10.0, 30.0]]}
    return {**base, **kw}


def _configured(spec):
    ns = _FakeNs()
    driver.validate_spec(spec)
    driver.configure_defaults(ns, spec)
    return dict(ns.calls)


def test_a_spec_without_the_tcp_key_sets_up_tcp_as_before():
    calls = _configured(_spec())
    assert calls == {
        "ns3::TcpL4Protocol::SocketType": ("TypeIdValue", "ns3::TcpNewReno"),
        "ns3::TcpL4Protocol::RecoveryType": ("TypeIdValue", "ns3::TcpClassicRecovery"),
        "ns3::TcpSocket::SegmentSize": ("UintegerValue", 1460),
        "ns3::TcpSocket::InitialCwnd": ("UintegerValue", 2),
        "ns3::TcpSocket::DelAckCount": ("UintegerValue", 1),
        "ns3::TcpSocket::SndBufSize": ("UintegerValue", 4 * 1024 * 1024),
        "ns3::TcpSocket::RcvBufSize": ("UintegerValue", 4 * 1024 * 1024),
        "ns3::TcpSocketBase::Sack": ("BooleanValue", True),
        "ns3::TcpSocketBase::Timestamp": ("BooleanValue", False),
        "ns3::TcpSocketBase::MinRto": ("TimeValue", ("Seconds", 0.2)),
        "ns3::Ipv4::StrongEndSystemModel": ("BooleanValue", True),
    }


def test_the_strong_end_system_model_unless_the_spec_keeps_ns3s_weak_one():
    # The strong model changes no result here and saves ns-3 time (benches/README.md).
    assert _configured(_spec())["ns3::Ipv4::StrongEndSystemModel"] == ("BooleanValue", True)
    assert "ns3::Ipv4::StrongEndSystemModel" not in _configured(_spec(ns3_weak_es=True))


def test_ns3_defaults_choose_the_controller_alone():
    ns3_like = {"mss_bytes": 536, "initial_cwnd_segments": 10, "min_rto_s": 1.0, "delayed_ack": True,
                "rwnd_bytes": 131072, "sack": True}
    for cc, type_name in (("newreno", "ns3::TcpNewReno"), ("cubic", "ns3::TcpCubic"), ("bbr", "ns3::TcpBbr")):
        calls = _configured(_spec(**ns3_like, tcp={"congestion_control": cc, "ns3_defaults": True}))
        # TCP: the controller alone; beside it only the end-system model (not TCP, no result changes).
        assert calls == {"ns3::TcpL4Protocol::SocketType": ("TypeIdValue", type_name),
                         "ns3::Ipv4::StrongEndSystemModel": ("BooleanValue", True)}
    # A cause test's switch comes last, as a string ns-3 parses.
    calls = _configured(_spec(**ns3_like, tcp={"congestion_control": "cubic", "ns3_defaults": True,
                                               "attributes": {"ns3::TcpCubic::HyStart": False}}))
    assert calls["ns3::TcpCubic::HyStart"] == ("StringValue", "false") and len(calls) == 3
    # Without ns3_defaults a named controller keeps the spec's own settings.
    calls = _configured(_spec(tcp={"congestion_control": "cubic"}))
    assert calls["ns3::TcpL4Protocol::SocketType"] == ("TypeIdValue", "ns3::TcpCubic")
    assert calls["ns3::TcpSocket::SegmentSize"] == ("UintegerValue", 1460) and len(calls) == 11


@pytest.mark.parametrize(("tcp", "extra", "words"), [
    ({"congestion_control": "vegas"}, {}, ["tcp.congestion_control", "newreno, cubic, bbr", "vegas"]),
    ({"ns3_default": True}, {}, ["unknown keys", "ns3_default", "ns3_defaults"]),
    ({"ns3_defaults": "yes"}, {}, ["tcp.ns3_defaults", "true or false"]),
    ({"attributes": {"HyStart": False}}, {}, ["tcp.attributes", "ns3::Class::Attribute"]),
    # The spec's 1460 B, IW 2, ... are not ns-3's defaults, which ns3_defaults would leave in place.
    ({"ns3_defaults": True}, {}, ["mss_bytes = 1460 (ns-3: 536)", "initial_cwnd_segments = 2", "rwnd_bytes"]),
    ({"ns3_defaults": True}, {"mss_bytes": 536, "initial_cwnd_segments": 10, "min_rto_s": 1.0, "delayed_ack": True,
                              "rwnd_bytes": 131072, "sack": False}, ["sack = False (ns-3: True)"]),
])
def test_bad_tcp_keys_are_refused_in_one_line(tcp, extra, words):
    with pytest.raises(SystemExit) as e:
        driver.validate_spec(_spec(tcp=tcp, **extra))
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_ns3_arguments_are_refused_in_one_line(capsys):
    assert fid.main(["--ns3", "--no-kernel"]) == 2
    assert fid.main(["--ns3-attr", "ns3::TcpCubic::HyStart=false"]) == 2
    assert fid.main(["--ns3", "--ns3-attr", "HyStart=false"]) == 2
    assert fid.main(["--ns3-from", "earlier.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all("--ns3-attr" in line for line in err)
    assert "--ns3-from goes with --ns3" in err[-1]


def test_ns3_from_reuses_ns3_runs_only_where_the_spec_is_the_same(monkeypatch):
    # Every ns-3 run would fail here: the saved ones must be used, seed by seed, and a spec
    # that differs (here: another duration) must stop the comparison instead of pairing runs.
    monkeypatch.setattr(fid, "run_ns3_niced", lambda python, spec: pytest.fail("ns-3 was run"))
    case = next(c for c in NS3_CASES if c.name == "1f-10M-20ms-fifo")
    digests = []
    for seed in (1, 2):
        sc = fid.scenario(case, "cubic", seed, 12.0, profile="ns3")
        res = fid.simulate(sc, progress=False)
        digests.append(fid.spec_digest(fid.ns3_spec_for(sc, res.tables["flows"], case, "cubic", seed)))
    assert digests[0] != digests[1]  # the seed is part of the spec
    theirs = [_m(utilization=0.5, shares=[1.0]), _m(utilization=0.7, shares=[1.0])]
    saved = {"ns3_runs": theirs, "ns3_cpu_run_s": [1.0, 2.0], "ns3_specs": digests}
    out = fid.run_ns3_case(case, "cubic", 2, 12.0, python="/nonexistent", saved=saved)
    assert out["ns3_runs"] == theirs and out["ns3_specs"] == digests and out["ns3"]["utilization"] == 0.6
    with pytest.raises(SystemExit, match="seed 1: the saved ns-3 run had another spec"):
        fid.run_ns3_case(case, "cubic", 2, 13.0, python="/nonexistent", saved=saved)


def test_median_keeps_each_flows_share():
    runs = [_m(shares=[0.6, 0.4]), _m(shares=[0.5, 0.5]), _m(shares=[0.7, 0.3], jain=0.5)]
    med = fid._median(runs)
    assert med["shares"] == [0.6, 0.4] and med["jain"] == 0.9
    assert np.isclose(med["drop_rate"], 0.01)
