"""The SQF model of Bonald, Muscariello, Ostallo (ICC 2011), Section IV: aqmlab.models.sqf."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from aqmlab.models import sqf

MBPS = 1e6
T_VIDEO = sqf.DEFAULT_VIDEO_DURATION_S  # 10 minutes, the paper's Figure 3


def p20(rate_mbps: float) -> float:
    return sqf.deprioritization_probability(T_VIDEO, rate_mbps * MBPS, 20)


def brute_force_p(duration_s: float, rate_bps: float, n: int) -> float:
    """Eq. (2) by trying every k up to the one whose interval T/k reaches the shortest segment
    (beyond it q_k only falls), with the Poisson tail summed term by term."""
    lam = sqf.packets_per_second(rate_bps)
    cap = sqf.packets_per_second(sqf.DEFAULT_LINK_RATE_BPS)
    b = sqf.priority_threshold(sqf.DEFAULT_BUFFER_PKTS, n)
    k_max = math.ceil(duration_s / ((math.floor(b) + 1 - b) / cap))
    best = 0.0
    for k in range(1, k_max + 1):
        t = duration_s / k
        m = math.ceil(cap * t + b - 1e-9)
        mu = lam * t
        below = sum(math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) for j in range(m))
        best = max(best, -math.expm1(k * math.log(below)))
    return best


# ---------------------------------------------------------------------------------------------
# units and conditions (1), (3)


def test_units_follow_the_paper() -> None:
    assert sqf.packets_per_second(10e6, 1250) == pytest.approx(1000.0)
    assert sqf.priority_threshold(200, 20) == pytest.approx(200 / 21)
    assert sqf.video_prioritized(9, 200, 20) and not sqf.video_prioritized(10, 200, 20)


def test_condition_3_on_a_hand_made_example() -> None:
    # B = 200 packets, n = 20 TCP flows.
    # Three streams with 3, 4, 2 packets: x = 9, each TCP flow holds (200 - 9)/20 = 9.55 > 4.
    assert sqf.streams_prioritized([3, 4, 2], 200, 20)
    assert sqf.aggregate_prioritized([3, 4, 2], 200, 20)  # 9 < 200/21 = 9.52 as well
    # Two streams with 5 packets each: (3) holds (5 < 190/20 = 9.5) although (1) on the total
    # does not (10 > 9.52): the aggregate condition is sufficient, not necessary.
    assert sqf.streams_prioritized([5, 5], 200, 20)
    assert not sqf.aggregate_prioritized([5, 5], 200, 20)
    # One stream with 10 packets and one empty: 10 > 190/20 = 9.5, the first loses priority.
    assert not sqf.streams_prioritized([10, 0], 200, 20)


@settings(max_examples=100, deadline=None)
@given(
    xs=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=6),
    buffer_pkts=st.integers(min_value=20, max_value=400),
    n=st.integers(min_value=1, max_value=40),
)
def test_aggregate_condition_implies_condition_3(xs: list[int], buffer_pkts: int, n: int) -> None:
    if sqf.aggregate_prioritized(xs, buffer_pkts, n):
        assert sqf.streams_prioritized(xs, buffer_pkts, n)
    # with a single stream, (3) is (1)
    assert sqf.streams_prioritized(xs[:1], buffer_pkts, n) == sqf.video_prioritized(xs[0], buffer_pkts, n)


# ---------------------------------------------------------------------------------------------
# fair queueing


def test_fq_threshold_is_the_fair_share() -> None:
    for n in (5, 10, 20):
        share = sqf.fq_fair_share_bps(n, 10e6)
        assert share == pytest.approx(10e6 / (n + 1))
        assert sqf.fq_deprioritization_probability(share * 0.999, n) == 0.0
        assert sqf.fq_deprioritization_probability(share * 1.001, n) == 1.0
        assert sqf.fq_mean_prioritization_time(share * 0.999, n) == math.inf
        assert sqf.fq_mean_prioritization_time(share * 1.001, n) == 0.0
    # "For n = 20 competing flows ... the video peak rate cannot exceed 480kbit/s" (476 rounded)
    assert round(sqf.fq_fair_share_bps(20, 10e6), -4) == 480e3


# ---------------------------------------------------------------------------------------------
# equation (2)


def test_poisson_tails_against_term_by_term_sums() -> None:
    for m, mu in [(34, 14.25), (10, 3.0), (5, 7.0), (1, 0.2), (250, 240.0), (3, 1e-3)]:
        below = sum(math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) for j in range(m))
        sf, cdf = sqf.poisson_tails(m, mu)
        assert float(cdf) == pytest.approx(below, rel=1e-10)
        assert float(sf) == pytest.approx(1.0 - below, rel=1e-9, abs=1e-300) or float(sf) < 1e-9


def test_overflow_probability_is_the_poisson_tail() -> None:
    # t = 12.5 ms at 6 Mbit/s, n = 20: lambda t = 7.5 packets, threshold 1000 t + 200/21 -> 22
    t = 0.0125
    mu, m = 600 * t, math.ceil(1000 * t + 200 / 21)
    tail = 1.0 - sum(math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) for j in range(m))
    assert sqf.overflow_probability(t, 6 * MBPS, 20) == pytest.approx(tail, rel=1e-8)
    q = sqf.overflow_probability(t, 6 * MBPS, 20)
    k = 7
    assert sqf.interval_overflow_probability(k * t, k, 6 * MBPS, 20) == pytest.approx(1 - (1 - q) ** k, rel=1e-9)


@pytest.mark.parametrize(
    ("duration_s", "rate_mbps", "n"), [(5.0, 6.0, 20), (5.0, 4.0, 20), (10.0, 8.0, 10), (5.0, 9.0, 5)]
)
def test_maximum_over_k_is_exact(duration_s: float, rate_mbps: float, n: int) -> None:
    assert sqf.deprioritization_probability(duration_s, rate_mbps * MBPS, n) == pytest.approx(
        brute_force_p(duration_s, rate_mbps * MBPS, n), rel=1e-9, abs=1e-300)


def test_n20_near_zero_at_low_rates_and_near_one_above_the_knee() -> None:
    """Paper: for n = 20 the probability is close to 0 as long as the peak rate is below
    6 Mbit/s. Eq. (2) with the exact Poisson tail puts the knee a little lower: p(T) stays below
    5 % up to 5 Mbit/s, crosses 1/2 between 5 and 6.5 Mbit/s and is ~1 from 7 Mbit/s on."""
    for rate in (0.5, 1, 2, 3, 4):
        assert p20(rate) < 0.01
    assert p20(5) < 0.05
    for rate in (7, 8, 9, 9.5):
        assert p20(rate) > 0.99
    assert 5 * MBPS < sqf.max_peak_rate_bps(0.5, 20, rel_tol=1e-3) < 6.5 * MBPS


@settings(max_examples=25, deadline=None)
@given(
    lo=st.floats(min_value=0.5, max_value=9.5),
    step=st.floats(min_value=0.05, max_value=3.0),
    n=st.sampled_from([1, 5, 10, 20, 40]),
)
def test_p_increases_with_peak_rate(lo: float, step: float, n: int) -> None:
    hi = min(lo + step, 9.9)
    p_lo = sqf.deprioritization_probability(T_VIDEO, lo * MBPS, n)
    p_hi = sqf.deprioritization_probability(T_VIDEO, hi * MBPS, n)
    assert p_lo <= p_hi * (1 + 1e-12)


def test_p_and_mean_time_are_monotone_in_n() -> None:
    for rate in np.array([3.0, 6.0, 8.5]) * MBPS:
        ps = [sqf.deprioritization_probability(T_VIDEO, rate, n) for n in (2, 5, 10, 20, 40)]
        assert all(a <= b * (1 + 1e-12) for a, b in itertools.pairwise(ps))  # more TCP flows, less room
        tbars = [sqf.mean_prioritization_time(rate, n) for n in (5, 10, 20)]
        assert all(a >= b for a, b in itertools.pairwise(tbars))
    tbars = [sqf.mean_prioritization_time(r * MBPS, 20) for r in (3, 4, 5, 6, 7, 8)]
    assert all(a > b for a, b in itertools.pairwise(tbars))


def test_mean_time_matches_the_exponential_regime_of_p() -> None:
    """Once T-bar is much longer than the critical interval, 1 - p(T) ~ exp(-T/T-bar)."""
    for rate in (4.5, 5.0, 5.5):
        tbar = sqf.mean_prioritization_time(rate * MBPS, 20)
        implied = -T_VIDEO / math.log1p(-p20(rate))
        assert tbar == pytest.approx(implied, rel=0.05)
    # "larger than 180 min" happens, for n = 20, up to about 5 Mbit/s with the exact tail
    assert sqf.mean_prioritization_time(5 * MBPS, 20) > 180 * 60
    assert sqf.mean_prioritization_time(6 * MBPS, 20) < 180 * 60


def test_multiple_streams_as_one_of_rate_m_lambda() -> None:
    p_max, n, stream = 0.05, 20, 1 * MBPS
    m = sqf.max_prioritized_streams(stream, p_max, n)
    assert m >= 1
    assert sqf.deprioritization_probability(T_VIDEO, m * stream, n) <= p_max
    assert sqf.deprioritization_probability(T_VIDEO, (m + 1) * stream, n) > p_max


# ---------------------------------------------------------------------------------------------
# figures


def test_figures_3_and_4_data_and_plots(tmp_path) -> None:
    rates = np.array([0.25, 2.0, 5.0, 7.0, 9.0]) * MBPS
    df3 = sqf.figure3(rates)
    assert list(df3.columns) == ["n", "peak_rate_bps", "peak_rate_mbps", "p_sqf", "p_fq", "fq_fair_share_mbps"]
    assert len(df3) == 3 * len(rates) and sorted(df3["n"].unique()) == [5, 10, 20]
    assert df3["p_sqf"].between(0, 1).all()
    # curves from right to left as n grows: at 7 Mbit/s n = 20 is lost, n = 5 still prioritized
    at7 = df3[df3["peak_rate_mbps"] == 7.0].set_index("n")["p_sqf"]
    assert at7[20] > 0.99 and at7[5] < 1e-3
    df4 = sqf.figure4(rates[1:4])
    assert {"tbar_sqf_s", "tbar_sqf_min", "tbar_fq_min"} <= set(df4.columns)
    assert np.allclose(df4["tbar_sqf_min"], df4["tbar_sqf_s"] / 60)
    for plot, df in ((sqf.plot_figure3, df3), (sqf.plot_figure4, df4)):
        path = plot(df, tmp_path / f"{plot.__name__}.png")
        assert path.stat().st_size > 5000
