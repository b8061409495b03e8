"""What the viewer sees: a real codec's pictures after a run's packet losses, frame by frame.

The papers judge video by packets and frames; this module turns a run's per-packet receive
records into pictures and scores them (docs/quality.md):

1. **Source.** ffmpeg's ``testsrc2`` pattern at CIF with temporal noise (the source of
   :mod:`aqmlab.quality`), ``CLIP_SECONDS`` long, looped: display frame ``d`` shows source
   frame ``d mod clip length``.
2. **Real encoding.** One clip (the whole GOPs that fit in ``CLIP_SECONDS``) is encoded once
   with a real codec chosen by the flow's model, and looped: every loop starts with an I frame,
   so the looped bitstream decodes as one, whatever the run's length. The codec: MPEG flows
   (the Rb-RIO paper's MPEG-1 model) as MPEG-2 video with the flow's own GOP (``IBBPBBPBB`` is
   ``g=9, bf=2``, open GOP as the model's decodability rule assumes) at the flow's mean bit rate;
   RTP video (the SQF paper's VLC stream) as H.264 with one key frame per second and slices of at most one packet's
   payload (RFC 6184's single NAL unit mode). The bit rate is the model's mean rounded to two
   significant digits (one encoding for every run of a scenario). Single-threaded, so bit-exact
   run after run; cached with its loss-free scores under ``$AQMLAB_CACHE`` (default
   ``~/.cache/aqmlab``), written atomically. The encoder closes the clip's last GOP, so the two
   B positions before each loop's end are coded as the encoder chose (one loop is 297 frames
   for the Rb-RIO GOP at 30 fps).
3. **Packetization.** Simulated frame ``d`` (display order) is real frame ``d mod clip``. The sim cut it
   into ``n`` packets; packet ``k`` carries bytes ``[k*S//n, (k+1)*S//n)`` of the real
   frame's ``S`` bytes. Sizes differ between the model and the codec, so a proportional map is
   the one that keeps both the fraction of the frame lost and where in the frame it was lost.
   Lost packets' bytes are cut out, and what arrived is passed on concatenated, as an RTP
   depacketizer does.
4. **Decode and display.** The real decoder (libavcodec via PyAV, one thread, default error
   concealment) gets every frame in decode order. A frame it outputs is shown at its display
   time; a frame it does not output (all packets lost, skipped by the sender, references gone
   and dropped by the decoder) shows the last shown picture again: a *freeze*. Before the
   first picture the screen is black (Y=16, U=V=128). Playout is assumed late enough for
   every packet that arrived (no deadline misses).
5. **Score.** PSNR (the definition of ffmpeg's ``psnr`` filter: squared error summed over
   Y, U and V over all their samples) and SSIM (ffmpeg's ``ssim`` filter, after x264: 8x8
   windows on a 4-pixel grid, planes weighted by their area) of each shown picture against the
   source frame due at that time.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from aqmlab.outdir import atomic_write
from aqmlab.quality import HEIGHT, PSNR_IDENTICAL, SOURCE_FILTER, WIDTH, QualityError

#: Seconds of source before it loops (our choice: long enough to hold several GOPs and the
#: pattern's motion, short enough to keep in memory: 10 s at 30 fps is 46 MB of YUV).
CLIP_SECONDS = 10.0
#: Picture types as libavcodec numbers them (AVPictureType): 1 I, 2 P, 3 B.
TYPE_NAMES = {1: "I", 2: "P", 3: "B"}
#: Frames sent in a flow's last TAIL_NS are not scored: their packets may be in flight at the end.
TAIL_NS = 1_000_000_000
#: Display states of a frame.
SHOWN, FROZEN = "shown", "frozen"


def _av():
    try:
        import av  # noqa: PLC0415 - heavy import only where pictures are made
    except ImportError as e:
        raise QualityError("the video quality pipeline needs PyAV (pip install av)") from e
    return av


# --------------------------------------------------------------------------- the encoding


@dataclass(frozen=True)
class Encoding:
    """How a flow's frames are encoded for real: what the cache is keyed by."""

    codec: str  # "mpeg2video" or "libx264"
    fps: float
    bit_rate: int
    gop: int  # frames from one I frame to the next
    b_frames: int  # B frames between anchors
    frames: int  # display frames of one clip loop
    slice_bytes: int = 0  # H.264: largest slice (0: one slice per picture)

    def key(self) -> str:
        av = _av()
        facts = {**asdict(self), "source": SOURCE_FILTER, "clip_s": CLIP_SECONDS, "size": [WIDTH, HEIGHT],
                 "libavcodec": av.library_versions["libavcodec"]}
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:20]


def two_digits(x: float) -> int:
    """`x` rounded to two significant digits (1_234_567 -> 1_200_000)."""
    if x <= 0:
        return 0
    return int(round(x, 1 - int(np.floor(np.log10(x)))))


def clip_frames(fps: float, gop: int) -> int:
    """Frames of one loop: the whole GOPs in CLIP_SECONDS."""
    return max(1, int(CLIP_SECONDS * fps) // gop) * gop


def mpeg_encoding(gop_pattern: str, fps: float, bit_rate: float) -> Encoding:
    """MPEG-2 for a frame model whose GOP is ``I`` followed by ``(B^k P)^m B^k`` (e.g.
    ``IBBPBBPBB``): ``g`` = its length, ``bf`` = k."""
    runs = gop_pattern[1:].split("P")
    k = len(runs[0])
    if gop_pattern[0] != "I" or any(set(r) - {"B"} or len(r) != k for r in runs):
        raise QualityError(f"gop {gop_pattern!r}: the real encoder needs I followed by a regular B..BP pattern")
    g = len(gop_pattern)
    return Encoding("mpeg2video", float(fps), two_digits(bit_rate), g, k, clip_frames(fps, g))


def rtp_encoding(fps: float, bit_rate: float, payload: int) -> Encoding:
    """H.264 for RTP video: a key frame every second, no B frames (a live stream), slices of at
    most one packet's payload."""
    g = max(1, int(round(fps)))
    return Encoding("libx264", float(fps), two_digits(bit_rate), g, 0, clip_frames(fps, g), int(payload))


def cache_dir() -> Path:
    return Path(os.environ.get("AQMLAB_CACHE", Path.home() / ".cache" / "aqmlab")) / "viewer"


def source_clip(fps: float) -> np.ndarray:
    """The source frames of one clip loop, YUV 4:2:0 as (frames, 3/2 height, width) uint8."""
    av = _av()
    spec = SOURCE_FILTER.format(fps=fps, seconds=CLIP_SECONDS)
    with av.open(spec, format="lavfi") as c:
        return np.stack([f.reformat(format="yuv420p").to_ndarray() for f in c.decode(video=0)])


@dataclass
class Bitstream:
    """A real encoding: frame bytes in decode order, with display index and picture type."""

    data: bytes
    offsets: np.ndarray  # int64, len frames + 1, into data, decode order
    display: np.ndarray  # display index of each decode-order frame
    types: np.ndarray  # picture type (1 I, 2 P, 3 B) in decode order

    def frame(self, i: int) -> bytes:
        return self.data[self.offsets[i]:self.offsets[i + 1]]

    def sizes_by_display(self) -> np.ndarray:
        sizes = np.diff(self.offsets)
        out = np.zeros(len(sizes), dtype=np.int64)
        out[self.display] = sizes
        return out

    def types_by_display(self) -> np.ndarray:
        out = np.zeros(len(self.types), dtype=np.uint8)
        out[self.display] = self.types
        return out


def prepare(enc: Encoding, source: np.ndarray) -> tuple[Bitstream, CleanScores]:
    """The encoding and the scores of its loss-free decode: from the cache, or made now and
    cached (one file, written to a hidden sibling and renamed: never a partial entry)."""
    path = cache_dir() / f"{enc.key()}.npz"
    if path.exists():
        z = np.load(path)
        bs = Bitstream(z["data"].tobytes(), z["offsets"], z["display"], z["types"])
        return bs, CleanScores([d.tobytes() for d in z["digests"]], z["psnr"], z["ssim"])
    bs = _encode(enc, source)
    clean = clean_scores(bs, enc, source)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, data=np.frombuffer(bs.data, dtype=np.uint8), offsets=bs.offsets, display=bs.display,
                     types=bs.types, digests=np.frombuffer(b"".join(clean.digests), dtype=np.uint8).reshape(-1, 16),
                     psnr=clean.psnr, ssim=clean.ssim)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return bs, clean


def _encoder(enc: Encoding):
    av = _av()
    ctx = av.CodecContext.create(enc.codec, "w")
    ctx.width, ctx.height, ctx.pix_fmt = WIDTH, HEIGHT, "yuv420p"
    rate = Fraction(enc.fps).limit_denominator(1001)
    ctx.time_base, ctx.framerate = 1 / rate, rate
    opts = {"b": str(enc.bit_rate), "g": str(enc.gop), "bf": str(enc.b_frames), "threads": "1"}
    if enc.codec == "libx264":
        # No scene cuts, fixed key frame interval, no B pyramid: the GOP we asked for.
        x264 = f"keyint={enc.gop}:min-keyint={enc.gop}:scenecut=0:b-pyramid=0:sliced-threads=0"
        if enc.slice_bytes:
            x264 += f":slice-max-size={enc.slice_bytes}"
        opts.update({"preset": "veryfast", "x264-params": x264})
    else:
        # Fixed GOP: scene-change I frames would shift the pattern.
        opts.update({"sc_threshold": "1000000000"})
    ctx.options = opts
    ctx.open()
    return ctx


def _encode(enc: Encoding, source: np.ndarray) -> Bitstream:
    av = _av()
    ctx = _encoder(enc)
    packets = []
    for d in range(enc.frames):
        frame = av.VideoFrame.from_ndarray(source[d], format="yuv420p")
        frame.pts = d
        packets += ctx.encode(frame)
    packets += ctx.encode(None)
    if len(packets) != enc.frames:
        raise QualityError(f"{enc.codec}: {len(packets)} packets for {enc.frames} frames")
    data = b"".join(bytes(p) for p in packets)
    offsets = np.concatenate([[0], np.cumsum([p.size for p in packets])]).astype(np.int64)
    display = np.array([p.pts for p in packets], dtype=np.int64)
    types = np.array([_picture_type(p) for p in packets], dtype=np.uint8)
    return Bitstream(data, offsets, display, types)


def _picture_type(packet) -> int:
    """The picture type the encoder chose, from its quality-stats side data (u32 quality, u8
    picture type; libavcodec's AV_PKT_DATA_QUALITY_STATS)."""
    import ctypes

    for sd in packet.iter_sidedata():
        if sd.data_type == "quality_stats":
            return ctypes.string_at(sd.buffer_ptr, 5)[4]
    return 1 if packet.is_keyframe else 2


# ------------------------------------------------------------------- losses to bytes


def kept_bytes(frame: bytes, packets: int, received: Iterable[int]) -> bytes:
    """The bytes of a real frame that arrive when only the `received` of the model's `packets`
    packets did: packet k carries [k*S//n, (k+1)*S//n) (module docs, step 3)."""
    size = len(frame)
    got = sorted(set(received))
    if packets <= 0 or not got:
        return b""
    if len(got) == packets:
        return frame
    return b"".join(frame[k * size // packets:(k + 1) * size // packets] for k in got)


@dataclass
class FlowFrames:
    """One flow as the quality pipeline needs it, in display order: per frame its time, the
    packets the model cut it into, and which of them arrived (frame indices in `rx_frame`,
    fragment indices in `rx_frag`)."""

    flow: int
    t_ns: np.ndarray
    packets: np.ndarray
    rx_frame: np.ndarray
    rx_frag: np.ndarray
    encoding: Encoding

    def until(self, end_ns: int) -> FlowFrames:
        """The frames sent before `end_ns` only."""
        n = int(np.searchsorted(self.t_ns, end_ns))
        keep = self.rx_frame < n
        return FlowFrames(self.flow, self.t_ns[:n], self.packets[:n], self.rx_frame[keep], self.rx_frag[keep],
                          self.encoding)

    def received(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(len(self.t_ns))]
        for f, k in zip(self.rx_frame.tolist(), self.rx_frag.tolist(), strict=True):
            out[f].append(k)
        return out


def frame_rate(t_ns: np.ndarray, default: float) -> float:
    """Frames per second of a stream's frame times: frames over their span (a shaped stream
    spaces the frames of a window unevenly, so no single gap will do), snapped to the nearest
    whole rate within 1 %."""
    if len(t_ns) < 2 or t_ns[-1] <= t_ns[0]:
        return default
    fps = 1e9 * (len(t_ns) - 1) / float(t_ns[-1] - t_ns[0])
    return float(round(fps)) if abs(fps - round(fps)) < 0.01 * fps else round(fps, 3)


def _by_sequence(first_seq: np.ndarray, packets: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Frame and fragment of each received sequence number, given each frame's run of numbers."""
    seqs = np.unique(seqs)
    frame = np.searchsorted(first_seq, seqs, side="right") - 1
    ok = (frame >= 0) & (seqs < first_seq[np.maximum(frame, 0)] + packets[np.maximum(frame, 0)])
    return frame[ok], (seqs - first_seq[np.maximum(frame, 0)])[ok]


def received_seqs(m: pd.DataFrame, first_seq: np.ndarray, packets: np.ndarray, t_ns: np.ndarray,
                   deadline_ns: int | None) -> np.ndarray:
    """The sequence numbers of a flow's receive log `m`; with a playout deadline, only those that
    arrived by their frame's due time plus the deadline (a real-time receiver's jitter buffer
    of fixed delay plays each frame then, and a later packet is as good as lost)."""
    seqs = m["seq"].to_numpy(np.int64)
    if deadline_ns is None or not len(seqs):
        return seqs
    frame = np.clip(np.searchsorted(first_seq, seqs, side="right") - 1, 0, max(len(t_ns) - 1, 0))
    return seqs[m["recv_ns"].to_numpy(np.int64) <= t_ns[frame] + deadline_ns]


def mpeg_flows(frames: pd.DataFrame, media: pd.DataFrame, deadline_ns: int | None = None) -> list[FlowFrames]:
    """MPEG flows from ``frames.parquet`` and the receive log ``media.parquet``: the sender
    numbers its packets consecutively over the frames it sends, so frame k's packets are the run
    of sequence numbers after the packets of frames 0..k-1. `deadline_ns`: see `rtp_flows`."""
    out = []
    for flow, f in frames.sort_values(["flow", "frame_id"]).groupby("flow", sort=True):
        packets = f["packets"].to_numpy(np.int64) * f["sent"].to_numpy(np.int64)
        first_seq = np.concatenate([[0], np.cumsum(packets)[:-1]])
        seqs = received_seqs(media[media["flow"] == flow], first_seq, packets, f["t_ns"].to_numpy(np.int64),
                              deadline_ns)
        rx_frame, rx_frag = _by_sequence(first_seq, packets, seqs)
        gop_len = int(f["gop_position"].max()) + 1
        pattern = "".join(TYPE_NAMES[int(t)] for t in f.sort_values("gop_position")
                          .drop_duplicates("gop_position")["frame_type"])
        if len(pattern) != gop_len:
            raise QualityError(f"flow {flow}: too few frames to know its GOP")
        t = f["t_ns"].to_numpy(np.int64)
        fps = frame_rate(t, 30.0)
        # The model's mean rate over one GOP (not over the frames the run happened to produce).
        bit_rate = float(f.groupby("gop_position")["size"].mean().mean()) * 8 * fps
        enc = mpeg_encoding(pattern, fps, bit_rate)
        out.append(FlowFrames(int(flow), t, packets, rx_frame, rx_frag, enc))
    return out


def rtp_flows(media_frames: pd.DataFrame, media: pd.DataFrame,
              payload: dict[int, int] | None = None, deadline_ns: int | None = None) -> list[FlowFrames]:
    """RTP video flows from ``media_frames.parquet`` (each frame's run of sequence numbers) and
    ``media.parquet``. `payload` is each flow's largest payload (default: the largest packet
    seen minus the 40 B of IP/UDP/RTP headers). `deadline_ns`: a packet received later than its
    frame's due time plus this counts as lost (default: every received packet counts)."""
    out = []
    for flow, f in media_frames.sort_values(["flow", "frame_id"]).groupby("flow", sort=True):
        m = media[media["flow"] == flow]
        first_seq, n_packets = f["first_seq"].to_numpy(np.int64), f["packets"].to_numpy(np.int64)
        t = f["t_ns"].to_numpy(np.int64)
        rx_frame, rx_frag = _by_sequence(first_seq, n_packets, received_seqs(m, first_seq, n_packets, t, deadline_ns))
        fps = frame_rate(t, 25.0)
        pl = (payload or {}).get(int(flow)) or int(m["size"].max() - 40 if len(m) else 1316)
        enc = rtp_encoding(fps, float(f["size"].mean()) * 8 * fps, pl)
        out.append(FlowFrames(int(flow), t, f["packets"].to_numpy(np.int64), rx_frame, rx_frag, enc))
    return out


# ------------------------------------------------------------------- decode and display


def _decoder(codec: str):
    av = _av()
    ctx = av.CodecContext.create("h264" if codec == "libx264" else codec, "r")
    ctx.thread_count = 1  # one thread: the same damaged stream decodes to the same pictures
    return ctx


def decode(bs: Bitstream, codec: str, frames: int, received: list[list[int]] | None = None,
           packets: np.ndarray | None = None) -> dict[int, np.ndarray]:
    """Decodes `frames` display frames of the looped clip with the losses applied (None: no
    loss); returns the pictures the decoder output, by display index."""
    if (received is None) != (packets is None):
        raise ValueError("decode: pass received and packets together, or neither")
    av = _av()
    ctx = _decoder(codec)
    pictures: dict[int, np.ndarray] = {}

    def take(out) -> None:
        for fr in out:
            if fr.pts is not None and fr.pts not in pictures:
                pictures[int(fr.pts)] = fr.to_ndarray()

    clip = len(bs.display)
    for loop in range(-(-frames // clip)):
        for i in range(clip):
            d = loop * clip + int(bs.display[i])
            if d >= frames:
                continue  # the flow ended before this frame
            if received is None or packets is None:
                payload = bs.frame(i)
            else:
                payload = kept_bytes(bs.frame(i), int(packets[d]), received[d])
            if not payload:
                continue
            pkt = av.Packet(payload)
            pkt.pts = pkt.dts = d
            try:
                take(ctx.decode(pkt))
            except av.error.FFmpegError:
                continue  # the decoder refused the damaged frame: nothing to show for it
    try:
        take(ctx.decode(None))
    except av.error.FFmpegError:
        pass
    return pictures


def black_picture() -> np.ndarray:
    pic = np.full((HEIGHT * 3 // 2, WIDTH), 128, dtype=np.uint8)
    pic[:HEIGHT] = 16
    return pic


# ------------------------------------------------------------------------------ scores


def _planes(pic: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Y, U, V of a (3/2 h, w) yuv420p array as PyAV lays it out."""
    h, w = HEIGHT, WIDTH
    y = pic[:h]
    chroma = pic[h:].reshape(2, h // 2, w // 2)
    return y, chroma[0], chroma[1]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    """ffmpeg's psnr filter's psnr_avg: 10 log10(255^2 / MSE), the MSE over every sample of
    Y, U and V together (vf_psnr weights each plane's MSE by its share of the samples)."""
    sse = int(np.sum((a.astype(np.int32) - b.astype(np.int32)) ** 2, dtype=np.int64))
    if sse == 0:
        return PSNR_IDENTICAL
    return float(10 * np.log10(255.0**2 * a.size / sse))


def _ssim_plane(a: np.ndarray, b: np.ndarray) -> float:
    """x264's SSIM as ffmpeg's ssim filter computes it: sums over 4x4 blocks, windows of 2x2
    blocks (8x8 pixels) every 4 pixels, ssim_end1's constants (Wang et al. 2004, eq. 13)."""
    h4, w4 = a.shape[0] // 4, a.shape[1] // 4
    # int32 holds every sum: an 8x8 window's sum of squares is at most 2 * 64 * 255^2.
    a = a[:h4 * 4, :w4 * 4].astype(np.int32)
    b = b[:h4 * 4, :w4 * 4].astype(np.int32)

    def blocks(x: np.ndarray) -> np.ndarray:
        s = x.reshape(h4, 4, w4, 4).sum(axis=(1, 3), dtype=np.int32).astype(np.float64)
        return s[:-1, :-1] + s[1:, :-1] + s[:-1, 1:] + s[1:, 1:]

    s1, s2 = blocks(a), blocks(b)
    ss, s12 = blocks(a * a + b * b), blocks(a * b)
    c1 = int(0.01 * 0.01 * 255 * 255 * 64 + 0.5)
    c2 = int(0.03 * 0.03 * 255 * 255 * 64 * 63 + 0.5)
    var = ss * 64 - s1 * s1 - s2 * s2
    cov = s12 * 64 - s1 * s2
    num = (2 * s1 * s2 + c1) * (2 * cov + c2)
    den = (s1 * s1 + s2 * s2 + c1) * (var + c2)
    return float(np.mean(num / den))


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """ffmpeg's ssim filter's "All": the planes' SSIM weighted by their sample counts."""
    pa, pb = _planes(a), _planes(b)
    weights = [p.size for p in pa]
    return float(sum(w * _ssim_plane(x, y) for w, x, y in zip(weights, pa, pb, strict=True)) / sum(weights))


# --------------------------------------------------------------------------- per flow


@dataclass
class CleanScores:
    """Scores of the loss-free decode, so that pictures identical to it need no scoring."""

    digests: list[bytes]
    psnr: np.ndarray
    ssim: np.ndarray


def digest(pic: np.ndarray) -> bytes:
    """A picture's identity: equal digests, equal pictures (and equal scores)."""
    return hashlib.blake2b(pic.tobytes(), digest_size=16).digest()


def clean_scores(bs: Bitstream, enc: Encoding, source: np.ndarray) -> CleanScores:
    n = enc.frames
    pics = decode(bs, enc.codec, n)
    ps, ss, dg = np.zeros(n), np.zeros(n), []
    for d in range(n):
        ref = source[d]
        pic = pics.get(d, black_picture())
        dg.append(digest(pic))
        ps[d], ss[d] = psnr(pic, ref), ssim(pic, ref)
    return CleanScores(dg, ps, ss)


def show(pictures: dict[int, np.ndarray], frames: int, source: np.ndarray, clean: CleanScores,
         screen: list[np.ndarray] | None = None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Plays `frames` display frames from the decoder's `pictures` as a player would (a frame
    without a picture repeats the last shown one) and scores each shown picture against the
    source frame due then (source[d mod len(clean)]). Returns per frame: state, the frame whose
    picture is shown (-1: black), PSNR and SSIM; appends every shown picture to `screen`."""
    clip = len(clean.psnr)
    shown_id = np.full(frames, -1, dtype=np.int64)
    state = []
    ps, ss = np.zeros(frames), np.zeros(frames)
    last, last_id, last_digest = black_picture(), -1, None
    cache: dict[tuple[bytes, int], tuple[float, float]] = {}
    for d in range(frames):
        if d in pictures:
            last, last_id, last_digest = pictures[d], d, None
            state.append(SHOWN)
        else:
            state.append(FROZEN)
        shown_id[d] = last_id
        if screen is not None:
            screen.append(last)
        if last_digest is None:
            last_digest = digest(last)
        ref_index = d % clip
        if last_id == d and last_digest == clean.digests[ref_index]:
            ps[d], ss[d] = clean.psnr[ref_index], clean.ssim[ref_index]
            continue
        key = (last_digest, ref_index)
        if key not in cache:
            ref = source[ref_index]
            cache[key] = (psnr(last, ref), ssim(last, ref))
        ps[d], ss[d] = cache[key]
    return state, shown_id, ps, ss


def score_flow(ff: FlowFrames, source: np.ndarray, bs: Bitstream, clean: CleanScores,
               screen: list[np.ndarray] | None = None) -> pd.DataFrame:
    """One row per display frame of the flow: what was shown (appended to `screen`) and how it
    scores."""
    received = ff.received()
    n = len(ff.t_ns)
    pictures = decode(bs, ff.encoding.codec, n, received, ff.packets)
    state, shown_id, ps, ss = show(pictures, n, source, clean, screen)
    types = np.resize(bs.types_by_display(), n)
    got = np.array([len(r) for r in received], dtype=np.uint32)
    return pd.DataFrame({
        "flow": np.full(n, ff.flow, dtype=np.uint32),
        "frame_id": np.arange(n, dtype=np.uint32),
        "t_ns": ff.t_ns.astype(np.uint64),
        "frame_type": [TYPE_NAMES.get(int(t), "?") for t in types],
        "packets": ff.packets.astype(np.uint32),
        "packets_received": got,
        "damaged": (got < ff.packets) | (ff.packets == 0),
        "state": state,
        "shown_frame": shown_id,
        "psnr_db": ps,
        "ssim": ss,
        "clean_psnr_db": np.resize(clean.psnr, n),
    })


def write_mp4(pictures: list[np.ndarray], fps: float, path: Path) -> Path:
    """Pictures as an H.264 mp4 a person can watch (CRF 18: visually lossless; one thread)."""
    av = _av()
    rate = Fraction(fps).limit_denominator(1001)

    def write(tmp: Path) -> None:
        with av.open(str(tmp), "w", format="mp4") as out:
            stream = out.add_stream("libx264", rate=rate)
            stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
            stream.options = {"crf": "18", "preset": "veryfast", "threads": "1"}
            for pic in pictures:
                out.mux(stream.encode(av.VideoFrame.from_ndarray(pic, format="yuv420p")))
            out.mux(stream.encode(None))

    atomic_write(path, write)
    return path


def flow_videos(ff: FlowFrames, folder: Path) -> list[Path]:
    """`flow<N>-received.mp4` (what the viewer saw) and `flow<N>-sent.mp4` (the same frames of
    the encoding without loss), side by side in `folder`."""
    source = source_clip(ff.encoding.fps)
    bs, clean = prepare(ff.encoding, source)
    received: list[np.ndarray] = []
    score_flow(ff, source, bs, clean, received)
    n = len(ff.t_ns)
    sent: list[np.ndarray] = []
    show(decode(bs, ff.encoding.codec, n), n, source, clean, sent)
    return [write_mp4(received, ff.encoding.fps, folder / f"flow{ff.flow}-received.mp4"),
            write_mp4(sent, ff.encoding.fps, folder / f"flow{ff.flow}-sent.mp4")]


def score_flows(flows: list[FlowFrames]) -> pd.DataFrame:
    """Scores every flow; flows sharing an encoding share its encode, source and clean scores."""
    parts = []
    by_encoding: dict[Encoding, list[FlowFrames]] = {}
    for ff in flows:
        by_encoding.setdefault(ff.encoding, []).append(ff)
    from aqmlab.progress import batch

    advance = batch("encodings prepared, flows scored", len(by_encoding) + len(flows))
    for enc, group in by_encoding.items():
        source = source_clip(enc.fps)
        bs, clean = prepare(enc, source)
        advance()
        for ff in group:
            parts.append(score_flow(ff, source, bs, clean))
            advance()
    if not parts:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True).sort_values(["flow", "frame_id"], ignore_index=True)


def freezes(q: pd.DataFrame) -> pd.DataFrame:
    """Per flow: freeze count (runs of frozen frames) and total freeze time (frames frozen
    times the frame interval)."""
    rows = []
    for flow, f in q.groupby("flow", sort=True):
        frozen = (f["state"] == FROZEN).to_numpy()
        starts = int(np.sum(frozen[1:] & ~frozen[:-1]) + (1 if len(frozen) and frozen[0] else 0))
        t = f["t_ns"].to_numpy(np.int64)
        interval = float(np.median(np.diff(t))) / 1e9 if len(t) > 1 else 0.0
        rows.append({"flow": int(flow), "frames": len(f), "freezes": starts, "freeze_s": float(frozen.sum()) * interval,
                     "psnr_db": float(f["psnr_db"].mean()), "ssim": float(f["ssim"].mean()),
                     "clean_psnr_db": float(f["clean_psnr_db"].mean())})
    return pd.DataFrame(rows)


def flows_of_run(tables: dict[str, pd.DataFrame], deadline_ns: int | None = None) -> list[FlowFrames]:
    """Every video flow of a results directory's tables (MPEG and RTP video); with
    `deadline_ns`, packets later than their frame's due time plus it count as lost."""
    flows: list[FlowFrames] = []
    media = tables.get("media", pd.DataFrame(columns=["flow", "seq", "size", "recv_ns"]))
    if "frames" in tables and len(tables["frames"]):
        flows += mpeg_flows(tables["frames"], media, deadline_ns)
    if "media_frames" in tables and len(tables["media_frames"]):
        flows += rtp_flows(tables["media_frames"], media, deadline_ns=deadline_ns)
    if "flows" in tables:
        # A frame sent in the flow's last second may still be in flight (paced, queued) when the
        # run ends: its missing packets are not losses, so it is left out (our choice).
        stop = tables["flows"].set_index("flow")["stop_ns"]
        flows = [ff.until(int(stop[ff.flow]) - TAIL_NS) for ff in flows]
    return flows



def score_results(run_dir: Path, flows: list[int] | None = None, videos: bool = False,
                  deadline_ns: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame, list[Path]]:
    """`aqmlab quality RUN_DIR`: scores every video flow of a results directory (or the given
    ones) and writes quality.parquet (one row per frame and flow), quality_flows.csv (one row per
    flow) and quality.png (PSNR over time); with `videos`, each flow's mp4s (flow_videos); with
    `deadline_ns`, as a real-time receiver that plays each frame that long after its due time."""
    from aqmlab.plots import plot_psnr
    from aqmlab.run import read_results

    run_dir = Path(run_dir)
    if not (run_dir / "summary.json").exists():
        raise FileNotFoundError(f"{run_dir} is not an aqmlab results directory (no summary.json)")
    video = flows_of_run(read_results(run_dir), deadline_ns)
    if not video:
        raise QualityError(f"{run_dir}: no video flow (needs frames.parquet or media_frames.parquet)")
    known = sorted(ff.flow for ff in video)
    if flows:
        missing = sorted(set(flows) - set(known))
        if missing:
            raise QualityError(f"--flow: {missing} are not video flows of this run; allowed: {known}")
        video = [ff for ff in video if ff.flow in set(flows)]
    q = score_flows(video)
    per_flow = freezes(q)
    if deadline_ns is not None:
        per_flow["deadline_ms"] = deadline_ns / 1e6  # says which scoring the files hold
    written = [run_dir / "quality.parquet", run_dir / "quality_flows.csv", run_dir / "quality.png"]
    atomic_write(written[0], lambda p: q.to_parquet(p, index=False))
    atomic_write(written[1], lambda p: per_flow.to_csv(p, index=False))
    atomic_write(written[2], lambda p: plot_psnr(q, f"{run_dir.name}: PSNR of the shown pictures", p))
    if videos:
        for ff in video:
            written += flow_videos(ff, run_dir)
    return q, per_flow, written


def group_quality(tables: dict[str, pd.DataFrame], members: list[int], max_flows: int,
                  window_ns: tuple[int, int] | None = None) -> dict[str, float]:
    """What the viewers of a group of video flows see, for the reproductions' quality tables:
    the first `max_flows` members (by flow id) are scored, and their per-flow means of PSNR, SSIM,
    freeze count and freeze time averaged, over the frames due in `window_ns` (default: all)."""
    chosen = sorted(members)[:max_flows]
    picked = {name: df[df["flow"].isin(chosen)] for name, df in tables.items()
              if name in ("frames", "media", "media_frames", "flows")}
    video = flows_of_run(picked)
    if not video:
        return {}
    q = score_flows(video)
    if window_ns is not None:
        q = q[(q["t_ns"] >= window_ns[0]) & (q["t_ns"] < window_ns[1])]
    per_flow = freezes(q)
    return {"flows": len(per_flow), **{c: float(per_flow[c].mean()) for c in
                                       ("psnr_db", "ssim", "freezes", "freeze_s", "clean_psnr_db")}}


#: The reproductions' quality table columns: (measurement key, column name, format).
QUALITY_COLUMNS = (("psnr_db", "psnr_db", ".2f"), ("ssim", "ssim", ".3f"), ("freezes", "freezes", ".1f"),
                   ("freeze_s", "freeze_s", ".2f"), ("clean_psnr_db", "loss_free_psnr_db", ".2f"))


def quality_cells(pictures: list[dict[str, float]], cell) -> dict[str, str]:
    """A quality table row's cells from group_quality results over seeds; `cell(values, fmt)`
    is the reproduction's own mean (± CI) formatter."""
    return {col: cell([p[key] for p in pictures], fmt) for key, col, fmt in QUALITY_COLUMNS}
