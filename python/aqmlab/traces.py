"""Delivery traces in mahimahi's format (one line per opportunity to send 1500 bytes, in whole
milliseconds, looping): reading a file a scenario names, for the engines' configs.

The parsing itself is aqmlab-core's (`link/trace.rs`, through `_core.parse_delivery_trace`), so
a file is accepted or refused by the same rules whichever engine runs it."""

from __future__ import annotations

from pathlib import Path

from aqmlab import _core


class TraceFileError(ValueError):
    """A trace a scenario names cannot be used: `field` is the scenario field that names it,
    `message` why (naming the file, and the line when the content is at fault)."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


def read_delivery_trace(path: str, field: str) -> list[int]:
    """The opportunity times (ms) of the trace file at `path`, named by scenario field `field`."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise TraceFileError(field, f"no such trace file: {path}") from None
    except UnicodeDecodeError:
        raise TraceFileError(field, f"{path}: not a text file (a mahimahi trace is lines of digits)") from None
    except OSError as e:
        raise TraceFileError(field, f"{path}: {e.strerror}") from None
    try:
        return _core.parse_delivery_trace(text, path)
    except ValueError as e:
        raise TraceFileError(field, str(e)) from None
