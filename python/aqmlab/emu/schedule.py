"""Packet schedules of UDP media flows for the emulator's senders (filled in below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: App kinds with a schedule.
KINDS: tuple[str, ...] = ()


def supports(app: Any) -> bool:
    return getattr(app, "kind", None) in KINDS


def write(sc: Any, flow: dict[str, Any], path: Path) -> Path:
    raise NotImplementedError(f"no schedule for {flow['kind']}")
