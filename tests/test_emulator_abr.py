"""The ABR client in the emulator (`aqmlab.emu.abr`): a real HTTP/1.1 server and client over
kernel TCP whose decisions, playback buffer and tables are the simulator's client code
(`_core.AbrClient`, aqmlab-model `app::abr::client`).

The emulated runs need root and `ip netns` and are skipped elsewhere with the reason (as in
tests/test_emulator.py); the binding's and the refusals' tests run everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aqmlab import _core
from aqmlab.emu import netns
from aqmlab.emu.run import emulation_problems
from aqmlab.run import simulate
from aqmlab.scenario import ABR_ALGORITHMS, ScenarioError, validate

MISSING = netns.missing_requirement()
needs_netns = pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
S = 1_000_000_000


def scenario(rate: str = "10Mbps", duration: str = "20s", ladder: str = "synthetic", content: str = "12s",
             algorithm: str = "bola", **app: Any) -> dict[str, Any]:
    return {
        "name": "emu-abr", "seed": 1, "duration": duration,
        "topology": {"bottleneck": {"rate": rate, "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "100p"}}},
        "flows": [{"name": "abr", "count": 1, "sender_delay": "0ms", "receiver_delay": "0ms",
                   "app": {"kind": "abr", "algorithm": algorithm, "ladder": ladder, "content": content,
                           "segment_duration": "2s", "max_buffer": "10s", "tcp": {"sack": True}, **app}}],
        "metrics": {"periods": [["0s", duration]]},
    }


def app_config(d: dict[str, Any]) -> str:
    app = validate(d).to_sim_config()["flow_groups"][0]["app"]
    return json.dumps({k: v for k, v in app.items() if k != "kind"})


def playback(rows: pd.DataFrame, segment_ns: int, startup_ns: int, segments: int, start: int,
             end: int) -> tuple[int, int, int]:
    """(stalls, stall_ns, played_ns) recomputed here from the segments' arrival times, by the
    rules docs/video.md states (start once `startup_ns` is buffered or the last segment is in; a
    stall when the buffer empties with segments left, resumed at `startup_ns` again), to check
    the client's count independently of its code."""
    buffer, at, playing, stall_since = 0, start, False, None
    stalls = stall_ns = played = downloaded = 0

    def run_to(t: int) -> None:
        nonlocal buffer, at, playing, stall_since, stalls, played
        if playing:
            p = min(t - at, buffer)
            buffer -= p
            played += p
            if buffer == 0 and p < t - at:
                playing = False
                if downloaded < segments:
                    stall_since, stalls = at + p, stalls + 1
        at = t

    for done in sorted((rows["request_ns"] + rows["download_ns"]).tolist()):
        run_to(done)
        buffer += segment_ns
        downloaded += 1
        # Not playing here means before the start or stalled (an ended video gets no segments).
        if not playing and (buffer >= startup_ns or downloaded == segments):
            if stall_since is not None:
                stall_ns += done - stall_since
                stall_since = None
            playing = True
        assert buffer >= 0
    run_to(end)
    if stall_since is not None:
        stall_ns += end - stall_since
    return stalls, stall_ns, played


# ---- everywhere: the binding and the refusals -------------------------------------------------


def test_abr_flows_can_be_emulated() -> None:
    assert emulation_problems(validate(scenario())) == []


def test_an_unknown_algorithm_is_refused_as_in_the_simulator() -> None:
    with pytest.raises(ScenarioError) as e:
        validate(scenario(algorithm="pensieve"))
    text = str(e.value)
    assert "flows.0.app" in text and "algorithm" in text and all(a in text for a in ABR_ALGORITHMS)


def test_a_bad_ladder_csv_is_refused_as_in_the_simulator(tmp_path: Path) -> None:
    csv = tmp_path / "ladder.csv"
    csv.write_text("segment,rung,bitrate_kbps,size_bytes\n0,0,300,-5\n")
    with pytest.raises(ScenarioError) as e:
        validate(scenario(ladder=str(csv)))
    assert "row 2, column size_bytes" in str(e.value)


def test_the_binding_refuses_bad_configs_and_misuse_in_one_line() -> None:
    cfg = json.loads(app_config(scenario()))
    cfg["max_buffer_ns"] = 1
    with pytest.raises(ValueError, match="abr config: max_buffer") as e:
        _core.AbrClient(json.dumps(cfg), 0)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="abr config"):
        _core.AbrClient("{}", 0)
    c = _core.AbrClient(app_config(scenario()), 0)
    with pytest.raises(ValueError, match="no segment is being fetched"):
        c.complete(S, 1)
    assert c.next(0)[0] == "fetch"
    with pytest.raises(ValueError, match="ladder"):
        c.tables(0, S, '{"segment_duration_ns": 1}')


def test_the_binding_drives_the_simulators_client_over_a_constant_rate() -> None:
    """Driven by a constant-rate fetch loop (each segment takes size * 8 / rate), the client
    fetches every segment in order, waits for room under max_buffer, never reports a negative
    buffer, and its stall count matches an independent recount."""
    d = scenario(content="40s", algorithm="throughput")
    c = _core.AbrClient(app_config(d), 0)
    rate, now, fetched = 3e6, 0, []
    waits = 0
    while True:
        step = c.next(now)
        if step[0] == "done":
            break
        if step[0] == "wait":
            waits += 1
            now += step[1]
            continue
        _, segment, rung, size = step
        now += int(size * 8 / rate * 1e9)
        c.complete(now, 1)
        fetched.append((segment, rung))
    assert [s for s, _ in fetched] == list(range(20))
    assert waits > 0  # 3 Mbit/s fills a 10 s buffer: the client had to wait for room
    t = c.tables(0, now + 60 * S)
    seg = pd.DataFrame({n: np.frombuffer(b, dtype=f"<{dt}") for n, dt, b in t["abr_segments"]})
    ses = pd.DataFrame({n: np.frombuffer(b, dtype=f"<{dt}") for n, dt, b in t["abr_sessions"]})
    assert (seg["buffer_ns"] <= 10 * S).all()
    assert seg["rung"].max() >= 2  # above 1.2 Mbit/s at 3 Mbit/s
    stalls, stall_ns, played = playback(seg, 2 * S, 2 * S, 20, 0, now + 60 * S)
    assert (int(ses["stalls"][0]), int(ses["stall_ns"][0]), int(ses["played_ns"][0])) == (stalls, stall_ns, played)


# ---- emulated -------------------------------------------------------------------------------------


_cache: dict[str, Any] = {}


def emulated(key: str, d: dict[str, Any]):
    from aqmlab.emu.run import emulate

    if key not in _cache:
        _cache[key] = emulate(validate(d))
    return _cache[key]


@pytest.mark.real_time
@needs_netns
def test_one_client_over_a_constant_rate_bottleneck_fetches_every_segment() -> None:
    d = scenario()
    res = emulated("synthetic", d)
    seg, ses = res.tables["abr_segments"], res.tables["abr_sessions"]
    # 12 s of content in 2 s segments over 10 Mbit/s in 20 s: all six arrive, in order.
    assert list(seg["segment"]) == list(range(6))
    assert seg["rung"].between(0, 6).all() and seg["rung"].max() > 0
    assert (seg["requests"] == 1).all()
    assert (seg["buffer_ns"] >= 0).all() and (seg["buffer_ns"] <= 10 * S).all()
    # Every byte of every response went through the router as flow 0 (the classifier's port).
    delivered = int(res.tables["flows"]["delivered_bytes"][0])
    assert delivered >= int(seg["size_bytes"].sum())
    row = ses.iloc[0]
    assert row["segments"] == 6 and row["started"] == 1
    assert 0 < row["startup_ns"] < 2 * S
    stalls, stall_ns, played = playback(seg, 2 * S, 2 * S, 6, 0, 20 * S)
    assert (row["stalls"], row["stall_ns"], row["played_ns"]) == (stalls, stall_ns, played)
    assert played == 12 * S  # the whole video played before the run's end


@pytest.mark.real_time
@needs_netns
def test_flow_samples_carry_the_last_completed_rung_as_in_the_simulator() -> None:
    """`flow_samples.app_level` of an emulated ABR flow: the rung of the last segment completed
    by each sample (0 before the first), as the simulator writes it."""
    res = emulated("synthetic", scenario())
    seg = res.tables["abr_segments"]
    samples = res.tables["flow_samples"]
    mine = samples[samples["flow"] == 0]
    done = (seg["request_ns"] + seg["download_ns"]).to_numpy()
    for t, level in zip(mine["t_ns"], mine["app_level"], strict=True):
        completed = seg[done <= t]
        assert level == (int(completed["rung"].iloc[-1]) if len(completed) else 0), (t, level)
    assert mine["app_level"].max() == seg["rung"].max() > 0


@pytest.mark.real_time
@needs_netns
@pytest.mark.parametrize("variant", ["bola_u", "bola_o"])
def test_bola_e_runs_in_the_emulator_with_its_state_and_its_startup(variant: str) -> None:
    """BOLA-E keeps state between decisions (the placeholder), which the emulated client carries
    as the simulator's does (`_core.AbrClient` holds the session's memory): alone on 10 Mbit/s
    its second segment, the startup decision from the first segment's throughput, is above the
    lowest rung (BOLA-BASIC's is not, `tests/test_abr.py`), in both of its variants; every
    segment arrives in order, playback never stalls, and the session is coded as bola_e."""
    d = scenario(algorithm="bola_e", content="20s", duration="24s", bola_e_variant=variant)
    res = emulated(f"bola_e-{variant}", d)
    seg, ses = res.tables["abr_segments"], res.tables["abr_sessions"]
    assert list(ses["algorithm"]) == [ABR_ALGORITHMS.index("bola_e")]
    assert list(seg["segment"]) == list(range(10))
    assert seg["rung"].iloc[0] == 0 and seg["rung"].iloc[1] > 0, list(seg["rung"])
    assert ses["stalls"].iloc[0] == 0


@pytest.mark.real_time
@needs_netns
def test_stalls_are_counted_on_a_link_slower_than_the_only_rung(tmp_path: Path) -> None:
    """One 2 Mbit/s rung over 1 Mbit/s: each 2 s segment takes about 4 s, so playback stalls
    after every segment; the client's count equals the recount from its arrival times."""
    csv = tmp_path / "ladder.csv"
    csv.write_text("segment,rung,bitrate_kbps,size_bytes\n" + "".join(f"{k},0,2000,500000\n" for k in range(10)))
    res = emulated("stalls", scenario(rate="1Mbps", duration="14s", ladder=str(csv)))
    seg, row = res.tables["abr_segments"], res.tables["abr_sessions"].iloc[0]
    assert 2 <= len(seg) <= 4
    stalls, stall_ns, played = playback(seg, 2 * S, 2 * S, 10, 0, 14 * S)
    assert stalls >= 2
    assert (row["stalls"], row["stall_ns"], row["played_ns"]) == (stalls, stall_ns, played)


@needs_netns
def test_tables_have_the_simulators_schema() -> None:
    d = scenario()
    emu = emulated("synthetic", d)
    sim = simulate(validate(d), progress=False)
    for table in ("abr_segments", "abr_sessions"):
        assert list(emu.tables[table].columns) == list(sim.tables[table].columns), table
        assert list(emu.tables[table].dtypes) == list(sim.tables[table].dtypes), table
    # What was fetched has the ladder's sizes, in both engines.
    sizes = validate(d).to_sim_config()["flow_groups"][0]["app"]["ladder"]["sizes_bytes"]
    for res in (emu, sim):
        seg = res.tables["abr_segments"]
        assert [sizes[r][k] for r, k in zip(seg["rung"], seg["segment"], strict=True)] == list(seg["size_bytes"])


@pytest.mark.real_time
@needs_netns
def test_the_encoded_ladder_is_served_as_real_segments_and_scored_on_what_arrived() -> None:
    pytest.importorskip("av")
    d = scenario(ladder="encoded", content="10s", duration="16s")
    res = emulated("encoded", d)
    seg = res.tables["abr_segments"]
    ladder = validate(d).to_sim_config()["flow_groups"][0]["app"]["ladder"]
    assert list(seg["segment"]) == list(range(5))
    assert seg["rung"].nunique() > 1  # several rungs' files served
    for k, rung, size, ssim in zip(seg["segment"], seg["rung"], seg["size_bytes"], seg["ssim_db"], strict=True):
        # The real file's bytes (its length the ladder's) decoded and scored against the source:
        # the same bytes as the ladder's own decode, so the same SSIM to the CSV's 4 decimals.
        assert size == ladder["sizes_bytes"][rung][k]
        assert abs(ssim - ladder["ssim_db"][rung][k]) < 1e-3


def test_received_segments_are_scored_from_their_bytes() -> None:
    """The receiver's scores come from decoding the body that arrived: a body holding rung 6's
    file where rung 0 was asked for scores as rung 6, and a truncated body is refused (pictures
    missing), so the scores are not the ladder's copied."""
    pytest.importorskip("av")
    from aqmlab import abr_encoded_ladder as encoded
    from aqmlab.emu.endpoints import measured_ladder

    d = scenario(ladder="encoded", content="10s")
    files = encoded.segment_files(2 * S)
    ladder = validate(d).to_sim_config()["flow_groups"][0]["app"]["ladder"]
    top = (files / "6" / "1.h264").read_bytes()

    class Received:
        config_json = app_config(d)
        bodies = [(0, 1, top)]

    measured = json.loads(measured_ladder(Received()))
    assert abs(measured["ssim_db"][0][1] - ladder["ssim_db"][6][1]) < 1e-3
    assert ladder["ssim_db"][6][1] - ladder["ssim_db"][0][1] > 3  # the rungs' scores do differ
    assert measured["ssim_db"][0][2] == ladder["ssim_db"][0][2]  # segments not fetched keep theirs
    Received.bodies = [(6, 1, top[: len(top) // 2])]
    with pytest.raises(ValueError, match="pictures decoded"):
        measured_ladder(Received())
