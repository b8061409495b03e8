"""The engines' records as Arrow tables and their metrics, without pandas: what ``aqmlab run``
writes for a simulated run (issue 22: importing pandas was a quarter of the command's CPU, more
than the simulation; benches/README.md, "The whole process").

Each table gets the Arrow types that ``pa.Table.from_pandas`` gives the DataFrames of
:mod:`aqmlab.records` (and `aqmlab.run.simulate`'s period tables), so the Parquet files are the
same bytes either way (tests/test_run_arrow.py compares every file of both paths):

* numeric columns as the binding sends them, a float NaN as null (``from_pandas``' rule);
* a ``u8?`` column (cells the engine did not measure) as uint64 with those cells null;
* ``packets``' ``event`` and ``reason`` as dictionary<large_string, int8> over every name, in
  code order (a pandas categorical of fewer than 128 categories keeps int8 codes, and its string
  categories convert to large strings), ``reason`` null on events that are not drops;
* ``flow_samples``' "no threshold yet" ssthresh as null (`SSTHRESH_UNSET`);
* ``flows`` with its ``group_name`` column (large strings, as pandas' object column converts).

The ``frames`` table (decodability across frames) is built in pandas; a run that records it
takes `aqmlab.run.simulate`'s path instead (`covers`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from aqmlab import _core

#: Names of the ``packets`` table's ``event`` and ``reason`` codes, from the record schema in
#: Rust (here, not in `aqmlab.records`, so that this module imports no pandas; that one takes
#: them from here).
EVENT_NAMES: list[str] = list(_core.PACKET_EVENT_NAMES)
DROP_REASONS: list[str] = list(_core.DROP_REASON_NAMES)
#: What the engines record as ssthresh before the first loss (slow start has no threshold yet):
#: the simulator starts at u64::MAX / 2 and clips its samples to u64::MAX / 4
#: (crates/aqmlab-sim/src/tcp/mod.rs, sim/apps/tcp.rs), and the emulator maps Linux's
#: TCP_INFINITE_SSTHRESH (include/net/tcp.h) to the same value (aqmlab.emu.endpoints).
SSTHRESH_UNSET = 2**64 // 4 - 1

#: Record tables that only the pandas path builds.
PANDAS_ONLY = ("frames",)

RawColumns = list[tuple[str, str, bytes]]


def covers(raw: Mapping[str, RawColumns]) -> bool:
    """Whether every table of these records can be built here."""
    return not any(name in raw for name in PANDAS_ONLY)


def numpy_columns(columns: RawColumns) -> dict[str, np.ndarray]:
    """The binding's (name, numpy dtype code, little-endian bytes) columns as numpy arrays; a
    ``u8?`` column as a masked array (mask: not measured)."""
    return {name: _numpy(dtype, buf) for name, dtype, buf in columns}


def _numpy(dtype: str, buf: bytes) -> np.ndarray:
    if dtype == "u8?":
        values, measured = unmeasured_parts(buf)
        return np.ma.masked_array(values, mask=~measured)
    return np.frombuffer(buf, dtype=np.dtype(f"<{dtype}"))


def unmeasured_parts(buf: bytes) -> tuple[np.ndarray, np.ndarray]:
    """A ``u8?`` column's bytes (the values, then one byte per row: 1 measured, 0 missing) as
    (values, measured mask)."""
    rows = len(buf) // 9
    values = np.frombuffer(buf, dtype="<u8", count=rows)
    return values, np.frombuffer(buf, dtype="u1", offset=8 * rows).astype(bool)


def checked_codes(codes: np.ndarray, names: list[str], column: str) -> np.ndarray:
    """`codes` of ``packets.<column>``, refused if one has no name in `names`."""
    if codes.size and int(codes.max()) >= len(names):
        raise ValueError(f"packets.{column}: code {int(codes.max())} has no name (names: {names})")
    return codes


def table(name: str, columns: Mapping[str, np.ndarray], group_names: Sequence[str] | None = None) -> pa.Table:
    """Record table `name` (numpy columns, `numpy_columns`) as Arrow, typed as above;
    `group_names` gives ``flows`` its ``group_name`` column (each row's group's name)."""
    arrays: dict[str, pa.Array] = {}
    for column, values in columns.items():
        if name == "packets" and column == "event":
            arrays[column] = _dictionary(checked_codes(values, EVENT_NAMES, "event").astype(np.int8), EVENT_NAMES)
        elif name == "packets" and column == "reason":
            codes = values.astype(np.int16)
            codes[codes == _core.NO_REASON] = -1  # not a drop: missing, not a reason
            arrays[column] = _dictionary(checked_codes(codes, DROP_REASONS, "reason").astype(np.int8), DROP_REASONS)
        elif name == "flow_samples" and column == "ssthresh_bytes":
            unset = np.ma.getmaskarray(values) | (np.ma.getdata(values) >= SSTHRESH_UNSET)
            arrays[column] = _from_buffers(np.ma.getdata(values), ~unset)
        else:
            arrays[column] = array(values)
    if name == "flows" and group_names is not None:
        arrays["group_name"] = large_strings([group_names[g] for g in columns["group"].tolist()])
    return pa.table(arrays)


def array(values: np.ndarray) -> pa.Array:
    """A numpy column as ``from_pandas`` converts it: masked cells and float NaN as null.

    Built from the column's buffers: every pyarrow call that converts Python or numpy objects
    (``pa.array``) first looks for pandas, importing it, which is what this module avoids."""
    if isinstance(values, np.ma.MaskedArray):
        return _from_buffers(np.ma.getdata(values), ~np.ma.getmaskarray(values))
    if values.dtype.kind == "f" and np.isnan(values).any():
        return _from_buffers(values, ~np.isnan(values))
    return _from_buffers(values, None)


def _from_buffers(values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    if values.dtype.kind not in "uif":
        raise TypeError(f"a record column of numbers was expected, got {values.dtype}")
    data = np.ascontiguousarray(values)
    bitmap = None if valid is None or valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.from_numpy_dtype(data.dtype), len(data), [bitmap, pa.py_buffer(data)])


def large_strings(texts: Sequence[str]) -> pa.Array:
    """Text cells as a large_string array (what pandas' object columns of str convert to)."""
    encoded = [t.encode() for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _dictionary(codes: np.ndarray, names: list[str]) -> pa.DictionaryArray:
    """Codes over `names` (-1: null), as a pandas categorical of these categories converts."""
    indices = _from_buffers(codes, codes >= 0)
    return pa.DictionaryArray.from_arrays(indices, large_strings(names))


def rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """`aqmlab.metrics.period_rows`' dicts as the table ``pd.DataFrame(rows)`` converts to: a
    column per key in the first row's order, Python ints as int64, floats as double (NaN null)."""
    columns = list(rows[0]) if rows else []
    return pa.table({c: array(np.asarray([r[c] for r in rows])) for c in columns})


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows as ``pd.DataFrame(rows).to_csv(index=False, float_format="%.6g")`` writes them
    (periods.csv): a header line, floats to 6 significant digits, NaN as an empty cell,
    integers as they are.
    Only numbers are written (the period metrics hold nothing else); anything else is refused
    rather than quoted differently from pandas."""
    columns = list(rows[0]) if rows else []
    lines = [",".join(columns)]
    for r in rows:
        lines.append(",".join(_csv_cell(r[c]) for c in columns))
    return "\n".join(lines) + "\n"


def _csv_cell(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"periods.csv holds numbers only, got {v!r}")
    if isinstance(v, (float, np.floating)):
        return "" if math.isnan(v) else f"{v:.6g}"
    return str(int(v))
