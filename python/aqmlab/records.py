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

#: Names of the ``packets`` table's ``event`` and ``reason`` codes, from the record schema in Rust.
EVENT_NAMES: list[str] = list(_core.PACKET_EVENT_NAMES)
DROP_REASONS: list[str] = list(_core.DROP_REASON_NAMES)
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
        rows = len(buf) // 9
        values = np.frombuffer(buf, dtype="<u8", count=rows)
        measured = np.frombuffer(buf, dtype="u1", offset=8 * rows).astype(bool)
        return pd.arrays.IntegerArray(values.copy(), ~measured)
    return np.frombuffer(buf, dtype=np.dtype(f"<{dtype}"))


#: What the engines record as ssthresh before the first loss (slow start has no threshold yet):
#: the simulator starts at u64::MAX / 2 and clips its samples to u64::MAX / 4
#: (crates/aqmlab-sim/src/tcp/mod.rs, sim/apps/tcp.rs), and the emulator maps Linux's
#: TCP_INFINITE_SSTHRESH (include/net/tcp.h) to the same value (aqmlab.emu.endpoints).
SSTHRESH_UNSET = 2**64 // 4 - 1


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
    if codes.size and int(codes.max()) >= len(dtype.categories):
        raise ValueError(f"packets.{column}: code {int(codes.max())} has no name (names: {list(dtype.categories)})")
    return pd.Categorical.from_codes(codes.astype(np.int16), dtype=dtype)
