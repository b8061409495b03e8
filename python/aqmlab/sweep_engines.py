"""Where the runs of a sweep execute: in this process, a local process pool, or a Dask cluster.

Every engine takes the pending tasks and calls `on_outcome(task, outcome)` in this process as
each run finishes, in whatever order they finish; the caller stores the outcome at once. A
worker receives a task's resolved scenario (a plain dict) and returns its small metrics table,
so workers need aqmlab installed but no shared file system.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from aqmlab.sweep import Task, execute

OnOutcome = Callable[[Task, dict[str, Any]], None]

#: A local pool whose worker dies (killed, out of memory, a crash of the interpreter) is
#: restarted for the runs not yet finished this many times before they are recorded as failed.
POOL_RESTARTS = 2


def failure(e: BaseException) -> dict[str, Any]:
    """The outcome of a run whose worker could not report one itself."""
    return {"error": f"{type(e).__name__}: {e}".splitlines()[0], "detail": repr(e), "wall_s": 0.0}


def run_serial(tasks: list[Task], on_outcome: OnOutcome) -> None:
    """One run after the other in this process (--workers 1)."""
    for task in tasks:
        on_outcome(task, execute(task.raw))


def run_pool(tasks: list[Task], workers: int, on_outcome: OnOutcome,
             notice: Callable[[str], None] = lambda _: None) -> None:
    """A local process pool. Workers ignore Ctrl-C (this process handles it) and exit when this
    process dies, so an interrupted sweep leaves no process behind."""
    pending = list(tasks)
    for attempt in range(POOL_RESTARTS + 1):
        if not pending:
            return
        if attempt:
            notice(f"a worker process died; a new pool runs the {len(pending)} unfinished runs")
        pending = _pool_pass(pending, workers, on_outcome)
    for task in pending:
        on_outcome(task, failure(RuntimeError(f"worker processes died (killed or crashed) {POOL_RESTARTS + 1} "
                                              "times while this run was pending")))


def _pool_pass(tasks: list[Task], workers: int, on_outcome: OnOutcome) -> list[Task]:
    """Runs the tasks until all finish or the pool breaks; returns the ones left unfinished."""
    pool = ProcessPoolExecutor(max_workers=min(workers, len(tasks)), initializer=_worker_init,
                               initargs=(os.getpid(),))
    futures: dict[Future, Task] = {pool.submit(execute, t.raw): t for t in tasks}
    try:
        while futures:
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            for fut in done:
                task = futures.pop(fut)
                try:
                    outcome = fut.result()
                except BrokenProcessPool:
                    return [task, *futures.values()]
                except Exception as e:  # noqa: BLE001 - e.g. a result that cannot be pickled back
                    outcome = failure(e)
                on_outcome(task, outcome)
        return []
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _worker_init(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True, name="aqmlab-parent-watch").start()


def _exit_with_parent(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def run_dask(tasks: list[Task], address: str, workers: int | None, on_outcome: OnOutcome) -> None:
    """A Dask cluster: the scheduler at `address`, or a LocalCluster for "local" (`workers`
    single-threaded worker processes, default one per core). A worker that dies is replaced
    by Dask, which reschedules its tasks; a task that keeps killing workers comes back as
    KilledWorker and is recorded as failed."""
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address, timeout="30s")
    try:
        futures = {client.submit(execute, t.raw, key=f"aqmlab-run-{t.run_id}", pure=False): t for t in tasks}
        for fut in as_completed(futures):
            task = futures[fut]
            try:
                outcome = fut.result()
            except Exception as e:  # noqa: BLE001 - KilledWorker, lost connection: recorded, the rest go on
                outcome = failure(e)
            on_outcome(task, outcome)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
