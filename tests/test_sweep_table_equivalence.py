"""A sweep worker's table (`aqmlab.sweep.execute`) is built without the record tables as
DataFrames (`aqmlab.run.simulate_periods`) and sums each flow group's values with numpy
(`sweep._group_sums`) since issue 22. This checks it, bit for bit, against the definition it
replaced, kept here: `simulate`'s tables and a pandas groupby per flow group. On whole runs with
three flow groups and periods in order, out of order and repeated, and on made-up values that
tell the ways of adding apart (pandas adds sorted groups with `np.add.reduceat`, others with
Kahan's compensated sum; a plain left-to-right sum, as `np.bincount` gives, differs)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aqmlab.metrics import NS
from aqmlab.run import PeriodValues, simulate, simulate_periods
from aqmlab.scenario.load import load
from aqmlab.sweep import GROUP_METRICS, _metrics_table


def _old_metrics_table(periods: pd.DataFrame, flow_periods: pd.DataFrame, groups: list[str]) -> pd.DataFrame:
    """The table as sweep.execute built it before issue 22, from simulate()'s tables."""
    per = periods.copy()
    for name in groups:
        rows = flow_periods[flow_periods["group_name"] == name].groupby(["start_s", "end_s"], sort=True)
        sums = rows[list(GROUP_METRICS)].sum()
        for metric in GROUP_METRICS:
            per[f"{name}.{metric}"] = [float(sums[metric].get((a, b), 0.0))
                                       for a, b in zip(per["start_s"], per["end_s"], strict=True)]
    return per


def _old_flow_periods(values: PeriodValues) -> pd.DataFrame:
    """`values`' per-flow numbers as simulate()'s flow_periods table holds them."""
    frames = [pd.DataFrame({"start_s": start / NS, "end_s": end / NS, "group_name": values.group_names,
                            "throughput_mbps": tput, "goodput_mbps": good})
              for (start, end), (tput, good) in zip(values.bounds, values.flow_values, strict=True)]
    return pd.concat(frames, ignore_index=True)


def _groups(values: PeriodValues) -> list[str]:
    return [g.name for g in values.scenario.flows]


# The SQF testbed (a video, an audio stream and 5 TCP downloads: three groups) cut to 12 s.
IN_ORDER = '[["0s", "12s"], ["2s", "8s"], ["8s", "12s"]]'
OUT_OF_ORDER = '[["8s", "12s"], ["0s", "12s"], ["2s", "8s"], ["8s", "12s"]]'  # and one twice


@pytest.mark.parametrize("periods", [IN_ORDER, OUT_OF_ORDER])
def test_sweep_table_is_the_pandas_definition_on_whole_runs(periods):
    sc, _ = load("sqf/testbed-fifo", [f"metrics.periods={periods}", "duration=12s", "flows.tcp.count=5"])
    full = simulate(sc, progress=False)
    lean = simulate_periods(sc)
    # The lean path's inputs are simulate()'s, bit for bit.
    pd.testing.assert_frame_equal(pd.DataFrame(lean.periods), full.periods, check_exact=True)
    pd.testing.assert_frame_equal(_old_flow_periods(lean), full.flow_periods[list(_old_flow_periods(lean).columns)],
                                  check_exact=True)
    new = _metrics_table(lean)
    old = _old_metrics_table(full.periods, full.flow_periods, _groups(lean))
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert list(new.columns[-6:]) == [f"{g}.{m}" for g in ("video", "audio", "tcp") for m in GROUP_METRICS]
    assert (new["tcp.goodput_mbps"] > 0).all() and (new["video.throughput_mbps"] > 0).all()


def _made_up(periods: list[tuple[int, int]], rng: np.random.Generator, nan: bool = False) -> PeriodValues:
    """Flow values spanning six decades (where the ways of adding differ in the last bits),
    flows of two groups interleaved, and a third group with no flows."""
    sc, _ = load("sqf/testbed-fifo")  # its groups: video, audio and tcp (given no flows here)
    names = ["video", "audio"] * 20
    flow_values = []
    for _ in periods:
        tput, good = (rng.random(len(names)) * 10.0 ** rng.integers(-3, 3, len(names)) for _ in range(2))
        if nan:
            good[3] = np.nan  # a flow of the audio group
        flow_values.append((tput, good))
    rows = [{"start_s": a / NS, "end_s": b / NS, "arrivals": i} for i, (a, b) in enumerate(periods)]
    return PeriodValues(sc, rows, periods, names, flow_values)


S = 1_000_000_000
CASES = {
    "in order": [(0, 10 * S), (2 * S, 5 * S), (5 * S, 10 * S)],  # pandas: np.add.reduceat
    "out of order": [(5 * S, 10 * S), (0, 10 * S), (2 * S, 5 * S)],  # pandas: Kahan's sum
    "repeated": [(0, 10 * S), (2 * S, 5 * S), (2 * S, 5 * S)],  # one sum over both copies' rows
}


@pytest.mark.parametrize("case", [*CASES, "NaN"])
def test_group_sums_are_the_pandas_groupby_bit_for_bit(case):
    rng = np.random.default_rng(22)
    for _ in range(20):
        values = _made_up(CASES.get(case, CASES["in order"]), rng, nan=case == "NaN")
        old = _old_metrics_table(pd.DataFrame(values.periods), _old_flow_periods(values), _groups(values))
        pd.testing.assert_frame_equal(_metrics_table(values), old, check_exact=True)
        assert (old["tcp.throughput_mbps"] == 0.0).all()  # the group without flows


def test_a_left_to_right_sum_would_be_caught():
    """The made-up values tell the ways of adding apart: a plain left-to-right sum (what
    np.bincount gives) differs from the pandas definition on them, in every case, so the test
    above would catch an implementation that added that way."""
    rng = np.random.default_rng(22)
    for periods in CASES.values():
        values = _made_up(periods, rng)
        old = _old_metrics_table(pd.DataFrame(values.periods), _old_flow_periods(values), _groups(values))
        keys = list(zip(old["start_s"], old["end_s"], strict=True))
        rank = {key: i for i, key in enumerate(sorted(set(keys)))}
        ids = [rank[key] for key in keys]
        video = np.array(values.group_names) == "video"
        differ = 0
        for k, metric in enumerate(GROUP_METRICS):
            rows = np.concatenate([v[k][video] for v in values.flow_values])
            plain = np.bincount(np.repeat(ids, video.sum()), weights=rows)[ids]
            differ += int((plain != old[f"video.{metric}"].to_numpy()).sum())
        assert differ > 0
