"""scenarios/video/mix/ and aqmlab.analysis.video_mix: every discipline sees the same traffic,
and the per-discipline table pools the ABR clients, measures each call and keeps t intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import aqmlab
from aqmlab.analysis import rtc, video_mix
from aqmlab.scenario import BUILTIN_DIR

MIX = BUILTIN_DIR / "video" / "mix"


def _without_qdisc(sc: aqmlab.LoadedScenario, marking: bool = False) -> dict:
    raw = sc.model.model_dump()
    raw["topology"]["bottleneck"].pop("qdisc")
    raw.pop("name"), raw.pop("description")
    if marking:
        raw.pop("marking")
    return raw


def test_every_file_of_the_mix_is_fifo_s_traffic_under_another_discipline():
    files = sorted(f for f in MIX.glob("*.toml") if f.name not in ("dualpi2-l4s.toml", "rb-rio.toml"))
    assert len(files) >= 9
    base = _without_qdisc(aqmlab.load(MIX / "fifo.toml"))
    kinds = set()
    for f in files:
        sc = aqmlab.load(f)
        assert _without_qdisc(sc) == base, f.name
        kinds.add(sc.model.topology.bottleneck.qdisc.kind)
    assert kinds >= {"droptail", "codel", "fq_codel", "pie", "fq_pie", "cobalt", "cake", "dualpi2", "sqf"}


def test_the_rb_rio_file_changes_the_discipline_and_turns_the_marking_on():
    """rb-rio.toml is fifo.toml's traffic under Rb-RIO with the reproduction's parameters, the
    video marked by frame type and the other flows (the bulk downloads) at the paper's 7:3."""
    fifo, rb = aqmlab.load(MIX / "fifo.toml"), aqmlab.load(MIX / "rb-rio.toml")
    assert _without_qdisc(rb, marking=True) == _without_qdisc(fifo, marking=True)
    assert fifo.model.marking.video == "none" and fifo.model.marking.others is None
    assert rb.model.marking.video == "frame_type" and rb.model.marking.others == (0.0, 0.3, 0.7)
    q, repro = rb.model.topology.bottleneck.qdisc, aqmlab.load("rb-rio/mixed-rb-rio").model.topology.bottleneck.qdisc
    assert q.kind == "rb_rio" and q.limit == {"packets": 250}
    assert q.model_copy(update={"limit": repro.limit}) == repro
    groups = {g["name"]: g for g in rb.model.to_sim_config()["flow_groups"]}
    for name, g in groups.items():
        if name == "bulk":
            assert g["class_weights"] == [0.0, 0.3, 0.7] and "mark_frames" not in g["app"]
        else:  # the ABR clients and both calls
            assert g["app"]["mark_frames"] is True and g["class_weights"] == [0.0, 0.0, 0.0], name


def test_without_marking_the_engine_configs_are_as_before():
    """The marking's default adds nothing to any mix file's engine config (so runs without it are
    the runs they were)."""
    for f in sorted(MIX.glob("*.toml")):
        if f.name == "rb-rio.toml":
            continue
        for g in aqmlab.load(f).model.to_sim_config()["flow_groups"]:
            assert "mark_frames" not in g["app"] and g["class_weights"] == [0.0, 0.0, 0.0], (f.name, g["name"])


def test_a_group_marked_by_frame_type_cannot_also_have_class_weights():
    with pytest.raises(aqmlab.ScenarioError, match=r"flows.bba.class_weights: the group is marked by frame type"):
        aqmlab.load(MIX / "rb-rio.toml", set=["flows.bba.class_weights=[0, 0.5, 0.5]"])
    with pytest.raises(aqmlab.ScenarioError, match=r"others \[0.0, 0.0, 0.0\] must be >= 0 and sum to a positive"):
        aqmlab.load(MIX / "rb-rio.toml", set=["marking.others=[0, 0, 0]"])


def test_the_l4s_file_changes_only_the_scream_call_s_and_the_downloads_ecn():
    l4s, classic = aqmlab.load(MIX / "dualpi2-l4s.toml").model, aqmlab.load(MIX / "dualpi2.toml").model
    assert l4s.topology == classic.topology
    changed = {}
    for a, b in zip(l4s.flows, classic.flows, strict=True):
        if a != b:
            changed[a.name] = a.app
    assert set(changed) == {"scream-call", "bulk"}
    assert changed["scream-call"].ecn == "ect1"
    assert changed["bulk"].tcp.congestion_control == "prague" and changed["bulk"].tcp.ecn_codepoint == "ect1"
    # Nothing else of those two groups moved.
    scream_classic = next(g for g in classic.flows if g.name == "scream-call").app
    assert changed["scream-call"].model_copy(update={"ecn": scream_classic.ecn}) == scream_classic


@pytest.fixture(scope="module")
def short_runs(tmp_path_factory) -> list[tuple[str, int, Path]]:
    """FIFO and FQ-CoDel, two seeds each, the mix cut to 20 s (measured over 8-20 s)."""
    out = tmp_path_factory.mktemp("mix")
    runs = []
    for name in ("fifo", "fq-codel"):
        sc = aqmlab.load(MIX / f"{name}.toml", set=["duration=20s", 'metrics.periods=[["8s", "20s"]]'])
        for seed in (1, 2):
            aqmlab.run(sc, seed=seed, out=out / f"{name}-{seed}")
            runs.append((name, seed, out / f"{name}-{seed}"))
    return runs


def test_a_run_s_row_pools_the_abr_clients_and_measures_each_call(short_runs):
    name, seed, path = short_runs[0]
    row = video_mix.run_row(name, seed, path, 8.0, 20.0)
    clients = aqmlab.load(MIX / "fifo.toml").model.flows
    abr = pd.read_parquet(path / "abr_sessions.parquet")
    assert len(abr) == sum(g.count for g in clients if g.app.kind == "abr") == 10
    assert row["abr_ssim_db"] == pytest.approx(abr["ssim_db"].mean())
    call = rtc.summary([(name, path)], 8.0, 20.0, flow=10).iloc[0]
    assert row["gcc-call_delay_p95_ms"] == call["frame_delay_p95_ms"]
    assert row["gcc-call_late_or_lost"] == (call["frames_late"] + call["frames_lost"]) / call["frames"]
    assert row["bulk_goodput_mbps"] > 0


def test_the_summary_is_the_mean_over_seeds_with_a_t_interval(short_runs, tmp_path):
    table = video_mix.runs_table(short_runs, 8.0, 20.0)
    s = video_mix.summary(table)
    assert list(s.index) == ["fifo", "fq-codel"] and (s["seeds"] == 2).all()
    for d in s.index:
        per_seed = table[table.discipline == d]["scream-call_goodput_mbps"].to_numpy()
        assert s.loc[d, "scream-call_goodput_mbps"] == pytest.approx(per_seed.mean())
        # Two seeds: Student's t with one degree of freedom, 12.706.
        assert s.loc[d, "scream-call_goodput_mbps_ci"] == pytest.approx(12.706 * per_seed.std(ddof=1) / np.sqrt(2))
    md = video_mix.markdown(s)
    assert md.count("\n") == 4 and "| fq-codel |" in md
    video_mix.figure(s, tmp_path / "mix.png")
    assert (tmp_path / "mix.png").stat().st_size > 10_000


def test_the_algorithm_figure_has_a_panel_per_algorithm_and_a_point_per_discipline(short_runs, tmp_path):
    drawn = video_mix.algorithm_figure(short_runs, tmp_path / "alg.png")
    algorithms = {g.name for g in aqmlab.load(MIX / "fifo.toml").model.flows if g.app.kind == "abr"}
    assert set(drawn) == algorithms and len(algorithms) == 5
    assert all(d == ["fifo", "fq-codel"] for d in drawn.values())
    assert (tmp_path / "alg.png").stat().st_size > 10_000


def test_a_mix_without_the_named_call_is_refused(short_runs):
    name, seed, path = short_runs[0]
    with pytest.raises(ValueError, match="flow group 'video-call': expected one call, found 0"):
        video_mix.run_row(name, seed, path, 8.0, 20.0, calls=("video-call",))


def test_a_call_that_lost_most_of_its_frames_in_a_seed_has_its_delay_marked():
    row = {"abr_bitrate_bps": 1e6, "abr_ssim_db": 12.0, "abr_stall_ratio": 0.0, "abr_startup_ns": 4e8,
           "abr_switches": 10.0, "bulk_goodput_mbps": 3.0}
    for call in video_mix.CALLS:
        row |= {f"{call}_goodput_mbps": 1.0, f"{call}_delay_p95_ms": 80.0, f"{call}_late_or_lost": 0.05,
                f"{call}_lost": 0.01}
    seeds = [{"discipline": "fq", "seed": s, **row} for s in (1, 2)]
    seeds += [{"discipline": "sqf", "seed": 1, **row}, {"discipline": "sqf", "seed": 2, **row,
                                                         "gcc-call_lost": 0.97, "gcc-call_delay_p95_ms": np.nan}]
    s = video_mix.summary(pd.DataFrame(seeds))
    table = video_mix.markdown(s).splitlines()
    lines = {line.split(" | ")[0].lstrip("| "): line for line in table if line.startswith("| ")}
    # sqf's GCC delay: over the one seed that has one, marked; fq's and SCReAM's unmarked.
    assert "80 (1 of 2 seeds) †" in lines["sqf"] and lines["sqf"].count("†") == 1
    assert "†" not in lines["fq"]
    assert "more than 50 % of its frames" in video_mix.markdown(s)


def test_eleven_disciplines_get_eleven_colours():
    from matplotlib.colors import to_rgb

    rgb = [to_rgb(video_mix.colour(i)) for i in range(11)]
    assert len(set(rgb)) == 11
