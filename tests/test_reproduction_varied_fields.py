"""A reproduction refuses a `--set` of a field it varies itself (it would make every run alike),
and head-to-head takes `--set` like the others."""

from __future__ import annotations

import pytest

from aqmlab.reproduce import head_to_head, rb_rio, sqf, varied
from conftest import aqmlab


def _error_lines(r) -> list[str]:
    return [line for line in r.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("key", ["topology.bottleneck.rate=30Mbps", "topology.bottleneck=x", "flows.0.count=3",
                                 "flows.video.app.jitter=5ms"])
def test_sqf_refuses_in_one_line_an_override_of_what_it_varies(tmp_path, key):
    out = tmp_path / "o"
    r = aqmlab("reproduce", "sqf", "--quick", "--out", str(out), "--set", key)
    assert r.returncode == 2
    line, = _error_lines(r)
    assert f"--set {key} would replace" in line and "the reproduction varies duration" in line
    assert not out.exists()


def test_the_refusal_says_what_the_varied_field_is_for():
    line = varied.refusal("sqf", sqf.VARIED, ["topology.bottleneck.rate=30Mbps"])
    assert "topology.bottleneck.rate (Figure 8's 10 and 100 Mbit/s halves)" in line


def test_fields_the_reproduction_does_not_vary_pass():
    assert varied.conflicts(sqf.VARIED, ["topology.bottleneck.delay=30ms", "flows.video.app.fps=25",
                                         "topology.bottleneck.qdisc.limit=50p"]) == []
    assert varied.conflicts(rb_rio.VARIED, ["topology.bottleneck.qdisc.limit=50p"]) == []
    assert varied.conflicts(rb_rio.VARIED, ["topology.bottleneck.qdisc={kind='red'}"]) != []


def test_head_to_head_applies_the_override_under_the_clips_own_fields():
    clip = head_to_head.population(1, 1)[0]
    job = head_to_head.Job("pair", clip, 600_000, 1, overrides=("topology.bottleneck.delay=7ms",))
    sc, _ = head_to_head.scenario_for(job)
    plain, _ = head_to_head.scenario_for(head_to_head.Job("pair", clip, 600_000, 1))
    assert sc.topology.bottleneck.delay == 7_000_000 != plain.topology.bottleneck.delay
    assert sc.topology.bottleneck.qdisc.rate == plain.topology.bottleneck.qdisc.rate == 600_000


def test_head_to_head_takes_set_checks_it_first_and_refuses_its_varied_fields(tmp_path):
    bad = aqmlab("reproduce", "head-to-head", "--quick", "--out", str(tmp_path / "a"),
                 "--set", "topology.bottleneck.delay=soon")
    assert bad.returncode == 2 and "--set topology.bottleneck.delay=soon" in bad.stderr
    assert "not supported" not in bad.stderr
    seed = aqmlab("reproduce", "head-to-head", "--quick", "--out", str(tmp_path / "b"), "--set", "seed=4")
    assert seed.returncode == 2 and "would replace seed" in seed.stderr


def test_head_to_head_runs_with_an_override_and_says_the_published_values_are_withheld(tmp_path):
    out = tmp_path / "h"
    r = aqmlab("reproduce", "head-to-head", "--quick", "--clips", "2", "--out", str(out), "--workers", "1",
               "--set", "topology.bottleneck.delay=20ms")
    assert r.returncode == 0, r.stderr
    assert "published: n/a (--set topology.bottleneck.delay=20ms differs from the paper's 1ms)" in r.stdout
