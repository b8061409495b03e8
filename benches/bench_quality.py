"""Speed of the real-codec quality pipeline (aqmlab.viewer): scoring a 60 s flow.

    python3 benches/bench_quality.py             # about 2 minutes on a loaded 2-core machine
    python3 benches/bench_quality.py --seconds 20

For each codec (MPEG-2 with the Rb-RIO GOP at 30 fps and 1.04 Mbit/s; H.264 as the SQF
testbed's 5 Mbit/s RTP video at 25 fps) it times, in a fresh cache:
1. the one-off preparation of the clip: source, encode, loss-free decode and scores (cached
   after the first run of a scenario);
2. scoring one flow of `--seconds` at random packet loss of 0, 1 and 5 % (packets of the
   model's payload, each lost independently, seeded): decode with the losses cut out, freeze,
   PSNR and SSIM per shown picture. Printed as display frames scored per second of wall time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def flow(viewer, enc, bs, frames: int, payload: int, loss: float, seed: int):
    packets = np.resize(np.maximum(1, -(-bs.sizes_by_display() // payload)), frames)
    rng = np.random.default_rng(seed)
    frame = np.repeat(np.arange(frames), packets)
    frag = np.concatenate([np.arange(p) for p in packets])
    keep = rng.random(len(frame)) >= loss
    t = (np.arange(frames) * 1e9 / enc.fps).astype(np.int64)
    return viewer.FlowFrames(0, t, packets, frame[keep], frag[keep], enc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    args = ap.parse_args()
    os.environ["AQMLAB_CACHE"] = tempfile.mkdtemp(prefix="aqmlab-bench-quality-")
    from aqmlab import viewer

    cases = [("MPEG-2 IBBPBBPBB 30 fps 1.04 Mbit/s", viewer.mpeg_encoding("IBBPBBPBB", 30, 1.04e6), 972),
             ("H.264 IPPP 25 fps 5 Mbit/s, 1316 B slices", viewer.rtp_encoding(25, 5e6, 1316), 1316)]
    print(f"{'codec':45} {'step':22} {'frames':>7} {'wall s':>8} {'frames/s':>9} {'PSNR dB':>8} {'freeze s':>8}")
    for name, enc, payload in cases:
        started = time.perf_counter()
        source = viewer.source_clip(enc.fps)
        bs, clean = viewer.prepare(enc, source)
        wall = time.perf_counter() - started
        print(f"{name:45} {'prepare clip (once)':22} {enc.frames:7d} {wall:8.2f} {enc.frames / wall:9.1f} "
              f"{clean.psnr.mean():8.2f} {'':>8}")
        frames = int(args.seconds * enc.fps)
        for loss in (0.0, 0.01, 0.05):
            ff = flow(viewer, enc, bs, frames, payload, loss, seed=1)
            started = time.perf_counter()
            q = viewer.score_flow(ff, source, bs, clean)
            wall = time.perf_counter() - started
            fr = viewer.freezes(q).iloc[0]
            print(f"{name:45} {f'score, {loss:.0%} loss':22} {frames:7d} {wall:8.2f} {frames / wall:9.1f} "
                  f"{fr['psnr_db']:8.2f} {fr['freeze_s']:8.2f}")


if __name__ == "__main__":
    main()
