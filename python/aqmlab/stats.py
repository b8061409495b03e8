"""Mean and 95 % confidence interval over seeds (Student's t)."""

from __future__ import annotations

import math
from collections.abc import Sequence

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
