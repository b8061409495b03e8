"""The clip population and Internet path model of the head-to-head reproduction (Chung, Zhu,
Claypool, "FairPlayer or FoulPlayer?", WPI-CS-TR-02-17, 2002).

The paper's playlist was 79 RealVideo clips found through search engines; it publishes only CDFs
and text about them. Everything below follows that text; where the text is silent the value is
our choice, marked "choice" and listed in docs/reproductions/head-to-head.md. Draws come from a
numpy Generator seeded by the reproduction seed, so the same seed gives the same population.

* **Clip length** (Figure 2): "The median clip was about 3 minutes, while the shortest and
  longest clip played out at 20 seconds and 30 minutes": log-normal with median 180 s, clipped to
  [20 s, 30 min]; sigma 0.8 (choice: puts about 10 % of clips above 8 minutes).
* **Number of levels** (Figure 16): "About 35% of the clips were not using media scaling at all"
  and "Less than 50% of the clips were using more than 4 levels": P(1) = 0.35, P(2..4) = 0.25
  spread evenly, P(5..8) = 0.40 spread evenly (choice within those bounds).
* **Level rates** (Figure 17): the SureStream target-audience ladder of RealProducer 8 (20, 34,
  45, 80, 150, 220, 300, 450 Kbps: 28k and 56k modems, single and dual ISDN, corporate LAN, 256k,
  384k and 512k DSL) -- choice: the paper shows the rates only as a figure. A clip's levels are a
  contiguous run of that ladder. One-level clips: "40% were high-quality video clips that
  required more than 150 Kbps" (so 40 % draw from 220-450, the others from 20-150). Clips with
  3 to 5 levels: "over 1/2 ... could not adapt to bandwidths below 50 Kbps" (55 % start at 80
  Kbps or above, choice of 55). Clips with more than 5 levels "were designed to adapt more
  readily to low bandwidth conditions" (they start at 20 or 34 Kbps). Two-level clips start
  anywhere (choice).
* **Path** (Figures 3, 4): base RTT of the Internet path log-normal, median 80 ms, sigma 0.6,
  clipped to [20 ms, 500 ms] (choice: the figure's values are lost; 76 % of the servers were in
  North America, the clients in Massachusetts). Random loss: "About 37% of the clips played with
  low bottleneck bandwidths had no loss, while about 50% of the clips played at higher bottleneck
  bandwidths had no loss"; the bottleneck adds its own drops, so the Internet part is loss-free
  for 50 % of the paths and otherwise log-uniform on [0.05 %, 2 %] (choice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: RealProducer 8 SureStream target rates, bits/s (choice, see the module docstring).
LADDER_BPS = (20_000, 34_000, 45_000, 80_000, 150_000, 220_000, 300_000, 450_000)
#: Figure 16: P(number of levels = k), k = 1..8.
LEVEL_COUNT_P = (0.35, 0.25 / 3, 0.25 / 3, 0.25 / 3, 0.10, 0.10, 0.10, 0.10)
MEDIAN_CLIP_S, CLIP_SIGMA, CLIP_RANGE_S = 180.0, 0.8, (20.0, 1800.0)
MEDIAN_RTT_S, RTT_SIGMA, RTT_RANGE_S = 0.080, 0.6, (0.020, 0.500)
LOSS_FREE_SHARE, LOSS_RANGE = 0.5, (0.0005, 0.02)
#: One-level clips above 150 Kbps (Figure 17 text).
HIGH_QUALITY_SHARE = 0.40
#: Clips with 3-5 levels that cannot go below 50 Kbps (Figure 17 text: "over 1/2").
BROADBAND_SHARE = 0.55


@dataclass(frozen=True)
class Clip:
    """One clip of the playlist and the Internet path to its server."""
    clip_id: int
    length_s: float
    levels_bps: tuple[int, ...]
    base_rtt_s: float
    path_loss: float


def _level_run(rng: np.random.Generator, k: int) -> tuple[int, ...]:
    """k contiguous rungs of the ladder, placed as the Figure 17 text says."""
    n = len(LADDER_BPS)
    if k == 1:
        high = rng.random() < HIGH_QUALITY_SHARE
        pool = [i for i, r in enumerate(LADDER_BPS) if (r > 150_000) == high]
        start = int(rng.choice(pool))
    elif k > 5:
        start = int(rng.integers(0, min(2, n - k + 1)))
    elif k >= 3:
        broadband = [s for s in range(n - k + 1) if LADDER_BPS[s] >= 50_000]
        low = [s for s in range(n - k + 1) if LADDER_BPS[s] < 50_000]
        start = int(rng.choice(broadband if rng.random() < BROADBAND_SHARE else low))
    else:
        start = int(rng.integers(0, n - k + 1))
    return LADDER_BPS[start:start + k]


def _clipped_lognormal(rng: np.random.Generator, median: float, sigma: float, lo: float, hi: float) -> float:
    return float(np.clip(median * np.exp(sigma * rng.standard_normal()), lo, hi))


def population(n: int, seed: int) -> list[Clip]:
    """The first `n` clips of the population for `seed` (the same seed always gives the same
    clips, and a longer list starts with the shorter one)."""
    if n < 1:
        raise ValueError(f"clips: need at least 1, got {n}")
    rng = np.random.default_rng([seed, 2002])
    clips = []
    for i in range(n):
        k = int(rng.choice(np.arange(1, 9), p=LEVEL_COUNT_P))
        levels = _level_run(rng, k)
        length = _clipped_lognormal(rng, MEDIAN_CLIP_S, CLIP_SIGMA, *CLIP_RANGE_S)
        rtt = _clipped_lognormal(rng, MEDIAN_RTT_S, RTT_SIGMA, *RTT_RANGE_S)
        loss_free = rng.random() < LOSS_FREE_SHARE
        lo, hi = np.log(LOSS_RANGE[0]), np.log(LOSS_RANGE[1])
        loss = 0.0 if loss_free else float(np.exp(rng.uniform(lo, hi)))
        clips.append(Clip(i, round(length, 1), levels, round(rtt, 4), round(loss, 5)))
    return clips
