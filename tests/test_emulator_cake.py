"""CAKE in the emulator on real packets: the same core code as the simulator's, fed frames whose
DSCP the UDP sender set (`dscp = 46`, EF): diffserv4 serves them from the voice tin ahead of
the TCP flows' backlog, and the shaper holds the link to CAKE's bandwidth. Needs root and
`ip netns`, as test_emulator.py."""

from __future__ import annotations

import numpy as np
import pytest

from aqmlab.emu import netns
from aqmlab.scenario import validate

MISSING = netns.missing_requirement()


@pytest.mark.real_time
@pytest.mark.skipif(MISSING is not None, reason=f"emulation unavailable: {MISSING}")
def test_ef_marked_udp_is_served_from_the_voice_tin() -> None:
    from aqmlab.emu.run import emulate

    zero = {"sender_delay": "0ms", "receiver_delay": "0ms"}
    qdisc = {"kind": "cake", "bandwidth": "8Mbps", "diffserv": "diffserv4"}
    data = {"name": "emu-cake", "duration": "5s",
            "topology": {"bottleneck": {"rate": "10Mbps", "delay": "5ms", "qdisc": qdisc}},
            "flows": [{"name": "tcp", "count": 4, "app": {"kind": "bulk", "tcp": {"sack": True}}, **zero},
                      {"name": "voice", "count": 1, "start": "1s", "dscp": 46, **zero,
                       "app": {"kind": "cbr", "rate": "1Mbps", "packet_size": "1000B"}}],
            # The voice tin holds the CBR's packet for about a packet time every 8 ms: 10 ms
            # samples missed it in whole runs (two full-suite runs), so sample every ms.
            "records": {"queue_sample": "1ms"}}
    r = emulate(validate(data))
    assert r.summary["emu"]["router"]["forward"]["invariants"] is None
    p = r.tables["packets"]
    out = p[(p["event"] == "dequeue") & (p["t_ns"] >= 2e9)]
    udp, tcp = out[out["flow"] == 4], out[out["flow"] != 4]
    assert len(udp) > 100
    # The voice tin is due far more often than the 1 Mbit/s it carries: its packets wait a
    # packet time or two; TCP waits behind its own backlog under COBALT's 5 ms target.
    assert float(np.median(udp["sojourn_ns"])) < 2e6, np.median(udp["sojourn_ns"])
    assert float(np.median(tcp["sojourn_ns"])) > 2e6, np.median(tcp["sojourn_ns"])
    q = r.tables["queue"]
    assert q["tin3_backlog"].max() > 0
    # The shaper: 8 Mbit/s leave, not the link's 10.
    sent_bits = 8 * out["size"].sum()
    span = (out["t_ns"].max() - out["t_ns"].min()) / 1e9
    assert 7.0e6 < sent_bits / span < 8.2e6, sent_bits / span
