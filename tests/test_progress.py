"""Progress of long commands (aqmlab.progress): runs done of total with an ETA on a terminal's
stderr, nothing with --quiet or when stderr is not a terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from aqmlab import progress
from aqmlab.reproduce import parallel_map


class FakeBar:
    def __init__(self) -> None:
        self.tasks: dict[int, list] = {}

    def add_task(self, description: str, total: int) -> int:
        self.tasks[len(self.tasks)] = [description, total, 0]
        return len(self.tasks) - 1

    def advance(self, task: int) -> None:
        self.tasks[task][2] += 1


def square(x: int) -> int:
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_every_finished_job_advances_the_bar_and_results_keep_their_order(monkeypatch, workers):
    bar = FakeBar()
    monkeypatch.setattr(progress, "_bar", bar)
    assert parallel_map(square, list(range(7)), workers) == [x * x for x in range(7)]
    assert bar.tasks == {0: ["runs", 7, 7]}


def test_no_bar_when_quiet_or_not_a_terminal(monkeypatch):
    class Tty:
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stderr", Tty())
    with progress.shown(quiet=True):
        assert progress._bar is None
    with progress.shown():
        assert progress._bar is not None
    assert progress._bar is None
    monkeypatch.setattr(sys, "stderr", open(os.devnull, "w"))  # noqa: SIM115 - closed with the test
    with progress.shown():
        assert progress._bar is None


def test_reproduce_shows_runs_done_of_total_on_a_terminal(tmp_path):
    main, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "aqmlab", "reproduce", "rb-rio", "--quick", "--out",
                             str(tmp_path / "rb")], stdout=subprocess.DEVNULL, stderr=follower,
                            env={**os.environ, "COLUMNS": "120"})
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the follower side closed: the process ended
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=300) == 0
    text = seen.decode(errors="replace")
    assert "runs" in text and "ETA" in text and "/15" in text, text[-2000:]
