"""A link that follows a mahimahi delivery trace, from the scenario file: it runs at the trace's
capacity, bad traces are refused in one line naming the file and the line, a missing file
names the field, and a trace beside a rate is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aqmlab.emu import netns
from aqmlab.emu.run import emulation_problems
from aqmlab.run import simulate
from aqmlab.scenario.errors import ScenarioError
from aqmlab.scenario.load import load
from conftest import aqmlab, small_scenario


def _trace_scenario(trace: str, **link: object) -> dict:
    s = small_scenario(duration="3s")
    s["topology"]["bottleneck"] = {"trace": trace, "delay": "10ms", "qdisc": {"kind": "droptail", "limit": "200p"},
                                   **link}
    s["flows"] = [{"name": "cbr", "count": 1, "app": {"kind": "cbr", "rate": "20Mbps", "packet_size": "1500B"}}]
    s["metrics"] = {"periods": [["1s", "3s"]]}
    return s


def _write_trace(folder: Path, lines: list[int] | str, name: str = "link.down") -> Path:
    p = folder / name
    p.write_text(lines if isinstance(lines, str) else "".join(f"{t}\n" for t in lines))
    return p


def test_a_saturated_trace_bottleneck_carries_one_full_packet_per_opportunity(tmp_path, write_scenario):
    # 3 opportunities every 4 ms: 9 Mbit/s of 1500-byte packets, under a 20 Mbit/s CBR flow.
    _write_trace(tmp_path, [1, 1, 4])
    sc, _ = load(str(write_scenario(_trace_scenario("link.down"))))
    result = simulate(sc, progress=False)
    packets = result.tables["packets"]
    sent = packets[(packets.event == "dequeue") & (packets.t_ns >= 1e9) & (packets.t_ns < 3e9)]
    assert len(sent) == 3 * 2000 // 4, len(sent)  # every opportunity of the 2 s carries one
    mbps = sent["size"].sum() * 8 / 2 / 1e6
    assert mbps == pytest.approx(9.0, rel=1e-9)


def test_the_default_reverse_follows_the_same_trace(tmp_path, write_scenario):
    _write_trace(tmp_path, [2])
    sc, _ = load(str(write_scenario(_trace_scenario("link.down"))))
    config = sc.to_sim_config()["topology"]
    assert config["reverse"]["trace"] == config["bottleneck"]["trace"] == {"opportunities_ms": [2]}
    assert config["bottleneck"]["rate_bps"] == 0


def test_a_rate_link_config_has_no_trace_key():
    """Rate links are normalized exactly as before trace links existed."""
    from aqmlab.scenario.load import validate

    config = validate(small_scenario()).to_sim_config()["topology"]
    assert set(config["bottleneck"]) == {"rate_bps", "delay_ns", "qdisc"}
    assert set(config["reverse"]) == {"rate_bps", "delay_ns", "qdisc"}


@pytest.mark.parametrize("content, line, fragment", [
    ("", None, "empty trace"),
    ("1\n5\n3\n", 3, "goes back in time"),
    ("1\nfast\n", 2, "is not a time in whole milliseconds"),
    ("0\n0\n", 2, "the loop has no length"),
], ids=["empty", "backwards", "non-numeric", "no-loop"])
def test_a_bad_trace_is_one_line_naming_the_file_and_the_line(tmp_path, write_scenario, content, line, fragment):
    trace = _write_trace(tmp_path, content)
    out = tmp_path / "results"
    r = aqmlab("run", str(write_scenario(_trace_scenario("link.down"))), "--out", str(out))
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    where = f"{trace.resolve()} line {line}:" if line else f"{trace.resolve()}:"
    assert "topology.bottleneck.trace" in lines[0] and where in lines[0] and fragment in lines[0], lines[0]
    assert not out.exists()


def test_a_missing_trace_file_names_the_field(tmp_path, write_scenario):
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(_trace_scenario("nowhere.down"))))
    (problem,) = err.value.problems
    assert problem.path == "topology.bottleneck.trace"
    assert problem.message == f"no such trace file: {(tmp_path / 'nowhere.down').resolve()}"


def test_a_trace_on_a_chain_hop_is_read_relative_to_the_scenario(tmp_path, write_scenario):
    sub = tmp_path / "traces"
    sub.mkdir()
    _write_trace(sub, [1, 3])
    s = small_scenario()
    s["topology"]["chain"] = [{"forward": {"trace": "traces/link.down", "delay": "1ms"}}]
    sc, _ = load(str(write_scenario(s)))
    hop = sc.to_sim_config()["topology"]["chain"][0]
    assert hop["forward"]["trace"] == hop["reverse"]["trace"] == {"opportunities_ms": [1, 3]}
    s["topology"]["chain"] = [{"forward": {"trace": "traces/other.down", "delay": "1ms"}}]
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(s)))
    assert err.value.problems[0].path == "topology.chain.0.forward.trace"


@pytest.mark.parametrize("link, message", [
    ({"rate": "10Mbps"}, "either a rate or a trace, not both"),
], ids=["both"])
def test_a_trace_beside_a_rate_is_refused(tmp_path, write_scenario, link, message):
    _write_trace(tmp_path, [1])
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(_trace_scenario("link.down", **link))))
    assert err.value.problems[0].path == "topology.bottleneck" and message in err.value.problems[0].message


def test_a_link_with_neither_rate_nor_trace_is_refused(write_scenario):
    s = small_scenario()
    del s["topology"]["bottleneck"]["rate"]
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(s)))
    assert err.value.problems[0].path == "topology.bottleneck"
    assert "needs a rate" in err.value.problems[0].message


def test_the_emulator_takes_a_trace_link_and_impairments(tmp_path, write_scenario):
    _write_trace(tmp_path, [1])
    sc, _ = load(str(write_scenario(_trace_scenario("link.down"))))
    assert not [p for p in emulation_problems(sc) if p.startswith("topology.bottleneck")]
    s = _trace_scenario("link.down")
    s["topology"]["bottleneck"]["impairments"] = {"loss": 0.01, "jitter": "2ms"}
    sc, _ = load(str(write_scenario(s)))
    assert not [p for p in emulation_problems(sc) if p.startswith("topology.bottleneck")]


MISSING = netns.missing_requirement()


@pytest.mark.real_time
@pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
def test_the_emulator_follows_a_square_wave_trace_in_every_100ms_window():
    """At saturation the router hands out the trace's capacity in every 100 ms window, and the
    receiver gets each packet 5 ms after its opportunity, later only by as much as the router
    reports having been late.

    What the receiver gets per window is not what is asserted (it was, to 3 % in 90 % of the
    windows, and failed now and then): this shared VM stalls even a SCHED_FIFO thread (a 1 kHz
    SCHED_FIFO sleeper on the idle machine: 22 wake-ups over 1 ms in 20 s, the longest 9.2 ms),
    and a stall of the router moves a window's last packets into the next. Stalling the router
    on purpose (SIGSTOP for 8 ms every ~105 ms, 3 runs) failed that check (largest window error
    0.08-0.30) while the schedule stayed exact and the reported lateness (8.2-8.3 ms) covered
    every packet. So the two parts the emulator controls are checked apart: its schedule,
    exactly, and its delivery against the lateness it reports."""
    from aqmlab.emu.run import emulate
    from aqmlab.scenario.load import validate

    s = {"name": "emu-trace", "duration": "4s",
         "topology": {"bottleneck": {"trace": {"kind": "square", "high": "24Mbps", "low": "6Mbps", "period": "400ms"},
                                     "delay": "5ms", "qdisc": {"kind": "droptail", "limit": "1000p"}}},
         "flows": [{"name": "cbr", "count": 1, "sender_delay": "0ms", "receiver_delay": "0ms",
                    "app": {"kind": "cbr", "rate": "30Mbps", "packet_size": "1500B"}}]}
    run = emulate(validate(s))
    packets, media = run.tables["packets"], run.tables["media"]
    sent = packets[packets.event == "dequeue"]
    # The schedule: opportunities in (k * 100, (k + 1) * 100] ms are capacity phase k's, whole.
    got = want = 0.0
    for k in range(5, 36):
        window = sent[(sent.t_ns > k * 100e6) & (sent.t_ns <= (k + 1) * 100e6)]
        mbps = window["size"].sum() * 8 / 0.1 / 1e6
        expected = 24.0 if k % 4 in (0, 1) else 6.0
        assert mbps == pytest.approx(expected, rel=1e-9), (k, mbps)
        arrived = media[(media.recv_ns > k * 100e6 + 5e6) & (media.recv_ns <= (k + 1) * 100e6 + 5e6)]
        got, want = got + arrived["size"].sum(), want + expected * 0.1e6 / 8
    # The delivery: one flow through a FIFO, nothing lost after the queue, so the n-th packet
    # dequeued is the n-th received (the last few may still be in flight at the end).
    received = media.sort_values("seq")
    assert 0 <= len(sent) - len(received) <= 5, (len(sent), len(received))
    late_ms = (received.recv_ns.to_numpy() - sent.t_ns.to_numpy()[:len(received)] - 5e6) / 1e6
    reported_ms = run.summary["emu"]["router"]["forward"]["link"]["max_lateness_ns"] / 1e6
    # The receiver's time is the kernel's receive stamp: never before the packet's due time,
    # usually within microseconds of it (a wrong delay line shows in the median), and beyond
    # the router's reported lateness by at most 0.5 ms (its send call, the veth crossing) for
    # all but a few packets (2-3 of 5000 in some runs here: a stall after the router's send).
    beyond = late_ms - reported_ms > 0.5
    assert late_ms.min() > -0.05 and np.median(late_ms) < 0.2, (late_ms.min(), np.median(late_ms))
    assert beyond.mean() < 0.01, (beyond.sum(), late_ms.max(), reported_ms)
    # And the run as a whole delivers the trace.
    assert got == pytest.approx(want, rel=0.01)


@pytest.mark.real_time
@pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
def test_the_emulator_loses_what_its_impaired_link_loses():
    """10 % Bernoulli loss on the emulated bottleneck: the receiver misses what the router's wire
    lost, and about 10 % of what was sent."""
    from aqmlab.emu.run import emulate
    from aqmlab.scenario.load import validate

    s = {"name": "emu-impaired", "duration": "3s",
         "topology": {"bottleneck": {"rate": "20Mbps", "delay": "5ms", "impairments": {"loss": 0.1},
                                     "qdisc": {"kind": "droptail", "limit": "1000p"}}},
         "flows": [{"name": "cbr", "count": 1, "stop": "2s",
                    "app": {"kind": "cbr", "rate": "4Mbps", "packet_size": "1000B"}}]}
    run = emulate(validate(s))
    sent = int(run.tables["flows"]["packets_sent"].iloc[0])
    cbr_lost = sent - len(run.tables["media"])
    # 1000 packets: 10 % lost, within its 99.9 % binomial interval (about +-3 points).
    assert sent == 1000 and 0.07 < cbr_lost / sent < 0.13, (cbr_lost, sent)
    # The wire also carries the run's RTT probes before the epoch (the link counts from its
    # start): it lost at least what the receiver missed (the queue dropped nothing), and at
    # most that plus every probe it sent.
    forward = run.summary["emu"]["router"]["forward"]
    wire_lost, probes = forward["link"]["wire_lost_frames"], forward["stats"]["dequeued_packets"] - sent
    assert sum(forward["stats"]["dropped_packets"]) == 0
    assert cbr_lost <= wire_lost <= cbr_lost + probes, (cbr_lost, wire_lost, probes)


# ---- generated traces ----

MARKOV = {"kind": "markov", "length": "5s",
          "states": [{"rate": "24Mbps", "mean_dwell": "300ms"}, {"rate": "0bps", "mean_dwell": "100ms"}]}


def test_a_square_wave_bottleneck_alternates_its_capacities(write_scenario):
    s = _trace_scenario("unused")
    s["topology"]["bottleneck"]["trace"] = {"kind": "square", "high": "24Mbps", "low": "6Mbps", "period": "200ms"}
    s["flows"][0]["app"]["rate"] = "30Mbps"
    sc, _ = load(str(write_scenario(s)))
    packets = simulate(sc, progress=False).tables["packets"]
    sent = packets[packets.event == "dequeue"]
    # Windows (k * 100 ms, (k + 1) * 100 ms], the phases' own: 200 then 50 full packets.
    for k in range(2, 29):
        window = sent[(sent.t_ns > k * 100e6) & (sent.t_ns <= (k + 1) * 100e6)]
        mbps = window["size"].sum() * 8 / 0.1 / 1e6
        assert mbps == pytest.approx(24.0 if k % 2 == 0 else 6.0, rel=1e-9), (k, mbps)


def test_a_written_trace_is_the_one_the_scenario_s_link_follows(tmp_path, write_scenario):
    from aqmlab.traces import write_synthetic_trace

    written = write_synthetic_trace(MARKOV, tmp_path / "markov.down", seed=7)
    s = _trace_scenario("unused")
    s["seed"] = 7
    s["topology"]["bottleneck"]["trace"] = MARKOV
    sc, _ = load(str(write_scenario(s)))
    assert sc.to_sim_config()["topology"]["bottleneck"]["trace"]["opportunities_ms"] == written
    s["topology"]["bottleneck"]["trace"] = "markov.down"
    sc, _ = load(str(write_scenario(s)))
    assert sc.to_sim_config()["topology"]["bottleneck"]["trace"]["opportunities_ms"] == written
    # A Markov trace is a draw: another seed, another trace; another link, another stream.
    assert write_synthetic_trace(MARKOV, tmp_path / "other.down", seed=8) != written
    assert write_synthetic_trace(MARKOV, tmp_path / "other.down", seed=7, link="reverse") != written


def test_a_bad_trace_model_names_its_field(write_scenario):
    s = _trace_scenario("unused")
    s["topology"]["bottleneck"]["trace"] = {"kind": "square", "high": "24Mbps", "period": "1s", "duty": 1}
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(s)))
    assert err.value.problems[0].path == "topology.bottleneck.trace.duty"
    s["topology"]["bottleneck"]["trace"] = {"kind": "wave", "high": "24Mbps"}
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(s)))
    assert "unknown kind 'wave'" in err.value.problems[0].message
    assert "'constant', 'square', 'markov'" in err.value.problems[0].message


# ---- impairments ----

def _impaired(impairments: dict) -> dict:
    s = small_scenario(duration="3s")
    s["topology"]["bottleneck"] = {"rate": "20Mbps", "delay": "10ms", "impairments": impairments}
    s["flows"] = [{"name": "cbr", "count": 1, "stop": "2s",
                   "app": {"kind": "cbr", "rate": "8Mbps", "packet_size": "1000B"}}]
    s["metrics"] = {"periods": [["0s", "3s"]]}
    return s


def test_impairments_reach_the_engine_and_lose_packets(write_scenario):
    from aqmlab.scenario.load import validate

    clean = simulate(validate(_impaired({})), progress=False).tables["flows"]
    lossy_sc = validate(_impaired({"gemodel": {"p": 0.05, "r": 0.5}}))
    assert lossy_sc.to_sim_config()["topology"]["bottleneck"]["impairments"]["loss"] == {
        "kind": "gilbert_elliott", "p": 0.05, "r": 0.5, "loss_bad": 1.0, "loss_good": 0.0}
    lossy = simulate(lossy_sc, progress=False).tables["flows"]
    got, sent = lossy["delivered_bytes"].sum(), clean["delivered_bytes"].sum()
    # p / (p + r) = 9 % lost, over ~2000 packets in bursts: between 5 % and 14 %.
    assert 0.05 < 1 - got / sent < 0.14, 1 - got / sent


@pytest.mark.parametrize("impairments, path, fragment", [
    ({"loss": 0.1, "gemodel": {"p": 0.1, "r": 0.5}}, "topology.bottleneck.impairments", "two loss models"),
    ({"reorder": True}, "topology.bottleneck.impairments", "only jitter reorders"),
    ({"duplicate": 1.5}, "topology.bottleneck.impairments.duplicate", "less than or equal to 1"),
], ids=["two-models", "reorder-without-jitter", "duplicate>1"])
def test_bad_impairments_name_the_field(write_scenario, impairments, path, fragment):
    with pytest.raises(ScenarioError) as err:
        load(str(write_scenario(_impaired(impairments))))
    assert err.value.problems[0].path == path and fragment in err.value.problems[0].message, err.value.lines
