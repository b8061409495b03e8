"""Paper reproductions: `aqmlab reproduce PAPER` runs every experiment of a paper and writes
its tables (CSV and Markdown, ours beside the published values) and figures (PNG)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], jobs: Sequence[T], workers: int | None = None) -> list[R]:
    """Maps over jobs on the local cores, keeping the jobs' order (results are deterministic).
    If the map is interrupted or fails, the workers are stopped at once instead of finishing
    their jobs for nothing; they also die with this process if it is killed outright."""
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_die_with_parent,
                               initargs=(os.getpid(),))
    try:
        return list(pool.map(fn, jobs))
    except BaseException:
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.kill()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _die_with_parent(parent: int) -> None:
    """Worker initializer: on Linux, ask the kernel to SIGKILL this worker when the process
    that started it dies (prctl PR_SET_PDEATHSIG), so a killed `aqmlab reproduce` leaves no
    simulations running on. Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def write_tables(tables: Mapping[str, pd.DataFrame], folder: Path) -> None:
    """Each table as CSV (for pandas) and Markdown (for reading) under `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(folder / f"{name}.csv", index=False)
        (folder / f"{name}.md").write_text(df.to_markdown(index=False) + "\n")


PAPERS: dict[str, str] = {
    "rb-rio": "aqmlab.reproduce.rb_rio",
    "sqf": "aqmlab.reproduce.sqf",
    "head-to-head": "aqmlab.reproduce.head_to_head",
    "pels": "aqmlab.reproduce.pels",
}


def reproducer(paper: str) -> Any:
    import importlib

    return importlib.import_module(PAPERS[paper])
