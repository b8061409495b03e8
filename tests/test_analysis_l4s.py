"""aqmlab.analysis.l4s: DualPI2's two queues told apart by the groups' ECN codepoints."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from aqmlab.analysis import l4s
from aqmlab.run import simulate, write_results
from aqmlab.scenario import load


@pytest.fixture(scope="module")
def l4s_run(tmp_path_factory) -> Path:
    sc, raw = load("l4s/dctcp-cubic-video", ["duration=4s", 'metrics.periods=[["2s", "4s"]]'])
    out = tmp_path_factory.mktemp("l4s") / "run"
    write_results(simulate(sc, progress=False), raw, out)
    return out


def test_the_ect1_groups_are_the_l_queue(l4s_run):
    assert l4s.l4s_groups(l4s_run) == {"video", "dctcp"}


def test_the_l_queue_delays_stay_below_the_classic_ones(l4s_run):
    d = l4s.queue_delays(l4s_run, start_s=2.0)
    assert set(d["queue"]) == {"L", "classic"}
    assert set(d.loc[d["queue"] == "classic", "group"]) == {"cubic"}
    q = d.groupby("queue")["sojourn_ms"].quantile(0.99)
    # RFC 9332's aim: the L queue's delay in the order of a millisecond, the classic queue's
    # around its 15 ms PI2 target.
    assert q["L"] < 2.0 and q["classic"] > 5 * q["L"], q.to_dict()


def test_throughput_bins_add_up_to_what_left_the_bottleneck(l4s_run):
    t = l4s.throughput(l4s_run, bin_s=0.5)
    packets = pd.read_parquet(l4s_run / "packets.parquet", columns=["event", "size"])
    sent_bits = packets.loc[packets["event"] == "dequeue", "size"].sum() * 8
    assert (t["mbps"] * 0.5 * 1e6).sum() == pytest.approx(sent_bits)
