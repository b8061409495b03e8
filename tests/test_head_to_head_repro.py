"""The head-to-head reproduction: the clip population, the runs, and the paper's findings over
several seeds (short clips: --quick's 140 s cap, 8 clips per seed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from aqmlab.analysis import head_to_head as h2h
from aqmlab.reproduce import head_to_head as m, parallel_map
from aqmlab.reproduce.head_to_head_model import LADDER_BPS, population
from conftest import aqmlab

SEEDS = (1, 2, 3)
CLIPS = 8


# ---- population and path model ------------------------------------------------------------

def test_population_is_deterministic_and_a_longer_list_extends_a_shorter_one():
    assert population(20, 5) == population(20, 5)
    assert population(30, 5)[:20] == population(20, 5)
    assert population(20, 5) != population(20, 6)


def test_population_follows_the_papers_figures_2_16_17():
    clips = population(3000, 1)
    n = np.array([len(c.levels_bps) for c in clips])
    assert np.mean(n == 1) == pytest.approx(0.35, abs=0.03)          # Figure 16: ~35 % cannot scale
    assert np.mean(n > 4) < 0.5                                       # "less than 50%" above 4 levels
    one = [c.levels_bps[0] for c in clips if len(c.levels_bps) == 1]
    assert np.mean(np.array(one) > 150_000) == pytest.approx(0.40, abs=0.05)  # Figure 17 text
    mid = [c for c in clips if 3 <= len(c.levels_bps) <= 5]
    assert np.mean([c.levels_bps[0] >= 50_000 for c in mid]) > 0.5   # "over 1/2" broadband only
    many = [c for c in clips if len(c.levels_bps) > 5]
    assert all(c.levels_bps[0] <= 34_000 for c in many)
    lengths = np.array([c.length_s for c in clips])
    assert np.median(lengths) == pytest.approx(180, rel=0.08)         # Figure 2: median ~3 min
    assert lengths.min() >= 20 and lengths.max() <= 1800
    for c in clips[:200]:
        i = LADDER_BPS.index(c.levels_bps[0])
        assert c.levels_bps == LADDER_BPS[i:i + len(c.levels_bps)]
    assert np.mean([c.path_loss == 0 for c in clips]) == pytest.approx(0.5, abs=0.03)


def test_a_run_gets_the_clip_and_the_bottleneck():
    clip = population(3, 1)[2]
    sc, _ = m.scenario_for(m.Job("pair", clip, 150_000, 1))
    assert sc.topology.bottleneck.qdisc.rate == 150_000
    assert [g.name for g in sc.flows] == ["udp", "tcp"]
    assert all(list(g.app.levels) == list(clip.levels_bps) for g in sc.flows)
    base_rtt_s = 2 * (sc.flows[0].sender_delay + sc.flows[0].receiver_delay) * 1e-9 + 0.002
    assert base_rtt_s == pytest.approx(max(clip.base_rtt_s, 0.0042), abs=1e-5)
    sc, _ = m.scenario_for(m.Job("scaling", clip, m.SCALING_BPS, 1, "tcp"))
    assert [g.name for g in sc.flows] == ["tcp"]
    assert sc.topology.bottleneck.qdisc.limit == {"bytes": 5000}


# ---- the findings, over several seeds -----------------------------------------------------

@pytest.fixture(scope="module")
def findings():
    results = []
    for seed in SEEDS:
        clips = population(CLIPS, seed)
        jobs = [j for j in m.jobs_for(clips, seed, m.QUICK_CLIP_CAP_S) if j.kind != "lan"]
        results += parallel_map(m.run_job, jobs, 2)
    pairs = [r["pair"] for r in results if r["kind"] == "pair"]
    return results, pairs, h2h.population_summary(pairs)


def _diffs(pairs, bw):
    return np.array([p["normalized_difference"] for p in pairs if p["bottleneck_bps"] == bw])


def test_at_600_kbps_the_pairs_share_about_equally(findings):
    _, pairs, _ = findings
    d = _diffs(pairs, 600_000)
    assert len(d) == CLIPS * len(SEEDS)
    assert abs(np.median(d)) < 0.05


def test_udp_gets_more_in_most_pairs_at_the_narrowest_bottleneck(findings):
    _, pairs, _ = findings
    udp_more = {bw: np.mean(_diffs(pairs, bw) < -m.EQUAL_SHARE_BAND) for bw in m.BOTTLENECKS_BPS}
    assert udp_more[75_000] > 0.5
    assert udp_more[75_000] > udp_more[600_000] + 0.15


@pytest.mark.xfail(strict=True, reason="model result: at 150 Kbps UDP gets more in fewer than half "
                                       "of the pairs (the paper: ~70 %); see docs/reproductions/head-to-head.md")
def test_udp_gets_more_in_most_pairs_at_every_narrowed_bottleneck(findings):
    _, pairs, _ = findings
    for bw in (300_000, 150_000, 75_000):
        assert np.mean(_diffs(pairs, bw) < -m.EQUAL_SHARE_BAND) > 0.5, bw


@pytest.mark.parametrize("bw", [300_000, 150_000])
def test_udp_playout_is_smoother_under_constrained_bandwidth(findings, bw):
    sm = findings[2]["by_bottleneck"][float(bw)]["smoothness"]
    assert sm["udp"]["fraction_within"] > sm["tcp"]["fraction_within"] + 0.05


@pytest.mark.xfail(strict=True, reason="model result: at 75 Kbps the UDP stream is less smooth "
                                       "than the TCP stream: for the 44 % of clips whose lowest level exceeds "
                                       "75 Kbps the token bucket is saturated and sends 4 or 5 of its 1000 B "
                                       "packets per 500 ms bin, ratios 0.8/1.25, outside the [0.9, 1.1] band; "
                                       "docs/reproductions/head-to-head.md")
def test_udp_playout_is_smoother_at_75_kbps(findings):
    sm = findings[2]["by_bottleneck"][75_000.0]["smoothness"]
    assert sm["udp"]["fraction_within"] > sm["tcp"]["fraction_within"]


@pytest.mark.xfail(strict=True, reason="model result: the TCP server's backlog check (every 5 s) "
                                       "scales down about as early as UDP's one-level-per-report steps")
def test_udp_adapts_to_the_bottleneck_faster_than_tcp(findings):
    results = findings[0]
    t = {tr: {r["clip"] * 100 + r["seed"]: r["time_to_adapt_s"] for r in results
              if r["kind"] == "scaling" and r["transport"] == tr} for tr in ("udp", "tcp")}
    both = [k for k in t["udp"] if np.isfinite(t["udp"][k]) and np.isfinite(t["tcp"][k])
            and t["udp"][k] > 0]
    assert len(both) >= 5
    assert np.median([t["udp"][k] for k in both]) < np.median([t["tcp"][k] for k in both])


def test_udp_changes_scale_more_often_than_tcp(findings):
    results = findings[0]
    changes = {tr: [r["scale_changes"] for r in results if r["kind"] == "scaling" and r["transport"] == tr]
               for tr in ("udp", "tcp")}
    assert np.mean(changes["udp"]) > 2 * np.mean(changes["tcp"])   # Figure 19: "UDP ... more scale changes"


def test_non_tcp_friendly_udp_streams_are_a_minority(findings):
    t = findings[2]["all"]["table1"]
    assert t["n_evaluated"] >= 40
    assert 0 < t["unfriendly_udp_pct"] < 50


@pytest.mark.xfail(strict=True, reason="model result: 24-30 % of the UDP streams are not TCP-friendly "
                                       "(the paper: 11 %)")
def test_about_one_in_ten_udp_streams_is_not_tcp_friendly(findings):
    t = findings[2]["all"]["table1"]
    assert 5 <= t["unfriendly_udp_pct"] <= 20


# ---- the command ----------------------------------------------------------------------------

def test_reproduce_quick_writes_every_table_and_figure(tmp_path):
    out = tmp_path / "h2h"
    r = aqmlab("reproduce", "head-to-head", "--quick", "--clips", "2", "--out", str(out), "--workers", "1")
    assert r.returncode == 0, r.stderr
    for name in m.TITLES:
        assert (out / "tables" / f"{name}.csv").exists() and (out / "tables" / f"{name}.md").exists()
    figs = {p.name for p in (out / "figures").iterdir()}
    assert {f"fig{n:02d}.png" for n in (2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)} <= figs
    assert "Table I" in (out / "report.md").read_text()
    assert len(json.loads((out / "clips.json").read_text())) == 2
    again = aqmlab("reproduce", "head-to-head", "--quick", "--clips", "2", "--out", str(out))
    assert again.returncode == 2 and "--force" in again.stderr


# ---- the paper's pings, from hand-made records -----------------------------------------------

def _tables(queue_bytes, arrivals, drops, base_rtt_ns=84_000_000):
    import pandas as pd

    q = pd.DataFrame({"t_ns": np.arange(len(queue_bytes)) * 10**8, "qlen_pkts": 0,
                      "qlen_bytes": queue_bytes, "avg": 0.0})
    ev = ["arrive"] * arrivals + ["drop"] * drops  # the packets table names its events
    pk = pd.DataFrame({"event": ev})
    flows = pd.DataFrame({"base_rtt_ns": [base_rtt_ns, base_rtt_ns]})
    return {"queue": q, "packets": pk, "flows": flows}


def test_ping_rtt_is_base_plus_the_mean_queueing_delay():
    clip = population(1, 1)[0]
    job = m.Job("pair", clip, 75_000, 1)
    # Half the time 10 KB queued, half empty: 5 KB mean = 533 ms at 75 Kbps.
    t = _tables([10_000, 0] * 50, arrivals=1000, drops=0)
    rtt, _ = m.ping_stats(t, job, end_s=10.0)
    assert rtt == pytest.approx(0.084 + 5_000 * 8 / 75_000)


def test_ping_loss_is_sampled_from_path_and_bottleneck_loss():
    import dataclasses

    clip = dataclasses.replace(population(1, 1)[0], path_loss=0.0)
    job = m.Job("pair", clip, 75_000, 1)
    assert m.ping_stats(_tables([0], 1000, 0), job, 600.0)[1] == 0.0
    # 10 % TBF drops and 10 % path loss: 19 % per ping; 6000 pings in 6000 s.
    lossy = m.Job("pair", dataclasses.replace(clip, path_loss=0.1), 75_000, 1)
    _, loss = m.ping_stats(_tables([0], 900, 100), lossy, 6000.0)
    assert loss == pytest.approx(0.19, abs=0.015)
    assert m.ping_stats(_tables([0], 900, 100), lossy, 6000.0)[1] == loss   # seeded
    # A short, low-loss run often measures no loss at all (the paper's unlucky sampling).
    few = m.Job("pair", dataclasses.replace(clip, path_loss=0.001), 600_000, 1)
    assert m.ping_stats(_tables([0], 1000, 0), few, 30.0)[1] in (0.0, 1 / 30)
