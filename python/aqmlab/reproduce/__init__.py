"""Paper reproductions: `aqmlab reproduce PAPER` runs every experiment of a paper and writes
its tables (CSV and Markdown, ours beside the published values) and figures (PNG)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], jobs: Sequence[T], workers: int | None = None) -> list[R]:
    """Maps over jobs on the local cores, keeping the jobs' order (results are deterministic)."""
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        return list(pool.map(fn, jobs))


def write_tables(tables: Mapping[str, "pd.DataFrame"], folder: Path) -> None:
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
