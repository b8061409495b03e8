"""BBRv3 (`congestion_control = "bbr3"`) from the scenario side: paced by default, refused
without pacing and by the emulator in one line each, and a run through the whole pipeline that
fills the link and repeats byte for byte."""

from __future__ import annotations

from typing import Any

import pytest

from aqmlab.emu.run import emulation_problems
from aqmlab.scenario import ScenarioError, validate
from conftest import a_run_that_repeats_and_fills_the_link, small_scenario


def _bbr3_scenario(tcp: dict[str, Any]) -> dict[str, Any]:
    s = small_scenario(duration="6s", metrics={"periods": [["2s", "6s"]]})
    s["flows"][0]["count"] = 1
    s["flows"][0]["app"] = {"kind": "bulk", "tcp": {"congestion_control": "bbr3", **tcp}}
    return s


def test_bbr3_is_paced_and_refuses_pacing_off_in_one_line():
    tcp = validate(_bbr3_scenario({})).to_sim_config()["flow_groups"][0]["app"]["tcp"]
    assert (tcp["congestion_control"], tcp["pacing"]) == ("bbr3", True)
    with pytest.raises(ScenarioError) as err:
        validate(_bbr3_scenario({"pacing": False}))
    message = "pacing: bbr3 needs pacing (BBR sends at its pacing rate); allowed with bbr3: true or unset"
    assert message in str(err.value)
    assert "Traceback" not in str(err.value)


def test_the_emulator_refuses_bbr3_in_one_line():
    problems = [p for p in emulation_problems(validate(_bbr3_scenario({}))) if "congestion_control" in p]
    name = small_scenario()["flows"][0]["name"]
    assert problems == [f"flows.{name}.app.tcp.congestion_control: 'bbr3' is simulator-only; allowed when "
                        "emulated: newreno, cubic, bbr"], problems


def test_a_bbr3_run_fills_the_link_and_repeats_byte_for_byte():
    s = _bbr3_scenario({"sack": True, "min_rto": "200ms"})
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "droptail", "limit": "200p"}
    a_run_that_repeats_and_fills_the_link(s)
