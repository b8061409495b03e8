"""The SCReAM video call (`flows.app.kind = "video"`, `congestion_control = "scream"`) through the
scenario schema and a whole simulation: the default leaves an open-loop video flow's engine
configuration as it was, bad settings are refused in one line naming the field, a run gives the
`scream_rate`, `rtc_frames` and `rtc_sessions` tables that `aqmlab.analysis.rtc` reads, and the
emulator refuses it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aqmlab.analysis.rtc import rate_delay_figure, summary
from aqmlab.run import simulate, write_results
from aqmlab.scenario import ScenarioError, validate
from aqmlab.scenario.normalize import sim_config


def scenario(duration: str = "20s", **video: Any) -> dict[str, Any]:
    return {
        "name": "scream", "seed": 2, "duration": duration,
        "topology": {"bottleneck": {"rate": "2Mbps", "delay": "10ms",
                                    "qdisc": {"kind": "droptail", "limit": "100p"}}},
        "flows": [{"name": "call", "count": 1, "app": {"kind": "video", "fps": 30, "mtu": "1200B", **video}}],
        "metrics": {"periods": [["5s", duration]]},
    }


def test_the_default_adds_nothing_and_scream_adds_its_key() -> None:
    plain = sim_config(validate(scenario()))["flow_groups"][0]["app"]
    assert "scream" not in plain and "gcc" not in plain
    s = sim_config(validate(scenario(congestion_control="scream", scream={"max_rate": "3Mbps"})))
    app = s["flow_groups"][0]["app"]
    assert "gcc" not in app
    c = app["scream"]
    assert c["max_rate_bps"] == 3_000_000 and c["feedback_interval_ns"] == 40_000_000
    assert c["start_rate_bps"] == 300_000 and c["min_rate_bps"] == 100_000 and c["deadline_ns"] == 150_000_000


@pytest.mark.parametrize(("video", "words"), [
    ({"congestion_control": "scream", "burst": True}, ["flows.0.app", "scream", "burst"]),
    ({"congestion_control": "scream", "scream": {"min_rate": "2Mbps", "start_rate": "1Mbps"}},
     ["scream", "min_rate"]),
    ({"congestion_control": "scream", "scream": {"fluctuation": 1.0}}, ["scream.fluctuation"]),
    ({"scream": {"start_rate": "1Mbps"}}, ["flows.0.app", "congestion_control = none"]),
    ({"congestion_control": "gcc", "scream": {"start_rate": "1Mbps"}}, ["scream settings", "congestion_control = gcc"]),
])
def test_bad_settings_are_refused_naming_the_field(video: dict[str, Any], words: list[str]) -> None:
    with pytest.raises(ScenarioError) as e:
        validate(scenario(**video))
    text = str(e.value)
    for w in words:
        assert w in text, text


def test_a_call_gives_rate_frame_and_session_tables(tmp_path: Path) -> None:
    res = simulate(validate(scenario(congestion_control="scream")), progress=False)
    rate, frames = res.tables["scream_rate"], res.tables["rtc_frames"]
    assert "gcc_rate" not in res.tables
    # One report applied about every 40 ms.
    assert 400 < len(rate) <= 500, len(rate)
    assert rate["t_ns"].is_monotonic_increasing
    assert (rate["ref_wnd"] >= 3000).all()
    assert (rate["target_bps"] >= 100_000).all() and (rate["target_bps"] <= 6_000_000).all()
    assert len(frames) == 601
    raw = scenario(congestion_control="scream")
    out = write_results(res, raw, tmp_path / "run")
    s = summary([("alone", out)], 5.0, 20.0)
    # Alone on 2 Mbit/s the call takes most of it with frames well inside the deadline.
    assert s["call_goodput_mbps"].iloc[0] > 1.6, s
    assert s["frame_delay_p95_ms"].iloc[0] < 150 and s["frames_late"].iloc[0] == 0, s
    rate_delay_figure([("alone", out)], tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 10_000


def test_the_emulator_refuses_a_scream_call() -> None:
    from aqmlab.emu.run import emulation_problems  # noqa: PLC0415

    problems = emulation_problems(validate(scenario(congestion_control="scream")))
    assert any("flows.call.app.congestion_control: scream" in p and "allowed: none" in p for p in problems), problems
