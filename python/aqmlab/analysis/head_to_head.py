"""Head-to-head analyses of a UDP and a TCP stream of the same video on the same path.

Source: J. Chung, Y. Zhu, M. Claypool, "FairPlayer or FoulPlayer? Head to Head Performance of
RealPlayer Streaming Video Over UDP versus TCP", WPI-CS-TR-02-17, May 2002 ("the paper" below;
section, figure, table and equation numbers are the paper's).

Data model
----------
A *packet series* is a pandas DataFrame with one row per received packet of one stream and columns

* ``t_s``   -- arrival time at the receiver, in seconds **since the start of the clip** (the moment
  the player was started; in a head-to-head pair both players start together, so both series share
  the origin). Must be finite and >= 0. Rows need not be sorted.
* ``bytes`` -- the **IP packet size** in bytes (IP total length, headers included), as in the paper,
  which extracted "the IP packet size and arrival time" from the tcpdump trace (Section III-B).
  Must be finite and >= 0. Nothing here depends on it being IP rather than payload bytes; if you
  feed payload bytes, every bit rate below is a payload (goodput-like) rate instead.

Every bit rate returned is in **bits per second** (bps), except `tcp_friendly_rate`, which returns
the paper's T in **bytes per second**, exactly as equation (1) is written.

Intervals and bins are half-open, ``[a, b)``, on the clip clock. To protect against floating
point timestamps that sit a hair below a bin edge (``3 * 0.1 == 0.30000000000000004``), arrival
times are compared with a tolerance of ``_EPS_S`` = 1 ns.

Stream metadata is passed as plain arguments: round-trip time in seconds (the paper: mean of 1 s
pings during the run), loss as a fraction in [0, 1] (the paper: ping loss rate), transport is
implied by which argument ("udp_..." or "tcp_...") a series is passed as.

Invalid input raises ``ValueError`` whose message starts with the argument's name.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import pandas as pd

_EPS_S = 1e-9

#: Packet size used by the paper for the TCP-friendly test (Section V-E, footnote 12: "the maximum
#: packet size recorded", Figure 5).
PAPER_PACKET_SIZE_BYTES = 1500

#: Constant of equation (1): 1.5 * sqrt(2/3) = sqrt(3/2) ~= 1.2247.
EQ1_CONSTANT = 1.5 * math.sqrt(2.0 / 3.0)


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------

def _packets(packets: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated (t_s, bytes) arrays, sorted by time."""
    if not isinstance(packets, pd.DataFrame):
        raise ValueError(f"{name}: expected a pandas DataFrame with columns 't_s' and 'bytes', "
                         f"got {type(packets).__name__}")
    missing = [c for c in ("t_s", "bytes") if c not in packets.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}; need 't_s' (s) and 'bytes'")
    if len(packets) == 0:
        raise ValueError(f"{name}: empty packet series")
    try:
        t = packets["t_s"].to_numpy(dtype=float)
        b = packets["bytes"].to_numpy(dtype=float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name}: 't_s' and 'bytes' must be numeric ({e})") from None
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name}: 't_s' contains NaN or infinite values")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{name}: 'bytes' contains NaN or infinite values")
    if np.any(t < 0):
        raise ValueError(f"{name}: 't_s' has negative times (min {t.min()}); times are seconds "
                         "since the clip started")
    if np.any(b < 0):
        raise ValueError(f"{name}: 'bytes' has negative sizes (min {b.min()})")
    order = np.argsort(t, kind="stable")
    return t[order], b[order]


def _positive(value: Any, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValueError(f"{name}: must be finite, got {v}")
    if v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'}, got {v}")
    return v


def _fraction(value: Any, name: str) -> float:
    v = _positive(value, name, allow_zero=True)
    if v > 1:
        raise ValueError(f"{name}: loss is a fraction in [0, 1], got {v} (percent passed?)")
    return v


def _bytes_in(t: np.ndarray, b_cum: np.ndarray, start: float, end: float) -> float:
    """Bytes of packets with start <= t < end (with the _EPS_S tolerance); b_cum is the
    cumulative byte count with a leading 0."""
    i = np.searchsorted(t, start - _EPS_S, side="left")
    j = np.searchsorted(t, end - _EPS_S, side="left")
    return float(b_cum[j] - b_cum[i])


# --------------------------------------------------------------------------------------------
# Section V-A: bandwidth (Figures 6, 7, 8, 9)
# --------------------------------------------------------------------------------------------

def bandwidth_series(packets: pd.DataFrame, bin_s: float, end_s: float | None = None) -> pd.Series:
    """Bit rate per fixed bin: throughput versus time as in Figure 6 (and the 500 ms series
    behind the smoothness of Section V-G / Figure 21).

    Bins are ``[k*bin_s, (k+1)*bin_s)`` for k = 0, 1, ... on the clip clock (t = 0 is the clip
    start). Without ``end_s`` the last bin is the one holding the last arrival; with ``end_s``
    the bins cover ``[0, end_s)`` (rounded up to a whole bin) and later packets are ignored.
    Value = 8 * bytes arriving in the bin / bin_s, in bits/s. The last bin is divided by the full
    ``bin_s`` even if the stream ended inside it. Empty bins are 0.

    Returns a float Series indexed by the bin start time in seconds (index name ``t_s``).
    """
    t, b = _packets(packets, "packets")
    bin_s = _positive(bin_s, "bin_s")
    if end_s is None:
        n = int(math.floor(t[-1] / bin_s + _EPS_S / bin_s)) + 1
    else:
        end_s = _positive(end_s, "end_s")
        n = max(1, int(math.ceil(end_s / bin_s - _EPS_S / bin_s)))
        keep = t < end_s - _EPS_S
        t, b = t[keep], b[keep]
    idx = np.floor(t / bin_s + _EPS_S / bin_s).astype(np.int64)
    sums = np.bincount(idx, weights=b, minlength=n)[:n]
    return pd.Series(sums * 8.0 / bin_s, index=pd.Index(np.arange(n) * bin_s, name="t_s"),
                     name="bps")


def average_bandwidth(packets: pd.DataFrame, start_s: float | None = None,
                      end_s: float | None = None) -> float:
    """Average bit rate (bits/s) of a stream over a window; the per-clip "average bandwidth" of
    Section V-A (Figures 7 and 8) and the "steady playout rate" of Section V-D.

    * ``start_s`` defaults to 0, the clip start.
    * ``end_s`` defaults to the last arrival, which is the paper's end of the clip ("the last time
      the end-host received packets", Section IV). In that default case the window is closed,
      ``[start_s, t_last]``, so that every packet is counted: the whole-clip average is
      total bits / playout length. With an explicit ``end_s`` the window is ``[start_s, end_s)``.

    Raises ValueError if the window is empty (end <= start).
    """
    t, b = _packets(packets, "packets")
    start = 0.0 if start_s is None else _positive(start_s, "start_s", allow_zero=True)
    b_cum = np.concatenate([[0.0], np.cumsum(b)])
    if end_s is None:
        end = float(t[-1])
        if end <= start:
            raise ValueError(f"start_s: {start} is not before the last arrival {end}")
        i = np.searchsorted(t, start - _EPS_S, side="left")
        return float(b_cum[-1] - b_cum[i]) * 8.0 / (end - start)
    end = _positive(end_s, "end_s")
    if end <= start:
        raise ValueError(f"end_s: {end} must be greater than start_s {start}")
    return _bytes_in(t, b_cum, start, end) * 8.0 / (end - start)


def normalized_difference(udp_bps: Any, tcp_bps: Any, bottleneck_bps: float,
                          convention: Literal["tcp_minus_udp", "udp_minus_tcp"] = "tcp_minus_udp"
                          ) -> Any:
    """Head-to-head difference in average bandwidth normalised by the bottleneck (Section V-A,
    Figure 9).

    The paper's sign (default, ``convention="tcp_minus_udp"``): "we subtract the UDP average
    bandwidth from the TCP average bandwidth and divide the difference by the bottleneck
    bandwidth ... a value of -1 indicates UDP got the entire bottleneck bandwidth, and a value of
    +1 indicates TCP got the entire bottleneck bandwidth" -- i.e. (TCP - UDP) / bottleneck, as in
    the titles of Figures 9-13. ``convention="udp_minus_tcp"`` gives the opposite sign.

    Accepts scalars or array-likes (broadcast); returns a float for scalar input, else an ndarray.
    All rates in bits/s (any common unit works, the result is dimensionless).
    """
    if convention not in ("tcp_minus_udp", "udp_minus_tcp"):
        raise ValueError(f"convention: expected 'tcp_minus_udp' or 'udp_minus_tcp', got {convention!r}")
    u = _rates(udp_bps, "udp_bps")
    c = _rates(tcp_bps, "tcp_bps")
    bn = _positive(bottleneck_bps, "bottleneck_bps")
    d = (c - u) / bn if convention == "tcp_minus_udp" else (u - c) / bn
    return float(d) if d.ndim == 0 else d


def _rates(x: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or array of numbers, got {x!r}") from None
    if a.size == 0:
        raise ValueError(f"{name}: empty")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    if np.any(a < 0):
        raise ValueError(f"{name}: rates must be >= 0")
    return a


# --------------------------------------------------------------------------------------------
# Sections V-B and V-C: correlation with RTT and loss (Figures 10-13)
# --------------------------------------------------------------------------------------------

class LeastSquaresFit(NamedTuple):
    """Ordinary least-squares line y = slope * x + intercept and Pearson's r."""
    slope: float
    intercept: float
    r: float
    n: int


def least_squares(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> LeastSquaresFit:
    """Least-squares line of y on x and the (Pearson) correlation coefficient, as drawn and quoted
    in Figures 10-13 (Sections V-B and V-C: bandwidth difference TCP - UDP versus RTT or loss;
    the paper quotes r = -0.13 for RTT and r = -0.03 for loss over all bottlenecks).

    Slope and intercept minimise sum((y - slope*x - intercept)^2) (solved with numpy lstsq);
    r = cov(x, y) / (sd(x) sd(y)). If y is constant the line is horizontal and r is NaN
    (undefined). Needs at least 2 points, finite values, and x not all equal (else ValueError).
    """
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.size != ya.size:
        raise ValueError(f"x: length {xa.size} differs from y length {ya.size}")
    if xa.size < 2:
        raise ValueError(f"x: need at least 2 points, got {xa.size}")
    if not np.all(np.isfinite(xa)):
        raise ValueError("x: contains NaN or infinite values")
    if not np.all(np.isfinite(ya)):
        raise ValueError("y: contains NaN or infinite values")
    dx = xa - xa.mean()
    dy = ya - ya.mean()
    sxx = float(dx @ dx)
    if sxx == 0.0:
        raise ValueError("x: all values are equal; the slope is undefined")
    a = np.column_stack([xa, np.ones_like(xa)])
    (slope, intercept), *_ = np.linalg.lstsq(a, ya, rcond=None)
    syy = float(dy @ dy)
    r = float(dx @ dy) / math.sqrt(sxx * syy) if syy > 0 else float("nan")
    if not math.isnan(r):
        r = max(-1.0, min(1.0, r))
    return LeastSquaresFit(float(slope), float(intercept), r, int(xa.size))


# --------------------------------------------------------------------------------------------
# Section V-D: buffering data rate (Figures 14, 15)
# --------------------------------------------------------------------------------------------

def buffering_parts(packets: pd.DataFrame, first_s: float = 80.0, window_s: float = 10.0,
                    steady_from_s: float = 100.0, step_s: float | None = None,
                    end_s: float | None = None) -> tuple[float, float, float]:
    """(buffering data rate bps, steady playout rate bps, ratio) of Section V-D; see
    `buffering_rate` for the definitions. Figure 14 plots ratio against the steady playout rate,
    which is why both parts are exposed."""
    tt, bb = _packets(packets, "packets")
    first_s = _positive(first_s, "first_s")
    window_s = _positive(window_s, "window_s")
    steady_from_s = _positive(steady_from_s, "steady_from_s", allow_zero=True)
    step = window_s if step_s is None else _positive(step_s, "step_s")
    if window_s > first_s + _EPS_S:
        raise ValueError(f"window_s: {window_s} is longer than first_s {first_s}")
    n_windows = int(math.floor((first_s - window_s) / step + 1e-9)) + 1
    b_cum = np.concatenate([[0.0], np.cumsum(bb)])
    buffering = max(_bytes_in(tt, b_cum, k * step, k * step + window_s) * 8.0 / window_s
                    for k in range(n_windows))
    end = float(tt[-1]) if end_s is None else _positive(end_s, "end_s")
    if end <= steady_from_s + _EPS_S:
        return buffering, float("nan"), float("nan")
    steady = average_bandwidth(packets, steady_from_s, end_s)
    ratio = buffering / steady if steady > 0 else float("nan")
    return buffering, steady, ratio


def buffering_rate(packets: pd.DataFrame, first_s: float = 80.0, window_s: float = 10.0,
                   steady_from_s: float = 100.0, step_s: float | None = None,
                   end_s: float | None = None) -> float:
    """Ratio of the buffering data rate to the steady playout rate (Section V-D, Figures 14, 15).

    Paper: "for each clip, we compute the maximum bandwidth averaged over 10 second intervals
    taken over the first 80 seconds (calling this the *buffering data rate*) and compared this to
    the average bandwidth over the time from 100 seconds until the clip ends (calling this the
    *steady playout rate*)".

    * Buffering data rate = max over windows ``[a, a + window_s)``, ``a = 0, step_s, 2 step_s, ...``
      with ``a + window_s <= first_s``, of 8 * bytes / window_s. By default ``step_s = window_s``:
      the 8 non-overlapping 10 s intervals [0,10), ..., [70,80) (the paper does not say whether
      its intervals slide; pass e.g. ``step_s=1`` for sliding windows, which can only give a
      value >= the default).
    * Steady playout rate = `average_bandwidth(packets, steady_from_s, end_s)`: from 100 s to the
      clip end (default: last arrival, closed window; see `average_bandwidth`).
    * **Streams that end at or before ``steady_from_s``** (last arrival, or ``end_s``, <= 100 s)
      have no steady playout period: the result is NaN (the paper leaves such clips undefined;
      its median clip is ~3 min but the shortest is 20 s, Figure 2). A zero steady rate (only
      possible with an explicit ``end_s``) also gives NaN.

    Returns the dimensionless ratio (1 = buffers at the playout rate).
    """
    return buffering_parts(packets, first_s, window_s, steady_from_s, step_s, end_s)[2]


# --------------------------------------------------------------------------------------------
# Section V-E: TCP-friendliness (equation (1), Table I)
# --------------------------------------------------------------------------------------------

def tcp_friendly_rate(packet_size_bytes: float, rtt_s: float, loss: float,
                      rto_s: float | None = None) -> float:
    """TCP-friendly rate T of equation (1), Section V-E (from Floyd and Fall [9]), in **bytes/s**:

        T <= 1.5 * sqrt(2/3) * s / (R * sqrt(p))

    with s the packet size in bytes, R the round-trip time in seconds and p the packet drop rate
    (fraction). The paper says "The TCP-Friendly rate, T Bps" -- bytes per second -- and uses
    s = 1500 bytes with R and p from the ping samples. 1.5 * sqrt(2/3) = sqrt(1.5) ~= 1.2247.
    Multiply by 8 for bits/s.

    Equation (1) has no retransmission-timeout term (it is not the Padhye et al. formula), so
    ``rto_s`` must be None; it exists only so that a caller expecting the Padhye signature gets
    a clear error instead of a silently different formula.

    p = 0 gives +inf (no loss, no bound); the paper drops such clips from the analysis (Section
    V-E: "approximately 40% of the clips ... had no measured loss, and so we remove them").
    """
    if rto_s is not None:
        raise ValueError("rto_s: equation (1) of the paper (Floyd-Fall) has no timeout term; "
                         "pass rto_s=None")
    s = _positive(packet_size_bytes, "packet_size_bytes")
    r = _positive(rtt_s, "rtt_s")
    p = _fraction(loss, "loss")
    if p == 0:
        return math.inf
    return EQ1_CONSTANT * s / (r * math.sqrt(p))


def is_tcp_friendly(measured_bps: float, rtt_s: float, loss: float,
                    packet_size: float = PAPER_PACKET_SIZE_BYTES) -> bool:
    """Whether a stream's average rate is TCP-friendly (Section V-E, Table I): its data rate
    "does not exceed the maximum arrival of a conformant TCP connection in the same
    circumstances", i.e. ``measured_bps <= 8 * tcp_friendly_rate(packet_size, rtt_s, loss)``.

    ``measured_bps`` is in bits/s (e.g. `average_bandwidth`), ``packet_size`` in bytes (the
    paper's 1500), ``rtt_s`` in seconds, ``loss`` a fraction. With loss = 0 the bound is infinite
    and the answer is True; the paper excludes loss-free clips from Table I instead (as
    `population_summary` does).
    """
    m = _positive(measured_bps, "measured_bps", allow_zero=True)
    return m <= 8.0 * tcp_friendly_rate(packet_size, rtt_s, loss)


# --------------------------------------------------------------------------------------------
# Section V-F: media scaling (Figures 16-20)
# --------------------------------------------------------------------------------------------

def _levels(levels: Any, name: str) -> np.ndarray:
    try:
        a = np.asarray(list(levels) if not isinstance(levels, (np.ndarray, pd.Series)) else levels,
                       dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a sequence of numeric encoding levels") from None
    if a.size == 0:
        raise ValueError(f"{name}: empty level sequence")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    if np.any(a < 0):
        raise ValueError(f"{name}: levels (encoded rates) must be >= 0")
    return a


def scale_changes(levels: Iterable[float]) -> int:
    """Number of media scale changes in a playout (Section III-C, Section V-F, Figure 19): the
    number of consecutive samples whose encoding level differs, ``sum(levels[i] != levels[i-1])``.

    ``levels`` is the time-ordered series of encoding levels as sampled by the application
    (RealTracer in the paper): encoded bandwidth in bits/s or a level index, either works. A
    return to an earlier level counts as a new change (A, B, A = 2 changes). One sample = 0.
    """
    a = _levels(levels, "levels")
    return int(np.count_nonzero(a[1:] != a[:-1]))


def scale_levels(levels: Iterable[float]) -> int:
    """Number of distinct encoded-bandwidth levels seen in a clip (Figure 16, Section V-F)."""
    return int(np.unique(_levels(levels, "levels")).size)


def time_to_adapt(level_rates_series: pd.Series | pd.DataFrame, bottleneck_bps: float) -> float:
    """Media scale adaptation time (Section V-F, Figure 20), in seconds.

    Paper: "we measure the time taken for the coded-bandwidth to drop under the inbound bandwidth
    limit, depicted as the first point under the 35 Kbps limit for each stream in Figure 18",
    "how quickly the video stream adapted to the available bandwidth after streaming started".

    Definition used: the clip-clock time (seconds since streaming started, t = 0) of the first
    sample whose encoded rate is strictly below ``bottleneck_bps``. Consequently a clip whose
    encoded rate is below the limit from its first sample (the paper's "low-quality" 15% that
    "always required less than 35 Kbps") gets the time of that first sample (0 if sampled at
    t = 0). A stream that never drops below the limit gets ``math.inf`` (not adapted within the
    observation; it sorts last in a CDF).

    ``level_rates_series``: a pandas Series of encoded rates in bits/s indexed by time in seconds,
    or a DataFrame with columns ``t_s`` and ``rate_bps``. Samples need not be sorted.
    """
    if isinstance(level_rates_series, pd.DataFrame):
        missing = [c for c in ("t_s", "rate_bps") if c not in level_rates_series.columns]
        if missing:
            raise ValueError(f"level_rates_series: missing column(s) {missing}")
        t = level_rates_series["t_s"].to_numpy(dtype=float)
        r = level_rates_series["rate_bps"].to_numpy(dtype=float)
    elif isinstance(level_rates_series, pd.Series):
        try:
            t = level_rates_series.index.to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise ValueError("level_rates_series: index must be numeric time in seconds") from None
        r = level_rates_series.to_numpy(dtype=float)
    else:
        raise ValueError("level_rates_series: expected a pandas Series indexed by time (s) or a "
                         "DataFrame with columns 't_s' and 'rate_bps'")
    if t.size == 0:
        raise ValueError("level_rates_series: empty")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(r))):
        raise ValueError("level_rates_series: contains NaN or infinite values")
    if np.any(t < 0):
        raise ValueError("level_rates_series: negative times; use seconds since streaming started")
    if np.any(r < 0):
        raise ValueError("level_rates_series: negative encoded rates")
    bn = _positive(bottleneck_bps, "bottleneck_bps")
    order = np.argsort(t, kind="stable")
    t, r = t[order], r[order]
    below = np.flatnonzero(r < bn)
    return float(t[below[0]]) if below.size else math.inf


# --------------------------------------------------------------------------------------------
# Section V-G: smoothness (Figure 21)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmoothnessResult:
    """Ratios of consecutive bin bandwidths and their summary.

    ratios: Series indexed by the start time (s) of the *later* bin of each pair.
    fraction_within: share of ratios in [band[0], band[1]] (inclusive); NaN if no ratio.
    cdf_x, cdf_p: empirical CDF points of the ratios (what Figure 21 plots).
    n_undefined: pairs skipped because the earlier bin carried no data (x / 0).
    """
    ratios: pd.Series
    fraction_within: float
    median: float
    band: tuple[float, float]
    n_undefined: int
    cdf_x: np.ndarray
    cdf_p: np.ndarray


def smoothness(packets: pd.DataFrame, bin_s: float = 0.5,
               band: tuple[float, float] = (0.9, 1.1)) -> SmoothnessResult:
    """Smoothness of the network data rate (Section V-G, Figure 21): "the ratio of consecutive
    bandwidths measured over 500 ms intervals" (200 then 400 Kbps gives 2; back to 200 gives 0.5).

    Bandwidths are `bandwidth_series(packets, bin_s)` restricted to the bins from the one holding
    the first arrival to the one holding the last (leading silence before the stream starts is
    not part of the playout). Ratio_k = B[k+1] / B[k]. Where B[k] = 0 the ratio is undefined and
    is skipped (counted in ``n_undefined``); B[k+1] = 0 after data gives ratio 0. The last bin is
    usually only partly covered by the stream, so the last ratio tends to be < 1.

    The paper only plots CDFs; ``fraction_within`` (share of ratios within ``band``, default
    [0.9, 1.1]) and ``median`` are this module's one-number summaries.
    """
    t, _ = _packets(packets, "packets")
    lo, hi = band
    if not (0 <= lo <= hi):
        raise ValueError(f"band: expected 0 <= low <= high, got {band}")
    bw = bandwidth_series(packets, bin_s)
    k0 = int(math.floor(t[0] / float(bin_s) + _EPS_S / float(bin_s)))
    v = bw.to_numpy()[k0:]
    idx = bw.index.to_numpy()[k0:]
    prev, nxt = v[:-1], v[1:]
    ok = prev > 0
    ratios = pd.Series(nxt[ok] / prev[ok], index=pd.Index(idx[1:][ok], name="t_s"), name="ratio")
    x, p = empirical_cdf(ratios.to_numpy())
    if len(ratios):
        frac = float(np.mean((ratios.to_numpy() >= lo) & (ratios.to_numpy() <= hi)))
        med = float(np.median(ratios.to_numpy()))
    else:
        frac = med = float("nan")
    return SmoothnessResult(ratios, frac, med, (float(lo), float(hi)), int(np.count_nonzero(~ok)),
                            x, p)


# --------------------------------------------------------------------------------------------
# combining
# --------------------------------------------------------------------------------------------

def empirical_cdf(values: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF points (sorted values, i/n for i = 1..n), NaN dropped; the form of
    Figures 2-5, 7, 9, 15, 16, 19-21. +inf values (e.g. never-adapted clips) sort last."""
    a = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    a = np.sort(a[~np.isnan(a)])
    p = np.arange(1, a.size + 1, dtype=float) / max(a.size, 1)
    return a, p


def _optional(value: Any, name: str, check) -> float:
    if value is None:
        return float("nan")
    try:
        if math.isnan(float(value)):
            return float("nan")
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or None, got {value!r}") from None
    return check(value, name)


def pair_summary(udp_packets: pd.DataFrame, tcp_packets: pd.DataFrame, bottleneck_bps: float,
                 rtt_s: float | None, loss: float | None,
                 packet_size_bytes: float = PAPER_PACKET_SIZE_BYTES,
                 smoothness_bin_s: float = 0.5) -> dict[str, Any]:
    """All per-pair quantities of Sections V-A..V-E and V-G for one head-to-head run.

    ``rtt_s`` (s) and ``loss`` (fraction) are the path's ping statistics for the run; pass None
    (or NaN) when unknown (the paper's ~30% of servers that did not answer ping), which makes the
    RTT/loss/TCP-friendly fields NaN/None. Rates are bits/s, averages over the whole clip
    (`average_bandwidth` with default window).

    Keys: bottleneck_bps, rtt_s, loss, udp_avg_bps, tcp_avg_bps, difference_bps (TCP - UDP,
    Figures 10-13), normalized_difference ((TCP - UDP) / bottleneck, Figure 9),
    udp_/tcp_buffering_bps, udp_/tcp_steady_bps, udp_/tcp_buffering_ratio (Section V-D; NaN for
    clips <= 100 s), tcp_friendly_Bps (equation (1), bytes/s), tcp_friendly_bps (x 8),
    tcp_friendly_evaluated (loss > 0 and RTT known, the paper's Table I population),
    udp_/tcp_tcp_friendly (bool, or None when not evaluated), udp_/tcp_smoothness_ratios
    (ndarray), udp_/tcp_smoothness_within (fraction in [0.9, 1.1]),
    udp_/tcp_duration_s (last arrival).
    """
    bn = _positive(bottleneck_bps, "bottleneck_bps")
    rtt = _optional(rtt_s, "rtt_s", lambda v, n: _positive(v, n))
    p = _optional(loss, "loss", _fraction)
    out: dict[str, Any] = {"bottleneck_bps": bn, "rtt_s": rtt, "loss": p}
    for name, pk in (("udp", udp_packets), ("tcp", tcp_packets)):
        t, _ = _packets(pk, f"{name}_packets")
        out[f"{name}_duration_s"] = float(t[-1])
        out[f"{name}_avg_bps"] = average_bandwidth(pk)
        buf, steady, ratio = buffering_parts(pk)
        out[f"{name}_buffering_bps"] = buf
        out[f"{name}_steady_bps"] = steady
        out[f"{name}_buffering_ratio"] = ratio
        sm = smoothness(pk, smoothness_bin_s)
        out[f"{name}_smoothness_ratios"] = sm.ratios.to_numpy()
        out[f"{name}_smoothness_within"] = sm.fraction_within
    out["difference_bps"] = out["tcp_avg_bps"] - out["udp_avg_bps"]
    out["normalized_difference"] = normalized_difference(out["udp_avg_bps"], out["tcp_avg_bps"], bn)
    evaluated = not math.isnan(rtt) and not math.isnan(p) and p > 0
    if not math.isnan(rtt) and not math.isnan(p):
        tf = tcp_friendly_rate(packet_size_bytes, rtt, p)
    else:
        tf = float("nan")
    out["tcp_friendly_Bps"] = tf
    out["tcp_friendly_bps"] = 8.0 * tf
    out["tcp_friendly_evaluated"] = evaluated
    for name in ("udp", "tcp"):
        out[f"{name}_tcp_friendly"] = (bool(out[f"{name}_avg_bps"] <= 8.0 * tf) if evaluated
                                       else None)
    return out


def _fit_or_none(x: np.ndarray, y: np.ndarray) -> LeastSquaresFit | None:
    ok = np.isfinite(x) & np.isfinite(y)
    try:
        return least_squares(x[ok], y[ok])
    except ValueError:
        return None


def _group_summary(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    def col(key: str) -> np.ndarray:
        return np.array([float(s[key]) for s in pairs], dtype=float)

    udp_avg, tcp_avg = col("udp_avg_bps"), col("tcp_avg_bps")
    diff, rtt, loss = col("difference_bps"), col("rtt_s"), col("loss")
    ev = [s for s in pairs if s["tcp_friendly_evaluated"]]
    n_ev = len(ev)
    un_udp = sum(1 for s in ev if s["udp_tcp_friendly"] is False)
    un_tcp = sum(1 for s in ev if s["tcp_tcp_friendly"] is False)
    no_loss = sum(1 for s in pairs if not math.isnan(s["loss"]) and s["loss"] == 0)
    out: dict[str, Any] = {
        "n_pairs": len(pairs),
        # Figure 7: CDFs of per-clip average bandwidth
        "avg_bandwidth_cdf": {"udp": empirical_cdf(udp_avg), "tcp": empirical_cdf(tcp_avg)},
        # Figure 8: scatter, x = TCP average, y = UDP average
        "scatter": pd.DataFrame({"tcp_avg_bps": tcp_avg, "udp_avg_bps": udp_avg}),
        # Figure 9: CDF of (TCP - UDP) / bottleneck
        "normalized_difference_cdf": empirical_cdf(col("normalized_difference")),
        # Figures 10-13: difference vs RTT / loss, with least-squares line and r (None if < 2
        # usable points or constant x)
        "difference_vs_rtt": pd.DataFrame({"rtt_s": rtt, "difference_bps": diff}),
        "difference_vs_loss": pd.DataFrame({"loss": loss, "difference_bps": diff}),
        "fit_difference_vs_rtt": _fit_or_none(rtt, diff),
        "fit_difference_vs_loss": _fit_or_none(loss, diff),
        # Figure 14: ratio vs steady playout rate; Figure 15: CDF of the ratio
        "buffering": pd.DataFrame({
            "transport": ["udp"] * len(pairs) + ["tcp"] * len(pairs),
            "steady_bps": np.concatenate([col("udp_steady_bps"), col("tcp_steady_bps")]),
            "ratio": np.concatenate([col("udp_buffering_ratio"), col("tcp_buffering_ratio")]),
        }),
        "buffering_ratio_cdf": {"udp": empirical_cdf(col("udp_buffering_ratio")),
                                "tcp": empirical_cdf(col("tcp_buffering_ratio"))},
        # Table I
        "table1": {
            "n_evaluated": n_ev,
            "n_excluded_no_loss": no_loss,
            "n_excluded_no_ping": sum(1 for s in pairs
                                      if math.isnan(s["rtt_s"]) or math.isnan(s["loss"])),
            "unfriendly_udp": un_udp,
            "unfriendly_tcp": un_tcp,
            "unfriendly_udp_pct": 100.0 * un_udp / n_ev if n_ev else float("nan"),
            "unfriendly_tcp_pct": 100.0 * un_tcp / n_ev if n_ev else float("nan"),
        },
    }
    # Figure 21: CDF of all consecutive-500 ms ratios pooled over the clips
    sm: dict[str, Any] = {}
    for name in ("udp", "tcp"):
        pooled = (np.concatenate([np.asarray(s[f"{name}_smoothness_ratios"], dtype=float)
                                  for s in pairs]) if pairs else np.array([]))
        sm[name] = {"cdf": empirical_cdf(pooled),
                    "fraction_within": (float(np.mean((pooled >= 0.9) & (pooled <= 1.1)))
                                        if pooled.size else float("nan"))}
    out["smoothness"] = sm
    return out


def population_summary(list_of_pair_summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Population views over many `pair_summary` dicts, overall (``"all"``) and per bottleneck
    bandwidth (``"by_bottleneck"``, keyed by bottleneck_bps, ascending), as the paper splits
    its figures per bottleneck (600/300/150/75 Kbps):

    * ``avg_bandwidth_cdf``           Figure 7 (per-clip average bandwidth CDFs, udp/tcp)
    * ``scatter``                     Figure 8 (x = TCP average, y = UDP average, bits/s)
    * ``normalized_difference_cdf``   Figure 9
    * ``difference_vs_rtt/loss`` and ``fit_difference_vs_rtt/loss``  Figures 10-13
      (LeastSquaresFit or None when fewer than 2 pairs have ping data or x is constant)
    * ``buffering``, ``buffering_ratio_cdf``  Figures 14, 15 (NaN ratios of short clips dropped
      from the CDF)
    * ``table1``  Table I: among pairs with RTT known and loss > 0 (``n_evaluated``), the number
      and percent whose UDP / TCP average exceeds the equation (1) rate; loss-free and
      ping-less pairs are excluded as in Section V-E and counted separately.
    * ``smoothness``  Figure 21: pooled CDF of 500 ms ratios per transport and the fraction within
      [0.9, 1.1].
    """
    pairs = list(list_of_pair_summaries)
    if not pairs:
        raise ValueError("list_of_pair_summaries: empty")
    needed = ("bottleneck_bps", "udp_avg_bps", "tcp_avg_bps", "normalized_difference",
              "tcp_friendly_evaluated")
    for i, s in enumerate(pairs):
        if not isinstance(s, dict) or any(k not in s for k in needed):
            raise ValueError(f"list_of_pair_summaries: item {i} is not a pair_summary dict")
    groups: dict[float, list[dict[str, Any]]] = {}
    for s in pairs:
        groups.setdefault(float(s["bottleneck_bps"]), []).append(s)
    return {"all": _group_summary(pairs),
            "by_bottleneck": {bw: _group_summary(groups[bw]) for bw in sorted(groups)}}
