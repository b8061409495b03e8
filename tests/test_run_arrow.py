"""`aqmlab run`'s path without pandas (aqmlab.arrow_records, aqmlab.run.simulate_to_directory,
issue 22): the same files as the DataFrame path, byte for byte, and pandas never imported."""

from __future__ import annotations

import io
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aqmlab import _core, arrow_records, records
from aqmlab.api import load
from aqmlab.run import simulate, simulate_to_directory, write_results

#: Built-in scenarios whose record tables between them take every branch of the Arrow path:
#: TCP only; UDP media; a GCC call (floats with NaN: lost frames' delay); ECN marks under
#: DualPI2; ABR clients and calls together; Rb-RIO with MPEG video, whose `frames` table sends
#: the run down the pandas path (arrow_records.covers). Shortened where the periods allow.
SCENARIOS = [
    ("rb-rio/tcp-droptail", []),
    ("sqf/testbed-fifo", []),
    ("video/gcc-fifo", ["duration=40s", "metrics.periods=[[\"30s\",\"40s\"]]"]),
    ("l4s/dualpi2-video", []),
    ("video/mix/fq-codel", ["duration=40s", "metrics.periods=[[\"30s\",\"40s\"]]"]),
    ("rb-rio/mpeg-rb-rio", []),
    # no packet records: no periods, no period files
    ("sqf/testbed-fifo", ["records.packet_events=false"]),
    # the pcap beside the tables
    ("rb-rio/tcp-droptail", ["records.pcap=true", "duration=12s", "metrics.periods=[[\"10s\",\"12s\"]]"]),
]


@pytest.mark.parametrize(("name", "overrides"), SCENARIOS)
def test_every_file_is_the_same_bytes_as_the_dataframe_path(tmp_path, name, overrides):
    sc = load(name, set=overrides)
    by_frames = write_results(simulate(sc.model, progress=False), sc.raw, tmp_path / "frames")
    by_arrow = simulate_to_directory(sc.model, sc.raw, tmp_path / "arrow", progress=False).out_dir
    files = sorted(p.name for p in by_frames.iterdir())
    assert files == sorted(p.name for p in by_arrow.iterdir())
    assert any(f.endswith(".parquet") for f in files)
    for f in files:
        assert (by_frames / f).read_bytes() == (by_arrow / f).read_bytes(), f


def test_a_run_without_the_frames_table_takes_the_arrow_path():
    # Otherwise the byte test above would compare the pandas path with itself.
    assert arrow_records.covers({"packets": [], "flows": []})
    assert not arrow_records.covers({"packets": [], "frames": []})


def test_aqmlab_run_never_imports_pandas(tmp_path):
    code = ("import runpy, sys\n"
            f"sys.argv = ['aqmlab', 'run', 'rb-rio/tcp-droptail', '--out', {str(tmp_path / 'r')!r}]\n"
            "try:\n    runpy.run_module('aqmlab', run_name='__main__')\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "print('pandas' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "False"
    assert (tmp_path / "r" / "packets.parquet").exists()


def test_both_paths_name_codes_and_the_threshold_from_one_definition():
    # aqmlab.records takes them from arrow_records (which imports no pandas): one list each.
    assert records.EVENT_NAMES is arrow_records.EVENT_NAMES
    assert records.DROP_REASONS is arrow_records.DROP_REASONS
    assert records.SSTHRESH_UNSET == arrow_records.SSTHRESH_UNSET
    assert arrow_records.EVENT_NAMES == list(_core.PACKET_EVENT_NAMES)
    assert arrow_records.DROP_REASONS == list(_core.DROP_REASON_NAMES)


ROWS = [
    {"start_s": 0.0, "end_s": 10.0, "utilization_mbps": 24.366512345678, "drops": 12, "jain": float("nan"),
     "tiny": 1.23456789e-7, "huge": 9.87654321e15, "neg": -0.5},
    {"start_s": 10.0, "end_s": 20.0, "utilization_mbps": 25.0, "drops": 0, "jain": 0.999999951,
     "tiny": 0.0, "huge": 1e300, "neg": -1e-300},
]


def test_periods_csv_is_what_pandas_writes():
    assert arrow_records.csv_text(ROWS) == pd.DataFrame(ROWS).to_csv(index=False, float_format="%.6g")


def test_periods_csv_refuses_text_rather_than_quote_it_differently():
    with pytest.raises(TypeError, match="numbers only"):
        arrow_records.csv_text([{"a": "x,y"}])


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(None), buf, compression="zstd")
    return buf.getvalue()


def test_rows_table_is_what_from_pandas_makes():
    ours = arrow_records.rows_table(ROWS)
    theirs = pa.Table.from_pandas(pd.DataFrame(ROWS), preserve_index=False)
    assert ours.schema.remove_metadata() == theirs.schema.remove_metadata()
    assert ours.column("jain").null_count == 1  # NaN as null, from_pandas' rule
    assert _parquet(ours) == _parquet(theirs)


def test_masked_and_nan_cells_become_nulls_as_from_pandas_makes_them():
    values = np.array([1, 2, 3, 4], dtype="<u8")
    measured = np.array([True, False, True, True])
    masked = np.ma.masked_array(values, mask=~measured)
    got = arrow_records.array(masked)
    assert got.to_pylist() == [1, None, 3, 4]
    assert got.equals(pa.array(pd.arrays.IntegerArray(values, ~measured), from_pandas=True))
    floats = np.array([0.5, math.nan, 2.0])
    assert arrow_records.array(floats).to_pylist() == [0.5, None, 2.0]


def test_a_packet_event_code_without_a_name_is_refused():
    with pytest.raises(ValueError, match="packets.event: code 200 has no name"):
        arrow_records.table("packets", {"event": np.array([0, 200], dtype=np.uint8)})
