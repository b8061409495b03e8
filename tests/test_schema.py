"""One schema: the pydantic models define every scenario field once, the generated reference
and JSON Schema are current, and the simulator's own config checks (aqmlab-sim config.rs,
aqmlab-core's qdisc configs) never catch a scenario the models let through."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import aqmlab.scenario as sc
from aqmlab import _core, schema
from aqmlab.scenario import ScenarioError, validate
from conftest import REPO, small_scenario
from mutations import corpus

DOCS = REPO / "docs"


def test_generated_reference_and_json_schema_are_current():
    stale = [name for name, text in schema.generated_files().items()
             if not (DOCS / name).exists() or (DOCS / name).read_text() != text]
    assert not stale, f"docs/{', docs/'.join(stale)} out of date: run `{schema.REGENERATE}` in the repository root"


def _models() -> list[type[BaseModel]]:
    return [o for o in vars(sc).values() if isinstance(o, type) and issubclass(o, sc.Strict) and o is not sc.Strict]


def test_every_field_and_table_is_described():
    undescribed = [f"{m.__name__}.{n}" for m in _models() for n, f in m.model_fields.items()
                   if not f.description and n != "kind"]
    assert not undescribed, undescribed
    assert not [m.__name__ for m in _models() if not m.__doc__]


def test_the_reference_documents_every_field_of_every_table():
    text = schema.reference_markdown()
    for model in _models():
        for name in model.model_fields:
            if name != "kind":
                assert f"`{name}`" in text or f".{name}`" in text, f"{model.__name__}.{name}"
    for kind in sc.QDISC_MODELS.keys() | sc.APP_MODELS.keys():
        assert f"`{kind}`" in text, kind


def test_a_field_reads_back_its_unit_default_and_range():
    rows = {r.path: r for r in schema.field_docs(sc.Codel)}
    assert rows["target"].type == "duration" and rows["target"].default == '"5ms"'
    assert rows["target"].unit.startswith("s, ms, us, ns")
    assert rows["limit"].default == '"1000p"'
    red = {r.path: r for r in schema.field_docs(sc.Red)}
    assert red["w_q"].allowed == "(0, 1]" and red["min_th"].unit == "packets"
    assert red["mode"].allowed == '"packets", "bytes"'
    top = {r.path: r for r in schema.field_docs(sc.Scenario)}
    assert top["flows[].path_loss"].allowed == "[0, 1)"
    assert top["topology.bottleneck.qdisc"].default == '{kind = "droptail", limit = "1000p"}'
    assert "0 < target < interval" in " ".join(schema.checks(sc.Codel))


def test_json_schema_takes_the_file_as_written():
    s = schema.json_schema()
    codel = s["$defs"]["Codel"]["properties"]
    assert codel["target"]["type"] == "string" and codel["target"]["default"] == "5ms"
    assert s["$defs"]["Red"]["properties"]["w_q"]["exclusiveMinimum"] == 0
    assert s["additionalProperties"] is False
    json.dumps(s)  # plain JSON throughout


class SimulatorGuardReached(Exception):
    """The simulator's check ran on a config the scenario models should have refused."""


@pytest.fixture
def guard_forbidden(monkeypatch):
    """Validation with the simulator's check replaced by a tripwire: whatever is refused must be
    refused by the models (or the trace reader) before the normalized JSON crosses over."""
    check = _core.check_sim_config

    def tripwire(config_json: str) -> None:
        try:
            check(config_json)
        except ValueError as e:
            raise SimulatorGuardReached(str(e)) from None

    monkeypatch.setattr(sc._core, "check_sim_config", tripwire)


def test_every_mutation_is_refused_by_the_models_before_the_simulator(tmp_path, guard_forbidden):
    reached, cases = [], [c for c in corpus() if c.text is None and not c.extra]
    assert len(cases) > 2000
    for i, case in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        path = case.write(folder)
        try:
            validate(sc.read_scenario_file(path), str(path))
        except ScenarioError:
            pass
        except SimulatorGuardReached as e:
            reached.append(f"{case.label}: {e}")
    assert not reached, f"{len(reached)} refused only by the simulator:\n" + "\n".join(reached)


# Checks both languages hold; each row: a change to small_scenario() and the field named.
DUPLICATED_CHECKS = [
    ({"kind": "codel", "target": "100ms", "interval": "100ms"}, "qdisc"),
    ({"kind": "fq_codel", "target": "200ms"}, "qdisc"),
    ({"kind": "pie", "target": "0s"}, "qdisc"),
    ({"kind": "red", "min_th": 20, "max_th": 10}, "qdisc"),
    ({"kind": "prio", "bands": [{"kind": "droptail"}], "classifier": {"default_band": 1}}, "default_band"),
    ({"kind": "prio", "bands": [{"kind": "droptail"}] * 2, "classifier": {"map": [[3, 0], [3, 1]]}}, "map.1"),
    ({"kind": "prio", "bands": [{"kind": "droptail"}], "classifier": {"map": [[5, 0]]}}, "map.0"),
    ({"kind": "wrr", "bands": [{"weight": 1500, "qdisc": {"kind": "droptail"}}],
      "classifier": {"map": [[3, 2]]}}, "map.0"),
    ({"kind": "pels_feedback", "interval": "0s", "qdisc": {"kind": "droptail"}}, "interval"),
    ({"kind": "tbf", "rate": "0bps"}, "rate"),
    ({"kind": "dualpi2", "tupdate": "0s"}, "tupdate"),
    ({"kind": "dualpi2", "coupling_factor": 0}, "coupling_factor"),
    ({"kind": "dualpi2", "classic_protection": 101}, "classic_protection"),
    ({"kind": "dualpi2", "alpha": 0.0}, "alpha"),
    ({"kind": "cobalt", "target": "0s"}, "qdisc"),
    ({"kind": "cobalt", "p_inc": 0.0}, "p_inc"),
    ({"kind": "fq_pie", "flows": 0}, "flows"),
    ({"kind": "fq_pie", "ecn_prob": 101}, "ecn_prob"),
    ({"kind": "fq_pie", "quantum": "2MB"}, "quantum"),
]


@pytest.mark.parametrize("qdisc,field", DUPLICATED_CHECKS, ids=[str(q["kind"]) + ":" + f for q, f in DUPLICATED_CHECKS])
def test_a_duplicated_check_is_met_first_by_the_models(qdisc, field, guard_forbidden):
    data = small_scenario()
    data["topology"]["bottleneck"]["qdisc"] = qdisc
    with pytest.raises(ScenarioError) as err:
        validate(data)
    assert "topology.bottleneck.qdisc" in str(err.value) and field in str(err.value), str(err.value)


def test_the_simulator_still_guards_its_invariants():
    """The Rust checks stay as the engine's own guard against a caller that skips the models."""
    data = small_scenario()
    config = validate(data).to_sim_config()
    config["topology"]["bottleneck"]["qdisc"] = {"kind": "codel", "limit": {"packets": 10}, "target_ns": 5,
                                                 "interval_ns": 5, "mtu": 1500, "ecn": False}
    with pytest.raises(ValueError, match="target_ns"):
        _core.check_sim_config(json.dumps(config))


def test_list_is_derived_from_the_models(capsys):
    from aqmlab import cli

    cli.list_components.callback()
    out = capsys.readouterr().out
    for row in schema.field_docs(sc.Pie):
        assert row.path in out and row.default in out and row.description in out, row
    assert "[0, 1]" in out  # mark_ecn_threshold's range, from its Field(ge=0, le=1)


def test_the_schema_command_prints_the_generated_files():
    from click.testing import CliRunner

    from aqmlab.cli import main

    assert CliRunner().invoke(main, ["schema"]).output == schema.reference_markdown()
    assert json.loads(CliRunner().invoke(main, ["schema", "--json"]).output) == schema.json_schema()
