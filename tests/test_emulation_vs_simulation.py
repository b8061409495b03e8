"""benches/emulation_vs_simulation.py: each engine's figures summarized over its runs as the
median and range (issue 27: an emulated figure from one run did not come back)."""

from __future__ import annotations

import pandas as pd

from conftest import bench_module

bench = bench_module("emulation_vs_simulation")


def test_each_engine_and_discipline_gets_its_median_and_range_in_the_order_met():
    rows = pd.DataFrame({"engine": ["sim", "emu", "sim", "emu", "sim", "emu", "sim", "emu"],
                         "qdisc": ["sqf", "sqf", "droptail", "droptail", "sqf", "sqf", "droptail", "droptail"],
                         "video loss %": [0.0, 0.43, 1.86, 1.17, 0.0, 47.8, 1.9, 1.2],
                         "drop %": [2.28, 11.82, 2.91, 2.56, 2.28, 22.3, 2.91, 2.6]})
    out = bench.summarize(pd.concat([rows, rows.iloc[[1]]], ignore_index=True))  # a third emu sqf run
    assert list(zip(out["engine"], out["qdisc"], strict=True)) == [("sim", "sqf"), ("emu", "sqf"), ("sim", "droptail"),
                                                      ("emu", "droptail")]
    emu_sqf = out.iloc[1]
    assert emu_sqf["video loss %"] == "0.43 (0.43-47.8)" and emu_sqf["drop %"] == "11.82 (11.82-22.3)"
    # Runs that agree print their one value.
    assert out.iloc[0]["video loss %"] == "0" and out.iloc[0]["drop %"] == "2.28"
