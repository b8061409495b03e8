"""`tcp.rtt_sample_every_ack` (Linux's RTT sample from every ACK, with timestamps) and
`tcp.rto_estimator` (Linux's tcp_rtt_estimator): off by default and absent from the engine config
when off, in the linux profile with the handshake (bulk flows only), listed as not emulated, refused
with the allowed values, and effective: the RTO sits at SRTT + 200 ms as the kernel's does
(docs/fidelity.md, "RTT samples and the RTO": the kernel 200.2-203.6 ms above SRTT, RFC 6298
91-169 ms), and the 8-flow BBR FIFO of the fidelity suite no longer starves a flow."""

from __future__ import annotations

import numpy as np
import pytest

from aqmlab.emu.run import NOT_EMULATED
from aqmlab.run import simulate
from aqmlab.scenario import load
from aqmlab.scenario.applications import LINUX_PROFILE, Abr, Tcp
from conftest import engine_tcp_of_testbed, fidelity_bench

FIELDS = ("rtt_sample_every_ack", "rto_estimator")
#: The linux profile before these three (2026-11-28, morning).
PREVIOUS_PROFILE = ["flows.*.app.tcp.rtt_sample_every_ack=false", "flows.*.app.tcp.rto_estimator=rfc6298",
                    "flows.*.app.tcp.handshake=false"]


def test_off_by_default_and_absent_from_the_engine_config():
    t = Tcp()
    assert t.rtt_sample_every_ack is False and t.rto_estimator == "rfc6298"
    engine = engine_tcp_of_testbed([])
    assert not any(f in engine for f in FIELDS)


def test_the_linux_profile_samples_every_ack_with_linux_rto_and_opens_with_a_handshake():
    assert LINUX_PROFILE["rtt_sample_every_ack"] is True and LINUX_PROFILE["rto_estimator"] == "linux"
    assert LINUX_PROFILE["handshake"] is True
    engine = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux"])
    assert engine["rtt_sample_every_ack"] is True and engine["rto_estimator"] == "linux"
    assert engine["handshake"] is True
    previous = engine_tcp_of_testbed(["flows.tcp.app.tcp.profile=linux", *PREVIOUS_PROFILE])
    assert not any(f in previous for f in (*FIELDS, "handshake"))


def test_stream_and_abr_clients_take_the_profile_without_its_handshake():
    abr = {"kind": "abr", "algorithm": "throughput", "ladder": "synthetic", "tcp": {"profile": "linux"}}
    a = Abr.model_validate(abr)
    assert a.tcp.handshake is False and a.tcp.rtt_sample_every_ack is True
    # A handshake the scenario writes itself is still refused, naming the field.
    with pytest.raises(ValueError, match="tcp.handshake: only bulk flows"):
        Abr.model_validate({**abr, "tcp": {"profile": "linux", "handshake": True}})


def test_an_unknown_estimator_is_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="rto_estimator") as e:
        Tcp.model_validate({"rto_estimator": "bsd"})
    assert "rfc6298" in str(e.value) and "linux" in str(e.value)


def test_listed_as_not_emulated():
    line = next(line for line in NOT_EMULATED if line.startswith("flows.*.app.tcp:"))
    assert all(f in line for f in FIELDS) and "takes an RTT sample from every ACK" in line


def _rto_above_srtt_ms(estimator: str) -> np.ndarray:
    overrides = ["flows.tcp.count=1", "duration=20s", 'metrics.periods=[["5s","20s"]]',
                 "flows.tcp.app.tcp.profile=linux", f"flows.tcp.app.tcp.rto_estimator={estimator}"]
    sc, _ = load("sqf/testbed-fifo", overrides)
    fs = simulate(sc, progress=False).tables["flow_samples"]
    tcp = fs[(fs.srtt_ns > 0) & (fs.t_ns >= 5e9)]
    return ((tcp.rto_ns - tcp.srtt_ns) / 1e6).to_numpy()


def test_linux_estimator_keeps_the_rto_at_least_200_ms_above_srtt():
    """One CUBIC flow beside the video through the SQF testbed's FIFO: Linux's estimator never
    sets the RTO less than min_rto above SRTT, outside a backoff it is at most a few ms more (as
    the kernel's, measured at 200.2-203.6 ms with 4 ms jiffies); RFC 6298's sits below."""
    linux = _rto_above_srtt_ms("linux")
    rfc = _rto_above_srtt_ms("rfc6298")
    assert linux.size > 100 and rfc.size > 100
    assert linux.min() >= 200 - 1e-6, linux.min()
    assert np.median(linux) < 210, np.median(linux)
    assert np.median(rfc) < 190, f"RFC 6298 must sit below for the check to bite: {np.median(rfc)}"


#: The seed of `_bbr_min_share`: one whose run with the previous profile starves a flow. Seed 1's
#: did until the autotuned window grew on out-of-order segments (2026-11-29), seed 4's until a new
#: recovery kept the last one's retransmissions in flight (2026-11-29, later: 0.0005 -> 0.0068);
#: since, of seeds 1-16 those of 1 and 8-12 starve one (0.0016-0.0026; the profile now
#: 0.017-0.100), seed 8's 0.0025 (now 0.088).
STARVING_SEED = 8


def _bbr_min_share(overrides: list[str]) -> float:
    """The fidelity suite's 8f-10M-50ms-fifo with bbr (benches/fidelity.py), `STARVING_SEED`:
    eight BBR flows, 50 ms, a one-BDP FIFO, starts spread over 1 s; the smallest share of 10-30 s."""
    fid = fidelity_bench()
    case = next(c for c in fid.CASES if c.name == "8f-10M-50ms-fifo")
    result = simulate(fid.scenario(case, "bbr", STARVING_SEED, overrides=overrides), progress=False)
    return float(min(fid.measures(result, case)["shares"]))


def test_eight_bbr_flows_no_longer_starve_one():
    """With the previous profile a flow whose retransmissions kept being acknowledged never got
    a valid RTT sample (Karn), so its RTO kept doubling (to 16 s and more) and it starved (share
    0.00006 when measured); the kernel's smallest share there is 0.06-0.10 of the link."""
    before = _bbr_min_share(PREVIOUS_PROFILE)
    now = _bbr_min_share([])
    assert before < 0.005, f"the previous profile must starve a flow for the check to bite: {before}"
    assert now > 0.01, f"smallest share with the profile now: {now}"
