"""The Rb-RIO paper's mechanisms over 5 seeds (issue: claims, not exact numbers), and the
one-command reproduction in its quick form.

Where the issue's wording and the paper disagree we test the paper: its Table 1 gives
Drop-Tail more decodable frames (7620) than Rb-RIO (7211); what Rb-RIO improves is how many
received frames decode and RED's poor goodput, so that is what is asserted.
"""

from __future__ import annotations

import pytest

from aqmlab.reproduce import parallel_map
from aqmlab.reproduce.rb_rio import Job, mean_of, run_job
from conftest import aqmlab

SEEDS = (1, 2, 3, 4, 5)


@pytest.fixture(scope="module")
def results():
    jobs = [Job(e, d, s) for s in SEEDS for e, ds in (("mpeg", ("droptail", "red", "rb-rio")),
                                                      ("mixed", ("droptail", "red", "rb-rio")),
                                                      ("tcp", ("red", "rb-rio"))) for d in ds]
    return parallel_map(run_job, jobs)


def pick(results, experiment, discipline, seed):
    return next(r for r in results if (r["experiment"], r["discipline"], r["seed"]) == (experiment, discipline, seed))


@pytest.mark.parametrize("seed", SEEDS)
def test_responsive_video_decodes_best_under_rb_rio(results, seed):
    t1 = {d: pick(results, "mpeg", d, seed)["video"]["table1"] for d in ("droptail", "red", "rb-rio")}
    rb = t1["rb-rio"]
    assert rb["frames_decodable"] > t1["red"]["frames_decodable"]
    # Almost every received frame decodes under Rb-RIO (paper: 36.9 % frame loss, 39.8 % decodable loss).
    assert rb["decodable_loss_pct"] - rb["frame_loss_pct"] < 5.0
    ratio = {d: s["frames_decodable"] / s["frames_received"] for d, s in t1.items()}
    assert ratio["rb-rio"] > ratio["droptail"] + 0.05 and ratio["rb-rio"] > ratio["red"] + 0.05, ratio


@pytest.mark.parametrize("seed", SEEDS)
def test_unresponsive_video_gets_less_bandwidth_under_rb_rio(results, seed):
    bw = {d: pick(results, "mpeg", d, seed)["video"]["table2"]["throughput_mbps"]
          for d in ("droptail", "red", "rb-rio")}
    assert bw["rb-rio"] < 0.85 * bw["droptail"] and bw["rb-rio"] < 0.85 * bw["red"], bw


@pytest.mark.parametrize("seed", SEEDS)
def test_tcp_gets_more_bandwidth_under_rb_rio_when_unresponsive_video_arrives(results, seed):
    rs = [pick(results, "mixed", d, seed) for d in ("droptail", "rb-rio")]
    tcp = {r["discipline"]: mean_of([r], "mixed", r["discipline"], "tcp", 10) for r in rs}
    assert tcp["rb-rio"] > 1.2 * tcp["droptail"], tcp


def test_tcp_only_rb_rio_is_comparable_to_red(results):
    # Paper: "Rb-RIO has performance comparable with well-configured RED for a TCP-only
    # workload" (Figure 5: utilization within 0.1 Mbit/s, drop rates within 0.2 points).
    # Over 5 seeds we allow 3 % of utilization and 1 percentage point of drop rate per period.
    for a in (0, 10, 20):
        for key, tol in (("utilization_mbps", None), ("drop_rate_pct", 1.0)):
            vals = {}
            for d in ("red", "rb-rio"):
                xs = [p[key] for s in SEEDS for p in pick(results, "tcp", d, s)["periods"] if p["start_s"] == a]
                vals[d] = sum(xs) / len(xs)
            if tol is None:
                assert abs(vals["rb-rio"] - vals["red"]) <= 0.03 * vals["red"], (a, key, vals)
            else:
                assert abs(vals["rb-rio"] - vals["red"]) <= tol, (a, key, vals)


def test_reproduce_quick_writes_every_table_and_figure(tmp_path):
    out = tmp_path / "rr"
    r = aqmlab("reproduce", "rb-rio", "--quick", "--out", str(out), "--workers", "2")
    assert r.returncode == 0, r.stderr
    for name in ("fig5", "fig5_jain", "fig6_jain", "fig8_jain", "table1", "table2", "fig6_throughput",
                 "fig8_throughput"):
        assert (out / "tables" / f"{name}.csv").exists() and (out / "tables" / f"{name}.md").exists()
    for fig in ("fig4", "fig6", "fig7", "fig8"):
        assert (out / "figures" / f"{fig}.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "report.md").read_text()
    assert "Table 1" in report and "10369" in report  # the published value beside ours
    assert "Rb-RIO" in r.stdout


def test_reproduce_rejects_a_bad_override_before_running(tmp_path):
    r = aqmlab("reproduce", "rb-rio", "--quick", "--out", str(tmp_path / "x"),
               "--set", "topology.bottleneck.delay=fast")
    assert r.returncode == 2 and "topology.bottleneck.delay" in r.stderr
    assert not (tmp_path / "x").exists()
