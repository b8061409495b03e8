"""One ABR scenario in both engines, side by side: per flow group (one ABR algorithm each),
the `abr_sessions` means of the simulator (over `--seeds`) and of the emulator (one run per
`--emu-runs`, needs root), as the markdown table in docs/video.md.

    python benches/abr_engines.py scenarios/video/fifo.toml --set duration=60s \\
        --set flows.throughput.count=1 ... --seeds 1 2 3 --emu-runs 2

Every row is the mean over the group's clients of one run (the simulator's seeds each one
run), so with one client per group a row is one session.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from aqmlab.api import load
from aqmlab.run import simulate

COLUMNS = {"bitrate_bps": ("bitrate Mbit/s", 1e-6), "ssim_db": ("SSIM dB", 1.0), "stalls": ("stalls", 1.0),
           "stall_ratio": ("stall %", 100.0), "startup_ns": ("startup s", 1e-9), "switches": ("switches", 1.0),
           "segments": ("segments", 1.0), "first_request_ns": ("1st request s", 1e-9)}


def per_group(res) -> pd.DataFrame:
    """Each group's mean `abr_sessions` row, with `first_request_ns`: from the flow's start to
    its first request (the emulator's client connects first: a TCP handshake and a thread's
    wake-up; the simulator's connection exists from the start)."""
    flows = res.tables["flows"][["flow", "group_name", "start_ns"]]
    first = res.tables["abr_segments"].groupby("flow")["request_ns"].min().rename("first_request_ns")
    s = res.tables["abr_sessions"].merge(flows, on="flow").merge(first, on="flow", how="left")
    s["first_request_ns"] = s["first_request_ns"] - s["start_ns"]
    return s.groupby("group_name", sort=False)[list(COLUMNS)].mean()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--set", action="append", default=[], dest="overrides")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--emu-runs", type=int, default=1)
    a = ap.parse_args()
    rows = []
    for seed in a.seeds:
        sc = load(a.scenario, set=a.overrides, seed=seed).model
        rows.append(per_group(simulate(sc, progress=False)).assign(engine="sim", run=f"seed {seed}"))
    if a.emu_runs:
        from aqmlab.emu.run import emulate  # noqa: PLC0415 - root only

        sc = load(a.scenario, set=a.overrides).model
        for k in range(a.emu_runs):
            started = time.time()
            res = emulate(sc)
            lateness = res.summary["emu"]["router"]
            print(f"emulated run {k + 1}: {time.time() - started:.0f} s wall; router: {lateness}")
            rows.append(per_group(res).assign(engine="emu", run=f"run {k + 1}"))
    t = pd.concat(rows).reset_index().rename(columns={"group_name": "group"})
    for c, (_, scale) in COLUMNS.items():
        t[c] = t[c] * scale
    t = t.rename(columns={c: name for c, (name, _) in COLUMNS.items()})
    t = t.sort_values(["group", "engine", "run"], kind="stable")
    print(t.to_markdown(index=False, floatfmt=".2f"))


if __name__ == "__main__":
    main()
