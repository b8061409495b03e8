"""The ABR client's ladders: the built-in synthetic one and a user's CSV, with bad CSVs refused
in one line naming row and column (aqmlab/abr_ladder.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqmlab.abr_ladder import SYNTHETIC_RUNGS_KBPS, LadderError, load_csv, synthetic

S = 1_000_000_000
GOOD = """segment,rung,bitrate_kbps,size_bytes,ssim_db
0,0,300,70000,9.5
0,1,1200,300000,13.0
1,1,1200,310000,13.1
1,0,300,76000,9.4
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ladder.csv"
    path.write_text(text)
    return path


def test_a_good_csv_in_any_row_order(tmp_path: Path) -> None:
    table = load_csv(write(tmp_path, GOOD), 2 * S)
    assert table["bitrates_bps"] == [300_000, 1_200_000]
    assert table["sizes_bytes"] == [[70000, 76000], [300000, 310000]]
    assert table["ssim_db"] == [[9.5, 9.4], [13.0, 13.1]]
    assert "psnr_db" not in table
    assert table["segment_duration_ns"] == 2 * S


def test_a_one_rung_ladder_works(tmp_path: Path) -> None:
    table = load_csv(write(tmp_path, "segment,rung,bitrate_kbps,size_bytes\n0,0,500,1000\n1,0,500,1200\n"), S)
    assert table["bitrates_bps"] == [500_000]
    assert table["sizes_bytes"] == [[1000, 1200]]


@pytest.mark.parametrize(("text", "message"), [
    (GOOD.replace("size_bytes", "bytes"), "row 1: missing column 'size_bytes'"),
    (GOOD.replace("0,1,1200,300000", "0,1,1200,lots"), "row 3, column size_bytes: 'lots' is not an integer"),
    (GOOD.replace("0,1,1200,300000,13.0", "0,1,1200,300000,-1"),
     "row 3, column ssim_db: '-1' must be finite and not negative"),
    (GOOD.replace("1,0,300,76000", "1,0,300,-5"), "row 5, column size_bytes: '-5' must be finite and not negative"),
    (GOOD.replace("0,0,300", "0,0,abc"), "row 2, column bitrate_kbps: 'abc' is not a number"),
    (GOOD.replace("0,0,300,", "0,0,,"), "row 2, column bitrate_kbps: empty cell"),
    # Rung 1 below rung 0: out of order.
    (GOOD.replace(",1200,", ",200,"), "row 3, column bitrate_kbps: rung 1's 200 kbit/s is not above rung 0's 300 "
                                      "(rungs out of order)"),
    (GOOD.replace("1,1,1200", "1,1,1300"), "row 4, column bitrate_kbps: rung 1 is 1300 here but 1200 on row 3"),
    (GOOD.replace("1,0,300,76000,9.4\n", ""), "column segment: no row for segment 1 at rung 0"),
    (GOOD + "1,0,300,1,1\n", "row 6, column rung: segment 1 rung 0 again (first on row 5)"),
    (GOOD.replace("1,1,1200,310000", "1,1,1200,0"), "row 4, column size_bytes: a segment must have at least 1 byte"),
])
def test_bad_csv_refused_in_one_line_naming_row_and_column(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(LadderError) as e:
        load_csv(write(tmp_path, text), 2 * S)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LadderError, match="cannot read ladder CSV"):
        load_csv(tmp_path / "absent.csv", S)


def test_synthetic_ladder_spans_its_rungs_and_varies_by_segment() -> None:
    table = synthetic(2 * S, 61 * S)  # 30.5 segments: rounded up to 31
    assert table["bitrates_bps"] == [k * 1000 for k in SYNTHETIC_RUNGS_KBPS]
    assert len(SYNTHETIC_RUNGS_KBPS) >= 6
    assert table["bitrates_bps"][0] == 300_000 and table["bitrates_bps"][-1] == 6_000_000
    sizes = table["sizes_bytes"]
    assert all(len(r) == 31 for r in sizes)
    # Mean size close to nominal (complexity averages about 1) and varying over segments.
    top = sizes[-1]
    nominal = 6_000_000 * 2 / 8
    assert abs(sum(top) / len(top) / nominal - 1) < 0.1
    assert max(top) / min(top) > 1.3
    # At every segment, higher rungs are bigger and score higher.
    for k in range(31):
        assert all(sizes[r][k] < sizes[r + 1][k] for r in range(len(sizes) - 1))
        assert all(table["ssim_db"][r][k] < table["ssim_db"][r + 1][k] for r in range(len(sizes) - 1))
