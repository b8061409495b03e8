"""A ladder from real encodes for the ABR client (`ladder = "encoded"`).

The source is the clip the viewer scores against (:func:`aqmlab.viewer.source_clip`: ffmpeg's
``testsrc2`` at CIF 352x288 with temporal noise, ``CLIP_SECONDS`` = 10 s) at :data:`FPS`.
It is cut into segments of the scenario's `segment_duration`; every segment is encoded at every
rung of :data:`aqmlab.abr_ladder.SYNTHETIC_RUNGS_KBPS` by libx264 through PyAV as its own
closed GOP (a fresh encoder per segment, so each segment starts with an IDR picture and decodes
alone, as a DASH segment does; one thread, so the bytes are the same run after run), decoded
back with libavcodec, and scored against the source: the mean over its frames of SSIM (as
ffmpeg's ``ssim`` filter, :func:`aqmlab.viewer.ssim`, given in dB as -10 log10(1 - SSIM)) and
PSNR (:func:`aqmlab.viewer.psnr`). A segment's size is the sum of its encoded frames' bytes.

The result is written as a ladder CSV (the columns of :mod:`aqmlab.abr_ladder`) under
``$AQMLAB_CACHE/abr`` (default ``~/.cache/aqmlab/abr``), keyed by everything that changes it,
written to a hidden sibling and renamed so that no run sees a partial file. The clip holds
``CLIP_SECONDS / segment_duration`` segments; a longer session plays them in a loop
(:func:`looped`). The rungs above what CIF needs are still encoded at their rate: x264 spends
the bits (the source's noise absorbs them), so sizes follow the rung.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab import viewer
from aqmlab.abr_ladder import SYNTHETIC_RUNGS_KBPS, LadderError

#: Frames per second of the encoded source: our choice, a common rate for such a clip.
FPS = 25


def cache_dir() -> Path:
    return Path(os.environ.get("AQMLAB_CACHE", Path.home() / ".cache" / "aqmlab")) / "abr"


def _segment_frames(segment_duration_ns: int) -> int:
    frames = segment_duration_ns * FPS / 1e9
    if frames != int(frames) or frames < 1:
        raise LadderError(f"segment_duration: {segment_duration_ns / 1e9:g} s is not a whole number of "
                          f"frames at {FPS} fps (the encoded ladder's rate)")
    if frames > viewer.CLIP_SECONDS * FPS:
        raise LadderError(f"segment_duration: the encoded ladder's clip is {viewer.CLIP_SECONDS:g} s; "
                          "segments must not be longer")
    return int(frames)


def _key(segment_frames: int) -> str:
    av = viewer._av()
    facts = {"source": viewer.SOURCE_FILTER, "clip_s": viewer.CLIP_SECONDS, "fps": FPS,
             "size": [viewer.WIDTH, viewer.HEIGHT], "segment_frames": segment_frames,
             "rungs_kbps": list(SYNTHETIC_RUNGS_KBPS), "x264": "preset=veryfast threads=1 closed gop",
             "libavcodec": av.library_versions["libavcodec"]}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]


def _encoder(kbps: int, gop: int) -> Any:
    av = viewer._av()
    ctx = av.CodecContext.create("libx264", "w")
    ctx.width, ctx.height, ctx.pix_fmt = viewer.WIDTH, viewer.HEIGHT, "yuv420p"
    rate = Fraction(FPS)
    ctx.time_base, ctx.framerate = 1 / rate, rate
    # One key frame at the segment's start and no scene cuts: the segment is one closed GOP.
    ctx.options = {"b": str(kbps * 1000), "g": str(gop), "bf": "0", "threads": "1", "preset": "veryfast",
                   "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:sliced-threads=0"}
    ctx.open()
    return ctx


def _encoded_packets(frames: np.ndarray, kbps: int) -> list[bytes]:
    """One segment's encoded pictures at `kbps`, in decode order (an H.264 Annex B stream
    when concatenated)."""
    av = viewer._av()
    enc = _encoder(kbps, len(frames))
    packets = []
    for i, pic in enumerate(frames):
        frame = av.VideoFrame.from_ndarray(pic, format="yuv420p")
        frame.pts = i
        packets += enc.encode(frame)
    packets += enc.encode(None)
    return [bytes(p) for p in packets]


def _scores(frames: np.ndarray, decoded: list[np.ndarray], what: str) -> tuple[float, float]:
    """(SSIM dB, PSNR dB) of `decoded` against the source `frames`, means over the frames."""
    if len(decoded) != len(frames):
        raise LadderError(f"{what}: {len(decoded)} pictures decoded of {len(frames)}")
    ssim = float(np.mean([viewer.ssim(a, b) for a, b in zip(frames, decoded, strict=True)]))
    psnr = float(np.mean([viewer.psnr(a, b) for a, b in zip(frames, decoded, strict=True)]))
    return -10 * math.log10(max(1 - ssim, 1e-10)), psnr


def encode_segment(frames: np.ndarray, kbps: int) -> tuple[int, float, float]:
    """One segment's (bytes, SSIM dB, PSNR dB) at `kbps`, decoded by a fresh decoder."""
    av = viewer._av()
    packets = _encoded_packets(frames, kbps)
    dec = av.CodecContext.create("h264", "r")
    dec.options = {"threads": "1"}
    decoded = []
    for p in packets:
        decoded += [f.to_ndarray() for f in dec.decode(av.Packet(p))]
    decoded += [f.to_ndarray() for f in dec.decode(None)]
    ssim_db, psnr = _scores(frames, decoded, f"libx264 at {kbps} kbit/s")
    return sum(len(p) for p in packets), ssim_db, psnr


def score_segment_bytes(data: bytes, frames: np.ndarray) -> tuple[float, float]:
    """(SSIM dB, PSNR dB) of a segment file as it arrived (an H.264 Annex B stream, split into
    pictures by libavcodec's parser and decoded by a fresh decoder) against the source
    `frames` of that segment. Pictures missing from the decode are an error."""
    av = viewer._av()
    dec = av.CodecContext.create("h264", "r")
    dec.options = {"threads": "1"}
    decoded = []
    for p in dec.parse(data):
        decoded += [f.to_ndarray() for f in dec.decode(p)]
    for p in dec.parse(None):
        decoded += [f.to_ndarray() for f in dec.decode(p)]
    decoded += [f.to_ndarray() for f in dec.decode(None)]
    return _scores(frames, decoded, "received segment")


def segment_files(segment_duration_ns: int) -> Path:
    """The encoded ladder's segment files, what an emulated ABR server serves:
    `<rung>/<k>.h264` for each clip segment k, each the concatenated pictures of
    :func:`_encoded_packets` (the same encoder and settings as the ladder's CSV, so each file has
    the CSV's `size_bytes`; checked). Cached beside the CSV, the directory made as a hidden
    sibling and renamed into place."""
    seg_frames = _segment_frames(segment_duration_ns)
    csv_path = ladder_csv(segment_duration_ns)
    root = csv_path.with_name(f"segments-{_key(seg_frames)}")
    if root.exists():
        return root
    table = _read_sizes(csv_path)
    source = viewer.source_clip(FPS)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        for k in range(len(source) // seg_frames):
            frames = source[k * seg_frames:(k + 1) * seg_frames]
            for rung, kbps in enumerate(SYNTHETIC_RUNGS_KBPS):
                data = b"".join(_encoded_packets(frames, kbps))
                if len(data) != table[(k, rung)]:
                    raise LadderError(f"segment {k} rung {rung}: encoded {len(data)} bytes, the cached "
                                      f"ladder says {table[(k, rung)]} (a different libx264?)")
                (tmp / str(rung)).mkdir(exist_ok=True)
                (tmp / str(rung) / f"{k}.h264").write_bytes(data)
        os.rename(tmp, root)
    except OSError:
        if not root.exists():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def source_segment(segment_duration_ns: int, segment: int, source: np.ndarray) -> np.ndarray:
    """The source frames of (looped) segment `segment` of the clip `source`."""
    n = _segment_frames(segment_duration_ns)
    k = segment % (len(source) // n)
    return source[k * n:(k + 1) * n]


def _read_sizes(path: Path) -> dict[tuple[int, int], int]:
    with path.open(newline="") as fh:
        return {(int(r["segment"]), int(r["rung"])): int(r["size_bytes"]) for r in csv.DictReader(fh)}


def ladder_csv(segment_duration_ns: int) -> Path:
    """The encoded ladder's CSV for segments of `segment_duration_ns`: from the cache, or made
    now (about a minute of one core) and cached atomically."""
    seg_frames = _segment_frames(segment_duration_ns)
    path = cache_dir() / f"ladder-{_key(seg_frames)}.csv"
    if path.exists():
        return path
    source = viewer.source_clip(FPS)
    segments = len(source) // seg_frames
    rows = []
    for k in range(segments):
        frames = source[k * seg_frames:(k + 1) * seg_frames]
        for rung, kbps in enumerate(SYNTHETIC_RUNGS_KBPS):
            size, ssim_db, psnr_db = encode_segment(frames, kbps)
            rows.append((k, rung, kbps, size, f"{ssim_db:.4f}", f"{psnr_db:.4f}"))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".csv", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["segment", "rung", "bitrate_kbps", "size_bytes", "ssim_db", "psnr_db"])
            w.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def looped(table: dict[str, Any], segments: int) -> dict[str, Any]:
    """`table` with its segments repeated in order to `segments` of them (the clip in a loop)."""
    out = dict(table)
    for column in ("sizes_bytes", "ssim_db", "psnr_db"):
        if column in table:
            out[column] = [[row[k % len(row)] for k in range(segments)] for row in table[column]]
    return out
