"""benches/bench_tcp_dumbbell.py: a source build of ns-3 is found through its Python bindings,
and a directory without them is refused with a message naming the flag; the speed table gives
each engine's median over the interleaved runs and the median of the runs' ratios. (The ns-3
runs themselves are a bench, not a test.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import bench_module

bench = bench_module("bench_tcp_dumbbell")


def test_a_source_build_puts_its_bindings_first_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "bindings" / "python" / "ns").mkdir(parents=True)
    (tmp_path / "bindings" / "python" / "ns" / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = bench.ns3_environment(tmp_path)
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "bindings" / "python"), "/elsewhere"]
    assert bench.ns3_environment(None) is None


def test_a_directory_without_bindings_is_refused_naming_the_flag(tmp_path: Path):
    with pytest.raises(SystemExit, match="--ns3-build: .* has no bindings/python/ns/__init__.py"):
        bench.ns3_environment(tmp_path)


def _run(cpu: float, ns3_cpu: float | None) -> tuple[dict, dict | None]:
    ours = {"cpu_run_s": cpu, "wall_run_s": cpu, "bottleneck_packets": 1000,
            "periods": [{"start_s": 0, "end_s": 10, "utilization_mbps": 25.0, "drop_rate_pct": 1.0}]}
    if ns3_cpu is None:
        return ours, None
    ns3 = {"cpu_run_s": ns3_cpu, "wall_run_s": ns3_cpu, "total": {"dequeued_packets": 1000},
           "periods": [{"utilization_mbps": 25.0, "drop_rate_pct": 1.0}]}
    return ours, ns3


def test_the_speed_table_reports_medians_and_the_median_of_the_pair_ratios(capsys: pytest.CaptureFixture[str]):
    # Ratios 100, 50 and 200: their median is 100, where the ratio of the medians (1.0 / 0.02)
    # would be 50.
    bench.report("t", [_run(0.01, 1.0), _run(0.02, 1.0), _run(0.04, 8.0)], "ns-3 3.44 (test)", 60)
    out = capsys.readouterr().out
    assert "0.020 (0.010-0.040)" in out and "1.000 (1.000-8.000)" in out
    assert "median of the 3 runs' ratios: 100.0x (range 50.0-200.0x); target 100x: met" in out
    # Ratios 90, 110 and 40: median 90, below the 60-flow target.
    bench.report("t", [_run(0.01, 0.9), _run(0.01, 1.1), _run(0.01, 0.4)], "ns-3 3.44 (test)", 60)
    assert "median of the 3 runs' ratios: 90.0x (range 40.0-110.0x); target 100x: not met" in capsys.readouterr().out
    # Without ns-3: aqmlab's row only, no ratio.
    bench.report("t", [_run(0.01, None)], "ns-3 3.44 (test)", 60)
    assert "ratio" not in capsys.readouterr().out
