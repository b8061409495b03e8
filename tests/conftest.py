"""Shared helpers: small scenarios built in code, and running the CLI as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w

REPO = Path(__file__).resolve().parent.parent


def small_scenario(**over: Any) -> dict[str, Any]:
    """A 5-flow, 4-second dumbbell that runs in a fraction of a second."""
    s: dict[str, Any] = {
        "name": "small",
        "seed": 7,
        "duration": "4s",
        "topology": {
            "bottleneck": {"rate": "10Mbps", "delay": "10ms",
                           "qdisc": {"kind": "red", "limit": "60p", "min_th": 5, "max_th": 15}},
        },
        "flows": [{"name": "bulk", "count": 5, "start_jitter": "500ms", "sender_delay": ["2ms", "20ms"],
                   "app": {"kind": "bulk", "tcp": {"min_rto": "200ms"}}}],
        "metrics": {"periods": [["0s", "2s"], ["2s", "4s"]]},
    }
    s.update(over)
    return s


@pytest.fixture
def write_scenario(tmp_path: Path):
    def write(data: dict[str, Any], name: str = "scenario.toml") -> Path:
        p = tmp_path / name
        p.write_text(tomli_w.dumps(data))
        return p

    return write


def aqmlab(*args: str, **kw: Any) -> subprocess.CompletedProcess:
    """Runs the command line in a fresh interpreter, as a user would."""
    return subprocess.run([sys.executable, "-m", "aqmlab", *args], capture_output=True, text=True, **kw)
