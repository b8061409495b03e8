"""The router process, run inside the router namespace by the orchestrator:

    ip netns exec NS python3 -m aqmlab.emu.router CONFIG.json OUT_DIR

It opens the AF_PACKET sockets, prints ``ready``, and forwards until told ``stop`` on stdin
(or SIGTERM/SIGINT). ``epoch N`` on stdin sets the records' t = 0 (CLOCK_MONOTONIC ns). On the
way out it writes ``OUT_DIR/router.npz`` (the record tables, column per array, as
``<table>/<column>``) and ``OUT_DIR/router.json`` (counters). Errors go to stderr in one line
and the exit status is 1.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from aqmlab import _core


def _control(router: _core.Router) -> None:
    """Reads commands from stdin until EOF (the orchestrator gone means stop)."""
    for line in sys.stdin:
        word, _, arg = line.strip().partition(" ")
        if word == "epoch":
            router.set_epoch(int(arg))
        elif word == "stop":
            break
    router.cancel()


def write_records(router: _core.Router, out: Path) -> None:
    # Any: numpy's stub for savez types **kwds such that a str -> ndarray dict clashes with allow_pickle
    arrays: dict[str, Any] = {}
    for table, cols in router.take_records().items():
        for name, dtype, buf in cols:
            arrays[f"{table}/{name}"] = np.frombuffer(buf, dtype=np.dtype(f"<{dtype}"))
    np.savez(out / "router.npz", **arrays)
    (out / "router.json").write_text(router.summary_json())


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m aqmlab.emu.router CONFIG.json OUT_DIR", file=sys.stderr)
        return 2
    config, out = Path(argv[0]), Path(argv[1])
    try:
        router = _core.Router(config.read_text())
    except (ValueError, RuntimeError, OSError) as e:
        print(f"router: {e}", file=sys.stderr)
        return 1
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: router.cancel())
    threading.Thread(target=_control, args=(router,), daemon=True).start()
    print("ready", flush=True)
    worker_error: list[BaseException] = []

    def work() -> None:
        try:
            router.run()
        except BaseException as e:  # noqa: BLE001 - reported below
            worker_error.append(e)

    worker = threading.Thread(target=work, name="aqmlab-router")
    worker.start()
    while worker.is_alive():
        worker.join(0.2)  # wakes the main thread so signal handlers run
    write_records(router, out)
    if worker_error:
        print(f"router: {worker_error[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
