"""RED's max_th above its limit: the run goes ahead with one warning line naming the field (the
average queue never reaches max_th). Warned, not refused: sweeps/rb-rio-buffer means it."""

from __future__ import annotations

from aqmlab.scenario import load
from aqmlab.scenario.advisories import advisories
from conftest import aqmlab


def test_max_th_above_a_packet_limit_is_named_with_both_values():
    sc, _ = load("rb-rio/tcp-red", ["topology.bottleneck.qdisc.limit=50p"])
    line, = advisories(sc)
    assert line.startswith("topology.bottleneck.qdisc.max_th (60) is above "
                           "topology.bottleneck.qdisc.limit (50 packets)")
    assert advisories(load("rb-rio/tcp-red")[0]) == []


def test_a_byte_limit_counts_in_mean_packet_sizes():
    sc, _ = load("rb-rio/tcp-red", ["topology.bottleneck.qdisc.limit=59000B"])  # 59 packets of 1000 B
    assert len(advisories(sc)) == 1
    sc, _ = load("rb-rio/tcp-red", ["topology.bottleneck.qdisc.limit=60000B"])
    assert advisories(sc) == []


def test_a_red_nested_inside_classful_disciplines_is_found_by_its_path():
    over = "topology.bottleneck.qdisc.qdisc.bands.0.qdisc.bands.1.max_th=120"
    sc, _ = load("pels/best-effort-7", [over])
    line, = advisories(sc)
    assert line.startswith("topology.bottleneck.qdisc.qdisc.bands.0.qdisc.bands.1.max_th (120) is above")


def test_run_warns_in_one_line_and_still_runs(tmp_path):
    out = tmp_path / "r"
    r = aqmlab("run", "rb-rio/tcp-red", "--out", str(out), "--no-progress",
               "--set", "topology.bottleneck.qdisc.limit=50p")
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "max_th (60)" in warnings[0] and "(in tcp-red)" in warnings[0]
    assert (out / "summary.json").exists()
