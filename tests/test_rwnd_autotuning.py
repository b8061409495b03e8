"""`tcp.rwnd_autotuning`: the receiver advertises a Linux receiver's window, which starts near
64 kB and grows by receive-buffer autotuning (crates/aqmlab-sim/src/tcp/receive_window.rs; the
rules and their check against this machine's kernel: docs/fidelity.md, "The receive window")."""

from __future__ import annotations

from typing import Any

import pandas as pd

from aqmlab.run import simulate
from aqmlab.scenario import validate
from conftest import small_scenario

LINUX = {"profile": "linux", "mss": "1448B"}


def _run(s: dict[str, Any]) -> dict[str, pd.DataFrame]:
    return simulate(validate(s), progress=False).tables


def _one_fast_flow(autotuning: bool, initial_cwnd: int = 10) -> dict[str, Any]:
    """One linux-profile flow through 100 Mbit/s with a 40 ms base RTT and a deep FIFO: its
    window needs 500 kB, far above the first advertised 65,160 B."""
    # No handshake (in the profile since 2026-11-28, later): the first flight leaves at 0 s.
    tcp = {**LINUX, "rwnd_autotuning": autotuning, "initial_cwnd": initial_cwnd, "handshake": False}
    return {
        "name": "fast", "seed": 1, "duration": "5s",
        "topology": {"bottleneck": {"rate": "100Mbps", "delay": "18ms",
                                    "qdisc": {"kind": "droptail", "limit": "1333p"}}},
        "flows": [{"name": "tcp", "count": 1, "access_rate": "1Gbps", "sender_delay": "1ms", "receiver_delay": "1ms",
                   "app": {"kind": "bulk", "tcp": tcp}}],
        "metrics": {"periods": [["1s", "5s"]]},
        "records": {"flow_sample": "10ms"},
    }


def test_the_first_flight_stops_at_the_first_window() -> None:
    """An initial window of 100 segments (144,800 B) is held to the receiver's first window,
    65,160 B (45 segments), until ACKs open it: delivered to the receiver in the first round
    trip (by 40 ms) 45 segments against 100 without the model."""
    delivered = lambda t: int(t["flow_samples"].query("t_ns == 40_000_000")["delivered_bytes"].iloc[0])  # noqa: E731
    assert delivered(_run(_one_fast_flow(True, 100))) == 65_160
    assert delivered(_run(_one_fast_flow(False, 100))) == 144_800


def test_a_single_flows_slow_start_is_not_held_back() -> None:
    """As in the kernel's trace (docs/fidelity.md, "The receive window": one cubic flow at
    100 Mbit/s, 40 ms, its window always ahead of cwnd), DRS opens the window faster than slow
    start doubles cwnd: with the usual 10-segment start the run is the one without the model."""
    on, off = _run(_one_fast_flow(True)), _run(_one_fast_flow(False))
    tcp = lambda t: t["flow_samples"].query("cwnd_bytes > 0")  # noqa: E731
    assert (tcp(off)["snd_wnd_bytes"] == 6_291_456).all()
    window = tcp(on)["snd_wnd_bytes"]
    assert window.iloc[0] == 65_160 and window.is_monotonic_increasing and window.iloc[-1] > 1_000_000
    assert (window >= tcp(on)["cwnd_bytes"]).all(), "the window stays ahead of cwnd"
    for name in on:
        a, b = on[name], off[name]
        if name == "flow_samples":
            a, b = a.drop(columns="snd_wnd_bytes"), b.drop(columns="snd_wnd_bytes")
        pd.testing.assert_frame_equal(a, b, obj=name)


def test_a_scenarios_own_small_window_is_the_ceiling_from_the_first_ack() -> None:
    """A window at or below the first one (Rb-RIO's scenarios set 20 segments) is offered from
    the first ACK and never grows; only out-of-order data held in recovery takes room from it,
    as in a kernel whose application fixed its buffer. In a lossy run: every sample at most
    19,200 B, most of them exactly that, some below."""
    tcp = {"profile": "linux", "rwnd": "19200B", "mss": "960B", "rwnd_autotuning": True}
    s = small_scenario()
    s["flows"][0]["app"]["tcp"] = tcp
    t = _run(s)
    assert int(t["flows"]["retransmissions"].sum()) > 0, "the run must lose packets for the check to bite"
    window = t["flow_samples"].query("cwnd_bytes > 0")["snd_wnd_bytes"]
    assert window.max() == 19_200 and (window == 19_200).mean() > 0.5 and window.min() < 19_200, window.describe()


def test_the_model_changes_a_lossy_multi_flow_run() -> None:
    """The switch reaches the connections (a guard against a field that parses and does
    nothing): five linux flows with the 6 MB ceiling give other records with it than without.
    Seed 2: the small scenario's own seed 7 has never filled a window since a new recovery keeps
    the last one's retransmissions in flight (2026-11-29), so its records are the same either
    way; seeds 1 and 2 differ."""
    s = small_scenario(seed=2)
    s["flows"][0]["app"]["tcp"] = {**LINUX, "rwnd_autotuning": True}
    on = _run(s)
    s["flows"][0]["app"]["tcp"] = {**LINUX, "rwnd_autotuning": False}
    off = _run(s)
    assert int(on["flows"]["retransmissions"].sum()) > 0, "the run must lose packets"
    assert not on["packets"].equals(off["packets"])
