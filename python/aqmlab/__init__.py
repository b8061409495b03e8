"""aqmlab: a laboratory for router queue management and packet scheduling when video and data
share a bottleneck. The per-packet work happens in Rust (`aqmlab._core`); this package holds
scenario validation, running, metrics, plots and the command line."""

from aqmlab._core import __version__
from aqmlab.scenario import Scenario, ScenarioError, load

__all__ = ["Scenario", "ScenarioError", "load", "__version__"]
