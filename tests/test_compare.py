"""`aqmlab compare PAPER`: the baselines beside each paper's mechanism, end to end."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from aqmlab import compare
from conftest import aqmlab


def run_compare(paper: str, tmp_path: Path) -> pd.DataFrame:
    out = tmp_path / paper
    r = aqmlab("compare", paper, "--quick", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "figures" / f"{paper}.png").stat().st_size > 0
    assert (out / "tables" / f"{paper}.md").exists()
    t = pd.read_csv(out / "tables" / f"{paper}.csv").set_index("discipline")
    # One row per discipline: the paper's own, then every baseline this build has.
    assert list(t.index) == list(compare.rows(paper)), t
    assert {"FIFO", "FQ"} <= set(t.index)
    assert (t["seeds"] == 1).all()
    assert t["qdelay_mean_ms"].between(0, 5000).all(), t["qdelay_mean_ms"]
    return t


def test_sqf_fifo_loses_video_that_sqf_keeps(tmp_path: Path) -> None:
    t = run_compare("sqf", tmp_path)
    # The paper's claim (section V): under FIFO the video loses packets to the TCP downloads,
    # SQF protects it; FQ cuts the 5 Mbit/s video to a fair share of ~0.9 Mbit/s.
    assert t.loc["FIFO", "video_loss_pct"] > t.loc["SQF", "video_loss_pct"] + 1
    assert t.loc["FQ", "video_loss_pct"] > 50
    assert t["utilization_mbps"].between(9, 10.01).all(), t["utilization_mbps"]
    assert t["tcp_jain"].between(0.5, 1).all()
    # CAKE besteffort, like FQ-CoDel, cuts the unresponsive video to a flow's fair share; in
    # diffserv4 the AF41 video's tin is served first up to half the 10 Mbit/s, its mean rate, so
    # it keeps most of it, and the EF audio in the voice tin loses nothing.
    assert t.loc["CAKE", "video_loss_pct"] > 50
    assert t.loc["CAKE diffserv4", "video_loss_pct"] < 25
    assert t.loc["CAKE diffserv4", "audio_loss_pct"] < 1
    # DualPI2 with Not-ECT media drops the video as PIE does; ECT(1) media in the L queue is only
    # marked, which does not slow an open-loop source, so it loses (almost) nothing.
    assert t.loc["DualPI2 ECT(1)", "video_loss_pct"] < 2
    assert t.loc["DualPI2", "video_loss_pct"] > t.loc["DualPI2 ECT(1)", "video_loss_pct"] + 3


def test_rb_rio_fifo_decodes_fewer_frames_than_rb_rio(tmp_path: Path) -> None:
    t = run_compare("rb-rio", tmp_path)
    # The paper's claim (Table 1): Rb-RIO raises the share of decodable frames over Drop-Tail.
    col = "responsive_decodable_pct"
    assert t[col].between(0, 100).all()
    assert t.loc["FIFO", col] + 10 < t.loc["Rb-RIO", col], t[col]
    # And over what Linux ships today: DualPI2 and CAKE (one tin or, all streams AF41, diffserv4).
    assert t.loc[["DualPI2", "CAKE", "CAKE diffserv4"], col].max() + 10 < t.loc["Rb-RIO", col], t[col]
    assert "tcp_mbps" not in t.columns  # no bulk TCP in the MPEG set: the column is left out


def test_baselines_whose_kind_is_not_built_are_left_out_and_appear_once_it_is(monkeypatch) -> None:
    known = set(compare.QDISC_MODELS)
    shown = compare.available_baselines()
    assert set(shown) == {n for n, q in compare.BASELINES.items() if q["kind"] in known}
    monkeypatch.setattr(compare, "QDISC_MODELS", dict.fromkeys(known | {"codel", "fq_codel", "pie"}))
    assert set(compare.available_baselines()) == set(compare.BASELINES)
    # Each baseline row carries the paper's buffer limit.
    sets = compare.rows("sqf")["PIE"][1]
    assert sets == ('topology.bottleneck.qdisc={kind = "pie", limit = "50p"}',)


def test_existing_output_is_refused_and_a_bad_paper_named(tmp_path: Path) -> None:
    r = aqmlab("compare", "sqf", "--quick", "--out", str(tmp_path))
    assert r.returncode == 2 and "exists; pass --force" in r.stderr
    r = aqmlab("compare", "nope", "--quick", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "nope" in r.stderr
    assert not (tmp_path / "x").exists()


def test_dualpi2_and_cake_rows_carry_their_settings_and_only_theirs() -> None:
    rows = compare.rows("sqf")
    # The new rows follow the pre-existing ones, whose order and overrides stay as they were.
    assert list(rows)[:6] == ["SQF", "FIFO", "FQ", "CoDel", "FQ-CoDel", "PIE"]
    assert list(rows)[6:] == ["DualPI2", compare.DUALPI2_ECT1, "CAKE", "CAKE diffserv4"]
    assert rows["FIFO"][1] == ('topology.bottleneck.qdisc={kind = "droptail", limit = "50p"}',)
    by = {d: compare.scenario_of(compare.Job("sqf", d, 1, True)) for d in rows}
    q = {d: sc.topology.bottleneck.qdisc for d, sc in by.items()}
    assert q["DualPI2"].kind == "dualpi2" and q["DualPI2"].limit == {"packets": 50}
    assert q["DualPI2"].target == 15_000_000 and q["DualPI2"].coupling_factor == 2  # tc-dualpi2's
    for d, diffserv in (("CAKE", "besteffort"), ("CAKE diffserv4", "diffserv4")):
        assert (q[d].kind, q[d].diffserv, q[d].bandwidth, q[d].memlimit) == ("cake", diffserv, 10e6, 75000)
        assert q[d].flowmode == "triple-isolate" and q[d].rtt == 100_000_000  # tc-cake's
    for d, sc in by.items():
        groups = {g.name: g for g in sc.flows}
        # DSCPs only in the diffserv4 row: AF41 video, EF audio, TCP best effort.
        want = (34, 46) if d == "CAKE diffserv4" else (0, 0)
        assert (groups["video"].dscp, groups["audio"].dscp, groups["tcp"].dscp) == (*want, 0), d
        # ECT(1) media only in the DualPI2 ECT(1) row.
        ecn = "ect1" if d == compare.DUALPI2_ECT1 else "not-ect"
        assert (groups["video"].app.ecn, groups["audio"].app.ecn) == (ecn, ecn), d
    # The PELS rows put CAKE inside PELS's feedback wrapper; head-to-head's shape at the TBF's rate.
    pels = compare.scenario_of(compare.Job("pels", "CAKE diffserv4", 1, True))
    assert pels.topology.bottleneck.qdisc.qdisc.kind == "cake"
    assert {g.name: g.dscp for g in pels.flows} == {"tcp": 0, "pels": 34}
    h2h = compare.scenario_of(compare.Job("head-to-head", "CAKE", 1, True))
    assert h2h.topology.bottleneck.qdisc.bandwidth == h2h.topology.bottleneck.rate == compare.SHAPED_BPS
    # Only SQF's media sources have an ecn field, so only SQF has the ECT(1) row.
    assert [p for p in compare.PAPERS if compare.DUALPI2_ECT1 in compare.rows(p)] == ["sqf"]


@pytest.mark.parametrize("paper", sorted(compare.PAPERS))
def test_every_row_of_every_paper_validates(paper: str) -> None:
    for discipline in compare.rows(paper):
        sc = compare.scenario_of(compare.Job(paper, discipline, 1, True))
        assert sc.duration > 0


def test_set_reaches_every_row_but_may_not_change_the_discipline(tmp_path: Path) -> None:
    """`compare --set`: today's TCP in every row (the TCP columns move, the rows stay), the
    overrides recorded beside the table; the discipline, which the rows vary, refused."""
    out = tmp_path / "linux"
    r = aqmlab("compare", "pels", "--quick", "--out", str(out), "--set", "flows.*.app.tcp.congestion_control=bbr")
    assert r.returncode == 0, r.stderr
    assert (out / "overrides.txt").read_text() == "--set flows.*.app.tcp.congestion_control=bbr\n"
    bbr = ("flows.*.app.tcp.congestion_control=bbr",)
    jobs = [compare.Job("pels", row, 1, True, bbr) for row in compare.rows("pels")]
    assert {g.app.tcp.congestion_control for j in jobs for g in compare.scenario_of(j).flows if g.app.kind == "bulk"} \
        == {"bbr"}
    t = pd.read_csv(out / "tables" / "pels.csv").set_index("discipline")
    assert list(t.index) == list(compare.rows("pels"))
    refused = aqmlab("compare", "pels", "--quick", "--out", str(tmp_path / "x"),
                     "--set", "topology.bottleneck.qdisc.qdisc.bands.1.qdisc.limit=5p")
    assert refused.returncode == 2
    assert "compare varies topology.bottleneck.qdisc.qdisc itself" in refused.stderr
    assert not (tmp_path / "x").exists()
    typo = aqmlab("compare", "pels", "--quick", "--out", str(tmp_path / "y"), "--set", "flows.*.app.tcp.profil=linux")
    assert typo.returncode == 2
    assert typo.stderr.count("unknown key 'profil'") == 1, typo.stderr
    assert "(in every row)" in typo.stderr
