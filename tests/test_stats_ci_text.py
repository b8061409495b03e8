"""Confidence intervals in tables stay within what the metric can be: an interval that leaves
the range is shown cut at it and marked "clipped"; one that fits reads "mean ± half-width"."""

from __future__ import annotations

import math

import pytest

from aqmlab.stats import NON_NEGATIVE, PERCENT, UNIT, ci_text, physical_range


def test_an_interval_inside_the_range_is_mean_plus_minus_half_width():
    # mean 50, sd 1, n 3: half-width 4.303 / sqrt(3) = 2.484
    assert ci_text([49.0, 50.0, 51.0], ".2f", PERCENT) == "50.00 ± 2.48"


def test_a_loss_interval_leaving_0_to_100_is_clipped_and_marked():
    # The case: a few seeds of very different loss give a t interval far past both ends.
    text = ci_text([2.0, 90.0], ".2f", PERCENT)
    assert text == "46.00 [0.00, 100.00] clipped"


def test_only_the_side_that_leaves_is_cut():
    text = ci_text([1.0, 3.0], ".2f", NON_NEGATIVE)  # 2 ± 12.71
    assert text == "2.00 [0.00, 14.71] clipped"


def test_one_value_has_no_interval_and_none_is_a_dash():
    assert ci_text([0.5], ".3f", UNIT) == "0.500"
    assert ci_text([], ".3f", UNIT) == "-"


@pytest.mark.parametrize(("name", "bounds"), [("video_loss_pct", (0, 100)), ("drop_rate_pct", (0, 100)),
                                               ("tcp_jain", (0, 1)), ("jain", (0, 1)),
                                               ("utilization_mbps", (0, math.inf)), ("ipdv_ms", (0, math.inf))])
def test_the_range_follows_the_metric_name(name, bounds):
    assert physical_range(name) == bounds


def test_sqf_and_rb_rio_cells_clip_percentages():
    from aqmlab.reproduce.rb_rio import _ci_cell
    from aqmlab.reproduce.sqf import _cell

    assert _cell([2.0, 90.0], ".2f", "video_loss_pct") == "46.00 [0.00, 100.00] clipped"
    assert _ci_cell([0.2, 0.99], ".3f", "jain").endswith("1.000] clipped")
    assert _ci_cell([24.0, 24.2], ".3f", "utilization_mbps") == "24.100 ± 1.271"
