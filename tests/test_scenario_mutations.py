"""Mutation corpus: every built-in scenario, broken in hundreds of ways, must be refused with
one line naming the field (the CLI: exit status 2, no traceback, no output directory).

Most cases run in-process through the function `aqmlab run` loads and validates with
(`cli._load_all`), so thousands stay fast; a sample runs through the real command line.
The corpus itself is `tests/mutations.py`; `docs/reliability.md` reports its size.
"""

from __future__ import annotations

import os
import random

import pytest

from aqmlab import cli
from conftest import aqmlab
from mutations import Case, corpus


def _refusal(case: Case, tmp_path, capsys) -> list[str]:
    """The error lines `aqmlab run` prints for `case` (fails the test if it loads)."""
    path = case.write(tmp_path)
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        cli._load_all((str(path),), [], None)
    assert stop.value.code == cli.EXIT_USAGE, case.label
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _check_line(case: Case, lines: list[str]) -> None:
    assert len(lines) == case.problems, f"{case.label}: {lines}"
    for line in lines:
        assert line.startswith("error: ") and "Traceback" not in line, f"{case.label}: {line}"
    assert any(name in lines[0] for name in case.names), f"{case.label}: {lines[0]!r} names none of {case.names}"


CORPUS = corpus()


def test_corpus_is_large_and_covers_every_builtin_scenario_and_kind():
    assert len(CORPUS) >= 2000, len(CORPUS)
    kinds = {c.kind for c in CORPUS}
    for k in ("wrong-type", "negative", "zero", "huge", "not-a-number", "unknown-key", "missing-required",
              "unit-typo", "no-unit", "broken-toml", "extends-cycle", "extends-missing", "thresholds-reversed",
              "path-missing", "band-missing", "unknown-kind", "period-outside"):
        assert k in kinds, k
    assert len({c.scenario for c in CORPUS}) >= 30


def _refuse_all(cases: list[Case], tmp_path, capsys) -> None:
    """Every case refused cleanly; failures are collected so that one run lists them all."""
    escaped, badly_reported = [], []
    for i, case in enumerate(cases):
        folder = tmp_path / str(i)
        folder.mkdir()
        try:
            lines = _refusal(case, folder, capsys)
        except BaseException as e:  # noqa: BLE001 - a case that loads or crashes is reported
            escaped.append(f"{case.label}: {type(e).__name__}: {str(e)[:200]}")
            continue
        try:
            _check_line(case, lines)
        except AssertionError as e:
            badly_reported.append(str(e)[:300])
    assert not escaped, f"{len(escaped)} of {len(cases)} mutations not refused:\n" + "\n".join(escaped[:40])
    assert not badly_reported, (f"{len(badly_reported)} refusals not one line naming the field:\n"
                                + "\n".join(badly_reported[:40]))


#: The CI share of the corpus: a fixed sample, every kind of mutation represented.
CI_CASES = 2500


def ci_sample(cases: list[Case], n: int, seed: int) -> list[Case]:
    """`n` of `cases` with every kind of mutation among them by construction: one case drawn
    per kind, the rest drawn from the others. (A plain random sample covered every kind only
    by the luck of its seed, and a new built-in scenario, which adds cases, could lose a rare
    kind: it did, 'thresholds-reversed'.)"""
    rng = random.Random(seed)
    by_kind: dict[str, list[Case]] = {}
    for c in cases:
        by_kind.setdefault(c.kind, []).append(c)
    first = [rng.choice(by_kind[k]) for k in sorted(by_kind)]
    chosen = {id(c) for c in first}
    return first + rng.sample([c for c in cases if id(c) not in chosen], max(0, n - len(first)))


def test_the_ci_sample_has_every_kind_and_its_size():
    sample = ci_sample(CORPUS, CI_CASES, 16)
    assert {c.kind for c in sample} == {c.kind for c in CORPUS}
    assert len(sample) == CI_CASES == len({id(c) for c in sample})
    # a kind with a single case in a corpus of many still gets in
    lone = Case("x", "only-once", "leaf", ("x",))
    assert lone in ci_sample([*CORPUS, lone], 10, 1)


def test_a_sample_of_mutations_is_refused_with_one_line_naming_the_field(tmp_path, capsys):
    _refuse_all(ci_sample(CORPUS, CI_CASES, 16), tmp_path, capsys)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("AQMLAB_SLOW") != "1", reason="the whole corpus: set AQMLAB_SLOW=1")
def test_every_mutation_is_refused_with_one_line_naming_the_field(tmp_path, capsys):
    _refuse_all(CORPUS, tmp_path, capsys)


SAMPLE = random.Random(16).sample(CORPUS, 8)


@pytest.mark.parametrize("case", SAMPLE, ids=[c.label for c in SAMPLE])
def test_the_command_line_refuses_a_sample_cleanly(tmp_path, case):
    path = case.write(tmp_path)
    out = tmp_path / "results"
    r = aqmlab("run", str(path), "--out", str(out), "--no-progress")
    assert r.returncode == 2, (case.label, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    _check_line(case, lines)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".results")]
