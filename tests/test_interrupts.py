"""Interrupted runs: Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGKILL
during `aqmlab run` and `aqmlab reproduce` leave no results directory, half or whole, no
simulation running on, and the next run works and leaves nothing hidden behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from conftest import aqmlab, small_scenario
from processes import descendants


def _start(*args: str) -> subprocess.Popen:
    # Own session, so that SIGINT can go to the whole group as a terminal's Ctrl-C does.
    return subprocess.Popen([sys.executable, "-m", "aqmlab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(condition, proc: subprocess.Popen, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"ended before {what}: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, f"no sign of {what} after {timeout} s"
        time.sleep(0.05)


def _gone(pids: set[int], timeout: float = 10.0) -> set[int]:
    """The pids still alive after `timeout` (zombies count as gone)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = set()
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.add(p)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _long_scenario(write_scenario) -> Path:
    long = small_scenario(duration="3000s")
    long["flows"][0]["count"] = 40
    return write_scenario(long)


def _run_sim_started(proc: subprocess.Popen) -> bool:
    """The simulation is running: the process's CPU time has passed 3 s (its imports take
    about 1 s of CPU; the 3000 s scenario takes minutes)."""
    try:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    ticks = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks / os.sysconf("SC_CLK_TCK") > 3.0


def test_run_killed_outright_leaves_nothing_and_the_next_run_works(tmp_path, write_scenario):
    out = tmp_path / "r"
    proc = _start("run", str(_long_scenario(write_scenario)), "--out", str(out), "--no-progress")
    _wait_for(lambda: _run_sim_started(proc), proc, 60, "the simulation running")
    proc.kill()
    proc.communicate(timeout=30)
    assert not out.exists()
    small = write_scenario(small_scenario(duration="2s", metrics={"periods": [["0s", "2s"]]}), "small.toml")
    r = aqmlab("run", str(small), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert len(pd.read_parquet(out / "flows.parquet")) == 5
    assert _hidden(tmp_path) == []


def test_a_stale_temporary_of_a_killed_run_is_removed_by_the_next(tmp_path, write_scenario):
    """SIGKILL while the results are being written leaves the hidden temporary (nothing can
    remove it then); the next run into the same place removes it. A live process's stays."""
    out = tmp_path / "r"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".r.tmp-{dead.pid}"
    (stale / "half").mkdir(parents=True)
    (stale / "half" / "packets.parquet").write_bytes(b"PAR1 truncated")
    stale_old = tmp_path / f".r.old-{dead.pid}"
    stale_old.mkdir()
    live = tmp_path / f".r.tmp-{os.getpid()}"
    live.mkdir()
    r = aqmlab("run", str(write_scenario(small_scenario(duration="1s", metrics={"periods": [["0s", "1s"]]}))),
               "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert (out / "summary.json").exists()
    assert _hidden(tmp_path) == [live.name]


def _reproduce_started(out: Path, proc: subprocess.Popen) -> bool:
    """The reproduction is writing: its hidden temporary exists and holds a first file."""
    tmp = out.parent / f".{out.name}.tmp-{proc.pid}"
    return tmp.is_dir() and any(tmp.iterdir())


def _interrupt_reproduce(tmp_path: Path, sig: int) -> tuple[subprocess.Popen, set[int], str]:
    out = tmp_path / "rq"
    proc = _start("reproduce", "rb-rio", "--quick", "--out", str(out), "--workers", "2")
    _wait_for(lambda: _reproduce_started(out, proc) or len(set(descendants(proc.pid))) >= 2, proc, 120,
              "the reproduction running")
    time.sleep(0.5)
    workers = set(descendants(proc.pid))
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # a terminal's Ctrl-C reaches the workers too
    else:
        proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    return proc, workers, stderr


def test_reproduce_ctrl_c_and_kill_leave_nothing_and_the_next_run_works(tmp_path):
    proc, workers, stderr = _interrupt_reproduce(tmp_path, signal.SIGINT)
    assert proc.returncode == 130, stderr[-2000:]
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not _gone(workers)
    assert sorted(p.name for p in tmp_path.iterdir()) == []

    proc, workers, _ = _interrupt_reproduce(tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert workers, "the reproduction had started no worker"
    assert not _gone(workers), "workers kept simulating after their parent was killed"
    assert not (tmp_path / "rq").exists()

    r = aqmlab("reproduce", "rb-rio", "--quick", "--out", str(tmp_path / "rq"), "--workers", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "rq" / "report.md").exists()
    assert _hidden(tmp_path) == []
