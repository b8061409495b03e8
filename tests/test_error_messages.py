"""Errors name what the user wrote: the --set that caused them (not an installed file's path),
the flow group that starts after the end, the sweep's `base`; each problem once."""

from __future__ import annotations

import shutil

import tomli_w

from aqmlab.scenario import BUILTIN_DIR, ScenarioError, load
from aqmlab.sweep import plan
from conftest import aqmlab, small_scenario, write_sweep


def lines_of(r) -> list[str]:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    return [ln for ln in r.stderr.splitlines() if ln.strip()]


def test_a_duration_before_a_groups_start_names_the_group_and_the_set(tmp_path):
    line, = lines_of(aqmlab("run", "rb-rio/tcp-red", "--set", "duration=5s", "--out", str(tmp_path / "o")))
    assert line.startswith("error: rb-rio/tcp-red: --set duration=5s: "), line
    assert "flow group joining starts (10s)" in line and "flows.joining.start" in line
    assert "stop must not be before start" not in line
    assert str(BUILTIN_DIR) not in line and "site-packages" not in line


def test_only_the_override_of_the_field_is_named():
    try:
        load("rb-rio/tcp-red", ["flows.joining.count=3", "topology.bottleneck.delay=20"])
    except ScenarioError as e:
        (problem,) = e.problems
    assert problem.origin == "rb-rio/tcp-red: --set topology.bottleneck.delay=20"
    assert problem.path == "topology.bottleneck.delay"


def test_a_problem_of_the_file_itself_does_not_blame_the_set(tmp_path, write_scenario):
    bad = small_scenario()
    bad["topology"]["bottleneck"]["rate"] = "10Mbs"
    path = write_scenario(bad)
    line, = lines_of(aqmlab("run", str(path), "--set", "seed=3", "--out", str(tmp_path / "o")))
    assert line.startswith(f"error: {path}: topology.bottleneck.rate"), line
    assert "--set" not in line


def test_reproduce_prints_each_problem_once_with_the_scenarios_it_concerns(tmp_path):
    lines = lines_of(aqmlab("reproduce", "rb-rio", "--set", "duration=5s", "--out", str(tmp_path / "o")))
    assert len(lines) == len(set(lines)) == 2, lines  # the TCP scenarios' joining group, the others' video
    assert all(ln.startswith("error: --set duration=5s: duration 5s ends before flow group") for ln in lines)
    assert "rb-rio/tcp-red" in lines[0] and "rb-rio/mpeg-red" in lines[1]
    lines = lines_of(aqmlab("reproduce", "rb-rio", "--set", "topology.bottleneck.delay=20", "--out",
                            str(tmp_path / "o")))
    assert len(lines) == 1 and lines[0].endswith("(in every scenario)"), lines


def test_a_sweeps_relative_base_is_read_beside_the_sweep_file_from_any_directory(tmp_path, monkeypatch):
    folder = tmp_path / "deep" / "sweeps"
    folder.mkdir(parents=True)
    sweep = write_sweep(folder, seeds=1)
    monkeypatch.chdir(tmp_path)
    assert len(plan(sweep).tasks) == 4


def test_a_copied_builtin_sweep_names_base_and_the_builtin_to_use(tmp_path):
    copied = tmp_path / "mine.toml"
    shutil.copy(BUILTIN_DIR / "sweeps" / "rb-rio-buffer.toml", copied)
    line, = lines_of(aqmlab("sweep", str(copied), "--out", str(tmp_path / "s")))
    assert f"{copied}: base: '../rb-rio/tcp-droptail.toml': no such file" in line
    assert 'base = "rb-rio/tcp-droptail"' in line
    assert not (tmp_path / "s").exists()
    text = copied.read_text().replace('"../rb-rio/tcp-droptail.toml"', '"rb-rio/tcp-droptail"')
    copied.write_text(text)
    assert plan(copied).spec.base == "rb-rio/tcp-droptail"


def test_a_missing_base_names_the_field(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps({"base": "nowhere.toml", "axes": [{"path": "duration", "values": ["3s"]}]}))
    line, = lines_of(aqmlab("sweep", str(path), "--out", str(tmp_path / "o")))
    assert f"{path}: base: 'nowhere.toml': no such file" in line
