"""Decodability rules on hand-made frame sequences."""

from __future__ import annotations

import numpy as np
import pandas as pd

from aqmlab.video import FRAME_B, FRAME_I, FRAME_P, annotate_frames, decodable, stream_stats

T = {"I": FRAME_I, "P": FRAME_P, "B": FRAME_B}


def run(pattern: str, lost: set[int]) -> str:
    ft = np.array([T[c] for c in pattern])
    rx = np.array([i not in lost for i in range(len(pattern))])
    return "".join("d" if d else "." for d in decodable(ft, rx))


def test_everything_received_decodes_except_a_trailing_b_without_next_anchor():
    assert run("IBBPBBPBBI", set()) == "dddddddddd"
    assert run("IBBPBBPBB", set()) == "ddddddd.."


def test_an_i_loss_kills_its_dependent_p_and_b_frames():
    # I lost: the P chain and every B of the GOP die; the next GOP's I is fine, but the B frames
    # just before it need the dead P of the first GOP as well.
    assert run("IBBPBBPBBIBBP", {0}) == ".........dddd"


def test_a_b_loss_kills_only_itself():
    assert run("IBBPBBPBBI", {4}) == "dddd.ddddd"


def test_a_p_loss_kills_later_p_and_neighbouring_b():
    # P at 3 lost: B 1-2 (need P3), P3, B 4-5, P6 (chain), B 7-8 (need P6) die; I at 9 lives.
    assert run("IBBPBBPBBI", {3}) == "d........d"


def test_a_p_at_the_start_without_anchor_is_not_decodable():
    assert run("PBBI", set()) == "...d"


def test_stats_count_against_sent_frames():
    frames = pd.DataFrame({
        "flow": [0] * 4, "frame_id": [0, 1, 2, 3], "frame_type": [T[c] for c in "IBBP"],
        "t_ns": [0, 1, 2, 3], "sent": [1, 1, 0, 1], "packets": [3, 1, 0, 2],
        "packets_received": [3, 0, 0, 2],
    })
    s = stream_stats(annotate_frames(frames), [0], 0, 10)
    assert s["frames_sent"] == 3 and s["frames_received"] == 2 and s["frames_decodable"] == 2
    assert s["packet_loss_pct"] == 100 * (1 - 5 / 6)
    assert round(s["frame_loss_pct"], 6) == round(100 / 3, 6)
