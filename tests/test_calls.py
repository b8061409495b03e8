"""aqmlab.analysis.calls: the video-call measures of docs/links.md from a scored run."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from aqmlab.analysis import calls

MS = 1_000_000


def _scored_run(path, deadline_ms=150.0):
    """A hand-made run: call flow 0 sent 10 packets (5 frames of 2, due every 40 ms); 8 arrived,
    2 of them after their frame's due time + the deadline; TCP flows 1 and 2 in the period."""
    path.mkdir()
    pd.DataFrame({"flow": [0], "frames": [5], "freezes": [1], "freeze_s": [0.08], "psnr_db": [30.0],
                  "ssim": [0.9], "clean_psnr_db": [35.0], "deadline_ms": [deadline_ms]}).to_csv(
        path / "quality_flows.csv", index=False)
    pd.DataFrame({"flow": [0, 1, 2], "group_name": ["video", "tcp", "tcp"], "packets_sent": [10, 500, 400]}).to_parquet(
        path / "flows.parquet")
    pd.DataFrame({"flow": [0] * 5, "frame_id": range(5), "t_ns": [k * 40 * MS for k in range(5)],
                  "first_seq": [0, 2, 4, 6, 8], "packets": [2] * 5}).to_parquet(path / "media_frames.parquet")
    seqs = [0, 1, 2, 3, 4, 6, 8, 9]
    sent = [(s // 2) * 40 * MS for s in seqs]
    delay = [20, 20, 20, 200, 20, 20, 160, 20]  # seq 3 and 8: 200 and 160 ms after a due frame
    pd.DataFrame({"flow": [0] * 8, "seq": seqs, "size": [1000] * 8, "sent_ns": sent,
                  "recv_ns": [t + d * MS for t, d in zip(sent, delay, strict=True)]}).to_parquet(path / "media.parquet")
    pd.DataFrame({"start_s": [5.0, 5.0, 5.0, 30.0], "end_s": [30.0, 30.0, 30.0, 40.0], "flow": [0, 1, 2, 1],
                  "group_name": ["video", "tcp", "tcp", "tcp"], "goodput_mbps": [1.9, 3.0, 2.5, 9.0]}).to_parquet(
        path / "flow_periods.parquet")
    return path


def test_a_scored_run_gives_late_lost_delay_and_tcp_goodput(tmp_path):
    m = calls.call_run(_scored_run(tmp_path / "r"))
    assert m["late_pct"] == pytest.approx(20.0)   # seq 3 and 8 of 10 sent
    assert m["loss_pct"] == pytest.approx(20.0)   # seq 5 and 7 never arrived
    assert m["tcp_goodput_mbps"] == pytest.approx(5.5)  # first period only, TCP groups only
    assert m["ssim"] == 0.9 and m["freeze_s"] == pytest.approx(0.08)
    # numpy's linear interpolation over 20,20,20,20,20,20,160,200 ms at the 95th percentile.
    assert m["delay_p95_ms"] == pytest.approx(186.0)


def test_a_longer_deadline_makes_fewer_packets_late(tmp_path):
    assert calls.call_run(_scored_run(tmp_path / "r", deadline_ms=180.0))["late_pct"] == pytest.approx(10.0)


def test_a_run_scored_without_a_deadline_is_refused_saying_how_to_score_it(tmp_path):
    run = _scored_run(tmp_path / "r")
    pd.read_csv(run / "quality_flows.csv").drop(columns="deadline_ms").to_csv(run / "quality_flows.csv", index=False)
    with pytest.raises(ValueError, match="--deadline"):
        calls.call_run(run)


def test_the_summary_has_intervals_over_seeds_and_none_for_one():
    c = pd.DataFrame([{"link": "cellular", "discipline": "FIFO", "seed": s, **dict.fromkeys(calls.MEASURES, v)}
                      for s, v in ((1, 0.4), (2, 0.5), (3, 0.6))] +
                     [{"link": "cellular", "discipline": "PIE", "seed": s, **dict.fromkeys(calls.MEASURES, v)}
                      for s, v in ((1, 0.2), (2, 0.9))])
    s = calls.summary(c)
    fifo, pie = s.iloc[0], s.iloc[1]
    assert fifo["ssim"] == pytest.approx(0.5) and fifo["ssim_ci"] == pytest.approx(4.303 * 0.1 / math.sqrt(3))
    assert pie["seeds"] == 2
    assert math.isnan(calls.summary(c[c["seed"] == 1]).iloc[0]["ssim_ci"])
    table = calls.markdown(c)
    assert "| cellular | FIFO | 0.500 ± 0.248 | 0.5 ± 0.2 |" in table
    # 0.55 ± 4.45 leaves SSIM's [0, 1]: shown cut there and marked.
    assert "| cellular | PIE | 0.550 [0.000, 1.000] clipped |" in table
    assert calls.MOSTLY_LOST_MARK not in table


def test_a_delay_over_a_call_that_lost_most_of_its_packets_is_marked():
    """Issue 23: one seed of three lost 95 % of the call: its row's delay p95 carries the mark,
    the other row's does not, and the note under the table says what it means."""
    rows = [{"link": "cellular", "discipline": d, "seed": s, **dict.fromkeys(calls.MEASURES, 1.0),
             "loss_pct": 95.0 if (d, s) == ("SQF", 3) else 5.0} for d in ("SQF", "PIE") for s in (1, 2, 3)]
    table = calls.markdown(pd.DataFrame(rows))
    sqf, pie = (next(x for x in table.splitlines() if f"| {d} |" in x) for d in ("SQF", "PIE"))
    assert sqf.split(" | ")[-2].endswith(calls.MOSTLY_LOST_MARK), sqf  # delay p95, before goodput
    assert calls.MOSTLY_LOST_MARK not in pie
    assert table.rstrip().endswith(calls.MOSTLY_LOST_NOTE)


def test_the_figures_error_bars_stop_where_the_tables_intervals_are_cut():
    """PIE's SSIM of 0.55 ± 4.45 is drawn from 0 to 1, as the table writes it; a delay's bar
    stops at 0 ms below and reaches its whole half-width above."""
    c = pd.DataFrame([{"link": "cellular", "discipline": "PIE", "seed": s, **dict.fromkeys(calls.MEASURES, v)}
                      for s, v in ((1, 0.2), (2, 0.9))])
    s = calls.summary(c)
    x_bar, y_bar = (coll.get_segments()[0] for coll in calls.draw(s, 150.0).axes[0].collections)
    assert sorted(y_bar[:, 1]) == pytest.approx([0.0, 1.0])
    assert sorted(x_bar[:, 0]) == pytest.approx([0.0, 0.55 + s.iloc[0]["delay_p95_ms_ci"]])
