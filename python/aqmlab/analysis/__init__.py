"""Offline analyses of measured or simulated packet series.

`head_to_head` holds the analyses of Chung, Zhu and Claypool, "FairPlayer or FoulPlayer? Head to
Head Performance of RealPlayer Streaming Video Over UDP versus TCP" (WPI-CS-TR-02-17, 2002).
"""

from aqmlab.analysis.head_to_head import (
    LeastSquaresFit,
    SmoothnessResult,
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

__all__ = [
    "LeastSquaresFit",
    "SmoothnessResult",
    "average_bandwidth",
    "bandwidth_series",
    "buffering_parts",
    "buffering_rate",
    "empirical_cdf",
    "is_tcp_friendly",
    "least_squares",
    "normalized_difference",
    "pair_summary",
    "population_summary",
    "scale_changes",
    "scale_levels",
    "smoothness",
    "tcp_friendly_rate",
    "time_to_adapt",
]
