"""Data quirks of the results tables: "no ssthresh yet" is null (not a sentinel that swamps
means), and `group` is one type with one meaning in flows and flow_periods."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq

from aqmlab.emu.endpoints import TCP_INFINITE_SSTHRESH, _ssthresh_bytes
from aqmlab.records import SSTHRESH_UNSET
from conftest import aqmlab, small_scenario


def test_unset_ssthresh_is_null_in_the_files(tmp_path, write_scenario):
    out = tmp_path / "r"
    assert aqmlab("run", str(write_scenario(small_scenario())), "--out", str(out), "--no-progress").returncode == 0
    column = pq.read_table(out / "flow_samples.parquet").column("ssthresh_bytes")
    assert str(column.type) == "uint64"
    assert column.null_count > 0  # every flow starts in slow start: no threshold yet
    samples = pd.read_parquet(out / "flow_samples.parquet")
    assert samples["ssthresh_bytes"].max() < SSTHRESH_UNSET
    first = samples.sort_values("t_ns", kind="stable").drop_duplicates("flow")["ssthresh_bytes"]
    assert len(first) == 5 and first.isna().all()
    after_losses = samples.groupby("flow")["ssthresh_bytes"].last()
    assert after_losses.notna().all() and (after_losses < 10_000_000).all()
    # the mean is a mean of thresholds, not of 4.6e18 placeholders
    assert samples["ssthresh_bytes"].mean() < 10_000_000


def test_the_emulator_maps_linuxs_infinite_ssthresh_to_the_same_null():
    assert _ssthresh_bytes(TCP_INFINITE_SSTHRESH, 1448) == SSTHRESH_UNSET
    assert _ssthresh_bytes(10, 1448) == 14480


def test_group_is_the_same_column_in_flows_and_flow_periods(tmp_path, write_scenario):
    s = small_scenario()
    s["flows"].append({"name": "video", "count": 2, "app": {"kind": "cbr", "rate": "1Mbps"}})
    out = tmp_path / "r"
    r = aqmlab("run", str(write_scenario(s)), "--out", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    flows = pq.read_table(out / "flows.parquet")
    per = pq.read_table(out / "flow_periods.parquet")
    assert flows.schema.field("group").type == per.schema.field("group").type
    assert flows.schema.field("group_name").type == per.schema.field("group_name").type
    f = flows.to_pandas().set_index("flow")
    p = per.to_pandas()
    assert (p["group"].to_numpy() == f.loc[p["flow"], "group"].to_numpy()).all()
    assert (p["group_name"].to_numpy() == f.loc[p["flow"], "group_name"].to_numpy()).all()
    assert set(p["group_name"]) == {"bulk", "video"} and set(p["group"]) == {0, 1}
