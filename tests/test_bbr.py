"""BBR and pacing from the scenario side: `tcp.pacing` on for bbr and off otherwise in the
engine's config, `linux` keeping cubic unpaced, and a bbr run through the whole pipeline that
is repeatable byte for byte."""

from __future__ import annotations

from typing import Any

from aqmlab.scenario import validate
from conftest import a_run_that_repeats_and_fills_the_link, small_scenario


def _tcp_config(tcp: dict[str, Any]) -> dict[str, Any]:
    s = small_scenario()
    s["flows"][0]["app"] = {"kind": "bulk", "tcp": tcp}
    return validate(s).to_sim_config()["flow_groups"][0]["app"]["tcp"]


def test_pacing_is_on_for_bbr_and_left_out_for_the_others_unless_asked():
    assert _tcp_config({"congestion_control": "bbr"})["pacing"] is True
    assert _tcp_config({"congestion_control": "bbr", "pacing": True})["pacing"] is True
    # Left out when off, so every scenario without it normalizes as it did before.
    assert "pacing" not in _tcp_config({"congestion_control": "cubic"})
    assert "pacing" not in _tcp_config({"profile": "linux"})
    assert _tcp_config({"profile": "linux"})["congestion_control"] == "cubic"
    assert _tcp_config({"congestion_control": "cubic", "pacing": True})["pacing"] is True


def test_a_bbr_run_fills_the_link_and_repeats_byte_for_byte():
    s = small_scenario(duration="6s", metrics={"periods": [["2s", "6s"]]})
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "droptail", "limit": "200p"}
    s["flows"][0]["count"] = 1
    s["flows"][0]["app"] = {"kind": "bulk", "tcp": {"congestion_control": "bbr", "sack": True, "min_rto": "200ms"}}
    p = a_run_that_repeats_and_fills_the_link(s).tables["packets"]
    d = p[(p["event"] == "dequeue") & (p["t_ns"] >= 2e9)]
    # BBR keeps the 200-packet FIFO near one BDP (the 2 x (10 + 2) ms path), far from full.
    assert float(d["sojourn_ns"].median()) < 30e6
