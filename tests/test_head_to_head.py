"""Hand-made inputs with known answers for aqmlab.analysis.head_to_head (Chung, Zhu, Claypool 2002)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from aqmlab.analysis.head_to_head import (
    average_bandwidth,
    bandwidth_series,
    buffering_parts,
    buffering_rate,
    empirical_cdf,
    is_tcp_friendly,
    least_squares,
    normalized_difference,
    pair_summary,
    population_summary,
    scale_changes,
    scale_levels,
    smoothness,
    tcp_friendly_rate,
    time_to_adapt,
)


def stream(pps: int, size: int, start_s: float, end_s: float) -> pd.DataFrame:
    """Packets of `size` bytes every 1/pps s in [start_s, end_s), times built from integers so
    they are as exact as floats allow."""
    n = int(round((end_s - start_s) * pps))
    t = start_s + np.arange(n) / pps
    return pd.DataFrame({"t_s": t, "bytes": np.full(n, size)})


def cat(*parts: pd.DataFrame) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True)


# 10 packets/s of 1000 bytes = 80 kbit/s, for 200 s (t = 0.0 .. 199.9)
CONST = stream(10, 1000, 0.0, 200.0)


# ---------------------------------------------------------------- bandwidth (Section V-A)

def test_bandwidth_series_constant_rate_and_bins():
    bw = bandwidth_series(CONST, 0.5)
    assert len(bw) == 400
    assert bw.index[0] == 0.0 and bw.index[-1] == pytest.approx(199.5)
    assert np.all(bw.to_numpy() == 80_000.0)


def test_bandwidth_series_empty_bin_is_zero_and_end_s_truncates():
    pk = pd.DataFrame({"t_s": [0.1, 2.2], "bytes": [100, 300]})
    bw = bandwidth_series(pk, 1.0)
    assert list(bw) == [800.0, 0.0, 2400.0]
    bw2 = bandwidth_series(pk, 1.0, end_s=2.0)
    assert list(bw2) == [800.0, 0.0]


def test_average_bandwidth_windows():
    # whole clip: total bits / playout length (last arrival 199.9 s)
    assert average_bandwidth(CONST) == pytest.approx(2000 * 8000 / 199.9)
    # explicit half-open windows are exact
    assert average_bandwidth(CONST, 0, 200) == pytest.approx(80_000.0)
    assert average_bandwidth(CONST, 50, 60) == pytest.approx(80_000.0)
    assert average_bandwidth(CONST, 300, 310) == 0.0
    with pytest.raises(ValueError, match="end_s"):
        average_bandwidth(CONST, 10, 5)


def test_normalized_difference_paper_sign_and_extremes():
    # Figure 9: (TCP - UDP) / bottleneck; -1 = UDP took the whole bottleneck
    assert normalized_difference(150e3, 75e3, 300e3) == pytest.approx(-0.25)
    assert normalized_difference(150e3, 75e3, 300e3, convention="udp_minus_tcp") == pytest.approx(0.25)
    assert normalized_difference(300e3, 0.0, 300e3) == -1.0
    assert normalized_difference(0.0, 300e3, 300e3) == 1.0
    np.testing.assert_allclose(normalized_difference([1, 2], [2, 2], 4), [0.25, 0.0])
    with pytest.raises(ValueError, match="convention"):
        normalized_difference(1, 1, 1, convention="other")


def test_constant_rate_pair_is_fair_and_smooth():
    s = pair_summary(CONST, CONST.copy(), bottleneck_bps=300e3, rtt_s=0.1, loss=0.01)
    assert s["udp_avg_bps"] == s["tcp_avg_bps"]
    assert s["normalized_difference"] == 0.0
    assert s["difference_bps"] == 0.0
    assert len(s["udp_smoothness_ratios"]) == 399
    assert np.all(s["udp_smoothness_ratios"] == 1.0)
    assert np.all(s["tcp_smoothness_ratios"] == 1.0)
    assert s["udp_smoothness_within"] == 1.0
    # ~80 kbit/s is well under eq. (1)'s ~1.47 Mbit/s for (1500 B, 100 ms, 1 %)
    assert s["udp_tcp_friendly"] is True and s["tcp_tcp_friendly"] is True


# ---------------------------------------------------------------- smoothness (Section V-G)

def test_smoothness_paper_example_200_400_200():
    # 200 kbit/s for 500 ms = 12 500 bytes; then 400 kbit/s; then 200 kbit/s again: ratios 2, 0.5
    pk = pd.DataFrame({"t_s": [0.1, 0.6, 1.1], "bytes": [12_500, 25_000, 12_500]})
    sm = smoothness(pk)
    assert list(sm.ratios) == [2.0, 0.5]
    assert list(sm.ratios.index) == [0.5, 1.0]
    assert sm.fraction_within == 0.0
    assert sm.n_undefined == 0
    np.testing.assert_array_equal(sm.cdf_x, [0.5, 2.0])
    np.testing.assert_array_equal(sm.cdf_p, [0.5, 1.0])


def test_smoothness_skips_leading_silence_and_undefined_ratios():
    pk = pd.DataFrame({"t_s": [5.1, 6.1], "bytes": [1000, 1000]})  # bins 10, 11(empty), 12
    sm = smoothness(pk)
    assert list(sm.ratios) == [0.0]  # 1000 B -> 0 B; 0 -> 1000 B is undefined
    assert sm.n_undefined == 1


# ---------------------------------------------------------------- buffering (Section V-D)

BURST = cat(stream(30, 1000, 0.0, 10.0), stream(10, 1000, 10.0, 200.0))  # 3x for 10 s, then 1x


def test_buffering_rate_known_3x_burst():
    buf, steady, ratio = buffering_parts(BURST, end_s=200.0)
    assert buf == pytest.approx(240_000.0)
    assert steady == pytest.approx(80_000.0)
    assert ratio == pytest.approx(3.0)
    # default clip end = last arrival (199.9 s, closed window): 1000 packets over 99.9 s
    assert buffering_rate(BURST) == pytest.approx(240_000 / (1000 * 8000 / 99.9))


def test_buffering_rate_window_alignment_interpretation():
    # the 3x burst straddles the fixed windows [0,10) and [10,20): fixed windows see 2x,
    # sliding windows (step 1 s) find the full 3x
    pk = cat(stream(10, 1000, 0.0, 5.0), stream(30, 1000, 5.0, 15.0), stream(10, 1000, 15.0, 200.0))
    assert buffering_rate(pk, end_s=200.0) == pytest.approx(2.0)
    assert buffering_rate(pk, end_s=200.0, step_s=1.0) == pytest.approx(3.0)


def test_buffering_rate_constant_stream_is_one_and_short_stream_is_nan():
    assert buffering_rate(CONST, end_s=200.0) == pytest.approx(1.0)
    short = stream(10, 1000, 0.0, 90.0)
    buf, steady, ratio = buffering_parts(short)
    assert buf == pytest.approx(80_000.0)
    assert math.isnan(steady) and math.isnan(ratio)
    assert math.isnan(buffering_rate(stream(10, 1000, 0.0, 100.0)))  # last arrival 99.9 s


# ---------------------------------------------------------------- TCP-friendly (Section V-E)

def test_tcp_friendly_rate_equation_1_by_hand():
    # T = 1.5*sqrt(2/3)*s/(R*sqrt(p)); s = 1000 B, R = 0.2 s, p = 0.04:
    # 1.5*sqrt(2/3) = 1.2247448713915890; R*sqrt(p) = 0.2*0.2 = 0.04; T = 1224.7448713915890/0.04
    assert tcp_friendly_rate(1000, 0.2, 0.04) == pytest.approx(30618.621784789724, rel=1e-12)
    # paper's setting s = 1500 B: R = 0.1 s, p = 1 % -> 1.2247448713915890*1500/0.01 B/s
    assert tcp_friendly_rate(1500, 0.1, 0.01) == pytest.approx(183711.73070873835, rel=1e-12)
    assert tcp_friendly_rate(1500, 0.1, 0.0) == math.inf


def test_is_tcp_friendly_threshold_in_bits():
    limit_bps = 8 * 30618.621784789724
    assert is_tcp_friendly(limit_bps * 0.99, 0.2, 0.04, packet_size=1000)
    assert not is_tcp_friendly(limit_bps * 1.01, 0.2, 0.04, packet_size=1000)
    assert is_tcp_friendly(1e12, 0.2, 0.0)  # no loss: unbounded


def test_tcp_friendly_rejects_rto_and_bad_units():
    with pytest.raises(ValueError, match="rto_s"):
        tcp_friendly_rate(1500, 0.1, 0.01, rto_s=0.4)
    with pytest.raises(ValueError, match="loss"):
        tcp_friendly_rate(1500, 0.1, 5.0)  # percent instead of fraction
    with pytest.raises(ValueError, match="rtt_s"):
        tcp_friendly_rate(1500, 0.0, 0.01)
    with pytest.raises(ValueError, match="packet_size_bytes"):
        tcp_friendly_rate(-1, 0.1, 0.01)


# ---------------------------------------------------------------- least squares (Figs 10-13)

def test_least_squares_on_a_line():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    fit = least_squares(x, 2 * x + 1)
    assert fit.slope == pytest.approx(2.0)
    assert fit.intercept == pytest.approx(1.0)
    assert fit.r == pytest.approx(1.0)
    assert fit.n == 5


def test_least_squares_known_negative_correlation():
    # x = 1,2,3; y = 3,1,2: Sxy = -1, Sxx = Syy = 2 -> slope -0.5, intercept 3, r = -0.5
    fit = least_squares([1, 2, 3], [3, 1, 2])
    assert fit.slope == pytest.approx(-0.5)
    assert fit.intercept == pytest.approx(3.0)
    assert fit.r == pytest.approx(-0.5)


def test_least_squares_degenerate_inputs():
    fit = least_squares([1, 2, 3], [5, 5, 5])
    assert fit.slope == pytest.approx(0.0) and math.isnan(fit.r)
    with pytest.raises(ValueError, match="x"):
        least_squares([2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="x"):
        least_squares([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="y"):
        least_squares([1, 2, 3], [1, float("nan"), 3])


# ---------------------------------------------------------------- media scaling (Section V-F)

def test_scale_changes_and_levels():
    levels = [100e3, 100e3, 80e3, 80e3, 80e3, 50e3, 50e3, 80e3, 20e3]
    assert scale_changes(levels) == 4
    assert scale_levels(levels) == 4
    assert scale_changes([34e3]) == 0
    assert scale_changes(np.array([1, 2, 1, 2])) == 3


def test_time_to_adapt():
    rates = pd.Series([300e3, 200e3, 100e3, 34e3, 20e3], index=[0.0, 2.0, 4.0, 6.0, 8.0])
    assert time_to_adapt(rates, 35e3) == 6.0
    # equal to the limit is not "under" it
    eq = pd.Series([100e3, 35e3, 34.9e3], index=[0.0, 1.0, 7.5])
    assert time_to_adapt(eq, 35e3) == 7.5
    # always below: time of the first sample; never below: inf
    assert time_to_adapt(pd.Series([20e3, 20e3], index=[0.0, 1.0]), 35e3) == 0.0
    assert time_to_adapt(pd.Series([50e3, 40e3], index=[0.0, 1.0]), 35e3) == math.inf
    # DataFrame form, unsorted
    df = pd.DataFrame({"t_s": [9.0, 0.0, 3.0], "rate_bps": [10e3, 90e3, 30e3]})
    assert time_to_adapt(df, 35e3) == 3.0


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("bad, what", [
    (pd.DataFrame({"t_s": [], "bytes": []}), "empty"),
    (pd.DataFrame({"t_s": [0.0, -1.0], "bytes": [10, 10]}), "negative"),
    (pd.DataFrame({"t_s": [0.0, 1.0], "bytes": [10, -10]}), "negative"),
    (pd.DataFrame({"t_s": [0.0, float("nan")], "bytes": [10, 10]}), "NaN"),
    (pd.DataFrame({"time": [0.0], "bytes": [10]}), "missing"),
])
def test_bad_packet_series(bad, what):
    for fn in (lambda p: bandwidth_series(p, 0.5), average_bandwidth, buffering_rate, smoothness):
        with pytest.raises(ValueError, match=f"^packets: .*{what}"):
            fn(bad)


def test_bad_scalar_and_sequence_arguments_are_named():
    with pytest.raises(ValueError, match="^bin_s"):
        bandwidth_series(CONST, -0.5)
    with pytest.raises(ValueError, match="^bottleneck_bps"):
        normalized_difference(1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="^udp_bps"):
        normalized_difference(-1.0, 1.0, 10.0)
    with pytest.raises(ValueError, match="^levels"):
        scale_changes([])
    with pytest.raises(ValueError, match="^levels"):
        scale_changes([1.0, -2.0])
    with pytest.raises(ValueError, match="^level_rates_series"):
        time_to_adapt(pd.Series([], dtype=float), 35e3)
    with pytest.raises(ValueError, match="^measured_bps"):
        is_tcp_friendly(-5.0, 0.1, 0.01)
    with pytest.raises(ValueError, match="^udp_packets"):
        pair_summary(pd.DataFrame({"t_s": [], "bytes": []}), CONST, 300e3, 0.1, 0.01)
    with pytest.raises(ValueError, match="^tcp_packets"):
        pair_summary(CONST, pd.DataFrame({"t_s": [-1.0], "bytes": [1]}), 300e3, 0.1, 0.01)
    with pytest.raises(ValueError, match="^list_of_pair_summaries"):
        population_summary([])


# ---------------------------------------------------------------- population (Figs 7-9, Table I)

def test_population_summary_table1_and_groups():
    udp = stream(10, 1000, 0.0, 120.0)  # ~80 kbit/s
    tcp = stream(10, 500, 0.0, 120.0)   # ~40 kbit/s
    # A: eq.(1) = 1.2247*1500/(0.5*0.2) B/s ~ 147 kbit/s -> both friendly
    a = pair_summary(udp, tcp, 150e3, rtt_s=0.5, loss=0.04)
    # B: eq.(1) = 1.2247*1500/(1.0*0.5) B/s ~ 29.4 kbit/s -> both unfriendly
    b = pair_summary(udp, tcp, 150e3, rtt_s=1.0, loss=0.25)
    # C: no loss -> excluded; D: no ping -> excluded
    c = pair_summary(udp, tcp, 300e3, rtt_s=0.2, loss=0.0)
    d = pair_summary(udp, tcp, 300e3, rtt_s=None, loss=None)
    assert (a["udp_tcp_friendly"], a["tcp_tcp_friendly"]) == (True, True)
    assert (b["udp_tcp_friendly"], b["tcp_tcp_friendly"]) == (False, False)
    assert c["udp_tcp_friendly"] is None and d["udp_tcp_friendly"] is None
    assert a["udp_buffering_ratio"] == pytest.approx(80_000 / (200 * 8000 / 19.9))  # 100.0..119.9 s

    pop = population_summary([a, b, c, d])
    t1 = pop["all"]["table1"]
    assert t1["n_evaluated"] == 2
    assert t1["unfriendly_udp"] == 1 and t1["unfriendly_tcp"] == 1
    assert t1["unfriendly_udp_pct"] == 50.0
    assert t1["n_excluded_no_loss"] == 1 and t1["n_excluded_no_ping"] == 1
    assert sorted(pop["by_bottleneck"]) == [150e3, 300e3]
    assert pop["by_bottleneck"][150e3]["n_pairs"] == 2
    assert pop["by_bottleneck"][300e3]["table1"]["n_evaluated"] == 0
    x, p = pop["all"]["normalized_difference_cdf"]
    assert len(x) == 4 and p[-1] == 1.0
    assert list(pop["by_bottleneck"][150e3]["scatter"].columns) == ["tcp_avg_bps", "udp_avg_bps"]
    # every pair has the same TCP - UDP difference: horizontal fit, r undefined
    fit = pop["all"]["fit_difference_vs_rtt"]
    assert fit.n == 3 and fit.slope == pytest.approx(0.0, abs=1e-6) and math.isnan(fit.r)
    assert pop["all"]["smoothness"]["udp"]["fraction_within"] > 0.99


def test_empirical_cdf():
    x, p = empirical_cdf([3.0, float("nan"), 1.0, math.inf])
    np.testing.assert_array_equal(x, [1.0, 3.0, math.inf])
    np.testing.assert_allclose(p, [1 / 3, 2 / 3, 1.0])


# ---------------------------------------------------------------- property

@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 50, allow_nan=False), st.integers(0, 1500)),
                min_size=1, max_size=60),
       st.sampled_from([0.1, 0.5, 1.0, 3.0]))
def test_bandwidth_series_conserves_bytes(rows, bin_s):
    pk = pd.DataFrame(rows, columns=["t_s", "bytes"])
    bw = bandwidth_series(pk, bin_s)
    assert (bw * bin_s / 8).sum() == pytest.approx(pk["bytes"].sum())
    assert bw.index[-1] <= pk["t_s"].max() + 1e-9 < bw.index[-1] + bin_s + 1e-9
