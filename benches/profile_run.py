#!/usr/bin/env python3
"""Where the CPU time of `aqmlab run SCENARIO --out DIR` goes, phase by phase, in one process.

Repeats the steps of the command (aqmlab.cli.run -> aqmlab.run.simulate and write_results) with
the process's CPU clock read between them: the imports in the order the command meets them,
loading and validating the scenario, the simulation, turning the records into tables, the
metrics, and the Parquet and CSV files. Run it with stdout not a terminal, as a script would.
The whole process, interpreter start included, is measured from outside instead:

    /usr/bin/time -f "%U %S" aqmlab run rb-rio/tcp-droptail --out /tmp/a --force > /dev/null

    python3 benches/profile_run.py                       # rb-rio/tcp-droptail
    python3 benches/profile_run.py sqf/testbed-fifo      # any scenario name or file
"""

from __future__ import annotations

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


def main(scenario: str) -> None:
    import numpy  # noqa: F401

    phase("import numpy")
    import pandas  # noqa: F401

    phase("import pandas")
    import pyarrow.parquet  # noqa: F401

    phase("import pyarrow.parquet")
    import pydantic  # noqa: F401

    phase("import pydantic")
    import aqmlab.scenario  # noqa: F401

    phase("import aqmlab.scenario (building the pydantic models)")
    import aqmlab.cli  # noqa: F401

    phase("import aqmlab.cli (click, display, ...)")
    from aqmlab import run

    phase("import aqmlab.run (rest)")
    from aqmlab.scenario import load

    sc, raw = load(scenario, [], None)
    phase("load and validate the scenario")
    # aqmlab.run.simulate's steps, one by one (keep in step with it).
    import json

    from aqmlab import _core
    from aqmlab.metrics import flow_period_metrics, period_metrics
    from aqmlab.records import name_packet_events, null_unset_ssthresh, to_frame

    sim = _core.Simulation(json.dumps(sc.to_sim_config()))
    phase("to_sim_config, building the model")
    sim.run()
    phase("the simulation (Simulation.run)")
    raw_tables, _pcap = sim.take_records()
    tables = {name: to_frame(cols) for name, cols in raw_tables.items()}
    tables["flows"]["group_name"] = [sc.flows[g].name for g in tables["flows"]["group"]]
    if "flow_samples" in tables:
        tables["flow_samples"] = null_unset_ssthresh(tables["flow_samples"])
    if "packets" in tables:
        name_packet_events(tables["packets"])
    phase("records out of Rust, building the tables")
    if "packets" in tables:
        period_metrics(tables["packets"], tables["flows"], sc.periods())
        flow_period_metrics(tables["packets"], tables["flow_samples"], tables["flows"], sc.periods())
    phase("metrics")
    # The files themselves, written by the command's own code (the run is repeated for that:
    # its CPU time is not counted in any phase).
    result = run.simulate(sc, progress=False)
    global _last
    _last = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        run.write_results(result, raw, Path(tmp) / "out")
        phase("write Parquet, CSV, JSON, TOML")
    print(f"modules loaded: {len(sys.modules)}; rich loaded: {'rich' in sys.modules}")
    for name, s in PHASES:
        print(f"{name:55s} {s * 1e3:7.0f} ms")
    print(f"{'sum of the phases':55s} {sum(s for _, s in PHASES) * 1e3:7.0f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rb-rio/tcp-droptail")
