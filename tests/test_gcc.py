"""The GCC video call (`flows.app.kind = "video"`, `congestion_control = "gcc"`) through the
scenario schema and a whole simulation: the default leaves an open-loop video flow's engine
configuration as it was, bad settings are refused in one line naming the field, a run gives the
`gcc_rate`, `rtc_frames` and `rtc_sessions` tables, and `aqmlab.analysis.rtc` reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aqmlab.analysis.rtc import rate_delay_figure, sessions
from aqmlab.run import simulate
from aqmlab.scenario import ScenarioError, validate
from aqmlab.scenario.normalize import sim_config


def scenario(duration: str = "20s", qdisc: dict[str, Any] | None = None, **video: Any) -> dict[str, Any]:
    return {
        "name": "gcc", "seed": 2, "duration": duration,
        "topology": {"bottleneck": {"rate": "4Mbps", "delay": "10ms",
                                    "qdisc": qdisc or {"kind": "droptail", "limit": "100p"}}},
        "flows": [{"name": "call", "count": 1, "app": {"kind": "video", "fps": 30, "mtu": "1200B", **video}}],
        "metrics": {"periods": [["0s", duration]]},
    }


def test_the_default_adds_nothing_to_the_engine_configuration() -> None:
    plain = sim_config(validate(scenario()))["flow_groups"][0]["app"]
    assert "gcc" not in plain
    assert sim_config(validate(scenario(congestion_control="none")))["flow_groups"][0]["app"] == plain
    gcc = sim_config(validate(scenario(congestion_control="gcc", gcc={"start_rate": "1Mbps"})))
    g = gcc["flow_groups"][0]["app"]["gcc"]
    assert g["start_rate_bps"] == 1_000_000 and g["feedback_interval_ns"] == 50_000_000
    assert g["deadline_ns"] == 150_000_000 and g["min_rate_bps"] == 100_000 and g["max_rate_bps"] == 6_000_000


@pytest.mark.parametrize(("video", "words"), [
    ({"congestion_control": "bbr"}, ["congestion_control", "none", "gcc", "scream"]),
    ({"congestion_control": "gcc", "burst": True}, ["flows.0.app", "burst"]),
    ({"congestion_control": "gcc", "jitter": "5ms"}, ["flows.0.app", "jitter"]),
    ({"congestion_control": "gcc", "gcc": {"min_rate": "2Mbps", "start_rate": "1Mbps"}}, ["gcc", "min_rate"]),
    ({"congestion_control": "gcc", "gcc": {"key_ratio": 0.5}}, ["gcc.key_ratio"]),
    ({"congestion_control": "gcc", "gcc": {"fluctuation": 1.0}}, ["gcc.fluctuation"]),
    ({"gcc": {"start_rate": "1Mbps"}}, ["flows.0.app", "congestion_control = none"]),
])
def test_bad_settings_are_refused_naming_the_field(video: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ScenarioError) as e:
        validate(scenario(**video))
    text = str(e.value)
    for w in words:
        assert w in text, text


def test_a_call_gives_rate_frame_and_session_tables(tmp_path: Path) -> None:
    sc = validate(scenario(congestion_control="gcc", gcc={"start_rate": "1Mbps"}))
    res = simulate(sc, progress=False)
    rate, frames, sess = res.tables["gcc_rate"], res.tables["rtc_frames"], res.tables["rtc_sessions"]
    # One report applied about every 50 ms from the first one on.
    assert 350 < len(rate) <= 400, len(rate)
    assert rate["t_ns"].is_monotonic_increasing
    assert (rate["target_bps"] <= rate["delay_based_bps"] + 1e-6).all()
    assert (rate["target_bps"] >= 100_000).all() and (rate["target_bps"] <= 6_000_000).all()
    # 30 fps for 20 s (frames at k x 33 333 333 ns: 601 of them).
    assert len(frames) == 601
    assert list(sess["flow"]) == [0]
    # Alone on 4 Mbit/s from 1 Mbit/s at 8 % a second: about 4.3 Mbit/s is not reached in
    # 20 s, so no frame is late.
    assert sess["frames_late"].iloc[0] == 0
    assert 30e6 < sess["frame_delay_p95_ns"].iloc[0] < 150e6
    # The encoder follows the target: the payload rate over the last 5 s is within 15 % of
    # the targets the frames were made at.
    last = frames[frames["t_ns"] > 15e9]
    bits = last["size_bytes"].sum() * 8 / (len(last) / 30)
    assert abs(bits / last["rate_bps"].mean() - 1) < 0.15, bits
    # The analysis module reads the tables from a result directory.
    for name in ("gcc_rate", "rtc_frames", "rtc_sessions"):
        res.tables[name].to_parquet(tmp_path / f"{name}.parquet")
    s = sessions([("fifo", tmp_path)])
    assert s["late_share"].iloc[0] == 0 and s["frame_delay_p95_ms"].iloc[0] < 150
    rate_delay_figure([("fifo", tmp_path)], tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 10_000


def test_the_emulator_accepts_a_gcc_call() -> None:
    """The emulator runs GCC calls (tests/test_emulator_gcc.py); nothing of the call is refused."""
    from aqmlab.emu.run import emulation_problems  # noqa: PLC0415

    assert emulation_problems(validate(scenario(congestion_control="gcc"))) == []
    assert emulation_problems(validate(scenario())) == []
