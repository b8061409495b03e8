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
              reverse: dict[str, Any] | None = None) -> dict[str, Any]:
    """Streams the test sequence through a router with the `forward` link (rate_bps,
    delay_ns, qdisc as in the router config) and returns frame counts and the router summary."""
    ref = reference(seconds, fps, bitrate)
    reverse = reverse or {"rate_bps": 0, "delay_ns": forward["delay_ns"],
                          "qdisc": {"kind": "droptail", "limit": {"packets": 1000}}}
    with standalone_router(forward, reverse) as (tb, router, work, _):
        sdp = work / "stream.sdp"
        sdp.write_text(SDP.format(src=netns.SENDER_IP, dst=netns.RECEIVER_IP, port=RTP_PORT))
        rx = subprocess.Popen([*tb.exec_prefix(tb.receiver_ns), "ffmpeg", "-hide_banner", "-nostdin",
                               "-protocol_whitelist", "file,udp,rtp", "-i", str(sdp), "-f", "framecrc", "-"],
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
    }
