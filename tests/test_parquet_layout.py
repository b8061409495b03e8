"""The Parquet layout every results table is written with (aqmlab.run._write_table): chosen for
the time writing takes (benches/README.md, "2026-11-28: writing Parquet"), and read back unchanged."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from aqmlab.run import _write_table

ROWS = 50_000


def _packets_like() -> pa.Table:
    """A table shaped like `packets`: rising times and ids, a few flows, event codes, and a
    counter with far more distinct values than a 64 KiB dictionary page holds."""
    rng = np.random.default_rng(7)
    return pa.table({
        "t_ns": pa.array(np.cumsum(rng.integers(1, 5_000, ROWS)).astype(np.uint64)),
        "event": pa.array(rng.choice(["arrive", "enqueue", "dequeue", "drop"], ROWS)).dictionary_encode(),
        "flow": pa.array(rng.integers(0, 60, ROWS).astype(np.uint32)),
        "uid": pa.array(np.arange(ROWS, dtype=np.uint64) * 3),
        "sojourn_ns": pa.array(rng.integers(0, 10**9, ROWS).astype(np.uint64)),
        "avg": pa.array(rng.random(ROWS)),
    })


def _columns(path) -> dict[str, pq.ColumnChunkMetaData]:
    group = pq.ParquetFile(path).metadata.row_group(0)
    return {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}


def test_a_table_reads_back_unchanged(tmp_path):
    table = _packets_like()
    _write_table(table, tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


def test_rising_integers_are_delta_encoded_and_only_time_and_flow_keep_statistics(tmp_path):
    _write_table(_packets_like(), tmp_path / "t.parquet")
    cols = _columns(tmp_path / "t.parquet")
    for name in ("t_ns", "uid"):
        assert "DELTA_BINARY_PACKED" in cols[name].encodings, (name, cols[name].encodings)
        assert not cols[name].has_dictionary_page, name
    assert cols["flow"].has_dictionary_page, "60 flow ids keep their dictionary"
    assert {name for name, c in cols.items() if c.is_stats_set} == {"t_ns", "flow"}


def _dictionary_page_bytes(column: pq.ColumnChunkMetaData) -> int:
    """Bytes of a column chunk's dictionary page (it comes first, before the data pages)."""
    return column.data_page_offset - column.dictionary_page_offset


def test_a_column_with_too_many_values_falls_back_from_its_dictionary(tmp_path):
    """50,000 distinct 64-bit sojourn times overflow the 64 KiB dictionary page at 8,192 values,
    and the rest of the column is plain-encoded; pyarrow's default 1 MiB page takes them all."""
    table = _packets_like()
    _write_table(table, tmp_path / "t.parquet")
    pq.write_table(table, tmp_path / "default.parquet", compression="zstd")
    ours = _dictionary_page_bytes(_columns(tmp_path / "t.parquet")["sojourn_ns"])
    default = _dictionary_page_bytes(_columns(tmp_path / "default.parquet")["sojourn_ns"])
    assert ours <= 64 * 1024 < default, (ours, default)


def test_a_time_column_that_is_not_an_integer_is_written_as_it_is(tmp_path):
    table = pa.table({"t_ns": pa.array([0.5, 1.5, 2.5]), "uid": pa.array(["a", "b", "c"])})
    _write_table(table, tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet").equals(table)
    assert "DELTA_BINARY_PACKED" not in _columns(tmp_path / "t.parquet")["t_ns"].encodings
