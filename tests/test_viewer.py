"""The real-codec quality pipeline (aqmlab.viewer): losses cut from a real MPEG-2/H.264
bitstream, decoded by the real decoder, frozen as a player would, scored against the source."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from aqmlab import viewer
from aqmlab.cli import main

GOP = 9  # IBBPBBPBB
FRAMES = 4 * GOP + 1  # ends on an I frame: the B frames before it have both anchors
PAYLOAD = 972  # the Rb-RIO model's 1000 B packets


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """The MPEG-2 clip of the source with the Rb-RIO GOP, cached in a fresh dir."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AQMLAB_CACHE", str(tmp_path_factory.mktemp("cache")))
    enc = viewer.mpeg_encoding("IBBPBBPBB", 30, 1_000_000)
    source = viewer.source_clip(30)
    bs, clean = viewer.prepare(enc, source)
    yield enc, source, bs, clean
    mp.undo()


def flow_with_loss(enc, bs, lost: set[tuple[int, int]], frames: int = FRAMES) -> viewer.FlowFrames:
    """A flow of `frames` frames, frame d cut into packets as the model would cut the real
    frame's size, with the (frame, packet) pairs in `lost` missing."""
    packets = np.resize(np.maximum(1, -(-bs.sizes_by_display() // PAYLOAD)), frames)
    rx = [(d, k) for d in range(frames) for k in range(packets[d]) if (d, k) not in lost]
    return viewer.FlowFrames(0, np.arange(frames, dtype=np.int64) * 33_333_333, packets,
                             np.array([d for d, _ in rx]), np.array([k for _, k in rx]), enc)


def score(clip, lost, frames: int = FRAMES) -> pd.DataFrame:
    enc, source, bs, clean = clip
    return viewer.score_flow(flow_with_loss(enc, bs, lost, frames), source, bs, clean)


def changed(q: pd.DataFrame) -> set[int]:
    return set(q.loc[q["psnr_db"] != q["clean_psnr_db"], "frame_id"].tolist())


def test_the_encoding_has_the_models_gop(clip):
    _, _, bs, _ = clip
    types = "".join(viewer.TYPE_NAMES[t] for t in bs.types_by_display())
    assert types[:27] == "IBBPBBPBB" * 3


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg command")
def test_no_loss_scores_the_encoders_own_psnr_and_ffmpegs_filters(clip, tmp_path):
    enc, source, bs, clean = clip
    q = score(clip, set())
    assert (q["state"] == viewer.SHOWN).all() and not q["damaged"].any()
    # Exactly the loss-free decode's scores, frame by frame.
    assert q["psnr_db"].tolist() == clean.psnr[:FRAMES].tolist()
    assert q["ssim"].tolist() == clean.ssim[:FRAMES].tolist()
    # And what ffmpeg's own psnr and ssim filters say of the same pictures. (Not of the system
    # ffmpeg's own decode: Debian's ffmpeg 5.1 decodes one B frame of this newer libavcodec's
    # encoding differently, a chroma error of 20 dB, so the pictures come from our decoder.)
    pictures = viewer.decode(bs, enc.codec, FRAMES)
    (tmp_path / "dec.yuv").write_bytes(b"".join(pictures[d].tobytes() for d in range(FRAMES)))
    (tmp_path / "src.yuv").write_bytes(np.ascontiguousarray(source[:FRAMES]).tobytes())
    raw = ["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", "352x288", "-framerate", "30"]
    subprocess.run(["ffmpeg", "-hide_banner", "-nostdin", *raw, "-i", "dec.yuv", *raw, "-i", "src.yuv",
                    "-lavfi", "[0:v]split[a][b];[1:v]split[c][d];[a][c]psnr=stats_file=psnr.log;"
                    "[b][d]ssim=stats_file=ssim.log", "-f", "null", "-"],
                   cwd=tmp_path, check=True, capture_output=True)
    ff_psnr = [float(m) for m in re.findall(r"psnr_avg:([0-9.]+)", (tmp_path / "psnr.log").read_text())]
    ff_ssim = [float(m) for m in re.findall(r"All:([0-9.]+)", (tmp_path / "ssim.log").read_text())]
    assert len(ff_psnr) == FRAMES and len(ff_ssim) == FRAMES
    np.testing.assert_allclose(q["psnr_db"], ff_psnr, atol=0.006)  # the log prints 2 decimals
    np.testing.assert_allclose(q["ssim"], ff_ssim, atol=2e-6)


def test_the_clip_loops_seamlessly(clip):
    enc, _, bs, clean = clip
    frames = enc.frames + 2 * GOP + 1
    q = score(clip, set(), frames)
    assert (q["state"] == viewer.SHOWN).all()
    # The second loop's pictures are the first loop's, so they score the same.
    assert q["psnr_db"].tolist() == np.resize(clean.psnr, frames).tolist()
    assert q["frame_type"].iloc[enc.frames] == "I"


@pytest.mark.parametrize("which", ["first packet", "middle packet", "every packet"])
def test_an_i_frame_loss_hurts_its_gop_and_nothing_else(clip, which):
    enc, _, bs, _ = clip
    i_frame = GOP  # the second GOP's I frame, display 9
    n = int(flow_with_loss(enc, bs, set()).packets[i_frame])
    lost = {"first packet": {(i_frame, 0)}, "middle packet": {(i_frame, n // 2)},
            "every packet": {(i_frame, k) for k in range(n)}}[which]
    q = score(clip, lost)
    gop = set(range(GOP, 2 * GOP))
    # The rest of its GOP is frozen or degraded ...
    assert gop <= changed(q)
    hurt = q[q["frame_id"].isin(gop)]
    assert (hurt["psnr_db"] < hurt["clean_psnr_db"]).all()
    # ... and nothing else but the two B frames before it, which predict from it (open GOP,
    # as the Rb-RIO model's decodability rule has it).
    assert changed(q) <= gop | {GOP - 2, GOP - 1}
    if which == "every packet":
        assert q.loc[q["frame_id"] == i_frame, "state"].item() == viewer.FROZEN


def test_a_p_or_b_loss_hurts_less_than_an_i_loss(clip):
    enc, _, bs, _ = clip
    packets = flow_with_loss(enc, bs, set()).packets

    def mean_psnr(d: int) -> float:
        """Mean PSNR of the flow when frame d is lost whole."""
        return float(score(clip, {(d, k) for k in range(packets[d])})["psnr_db"].mean())

    i_loss, p_loss, b_loss = mean_psnr(GOP), mean_psnr(GOP + 3), mean_psnr(GOP + 1)
    clean = float(score(clip, set())["psnr_db"].mean())
    assert i_loss < p_loss < clean
    assert i_loss < b_loss < clean
    assert p_loss < b_loss  # a P frame is a reference, a B frame is not


def test_lossy_scores_are_reproducible_byte_for_byte(clip, tmp_path, monkeypatch):
    enc, source, bs, _ = clip
    rng = np.random.default_rng(7)
    packets = flow_with_loss(enc, bs, set()).packets
    lost = {(d, k) for d in range(FRAMES) for k in range(packets[d]) if rng.random() < 0.08}
    first = viewer.score_flows([flow_with_loss(enc, bs, lost)])
    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "fresh"))  # encode and decode again from scratch
    second = viewer.score_flows([flow_with_loss(enc, bs, lost)])
    first.to_parquet(tmp_path / "a.parquet")
    second.to_parquet(tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert first["damaged"].sum() > 3 and (first["psnr_db"] < first["clean_psnr_db"]).any()


def test_kept_bytes_maps_packet_k_of_n_to_its_share_of_the_frame():
    frame = bytes(range(100))
    assert viewer.kept_bytes(frame, 4, [0, 1, 2, 3]) == frame
    assert viewer.kept_bytes(frame, 4, [0, 3]) == frame[:25] + frame[75:]
    assert viewer.kept_bytes(frame, 3, [1]) == frame[33:66]
    assert viewer.kept_bytes(frame, 3, []) == b""


def test_freezes_counts_runs_and_time():
    q = pd.DataFrame({"flow": 0, "t_ns": np.arange(8) * 100_000_000,
                      "state": ["shown", "frozen", "frozen", "shown", "frozen", "shown", "shown", "frozen"],
                      "psnr_db": 30.0, "ssim": 0.9, "clean_psnr_db": 35.0})
    f = viewer.freezes(q).iloc[0]
    assert f["freezes"] == 3 and f["freeze_s"] == pytest.approx(0.4)


@pytest.fixture(scope="module")
def mpeg_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "mpeg"
    r = CliRunner().invoke(main, ["run", "rb-rio/mpeg-droptail", "--out", str(out), "--no-progress",
                                  "--set", "duration=3s", "--set", "flows.responsive.count=6",
                                  "--set", "flows.unresponsive.count=1", "--set", "flows.unresponsive.start=0s",
                                  "--set", "topology.bottleneck.rate=2Mbps",
                                  "--set", 'metrics.periods=[["0s","3s"]]'])
    assert r.exit_code == 0, r.output
    return out


def test_quality_command_scores_a_simulated_run(mpeg_run, tmp_path, monkeypatch):
    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "cache"))
    r = CliRunner().invoke(main, ["quality", str(mpeg_run), "--flow", "0", "--flow", "1"])
    assert r.exit_code == 0, r.output
    q = pd.read_parquet(mpeg_run / "quality.parquet")
    frames = pd.read_parquet(mpeg_run / "frames.parquet")
    assert (mpeg_run / "quality.png").stat().st_size > 0
    stop = pd.read_parquet(mpeg_run / "flows.parquet").set_index("flow")["stop_ns"]
    for flow in (0, 1):
        f = frames[frames["flow"] == flow].sort_values("frame_id")
        # Every frame but those of the flow's last second, whose packets may be in flight.
        f = f[f["t_ns"] < stop[flow] - viewer.TAIL_NS]
        g = q[q["flow"] == flow].sort_values("frame_id")
        assert len(g) == len(f) > 0
        # Damage is where the simulator lost packets or skipped frames, nowhere else.
        lost = (f["packets_received"] < f["packets"]) | (f["sent"] == 0)
        assert g["damaged"].tolist() == lost.tolist()
        assert lost.any(), "the 2 Mbit/s bottleneck must lose video"
        # The received packets are the ones the simulator counted per frame.
        sent = f["sent"] == 1
        assert g["packets_received"][sent.to_numpy()].tolist() == f["packets_received"][sent].tolist()


def test_quality_command_refuses_bad_input(mpeg_run, tmp_path):
    r = CliRunner().invoke(main, ["quality", str(mpeg_run), "--flow", "99"])
    assert r.exit_code == 2
    assert "--flow: [99] are not video flows" in r.output
    r = CliRunner().invoke(main, ["quality", str(tmp_path)])
    assert r.exit_code == 2 and "not an aqmlab results directory" in r.output
    assert not (tmp_path / "quality.parquet").exists()


def test_rb_rio_reproduction_scores_the_streams_pictures(tmp_path, monkeypatch):
    from aqmlab.reproduce.rb_rio import Job, quality_table, run_job

    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "cache"))
    over = ("duration=4s", 'metrics.periods=[["0s","4s"]]', "flows.responsive.count=4",
            "flows.unresponsive.count=2", "flows.unresponsive.start=1s", "flows.unresponsive.stop=4s",
            "topology.bottleneck.rate=1Mbps")
    r = run_job(Job("mpeg", "droptail", 1, over, quality_flows=1))
    p = r["picture"]["responsive"]
    assert p["flows"] == 1
    assert 0 < p["psnr_db"] < p["clean_psnr_db"] and 0 < p["ssim"] < 1 and p["freeze_s"] > 0
    assert r["picture"]["unresponsive"]["flows"] == 1
    table = quality_table([r], ("droptail",))
    assert table["group"].tolist() == ["responsive", "unresponsive"]
    assert table.loc[0, "discipline"] == "Drop-Tail" and table.loc[0, "psnr_db"] == f"{p['psnr_db']:.2f}"
    # Off by default: the existing jobs compute no pictures.
    assert "picture" not in run_job(Job("mpeg", "droptail", 1, over))


def test_sqf_reproduction_scores_the_video_over_the_measurement_period(tmp_path, monkeypatch):
    from aqmlab.reproduce.sqf import Job, quality_table, run_job

    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "cache"))
    over = ("topology.bottleneck.qdisc.limit=10p",)  # a short buffer: the FIFO loses video
    r = run_job(Job("testbed", "fifo", 5, 1, duration_s=6, warmup_s=2, overrides=over, quality=True))
    p = r["picture"]
    assert p["flows"] == 1 and r["video_loss_pct"] > 0
    assert p["psnr_db"] < p["clean_psnr_db"]
    assert len(quality_table([r])) == 1


def test_reproduce_refuses_quality_flows_where_there_is_no_video_model(tmp_path):
    r = CliRunner().invoke(main, ["reproduce", "pels", "--quick", "--quality-flows", "1", "--out", str(tmp_path / "p")])
    assert r.exit_code == 2 and "--quality-flows applies only to rb-rio and sqf" in r.output
    assert not (tmp_path / "p").exists()


def test_quality_json_holds_the_per_flow_table(mpeg_run, tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("AQMLAB_CACHE", str(tmp_path / "cache"))
    r = CliRunner().invoke(main, ["quality", str(mpeg_run), "--flow", "0", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["tables"]["flows"]["rows"]
    per_flow = pd.read_csv(mpeg_run / "quality_flows.csv")
    assert [row["flow"] for row in rows] == per_flow["flow"].tolist() == [0]


def test_a_playout_deadline_drops_late_packets_of_their_frames():
    """Three frames of two packets each, due at 0, 40 and 80 ms; with a 50 ms deadline a packet
    counts only if it arrived by its frame's due time + 50 ms (frame 1's second packet at 95 ms
    and frame 2's first at 140 ms are too late), without one every received packet counts."""
    ms = 1_000_000
    media_frames = pd.DataFrame({"flow": [0] * 3, "frame_id": [0, 1, 2], "t_ns": [0, 40 * ms, 80 * ms],
                                 "size": [2000] * 3, "first_seq": [0, 2, 4], "packets": [2, 2, 2]})
    media = pd.DataFrame({"flow": [0] * 6, "seq": [0, 1, 2, 3, 4, 5], "size": [1040] * 6,
                          "sent_ns": [0, 1, 40, 41, 80, 81], "recv_ns": [i * ms for i in (20, 30, 60, 95, 140, 120)]})
    [all_count] = viewer.rtp_flows(media_frames, media)
    [on_time] = viewer.rtp_flows(media_frames, media, deadline_ns=50 * ms)
    assert all_count.received() == [[0, 1], [0, 1], [0, 1]]
    assert on_time.received() == [[0, 1], [0], [1]]
    # At the boundary the packet counts: frame 2's second packet arrives at exactly 80 + 40 ms.
    [edge] = viewer.rtp_flows(media_frames, media, deadline_ns=40 * ms)
    assert edge.received() == [[0, 1], [0], [1]]


def test_quality_refuses_a_deadline_that_is_not_a_positive_duration(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    for bad, says in (("5", "has no unit"), ("0ms", "must be positive")):
        r = CliRunner().invoke(main, ["quality", str(tmp_path), "--deadline", bad])
        assert r.exit_code == 2 and f"--deadline {bad}" in r.output and says in r.output, r.output
