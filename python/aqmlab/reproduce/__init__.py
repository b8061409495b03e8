"""Paper reproductions: `aqmlab reproduce PAPER` runs every experiment of a paper and writes
its tables (CSV and Markdown, ours beside the published values) and figures (PNG)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], jobs: Sequence[T], workers: int | None = None,
                 description: str = "runs") -> list[R]:
    """Maps over jobs on the local cores, keeping the jobs' order (results are deterministic).
    Each finished job advances the progress bar, if the command shows one (aqmlab.progress).
    If the map is interrupted or fails, the workers are stopped at once instead of finishing
    their jobs for nothing; they also die with this process if it is killed outright."""
    from aqmlab.progress import batch

    workers = workers or os.cpu_count() or 1
    advance = batch(description, len(jobs))
    if workers == 1 or len(jobs) <= 1:
        results = []
        for j in jobs:
            results.append(fn(j))
            advance()
        return results
    # imported here: multiprocessing is a tenth of `aqmlab run`'s imports, and that command
    # imports this package only for the names of the papers (issue 22)
    from concurrent.futures import ProcessPoolExecutor, as_completed

    pool = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), initializer=_die_with_parent,
                               initargs=(os.getpid(),))
    try:
        futures = [pool.submit(fn, j) for j in jobs]
        for done in as_completed(futures):  # in finishing order, for the bar; results in job order
            done.result()  # a failed job stops the map at once
            advance()
        return [f.result() for f in futures]
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
