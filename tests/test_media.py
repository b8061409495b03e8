"""Media metrics on hand-made logs, and media sources through the simulator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from aqmlab.media import flow_quality, ipdv, rfc3550_jitter
from aqmlab.run import simulate
from aqmlab.scenario import validate
from conftest import small_scenario


def test_rfc3550_jitter_of_a_constant_step():
    # Transit alternating 0 and 16 ms: |D| = 16 every packet, J converges to 16 (gain 1/16).
    j = rfc3550_jitter(np.array([0.0, 16.0] * 200))
    assert j[0] == pytest.approx(1.0)
    assert j[-1] == pytest.approx(16.0, rel=1e-3)


def test_ipdv_uses_consecutive_sequence_numbers_only():
    seq = np.array([0, 1, 3, 4])
    owd = np.array([10.0, 12.0, 30.0, 29.0])
    assert ipdv(seq, owd).tolist() == [2.0, -1.0]  # 1-0 and 4-3; the 1->3 gap is skipped


def test_flow_quality_loss_and_delay():
    media = pd.DataFrame({"flow": [0, 0, 0], "seq": [0, 1, 3], "size": [100] * 3,
                          "sent_ns": [0, 10_000_000, 30_000_000], "recv_ns": [5_000_000, 15_000_000, 36_000_000]})
    q = flow_quality(media).iloc[0]
    assert q["loss_pct"] == pytest.approx(25.0)
    assert q["delay_p50_ms"] == pytest.approx(5.0)
    assert q["ipdv_mean_ms"] == pytest.approx(0.0)


def test_video_and_audio_alone_are_lossless_and_at_rate():
    s = small_scenario(duration="10s")
    s["topology"]["bottleneck"]["qdisc"] = {"kind": "droptail", "limit": "100p"}
    s["flows"] = [
        {"name": "video", "count": 1, "app": {"kind": "video", "rate": "5Mbps"}},
        {"name": "audio", "count": 1, "app": {"kind": "audio"}},
    ]
    res = simulate(validate(s), progress=False)
    q = flow_quality(res.tables["media"])
    assert (q["loss_pct"] == 0).all()
    video_bytes = res.tables["media"].query("flow == 0")["size"].sum()
    assert 4.7e6 < video_bytes * 8 / 10 < 5.6e6  # payload 5 Mbit/s plus 40 B headers per packet
    assert len(res.tables["media"].query("flow == 1")) == 500  # one audio packet per 20 ms
