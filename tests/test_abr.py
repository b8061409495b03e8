"""The ABR client (`flows.app.kind = "abr"`) through the scenario schema and a whole simulation:
its tables read by pandas, the scenario's refusals of unknown algorithms and bad ladders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aqmlab.run import simulate
from aqmlab.scenario import ABR_ALGORITHMS, ScenarioError, validate

#: The five algorithms of the first whole-run test, whose bounds were set for five clients.
FIVE = ("throughput", "bba", "bola", "mpc", "robust_mpc")


def scenario(rate: str = "20Mbps", duration: str = "60s", algorithms: tuple[str, ...] = ABR_ALGORITHMS,
             **app: Any) -> dict[str, Any]:
    return {
        "name": "abr", "seed": 3, "duration": duration,
        "topology": {"bottleneck": {"rate": rate, "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "100p"}}},
        "flows": [{"name": f"abr-{a}", "count": 1, "start_jitter": "2s",
                   "app": {"kind": "abr", "algorithm": a, "content": "120s", "tcp": {"sack": True}, **app}}
                  for a in algorithms],
        "metrics": {"periods": [["0s", duration]]},
    }


def test_a_run_gives_per_segment_and_per_client_tables() -> None:
    res = simulate(validate(scenario(algorithms=FIVE)), progress=False)
    segments, sessions = res.tables["abr_segments"], res.tables["abr_sessions"]
    assert list(sessions["flow"]) == [0, 1, 2, 3, 4]
    assert list(sessions["algorithm"]) == [0, 1, 2, 3, 4]  # ABR_ALGORITHMS' order, one group each
    for column in ("flow", "segment", "rung", "bitrate_bps", "size_bytes", "request_ns", "download_ns",
                   "buffer_ns", "throughput_bps", "ssim_db", "requests"):
        assert column in segments.columns, column
    for column in ("startup_ns", "stalls", "stall_ns", "stall_ratio", "bitrate_bps", "ssim_db",
                   "ssim_change_db", "switches", "qoe_lin"):
        assert column in sessions.columns, column
    # Five clients on 20 Mbit/s: about 4 Mbit/s each, so every one rises above the lowest rung
    # and none of them stalls for long.
    assert (sessions["bitrate_bps"] > 300_000).all()
    assert (sessions["stall_ratio"] < 0.05).all()
    # The synthetic ladder's SSIM reaches the table, one value per segment.
    assert segments["ssim_db"].between(5, 20).all()
    # A segment's bitrate is its rung's.
    assert segments.groupby("rung")["bitrate_bps"].nunique().eq(1).all()


def test_a_client_drawn_to_start_after_the_end_never_ran() -> None:
    """start 6 s plus up to 10 s of jitter in an 8 s run: some clients start after the end. They
    have a session row of nothing (it panicked with "player advanced backwards" before)."""
    s = scenario(duration="8s", algorithms=("bba",))
    s["flows"][0].update(count=6, start="6s", start_jitter="10s")
    res = simulate(validate(s), progress=False)
    flows, sessions = res.tables["flows"], res.tables["abr_sessions"]
    late = flows.loc[flows["start_ns"] >= 8e9, "flow"]
    assert 0 < len(late) < 6  # the seed draws both kinds
    never = sessions[sessions["flow"].isin(late)]
    assert len(never) == len(late)
    assert (never["segments"] == 0).all() and (never["played_ns"] == 0).all() and (never["stalls"] == 0).all()
    assert not never["started"].astype(bool).any()


def test_bola_e_starts_above_the_lowest_rung_where_bola_does_not() -> None:
    """BOLA-E in a whole simulation (its state carried by the client): alone on 20 Mbit/s, its
    second segment (the startup decision, from the first segment's throughput) is above the
    lowest rung, where BOLA-BASIC on the same run is still at the lowest (2 s of buffer is far
    below its first switching level); it never stalls; its `algorithm` code is 5."""
    res = simulate(validate(scenario(algorithms=("bola_e",))), progress=False)
    segments, sessions = res.tables["abr_segments"], res.tables["abr_sessions"]
    assert list(sessions["algorithm"]) == [ABR_ALGORITHMS.index("bola_e")] == [5]
    assert segments["rung"].iloc[0] == 0 and segments["rung"].iloc[1] > 0
    assert sessions["stalls"].iloc[0] == 0
    basic = simulate(validate(scenario(algorithms=("bola",))), progress=False).tables["abr_segments"]
    assert list(basic["rung"].iloc[:2]) == [0, 0]


def test_bola_o_switches_less_than_bola_u() -> None:
    """`bola_e_variant = "bola_o"` reaches the client: three BOLA-E clients sharing 3 Mbit/s for
    120 s, where the throughput cap binds often, switch rungs 43 times with BOLA-U (its cap lets
    the rung rise one above what the throughput sustains, then fall back) and 15 with BOLA-O
    (never above the previous or the sustainable rung), seed 3 (docs/video.md, "BOLA-O")."""
    switches = {}
    for variant in ("bola_u", "bola_o"):
        d = scenario(rate="3Mbps", duration="120s", algorithms=("bola_e",), bola_e_variant=variant)
        d["flows"][0]["count"] = 3
        sessions = simulate(validate(d), progress=False).tables["abr_sessions"]
        switches[variant] = int(sessions["switches"].sum())
    assert switches["bola_o"] < 0.6 * switches["bola_u"], switches


def test_bola_e_variant_is_refused_beside_another_algorithm() -> None:
    with pytest.raises(ScenarioError, match="bola_e_variant applies to algorithm bola_e only, not bola"):
        validate(scenario(algorithms=("bola",), bola_e_variant="bola_o"))


def test_an_unknown_algorithm_is_refused_with_the_known_ones() -> None:
    d = scenario()
    d["flows"][0]["app"]["algorithm"] = "pensieve"
    with pytest.raises(ScenarioError) as e:
        validate(d)
    text = str(e.value)
    assert "flows.0.app" in text and "algorithm" in text
    for name in ABR_ALGORITHMS:
        assert name in text, text
    assert "bola_e" in text


def test_a_bad_ladder_csv_is_refused_naming_row_and_column(tmp_path: Path) -> None:
    csv = tmp_path / "ladder.csv"
    csv.write_text("segment,rung,bitrate_kbps,size_bytes\n0,0,300,75000\n0,1,200,50000\n")
    with pytest.raises(ScenarioError) as e:
        validate(scenario(ladder=str(csv)))
    assert "row 3, column bitrate_kbps" in str(e.value) and "out of order" in str(e.value)


def test_a_one_rung_csv_ladder_runs(tmp_path: Path) -> None:
    csv = tmp_path / "ladder.csv"
    csv.write_text("segment,rung,bitrate_kbps,size_bytes\n" + "".join(f"{k},0,500,125000\n" for k in range(20)))
    d = scenario(duration="20s", ladder=str(csv))
    d["flows"] = d["flows"][:1]
    res = simulate(validate(d), progress=False)
    segments = res.tables["abr_segments"]
    assert len(segments) >= 5 and (segments["rung"] == 0).all()
    assert segments["ssim_db"].isna().all()  # no scores in the CSV
    assert res.tables["abr_sessions"]["switches"].iloc[0] == 0


def test_buffer_limits_are_checked() -> None:
    with pytest.raises(ScenarioError, match="max_buffer"):
        validate(scenario(max_buffer="3s"))
