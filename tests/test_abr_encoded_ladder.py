"""The ladder from real libx264 encodes (aqmlab/abr_encoded_ladder.py), on a short clip."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqmlab import abr_encoded_ladder as encoded, viewer
from aqmlab.abr_ladder import LadderError, ladder, load_csv

S = 1_000_000_000


@pytest.fixture
def short_clip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A 2 s clip, two rungs, and a cache of our own: a few seconds of encoding."""
    monkeypatch.setattr(viewer, "CLIP_SECONDS", 2.0)
    monkeypatch.setattr(encoded, "SYNTHETIC_RUNGS_KBPS", (300, 1850))
    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path))
    return tmp_path


def test_real_encodes_give_a_ladder_whose_bytes_and_scores_rise_with_the_rung(short_clip: Path) -> None:
    path = encoded.ladder_csv(S)
    assert path.parent == short_clip / "abr"
    table = load_csv(path, S)
    assert table["bitrates_bps"] == [300_000, 1_850_000]
    sizes, ssim, psnr = table["sizes_bytes"], table["ssim_db"], table["psnr_db"]
    assert len(sizes[0]) == 2  # 2 s of clip in 1 s segments
    for k in range(2):
        assert sizes[0][k] < sizes[1][k]
        assert ssim[0][k] < ssim[1][k] and psnr[0][k] < psnr[1][k]
        # x264's rate control lands near the requested rate over a one-second closed GOP.
        assert sizes[0][k] * 8 == pytest.approx(300_000, rel=0.3)
        assert sizes[1][k] * 8 == pytest.approx(1_850_000, rel=0.3)
    # Cached: asked again, the same file, not rewritten; no hidden partial file left.
    mtime = path.stat().st_mtime_ns
    assert encoded.ladder_csv(S) == path and path.stat().st_mtime_ns == mtime
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_the_scenario_name_loops_the_clip_to_the_content(short_clip: Path) -> None:
    table = ladder("encoded", S, 5 * S)
    assert [len(r) for r in table["sizes_bytes"]] == [5, 5]
    assert table["sizes_bytes"][0][2] == table["sizes_bytes"][0][0]
    assert table["ssim_db"][1][3] == table["ssim_db"][1][1]


def test_segments_must_be_whole_frames_within_the_clip(short_clip: Path) -> None:
    with pytest.raises(LadderError, match="whole number of frames"):
        encoded.ladder_csv(S // 3)
    with pytest.raises(LadderError, match="must not be longer"):
        encoded.ladder_csv(4 * S)
