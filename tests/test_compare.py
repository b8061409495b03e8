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


def test_rb_rio_fifo_decodes_fewer_frames_than_rb_rio(tmp_path: Path) -> None:
    t = run_compare("rb-rio", tmp_path)
    # The paper's claim (Table 1): Rb-RIO raises the share of decodable frames over Drop-Tail.
    col = "responsive_decodable_pct"
    assert t[col].between(0, 100).all()
    assert t.loc["FIFO", col] + 10 < t.loc["Rb-RIO", col], t[col]
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


@pytest.mark.parametrize("paper", sorted(compare.PAPERS))
def test_every_row_of_every_paper_validates(paper: str) -> None:
    for discipline in compare.rows(paper):
        sc = compare.scenario_of(compare.Job(paper, discipline, 1, True))
        assert sc.duration > 0
