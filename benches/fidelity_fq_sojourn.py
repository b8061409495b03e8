"""What the fidelity suite's FQ-CoDel delay medians are made of, in both engines (issue 27).

    python3 benches/fidelity_fq_sojourn.py                          # simulator, 3 seeds
    sudo python3 benches/fidelity_fq_sojourn.py --kernel --runs 3   # and the kernel (root)
    python3 benches/fidelity_fq_sojourn.py --set 'flows.*.app.tcp.delayed_ack=false'

Under FQ-CoDel the queueing delay of a packet depends mostly on whether its flow's own queue was
empty when it arrived: such a packet's flow goes on the new-flows list (RFC 8290 section 4.2)
and leaves within about a packet time, while one that joins a backlog waits a round of the
other flows' queues. The delay distribution is then bimodal, and its median falls between the
two modes, where a few points of the mix move it by milliseconds. For each run of a fidelity
case (benches/fidelity.py's own scenario, measured over the same period) this prints:

* the queueing delay's mean and median (ms);
* `empty`: the share of the bottleneck's dequeued packets that had arrived to an empty queue of
  their own flow (counted from the packet events: each flow's enqueues less its dequeues and
  drops, from t = 0), and the median delay of those packets and of the others;
* `deq_before_arrival`: the share of dequeues the emulator's router decided after an arrival
  that came later (`dequeues_before_an_arrival`); 0 in the simulator, and in the emulator since
  its loop serves before it reads (2026-11-28).
* `acks/seg`: ACKs per data packet the senders sent over the run. The simulator's: packets
  created (summary.json's `packets_created`) less the data packets sent, over the TCP ones; the
  kernel's: the frames the emulator's router read from the receivers' side over those it read
  from the senders' side (handshakes and the base-RTT probe's packets included on both sides).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity  # noqa: E402  (the suite's cases and scenarios)


def sojourn_mix(packets: pd.DataFrame, start_ns: int, end_ns: int) -> dict[str, float]:
    """The delay measures above, from a `packets` table (both engines write the same)."""
    ev = packets["event"].astype(str).to_numpy()
    step = np.select([ev == "enqueue", ev == "dequeue", ev == "drop"], [1, -1, -1], 0)
    # A drop of a packet never enqueued (refused on arrival) must not count: FQ-CoDel drops at
    # the head or evicts from the fattest queue, both enqueued packets; a refusal on arrival
    # would make a flow's count go below zero, which the check below refuses.
    backlog_after = pd.Series(step).groupby(packets["flow"].to_numpy()).cumsum().to_numpy()
    if backlog_after.min() < 0:
        raise ValueError("a flow's backlog went below zero: a drop of a packet never enqueued")
    frame = pd.DataFrame({"t_ns": packets["t_ns"].to_numpy(), "event": ev, "uid": packets["uid"].to_numpy(),
                          "sojourn_ns": packets["sojourn_ns"].to_numpy(), "backlog_before": backlog_after - step})
    inside = frame[(frame["t_ns"] >= start_ns) & (frame["t_ns"] < end_ns)]
    enq = inside[inside["event"] == "enqueue"][["uid", "backlog_before"]]
    deq = inside[inside["event"] == "dequeue"][["uid", "sojourn_ns"]]
    both = deq.merge(enq, on="uid", how="inner")
    delay_ms = both["sojourn_ns"].to_numpy() / 1e6
    empty = both["backlog_before"].to_numpy() == 0
    return {"mean_ms": float(delay_ms.mean()), "p50_ms": float(np.median(delay_ms)), "empty": float(empty.mean()),
            "p50_empty_ms": float(np.median(delay_ms[empty])), "p50_behind_ms": float(np.median(delay_ms[~empty])),
            "deq_before_arrival": dequeues_before_an_arrival(inside)}


def dequeues_before_an_arrival(events: pd.DataFrame) -> float:
    """The share of dequeues logged right after an arrival (or enqueue) stamped later than the
    dequeue. Until 2026-11-28 the emulator's router read the frames that came during a turn of its
    loop before it released what was due in that turn, so a dequeue due before such a frame came
    was decided with the frame already queued; it now serves first (0 since). The simulator
    orders events by time: always 0 there."""
    ev = events["event"].to_numpy()
    t = events["t_ns"].to_numpy().astype(np.int64)
    after_arrival = np.isin(ev[:-1], ("arrive", "enqueue")) & (ev[1:] == "dequeue")
    dequeues = int((ev == "dequeue").sum())
    return float((after_arrival & (t[1:] < t[:-1])).sum() / dequeues) if dequeues else 0.0


def acks_per_segment(result: Any) -> float:
    """ACKs per data packet sent (module docstring), either engine."""
    if "emu" in result.summary:
        rx = result.summary["emu"]["router"]["router"]["rx_frames"]
        return rx[1] / rx[0]
    flows = result.tables["flows"]
    every_data_packet = int(flows["packets_sent"].sum())
    tcp_data = int(flows.loc[flows["is_tcp"] == 1, "packets_sent"].sum())
    return (result.summary["sim"]["packets_created"] - every_data_packet) / tcp_data


def run(case: fidelity.Case, cc: str, seed: int, kernel: bool, overrides: list[str]) -> dict[str, Any]:
    scenario = fidelity.scenario(case, cc, seed, overrides=overrides)
    result = fidelity.run_once(scenario, kernel)
    end_ns = round(fidelity.DURATION_S * 1e9)
    row = {"engine": "kernel" if kernel else "sim", "cc": cc, "seed": seed}
    row.update(sojourn_mix(result.tables["packets"], round(fidelity.WARMUP_S * 1e9), end_ns))
    row["acks/seg"] = acks_per_segment(result)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--case", default="8f-10M-50ms-fqcodel", help="a case of benches/fidelity.py")
    ap.add_argument("--controllers", default="reno,cubic", help="comma-separated: reno, cubic, bbr")
    ap.add_argument("--runs", type=int, default=3, help="seeds 1..N (kernel runs: one each)")
    ap.add_argument("--kernel", action="store_true", help="also through the emulator (root)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="an override for the simulator's runs only")
    args = ap.parse_args(argv)
    case = fidelity.case_or_error(args.case)
    controllers = args.controllers.split(",")
    if case is None:
        return 2
    bad = [cc for cc in controllers if cc not in fidelity.CONTROLLERS]
    if bad:
        print(f"error: --controllers: {bad[0]!r}; allowed: {', '.join(fidelity.CONTROLLERS)}", file=sys.stderr)
        return 2
    rows = []
    for cc in controllers:
        for seed in range(1, args.runs + 1):
            rows.append(run(case, cc, seed, False, args.overrides))
            if args.kernel:
                rows.append(run(case, cc, seed, True, []))
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(f"{args.case}, measured {fidelity.WARMUP_S}-{fidelity.DURATION_S} s"
              + (f"; simulator with {' '.join(args.overrides)}" if args.overrides else ""))
        print(table.to_string(index=False))
        print("\nmedians over runs:")
        print(table.drop(columns="seed").groupby(["cc", "engine"]).median().to_string())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
