"""Scenario files: TOML validated by pydantic models.

Every field has a unit (see :mod:`aqmlab.units`) and a documented default; unknown keys are
errors that list the allowed ones. :func:`load` reads a file, applies ``--set key=value``
overrides, validates, and raises :class:`ScenarioError` with one line per problem, each
naming the field (``topology.bottleneck.rate: ...``).

The package, one concept per module: :mod:`.base` (the strict base model), :mod:`.disciplines`,
:mod:`.topology`, :mod:`.applications`, :mod:`.flows`, :mod:`.model` (the top level),
:mod:`.normalize` (to the simulator's config), :mod:`.overrides` (``--set``), :mod:`.errors`
and :mod:`.load`. Everything is re-exported here: ``from aqmlab.scenario import X`` works for
every name, and ``vars(aqmlab.scenario)`` holds every model (tests/mutations.py reads it).
"""

from aqmlab import _core
from aqmlab.scenario.applications import (
    ABR_ALGORITHMS,
    APP_MODELS,
    KERNEL_CONGESTION_CONTROL,
    MEDIA,
    Abr,
    App,
    Audio,
    Bulk,
    Cbr,
    FrameClasses,
    FrameSizesByType,
    Mpeg,
    Pels,
    Ping,
    Poisson,
    Stream,
    Tcp,
    Video,
)
from aqmlab.scenario.base import MAX_BANDS, U32, Strict
from aqmlab.scenario.disciplines import (
    FLOW_FIELDS,
    QDISC_MODELS,
    Cake,
    Classifier,
    Cobalt,
    Codel,
    DropTail,
    Drr,
    Dualpi2,
    FlowKey,
    FqCodel,
    FqPie,
    PelsFeedback,
    Pfq,
    Pie,
    Prio,
    Qdisc,
    RbRed,
    RbRio,
    Red,
    Rio,
    RioCurve,
    Sqf,
    Tbf,
    Wrr,
    WrrBand,
)
from aqmlab.scenario.errors import Problem, ScenarioError, _format_errors, _problems
from aqmlab.scenario.flows import FlowGroup
from aqmlab.scenario.impairments import GilbertElliott, Impairments
from aqmlab.scenario.link_traces import (
    TRACE_MODELS,
    ConstantTrace,
    MarkovState,
    MarkovTrace,
    SquareTrace,
    SyntheticTrace,
)
from aqmlab.scenario.load import BUILTIN_DIR, deep_merge, load, read_scenario_file, read_toml, resolve_path, validate
from aqmlab.scenario.model import Emulation, Marking, Metrics, Records, Reference, ReferencePeriod, Scenario
from aqmlab.scenario.normalize import _app, read_trace, sim_config
from aqmlab.scenario.overrides import apply_override, set_path
from aqmlab.scenario.topology import Dumbbell, Hop, Link

__all__ = [
    "ABR_ALGORITHMS", "APP_MODELS", "Abr", "App", "Audio", "BUILTIN_DIR", "Bulk", "Cake", "Cbr", "Classifier", "Cobalt",
    "Codel", "ConstantTrace", "DropTail", "Drr", "Dualpi2", "Dumbbell", "Emulation", "FLOW_FIELDS", "FlowGroup",
    "FlowKey", "FqCodel", "FqPie", "FrameClasses", "FrameSizesByType", "GilbertElliott", "Hop", "Impairments",
    "KERNEL_CONGESTION_CONTROL", "Link", "MAX_BANDS", "MEDIA", "Marking", "MarkovState", "MarkovTrace", "Metrics",
    "Mpeg",
    "Pels", "PelsFeedback", "Pfq", "Pie", "Ping", "Poisson", "Prio", "Problem", "QDISC_MODELS", "Qdisc", "RbRed",
    "RbRio", "Records", "Red", "Reference", "ReferencePeriod", "Rio", "RioCurve", "Scenario", "ScenarioError",
    "Sqf", "SquareTrace", "Stream", "Strict", "SyntheticTrace", "TRACE_MODELS", "Tbf", "Tcp", "U32", "Video",
    "Wrr", "WrrBand", "_app", "_core", "_format_errors", "_problems", "apply_override", "deep_merge", "load",
    "read_scenario_file", "read_toml", "read_trace", "resolve_path", "set_path", "sim_config", "validate",
]
