"""The rule for tests of real time (tests/conftest.py): a `real_time` test reruns after an
assertion fails, at most twice, with its module's cached emulations dropped; other tests, and
other errors, do not rerun."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")

PLUGIN = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("aqmlab_tests_conftest", {str(CONFTEST)!r})
ours = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ours)
pytest_collection_modifyitems = ours.pytest_collection_modifyitems
pytest_runtest_makereport = ours.pytest_runtest_makereport
"""

TESTS = """
import pytest

_cache = {}
runs = []


def emulate():
    if "run" not in _cache:
        _cache["run"] = len(runs)
        runs.append(1)
    return _cache["run"]


@pytest.mark.real_time
def test_passes_on_the_second_emulation():
    assert emulate() == 1


@pytest.mark.real_time
def test_always_wrong():
    assert False


def test_unmarked_fails_once():
    assert False


@pytest.mark.real_time
def test_an_error_is_not_rerun():
    raise ValueError("not a timing")
"""


def test_real_time_tests_rerun_with_a_fresh_emulation_and_nothing_else_does(pytester: pytest.Pytester):
    pytester.makeconftest(PLUGIN)
    pytester.makeini("[pytest]\nmarkers =\n    real_time: x\n")
    pytester.makepyfile(test_rule=TESTS)
    result = pytester.runpytest("-p", "rerunfailures", "-v")
    outcomes = result.parseoutcomes()
    # The first passes on its rerun (the cache emptied: a second emulation); the always-wrong
    # one reruns twice and fails; the unmarked and the erroring ones fail at once.
    assert outcomes.get("passed") == 1 and outcomes.get("failed") == 3, outcomes
    assert outcomes.get("rerun") == 3, outcomes
    result.stdout.re_match_lines([r".*test_passes_on_the_second_emulation RERUN",
                                  r".*test_passes_on_the_second_emulation PASSED"])
