"""benches/fidelity_bbr_policer.py: the share of BBR's samples in a held gain of 1, and the
crowded seconds, on tables built by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from conftest import bench_module

policer = bench_module("fidelity_bbr_policer")

MS = 1_000_000


def _samples(flow: int, gains: list[float], every_ms: int = 100) -> pd.DataFrame:
    return pd.DataFrame({"t_ns": [k * every_ms * MS for k in range(len(gains))], "flow": flow, "pacing_gain": gains})


def test_only_a_run_of_gain_one_as_long_as_the_threshold_counts_as_held():
    # Flow 0: startup, then gain 1 for 1.0 s (samples 0.2-1.2 s: held), a probe, 0.5 s of 1.
    # Flow 1: PROBE_BW's cycle, never 1 for long. Flow 2 is not BBR (gain 0): left out.
    a = _samples(0, [2.885, 0.344] + [1.0] * 11 + [1.25, 0.75] + [1.0] * 6)
    b = _samples(1, [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0] * 2 + [1.25, 0.75, 1.0, 1.0, 1.0])
    c = _samples(2, [0.0] * 21)
    table = pd.concat([c, b, a], ignore_index=True)  # order must not matter
    assert policer.held_share(table, 0, 10**12) == pytest.approx(11 / 42)
    # A run counts whole when it crosses the period's start: from 1.0 s, flow 0 has 3 held of 11.
    assert policer.held_share(table, 1000 * MS, 10**12) == pytest.approx(3 / 22)
    # One sample short of the threshold: nothing held.
    assert policer.held_share(table, 0, 10**12, held_s=1.05) == 0.0


def test_a_probe_lasts_from_its_first_sample_at_gain_1_25_to_its_last_plus_one_interval():
    # Flow 0: startup (2.885, not a probe), a probe of 2 samples, 1s, a probe of 3 samples.
    # Flow 1: a probe of 1 sample at the start, then one still running at the end.
    # Flow 2 is not BBR. Samples every 100 ms.
    a = _samples(0, [2.885, 2.885, 0.344, 1.0, 1.25, 1.25, 0.75, 1.0, 1.0, 1.25, 1.25, 1.25, 1.0])
    b = _samples(1, [1.25, 0.75, 1.0, 1.0, 1.0, 1.25, 1.25])
    c = _samples(2, [0.0] * 13)
    table = pd.concat([c, b, a], ignore_index=True)  # order must not matter
    lengths = sorted(policer.probe_lengths_ms(table, 0, 10**12, every_ms=100))
    assert lengths == pytest.approx([100, 200, 200, 300])
    # Only probes that begin in the period: flow 0's second (from 900 ms) and flow 1's last (500 ms).
    assert sorted(policer.probe_lengths_ms(table, 500 * MS, 10**12, every_ms=100)) == pytest.approx([200, 300])
    # Two flows' probes back to back are two probes, not one.
    d = pd.concat([_samples(3, [1.0, 1.25]), _samples(4, [1.25, 1.0])], ignore_index=True)
    assert sorted(policer.probe_lengths_ms(d, 0, 10**12, every_ms=100)) == pytest.approx([100, 100])
    assert len(policer.probe_lengths_ms(_samples(5, [1.0, 0.75]), 0, 10**12, every_ms=100)) == 0


def test_an_estimate_jump_compares_the_estimate_after_a_held_spell_with_the_held_rate():
    # Samples every 100 ms. Flow 0 holds gain 1 at 10 Mbit/s for 1.2 s (samples 0-1.2 s), then
    # probes: estimate 12 Mbit/s at 1.3 s, 15 at 1.5-1.8 s. The estimate 0.3-0.6 s after the
    # spell's last sample (1.2 s) is 15, 15, 15: a jump of 1.5. Flow 1 never holds.
    gains0 = [1.0] * 13 + [1.25, 0.75, 1.0, 1.0, 1.0, 1.0]
    rates0 = [10.0] * 13 + [12 * 1.25, 12 * 0.75, 15.0, 15.0, 15.0, 15.0]
    a = _samples(0, gains0).assign(pacing_rate_bps=[r * 1e6 for r in rates0])
    b = _samples(1, [1.25, 0.75, 1.0, 1.0]).assign(pacing_rate_bps=5e6)
    table = pd.concat([b, a], ignore_index=True)
    assert policer.estimate_jumps(table, 0, 10**12).tolist() == pytest.approx([1.5])
    # The held samples a caller already has give the same (`run` passes its own).
    assert policer.estimate_jumps(table, 0, 10**12, policer.held_samples(table)).tolist() == pytest.approx([1.5])
    # A spell ending outside the period is left out; a flow without a spell gives nothing.
    assert len(policer.estimate_jumps(table, 1300 * MS, 10**12)) == 0
    assert len(policer.estimate_jumps(b, 0, 10**12)) == 0


def test_summed_estimates_add_each_flows_last_sample_of_an_instant_where_nearly_all_flows_have_one():
    # Ten BBR flows sampled every 10 ms, each at gain 1.25 with a pacing rate of 2.5 Mbit/s
    # (estimate 2) and a delivery rate of 1 Mbit/s; flow 0 samples twice in the first instant
    # (its last counts: 5 Mbit/s, estimate 4). In the third instant only eight flows have a
    # sample: it is left out. A flow at gain 0 (not BBR) never counts.
    rows = []
    for flow in range(10):
        for k in range(3):
            if k == 2 and flow >= 8:
                continue
            rows.append({"t_ns": k * 10 * MS + flow * 1000, "flow": flow, "pacing_gain": 1.25,
                         "pacing_rate_bps": 2.5e6, "delivery_rate_bps": 1e6})
    rows.append({"t_ns": 9 * MS, "flow": 0, "pacing_gain": 1.25, "pacing_rate_bps": 5e6, "delivery_rate_bps": 1e6})
    rows.append({"t_ns": 0, "flow": 99, "pacing_gain": 0.0, "pacing_rate_bps": 0.0, "delivery_rate_bps": 50e6})
    table = pd.DataFrame(rows)
    sums = policer.summed_at_instants(table, 0, 10**12, "estimate", every_ms=10)
    assert sums.tolist() == pytest.approx([22.0, 20.0])
    assert policer.summed_at_instants(table, 0, 10**12, "delivery_rate_bps", every_ms=10).tolist() == pytest.approx(
        [10.0, 10.0])
    # Only instants inside the period.
    assert policer.summed_at_instants(table, 10 * MS, 10**12, "estimate", every_ms=10).tolist() == pytest.approx([20.0])


def test_rates_are_compared_with_their_estimate_outside_held_spells_only():
    # Flow 0 holds gain 1 for 1.2 s (13 samples, rate = estimate), then cycles with rates at half
    # its estimate; one sample without a rate (0) is left out. Flow 1 is not BBR.
    gains = [1.0] * 13 + [1.25, 0.75, 1.0, 1.0]
    f = _samples(0, gains).assign(pacing_rate_bps=[2e6 * 0.99 * g for g in gains],
                                  delivery_rate_bps=[2e6] * 13 + [1e6, 1e6, 1e6, 0.0])
    other = _samples(1, [0.0] * 3).assign(pacing_rate_bps=0.0, delivery_rate_bps=5e6)
    table = pd.concat([other, f], ignore_index=True)
    assert policer.rates_over_estimates(table, 0, 10**12).tolist() == pytest.approx([0.5, 0.5, 0.5])
    assert policer.rates_over_estimates(table, 1400 * MS, 10**12).tolist() == pytest.approx([0.5, 0.5])


def test_a_second_is_crowded_when_a_fifth_of_the_flows_wait_long():
    def dequeues(second: int, waits_ms: list[float]) -> list[dict]:
        return [{"t_ns": second * 10**9 + 1, "event": "dequeue", "flow": f, "sojourn_ns": w * MS}
                for f, w in enumerate(waits_ms)]
    rows = (dequeues(0, [50, 45, 1, 1, 1, 1, 1, 1, 1, 1])    # 2 of 10 wait long: crowded
            + dequeues(1, [50, 1, 1, 1, 1, 1, 1, 1, 1, 1])   # 1 of 10: not
            + dequeues(2, [39.9] * 10)                       # just under 40 ms: not
            + [{"t_ns": 2 * 10**9 + 5, "event": "enqueue", "flow": 0, "sojourn_ns": 90 * MS}])
    packets = pd.DataFrame(rows)
    assert policer.crowded_seconds(packets, 0, 3 * 10**9) == 1
    assert policer.crowded_seconds(packets, 10**9, 3 * 10**9) == 0


def test_the_overflow_share_counts_evictions_and_refused_arrivals_among_the_periods_drops():
    rows = [(0, "drop", "evicted"), (1, "drop", "evicted"), (2, "drop", "overflow"), (3, "drop", "early"),
            (4, "dequeue", None), (9, "drop", "evicted")]
    packets = pd.DataFrame({"t_ns": [r[0] * MS for r in rows], "event": [r[1] for r in rows],
                            "reason": pd.Categorical([r[2] for r in rows])})
    assert policer.overflow_share(packets, 0, 5 * MS) == pytest.approx(3 / 4)
    assert policer.overflow_share(packets, 3 * MS, 5 * MS) == 0.0


def test_per_flow_reads_the_estimate_from_the_pacing_rate_and_gain_and_leaves_other_flows_out():
    from types import SimpleNamespace

    # Flow 0: BBR at a 1.25 probe and at 1 (rate = gain x estimate x 0.99); flow 1: not BBR.
    samples = pd.DataFrame({"t_ns": [0, 100 * MS, 0], "flow": [0, 0, 1], "pacing_gain": [1.25, 1.0, 0.0],
                            "pacing_rate_bps": [1.25 * 0.99 * 4e6, 0.99 * 6e6, 5e6]})
    result = SimpleNamespace(tables={"flow_samples": samples},
                             flow_periods=pd.DataFrame({"flow": [0, 1], "throughput_mbps": [4.5, 3.0]}))
    table = policer.per_flow(result, 0, 10**9)
    assert list(table.index) == [0]
    assert table.loc[0, "bw_mbps"] == pytest.approx(5.0) and table.loc[0, "throughput_mbps"] == 4.5
    assert table.loc[0, "held"] == 0.0  # one sample of gain 1 is no run of a second
    # The run's held samples, computed once and handed in, give the same table.
    pd.testing.assert_frame_equal(policer.per_flow(result, 0, 10**9, policer.held_samples(samples)), table)


def test_a_pair_is_a_flows_data_packet_within_50_us_of_its_previous_one():
    # flow 0: data at 0, 10 µs (a pair), 5 ms, 5.049 ms (a pair); flow 1: 0 and 3 ms; a SYN and a
    # dequeue close behind do not count; flow 1's first arrival in the period has no gap.
    rows = [(0, 0, "arrive", 1500), (0, 10_000, "arrive", 1500), (0, 5_000_000, "arrive", 1500),
            (0, 5_049_000, "arrive", 1500), (0, 5_049_500, "dequeue", 1500), (1, 0, "arrive", 52),
            (1, 1_000, "arrive", 1500), (1, 3_000_000, "arrive", 1500)]
    packets = pd.DataFrame({"flow": [r[0] for r in rows], "t_ns": [r[1] for r in rows],
                            "event": pd.Categorical([r[2] for r in rows]), "size": [r[3] for r in rows]})
    assert policer.paired_share(packets, 0, 10**9) == pytest.approx(2 / 4)
    # A gap must be shorter than the bound: flow 0's second pair, 49 µs apart, is not a pair within 49 µs.
    assert policer.paired_share(packets, 0, 10**9, within_ns=49_000) == pytest.approx(1 / 4)
    assert policer.paired_share(packets, 4 * MS, 10**9) == pytest.approx(1.0)


def test_startup_intervals_reads_the_bbr_intervals_table():
    """Flow 0: start, intervals at 100, 150 and 160 kbit/s, then a policer within 1/8 of 160 at 165:
    changes 0.5, 1/15, 1/32, policed. Flow 1: an interval, a restart, a start, an interval (compared
    with nothing after the restart), a policer at 2.5 s, and a change after 3 s that is not read.
    Flow 2: a policer found after 3 s only."""
    s = 1_000_000_000
    rows = [(0, 0.1, 0, 0), (0, 0.5, 1, 100e3), (0, 0.9, 1, 150e3), (0, 1.3, 1, 160e3), (0, 1.7, 2, 165e3),
            (1, 0.2, 0, 0), (1, 0.6, 1, 200e3), (1, 1.0, 3, 0), (1, 1.2, 0, 0), (1, 1.8, 1, 300e3),
            (1, 2.5, 2, 310e3), (1, 3.5, 1, 50e3),
            (2, 0.5, 0, 0), (2, 1.0, 1, 100e3), (2, 3.2, 2, 101e3)]
    events = pd.DataFrame([{"flow": f, "t_ns": round(t * s), "event": e, "interval_bps": r, "lt_bps": r}
                           for f, t, e, r in rows])
    policed, changes = policer.startup_intervals(events, until_s=3.0)
    assert policed == 2
    assert sorted(changes.round(6)) == sorted([0.5, round(10 / 150, 6), round(5 / 160, 6), round(10 / 300, 6)])


def test_not_new_share_counts_payload_the_receivers_had_already():
    """Two flows dequeue 10 packets of 1448 B payload each in [0, 1 s); flow 0's acknowledged
    bytes grow by all 10, flow 1's by 8 (two were duplicates): 2 of 20 not new."""
    packets = pd.DataFrame({"t_ns": [k * 50 * MS for k in range(20)], "event": ["dequeue"] * 20,
                            "flow": [0, 1] * 10, "size": [1500] * 20})
    samples = pd.DataFrame({"t_ns": [0, 0, 1040 * MS, 1040 * MS], "flow": [0, 1, 0, 1],
                            "delivered_bytes": [0, 0, 10 * 1448, 8 * 1448]})
    assert policer.not_new_share(packets, samples, 0, 1000 * MS) == pytest.approx(0.1)
    # No data packets: nothing to share out.
    assert math.isnan(policer.not_new_share(packets.assign(size=52), samples, 0, 1000 * MS))


def test_the_simulated_bbr_flows_retransmit_almost_nothing_the_receivers_had() -> None:
    """End to end, the case the bench runs (50 BBR flows under FQ-CoDel, seed 1, 10-30 s): the
    payload dequeued that did not add to what the receivers acknowledged is under 1 %, as the
    kernel's 0.0-0.4 %. Before a new recovery kept the last one's retransmissions in flight
    (`tcp/rxt_in_flight.rs`, docs/fidelity.md) it was 4.6-5.4 %; RACK then took the first copy's
    ACK for the second's and marked whole windows lost."""
    case = policer.fidelity.case_or_error("50f-100M-40ms-fqcodel")
    row, _ = policer.run(case, 1, False, [])
    assert row["not_new"] < 0.01, row["not_new"]
    assert row["retrans"] > 0.05, f"the case must lose packets for the check to bite: {row['retrans']}"
