"""RED's `wait` option (ns-2's wait_, ns-3's RedQueueDisc Wait) reaches the simulated
discipline: with it, two early drops are never closer than 1/p_b arrivals (p_b <= max_p
outside the gentle region, so never closer than 1/max_p); without it they may follow each other."""

from __future__ import annotations

import numpy as np

from aqmlab.run import simulate
from aqmlab.scenario import validate
from conftest import small_scenario


def early_drop_gaps(wait: bool) -> np.ndarray:
    """Arrivals from one early drop to the next (the second included), skipping pairs with a
    forced drop between them (a forced drop restarts RED's count)."""
    s = small_scenario(duration="20s", metrics={"periods": [["0s", "20s"]]})
    s["topology"]["bottleneck"]["qdisc"].update(gentle=False, max_p=0.1, wait=wait)
    p = simulate(validate(s), progress=False).tables["packets"]
    p = p[p["event"].isin(["arrive", "drop"])]
    gaps, since, armed = [], 0, False
    for event, reason in zip(p["event"].astype(str), p["reason"].astype(str), strict=True):
        if event == "arrive":
            since += 1
        elif reason == "forced":
            armed = False
        elif reason == "early":
            if armed:
                gaps.append(since)
            since, armed = 0, True
    return np.array(gaps)


def test_wait_keeps_early_drops_at_least_one_over_max_p_apart():
    with_wait, without = early_drop_gaps(True), early_drop_gaps(False)
    assert len(with_wait) > 50 and len(without) > 50
    assert with_wait.min() >= 10, with_wait.min()
    assert without.min() < 10, without.min()
