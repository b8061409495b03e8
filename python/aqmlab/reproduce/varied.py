"""What a reproduction varies itself, and the `--set` that would silently undo it.

Each reproduction module lists in ``VARIED`` the scenario fields it sets per run (the axis of a
figure, the runs' length, the disciplines compared), with what each is for. An override of such
a field (or of a table holding one, or of a field inside one) would replace the varied values
by one value in every run (Figure 8's 10 and 100 Mbit/s halves alike), so it is refused in one
line that names the field and lists every field the reproduction varies. ``flows.<index>`` and
``flows.*`` in ``VARIED`` stand for any flow group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def _segments_match(a: str, b: str) -> bool:
    wild = ("*",)
    return a == b or a in wild or b in wild


def _touches(key: str, field: str) -> bool:
    """Whether setting `key` sets `field` or a table holding it, or a part of it. A flow group
    addressed by index (flows.0) may be any group."""
    k = ["*" if i == 1 and p.isdigit() and key.startswith("flows.") else p for i, p in enumerate(key.split("."))]
    f = field.split(".")
    return all(_segments_match(x, y) for x, y in zip(k, f, strict=False))


def conflicts(varied: Mapping[str, str], overrides: Sequence[str]) -> list[tuple[str, str]]:
    """(override, varied field) for each override that touches a field the reproduction varies."""
    found = []
    for assignment in overrides:
        key = assignment.partition("=")[0].strip()
        found += [(assignment, field) for field in varied if _touches(key, field)]
    return found


def refusal(paper: str, varied: Mapping[str, str], overrides: Sequence[str]) -> str | None:
    """The one-line refusal of overrides of varied fields, or None when there is none."""
    hits = conflicts(varied, overrides)
    if not hits:
        return None
    which = "; ".join(f"--set {a} would replace {field} ({varied[field]})" for a, field in hits)
    every = ", ".join(varied)
    return f"{paper}: {which}; the reproduction varies {every} itself, so --set may not change them"
