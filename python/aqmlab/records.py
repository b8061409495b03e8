"""Tables from the engines' records: the typed little-endian columns the Rust side builds
(aqmlab-model's ``record``) as pandas DataFrames, with the ``packets`` table's codes named.

The ``event`` and ``reason`` columns of ``packets`` arrive as one-byte codes. They become pandas
categoricals whose categories are the names in code order (``_core.PACKET_EVENT_NAMES``,
``_core.DROP_REASON_NAMES``), so a DataFrame shows ``"dequeue"`` and ``"queue_full"`` and a
Parquet file holds them as Arrow dictionary columns that any reader decodes to names. The codes
stay reachable as ``.cat.codes``; ``reason`` is missing (NaN) on events that are not drops.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from aqmlab import _core
from aqmlab.arrow_records import DROP_REASONS, EVENT_NAMES, SSTHRESH_UNSET, checked_codes, unmeasured_parts

__all__ = ["DROP_REASONS", "EVENT_NAMES", "SSTHRESH_UNSET", "name_packet_events", "null_unset_ssthresh",
           "to_columns", "to_frame"]

#: Their categorical types, made once: building the categories' index took most of the time of
#: naming the codes of a short run (issue 22).
_DTYPES = {"event": pd.CategoricalDtype(EVENT_NAMES), "reason": pd.CategoricalDtype(DROP_REASONS)}


def to_frame(columns: list[tuple[str, str, bytes]]) -> pd.DataFrame:
    """One table from the binding's (name, numpy dtype code, little-endian bytes) columns.

    The code ``u8?`` marks a column with cells the engine did not measure: its bytes are the
    values, then one byte per row (1 measured, 0 missing); it becomes a nullable ``UInt64``."""
    return pd.DataFrame(to_columns(columns))


def to_columns(columns: list[tuple[str, str, bytes]]) -> dict[str, np.ndarray | pd.api.extensions.ExtensionArray]:
    """The same table as `to_frame`'s, as a dict of its columns: what a sweep worker reads the
    metrics from without building DataFrames it never stores (issue 22)."""
    return {name: _column(dtype, buf) for name, dtype, buf in columns}


def _column(dtype: str, buf: bytes) -> np.ndarray | pd.api.extensions.ExtensionArray:
    if dtype == "u8?":
        values, measured = unmeasured_parts(buf)
        return pd.arrays.IntegerArray(values.copy(), ~measured)
    return np.frombuffer(buf, dtype=np.dtype(f"<{dtype}"))


def null_unset_ssthresh(samples: pd.DataFrame) -> pd.DataFrame:
    """``flow_samples`` with ``ssthresh_bytes``'s "no threshold yet" as missing (null in
    Parquet), not as a huge number that would swamp a mean; a new frame, the input is left as
    it was. The column becomes pandas' nullable UInt64, so the values that are set stay exact
    integers."""
    if "ssthresh_bytes" not in samples:
        return samples
    col = samples["ssthresh_bytes"].astype("UInt64")
    return samples.assign(ssthresh_bytes=col.mask(col >= SSTHRESH_UNSET))


def name_packet_events(packets: Any) -> Any:
    """The ``packets`` table (a DataFrame, or `to_columns`' dict) with ``event`` and ``reason``
    as named categoricals (in place)."""
    packets["event"] = _categorical(np.asarray(packets["event"]), "event")
    reason = np.asarray(packets["reason"]).astype(np.int16)
    reason[reason == _core.NO_REASON] = -1  # not a drop: missing, not a reason
    packets["reason"] = _categorical(reason, "reason")
    return packets


def _categorical(codes: np.ndarray, column: str) -> pd.Categorical:
    dtype = _DTYPES[column]
    checked_codes(codes, list(dtype.categories), column)
    return pd.Categorical.from_codes(codes.astype(np.int16), dtype=dtype)
