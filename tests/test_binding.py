"""The Rust binding `aqmlab._core`: errors cross it as typed exceptions carrying their parts as
attributes (never strings for Python to re-parse), and its hand-written stubs match it."""

from __future__ import annotations

import ast
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

import aqmlab
import aqmlab.scenario as sc
from aqmlab import _core
from aqmlab.scenario import Problem, ScenarioError, validate
from conftest import small_scenario


def _config(**over) -> dict:
    return validate(small_scenario(**over)).to_sim_config()


def test_a_refused_value_arrives_with_its_path_kind_and_message():
    config = _config()
    config["topology"]["bottleneck"]["qdisc"] = {"kind": "codel", "limit": {"packets": 10}, "target_ns": 5,
                                                 "interval_ns": 5, "mtu": 1500, "ecn": False}
    with pytest.raises(_core.ConfigError) as err:
        _core.check_sim_config(json.dumps(config))
    e = err.value
    assert isinstance(e, ValueError)
    assert (e.kind, e.path) == ("invalid", "bottleneck.qdisc")
    assert e.message.startswith("target_ns (5) must be smaller than interval_ns (5)")
    assert str(e) == f"{e.path}: {e.message}"


def test_a_config_of_the_wrong_shape_is_a_shape_error_of_the_whole_document():
    config = _config()
    config["records"]["no_such_field"] = 1
    for check in (_core.check_sim_config, _core.Simulation):
        with pytest.raises(_core.ConfigError) as err:
            check(json.dumps(config))
        assert (err.value.kind, err.value.path) == ("shape", "")
        assert "no_such_field" in err.value.message


def test_the_emulators_router_refuses_its_config_with_the_same_typed_error():
    """Both engines share one error type (aqmlab-model's ConfigError): the router's refusal
    carries its path and kind as data too."""
    with pytest.raises(_core.ConfigError) as err:
        _core.Router(json.dumps({"seed": 1}))
    assert err.value.kind == "shape" and err.value.path == ""
    assert "missing field" in err.value.message


def test_a_group_error_names_the_group():
    config = _config()
    config["flow_groups"][0]["path_loss"] = 1.5
    with pytest.raises(_core.ConfigError) as err:
        _core.check_sim_config(json.dumps(config))
    assert err.value.path == "flows.bulk.path_loss"


def test_the_simulators_refusal_reaches_the_user_as_a_problem_at_the_scenario_field(monkeypatch):
    """Only a check missing from the models lets this happen; its field and kind stay data."""
    def refuse(config_json: str) -> None:
        e = _core.ConfigError("bottleneck.qdisc: target_ns: must be > 0")
        e.kind, e.path, e.message = "invalid", "bottleneck.qdisc", "target_ns: must be > 0"
        raise e

    monkeypatch.setattr(sc._core, "check_sim_config", refuse)
    with pytest.raises(ScenarioError) as err:
        validate(small_scenario(), "s.toml")
    assert err.value.problems == [Problem("s.toml", "topology.bottleneck.qdisc", "engine:invalid",
                                          "target_ns: must be > 0")]
    assert err.value.lines == ["s.toml: topology.bottleneck.qdisc: target_ns: must be > 0"]


def test_a_models_refusal_is_a_problem_with_the_field_and_pydantics_kind():
    data = small_scenario()
    data["topology"]["bottleneck"]["qdisc"]["w_q"] = 2
    with pytest.raises(ScenarioError) as err:
        validate(data, "s.toml")
    (p,) = err.value.problems
    assert (p.origin, p.path, p.kind) == ("s.toml", "topology.bottleneck.qdisc.w_q", "less_than_equal")


def test_a_cancelled_run_raises_cancelled_a_keyboard_interrupt():
    sim = _core.Simulation(json.dumps(_config(duration="200s")))
    sim.cancel()
    with pytest.raises(_core.Cancelled) as err:
        sim.run()
    assert isinstance(err.value, KeyboardInterrupt)
    assert 0 < sim.progress_ns() < 200 * 10**9


# ---- the stubs ------------------------------------------------------------------------------

STUB = Path(aqmlab.__file__).parent / "_core.pyi"


def _stub() -> dict[str, ast.AST]:
    """Top-level names of the stub file and their definitions."""
    tree = ast.parse(STUB.read_text())
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.args if a.arg != "self"]


def _runtime_params(obj: Any) -> list[str]:
    return [n for n in inspect.signature(obj).parameters if n != "self"]


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def test_the_stub_and_the_module_have_the_same_public_names():
    runtime = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    assert set(_stub()) == runtime


def test_every_stubbed_function_and_method_has_the_real_parameter_names():
    for name, node in _stub().items():
        obj = getattr(_core, name)
        if isinstance(node, ast.FunctionDef):
            assert _params(node) == _runtime_params(obj), name
        elif isinstance(node, ast.ClassDef) and not issubclass(obj, BaseException):
            methods = _methods(node)
            public = {n for n in vars(obj) if not n.startswith("_")}
            assert set(methods) - {"__init__"} == public, name
            assert _params(methods["__init__"]) == _runtime_params(obj), f"{name}.__init__"
            for m in public:
                if any(isinstance(d, ast.Name) and d.id == "property" for d in methods[m].decorator_list):
                    # a read-only attribute: the stub's property, a getter at run time
                    assert inspect.isdatadescriptor(getattr(obj, m)), f"{name}.{m}"
                else:
                    assert _params(methods[m]) == _runtime_params(getattr(obj, m)), f"{name}.{m}"
        elif isinstance(node, ast.ClassDef):
            assert [b.id for b in node.bases if isinstance(b, ast.Name)] == [obj.__base__.__name__], name


def _conforms(value: Any, annotation: Any) -> bool:
    """Whether `value` has the type `annotation` (the subset of types the stub uses)."""
    if annotation is None:
        return value is None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        return any(_conforms(value, a if a is not type(None) else None) for a in args)
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(_conforms, value, args))
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items())
    return isinstance(value, annotation) and not (annotation is int and isinstance(value, bool))


def _returns(fn: ast.FunctionDef) -> Any:
    assert fn.returns is not None, fn.name
    return eval(ast.unparse(fn.returns), {})  # noqa: S307 - the stub's own annotation


def test_the_stubs_return_types_hold_for_every_cheap_call():
    stub = _stub()
    poisson = json.dumps({"kind": "rtp", "media": {"kind": "poisson", "rate_bps": 1_000_000, "packet_size": 1000},
                          "jitter_sd_ns": 0})
    calls = {
        "parse_time": ("20ms",), "parse_rate": ("25Mbps",), "parse_bytes": ("1500B",), "parse_limit": ("100p",),
        "parse_delivery_trace": ("1\n1\n4\n", "t.down"),
        "synthetic_trace": ('{"kind": "constant", "rate_bps": 12000000, "length_ms": 3}', 1, "bottleneck"),
        "check_sim_config": (json.dumps(_config()),), "start_offsets": (1, "g", 3, 1000), "monotonic_ns": (),
        "udp_schedule": (poisson, 1, 0, 0, 10_000_000, 0, [0, 0, 0, 0]),
        # One MPEG flow of two packets (frames 0 and 1, I then P), of which frame 0 arrived.
        "replayed_frames_table": ([(3, 12, [0, 40_000_000], [0, 1], [1, 2], [1028, 528], [0])],),
        # One TCP sender row (LOGGED_SAMPLE_COLUMNS values) and one UDP flow with one delivery,
        # sampled at 0 and 1 s.
        "replayed_flow_samples": ([0, 2, 1000, 14600, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0], [(5, [500_000_000], [1028])],
                                  1_000_000_000, 1_000_000_000),
        # A TCP flow whose fast retransmits and spurious timeouts were not measured.
        "replayed_flows_table": ([((0, 0, True, 0, 10, 1, 1, 4), (20, 1, None, 0, None, 14600))],),
        "replayed_media_table": ([5], [0], [1028], [10], [20]),
        # BOLA on a 2-rung, 1-segment ladder with an empty buffer.
        "abr_choose": (json.dumps({"algorithm": "bola", "safety_factor": 0.9, "throughput_window": 4,
                                   "bba_reservoir_s": 1.0, "bba_cushion_s": 2.0, "bola_gamma_p": 5.0,
                                   "bola_buffer_target_s": 10.0, "mpc_horizon": 5}),
                       json.dumps({"segment_duration_ns": 2_000_000_000, "bitrates_bps": [1000, 2000],
                                   "sizes_bytes": [[250], [500]]}), 0, 0.0, None, [], []),
        # One key frame of one packet, received 20 ms after its capture.
        "call_tables": (3, [(0, 1000, True, 300_000.0, 1, 1, 20_000_000)], 150_000_000, 1_000_000_000,
                        [300_000.0], 1, 1),
    }
    functions = {n for n, node in stub.items() if isinstance(node, ast.FunctionDef)}
    assert functions == set(calls), "give every function of the stub a cheap call here"
    for name, args in calls.items():
        value = getattr(_core, name)(*args)
        assert _conforms(value, _returns(stub[name])), (name, value)
    sim = _core.Simulation(json.dumps(_config(duration="1s", metrics={})))
    methods = _methods(stub["Simulation"])  # type: ignore[arg-type]
    for name in ("run", "progress_ns", "summary_json", "take_records", "cancel"):
        value = getattr(sim, name)()
        assert _conforms(value, _returns(methods[name])), (name, value)
    # The call's classes (the emulated GCC call), on the gcc-fifo scenario's call config.
    cfg = aqmlab.load("video/gcc-fifo").model.to_sim_config()
    app = json.dumps(next(g["app"] for g in cfg["flow_groups"] if g["name"] == "call"))
    gcc, builder, codec = _core.GccSender(app), _core.FeedbackBuilder(), _core.SyntheticCodec(app, 1, 0)
    cheap = [
        ("GccSender", "on_sent", gcc.on_sent(0, 1200, 0)),
        ("GccSender", "on_feedback", gcc.on_feedback(0, 1, [(0, 20_000_000)], 20_000_000, 25_000_000)),
        ("GccSender", "target_bps", gcc.target_bps),
        ("GccSender", "rate_table", gcc.rate_table(0)),
        ("FeedbackBuilder", "on_packet", builder.on_packet(0, 10)),
        ("FeedbackBuilder", "take", builder.take(40_000_000)),
        ("SyntheticCodec", "set_target", codec.set_target(0, 1e6)),
        ("SyntheticCodec", "next_frame", codec.next_frame(0)),
    ]
    for cls, name, value in cheap:
        assert _conforms(value, _returns(_methods(stub[cls])[name])), (cls, name, value)  # type: ignore[arg-type]
    assert {(c, n) for c, n, _ in cheap} == {(c, m) for c in ("GccSender", "FeedbackBuilder", "SyntheticCodec")
                                            for m in _methods(stub[c]) if m != "__init__"}  # type: ignore[arg-type]
