"""benches/sabre_check.py: the replay harness and Sabre-output parser on hand-made cases, and,
when a Sabre checkout is given (SABRE_DIR), aqmlab's BOLA, BOLA-E and throughput rule making
Sabre's decisions segment by segment once the known differences are removed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import bench_module

sc = bench_module("sabre_check")

# Two rungs, 1 and 2 Mbit/s, 2 s segments, four segments of exactly nominal size (bits).
MANIFEST = {"segment_duration_ms": 2000, "bitrates_kbps": [1000, 2000],
            "segment_sizes_bits": [[2_000_000, 4_000_000]] * 4}


def test_throughput_rule_replay_by_hand():
    """3 Mbit/s, 100 ms latency. Segment 0: lowest rung (nothing measured); 2 Mbit in
    0.1 + 0.667 s: 2.609 Mbit/s measured over the whole download (0.9 x = 2.348 >= 2 Mbit/s ->
    rung 1), or 3 Mbit/s after the first byte. A 1 Mbit/s trace: 0.9 x 0.95 Mbit/s < 1 Mbit/s
    keeps rung 0 throughout."""
    fast = [{"duration_ms": 1000, "bandwidth_kbps": 3000, "latency_ms": 100}]
    assert sc.replay(MANIFEST, fast, sc.abr_params("throughput")) == [0, 1, 1, 1]
    slow = [{"duration_ms": 1000, "bandwidth_kbps": 1000, "latency_ms": 100}]
    assert sc.replay(MANIFEST, slow, sc.abr_params("throughput")) == [0, 0, 0, 0]
    # 2.1 Mbit/s: 0.9 x 2.1 = 1.89 < 2 -> rung 0 whichever way it is measured; at 2.3 Mbit/s
    # only the measure after the first byte (0.9 x 2.3 = 2.07) reaches rung 1 (the whole
    # download: 2 Mbit / (0.1 + 0.8696 s) = 2.063, x 0.9 = 1.856).
    edge = [{"duration_ms": 1000, "bandwidth_kbps": 2300, "latency_ms": 100}]
    assert sc.replay(MANIFEST, edge, sc.abr_params("throughput")) == [0, 0, 0, 0]
    assert sc.replay(MANIFEST, edge, sc.abr_params("throughput"), throughput_excludes_latency=True) == [0, 1, 1, 1]


def test_bola_replay_follows_the_buffer_by_hand():
    """BOLA on 1/2 Mbit/s, 2 s segments, target 6 s = 3 segments, gamma p = 5:
    V = 2 / (ln 2 + 5) = 0.3513. Rung 1 scores above rung 0 when
    (V (ln 2 + 5) - Q) / 2 > (5 V - Q) / 1, i.e. Q > V (5 - ln 2) = 1.513 segments = 3.03 s.
    At 10 Mbit/s, no latency: segment 0 (0.2 s) leaves 2 s -> rung 0 for segment 1 (0.2 s),
    leaving 3.8 s -> rung 1 for segment 2 (0.4 s), leaving 5.4 s; segment 3 waits for room
    (5.4 + 2 > 6) down to 4 s -> rung 1."""
    trace = [{"duration_ms": 1000, "bandwidth_kbps": 10000, "latency_ms": 0}]
    assert sc.replay(MANIFEST, trace, sc.abr_params("bola", 6.0), max_buffer_s=6.0) == [0, 0, 1, 1]
    # A 10 s target stretches the rule: V = 4 / 5.693, rung 1 from Q > 3.03 segments = 6.05 s,
    # more than the 6 s buffer ever holds before a choice (at most 6 - 2 = 4 s).
    assert sc.replay(MANIFEST, trace, sc.abr_params("bola", 10.0), max_buffer_s=6.0) == [0, 0, 0, 0]


def test_bola_e_replay_drives_the_whole_client_by_hand():
    """BOLA-E through `replay_client` (aqmlab's client: its state between decisions) on 1/2
    Mbit/s, 2 s segments, a 25 s buffer (target max(25, 10 + 2 x 2) = 25 s), 10 Mbit/s, no
    latency. Segment 0: lowest rung (nothing measured). Segment 1 is the startup decision: 2
    Mbit in 0.2 s = 10 Mbit/s sustains rung 1, and the placeholder is set so the rule agrees;
    the placeholder keeps it there. BOLA-BASIC with the same 25 s target stays at rung 0: V =
    11.5 / (ln 2 + 5) = 2.02, so it prefers rung 1 only above V (5 - ln 2) = 8.7 segments (17.4
    s) of real buffer, which four segments never reach."""
    trace = [{"duration_ms": 1000, "bandwidth_kbps": 10000, "latency_ms": 0}]
    assert sc.replay_client(MANIFEST, trace, sc.abr_params("bola_e", 25.0), max_buffer_s=25.0) == [0, 1, 1, 1]
    assert sc.replay(MANIFEST, trace, sc.abr_params("bola", 25.0), max_buffer_s=25.0) == [0, 0, 0, 0]
    # 1.5 Mbit/s sustains only rung 0: the startup decision stays low.
    slow = [{"duration_ms": 1000, "bandwidth_kbps": 1500, "latency_ms": 0}]
    assert sc.replay_client(MANIFEST, slow, sc.abr_params("bola_e", 25.0), max_buffer_s=25.0)[:2] == [0, 0]


def test_off_rungs_moves_only_bandwidths_on_a_rung(tmp_path):
    """The step option that keeps a period's bandwidth off the rungs' bitrates: 2000 kbit/s (a
    rung of MANIFEST) becomes 2001, 3000 stays."""
    step = sc.Step("x", [], zero_latency=True, off_rungs=True)
    trace = [{"duration_ms": 1000, "bandwidth_kbps": 2000, "latency_ms": 20},
             {"duration_ms": 1000, "bandwidth_kbps": 3000, "latency_ms": 20}]
    seen = {}

    def fake_run(sabre_dir, manifest_path, trace_path, args):
        seen["trace"] = json.loads(Path(trace_path).read_text())
        return [0, 0, 0, 0]

    sabre = tmp_path / "sabre"
    (sabre / "example" / "mmsys18").mkdir(parents=True)
    (sabre / sc.MANIFEST).write_text(json.dumps(MANIFEST))
    orig = sc.run_sabre
    sc.run_sabre = fake_run
    try:
        sc.compare(sabre, "throughput", step, "t", trace, tmp_path)
    finally:
        sc.run_sabre = orig
    assert [p["bandwidth_kbps"] for p in seen["trace"]] == [2001, 3000]
    assert all(p["latency_ms"] == 0 for p in seen["trace"])


def test_trace_network_loops_and_splits_latency_and_transfer():
    net = sc.TraceNetwork([sc.Period(100, 1000, 10), sc.Period(100, 2000, 50)])
    assert net.latency() == 10
    # 90 ms left at 1000 bits/ms = 90_000 bits, the rest at 2000 bits/ms.
    assert net.transfer(110_000) == pytest.approx(90 + 10)
    assert net.index == 1 and net.left_ms == pytest.approx(90)  # at 110 ms
    net.delay(180)  # to 290 ms: the trace looped back to period 0, 10 ms of it left
    assert net.index == 0 and net.left_ms == pytest.approx(10)
    with pytest.raises(ValueError, match="bandwidth_kbps"):
        sc.TraceNetwork([sc.Period(100, 0, 10)])


def test_parse_sabre_verbose_keeps_the_last_unabandoned_download():
    text = "\n".join([
        "0 0",
        "[0] Network: 1000,100  (q=3: bitrate=688)",
        "[0-1000]  0: q=0 s=886360/886360 t=1000=100+900 bl=0->0->3000",
        "[1000-1500]  1: q=5 s=100/5000 t=500=100+400  ABANDONED to 2 - 100/5000 bits bl=2500->2000",
        "[1500-2000]  1: q=2 s=1000/1000 t=500=100+400 bl=2000->1500->4500",
        "full buffer delay 10 bl=3000",
        "[2000-2200]  2: q=3 s=1/1 t=200=100+100 bl=4500->4300->7300",
    ])
    assert sc.parse_sabre_verbose(text) == [0, 2, 3]
    with pytest.raises(ValueError, match="indices"):
        sc.parse_sabre_verbose("[0-1]  1: q=0 s=1/1")
    assert sc.agreement([0, 1, 2, 3], [0, 1, 1, 3]) == 0.75


_SABRE = sc.find_sabre(os.environ.get("SABRE_DIR"))


@pytest.mark.skipif(_SABRE is None, reason="no Sabre checkout: set SABRE_DIR to a clone of UMass-LIDS/sabre")
@pytest.mark.parametrize("title", list(sc.STEPS))
@pytest.mark.parametrize("trace_name", ["3G (3Glogs 2010-09-13)", "steps 6/1.5/4 Mbit/s"])
def test_sabre_agrees_once_the_known_differences_are_removed(tmp_path, title, trace_name):
    assert _SABRE is not None
    algorithm, steps = sc.STEPS[title]
    trace = sc.traces(_SABRE)[trace_name]
    params = sc.PARAMS.get(title)
    share, first = sc.compare(_SABRE, algorithm, steps[-1], trace_name, trace, tmp_path, params)
    assert (share, first) == (1.0, None)
    # And the defaults differ on these traces, so the comparison can tell them apart.
    share, _ = sc.compare(_SABRE, algorithm, steps[0], trace_name, trace, tmp_path, params)
    assert share < 1.0


@pytest.mark.skipif(_SABRE is None, reason="no Sabre checkout: set SABRE_DIR to a clone of UMass-LIDS/sabre")
def test_bola_o_agrees_with_sabre_s_ao_and_bola_u_does_not(tmp_path):
    """BOLA-O's row compares aqmlab's `bola_e_variant = "bola_o"` with Sabre's `-ao`: with every
    known difference removed they agree on the 3G trace, and aqmlab's BOLA-U against `-ao` does
    not, so the row tests the variant."""
    assert _SABRE is not None
    name = "3G (3Glogs 2010-09-13)"
    trace = sc.traces(_SABRE)[name]
    last = sc.STEPS["BOLA-O"][1][-1]
    assert sc.compare(_SABRE, "bola_e", last, name, trace, tmp_path, sc.PARAMS["BOLA-O"]) == (1.0, None)
    share, _ = sc.compare(_SABRE, "bola_e", last, name, trace, tmp_path)
    assert share < 1.0


def test_abr_choose_refuses_bad_input_naming_the_field():
    from aqmlab import _core

    ladder = sc.ladder_json(MANIFEST)
    params = sc.abr_params("bola", 6.0)
    assert _core.abr_choose(json.dumps(params), ladder, 3, 4.0, 0, [], []) == 1
    for args, field in [((4, 0.0, None), "segment"), ((0, 0.0, 2), "last_rung"), ((0, -1.0, None), "buffer_s"),
                        ((0, float("nan"), None), "buffer_s")]:
        with pytest.raises(ValueError, match=field):
            _core.abr_choose(json.dumps(params), ladder, *args, [], [])
    with pytest.raises(ValueError, match="bola_gamma_p"):
        _core.abr_choose(json.dumps(dict(params, bola_gamma_p=0)), ladder, 0, 0.0, None, [], [])
    with pytest.raises(ValueError, match="unknown variant"):
        _core.abr_choose(json.dumps(dict(params, algorithm="pensieve")), ladder, 0, 0.0, None, [], [])
    # BOLA-E keeps state between decisions: a lone decision is refused, naming the way to run it.
    with pytest.raises(ValueError, match="bola_e keeps state between decisions; drive it through AbrClient"):
        _core.abr_choose(json.dumps(dict(params, algorithm="bola_e")), ladder, 1, 2.0, 0, [1e7], [])
