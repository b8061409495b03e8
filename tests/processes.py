"""Process-tree helpers for the tests that kill runs (Linux /proc)."""

from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every descendant process of `pid`, children first."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            # A process that exits while we walk has no task folder any more: it has no
            # descendants left to find (glob raises when the folder vanishes under it).
            tasks = list(Path(f"/proc/{parent}/task").glob("*"))
        except OSError:
            continue
        for task in tasks:
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += [k for k in kids if k not in found]
            todo += kids
    return found
