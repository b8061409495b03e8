"""Process-tree helpers for the tests that kill runs (Linux /proc)."""

from __future__ import annotations

from pathlib import Path


def descendants(pid: int) -> list[int]:
    """Every descendant process of `pid`, children first."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += [k for k in kids if k not in found]
            todo += kids
    return found
