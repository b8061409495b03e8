"""`aqmlab sweep --seeds N --set K=V --quick`: the command line shrinks or changes a sweep
without editing its file."""

from __future__ import annotations

import pandas as pd

from aqmlab.sweep import plan
from conftest import aqmlab, write_sweep


def test_seeds_set_and_quick_change_the_plan(tmp_path):
    path = write_sweep(tmp_path, seeds=2)
    assert {t.seed for t in plan(path).tasks} == {1, 2}
    assert {t.seed for t in plan(path, seeds=3).tasks} == {1, 2, 3}
    assert {t.seed for t in plan(path, quick=True).tasks} == {1}
    assert len(plan(path, quick=True).tasks) == 4  # every point kept, one seed each
    changed = plan(path, overrides=["duration=3s", 'metrics.periods=[["0s", "3s"]]'])
    assert {t.raw["duration"] for t in changed.tasks} == {"3s"}
    assert changed.describe()["set"] == ["duration=3s", 'metrics.periods=[["0s", "3s"]]']
    assert {t.run_id for t in changed.tasks}.isdisjoint({t.run_id for t in plan(path).tasks})


def test_the_command_line_runs_the_changed_sweep(tmp_path):
    path = write_sweep(tmp_path, seeds=3)
    out = tmp_path / "s"
    r = aqmlab("sweep", str(path), "--out", str(out), "--quick", "--set", "duration=3s",
               "--set", 'metrics.periods=[["0s", "3s"]]', "--workers", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    runs = pd.read_parquet(out / "runs.parquet")
    assert set(runs["seed"]) == {1} and len(runs) == 4
    assert set(zip(runs["start_s"], runs["end_s"], strict=True)) == {(0.0, 3.0)}
    stored = next((out / "runs").iterdir()) / "scenario.toml"
    assert 'duration = "3s"' in stored.read_text().splitlines()


def test_bad_options_are_one_line(tmp_path):
    path = write_sweep(tmp_path, seeds=2)
    r = aqmlab("sweep", str(path), "--out", str(tmp_path / "o"), "--set", "topology.bottleneck.rate=fast")
    assert r.returncode == 2 and "topology.bottleneck.rate" in r.stderr and "Traceback" not in r.stderr
    r = aqmlab("sweep", str(path), "--out", str(tmp_path / "o"), "--quick", "--seeds", "2")
    assert r.returncode == 2 and "either --quick or --seeds" in r.stderr
    assert not (tmp_path / "o").exists()


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    path = write_sweep(tmp_path, seeds=1, axes=[{"path": "topology.bottleneck.qdisc.limit", "name": "buffer",
                                                 "values": ["20p", "40p"]}])
    r = aqmlab("sweep", str(path), "--out", str(tmp_path / "s"), "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert "ETA" not in r.stderr and "━" not in r.stderr, r.stderr
    assert "2 runs: 2 run now" in r.stderr
