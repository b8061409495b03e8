#!/usr/bin/env python3
"""BBR's standing queue in the fidelity suite's one-flow deep-buffer case (1f-100M-40ms-fifo-deep),
and stalls of the ACK path (docs/fidelity.md, "The emulator's router stopped 50 ms a second").

The simulator half runs the case with BBR three times per setting: as the suite runs it, and with
the reverse link out for OUTAGE ms every second (a link schedule: the ACKs wait in its buffer, then
leave together), with tcp_bbr.c's ACK-aggregation allowance on (the default) and off. The kernel
half (root) runs the case through the emulator and prints what its bottleneck records show:
gaps in the data reaching the router, and in its departures while packets wait.

    python3 benches/fidelity_ack_stalls.py                     # simulator, about 1 min
    sudo python3 benches/fidelity_ack_stalls.py --kernel 3     # and 3 emulated runs, about 2 min more
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity  # noqa: E402
from aqmlab.run import simulate  # noqa: E402

CASE = next(c for c in fidelity.CASES if c.name == "1f-100M-40ms-fifo-deep")
SEEDS = (1, 2, 3)
#: Where in each second the outage starts (any phase; the kernel's stalls came at 0.03 s).
OUTAGE_AT_S = 0.5


def outage(ms: float) -> list[str]:
    """The reverse link (the ACKs' way) out for `ms` every second."""
    end = OUTAGE_AT_S + ms / 1000
    rate = f"{CASE.rate_mbps:g}Mbps"
    return [f'topology.reverse.schedule=[{{at="{OUTAGE_AT_S}s",rate="0bps"}},{{at="{end}s",rate="{rate}"}}]',
            "topology.reverse.schedule_period=1s"]


def summary(result: Any) -> str:
    m = fidelity.measures(result, CASE)
    fs = result.tables["flow_samples"]
    fs = fs[fs.t_ns >= fidelity.WARMUP_S * 1e9]
    cwnd = np.percentile(fs.cwnd_bytes.astype(float), [50, 90]) / 1e6
    return (f"qdelay p50 {m['qdelay_p50_ms']:5.1f} ms, p99 {m['qdelay_p99_ms']:5.1f} ms; "
            f"cwnd p50 {cwnd[0]:.2f} MB, p90 {cwnd[1]:.2f} MB; utilization {m['utilization']:.3f}")


def gaps(result: Any) -> str:
    """Stalls in the bottleneck's records over the measured period (from the warm-up on): data not
    arriving, and departures late while packets wait."""
    pk = result.tables["packets"]
    pk = pk[pk.t_ns >= fidelity.WARMUP_S * 1e9]
    arrive = pk[pk.event == "arrive"].t_ns.to_numpy(np.int64)
    deq = pk[pk.event == "dequeue"]
    t, q = deq.t_ns.to_numpy(np.int64), deq.qlen_pkts.to_numpy()
    busy_gap = np.diff(t)[q[:-1] > 0] / 1e6
    arrive_gap = np.diff(arrive) / 1e6
    long_arrive = arrive_gap[arrive_gap > 10]
    typical = f" (median {np.median(long_arrive):.1f} ms)" if len(long_arrive) else ""
    return (f"{len(long_arrive)} arrival gaps > 10 ms{typical}, "
            f"{(busy_gap > 5).sum()} departure gaps > 5 ms while backlogged (max {busy_gap.max():.1f} ms)")


def lateness(link: dict[str, Any]) -> str:
    """The emulated link's lateness histogram as shares of frames. Bucket k counts lateness in
    [2^(k-1), 2^k) ns, so the buckets from b + 1 on hold the frames at least 2^b ns late."""
    counts = np.array(link["lateness_log2_ns"], dtype=float)

    def at_least(bits: int) -> float:
        return counts[bits + 1:].sum() / counts.sum()

    return (f"{100 * at_least(13):.1f} % of frames 8.2 us late or more (2^13 ns), "
            f"{100 * at_least(16):.2f} % 65.5 us or more (2^16 ns), max {link['max_lateness_ns'] / 1e6:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outages", default="20,40", help="outage lengths to try, ms (default 20,40)")
    ap.add_argument("--kernel", type=int, default=0, metavar="RUNS", help="emulated kernel runs too (root)")
    ap.add_argument("--kernel-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an override for the emulated runs (e.g. emulation.busy_poll=true)")
    ap.add_argument("--no-sim", action="store_true", help="the kernel half alone")
    args = ap.parse_args()
    settings: list[tuple[str, list[str]]] = [("as the suite runs it", [])]
    for ms in (float(x) for x in args.outages.split(",")):
        settings.append((f"ACKs out {ms:g} ms a second", outage(ms)))
        settings.append((f"ACKs out {ms:g} ms a second, no ACK-aggregation allowance",
                         [*outage(ms), "flows.*.app.tcp.bbr_ack_aggregation=false"]))
    for name, overrides in [] if args.no_sim else settings:
        for seed in SEEDS:
            res = simulate(fidelity.scenario(CASE, "bbr", seed, overrides=overrides), progress=False)
            print(f"simulator, {name}, seed {seed}: {summary(res)}; {gaps(res)}", flush=True)
    if args.kernel:
        from aqmlab.emu.run import emulate

        for run in range(1, args.kernel + 1):
            res = emulate(fidelity.scenario(CASE, "bbr", run, overrides=args.kernel_set))
            router = res.summary["emu"]["router"]["router"]
            forward = res.summary["emu"]["router"]["forward"]["link"]
            # Routers before 2026-11-28 kept neither count.
            stall = router.get("longest_stall_ns")
            stall_text = "n/a" if stall is None else f"{stall / 1e6:.1f} ms"
            print(f"kernel {' '.join(args.kernel_set)}, run {run}: {summary(res)}; {gaps(res)}; router: "
                  f"longest stall {stall_text}, spin budget reached in "
                  f"{router.get('spin_budget_exhausted_windows', 'n/a')} windows; forward link: {lateness(forward)}",
                  flush=True)


if __name__ == "__main__":
    main()
