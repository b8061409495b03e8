"""Settings that are valid but probably not what was meant: printed as one warning line each,
the run goes ahead.

RED's ``max_th`` above its ``limit``: the average queue cannot exceed the physical queue, so the
upper part of the drop ramp (and, gentle or not, the forced drops beyond max_th) is never
reached and a full queue is tail-dropped instead. Linux's tc-red(8) likewise only asks for a
limit above max + burst without enforcing it. It is a warning, not an error, because a buffer
study may mean it: the built-in sweep ``sweeps/rb-rio-buffer`` keeps RED's thresholds fixed
(20/60) while the buffer goes down to 25 packets, where RED drops early only below 25."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from aqmlab.scenario.disciplines import Red


def _walk(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, BaseModel):
        yield path, node
        for name in type(node).model_fields:
            yield from _walk(getattr(node, name), f"{path}.{name}" if path else name)
    elif isinstance(node, (list, tuple)):
        for i, item in enumerate(node):
            yield from _walk(item, f"{path}.{i}")


def advisories(scenario: BaseModel) -> list[str]:
    """One line per questionable setting of `scenario`, naming the field."""
    found = []
    for path, node in _walk(scenario.topology, "topology"):  # type: ignore[attr-defined]
        if isinstance(node, Red):
            limit = node.limit.get("packets") or node.limit["bytes"] / node.mean_pkt_size
            if node.max_th > limit:
                found.append(f"{path}.max_th ({node.max_th:g}) is above {path}.limit ({limit:g} packets): the "
                             "average queue never reaches it, so RED's upper drop ramp is unreachable and a "
                             "full queue tail-drops")
    return found
