"""The GCC call in the emulator (`aqmlab.emu.call`): real UDP packets and feedback reports
between the namespaces, driven by the simulator's own controller, feedback builder and encoder
(`_core.GccSender`, `_core.FeedbackBuilder`, `_core.SyntheticCodec`, aqmlab-model `app::gcc`
and `app::synthetic_codec`).

The emulated runs need root and `ip netns` and are skipped elsewhere with the reason (as in
tests/test_emulator.py); the binding's and the refusals' tests run everywhere.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from aqmlab import _core
from aqmlab.emu import netns
from aqmlab.emu.call import decode_report, encode_report
from aqmlab.emu.run import emulation_problems, plan_flows
from aqmlab.run import simulate
from aqmlab.scenario import validate

MISSING = netns.missing_requirement()
needs_netns = pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
S = 1_000_000_000


def scenario(rate: str = "20Mbps", start_rate: str = "300kbps", duration: str = "15s",
             controller: str = "gcc") -> dict[str, Any]:
    return {
        "name": "emu-gcc", "seed": 1, "duration": duration,
        "topology": {"bottleneck": {"rate": rate, "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "100p"}}},
        "flows": [{"name": "call", "count": 1, "start": "0s", "sender_delay": "10ms",
                   "app": {"kind": "video", "fps": 30, "mtu": "1200B", "congestion_control": controller,
                           controller: {"start_rate": start_rate, "min_rate": "100kbps", "max_rate": "6Mbps"}}}],
        "metrics": {"periods": [["0s", duration]]},
    }


def app_json(d: dict[str, Any]) -> str:
    return json.dumps(validate(d).to_sim_config()["flow_groups"][0]["app"])


# ---- everywhere: the binding and the refusals -------------------------------------------------


def test_gcc_calls_can_be_emulated_and_scream_is_refused_by_name() -> None:
    assert emulation_problems(validate(scenario())) == []
    problems = emulation_problems(validate(scenario(controller="scream")))
    assert len(problems) == 1 and "congestion_control: scream is simulator only" in problems[0], problems
    assert "allowed: none, gcc" in problems[0]
    (flow,) = plan_flows(validate(scenario()))
    assert flow["kind"] == "call" and json.loads(flow["app_json"])["gcc"]["start_rate_bps"] == 300_000


def test_the_binding_refuses_bad_configs_and_misuse_in_one_line() -> None:
    with pytest.raises(ValueError, match="congestion_control gcc") as e:
        _core.GccSender(app_json(scenario(controller="scream")))
    assert "\n" not in str(e.value)
    bad = json.loads(app_json(scenario()))
    bad["gcc"]["min_rate_bps"] = 10**9
    with pytest.raises(ValueError, match="min_rate"):
        _core.GccSender(json.dumps(bad))
    g = _core.GccSender(app_json(scenario()))
    with pytest.raises(ValueError, match="next number, 0"):
        g.on_sent(3, 1000, 0)
    with pytest.raises(ValueError, match="base must be <= end"):
        g.on_feedback(5, 2, [], 0, 0)
    with pytest.raises(ValueError, match="positive"):
        _core.SyntheticCodec(app_json(scenario()), 1, 0).set_target(0, float("nan"))


def replay(res: Any, d: dict[str, Any]) -> list[float]:
    """The targets the binding's GccSender gives when fed what the simulated call's sender saw:
    every packet's send time and size from the `media` log (lost ones as placeholders: only
    reported arrivals are read), reports built by the binding's FeedbackBuilder from the
    arrivals every feedback interval from the call's start, each applied at the time the
    simulated sender applied its report (`gcc_rate.t_ns`, one row per report)."""
    media = res.tables["media"].sort_values("seq")
    rate = res.tables["gcc_rate"]
    every = 50_000_000
    sent = dict(zip(media["seq"], zip(media["sent_ns"], media["size"], strict=True), strict=True))
    g, fb = _core.GccSender(app_json(d)), _core.FeedbackBuilder()
    arrivals = media.sort_values(["recv_ns", "seq"])[["seq", "recv_ns"]].to_numpy()
    last_seq = int(media["seq"].max())
    next_sent, a, made, targets = 0, 0, every, []
    for t_apply in rate["t_ns"].to_numpy():
        # Reports are made until one holds something (an empty one is not sent).
        while True:
            while a < len(arrivals) and arrivals[a][1] <= made:
                fb.on_packet(int(arrivals[a][0]), int(arrivals[a][1]))
                a += 1
            r = fb.take(made)
            made += every
            if r is not None:
                break
        base, end, arr, ce, made_ns, _size = r
        while next_sent <= min(last_seq, end - 1):
            at, size = sent.get(next_sent, (0, 0))
            g.on_sent(next_sent, int(size), int(at))
            next_sent += 1
        targets.append(g.on_feedback(base, end, arr, made_ns, int(t_apply), ce))
    return targets


@pytest.mark.parametrize(("rate", "start", "direction"), [("20Mbps", "300kbps", "rises"),
                                                           ("500kbps", "2Mbps", "falls")])
def test_the_binding_gives_the_simulated_controllers_targets(rate: str, start: str, direction: str) -> None:
    """On a free 20 Mbit/s path the target rises from 300 kbit/s; on a 500 kbit/s path below
    the 2 Mbit/s start the queue grows and packets are lost, over-use is detected and the target
    falls. Either way the binding, fed what the simulated sender saw, gives the simulated
    controller's targets to the bit (same Rust code, same inputs)."""
    d = scenario(rate=rate, start_rate=start)
    res = simulate(validate(d))
    rate_rows = res.tables["gcc_rate"]
    targets = replay(res, d)
    assert targets == rate_rows["target_bps"].tolist()
    if direction == "rises":
        assert targets[-1] > 2.5 * 300_000 and (rate_rows["signal"] == 0).all()
    else:
        assert targets[-1] < 500_000 and (rate_rows["signal"] == 1).any() and (rate_rows["loss"] > 0).any()


def test_a_report_survives_its_encoding() -> None:
    fb = _core.FeedbackBuilder()
    for seq, t in [(0, 10), (2, 30), (1, 40)]:
        fb.on_packet(seq, t)
    r = fb.take(50)
    assert r is not None
    payload = encode_report(7, 3, 55, r)
    assert len(payload) + 28 >= r[5]  # at least the simulator's size on the wire
    assert decode_report(payload) == (7, r[0], r[1], r[2], r[3], r[4])
    assert decode_report(payload[:40]) is None
    assert fb.take(60) is None


def test_the_codec_binding_draws_the_simulated_calls_frames() -> None:
    """Frame sizes at the start rate are the simulated call's: the same encoder model and RNG
    stream (flow 0's media stream), packetized at the MTU."""
    d = scenario(duration="3s")
    res = simulate(validate(d))
    frames = res.tables["rtc_frames"]
    c = _core.SyntheticCodec(app_json(d), 1, 0)
    # No report reaches the sender before ~70 ms and the encoder lags 100 ms: the first frames
    # follow the start rate in both engines.
    for _, fr in frames[frames["t_ns"] < 150_000_000].iterrows():
        size, key, rate, sizes = c.next_frame(int(fr["t_ns"]))
        assert (size, key, rate, len(sizes)) == (fr["size_bytes"], bool(fr["key"]), fr["rate_bps"], fr["packets"])
        assert sum(sizes) == size + 40 * len(sizes) and max(sizes) <= 1200


# ---- emulated -------------------------------------------------------------------------------------


_cache: dict[str, Any] = {}


def emulated(key: str, d: dict[str, Any]) -> Any:
    from aqmlab.emu.run import emulate

    if key not in _cache:
        _cache[key] = emulate(validate(d))
    return _cache[key]


@pytest.mark.real_time
@needs_netns
def test_a_call_alone_on_a_free_link_ramps_up_without_late_frames() -> None:
    res = emulated("free", scenario())
    rate, sess = res.tables["gcc_rate"], res.tables["rtc_sessions"].iloc[0]
    # A report every 50 ms for 15 s, each reaching the sender.
    assert len(rate) > 250 and sess["reports_received"] == len(rate)
    # GCC's increase of ~8 % a second from 300 kbit/s: above 600 kbit/s by the end.
    assert rate["target_bps"].iloc[-1] > 600_000, rate["target_bps"].iloc[-1]
    assert rate["target_bps"].iloc[-1] > rate["target_bps"].iloc[0]
    assert sess["frames_lost"] == 0 and sess["frames_late"] == 0
    assert 20e6 < sess["frame_delay_p95_ns"] < 150e6  # 20 ms one way plus the frame's pacing
    # The receiver logged every packet the sender sent (`media`) but those still in flight at
    # the end, and flow_samples carry the target in kbit/s at each sample, as the simulator
    # writes them. In flight at the end: a frame's packets leave spread over its frame interval
    # and arrive one way later (10 ms sender delay, 10 ms bottleneck, a 1240-byte packet's
    # serialization at 20 Mbit/s), so only the packets of frames captured in the last interval
    # plus one way can be missing (the count those frames had, from the sender's own table).
    media, frames = res.tables["media"], res.tables["rtc_frames"]
    assert sorted(media["seq"]) == list(range(len(media)))
    interval_ns, one_way_ns = 1e9 / 30, 20e6 + 1240 * 8 / 20e6 * 1e9
    could_be_in_flight = int(frames.loc[frames["t_ns"] >= 15 * S - interval_ns - one_way_ns, "packets"].sum())
    missing = int(res.tables["flows"]["packets_sent"][0]) - len(media)
    assert 0 <= missing <= could_be_in_flight, (missing, could_be_in_flight)
    samples = res.tables["flow_samples"]
    last = samples[samples["flow"] == 0].iloc[-1]
    assert last["app_level"] == int(np.floor(rate["target_bps"].iloc[-1] / 1000 + 0.5))


@pytest.mark.real_time
@needs_netns
def test_a_call_over_a_link_far_below_its_rate_comes_down_and_its_frames_arrive() -> None:
    res = emulated("narrow", scenario(rate="500kbps", start_rate="2Mbps"))
    rate, frames = res.tables["gcc_rate"], res.tables["rtc_frames"]
    late = rate[rate["t_ns"] >= 8 * S]
    assert (late["target_bps"] < 500_000).all(), late["target_bps"].max()
    assert (rate["signal"] == 1).any()  # the queue's growth was seen as over-use
    # Once the rate is down, every frame arrives whole and within the 150 ms deadline.
    settled = frames[(frames["t_ns"] >= 8 * S) & (frames["t_ns"] < 14 * S)]
    assert len(settled) > 150 and (settled["received"] == settled["packets"]).all()
    assert (settled["delay_ns"] < 150e6).all(), settled["delay_ns"].max()
