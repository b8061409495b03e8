"""aqmlab: a laboratory for router queue management and packet scheduling when video and data
share a bottleneck. The per-packet work happens in Rust (`aqmlab._core`); this package holds
scenario validation, running, metrics, plots and the command line.

The Python API (aqmlab.api, which the command line is built on)::

    import aqmlab
    sc = aqmlab.load("rb-rio/tcp-red", set=["topology.bottleneck.rate=30Mbps"])
    res = aqmlab.run(sc, seed=1)       # Results: DataFrames and figures, nothing written
    res.periods                        # one row per measurement period

Its names load on first use, so that ``import aqmlab`` stays cheap: the scenario models
(pydantic) and the data libraries (pandas, pyarrow, matplotlib) are imported by the first call
that needs them. ``aqmlab.run``, ``aqmlab.sweep`` and ``aqmlab.reproduce`` are the API's
functions; the modules of the same names stay importable as ``from aqmlab.run import ...``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from aqmlab._core import __version__

if TYPE_CHECKING:
    from aqmlab.api import (
        AqmlabError,
        AqmlabWarning,
        EmulationFailed,
        LoadedScenario,
        Reproduction,
        Results,
        SweepResults,
        confidence,
        load,
        reproduce,
        run,
        run_seeds,
        sweep,
    )
    from aqmlab.outdir import OutputRefused
    from aqmlab.scenario import Scenario, ScenarioError

#: Where each public name lives (imported on first access).
_EXPORTS = {
    **{name: "aqmlab.api" for name in (
        "AqmlabError", "AqmlabWarning", "EmulationFailed", "LoadedScenario", "Reproduction", "Results",
        "SweepResults", "confidence", "load", "reproduce", "run", "run_seeds", "sweep")},
    "OutputRefused": "aqmlab.outdir",
    "Scenario": "aqmlab.scenario",
    "ScenarioError": "aqmlab.scenario",
}

__all__ = [
    "AqmlabError", "AqmlabWarning", "EmulationFailed", "LoadedScenario", "OutputRefused", "Reproduction", "Results",
    "Scenario", "ScenarioError", "SweepResults", "__version__", "confidence", "load", "reproduce", "run",
    "run_seeds", "sweep",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    else:
        try:  # a submodule (aqmlab.scenario, aqmlab.stats, ...), as when this file imported them
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    """This package's module type: importing the submodule ``aqmlab.run`` (or ``sweep``,
    ``reproduce``) must not replace the API function of that name on the package, which is
    what the import system does by default. The submodule stays in ``sys.modules``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == "aqmlab.api":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
