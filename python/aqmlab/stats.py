"""Mean and 95 % confidence interval over seeds (Student's t), and its text in a table.

A t interval over a few seeds can leave what the metric can be (28.19 ± 121.10 % of loss). The
text then shows the interval clipped to the metric's range and says so:
``28.19 [0.00, 100.00] clipped``. Our choice over a Wilson or bootstrap interval: the metrics
are means over seeds of per-run values (not counts of one binomial trial), the t interval is
what every table uses, and a clip changes nothing where the interval already fits, so tables
of runs whose intervals fit stay as they were."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

# Two-sided 95 % quantiles t_{0.975, df} for df = 1..30 (any statistics table, e.g. NIST/SEMATECH
# e-Handbook of Statistical Methods, table 1.3.6.7.2); beyond 30 the normal 1.96 is within 2 %.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df: int) -> float:
    return _T975[df - 1] if df <= len(_T975) else 1.96


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of the 95 % confidence interval); half-width NaN for one value."""
    xs = [v for v in values if v == v]
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    mean = sum(xs) / n
    if n == 1:
        return mean, float("nan")
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return mean, t975(n - 1) * sd / math.sqrt(n)


#: The range of every metric the reproductions average that is neither a percentage nor an
#: index: rates, counts, delays, mean |IPDV| and times are never negative.
NON_NEGATIVE = (0.0, math.inf)
PERCENT = (0.0, 100.0)
UNIT = (0.0, 1.0)


def physical_range(name: str) -> tuple[float, float]:
    """The values a metric can take, from its column name: percentages (``*_pct``) [0, 100],
    Jain's index [0, 1], anything else of the reproductions' tables [0, inf)."""
    if name.endswith("pct"):
        return PERCENT
    if "jain" in name:
        return UNIT
    return NON_NEGATIVE


def error_bar(mean: float, half: float, bounds: tuple[float, float] = NON_NEGATIVE) -> tuple[float, float]:
    """How far a figure's error bar reaches below and above `mean`: the interval mean ± half cut
    at `bounds`, as `interval_text` cuts it in the tables (0 and 0 without a half-width), for
    matplotlib's asymmetric `xerr`/`yerr`."""
    if half != half or mean != mean:
        return 0.0, 0.0
    return mean - max(bounds[0], mean - half), min(bounds[1], mean + half) - mean


def ci_text(values: Sequence[float], fmt: str, bounds: tuple[float, float] = NON_NEGATIVE) -> str:
    """"mean ± half-width" of `values` (see `interval_text`)."""
    return interval_text(*mean_ci(values), fmt, bounds)


def interval_text(mean: float, half: float, fmt: str, bounds: tuple[float, float] = NON_NEGATIVE,
                  half_fmt: str | None = None) -> str:
    """"mean ± half-width" (just the mean without a half-width, "-" without a mean); when the
    interval leaves `bounds`, "mean [low, high] clipped" with the interval cut at the bounds.
    The one place the clipping rule lives: the reproductions' tables and the sweep report's
    points table both write through it. `half_fmt` formats the half-width (default `fmt`)."""
    if mean != mean:
        return "-"
    if half != half:
        return f"{mean:{fmt}}"
    lo, hi = bounds
    if mean - half >= lo and mean + half <= hi:
        return f"{mean:{fmt}} ± {half:{half_fmt or fmt}}"
    return f"{mean:{fmt}} [{max(lo, mean - half):{fmt}}, {min(hi, mean + half):{fmt}}] clipped"


#: A measure of a media stream that lost more than this share of its packets, in any run it
#: averages, is marked: it describes the few packets that arrived, not a stream a viewer could
#: watch (issue 23). 50 % is aqmlab's line (docs/reproductions/sqf.md, "Values the paper left out").
MOSTLY_LOST_PCT = 50.0
MOSTLY_LOST_MARK = "†"


def mostly_lost(loss_pct: Iterable[float]) -> bool:
    """Whether any of the runs' `loss_pct` exceeds MOSTLY_LOST_PCT."""
    return any(x > MOSTLY_LOST_PCT for x in loss_pct)


def mark_if_mostly_lost(cell: str, loss_pct: Iterable[float]) -> str:
    """`cell` with MOSTLY_LOST_MARK appended when the stream was `mostly_lost`."""
    return f"{cell} {MOSTLY_LOST_MARK}" if mostly_lost(loss_pct) else cell
