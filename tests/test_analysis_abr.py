"""aqmlab.analysis.abr: per-(discipline, algorithm) QoE with 95 % intervals over seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from aqmlab.analysis.abr import MEASURES, sessions, ssim_stall_figure, summary


def fake_run(path: Path, ssim: list[float], stall: list[float]) -> Path:
    path.mkdir()
    rows = {m: [0.0] * len(ssim) for m in MEASURES}
    rows.update(flow=list(range(len(ssim))), ssim_db=ssim, stall_ratio=stall)
    pd.DataFrame(rows).to_parquet(path / "abr_sessions.parquet")
    pd.DataFrame({"flow": range(len(ssim)), "group_name": ["bola", "bola", "bba"][:len(ssim)]}).to_parquet(
        path / "flows.parquet")
    return path


def test_mean_over_clients_then_t_interval_over_seeds(tmp_path: Path) -> None:
    runs = [("fifo", 1, fake_run(tmp_path / "a", [10.0, 12.0, 9.0], [0.0, 0.1, 0.0])),
            ("fifo", 2, fake_run(tmp_path / "b", [12.0, 14.0, 9.0], [0.0, 0.3, 0.0]))]
    table = summary(sessions(runs))
    bola = table.loc[("fifo", "bola")]
    # Seed means 11 and 13: mean 12, sd sqrt(2), half-width 12.706 * sqrt(2) / sqrt(2).
    assert bola["ssim_db"] == 12.0
    assert bola["ssim_db_ci"] == pytest.approx(12.706)
    assert bola["stall_ratio"] == pytest.approx(0.1)
    assert bola["seeds"] == 2
    assert table.loc[("fifo", "bba"), "ssim_db_ci"] == 0.0
    ssim_stall_figure(table, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_no_runs_is_refused() -> None:
    with pytest.raises(ValueError, match="runs"):
        sessions([])
