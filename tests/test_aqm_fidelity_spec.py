"""benches/bench_aqm_fidelity.py: the qdisc spec it sends to ns-3 carries every aqmlab parameter
of COBALT, FQ-PIE and CAKE-as-FqCobalt, is accepted by ns3_dumbbell.py's checks, and CAKE set up
in any way FqCobalt cannot match is refused. (The ns-3 runs themselves are a bench, not a test;
nothing here needs ns-3.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import bench_module

_BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(_BENCHES))  # the bench imports bench_tcp_dumbbell by name

bench = bench_module("bench_aqm_fidelity")
driver = bench_module("ns3_dumbbell")


def qdisc_spec(kind: str, *overrides: str) -> dict:
    sc = bench.scenario_for(kind, "20s", "5s", 1, tuple(overrides))
    return bench.ns3_qdisc(sc.topology.bottleneck.qdisc, bench.data_packet_bytes(sc))


def full_spec(qdisc: dict) -> dict:
    flows = [{"start_s": 0.0, "stop_s": 20.0, "access_delay_s": 0.001}]
    return {"duration_s": 20.0, "bottleneck_rate_bps": 25e6, "bottleneck_delay_s": 0.02, "access_rate_bps": 1e8,
            "receiver_access_delay_s": 0.001, "access_limit_packets": 10000, "reverse_limit_packets": 1000,
            "qdisc": qdisc, "mss_bytes": 960, "initial_cwnd_segments": 2, "min_rto_s": 0.2,
            "delayed_ack": False, "flows": flows, "periods_s": [[5.0, 20.0]]}


@pytest.mark.parametrize("kind", ["cobalt", "fq_pie", "cake", "codel", "fq_codel", "pie"])
def test_spec_has_every_key_the_ns3_driver_needs(kind):
    q = qdisc_spec(kind)
    assert q["kind"] == {"cake": "fq_cobalt"}.get(kind, kind)
    driver.validate_spec(full_spec(q))  # raises SystemExit on a missing key
    needed = set(driver.AQM_KEYS[q["kind"]])
    if "limit_bytes" in q:
        needed = needed - {"limit_packets"} | {"limit_bytes"}
    assert needed <= set(q)


def test_driver_refuses_a_spec_without_a_parameter():
    q = qdisc_spec("fq_pie")
    del q["max_burst_s"]
    with pytest.raises(SystemExit, match="max_burst_s"):
        driver.validate_spec(full_spec(q))


def test_driver_takes_the_end_system_model_as_a_boolean_only():
    spec = full_spec(qdisc_spec("fq_pie"))
    driver.validate_spec({**spec, "ns3_weak_es": True})
    with pytest.raises(SystemExit, match="ns3_weak_es must be true or false; got 'yes'"):
        driver.validate_spec({**spec, "ns3_weak_es": "yes"})


# (kind, aqmlab override, spec key, expected value): each aqmlab parameter reaches ns-3.
PARAMETERS = [
    ("cobalt", "limit=\"300p\"", "limit_packets", 300),
    ("cobalt", "limit=\"200KB\"", "limit_bytes", 200_000),
    ("cobalt", "target=\"3ms\"", "target_s", 0.003),
    ("cobalt", "interval=\"50ms\"", "interval_s", 0.05),
    ("cobalt", "p_inc=0.01", "p_inc", 0.01),
    ("cobalt", "p_dec=0.001", "p_dec", 0.001),
    ("cobalt", "blue_threshold=\"1s\"", "blue_threshold_s", 1.0),
    ("cobalt", "ecn=true", "ecn", True),
    ("fq_pie", "limit=\"2000p\"", "limit_packets", 2000),
    ("fq_pie", "flows=256", "flows", 256),
    ("fq_pie", "quantum=\"300B\"", "quantum", 300),
    ("fq_pie", "target=\"20ms\"", "target_s", 0.02),
    ("fq_pie", "t_update=\"30ms\"", "t_update_s", 0.03),
    ("fq_pie", "alpha=0.25", "alpha", 0.25),
    ("fq_pie", "beta=2.5", "beta", 2.5),
    ("fq_pie", "max_burst=\"100ms\"", "max_burst_s", 0.1),
    ("fq_pie", "ecn=true", "ecn", True),
    ("fq_pie", "ecn_prob=25", "mark_ecn_threshold", 0.25),
    ("fq_pie", "mtu=\"1000B\"", "mtu", 1000),
    ("fq_pie", "derandomize=true", "derandomize", True),
    ("fq_pie", "estimator=\"rate\"", "estimator", "rate"),
    ("fq_pie", "dq_threshold=\"8192B\"", "dq_threshold", 8192),
    # CAKE: rtt is COBALT's interval and sets the target (rtt / 20) unless target is given.
    ("cake", "rtt=\"50ms\"", "interval_s", 0.05),
    ("cake", "rtt=\"50ms\"", "target_s", 0.0025),
    ("cake", "target=\"3ms\"", "target_s", 0.003),
    ("cake", "target=\"80ms\"", "interval_s", 0.16),  # Linux: interval at least 2 x target
    ("cake", "memlimit=\"2MB\"", "limit_packets", 2000),  # 1000-byte packets
]


@pytest.mark.parametrize(("kind", "override", "key", "value"), PARAMETERS,
                         ids=[f"{k}-{o}-{key}" for k, o, key, _ in PARAMETERS])
def test_each_parameter_reaches_the_ns3_spec(kind, override, key, value):
    default = qdisc_spec(kind)
    changed = qdisc_spec(kind, f"topology.bottleneck.qdisc.{override}")
    assert changed[key] == pytest.approx(value)
    assert default.get(key) != pytest.approx(value)  # the override is what moved it


def test_cake_defaults_are_the_fq_cobalt_algorithm():
    q = qdisc_spec("cake")
    assert q == {"kind": "fq_cobalt", "limit_packets": 10240 * 1514 // 1000, "flows": 1024, "quantum": 1514,
                 "drop_batch": 1, "set_ways": 8, "target_s": 0.005, "interval_s": 0.1, "p_inc": 1 / 256,
                 "p_dec": 1 / 4096, "blue_threshold_s": None, "ecn": True}


@pytest.mark.parametrize("override", ["diffserv=\"diffserv3\"", "flowmode=\"triple-isolate\"",
                                      "bandwidth=\"20Mbps\"", "ack_filter=\"ack-filter\"", "ingress=true"])
def test_cake_not_comparable_with_fq_cobalt_is_refused(override):
    with pytest.raises(SystemExit, match="cake"):
        qdisc_spec("cake", f"topology.bottleneck.qdisc.{override}")


def test_fq_pie_bytemode_is_refused():
    with pytest.raises(SystemExit, match="bytemode"):
        qdisc_spec("fq_pie", "topology.bottleneck.qdisc.bytemode=true")


def test_ns3_set_values_parse_as_json():
    assert bench.parse_setting("set_ways=0") == ("set_ways", 0)
    assert bench.parse_setting("blue_threshold_s=null") == ("blue_threshold_s", None)
    assert bench.parse_setting("estimator=rate") == ("estimator", "rate")
    with pytest.raises(SystemExit):
        bench.parse_setting("set_ways")
