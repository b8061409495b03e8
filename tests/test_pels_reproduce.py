"""`aqmlab reproduce pels --quick` and the rate-quality substitution of Figure 10."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pytest

from aqmlab import quality
from conftest import aqmlab


def test_quality_curve_from_pyav_rises_with_rate():
    curve = quality.rate_quality_curve(ladder=(100e3, 400e3, 1600e3), seconds=1.0)
    assert list(curve["requested_bps"]) == [100e3, 400e3, 1600e3]
    assert curve["rate_bps"].is_monotonic_increasing and curve["psnr_db"].is_monotonic_increasing
    assert (curve["psnr_db"] > 20).all() and (curve["psnr_db"] < 60).all()
    # Deterministic: the same ladder measures the same curve.
    again = quality.rate_quality_curve(ladder=(100e3, 400e3, 1600e3), seconds=1.0)
    pd.testing.assert_frame_equal(curve, again)


def test_frame_quality_maps_base_plus_useful_bytes_through_the_curve():
    curve = pd.DataFrame({"rate_bps": [1e5, 1e6], "psnr_db": [30.0, 40.0]})
    # 10 fps, 500-byte payloads: 25 packets per frame = 1 Mb/s, 2.5 packets = 100 kb/s.
    frames = pd.DataFrame({"green": [5, 5, 5, 5], "green_received": [5, 5, 5, 4],
                           "useful": [0, 20, 45, 20]})
    q = quality.frame_quality(frames, curve, payload_bytes=500, fps=10.0)
    base = 30 + 10 * np.log10(2e5 / 1e5)  # 5 packets = 200 kb/s, a third of the way in log rate
    assert q["base_psnr_db"].iloc[0] == pytest.approx(base)
    assert q["psnr_db"].iloc[0] == pytest.approx(base)
    assert q["psnr_db"].iloc[1] == pytest.approx(40.0)          # 25 packets = 1 Mb/s
    assert q["psnr_db"].iloc[2] == pytest.approx(40.0)          # clamped above the curve
    assert np.isnan(q["psnr_db"].iloc[3]), "a frame missing base packets does not decode"
    assert quality.improvement_over_base(q) == pytest.approx(((base + 80) / 3) / base - 1)
    with pytest.raises(ValueError):
        quality.psnr_at(1e5, pd.DataFrame({"rate_bps": [2e5, 1e5], "psnr_db": [1.0, 2.0]}))


def test_reproduce_quick_writes_every_table_and_figure_without_the_ffmpeg_command(tmp_path):
    # Nothing on PATH (the interpreter is called by its full path): the quality step must get
    # its encoder, decoder and test source from PyAV's wheel, not from an ffmpeg binary.
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    env = {**os.environ, "PATH": str(empty_path)}
    assert shutil.which("ffmpeg", path=env["PATH"]) is None
    out = tmp_path / "pels"
    r = aqmlab("reproduce", "pels", "--quick", "--out", str(out), "--workers", "2", env=env)
    assert r.returncode == 0, r.stderr
    for name in ("table1", "utility_bound", "mechanisms", "quality", "quality_curve"):
        assert (out / "tables" / f"{name}.csv").exists() and (out / "tables" / f"{name}.md").exists()
    for fig in ("fig2", "fig5", "fig7", "fig8", "fig9", "fig10"):
        assert (out / "figures" / f"{fig}.png").read_bytes()[:4] == b"\x89PNG"
    t1 = pd.read_csv(out / "tables" / "table1.csv")
    assert list(t1["model (eq. 2)"]) == pytest.approx(list(t1["published model"]), abs=0.01)
    assert (abs(t1["Monte-Carlo"] - t1["published model"]) < 0.2).all()
    report = (out / "report.md").read_text()
    assert "99.49" in report and "62.76" in report  # the published values beside ours
    q = pd.read_csv(out / "tables" / "quality.csv")
    ours = q.set_index(["paper loss", "scheme"])["our improvement %"]
    for loss in ("10 %", "19 %"):
        assert ours[(loss, "PELS")] > ours[(loss, "best effort")] > 0


def test_reproduce_pels_rejects_a_bad_override_before_running(tmp_path):
    r = aqmlab("reproduce", "pels", "--quick", "--out", str(tmp_path / "x"),
               "--set", "topology.bottleneck.qdisc.share=2")
    assert r.returncode == 2 and "share" in r.stderr
    assert not (tmp_path / "x").exists()


def test_several_seeds_give_mean_and_confidence_interval():
    from aqmlab.reproduce.pels import _row, combine_seeds

    tables = [pd.DataFrame([_row("a", "1", v, ".2f", "%"), _row("b", "-", float("nan"), ".1f"),
                            _row("c: delay", "-", v + 50, ".2f", "ms")]) for v in (1.0, 3.0)]
    out = combine_seeds(tables)
    # Two seeds: mean 2, half-width t(0.975, 1) x sd / sqrt(2) = 12.706 x 1.4142 / 1.4142; a
    # percentage cannot go below 0, so that interval is shown clipped; 52 ms ± 12.71 fits.
    assert out["ours"].tolist() == ["2.00 [0.00, 14.71] clipped", "-", "52.00 ± 12.71"]
    assert combine_seeds(tables[:1])["ours"].tolist() == ["1.00", "-", "51.00"]
    assert out["note"].tolist() == ["%", "", "ms"]


@pytest.mark.parametrize("overrides, alone, pair, hop1_of_2, hop0_of_5", [
    ((), 2040e3, 1040e3, 540e3, 440e3),  # the paper's values: 4 mb/s, share 0.5, alpha 20 kb/s, beta 0.5
    (("topology.bottleneck.rate=2Mbps",), 1040e3, 540e3, 540e3, 240e3),
    (("topology.bottleneck.qdisc.share=0.25",), 1040e3, 540e3, 540e3, 240e3),
])
def test_eq10_notes_follow_the_scenario_under_set(overrides, alone, pair, hop1_of_2, hop0_of_5):
    """The eq. (10) rates written beside the convergence rows, the parking lot's max-min shares
    and Figure 9's line are C/N + alpha/beta from the run's own scenario, not the paper's."""
    from aqmlab.reproduce import pels

    convergence, parking = ({"mkc": pels.mkc_table(pels.load_pels(name, overrides))}
                            for name in ("convergence", "parking-lot"))
    assert pels.stationary_rate(convergence, 1) == pytest.approx(alone)
    assert pels.stationary_rate(convergence, 2) == pytest.approx(pair)
    assert pels.stationary_rate(parking, 2, hop=1) == pytest.approx(hop1_of_2)
    assert pels.stationary_rate(parking, 5, hop=0) == pytest.approx(hop0_of_5)


def test_eq10_uses_the_gains_of_the_run():
    from aqmlab.reproduce import pels

    sc = pels.load_pels("convergence", ("flows.f1.app.alpha=40kbps", "flows.f2.app.alpha=40kbps"))
    assert pels.pels_capacities(sc) == [2e6]
    assert pels.stationary_rate({"mkc": pels.mkc_table(sc)}, 2) == pytest.approx(1e6 + 80e3)


@pytest.mark.parametrize(("name", "overrides", "level", "predicted"), [
    ("gamma-7", (), 7, 160 / 2160),
    ("gamma-14", (), 14, 320 / 2320),
    ("gamma-7", ("topology.bottleneck.rate=2Mbps",), 7, 160 / 1160),
    ("gamma-7", ("flows.pels.count=8",), 7, 320 / 2320),
])
def test_loss_level_note_follows_eq10_under_set(name, overrides, level, predicted):
    """The gamma runs' "N flows chosen by eq. (10)" holds only where eq. (10) gives the
    paper's loss level for the run as it ran; otherwise the note gives eq. (10)'s value."""
    from aqmlab.reproduce import pels

    run = {"mkc": pels.mkc_table(pels.load_pels(name, overrides))}
    assert pels.stationary_loss(run) == pytest.approx(predicted)
    note = pels.loss_level_note(run, level)
    if round(predicted * 100) == level:
        assert note == "%; N flows chosen by eq. (10)"
    else:
        assert f"eq. (10): {predicted * 100:.1f} for this run's N and rates" in note
