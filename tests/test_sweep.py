"""aqmlab sweep: validation up front, engines giving the same bytes, resuming after a kill or
Ctrl-C, failed runs recorded, and the tables' content."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from aqmlab.sweep import plan
from conftest import AXES, METRICS, aqmlab, small_scenario, write_sweep


def run_dirs(out: Path) -> dict[str, Path]:
    return {p.name: p for p in (out / "runs").iterdir() if not p.name.startswith(".")}


def test_tables_hold_one_row_per_run_and_period_and_a_ci_per_point(tmp_path):
    out = tmp_path / "out"
    r = aqmlab("sweep", str(write_sweep(tmp_path)), "--out", str(out), "--workers", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    runs = pd.read_parquet(out / "runs.parquet")
    points = pd.read_parquet(out / "points.parquet")
    # 2 disciplines x 2 buffers x 2 seeds, 2 periods each.
    assert len(runs) == 16 and runs["run"].nunique() == 8
    assert list(runs.columns[:6]) == ["run", "discipline", "buffer", "seed", "start_s", "end_s"]
    assert set(METRICS) <= set(runs.columns)
    assert sorted(set(zip(runs["discipline"], runs["buffer"], strict=True))) == [
        ("droptail", "20p"), ("droptail", "40p"), ("red", "20p"), ("red", "40p")]
    # The axes reached the simulator: a deeper buffer queues longer under Drop-Tail.
    dt = points[(points["discipline"] == "droptail") & (points["start_s"] == 2.0)].set_index("buffer")
    assert dt.loc["40p", "qdelay_p95_ms_mean"] > dt.loc["20p", "qdelay_p95_ms_mean"]
    # Seeds differ, and the point table is their mean with a Student-t interval (t_0.975,1 = 12.706).
    one = runs[(runs["discipline"] == "red") & (runs["buffer"] == "20p") & (runs["start_s"] == 0.0)]
    a, b = one["drop_rate_pct"]
    assert a != b
    row = points[(points["discipline"] == "red") & (points["buffer"] == "20p") & (points["start_s"] == 0.0)].iloc[0]
    assert row["seeds"] == 2
    assert row["drop_rate_pct_mean"] == pytest.approx((a + b) / 2)
    assert row["drop_rate_pct_ci95"] == pytest.approx(12.706 * abs(a - b) / 2 ** 0.5 / 2 ** 0.5)
    assert json.loads((out / "sweep.json").read_text())["runs"] == 8


def test_dask_local_cluster_gives_the_same_table_bytes_as_the_process_pool(tmp_path):
    sweep = write_sweep(tmp_path)
    pool, dask = tmp_path / "pool", tmp_path / "dask"
    r = aqmlab("sweep", str(sweep), "--out", str(pool), "--workers", "2", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = aqmlab("sweep", str(sweep), "--out", str(dask), "--dask", "local", "--workers", "2", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "8 run now" in r.stderr
    for table in ("runs.parquet", "points.parquet"):
        assert (pool / table).read_bytes() == (dask / table).read_bytes(), table
    assert len(pd.read_parquet(dask / "runs.parquet")) == 16


@pytest.mark.parametrize("axis, expected", [
    ({"path": "topology.bottleneck.qdisc.limt", "values": ["20p", "40p"]}, "unknown key 'limt'"),
    ({"path": "topology.bottleneck.qdisc.limit", "values": ["20p", "40pk"]}, 'queue limit "40pk": unknown unit'),
    ({"path": "flows.tcp.count", "values": [1, 2]}, "no item 'tcp'; use an index or a name: 0, bulk"),
])
def test_bad_axis_path_or_value_is_refused_before_anything_runs(tmp_path, axis, expected):
    out = tmp_path / "out"
    r = aqmlab("sweep", str(write_sweep(tmp_path, axes=[AXES[0], axis])), "--out", str(out))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_bad_metric_sweep_key_or_records_are_refused(tmp_path):
    r = aqmlab("sweep", str(write_sweep(tmp_path, metrics_typo=1)), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "unknown key 'metrics_typo'" in r.stderr
    sweep = write_sweep(tmp_path)
    sweep.write_text(sweep.read_text().replace('"jain"', '"jian"'))
    r = aqmlab("sweep", str(sweep), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "unknown metric 'jian'" in r.stderr and not (tmp_path / "o").exists()
    r = aqmlab("sweep", str(write_sweep(tmp_path, set=["records.packet_events=false"])), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "records.packet_events: must be true" in r.stderr and not (tmp_path / "o").exists()


def _slow_sweep(tmp_path: Path) -> Path:
    """12 runs of about half a second each (here), long enough to stop part way: after the first
    two, the other ten take seconds more even on two workers, so a test process that is slow to
    notice the first two still stops the sweep before its end. (At 10 Mbit/s for 12 s the runs
    took 25 ms each, and a CI run once saw all 12 done before its stop; at 40 s of simulated time
    they had come down to 0.2 s each by 2026-11-29, the ten after the first two done within about
    a second, and another CI run saw all 12 done before its stop: now 120 s.)"""
    scenario = small_scenario(duration="120s", metrics={"periods": [["2s", "120s"]]})
    scenario["topology"]["bottleneck"]["rate"] = "100Mbps"
    scenario["flows"][0]["count"] = 20
    axes = [AXES[0], {"path": "topology.bottleneck.qdisc.limit", "values": ["20p", "40p", "60p"]}]
    return write_sweep(tmp_path, axes=axes, scenario=scenario)


def _wait_for_runs(out: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "runs").is_dir() and len(run_dirs(out)) >= n:
            return
        assert proc.poll() is None, "the sweep ended before it could be stopped"
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} runs after {timeout} s")


def _finished(out: Path) -> dict[str, int]:
    """Finished runs by id, with the inode of their metrics file (a rerun would replace it)."""
    return {name: (d / "metrics.parquet").stat().st_ino for name, d in run_dirs(out).items()}


@pytest.mark.parametrize("how", ["kill", "ctrl-c"])
def test_stopped_sweep_rerun_finishes_with_every_run_done_once(tmp_path, how):
    sweep, out = _slow_sweep(tmp_path), tmp_path / "out"
    workers = "1" if how == "kill" else "2"
    # SIGINT back to its default in the child: a shell starts background jobs with it ignored,
    # and Python keeps an inherited "ignore" instead of raising KeyboardInterrupt.
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "sweep", str(sweep), "--out", str(out),
                             "--workers", workers, "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for_runs(out, 2, proc)
    proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    if how == "ctrl-c":
        assert proc.returncode == 130 and "rerun the same command" in " ".join(stderr.split()), stderr
        time.sleep(1.0)  # pool workers notice their parent is gone within 0.5 s
        assert not _processes_naming(str(out)), "worker processes outlived the interrupted sweep"
    before = _finished(out)
    assert 2 <= len(before) < 12
    assert not (out / "runs.parquet").exists()  # tables come only from a sweep that got to its end

    r = aqmlab("sweep", str(sweep), "--out", str(out), "--workers", "2", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert f"{12 - len(before)} run now, {len(before)} done before, 0 failed" in r.stderr
    after = _finished(out)
    assert len(after) == 12
    assert {k: after[k] for k in before} == before  # runs finished before the stop were not run again
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 12 and runs["run"].is_unique
    # Rerunning a complete sweep runs nothing.
    r = aqmlab("sweep", str(sweep), "--out", str(out), "--no-progress")
    assert r.returncode == 0 and "0 run now, 12 done before" in r.stderr
    assert _finished(out) == after


def _processes_naming(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if pid.isdigit() and text in cmdline:
            found.append(int(pid))
    return found


def test_failed_run_is_recorded_and_the_others_finish(tmp_path):
    """A run whose trace file a worker cannot read fails on the worker, not at validation."""
    good, bad = tmp_path / "good.trace", tmp_path / "bad.trace"
    good.write_text("\n".join(["4000", "1500", "1500"] * 10) + "\n")
    bad.write_text("4000\nnot-a-size\n")
    scenario = small_scenario()
    scenario["flows"].append({"name": "video", "count": 1, "app": {"kind": "video", "fps": 25, "trace": str(good)}})
    axes = [AXES[1], {"path": "flows.video.app.trace", "name": "trace", "values": [str(good), str(bad)],
                      "labels": ["good", "bad"]}]
    out = tmp_path / "out"
    sweep = write_sweep(tmp_path, axes=axes, seeds=1, scenario=scenario)
    r = aqmlab("sweep", str(sweep), "--out", str(out), "--workers", "2", "--no-progress")
    assert r.returncode == 1
    assert "2 run now, 0 done before, 2 failed" in r.stderr
    failed = pd.read_csv(out / "failed.csv")
    assert sorted(failed["trace"]) == ["bad", "bad"]
    assert failed["error"].str.contains("not-a-size").all()
    assert set(pd.read_parquet(out / "runs.parquet")["trace"]) == {"good"}
    # A rerun retries only the failed runs.
    r = aqmlab("sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress")
    assert r.returncode == 1 and "0 run now, 2 done before, 2 failed" in r.stderr


def test_plan_expands_ranges_and_gives_stable_run_ids(tmp_path):
    axes = [{"path": "flows.bulk.count", "name": "flows", "range": {"start": 1, "stop": 7, "step": 3}},
            {"path": "topology.bottleneck.rate", "name": "rate", "values": ["5Mbps", "10Mbps"]}]
    sweep = plan(write_sweep(tmp_path, axes=axes, seeds=[3, 5]))
    assert [(t.labels, t.seed) for t in sweep.tasks[:3]] == [(("1", "5Mbps"), 3), (("1", "5Mbps"), 5),
                                                             (("1", "10Mbps"), 3)]
    assert [t.raw["flows"][0]["count"] for t in sweep.tasks[::4]] == [1, 4, 7]
    again = plan(write_sweep(tmp_path, axes=axes[:1] + [{**axes[1], "values": ["10Mbps"]}], seeds=[3, 5]))
    # A point the smaller grid shares with the larger has the same run id.
    assert {t.run_id for t in again.tasks} < {t.run_id for t in sweep.tasks}


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if entry.isdigit() and int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            kids.append(int(entry))
    return kids


def test_killed_pool_worker_loses_no_run(tmp_path):
    """A pool worker killed mid-sweep (as the out-of-memory killer would): the pool is restarted
    for the unfinished runs and the sweep ends complete, each run stored once."""
    sweep, out = _slow_sweep(tmp_path), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "sweep", str(sweep), "--out", str(out),
                             "--workers", "2", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    _wait_for_runs(out, 2, proc)
    before = _finished(out)
    workers = [p for p in _children(proc.pid) if p != proc.pid]
    assert workers, "no pool worker found"
    os.kill(workers[0], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    after = _finished(out)
    assert len(after) == 12 and {k: after[k] for k in before} == before
    assert "a worker process died; a new pool runs the" in " ".join(stderr.split())
    assert "12 run now, 0 done before, 0 failed" in " ".join(stderr.split())
