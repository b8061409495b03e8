"""Self-prioritization of a video stream under shortest queue first (SQF).

Closed-form model of Section IV of T. Bonald, L. Muscariello, N. Ostallo, "Self-Prioritization of
Audio and Video Traffic", ICC 2011 (hal-01244042). One Poisson video stream of (theoretical)
peak rate lambda shares a link of capacity C with n saturated TCP flows that fill a buffer of B
packets equally; video and TCP packets have the same size. SQF serves the video first as long as
it holds less data than every TCP flow, condition (1), x < B/(n+1).

Units of the public functions: rates in bit/s, buffer in packets, packet size in bytes, durations
in seconds. Internally the paper's units are used: rates in packet/s (``rate_bps / (8 *
packet_size_bytes)``) and volumes in packets.

Evaluating equation (2), p(T) = max_{k>=1} q_k, needs a maximum over infinitely many k. It is
computed exactly (up to floating point) when lambda < C and B/(n+1) >= 1, from two facts proved in
the docstring of :func:`deprioritization_probability`: within an interval of t on which the
threshold ceil(Ct + B/(n+1)) is constant, q_k increases with t = T/k, so only the smallest k of
each such interval is a candidate; and a Chernoff bound on q(t) shows that long intervals cannot
win, which ends the search.

Reading of the text: q(t) uses the exact Poisson tail, N(t) >= ceil(C t + B/(n+1)), and the
maximum in (2) runs over every k >= 1, as written. With these, for n = 20 the knee of Figure 3
sits lower than the text's "close to 0 as long as the video peak rate is less than 6 Mbit/s": p(T)
is about 1/2 at 6 Mbit/s, and T-bar passes 180 min near 5 Mbit/s rather than 6. The critical
intervals are short (T/k of ~10 ms, a few tens of packets); a Gaussian approximation of N(t), or
a search limited to intervals of ~60 ms and longer, would move the knee to the quoted 6 Mbit/s.
Neither is in the text, so neither is used here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

DEFAULT_LINK_RATE_BPS = 10e6
"""Link capacity of Figures 3 and 4: 10 Mbit/s."""
DEFAULT_BUFFER_PKTS = 200
"""Buffer of Figures 3 and 4: 200 packets."""
DEFAULT_PACKET_SIZE_BYTES = 1250
"""Packet size of Figures 3 and 4: 1250 bytes (so 10 Mbit/s is 1000 packet/s)."""
DEFAULT_VIDEO_DURATION_S = 600.0
"""Video length of Figure 3: 10 minutes."""
FIGURE_NS = (5, 10, 20)
"""Numbers of competing TCP flows drawn in Figures 3 and 4."""

_TINY_HAZARD = 1e-300  # hazards (per second) below this are treated as zero
_FALLBACK_MAX_SEGMENTS = 1 << 14
_FALLBACK_DENSE_K = 1024


# ----------------------------------------------------------------------------------------------
# Units and the priority conditions (1) and (3)


def packets_per_second(rate_bps: float, packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES) -> float:
    """A rate in bit/s expressed in packet/s, the paper's unit for C and lambda."""
    if packet_size_bytes <= 0:
        raise ValueError("packet_size_bytes must be positive")
    return rate_bps / (8.0 * packet_size_bytes)


def tcp_volume_per_flow(x: float, buffer_pkts: float, n: int) -> float:
    """(B - x)/n: packets held by each of n saturated TCP flows when the video holds x (Sec. IV-A)."""
    _check_n(n)
    return (buffer_pkts - x) / n


def priority_threshold(buffer_pkts: float, n: int) -> float:
    """B/(n+1), the right-hand side of condition (1), in packets."""
    _check_n(n)
    return buffer_pkts / (n + 1)


def video_prioritized(x: float, buffer_pkts: float, n: int) -> bool:
    """Condition (1): a video with x packets queued is served first iff x < B/(n+1)."""
    return bool(x < priority_threshold(buffer_pkts, n))


def streams_prioritized(xs: Sequence[float], buffer_pkts: float, n: int) -> bool:
    """Condition (3): m video streams holding x_1..x_m packets all have priority iff
    x_i < (B - x)/n for every i, where x = sum(x_i)."""
    held = np.asarray(xs, dtype=float)
    return bool(np.all(held < tcp_volume_per_flow(held.sum(), buffer_pkts, n)))


def aggregate_prioritized(xs: Sequence[float], buffer_pkts: float, n: int) -> bool:
    """Condition (1) applied to the total x = sum(x_i); Sec. IV-B notes it is sufficient for (3),
    so m streams of peak rate lambda can be treated as one stream of rate m*lambda."""
    return video_prioritized(float(np.sum(xs)), buffer_pkts, n)


# ----------------------------------------------------------------------------------------------
# Fair queueing comparison


def fq_fair_share_bps(n: int, link_rate_bps: float = DEFAULT_LINK_RATE_BPS) -> float:
    """C/(n+1): the fair share of the video among n+1 flows under FQ, in bit/s."""
    _check_n(n)
    return link_rate_bps / (n + 1)


def fq_deprioritization_probability(
    peak_rate_bps: float, n: int, link_rate_bps: float = DEFAULT_LINK_RATE_BPS
) -> float:
    """Probability of de-prioritization under FQ (Sec. IV-A, Fig. 3): 0 if lambda < C/(n+1),
    else 1."""
    return 0.0 if peak_rate_bps < fq_fair_share_bps(n, link_rate_bps) else 1.0


def fq_mean_prioritization_time(
    peak_rate_bps: float, n: int, link_rate_bps: float = DEFAULT_LINK_RATE_BPS
) -> float:
    """T-bar = integral of (1 - p(t)) dt with the FQ p(t): infinite below the fair share, else 0."""
    return math.inf if fq_deprioritization_probability(peak_rate_bps, n, link_rate_bps) == 0.0 else 0.0


# ----------------------------------------------------------------------------------------------
# Poisson tails


_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _lgamma(x: np.ndarray) -> np.ndarray:
    """ln Gamma(x), x > 0, elementwise: Stirling's series once x is shifted to >= 16 with
    ln Gamma(x) = ln Gamma(x+1) - ln x (absolute error below 1e-13)."""
    y = np.array(x, dtype=float)
    shift = np.zeros_like(y)
    small = y < 16.0
    while small.any():
        shift[small] += np.log(y[small])
        y[small] += 1.0
        small = y < 16.0
    inv = 1.0 / y
    inv2 = inv * inv
    series = inv * (1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 / 1680)))
    return (y - 0.5) * np.log(y) - y + _HALF_LOG_2PI + series - shift


def _log_pmf(k: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """ln P(N = k) for N ~ Poisson(mu), mu > 0."""
    return -mu + k * np.log(mu) - _lgamma(k + 1.0)


def _upper_tail_bound(m: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Upper bound on P(N >= m): pmf(m) (m+1)/(m+1-mu) when 0 < mu < m+1 (the ratio series of
    pmf(m+j)/pmf(m) is dominated by a geometric one of ratio mu/(m+1)), else 1."""
    m, mu = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(mu, dtype=float))
    out = np.ones(m.shape)
    ok = (mu > 0) & (mu < m + 1.0) & (m > 0)
    out[ok] = np.exp(_log_pmf(m[ok], mu[ok])) * (m[ok] + 1.0) / (m[ok] + 1.0 - mu[ok])
    out[(mu <= 0) & (m > 0)] = 0.0
    return np.minimum(out, 1.0)


def _series(k: np.ndarray, mu: np.ndarray, upper: bool, block: int = 64) -> np.ndarray:
    """Sum of Poisson pmf ratios pmf(j)/pmf(k): j = k, k+1, ... (upper) or j = k, k-1, ..., 0,
    taken ``block`` terms at a time until the last term is below 1e-17 of the sum."""
    total = np.ones(k.shape)
    last = np.ones(k.shape)
    active = np.arange(k.size)
    j = np.arange(1, block + 1, dtype=float)
    while active.size:
        ka, xa = k[active, None], mu[active, None]
        ratios = xa / (ka + j) if upper else np.maximum(ka - j + 1.0, 0.0) / xa
        terms = last[active, None] * np.cumprod(ratios, axis=1)
        total[active] += terms.sum(axis=1)
        last[active] = terms[:, -1]
        j += block
        active = active[last[active] > 1e-17 * total[active]]
    return total


def poisson_tails(m: np.ndarray | float, mu: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """(P(N >= m), P(N < m)) for N ~ Poisson(mu) and integer m, elementwise.

    The smaller side is summed directly (pmf at the boundary times a ratio series that converges
    geometrically) and the other is its complement, so both are accurate where they matter."""
    m, mu = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(mu, dtype=float))
    shape = m.shape
    m, mu = m.ravel(), mu.ravel()
    sf, cdf = np.zeros(m.size), np.ones(m.size)
    certain = m <= 0
    sf[certain], cdf[certain] = 1.0, 0.0
    for upper in (True, False):
        sel = ~certain & (mu > 0) & ((mu < m) if upper else (mu >= m))
        if not sel.any():
            continue
        k, x = (m[sel] if upper else m[sel] - 1.0), mu[sel]
        side = np.exp(_log_pmf(k, x) + np.log(_series(k, x, upper)))
        if upper:
            sf[sel], cdf[sel] = side, 1.0 - side
        else:
            sf[sel], cdf[sel] = 1.0 - side, side
    return sf.reshape(shape), cdf.reshape(shape)


# ----------------------------------------------------------------------------------------------
# Equation (2) in the paper's units (packet/s, packets, seconds)


@dataclass(frozen=True)
class _Setting:
    lam: float  # video peak rate, packet/s
    cap: float  # link capacity C, packet/s
    b: float  # B/(n+1), packets

    @property
    def exact(self) -> bool:
        """The candidate set is provably complete (see deprioritization_probability)."""
        return self.lam < self.cap and self.b >= 1.0

    def threshold(self, t: ArrayLike) -> np.ndarray:
        """Smallest integer number of arrivals N with N >= C t + B/(n+1)."""
        x = self.cap * np.asarray(t, dtype=float) + self.b
        return np.ceil(x - 1e-12 * np.maximum(x, 1.0))

    def q(self, t: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """(q(t), 1 - q(t)) with q(t) = P(N(t) >= C t + B/(n+1)), Sec. IV-A."""
        t = np.asarray(t, dtype=float)
        return poisson_tails(self.threshold(t), self.lam * t)

    def hazard(self, t: ArrayLike) -> np.ndarray:
        """-ln(1 - q(t)) / t, so that q_k = 1 - exp(-T * hazard(T/k))."""
        t = np.asarray(t, dtype=float)
        above, below = self.q(t)
        with np.errstate(divide="ignore"):  # the smaller of the two is the accurate one
            return np.where(above < 0.5, -np.log1p(-np.minimum(above, 0.5)), -np.log(below)) / t

    def hazard_upper(self, t: ArrayLike) -> np.ndarray:
        """Cheap upper bound on hazard(t) from _upper_tail_bound (used only to skip work)."""
        t = np.asarray(t, dtype=float)
        bound = _upper_tail_bound(self.threshold(t), self.lam * t)
        with np.errstate(divide="ignore"):
            return -np.log1p(-np.minimum(bound, 1.0)) / t

    @property
    def m_min(self) -> int:
        """Threshold of the shortest intervals: floor(b) + 1."""
        return int(math.floor(self.b)) + 1

    def t_right(self, m: ArrayLike) -> np.ndarray:
        """t_m = (m - b)/C: the longest interval whose threshold is m."""
        return (np.asarray(m, dtype=float) - self.b) / self.cap

    def hazard_bound(self, t: float) -> float:
        """Decreasing upper bound on hazard(t') for t' >= t (Chernoff, theta = ln(C/lambda)):
        q(t) <= (lambda/C)^b exp(-I t), I = C ln(C/lambda) - C + lambda > 0."""
        rate = self.cap * math.log(self.cap / self.lam) - self.cap + self.lam
        log_bound = self.b * math.log(self.lam / self.cap) - rate * t
        return -math.log1p(-min(math.exp(log_bound), 1.0 - 1e-16)) / t


def _candidate_ks(s: _Setting, horizon: float, m_lo: int, m_hi: int) -> np.ndarray:
    """k = ceil(T/t_m) for thresholds m_lo..m_hi: the smallest k (longest T/k) of each segment.
    ceil(T/t_m) - 1 is added too, so that rounding in T/t_m cannot hide k = T/t_m itself (extra
    k only add valid candidates)."""
    k = np.ceil(horizon / s.t_right(np.arange(m_lo, m_hi + 1)))
    return np.unique(np.maximum(np.concatenate([k, k - 1.0]), 1.0))


def _max_hazard(s: _Setting, t: np.ndarray, best: float = 0.0, best_t: float = math.nan) -> tuple[float, float]:
    """max(best, max of hazard over the lengths t) and where it is attained.

    Lengths are tried in decreasing order of a cheap upper bound of their hazard, in batches of
    doubling size, skipping those whose bound cannot beat the maximum so far: exact."""
    t = np.unique(np.asarray(t, dtype=float))
    ub = s.hazard_upper(t)
    order = np.argsort(ub)[::-1]
    t, ub = t[order], ub[order]
    start, size = 0, 16
    while start < t.size and ub[start] > max(best, _TINY_HAZARD):
        batch = np.arange(start, min(start + size, t.size))
        batch = batch[ub[batch] > max(best, _TINY_HAZARD)]
        h = s.hazard(t[batch])
        i = int(np.argmax(h))
        if h[i] > best:
            best, best_t = float(h[i]), float(t[batch[i]])
        start, size = start + size, 2 * size
    return best, best_t


def _best_hazard(s: _Setting, horizon: float) -> tuple[float, float]:
    """(max_k hazard(T/k), the maximizing T/k) over the candidate k of eq. (2), T = horizon."""
    if s.lam <= 0:
        return 0.0, horizon
    m_top = int(s.threshold(horizon))  # threshold of k = 1
    if not s.exact:
        m_hi = min(m_top, s.m_min + _FALLBACK_MAX_SEGMENTS)
        k_top = horizon / float(s.t_right(s.m_min))
        ks = np.concatenate([
            _candidate_ks(s, horizon, s.m_min, m_hi),
            np.arange(1.0, min(_FALLBACK_DENSE_K, math.ceil(k_top)) + 1.0),
            np.ceil(np.geomspace(1.0, max(k_top, 1.0), 256)),
        ])
        return _max_hazard(s, horizon / ks)
    best, best_t, lo, width = 0.0, horizon, s.m_min, 64
    while lo <= m_top:
        hi = min(lo + width - 1, m_top)
        best, best_t = _max_hazard(s, horizon / _candidate_ks(s, horizon, lo, hi), best, best_t)
        if hi == m_top:
            break
        # every k not yet covered has T/k in a segment above hi, i.e. T/k > t_hi
        if s.hazard_bound(float(s.t_right(hi))) <= max(best, _TINY_HAZARD):
            break
        lo, width = hi + 1, 2 * width
    return best, best_t


def _sup_hazard(s: _Setting) -> tuple[float, float]:
    """(h*, t*) = sup over t > 0 of h(t), and where it is attained, i.e. eq. (2) as T -> inf.

    When the segment argument holds (lambda < C, b >= 1) the sup is over segment right ends t_m,
    scanned until the Chernoff bound stops them; otherwise over a fixed number of them."""
    best, best_t, lo, width = 0.0, math.inf, s.m_min, 64
    while True:
        best, best_t = _max_hazard(s, s.t_right(np.arange(lo, lo + width)), best, best_t)
        lo, width = lo + width, 2 * width
        if not s.exact:
            if lo - s.m_min >= _FALLBACK_MAX_SEGMENTS:
                return best, best_t
        elif s.hazard_bound(float(s.t_right(lo - 1))) <= max(best, _TINY_HAZARD):  # t > t_(lo-1)
            return best, best_t


def _setting(peak_rate_bps: float, n: int, link_rate_bps: float, buffer_pkts: float,
             packet_size_bytes: float) -> _Setting:
    if peak_rate_bps < 0 or link_rate_bps <= 0 or buffer_pkts <= 0:
        raise ValueError("rates must be non-negative, capacity and buffer positive")
    return _Setting(
        lam=packets_per_second(peak_rate_bps, packet_size_bytes),
        cap=packets_per_second(link_rate_bps, packet_size_bytes),
        b=priority_threshold(buffer_pkts, n),
    )


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError("n (number of TCP flows) must be at least 1")


# ----------------------------------------------------------------------------------------------
# Public SQF model


def overflow_probability(
    t: float | np.ndarray,
    peak_rate_bps: float,
    n: int,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
) -> float | np.ndarray:
    """q(t) = P(N(t) >= C t + B/(n+1)), N(t) Poisson of mean lambda t (Sec. IV-A, before eq. 2):
    the video brings more than the link serves plus its buffering allowance (1) within t seconds."""
    s = _setting(peak_rate_bps, n, link_rate_bps, buffer_pkts, packet_size_bytes)
    sf, _ = s.q(t)
    return sf if np.ndim(sf) else float(sf)


def interval_overflow_probability(
    duration_s: float,
    k: int,
    peak_rate_bps: float,
    n: int,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
) -> float:
    """q_k = 1 - (1 - q(T/k))^k (Sec. IV-A): overflow on at least one of k intervals of T/k."""
    if k < 1:
        raise ValueError("k must be at least 1")
    s = _setting(peak_rate_bps, n, link_rate_bps, buffer_pkts, packet_size_bytes)
    return float(-np.expm1(-duration_s * s.hazard(duration_s / k)))


def deprioritization_probability(
    duration_s: float,
    peak_rate_bps: float,
    n: int,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
) -> float:
    """p(T) = max_{k>=1} q_k, equation (2): the probability that the video loses its priority
    (condition (1) fails) at some time during a period of T seconds.

    Writing q_k = 1 - exp(-T h(T/k)) with h(t) = -ln(1 - q(t))/t, the maximum is over h at the
    points t = T/k. With m(t) = ceil(C t + b), b = B/(n+1), the t-axis splits into segments
    ((m-1-b)/C, (m-b)/C] of constant m; on a segment q(t) = P(Poisson(lambda t) >= m) and
    h'(t) > 0 as soon as m*pmf(m) > P(N >= m), which holds when lambda t < m - 1/m, in particular
    whenever lambda < C and b >= 1. So each segment's best k is k_m = ceil(T/t_m), t_m = (m-b)/C.
    Segments are scanned by increasing m until the Chernoff bound of h beyond them cannot beat
    the best value found, and within a batch candidates whose cheap bound pmf(m)(m+1)/(m+1-mu)
    cannot beat it are skipped, so the maximum is exact. If lambda >= C or b < 1 that argument
    fails and the maximum is taken over a large finite set of k instead (all k <= 1024, the
    candidates of the first 16384 segments and a geometric grid); p(T) is then essentially 1
    for the paper's parameters."""
    s = _setting(peak_rate_bps, n, link_rate_bps, buffer_pkts, packet_size_bytes)
    if duration_s <= 0:
        return 0.0
    h, _ = _best_hazard(s, float(duration_s))
    return float(-math.expm1(-duration_s * h))


def mean_prioritization_time(
    peak_rate_bps: float,
    n: int,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
    points_per_decade: int = 24,
) -> float:
    """T-bar = integral_0^inf (1 - p(t)) dt in seconds (Sec. IV-A), p(t) from equation (2).

    1 - p(t) = exp(-t H(t)) with H(t) = max_k h(t/k) <= h* = sup_t h(t). The integral is taken
    numerically (trapezoid in log t) up to t_a = 100 t*, where t* is the interval length that
    attains h*, and the tail beyond t_a is exp(-t_a h*)/h*, i.e. H(t) = h* there. This replaces
    the best interval T/k by t* itself (the lattice effect of integer k), a relative error of
    order m* t* h* (m* packets in t*), negligible when T-bar >> t*, and it errs low: the result
    is a slight underestimate. When h* t_a <= 1e-4 the head is not integrated: since
    exp(-t h*) <= 1 - p(t) <= 1, T-bar = 1/h* then, to a relative (h* t_a)^2/2.
    Returns inf when h* underflows (T-bar beyond ~1e300 s)."""
    s = _setting(peak_rate_bps, n, link_rate_bps, buffer_pkts, packet_size_bytes)
    if s.lam <= 0:
        return math.inf
    h_star, t_star = _sup_hazard(s)
    if h_star <= _TINY_HAZARD:
        return math.inf
    t_a = 100.0 * t_star
    if h_star * t_a <= 1e-4:
        return 1.0 / h_star
    t_lo = min(t_star, float(s.t_right(s.m_min))) * 1e-3
    n_pts = max(int(points_per_decade * math.log10(t_a / t_lo)) + 1, 16)
    grid = np.geomspace(t_lo, t_a, n_pts)
    survive = np.array([math.exp(-t * _best_hazard(s, float(t))[0]) for t in grid])
    head = t_lo * (1.0 + survive[0]) / 2.0  # 1 - p(0) = 1
    body = float(np.sum(np.diff(grid) * (survive[1:] + survive[:-1]) / 2.0))
    return head + body + math.exp(-t_a * h_star) / h_star


def max_peak_rate_bps(
    p_max: float,
    n: int,
    duration_s: float = DEFAULT_VIDEO_DURATION_S,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
    rel_tol: float = 1e-4,
) -> float:
    """Largest peak rate (bit/s) with p(T) <= p_max under SQF, by bisection on lambda in (0, C)
    (p(T) increases with lambda)."""
    if not 0 < p_max < 1:
        raise ValueError("p_max must be in (0, 1)")
    kw = dict(link_rate_bps=link_rate_bps, buffer_pkts=buffer_pkts, packet_size_bytes=packet_size_bytes)
    lo, hi = 0.0, float(link_rate_bps)
    while hi - lo > rel_tol * link_rate_bps:
        mid = (lo + hi) / 2.0
        if deprioritization_probability(duration_s, mid, n, **kw) <= p_max:
            lo = mid
        else:
            hi = mid
    return lo


def max_prioritized_streams(
    stream_peak_rate_bps: float,
    p_max: float,
    n: int,
    duration_s: float = DEFAULT_VIDEO_DURATION_S,
    **link: float,
) -> int:
    """Number m of video streams of the given peak rate that SQF keeps prioritized with
    probability >= 1 - p_max over T, treating them as one stream of rate m*lambda (Sec. IV-B,
    sufficiency of (1) for (3))."""
    if stream_peak_rate_bps <= 0:
        raise ValueError("stream_peak_rate_bps must be positive")
    return int(max_peak_rate_bps(p_max, n, duration_s, **link) // stream_peak_rate_bps)


# ----------------------------------------------------------------------------------------------
# Figures 3 and 4


def default_peak_rates_bps(link_rate_bps: float = DEFAULT_LINK_RATE_BPS, points: int = 100) -> np.ndarray:
    """Peak rates from C/points to C (the x-axis of Figures 3 and 4)."""
    return np.linspace(link_rate_bps / points, link_rate_bps, points)


def figure3(
    peak_rates_bps: Iterable[float] | None = None,
    ns: Sequence[int] = FIGURE_NS,
    duration_s: float = DEFAULT_VIDEO_DURATION_S,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
) -> pd.DataFrame:
    """Figure 3: probability of de-prioritization p(T) of a T = 10 min video against its peak
    rate, for n competing TCP flows, under SQF (eq. 2) and FQ.

    One row per (n, peak rate): n, peak_rate_bps, peak_rate_mbps, p_sqf, p_fq and
    fq_fair_share_mbps (C/(n+1), where the FQ curve steps from 0 to 1)."""
    rates = default_peak_rates_bps(link_rate_bps) if peak_rates_bps is None else np.asarray(list(peak_rates_bps), float)
    kw = dict(link_rate_bps=link_rate_bps, buffer_pkts=buffer_pkts, packet_size_bytes=packet_size_bytes)
    rows = [
        {
            "n": n,
            "peak_rate_bps": lam,
            "peak_rate_mbps": lam / 1e6,
            "p_sqf": deprioritization_probability(duration_s, lam, n, **kw),
            "p_fq": fq_deprioritization_probability(lam, n, link_rate_bps),
            "fq_fair_share_mbps": fq_fair_share_bps(n, link_rate_bps) / 1e6,
        }
        for n in ns
        for lam in rates
    ]
    return pd.DataFrame(rows)


def figure4(
    peak_rates_bps: Iterable[float] | None = None,
    ns: Sequence[int] = FIGURE_NS,
    *,
    link_rate_bps: float = DEFAULT_LINK_RATE_BPS,
    buffer_pkts: float = DEFAULT_BUFFER_PKTS,
    packet_size_bytes: float = DEFAULT_PACKET_SIZE_BYTES,
) -> pd.DataFrame:
    """Figure 4: average time of prioritization T-bar against the video peak rate, for n
    competing TCP flows, under SQF and FQ.

    One row per (n, peak rate): n, peak_rate_bps, peak_rate_mbps, tbar_sqf_s, tbar_sqf_min,
    tbar_fq_min (inf below the FQ fair share, 0 above) and fq_fair_share_mbps."""
    rates = default_peak_rates_bps(link_rate_bps) if peak_rates_bps is None else np.asarray(list(peak_rates_bps), float)
    rows = []
    for n in ns:
        for lam in rates:
            tbar = mean_prioritization_time(lam, n, link_rate_bps=link_rate_bps, buffer_pkts=buffer_pkts,
                                            packet_size_bytes=packet_size_bytes)
            rows.append({
                "n": n,
                "peak_rate_bps": lam,
                "peak_rate_mbps": lam / 1e6,
                "tbar_sqf_s": tbar,
                "tbar_sqf_min": tbar / 60.0,
                "tbar_fq_min": fq_mean_prioritization_time(lam, n, link_rate_bps) / 60.0,
                "fq_fair_share_mbps": fq_fair_share_bps(n, link_rate_bps) / 1e6,
            })
    return pd.DataFrame(rows)


def _figure(width: float = 5.5, height: float = 3.8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return path


def plot_figure3(df: pd.DataFrame, path: str | Path) -> Path:
    """Draws :func:`figure3` data as in the paper: p(T) against the peak rate (Mbit/s), one SQF
    curve per n (solid) and the FQ step at C/(n+1) (dashed)."""
    fig, ax = _figure()
    for i, (n, g) in enumerate(df.groupby("n", sort=True)):
        ax.plot(g["peak_rate_mbps"], g["p_sqf"], color=f"C{i}", lw=1.6, label=f"SQF, n={n}")
        share = g["fq_fair_share_mbps"].iloc[0]
        x_max = g["peak_rate_mbps"].max()
        ax.plot([0.0, share, share, max(x_max, share)], [0.0, 0.0, 1.0, 1.0], color=f"C{i}", lw=1.0, ls="--",
                label=f"FQ, n={n}")
    ax.set_xlabel("video peak rate (Mbit/s)")
    ax.set_ylabel("probability of de-prioritization")
    ax.set_xlim(0, df["peak_rate_mbps"].max())
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center right")
    return _save(fig, path)


def plot_figure4(df: pd.DataFrame, path: str | Path, *, y_range_min: tuple[float, float] = (1e-2, 1e5)) -> Path:
    """Draws :func:`figure4` data as in the paper: T-bar (minutes, log scale) against the peak
    rate (Mbit/s), one SQF curve per n and the FQ limit C/(n+1) as a dashed vertical line (FQ's
    T-bar is infinite to its left and 0 to its right). T-bar grows without bound as the rate
    falls, so the y-axis is cut at ``y_range_min`` (minutes)."""
    fig, ax = _figure()
    lo, hi = y_range_min
    for i, (n, g) in enumerate(df.groupby("n", sort=True)):
        y = g["tbar_sqf_min"].to_numpy(dtype=float)
        ax.plot(g["peak_rate_mbps"], np.clip(y, lo / 10, hi * 10), color=f"C{i}", lw=1.6, label=f"SQF, n={n}")
        ax.axvline(g["fq_fair_share_mbps"].iloc[0], color=f"C{i}", lw=1.0, ls="--", label=f"FQ limit, n={n}")
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.set_xlim(0, df["peak_rate_mbps"].max())
    ax.set_xlabel("video peak rate (Mbit/s)")
    ax.set_ylabel("average time of prioritization (min)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)
