#!/usr/bin/env python3
"""Where the CPU time of `aqmlab run SCENARIO --out DIR` goes, phase by phase, in one process.

Repeats the steps of the command (aqmlab.cli.run -> aqmlab.run.simulate_to_directory, the
path without pandas) with the process's CPU clock read between them: the imports in the order
the command meets them, loading and validating the scenario, the simulation, turning the
records into Arrow tables, the metrics, and the Parquet and CSV files. Run it with stdout not
a terminal, as a script would.
The whole process, interpreter start included, is measured from outside instead:

    /usr/bin/time -f "%U %S" aqmlab run rb-rio/tcp-droptail --out /tmp/a --force > /dev/null

    python3 benches/profile_run.py                       # rb-rio/tcp-droptail
    python3 benches/profile_run.py sqf/testbed-fifo      # any scenario name or file
    python3 benches/profile_run.py rb-rio/tcp-droptail --set flows.long.count=400   # with overrides
    python3 benches/profile_run.py --scaled 10           # bench_run_process.py's 600-flow case
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import time
from pathlib import Path

PHASES: list[tuple[str, float]] = []
_last = time.process_time()


def phase(name: str) -> None:
    """Closes the phase that ran since the previous call, under `name`."""
    global _last
    now = time.process_time()
    PHASES.append((name, now - _last))
    _last = now


def main(scenario: str, overrides: list[str]) -> None:
    import numpy  # noqa: F401

    phase("import numpy")
    import pyarrow.parquet  # noqa: F401

    phase("import pyarrow.parquet")
    import pydantic  # noqa: F401

    phase("import pydantic")
    import aqmlab.scenario  # noqa: F401

    phase("import aqmlab.scenario (building the pydantic models)")
    import aqmlab.cli  # noqa: F401

    phase("import aqmlab.cli (click, display, ...)")
    # The module, not the API function of the same name that `from aqmlab import run` gives.
    run = importlib.import_module("aqmlab.run")

    phase("import aqmlab.run (rest)")
    from aqmlab.scenario import load

    sc, raw = load(scenario, overrides, None)
    phase("load and validate the scenario")
    # aqmlab.run.simulate_to_directory's steps, one by one (keep in step with it).
    import json

    from aqmlab import _core, arrow_records
    from aqmlab.metrics import flow_period_values, period_rows

    sim = _core.Simulation(json.dumps(sc.to_sim_config()))
    phase("to_sim_config, building the model")
    sim.run()
    phase("the simulation (Simulation.run)")
    records, pcap = sim.take_records()
    columns = {name: arrow_records.numpy_columns(cols) for name, cols in records.items()}
    tables = {name: arrow_records.table(name, cols, [g.name for g in sc.flows]) for name, cols in columns.items()}
    phase("records out of Rust, building the Arrow tables")
    rows = []
    if "packets" in columns:
        packets = columns["packets"]
        rows = period_rows(packets, columns["flows"], sc.periods())
        flow_period_values(packets, columns["flow_samples"], columns["flows"], sc.periods())
    phase("metrics")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        with run.atomic_directory(out) as d:
            for name, table in tables.items():
                run._write_table(table, d / f"{name}.parquet")
            if rows:
                run._write_table(arrow_records.rows_table(rows), d / "periods.parquet")
                (d / "periods.csv").write_text(arrow_records.csv_text(rows))
        phase("write Parquet and CSV (flow_periods, JSON, TOML left out)")
    print(f"modules loaded: {len(sys.modules)}; pandas loaded: {'pandas' in sys.modules}; "
          f"rich loaded: {'rich' in sys.modules}")
    for name, s in PHASES:
        print(f"{name:58s} {s * 1e3:7.0f} ms")
    print(f"{'sum of the phases':58s} {sum(s for _, s in PHASES) * 1e3:7.0f} ms")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("scenario", nargs="?", default="rb-rio/tcp-droptail", help="a scenario name or file")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="an override, as `aqmlab run --set` takes it")
    ap.add_argument("--scaled", type=int, default=1, metavar="K",
                    help="rb-rio/tcp-droptail scaled by K as bench_run_process.py scales it (10: 600 flows)")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_run_process import scaled

    try:
        main(args.scenario, [*scaled(args.scaled), *args.overrides])
    except Exception as e:
        # Imported here, not above: the phases time the imports in the command's order.
        from aqmlab.scenario.errors import ScenarioError

        if isinstance(e, ScenarioError):
            raise SystemExit(f"profile_run.py: {e}") from None
        raise
