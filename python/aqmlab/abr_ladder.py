"""Encoding ladders for the ABR client (`flows.app.kind = "abr"`): the built-in synthetic
ladder and a user's CSV, both turned into the engines' form (aqmlab-model
`app/abr/ladder.rs`: one row of segment sizes, and of scores when known, per rung).

A user's CSV has one row per (segment, rung), in any order, with a header naming the columns:

| column         | required | meaning                                                        |
| -------------- | -------- | -------------------------------------------------------------- |
| `segment`      | yes      | segment index, 0, 1, ... without gaps                          |
| `rung`         | yes      | rung index, 0 the lowest, without gaps                         |
| `bitrate_kbps` | yes      | the rung's nominal bitrate, kbit/s (same on all its rows)      |
| `size_bytes`   | yes      | the encoded segment's bytes (an integer above 0)               |
| `ssim_db`      | no       | the segment's SSIM against the source, dB: -10 log10(1 - SSIM) |
| `psnr_db`      | no       | the segment's PSNR against the source, dB                      |

Bitrates rise strictly with the rung.
Every segment has every rung. Bad input is refused with one line naming the file's row (its
line number, the header being row 1) and the column. Every segment lasts the scenario's
`segment_duration`.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

#: The built-in ladder's rungs, kbit/s: 0.3-6 Mbit/s in steps of about 1.5x, the spread of
#: common H.264 ladders (e.g. Apple's HLS authoring table); the numbers are our choice.
SYNTHETIC_RUNGS_KBPS = (300, 750, 1200, 1850, 2850, 4300, 6000)
#: Names a scenario's `ladder` may take besides a CSV path: the synthetic ladder below, and
#: real libx264 encodes of the viewer's clip (aqmlab/abr_encoded_ladder.py).
BUILTIN = ("synthetic", "encoded")

REQUIRED = ("segment", "rung", "bitrate_kbps", "size_bytes")
SCORES = ("ssim_db", "psnr_db")


class LadderError(ValueError):
    """A ladder that cannot be used, in one line."""


def ladder(name_or_path: str, segment_duration_ns: int, content_ns: int) -> dict[str, Any]:
    """The engines' ladder for a scenario's `ladder` field: a built-in name, else a CSV path.
    `content_ns` sizes the synthetic ladder (its segment count); a CSV has its own."""
    if name_or_path == "synthetic":
        return synthetic(segment_duration_ns, content_ns)
    if name_or_path == "encoded":
        from aqmlab import abr_encoded_ladder as encoded  # noqa: PLC0415 - PyAV only when asked for

        table = load_csv(encoded.ladder_csv(segment_duration_ns), segment_duration_ns)
        return encoded.looped(table, -(-content_ns // segment_duration_ns))
    return load_csv(Path(name_or_path), segment_duration_ns)


def complexity(segment: int) -> float:
    """The synthetic clip's coding difficulty of a segment, mean about 1: two slow waves (a
    scene-length one over about 37 segments and a shorter one over about 7), so that sizes and
    scores vary from segment to segment as a VBR encode's do. A deterministic formula, not a
    random draw, so the ladder needs no stream and is the same for every seed."""
    return 1.0 + 0.25 * math.sin(2 * math.pi * segment / 37.0) + 0.1 * math.sin(2 * math.pi * segment / 7.3)


def synthetic(segment_duration_ns: int, content_ns: int) -> dict[str, Any]:
    """The built-in ladder: [`SYNTHETIC_RUNGS_KBPS`], `ceil(content / segment_duration)`
    segments. Sizes: nominal bitrate x duration x `complexity(k)` (a capped-VBR encode's
    sizes follow the content). Scores are a model, not measurements: SSIM dB rises 2.2 dB per
    doubling of bitrate from 8 dB at 300 kbit/s (about 17.5 dB at 6 Mbit/s, inside the range
    Puffer reports for its ladder) and falls 2 dB per unit of complexity above 1; PSNR likewise
    from 30 dB with 2.5 dB per doubling and 3 dB per unit of complexity."""
    if segment_duration_ns <= 0 or content_ns <= 0:
        raise LadderError("segment_duration and content must be positive")
    segments = -(-content_ns // segment_duration_ns)
    seconds = segment_duration_ns / 1e9
    sizes, ssim, psnr = [], [], []
    for kbps in SYNTHETIC_RUNGS_KBPS:
        doublings = math.log2(kbps / SYNTHETIC_RUNGS_KBPS[0])
        sizes.append([round(kbps * 1000 * seconds / 8 * complexity(k)) for k in range(segments)])
        ssim.append([8.0 + 2.2 * doublings - 2.0 * (complexity(k) - 1) for k in range(segments)])
        psnr.append([30.0 + 2.5 * doublings - 3.0 * (complexity(k) - 1) for k in range(segments)])
    return {"segment_duration_ns": segment_duration_ns,
            "bitrates_bps": [k * 1000 for k in SYNTHETIC_RUNGS_KBPS],
            "sizes_bytes": sizes, "ssim_db": ssim, "psnr_db": psnr}


def _number(path: Path, row: int, column: str, text: str, integer: bool) -> float:
    """A cell as a number >= 0 (an integer where `integer`), or a one-line refusal."""
    where = f"{path} row {row}, column {column}"
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise LadderError(f"{where}: {text!r} is not {kind}") from None
    if not math.isfinite(value) or value < 0:
        raise LadderError(f"{where}: {text!r} must be finite and not negative")
    return value


def load_csv(path: Path, segment_duration_ns: int) -> dict[str, Any]:
    """A user's ladder (the columns in the module's docstring), checked cell by cell."""
    try:
        text = path.read_text()
    except OSError as e:
        raise LadderError(f"{path}: cannot read ladder CSV ({e.strerror})") from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    for column in REQUIRED:
        if column not in header:
            raise LadderError(f"{path} row 1: missing column {column!r} (required: {', '.join(REQUIRED)})")
    scores = [c for c in SCORES if c in header]
    cells: dict[tuple[int, int], tuple[int, dict[str, float]]] = {}
    bitrate: dict[int, tuple[int, float]] = {}
    for row, record in enumerate(reader, start=2):
        values = {}
        for column in (*REQUIRED, *scores):
            cell = (record.get(column) or "").strip()
            if cell == "":
                raise LadderError(f"{path} row {row}, column {column}: empty cell")
            values[column] = _number(path, row, column, cell, column in ("segment", "rung", "size_bytes"))
        segment, rung = int(values["segment"]), int(values["rung"])
        if values["size_bytes"] == 0:
            raise LadderError(f"{path} row {row}, column size_bytes: a segment must have at least 1 byte")
        if values["bitrate_kbps"] == 0:
            raise LadderError(f"{path} row {row}, column bitrate_kbps: must be above 0")
        if (segment, rung) in cells:
            first = cells[segment, rung][0]
            raise LadderError(f"{path} row {row}, column rung: segment {segment} rung {rung} again "
                              f"(first on row {first})")
        cells[segment, rung] = (row, values)
        seen = bitrate.setdefault(rung, (row, values["bitrate_kbps"]))
        if seen[1] != values["bitrate_kbps"]:
            raise LadderError(f"{path} row {row}, column bitrate_kbps: rung {rung} is {values['bitrate_kbps']:g} here "
                              f"but {seen[1]:g} on row {seen[0]}")
    if not cells:
        raise LadderError(f"{path}: no rows after the header")
    rungs = max(r for _, r in cells) + 1
    segments = max(s for s, _ in cells) + 1
    for r in range(1, rungs):
        if r not in bitrate:
            raise LadderError(f"{path}: column rung: no row for rung {r} (rungs must be 0..{rungs - 1})")
        if bitrate[r][1] <= bitrate[r - 1][1]:
            raise LadderError(f"{path} row {bitrate[r][0]}, column bitrate_kbps: rung {r}'s {bitrate[r][1]:g} kbit/s "
                              f"is not above rung {r - 1}'s {bitrate[r - 1][1]:g} (rungs out of order)")
    for s in range(segments):
        for r in range(rungs):
            if (s, r) not in cells:
                raise LadderError(f"{path}: column segment: no row for segment {s} at rung {r} "
                                  f"(every segment 0..{segments - 1} needs every rung)")
    table: dict[str, Any] = {
        "segment_duration_ns": segment_duration_ns,
        "bitrates_bps": [round(bitrate[r][1] * 1000) for r in range(rungs)],
        "sizes_bytes": [[int(cells[s, r][1]["size_bytes"]) for s in range(segments)] for r in range(rungs)],
    }
    for column in scores:
        table[column] = [[cells[s, r][1][column] for s in range(segments)] for r in range(rungs)]
    return table
