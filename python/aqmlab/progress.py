"""Progress of long commands (reproduce, compare, quality) on stderr: one bar per batch of
work with items done of total, elapsed time and an ETA.

A command opens :func:`shown` around its work; the code that does the work reports through
:func:`batch` without knowing whether anyone is watching (with no bar open it costs nothing,
which is also the case inside worker processes). The bar is drawn only when stderr is a
terminal and the command was not given ``--quiet``, so logs, pipes and CI stay clean. Items are
runs (one per scenario, discipline and seed; seeds that run in parallel count one each as they
finish) or, for quality, encodings prepared and flows scored.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

_bar: Any = None  # the open rich Progress, if any


@contextlib.contextmanager
def shown(quiet: bool = False) -> Iterator[None]:
    """Draws the batches reported inside the block, unless `quiet` or stderr is no terminal."""
    global _bar
    if quiet or not sys.stderr.isatty() or _bar is not None:
        yield
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True),
                   transient=True)
    with bar:
        _bar = bar
        try:
            yield
        finally:
            _bar = None


def batch(description: str, total: int) -> Callable[[], None]:
    """Starts a batch of `total` items; returns the function to call as each one finishes."""
    bar = _bar
    if bar is None or total <= 0:
        return _nothing
    task = bar.add_task(description, total=total)
    return lambda: bar.advance(task)


def _nothing() -> None:
    pass
