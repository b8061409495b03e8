"""Partitioned Enhancement Layer Streaming (PELS): closed-form models.

S. Kang, Y. Zhang, M. Dai, D. Loguinov, "Multi-layer Active Queue Management and Congestion
Control for Scalable Video Streaming", ICDCS 2004.

* Section 3.1: under independent Bernoulli packet loss p, the useful part of an MPEG-4 FGS
  enhancement frame is the run of packets received before the first loss. Its mean is eq. (1) for
  any frame-size PMF and eq. (2) for frames of H packets; the utility (useful / received) is
  eq. (3). Table 1 and Figure 2 come from these.
* Section 4.3: PELS marks the top gamma of each frame red; the gamma controller (4), or (5) with
  feedback delay, drives the red loss p/gamma to p_thr, stable iff 0 < sigma < 2 (Lemmas 2, 3).
  Eq. (6) lower-bounds the resulting utility. Figure 5 shows gamma(k).
* Section 5.1: Max-min Kelly Control (MKC), eq. (8), with the router loss (9), stable iff
  0 < beta < 2 (Lemma 5), with stationary rate (10) C/N + alpha/beta (Lemma 6).

Frame-size PMFs are given either as a sequence ``pmf`` with ``pmf[k-1] = P(H = k)`` for
k = 1, 2, ... or as a mapping ``{k: P(H = k)}``. Packet counts are in packets; MKC rates are in
any rate unit used consistently (the paper's examples use kb/s), with alpha in that unit per
control step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

PmfLike = Sequence[float] | np.ndarray | Mapping[int, float]

TABLE1_H = 100
"""Frame size (packets) of Table 1."""
TABLE1_LOSSES = (0.0001, 0.01, 0.1)
"""Loss rates of Table 1."""
PUBLISHED_TABLE1_SIMULATION = (99.49, 62.78, 8.99)
"""Table 1 as printed in the paper, column "Simulations" (typed in; published values, not
computed)."""
PUBLISHED_TABLE1_MODEL = (99.49, 62.76, 8.99)
"""Table 1 as printed in the paper, column "Model (2)" (typed in; published values, not
computed). The printed numbers are the model truncated, not rounded, to two decimals."""

FIGURE2_LOSS = 0.1
"""Loss rate of Figure 2."""
FIGURE5_LOSS = 0.5
"""Loss rate of Figure 5 (the heavy-loss example of Sec. 4.3)."""
FIGURE5_P_THR = 0.75
"""Red-loss threshold of Figure 5."""
FIGURE5_SIGMAS = (0.5, 3.0)
"""Gains named in the text for Figure 5: stable at 0.5, unstable at 3."""
INITIAL_GAMMA = 0.5
"""Initial gamma of the ns2 runs (Sec. 6.2), also used for Figure 5."""


# ----------------------------------------------------------------------------------------------
# Section 3.1: useful packets and utility under Bernoulli loss


def fixed_size_pmf(frame_size: int) -> np.ndarray:
    """PMF of frames that all have ``frame_size`` packets (the model of eq. 2)."""
    if frame_size < 1:
        raise ValueError("frame_size must be at least 1 packet")
    pmf = np.zeros(frame_size)
    pmf[-1] = 1.0
    return pmf


def _pmf(pmf: PmfLike) -> tuple[np.ndarray, np.ndarray]:
    """(sizes k >= 1, probabilities q_k) of a frame-size PMF, validated."""
    if isinstance(pmf, Mapping):
        sizes = np.array(sorted(pmf), dtype=float)
        probs = np.array([pmf[k] for k in sorted(pmf)], dtype=float)
    else:
        probs = np.asarray(pmf, dtype=float)
        sizes = np.arange(1, probs.size + 1, dtype=float)
    if probs.size == 0 or np.any(probs < 0) or np.any(sizes < 1) or np.any(sizes != np.floor(sizes)):
        raise ValueError("a frame-size PMF needs non-negative probabilities on sizes 1, 2, ...")
    if abs(probs.sum() - 1.0) > 1e-9:
        raise ValueError(f"frame-size probabilities sum to {probs.sum()}, not 1")
    return sizes, probs


def _check_loss(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError("packet loss p must be in [0, 1]")


def _received_prefix_probability(p: float, sizes: np.ndarray) -> np.ndarray:
    """1 - (1-p)^k, computed without cancellation for small p."""
    if p == 1.0:
        return np.ones_like(sizes)
    return -np.expm1(sizes * np.log1p(-p))


def expected_useful_packets(p: float, pmf: PmfLike) -> float:
    """E[Y], eq. (1) (Lemma 1): mean number of packets of an FGS frame received before its first
    loss, with independent Bernoulli loss p and frame sizes drawn from ``pmf``:
    (1-p)/p * sum_k (1 - (1-p)^k) q_k. At p = 0 this is the limit E[H]."""
    _check_loss(p)
    sizes, probs = _pmf(pmf)
    if p == 0.0:
        return float(np.dot(sizes, probs))
    return float((1.0 - p) / p * np.dot(_received_prefix_probability(p, sizes), probs))


def expected_useful_packets_fixed(p: float, frame_size: int) -> float:
    """E[Y] for frames of H packets, eq. (2): (1-p)/p * (1 - (1-p)^H)."""
    return expected_useful_packets(p, fixed_size_pmf(frame_size))


def optimal_useful_packets(p: float, frame_size: float) -> float:
    """H(1-p): useful packets when every received packet is usable (the "optimal" curve of
    Fig. 2 left, Sec. 3.2)."""
    _check_loss(p)
    return frame_size * (1.0 - p)


def utility(p: float, pmf: PmfLike) -> float:
    """U = E[Y] / (E[H](1-p)), eq. (3): useful packets over received packets, with E[Y] from
    eq. (1). (Eq. 3 is written for fixed H; for a PMF the received count is E[H](1-p).)"""
    _check_loss(p)
    if p == 1.0:
        raise ValueError("utility is undefined when nothing is received (p = 1)")
    sizes, probs = _pmf(pmf)
    return expected_useful_packets(p, pmf) / (float(np.dot(sizes, probs)) * (1.0 - p))


def utility_fixed(p: float, frame_size: int) -> float:
    """U for frames of H packets, eq. (3): (1 - (1-p)^H) / (H p); 1 at p = 0."""
    return utility(p, fixed_size_pmf(frame_size))


def useful_packets_variance(p: float, pmf: PmfLike) -> float:
    """Var[Y] of the useful-packet count (for Monte-Carlo error bars; not in the paper).

    Given H = k, Y = min(G - 1, k) with G geometric, P(Y >= y) = (1-p)^y for 1 <= y <= k, so
    E[Y^2] = sum_y (2y - 1)(1-p)^y; mixed over the PMF."""
    _check_loss(p)
    sizes, probs = _pmf(pmf)
    y = np.arange(1, int(sizes.max()) + 1, dtype=float)
    tail = (1.0 - p) ** y  # P(Y >= y | H >= y)
    cum1, cum2 = np.cumsum(tail), np.cumsum((2 * y - 1) * tail)
    idx = sizes.astype(int) - 1
    mean = float(np.dot(cum1[idx], probs))
    return float(np.dot(cum2[idx], probs)) - mean**2


def simulate_useful_packets(
    p: float | Sequence[float],
    pmf: PmfLike,
    trials: int,
    rng: np.random.Generator,
    *,
    chunk: int = 50_000,
) -> tuple[np.ndarray, np.ndarray]:
    """Monte-Carlo estimate of E[Y] by simulating the loss of every packet.

    For each of ``trials`` frames a size is drawn from ``pmf`` and each packet is lost
    independently with probability p (a uniform draw below p); Y is the number of packets before
    the first loss (the whole frame if none is lost). Several loss rates share the same uniforms
    (common random numbers), so each estimate is still exact in distribution. Returns (mean,
    standard error) arrays, one entry per loss rate."""
    losses = np.atleast_1d(np.asarray(p, dtype=float))
    for q in losses:
        _check_loss(q)
    if trials < 2:
        raise ValueError("trials must be at least 2")
    sizes, probs = _pmf(pmf)
    width = int(sizes.max())
    total, total_sq = np.zeros(losses.size), np.zeros(losses.size)
    done = 0
    while done < trials:
        n = min(chunk, trials - done)
        beyond = None  # packets past the end of a shorter frame stop the count like a loss
        if sizes.size > 1:
            frame = rng.choice(sizes, size=n, p=probs).astype(int)
            beyond = np.arange(width) >= frame[:, None]
        u = rng.random((n, width))
        rows = np.arange(n)
        for i, q in enumerate(losses):
            lost = u < q if beyond is None else (u < q) | beyond
            first = lost.argmax(axis=1)  # 0 also when nothing is lost
            y = np.where(lost[rows, first], first, width).astype(float)
            total[i] += y.sum()
            total_sq[i] += np.dot(y, y)
        done += n
    mean = total / trials
    var = (total_sq - trials * mean**2) / (trials - 1)
    return mean, np.sqrt(np.maximum(var, 0.0) / trials)


def table1(seed: int = 2004, trials: int = 1_000_000) -> pd.DataFrame:
    """Table 1: expected useful packets per frame for H = 100 at p = 0.0001, 0.01, 0.1.

    Columns: H, p, published_simulation and published_model (typed in from the paper), model
    (eq. 2, computed), monte_carlo and monte_carlo_se (computed by
    :func:`simulate_useful_packets` with ``np.random.default_rng(seed)``), model_sd (exact
    standard deviation of Y). The default 10^6 frames give a standard error of 36.1/1000 = 0.036
    packets at p = 0.01 (the worst case; 0.006 and 0.009 at the others), so a 0.2 tolerance is
    more than 5 standard errors."""
    rng = np.random.default_rng(seed)
    pmf = fixed_size_pmf(TABLE1_H)
    mc, se = simulate_useful_packets(TABLE1_LOSSES, pmf, trials, rng)
    return pd.DataFrame({
        "H": TABLE1_H,
        "p": TABLE1_LOSSES,
        "published_simulation": PUBLISHED_TABLE1_SIMULATION,
        "published_model": PUBLISHED_TABLE1_MODEL,
        "model": [expected_useful_packets(q, pmf) for q in TABLE1_LOSSES],
        "monte_carlo": mc,
        "monte_carlo_se": se,
        "model_sd": [np.sqrt(useful_packets_variance(q, pmf)) for q in TABLE1_LOSSES],
    })


# ----------------------------------------------------------------------------------------------
# Section 4.3: red packets, the gamma controller and the utility bound


def red_loss(p: float, gamma: float) -> float:
    """p_R = p/gamma (Sec. 4.3): loss among red packets when all loss p falls on the red top
    gamma of each frame."""
    if gamma <= 0:
        raise ValueError("gamma must be positive")
    return p / gamma


def stationary_gamma(p: float, p_thr: float) -> float:
    """gamma* = p/p_thr, the fixed point of (4)-(5), at which the red loss equals p_thr (Lemma 4)."""
    if not 0 < p_thr <= 1:
        raise ValueError("p_thr must be in (0, 1]")
    return p / p_thr


def pels_utility_lower_bound(p: float, p_thr: float) -> float:
    """Eq. (6): U >= H(1-gamma) / (H(1-p)) = (1 - p/p_thr)/(1 - p) at gamma = p/p_thr, counting
    only yellow packets as useful. Requires p < p_thr (else no yellow packet is protected)."""
    _check_loss(p)
    if not 0 <= p < p_thr <= 1:
        raise ValueError("eq. (6) needs 0 <= p < p_thr <= 1")
    return (1.0 - stationary_gamma(p, p_thr)) / (1.0 - p)


def gamma_step(gamma_prev: float, p_prev: float, sigma: float, p_thr: float) -> float:
    """One step of the gamma controller, eq. (4) (and (5) with the delayed values):
    gamma(k) = gamma(k-1) + sigma (p(k-1)/p_thr - gamma(k-1))."""
    return gamma_prev + sigma * (p_prev / p_thr - gamma_prev)


def gamma_trajectory(
    p: float | Sequence[float],
    sigma: float,
    p_thr: float,
    steps: int,
    *,
    gamma0: float = INITIAL_GAMMA,
    delay: int = 1,
    bounds: tuple[float, float] | None = None,
) -> np.ndarray:
    """gamma(0..steps) under eq. (4) (delay = 1) or eq. (5) (delay = D >= 1):
    gamma(k) = gamma(k-D) + sigma (p(k-D)/p_thr - gamma(k-D)), with gamma(k) = gamma0 and
    p(k) = p(0) for k <= 0.

    ``p`` is the measured loss: a constant, or p[j] = loss measured in interval j (used for
    gamma(j + D); the last value holds beyond the end). ``bounds`` optionally clips gamma to
    [lo, hi] (e.g. gamma_low = 0.05 and 1 as in the ns2 runs of Sec. 6.2); the model itself is
    unclipped."""
    if delay < 1 or steps < 0:
        raise ValueError("delay must be >= 1 and steps >= 0")
    losses = np.atleast_1d(np.asarray(p, dtype=float))
    gamma = np.empty(steps + 1)
    gamma[0] = gamma0
    for k in range(1, steps + 1):
        j = max(k - delay, 0)
        g = gamma_step(gamma[j], losses[min(j, losses.size - 1)], sigma, p_thr)
        gamma[k] = np.clip(g, *bounds) if bounds else g
    return gamma


def gamma_controller_pole(sigma: float) -> float:
    """1 - sigma: with constant loss, gamma(k) - gamma* = (1 - sigma)(gamma(k-1) - gamma*) in (4),
    and in (5) along each of the D interleaved sub-sequences."""
    return 1.0 - sigma


def gamma_controller_stable(sigma: float) -> bool:
    """Lemma 2 (and Lemma 3 for any delay): controllers (4)/(5) are stable iff 0 < sigma < 2,
    i.e. iff |1 - sigma| < 1."""
    return bool(0.0 < sigma < 2.0)


# ----------------------------------------------------------------------------------------------
# Section 5.1: MKC congestion control


def router_loss(total_rate: float | np.ndarray, capacity: float) -> float | np.ndarray:
    """Eq. (9): p_l = (sum of arriving rates - C_l) / (sum of arriving rates). Negative when the
    link is under-used, which makes (8) increase the rates."""
    return (total_rate - capacity) / total_rate


def mkc_step(rate_prev: float | np.ndarray, loss: float, alpha: float, beta: float) -> float | np.ndarray:
    """Eq. (8): r_i(k) = r_i(k - D_i) + alpha - beta r_i(k - D_i) p_l(k - D_i<-)."""
    return rate_prev + alpha - beta * rate_prev * loss


def mkc_simulate(
    initial_rates: Sequence[float],
    capacity: float,
    alpha: float,
    beta: float,
    steps: int,
    *,
    forward_delays: Sequence[int] | int = 0,
    backward_delays: Sequence[int] | int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Iterates MKC, eqs. (8)-(9), for flows sharing one bottleneck of capacity C.

    Flow i reaches the router D_i-> steps after sending and hears the loss D_i<- steps later, with
    round trip D_i = D_i-> + D_i<- >= 1: r_i(k) = r_i(k-D_i) + alpha - beta r_i(k-D_i) p(k-D_i<-),
    p(k) = (sum_j r_j(k-D_j->) - C) / sum_j r_j(k-D_j->). Before step 0 everything holds its
    step-0 value. Returns (rates of shape (steps+1, N), loss of shape (steps+1,))."""
    r0 = np.asarray(initial_rates, dtype=float)
    n = r0.size
    fwd = np.broadcast_to(np.asarray(forward_delays, dtype=int), (n,))
    bwd = np.broadcast_to(np.asarray(backward_delays, dtype=int), (n,))
    if np.any(fwd < 0) or np.any(bwd < 0) or np.any(fwd + bwd < 1):
        raise ValueError("delays must be >= 0 with round trips of at least one step")
    rtt = fwd + bwd
    rates = np.empty((steps + 1, n))
    loss = np.empty(steps + 1)
    rates[0] = r0
    cols = np.arange(n)
    loss[0] = router_loss(r0.sum(), capacity)
    # flows with D_i<- = 0 hear p(k) in step k, so they update after the router; the router
    # only needs rates of flows with D_j-> = 0 from step k, and those have D_j<- >= 1
    early, late = cols[bwd >= 1], cols[bwd == 0]

    def update(k: int, i: np.ndarray) -> None:
        past = np.maximum(k - rtt[i], 0)
        rates[k, i] = mkc_step(rates[past, i], loss[np.maximum(k - bwd[i], 0)], alpha, beta)

    with np.errstate(all="ignore"):  # unstable gains overflow on purpose
        for k in range(1, steps + 1):
            update(k, early)
            loss[k] = router_loss(rates[np.maximum(k - fwd, 0), cols].sum(), capacity)
            update(k, late)
    return rates, loss


def mkc_stationary_rate(capacity: float, n_flows: int, alpha: float, beta: float) -> float:
    """Eq. (10) (Lemma 6): r* = C/N + alpha/beta, whatever the delays."""
    if n_flows < 1 or beta == 0:
        raise ValueError("need at least one flow and beta != 0")
    return capacity / n_flows + alpha / beta


def mkc_stationary_loss(capacity: float, n_flows: int, alpha: float, beta: float) -> float:
    """p* = alpha/(beta r*): the loss (9) at the stationary point (10), from r = r + alpha - beta r p."""
    return alpha / (beta * mkc_stationary_rate(capacity, n_flows, alpha, beta))


def mkc_stable(beta: float) -> bool:
    """Lemma 5: system (8)-(9) is stable under heterogeneous delays iff 0 < beta < 2.

    The "iff" holds over all delays: with equal delays the total rate obeys
    S(k) = (1 - beta) S(k-D) + N alpha + beta C, which diverges for beta > 2, while some
    heterogeneous delays still converge for beta a little above 2."""
    return bool(0.0 < beta < 2.0)


# ----------------------------------------------------------------------------------------------
# Figures 2 and 5


def figure2(p: float = FIGURE2_LOSS, frame_sizes: Sequence[int] | None = None) -> pd.DataFrame:
    """Figure 2 at loss p (0.1 in the paper) against the frame size H (1..100 packets by
    default; the paper's x-range is not stated in the text).

    Left panel: useful packets per frame, best effort (eq. 2) and optimal H(1-p); right panel:
    utility, best effort (eq. 3) and optimal (1). Columns: H, p, useful_best_effort,
    useful_optimal, useful_limit ((1-p)/p, the large-H limit of eq. 2), utility_best_effort,
    utility_optimal."""
    sizes = np.arange(1, 101) if frame_sizes is None else np.asarray(frame_sizes, dtype=int)
    return pd.DataFrame({
        "H": sizes,
        "p": p,
        "useful_best_effort": [expected_useful_packets_fixed(p, int(h)) for h in sizes],
        "useful_optimal": [optimal_useful_packets(p, float(h)) for h in sizes],
        "useful_limit": (1.0 - p) / p,
        "utility_best_effort": [utility_fixed(p, int(h)) for h in sizes],
        "utility_optimal": 1.0,
    })


def figure5(
    sigmas: Sequence[float] = FIGURE5_SIGMAS,
    p: float = FIGURE5_LOSS,
    p_thr: float = FIGURE5_P_THR,
    steps: int = 12,
    gamma0: float = INITIAL_GAMMA,
) -> pd.DataFrame:
    """Figure 5: gamma(k) of controller (4) with constant loss p = 0.5 and p_thr = 0.75 for
    several gains sigma. Long format, columns: k, sigma, gamma, gamma_star (= p/p_thr),
    stable (Lemma 2)."""
    frames = [
        pd.DataFrame({
            "k": np.arange(steps + 1),
            "sigma": s,
            "gamma": gamma_trajectory(p, s, p_thr, steps, gamma0=gamma0),
            "gamma_star": stationary_gamma(p, p_thr),
            "stable": gamma_controller_stable(s),
        })
        for s in sigmas
    ]
    return pd.concat(frames, ignore_index=True)


def _figure(ncols: int = 1, width: float = 5.5, height: float = 3.8):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return path


def plot_figure2(df: pd.DataFrame, path: str | Path) -> Path:
    """Draws :func:`figure2` data as in the paper: useful packets per frame against H (left) and
    utility against H (right), best effort and optimal."""
    fig, (left, right) = _figure(ncols=2, width=9.0, height=3.6)
    p = float(df["p"].iloc[0])
    left.plot(df["H"], df["useful_optimal"], color="C0", lw=1.6, label="optimal")
    left.plot(df["H"], df["useful_best_effort"], color="C3", lw=1.6, label="best-effort")
    left.set_ylabel("useful packets per frame")
    right.plot(df["H"], df["utility_optimal"], color="C0", lw=1.6, label="optimal")
    right.plot(df["H"], df["utility_best_effort"], color="C3", lw=1.6, label="best-effort")
    right.set_ylabel("utility")
    right.set_ylim(0, 1.05)
    for ax in (left, right):
        ax.set_xlabel("frame size H (packets)")
        ax.set_title(f"p = {p:g}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_figure5(df: pd.DataFrame, path: str | Path, *, y_range: tuple[float, float] = (-0.5, 2.0)) -> Path:
    """Draws :func:`figure5` data as in the paper: gamma(k) against k, one curve per sigma, and
    gamma* dotted. Unstable curves leave ``y_range`` and are cut by the axis."""
    fig, (ax,) = _figure()
    for i, (sigma, g) in enumerate(df.groupby("sigma", sort=True)):
        ax.plot(g["k"], g["gamma"], color=f"C{i}", marker="o", ms=3, lw=1.2, label=f"sigma = {sigma:g}")
    ax.axhline(float(df["gamma_star"].iloc[0]), color="0.3", ls=":", lw=1.0, label="gamma* = p/p_thr")
    ax.set_ylim(*y_range)
    ax.set_xlabel("step k")
    ax.set_ylabel("gamma(k)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
