"""benches/fidelity_fq_sojourn.py: the share of packets that found their flow's queue empty, the
delay medians of both kinds, and ACKs per data packet, on tables built by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import bench_module

fq = bench_module("fidelity_fq_sojourn")

MS = 1_000_000


def _packets(rows: list[tuple[int, str, int, int, int]]) -> pd.DataFrame:
    """(t in ms, event, flow, uid, sojourn in ms) rows as a `packets` table."""
    return pd.DataFrame({"t_ns": [r[0] * MS for r in rows], "event": pd.Categorical([r[1] for r in rows]),
                         "flow": [r[2] for r in rows], "uid": [r[3] for r in rows],
                         "sojourn_ns": [r[4] * MS for r in rows]})


def test_a_packet_counts_as_arriving_to_an_empty_queue_only_when_its_flow_had_nothing_queued():
    table = _packets([
        (0, "arrive", 0, 0, 0), (0, "enqueue", 0, 0, 0),   # flow 0 empty: uid 0 found it empty
        (1, "arrive", 0, 1, 0), (1, "enqueue", 0, 1, 0),   # behind uid 0
        (2, "arrive", 1, 2, 0), (2, "enqueue", 1, 2, 0),   # flow 1 empty
        (3, "drop", 1, 2, 0),                              # a head drop empties flow 1 again
        (4, "arrive", 1, 3, 0), (4, "enqueue", 1, 3, 0),   # so uid 3 finds it empty
        (5, "dequeue", 0, 0, 5), (9, "dequeue", 0, 1, 8), (10, "dequeue", 1, 3, 6),
    ])
    mix = fq.sojourn_mix(table, 0, 100 * MS)
    assert mix["empty"] == pytest.approx(2 / 3)
    assert mix["p50_empty_ms"] == pytest.approx(5.5) and mix["p50_behind_ms"] == pytest.approx(8)
    assert mix["mean_ms"] == pytest.approx(19 / 3) and mix["p50_ms"] == pytest.approx(6)
    # Events before the period count for the backlog, not for the measures: uid 1 is still
    # behind uid 0, whose enqueue falls before the period and is left out.
    later = fq.sojourn_mix(table, MS, 100 * MS)
    assert later["empty"] == pytest.approx(1 / 2) and later["p50_behind_ms"] == pytest.approx(8)


def test_a_drop_of_a_packet_never_enqueued_is_refused_not_counted():
    table = _packets([(0, "arrive", 0, 0, 0), (0, "drop", 0, 0, 0)])
    with pytest.raises(ValueError, match="never enqueued"):
        fq.sojourn_mix(table, 0, MS)


class _Result:
    def __init__(self, summary: dict, tables: dict) -> None:
        self.summary, self.tables = summary, tables


def test_acks_per_data_packet_in_either_engine():
    flows = pd.DataFrame({"is_tcp": [1, 1, 0], "packets_sent": [60, 40, 500]})
    assert fq.acks_per_segment(_Result({"sim": {"packets_created": 650}}, {"flows": flows})) == pytest.approx(0.5)
    emu = {"emu": {"router": {"router": {"rx_frames": [200, 130]}}}}
    assert fq.acks_per_segment(_Result(emu, {})) == pytest.approx(0.65)


def test_bad_arguments_are_refused_in_one_line(capsys):
    assert fq.main(["--case", "nope"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nope" in err and "8f-10M-50ms-fqcodel" in err
    assert fq.main(["--controllers", "reno,vegas"]) == 2
    err = capsys.readouterr().err.strip()
    assert "vegas" in err and "bbr" in err


def test_a_dequeue_logged_after_a_later_arrival_is_counted():
    # The router read uid 1 (stamped 7 ms) before it released uid 0, due at 5 ms.
    table = _packets([
        (0, "arrive", 0, 0, 0), (0, "enqueue", 0, 0, 0),
        (7, "arrive", 1, 1, 0), (7, "enqueue", 1, 1, 0),
        (5, "dequeue", 0, 0, 5), (8, "dequeue", 1, 1, 1),
    ])
    assert fq.dequeues_before_an_arrival(table) == pytest.approx(1 / 2)
    in_order = table.sort_values("t_ns", kind="stable")
    assert fq.dequeues_before_an_arrival(in_order) == 0.0
