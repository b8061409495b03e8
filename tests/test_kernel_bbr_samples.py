"""benches/kernel_bbr_samples.py on a trace and a pahole layout built by hand (the tracing itself
needs root, bpftrace and a kernel with BTF: a bench, not a test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import bench_module

bench = bench_module("kernel_bbr_samples")

#: One segment per microsecond << 24, the unit of BBR's bandwidth.
UNIT = 2**24


def _line(t_s: float, sock: int, segs: int, bw_v: int, *, lt_use: int = 0, lt_bw_v: int = 0, gain: int = 256,
          rtt_cnt: int = 0, delivered: int = 0) -> str:
    # t_ns sock rate_segs rate_interval_us delivered mss bw_v lt_use_bw pacing_gain min_rtt_us lt_bw_v rtt_cnt
    return f"{round(t_s * 1e9)} {sock} {segs} 10000 {delivered} 1000 {bw_v} {lt_use} {gain} 9000 {lt_bw_v} {rtt_cnt}"


def _trace(tmp_path: Path) -> Path:
    """Flow 7, an ACK every 10 ms for 3 s, a round every 50 ms: samples of 10 segments per 10 ms
    (8 Mbit/s at 1000-byte segments) and an estimate of 8 Mbit/s, but at 1.0 s one sample of 12
    segments, which lifts the estimate to 9.6 Mbit/s until 2.0 s; a held spell from 2.5 to 2.7 s
    at a policed rate of 0.9 of the estimate. Flow 8 is not BBR (gain 0)."""
    v = UNIT // 1000  # 0.001 segments per microsecond: 8 Mbit/s
    lines = ["Attaching 1 probe..."]
    for k in range(300):
        t = k / 100
        segs = 12 if k == 100 else 10
        bw = v * 12 // 10 if 100 <= k < 200 else v
        held = 1 if 250 <= k < 270 else 0
        lines.append(_line(t, 7, segs, bw, lt_use=held, lt_bw_v=v * 9 // 10 if held else 0, rtt_cnt=k // 5,
                           delivered=k))
        lines.append(_line(t, 8, 10, v, gain=0, delivered=k))
    lines.append("12345 7 10")  # cut off when bpftrace stopped
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_trace_keeps_whole_lines_of_bbr_sockets_only(tmp_path: Path):
    trace = bench.read_trace(_trace(tmp_path))
    assert len(trace) == 300 and set(trace["sock"]) == {7}


def test_the_summary_of_a_trace_built_by_hand(tmp_path: Path):
    out = bench.summarize(bench.read_trace(_trace(tmp_path)), 0.0, 3.0)
    assert out["flows"] == 1
    # The 12-segment sample over the 8 Mbit/s estimate before it: 1.2; it is the one rise.
    assert out["sample_over_estimate_max"] == pytest.approx(1.2, rel=1e-3)
    assert out["rises"] == 1 and out["rise_p50"] == pytest.approx(1.2, rel=1e-3)
    assert out["rise_segments_p50"] == 12 and out["rise_interval_over_min_rtt_p50"] == pytest.approx(10 / 9)
    assert out["rises_at_gain_1"] == 1
    # From 1.5 to 2.0 s the estimate stands 1.2x above every sample of the previous 0.5 s (50
    # of 300 ACKs, more than a tenth); within 1 s the 12-segment sample is always in sight.
    assert out["estimate_over_largest_0.5s_p90"] == pytest.approx(1.2, rel=1e-3)
    assert out["estimate_over_largest_1s_p90"] == pytest.approx(1.0, rel=1e-3)
    # Ten rounds of 50 ms.
    assert out["ten_rounds_s_p50"] == pytest.approx(0.5) and out["ten_rounds_s_p90"] == pytest.approx(0.5)
    # One spell ends, at an estimate of 8 Mbit/s over a policed 7.2.
    assert out["spell_ends"] == 1
    assert out["estimate_over_policed_at_spell_end_p50"] == pytest.approx(1 / 0.9, rel=1e-3)


def test_the_start_up_intervals_are_read_from_lt_bw_until_a_policer_is_found(tmp_path: Path):
    v = UNIT // 1000
    lines = []
    # Flow 1: intervals at 10, 12 (+20 %) and 11.5 (-4.2 %) units, then a policer at the mean of
    # 11.5 and 11 (lt_bw 11.25): its last interval ran at 11 (-4.3 %); later changes do not count.
    # Flow 2: intervals at 8 and 9 (+12.5 %), a restart (lt_bw 0), then 5, compared with nothing;
    # no policer. Flow 3 finds one only after 3 s.
    steps = {1: [(0.1, 10, 0), (0.5, 12, 0), (0.9, 11.5, 0), (1.3, 11.25, 1), (1.7, 20, 0)],
             2: [(0.2, 8, 0), (0.6, 9, 0), (1.0, 0, 0), (1.4, 5, 0)], 3: [(0.3, 10, 0), (3.5, 10, 1)]}
    for sock, changes in steps.items():
        for t, lt, use in changes:
            lines.append(_line(t, sock, 10, v, lt_use=use, lt_bw_v=round(lt * 1000)))
    path = tmp_path / "trace.txt"
    path.write_text("\n".join(lines) + "\n")
    policed, changes = bench.startup_intervals(bench.read_trace(path), until_s=3.0)
    assert policed == 1
    assert sorted(changes.round(4).tolist()) == sorted([0.2, round(0.5 / 12, 4), round(0.5 / 11.5, 4), 0.125])


def test_the_layout_reads_offsets_and_bit_positions_from_pahole():
    text = """struct bbr {
	u32                        min_rtt_us;           /*     0     4 */
	struct minmax              bw;                   /*    12    24 */
	u32                        rtt_cnt;              /*    36     4 */
	u32                        lt_use_bw:1;          /*    56:31  4 */
	u32                        pacing_gain:10;       /*    76: 0  4 */
	u64                        icsk_ca_priv[13];     /*  1296   104 */
};"""
    layout = bench.parse_layout(text)
    assert layout["min_rtt_us"] == 0 and layout["bw"] == 12 and layout["rtt_cnt"] == 36
    assert layout["lt_use_bw"] == 56 and layout["lt_use_bw.bit"] == 31
    assert layout["pacing_gain"] == 76 and layout["pacing_gain.bit"] == 0
    assert layout["icsk_ca_priv"] == 1296
