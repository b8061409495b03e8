"""The real-codec path: ffmpeg encodes a test sequence, streams it over RTP through the
router, and ffmpeg at the receiver decodes it.

The sender encodes ffmpeg's `testsrc` pattern (every frame differs: it carries a counter) as
MPEG-2 video (RTP payload type 32, RFC 2250, a static payload type, so the receiver's SDP
needs no codec configuration) in real time. The receiver decodes to `framecrc`: one CRC per
decoded frame. The same encoding decoded from a local file, with no network, gives the
reference CRCs; a received frame is *intact* when its CRC is one of them. ffmpeg conceals
damaged slices and still outputs the frame, so a count of decoded frames alone would hide
loss; `frames_lost` = encoded - intact counts both missing and damaged frames, and
`concealed` counts the decoder's concealment reports.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.emu import netns
from aqmlab.emu.run import standalone_router

RTP_PORT = 6000
SDP = """v=0
o=- 0 0 IN IP4 {src}
s=aqmlab test sequence
c=IN IP4 {dst}
t=0 0
m=video {port} RTP/AVP 32
"""


def _encoder_args(seconds: float, fps: int, bitrate: str) -> list[str]:
    # One thread: the bitstream, hence the decoded CRCs, is then the same run after run.
    return ["-f", "lavfi", "-i", f"testsrc=size=352x288:rate={fps}", "-t", f"{seconds:g}",
            "-c:v", "mpeg2video", "-b:v", bitrate, "-g", str(fps // 2), "-threads", "1"]


def _crcs(framecrc: str) -> list[str]:
    return [line.rsplit(",", 1)[1].strip() for line in framecrc.splitlines() if line and not line.startswith("#")]


def reference(seconds: float, fps: int, bitrate: str) -> list[str]:
    """CRCs of the frames of the encoding decoded without any network."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ref.m2v"
        subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-y", *_encoder_args(seconds, fps, bitrate),
                        "-f", "mpeg2video", str(path)], check=True, capture_output=True)
        out = subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-i", str(path), "-f", "framecrc", "-"],
                             check=True, capture_output=True, text=True).stdout
    return _crcs(out)


def rtp_video(forward: dict[str, Any], seconds: float = 4.0, fps: int = 25, bitrate: str = "2M",
              reverse: dict[str, Any] | None = None, quality: bool = False) -> dict[str, Any]:
    """Streams the test sequence through a router with the `forward` link (rate_bps,
    delay_ns, qdisc as in the router config) and returns frame counts and the router summary;
    with `quality`, also "quality": what the receiving decoder produced, scored per frame as
    `aqmlab quality` scores a simulated run (docs/quality.md)."""
    ref = reference(seconds, fps, bitrate)
    reverse = reverse or {"rate_bps": 0, "delay_ns": forward["delay_ns"],
                          "qdisc": {"kind": "droptail", "limit": {"packets": 1000}}}
    with standalone_router(forward, reverse) as (tb, router, work, _):
        sdp = work / "stream.sdp"
        sdp.write_text(SDP.format(src=netns.SENDER_IP, dst=netns.RECEIVER_IP, port=RTP_PORT))
        # With quality, the decoded pictures also go to a file (raw, with their timestamps).
        pictures = work / "received.nut"
        keep = ["-c:v", "rawvideo", "-f", "nut", str(pictures)] if quality else []
        rx = subprocess.Popen([*tb.exec_prefix(tb.receiver_ns), "ffmpeg", "-hide_banner", "-nostdin",
                               "-protocol_whitelist", "file,udp,rtp", "-i", str(sdp), "-f", "framecrc", "-", *keep],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)  # the receiver listens before the first packet leaves
            subprocess.run([*tb.exec_prefix(tb.sender_ns), "ffmpeg", "-hide_banner", "-nostdin", "-re",
                            *_encoder_args(seconds, fps, bitrate), "-f", "rtp",
                            f"rtp://{netns.RECEIVER_IP}:{RTP_PORT}?pkt_size=1200"],
                           check=True, capture_output=True, timeout=seconds + 30)
            time.sleep(0.5 + 2 * forward["delay_ns"] / 1e9)
        finally:
            rx.terminate()
            out, err = rx.communicate(timeout=10)
        router.finish()
        summary = json.loads((work / "router.json").read_text())
        scored = received_quality(pictures, seconds, fps, bitrate) if quality else None
    decoded = _crcs(out)
    reference_set = set(ref)
    intact = sum(1 for c in decoded if c in reference_set)
    return {
        "frames_encoded": len(ref),
        "frames_decoded": len(decoded),
        "frames_intact": intact,
        "frames_lost": len(ref) - intact,
        "concealed": sum(1 for line in err.splitlines() if "concealing" in line),
        "router": summary,
        **({"quality": scored} if quality else {}),
    }


def _source(seconds: float, fps: int) -> np.ndarray:
    import av

    with av.open(f"testsrc=size=352x288:rate={fps}:duration={seconds:g}", format="lavfi") as c:
        return np.stack([f.reformat(format="yuv420p").to_ndarray() for f in c.decode(video=0)])


def _pictures(path: Path, fps: int) -> dict[int, np.ndarray]:
    """Decoded pictures of a raw NUT file by display index (timestamp times the frame rate,
    counted from the first picture: the stream's first frame is an I frame sent first)."""
    import av

    out: dict[int, np.ndarray] = {}
    if not path.exists():
        return out
    with av.open(str(path)) as c:
        frames = [(f.time, f.reformat(format="yuv420p").to_ndarray()) for f in c.decode(video=0)]
    if frames:
        t0 = frames[0][0]
        for t, pic in frames:
            out.setdefault(int(round((t - t0) * fps)), pic)
    return out


def received_quality(received: Path, seconds: float, fps: int, bitrate: str) -> pd.DataFrame:
    """Per frame: what the receiving decoder produced, played and scored against the source as
    aqmlab.viewer plays and scores a simulated flow, beside the network-free decode."""
    from aqmlab import viewer

    source = _source(seconds, fps)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ref.m2v"
        subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-y", *_encoder_args(seconds, fps, bitrate),
                        "-f", "mpeg2video", str(path)], check=True, capture_output=True)
        nut = Path(d) / "ref.nut"
        subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", "-i", str(path), "-c:v", "rawvideo", "-f", "nut",
                        str(nut)], check=True, capture_output=True)
        clean_pictures = _pictures(nut, fps)
    n = len(source)
    clean_state, _, clean_psnr, clean_ssim = viewer.show(clean_pictures, n, source, _unscored(n))
    clean = viewer.CleanScores([viewer.digest(clean_pictures.get(i, viewer.black_picture())) for i in range(n)],
                               clean_psnr, clean_ssim)
    state, shown, ps, ss = viewer.show(_pictures(received, fps), n, source, clean)
    return pd.DataFrame({"flow": 0, "frame_id": np.arange(n, dtype=np.uint32),
                         "t_ns": (np.arange(n) * 1e9 / fps).astype(np.uint64), "state": state,
                         "shown_frame": shown, "psnr_db": ps, "ssim": ss, "clean_psnr_db": clean_psnr})


def _unscored(n: int):
    """Clean scores that match no picture: every picture gets scored."""
    from aqmlab import viewer

    return viewer.CleanScores([b""] * n, np.zeros(n), np.zeros(n))
