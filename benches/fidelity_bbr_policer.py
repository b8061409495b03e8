"""How long BBR v1 holds a policed rate, in both engines, and what that does to the queue (issue 27).

    python3 benches/fidelity_bbr_policer.py                          # simulator, 3 seeds
    sudo python3 benches/fidelity_bbr_policer.py --kernel --runs 3   # and the kernel (root)
    python3 benches/fidelity_bbr_policer.py --set 'flows.*.app.tcp.bbr_policer_detection=false'
    sudo python3 benches/fidelity_bbr_policer.py --kernel --kernel-set topology.bottleneck.qdisc.drop_batch=1

BBR v1 (Linux tcp_bbr.c, `bbr_lt_bw_sampling`) takes two lossy sampling intervals (loss >= 50/256
of what was delivered) of about the same delivery rate for a token-bucket policer, and then paces
at that rate with gain 1 for 48 rounds, skipping PROBE_BW's 1.25 probes. The kernel does not
report that mode, but it shows in `flow_samples.pacing_gain` (TCP_CC_INFO): PROBE_BW cycles 1.25,
0.75 and six rounds of 1, so a flow whose gain stays 1 for a second or more (more than PROBE_BW's
eight rounds at this case's round trips of 40-120 ms; PROBE_RTT lasts 200 ms) holds a policed
rate. The flows sample every 10 ms here (both engines). For each run of a fidelity case
(benches/fidelity.py's scenario, measured over the same period) this prints:

* `held`: the share of the flows' samples in runs of gain 1 that last at least `HELD_S`;
* Jain's index of the flows' throughputs;
* the queueing delay's mean and median (ms) and the retransmission rate of the period;
* `crowded_s`: the seconds of the period in which at least a fifth of the flows' packets waited
  40 ms or more on average (the kernel's flows built such queues together, every 4 s or so);
* `probe_p50_ms`, `probe_p90_ms`: the median and 90th percentile of how long PROBE_BW's 1.25
  probes lasted, over every flow's probes that began in the period (to the sampling interval);
* `jump_p50`: over the held spells that ended in the period, the median of the flow's bandwidth
  estimate 0.3-0.6 s after the spell over the policed rate it held;
* `est_sum_p90`: the BBR flows' bandwidth estimates summed at each sampling instant (Mbit/s), the
  90th percentile over the period's instants; `rate_sum_p90`: the same for their last
  delivery-rate samples. No set of flows can deliver more than the link at once, so estimates
  summing well above it are max filters keeping rates the flows could not all deliver at once;
* `rate_over_est_p50`: outside held spells, each BBR sample's last delivery-rate sample over its
  bandwidth estimate (pacing rate over gain, less Linux's 1 % margin), median: how far below its
  max filter a flow's samples run;
* `pairs`: the share of a flow's data packets that reach the bottleneck within `PAIR_NS` of its
  previous one: back to back from the sender, as Linux's TSO autosizing sends a paced skb of two
  segments (`tcp.tso_autosize` in the simulator; docs/fidelity.md);
* `policed_3s`, `start_change_p50`: in the start-up (the run's first `STARTUP_S`), how many
  flows found a policer, and the median relative change between the rates of each flow's
  consecutive long-term sampling intervals before it did (`startup_intervals`, from the
  simulator's `bbr_intervals` table; the emulator writes none: `kernel_bbr_samples.py --trace`
  measures the kernel's the same way from a per-ACK trace);
* `not_new`: over the period, the share of the TCP payload dequeued at the bottleneck that did
  not add to what the receivers acknowledged (`not_new_share`: the deliveries of spurious
  retransmissions, data the receiver already had);
* `overflow`: the share of the period's drops that FQ-CoDel's overflow made (Linux's batch drop
  from the fattest queue, `drop_batch` packets at most: reasons `evicted`, and `overflow` for
  an arrival among them), the rest being CoDel's own (`early`).

With `--per-flow`, each run's flows too: held share, bandwidth estimate and throughput (in the
two-RTT cases it is the short-RTT flow's holding that decides the fairness; docs/fidelity.md).
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
from fidelity_cwnd import FIGURES, save_figure  # noqa: E402

#: A run of gain 1 at least this long is a held (policed) rate; module docstring.
HELD_S = 1.0
#: Linux's pacing margin (tcp_bbr.c `bbr_pacing_margin_percent`): BBR paces 1 % below gain x bw.
PACING_MARGIN = 0.01
#: The flow sampling interval both engines use here (PROBE_BW's 1.25 round lasts one round trip).
SAMPLE = "10ms"
SAMPLE_MS = 10.0
#: Where `estimate_jumps` reads the estimate after a held spell: from 0.3 to 0.6 s after it
#: (a few rounds at this case's 40-120 ms, past the first probe).
JUMP_AFTER_S = (0.3, 0.6)
#: A flow "waits long" in a second when its packets' mean queueing delay then is at least this...
LONG_WAIT_MS = 40.0
#: ... and a second is crowded when at least this share of the flows waits long.
CROWDED_SHARE = 0.2
#: Two of a flow's packets this close at the bottleneck left its sender back to back: 50 µs is
#: four packet times of a 1 Gbit/s access link, and a tenth of the closest pacing gap of this
#: case's flows (2-4 Mbit/s, 3-6 ms a packet).
PAIR_NS = 50_000
#: A packet at the bottleneck larger than this carries data (a SYN is 52 B).
DATA_BYTES = 100
#: A data packet's TCP/IP headers at the bottleneck (IPv4 20, TCP 20, timestamps 12): its size
#: less this is payload, in both engines (1500 B packets of 1448 B segments).
HEADER_BYTES = 52
#: `not_new_share` reads each flow's acknowledged bytes this long after the period's ends (the
#: data dequeued just before an end is acknowledged about one base RTT later).
ACK_LAG_NS = 40_000_000
#: The start-up `startup_intervals` looks at (as `kernel_bbr_samples.STARTUP_S`).
STARTUP_S = 3.0
#: `bbr_intervals.event` codes (docs/tables.md).
LT_START, LT_INTERVAL, LT_POLICED, LT_RESTART, LT_EXPIRE = range(5)
#: `summed_at_instants` sums an instant's samples only when at least this share of the BBR flows
#: has one in it (the emulator's sender reads the flows one after another, not at one instant).
INSTANT_COVERAGE = 0.9


def bbr_samples(samples: pd.DataFrame) -> pd.DataFrame:
    """The BBR flows' samples (pacing gain above 0), by flow and then time: the order every
    measure below walks them in."""
    return samples[samples["pacing_gain"] > 0].sort_values(["flow", "t_ns"], kind="stable")


def estimate_bps(s: pd.DataFrame) -> pd.Series:
    """Each sample's bandwidth estimate (bit/s): its pacing rate over its pacing gain, Linux's 1 %
    pacing margin still in (`filter_bps` takes it out)."""
    return s["pacing_rate_bps"] / s["pacing_gain"]


def filter_bps(s: pd.DataFrame) -> pd.Series:
    """Each sample's max filter (bit/s): `estimate_bps` with Linux's 1 % pacing margin taken out."""
    return estimate_bps(s) / (1 - PACING_MARGIN)


def run_ids(flow: np.ndarray, inside: np.ndarray) -> np.ndarray:
    """A number for each sample of `bbr_samples`' order, the same within a run: a run begins
    at each flow's first sample and wherever `inside` changes."""
    new_run = np.ones(len(flow), dtype=bool)
    new_run[1:] = (flow[1:] != flow[:-1]) | (inside[1:] != inside[:-1])
    return np.cumsum(new_run)


def held_samples(samples: pd.DataFrame, held_s: float = HELD_S) -> pd.DataFrame:
    """The BBR flows' samples (t_ns, flow) with `held`: whether each lies in a run of pacing gain
    1 lasting at least `held_s` (a run measured from its first sample to its last), in
    `bbr_samples`' order."""
    s = bbr_samples(samples)
    flow = s["flow"].to_numpy()
    t = s["t_ns"].to_numpy().astype(np.int64)
    one = s["pacing_gain"].to_numpy() == 1.0
    run = run_ids(flow, one)
    length = pd.Series(t).groupby(run).transform(lambda x: x.iloc[-1] - x.iloc[0]).to_numpy()
    return pd.DataFrame({"t_ns": t, "flow": flow, "held": one & (length >= held_s * 1e9)})


def held_share(samples: pd.DataFrame, start_ns: int, end_ns: int, held_s: float = HELD_S) -> float:
    """The share of BBR flows' samples in [start_ns, end_ns) that are held (`held_samples`; a
    run crossing `start_ns` counts whole)."""
    return share_held(held_samples(samples, held_s), start_ns, end_ns)


def share_held(held: pd.DataFrame, start_ns: int, end_ns: int) -> float:
    """`held_share` from `held_samples`' frame, computed once per run (`run`)."""
    inside = held[(held["t_ns"] >= start_ns) & (held["t_ns"] < end_ns)]
    return float(inside["held"].mean()) if len(inside) else float("nan")


def probe_lengths_ms(samples: pd.DataFrame, start_ns: int, end_ns: int, every_ms: float) -> np.ndarray:
    """How long each of PROBE_BW's probes lasted (ms): the runs of a BBR flow's samples at a
    pacing gain above 1 and below STARTUP's (the 1.25 phase; a policed rate has gain 1), from
    the first sample to the last plus one sampling interval (`every_ms`), for the runs that
    start in [start_ns, end_ns). PROBE_BW ends its probe at a loss or once the data in flight
    reaches 1.25 BDP, after one min_rtt at least (tcp_bbr.c `bbr_is_next_cycle_phase`), so a
    probe much longer than a round trip is one that reached neither."""
    s = bbr_samples(samples)
    flow = s["flow"].to_numpy()
    t = s["t_ns"].to_numpy().astype(np.int64)
    gain = s["pacing_gain"].to_numpy()
    probing = (gain > 1.0) & (gain < 2.0)
    run_id = run_ids(flow, probing)[probing]
    if not len(run_id):
        return np.array([], dtype=float)
    starts = pd.Series(t[probing]).groupby(run_id).agg(["first", "last"])
    starts = starts[(starts["first"] >= start_ns) & (starts["first"] < end_ns)]
    return ((starts["last"] - starts["first"]).to_numpy() / 1e6 + every_ms).astype(float)


def estimate_jumps(samples: pd.DataFrame, start_ns: int, end_ns: int, held: pd.DataFrame | None = None,
                   after_s: tuple[float, float] = JUMP_AFTER_S) -> np.ndarray:
    """For each held spell (`held_samples`) that ends in [start_ns, end_ns): the flow's
    bandwidth estimate (pacing rate / gain) a little after the spell, the median of its samples
    `after_s` seconds after the spell's last sample, over the estimate at that last sample (the
    policed rate). Linux's BBR then goes back to its max filter of the last 10 rounds' delivery
    rates (`bbr_reset_lt_bw_sampling`) and probes from there. `held`: the run's `held_samples`,
    when the caller has them already."""
    s = bbr_samples(samples)
    is_held = (held_samples(samples) if held is None else held)["held"].to_numpy()
    flow = s["flow"].to_numpy()
    t = s["t_ns"].to_numpy().astype(np.int64)
    estimate = estimate_bps(s).to_numpy()
    ratios = []
    for k in np.flatnonzero(is_held[:-1] & ~is_held[1:] & (flow[:-1] == flow[1:])):
        if not start_ns <= t[k] < end_ns:
            continue
        later = (flow == flow[k]) & (t > t[k] + after_s[0] * 1e9) & (t <= t[k] + after_s[1] * 1e9)
        if later.any() and estimate[k] > 0:
            ratios.append(float(np.median(estimate[later])) / estimate[k])
    return np.array(ratios, dtype=float)


def summed_at_instants(samples: pd.DataFrame, start_ns: int, end_ns: int, column: str,
                       every_ms: float) -> np.ndarray:
    """The BBR flows' `column` summed over each sampling instant in [start_ns, end_ns), in Mbit/s
    (`column` in bit/s, or "estimate": pacing rate over gain, Linux's 1 % pacing margin left
    in). An instant is a sampling interval (`every_ms`) of the clock; it counts only when at
    least `INSTANT_COVERAGE` of the flows have a sample in it, each flow's last."""
    every = bbr_samples(samples)
    flows = every["flow"].nunique()
    s = every[(every["t_ns"] >= start_ns) & (every["t_ns"] < end_ns)]
    values = estimate_bps(s) if column == "estimate" else s[column]
    frame = pd.DataFrame({"instant": s["t_ns"].to_numpy() // round(every_ms * 1e6), "flow": s["flow"].to_numpy(),
                          "value": values.to_numpy(dtype=float)})
    last = frame.groupby(["instant", "flow"])["value"].last().reset_index()
    per_instant = last.groupby("instant")["value"].agg(["sum", "size"])
    return (per_instant.loc[per_instant["size"] >= INSTANT_COVERAGE * flows, "sum"] / 1e6).to_numpy()


def rates_over_estimates(samples: pd.DataFrame, start_ns: int, end_ns: int,
                         held: pd.DataFrame | None = None) -> np.ndarray:
    """For each BBR sample in [start_ns, end_ns) outside a held spell (`held_samples`) with a
    delivery rate: that rate over the flow's bandwidth estimate (pacing rate over gain, less
    Linux's 1 % pacing margin). `held`: the run's `held_samples`, when the caller has them."""
    s = bbr_samples(samples)
    is_held = (held_samples(samples) if held is None else held)["held"].to_numpy()
    estimate = filter_bps(s).to_numpy()
    rate = s["delivery_rate_bps"].to_numpy(dtype=float)
    t = s["t_ns"].to_numpy()
    keep = (t >= start_ns) & (t < end_ns) & ~is_held & (rate > 0) & (estimate > 0)
    return rate[keep] / estimate[keep]


def crowded_seconds(packets: pd.DataFrame, start_ns: int, end_ns: int) -> int:
    """Seconds in [start_ns, end_ns) in which at least `CROWDED_SHARE` of the flows that had
    packets dequeued waited `LONG_WAIT_MS` or more on average."""
    d = packets[packets["event"].astype(str) == "dequeue"]
    d = d[(d["t_ns"] >= start_ns) & (d["t_ns"] < end_ns)]
    second = d["t_ns"].to_numpy() // 1_000_000_000
    wait_ms = d.groupby([second, d["flow"].to_numpy()])["sojourn_ns"].mean() / 1e6
    long_share = (wait_ms >= LONG_WAIT_MS).groupby(level=0).mean()
    return int((long_share >= CROWDED_SHARE).sum())


def overflow_share(packets: pd.DataFrame, start_ns: int, end_ns: int) -> float:
    """The share of drops in [start_ns, end_ns) that a full buffer made (reasons `evicted` and
    `overflow`)."""
    d = packets[(packets["event"].astype(str) == "drop") & (packets["t_ns"] >= start_ns) & (packets["t_ns"] < end_ns)]
    return float(d["reason"].astype(str).isin(["evicted", "overflow"]).mean()) if len(d) else float("nan")


def not_new_share(packets: pd.DataFrame, samples: pd.DataFrame, start_ns: int, end_ns: int) -> float:
    """The share of the TCP payload dequeued at the bottleneck in [start_ns, end_ns) that did not
    add to the flows' acknowledged bytes (`flow_samples.delivered_bytes` read `ACK_LAG_NS` after
    each end, the last sample before it): payload that reached a receiver twice. Over periods of
    seconds the holes open at either end are a small part; NaN without data packets."""
    d = packets[(packets["event"].astype(str) == "dequeue") & (packets["size"] > DATA_BYTES)
                & (packets["t_ns"] >= start_ns) & (packets["t_ns"] < end_ns)]
    payload = (d["size"].astype(np.int64) - HEADER_BYTES).groupby(d["flow"]).sum()
    if payload.sum() <= 0:
        return float("nan")
    s = samples.sort_values("t_ns", kind="stable")

    def acked(t_ns: int) -> pd.Series:
        return s[s["t_ns"] <= t_ns].groupby("flow")["delivered_bytes"].last().astype(np.int64)

    gained = (acked(end_ns + ACK_LAG_NS) - acked(start_ns + ACK_LAG_NS)).reindex(payload.index).fillna(0)
    return float(1 - gained.sum() / payload.sum())


def startup_intervals(events: pd.DataFrame, until_s: float = STARTUP_S) -> tuple[int, pd.Series]:
    """From a `bbr_intervals` table: the flows that found a policer (event 2) before `until_s`,
    and the relative changes |r_i - r_(i-1)| / r_(i-1) between the rates of each flow's
    consecutive intervals before `until_s` up to its first policer found, an interval after a
    restart or an expiry compared with nothing (tcp_bbr.c compares it with nothing; the kernel's
    counterpart: `kernel_bbr_samples.startup_intervals`)."""
    policed, changes = 0, []
    early = events[events["t_ns"] < until_s * 1e9].sort_values(["flow", "t_ns"], kind="stable")
    for _, f in early.groupby("flow", sort=False):
        previous = 0.0
        for event, rate in zip(f["event"].to_numpy(), f["interval_bps"].to_numpy(), strict=True):
            if event in (LT_INTERVAL, LT_POLICED) and previous > 0:
                changes.append(abs(rate - previous) / previous)
            if event == LT_POLICED:
                policed += 1
                break
            if event == LT_INTERVAL:
                previous = rate
            elif event in (LT_RESTART, LT_EXPIRE):
                previous = 0.0
    return policed, pd.Series(changes, dtype=float)


def paired_share(packets: pd.DataFrame, start_ns: int, end_ns: int, within_ns: int = PAIR_NS) -> float:
    """The share of the data packets arriving at the bottleneck in [start_ns, end_ns) that arrive
    within `within_ns` of their flow's previous data packet (the flow's first in the period has
    none and does not count)."""
    a = packets[(packets["event"].astype(str) == "arrive") & (packets["size"] > DATA_BYTES)]
    a = a[(a["t_ns"] >= start_ns) & (a["t_ns"] < end_ns)].sort_values(["flow", "t_ns"], kind="stable")
    gaps = a.groupby("flow")["t_ns"].diff().dropna()
    return float((gaps < within_ns).mean()) if len(gaps) else float("nan")


def run(case: fidelity.Case, seed: int, kernel: bool, overrides: list[str],
        per_flow_table: bool = False) -> tuple[dict[str, Any], Any]:
    """One run's row of the table, and its result (for the figure); with `per_flow_table`, prints
    `per_flow` of the run."""
    scenario = fidelity.scenario(case, "bbr", seed, overrides=[f"records.flow_sample={SAMPLE}", *overrides])
    result = fidelity.run_once(scenario, kernel)
    start, end = round(fidelity.WARMUP_S * 1e9), round(fidelity.DURATION_S * 1e9)
    m = fidelity.measures(result, case)
    held = held_samples(result.tables["flow_samples"])
    probes = probe_lengths_ms(result.tables["flow_samples"], start, end, SAMPLE_MS)
    delay = result.tables["packets"]
    delay = delay[(delay["event"].astype(str) == "dequeue") & (delay["t_ns"] >= start) & (delay["t_ns"] < end)]
    row = {"engine": "kernel" if kernel else "sim", "seed": seed,
           "held": share_held(held, start, end),
           "jain": m["jain"], "mean_ms": float(delay["sojourn_ns"].mean() / 1e6), "p50_ms": m["qdelay_p50_ms"],
           "retrans": m["retrans_rate_period"], "crowded_s": crowded_seconds(result.tables["packets"], start, end),
           "probe_p50_ms": _quantile(probes, 0.5), "probe_p90_ms": _quantile(probes, 0.9),
           "jump_p50": _quantile(estimate_jumps(result.tables["flow_samples"], start, end, held), 0.5),
           "est_sum_p90": _quantile(summed_at_instants(result.tables["flow_samples"], start, end, "estimate",
                                                       SAMPLE_MS), 0.9),
           "rate_sum_p90": _quantile(summed_at_instants(result.tables["flow_samples"], start, end,
                                                        "delivery_rate_bps", SAMPLE_MS), 0.9),
           "rate_over_est_p50": _quantile(rates_over_estimates(result.tables["flow_samples"], start, end, held), 0.5),
           "pairs": paired_share(result.tables["packets"], start, end),
           "not_new": not_new_share(result.tables["packets"], result.tables["flow_samples"], start, end),
           "overflow": overflow_share(result.tables["packets"], start, end)}
    policed, changes = (startup_intervals(result.tables["bbr_intervals"]) if "bbr_intervals" in result.tables
                        else (float("nan"), pd.Series(dtype=float)))
    row["policed_3s"], row["start_change_p50"] = policed, _quantile(changes.to_numpy(), 0.5)
    if per_flow_table:
        print(f"{row['engine']} seed {seed}, per flow:\n{per_flow(result, start, end, held).round(3).to_string()}")
    return row, result


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if len(values) else float("nan")


def per_flow(result: Any, start_ns: int, end_ns: int, held: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each BBR flow over [start_ns, end_ns): its held share, the median of its bandwidth
    estimate (pacing rate / gain, less Linux's 1 % margin: Mbit/s of payload) and its
    throughput (Mbit/s). `held`: the run's `held_samples`, when the caller has them already."""
    s = result.tables["flow_samples"]
    s = s[(s["pacing_gain"] > 0) & (s["t_ns"] >= start_ns) & (s["t_ns"] < end_ns)]
    estimate = filter_bps(s) / 1e6
    out = pd.DataFrame({"bw_mbps": estimate.groupby(s["flow"]).median()})
    h = held_samples(result.tables["flow_samples"]) if held is None else held
    h = h[(h["t_ns"] >= start_ns) & (h["t_ns"] < end_ns)]
    out["held"] = h.groupby("flow")["held"].mean()
    out["throughput_mbps"] = result.flow_periods.groupby("flow")["throughput_mbps"].sum()
    return out


def draw(results: dict[str, Any], out: Path, title: str) -> None:
    """Per engine (a column): the flows holding a policed rate at each sample time, and the mean
    queueing delay of the packets dequeued in each 100 ms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(5 * len(results), 5.5), sharex=True, sharey="row",
                             squeeze=False)
    for col, (engine, result) in enumerate(results.items()):
        held = held_samples(result.tables["flow_samples"]).groupby("t_ns")["held"].sum()
        axes[0, col].plot(held.index / 1e9, held.to_numpy(), lw=0.8)
        axes[0, col].set_title(engine, fontsize=10)
        p = result.tables["packets"]
        d = p[p["event"].astype(str) == "dequeue"]
        delay = d.groupby(d["t_ns"].to_numpy() // 100_000_000)["sojourn_ns"].mean()
        axes[1, col].plot(delay.index / 10, delay.to_numpy() / 1e6, lw=0.8, color="tab:red")
        axes[1, col].set_xlabel("time (s)")
        for ax in axes[:, col]:
            ax.grid(alpha=0.3)
            ax.axvspan(0, fidelity.WARMUP_S, color="0.9", zorder=0)
    axes[0, 0].set_ylabel(f"flows holding a policed rate\n(gain 1 for {HELD_S:g} s or more)")
    axes[1, 0].set_ylabel("mean queueing delay\nper 100 ms (ms)")
    save_figure(fig, out, title, fontsize=10)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--case", default="50f-100M-40ms-fqcodel", help="a case of benches/fidelity.py")
    ap.add_argument("--runs", type=int, default=3, help="seeds 1..N (kernel runs: one each)")
    ap.add_argument("--kernel", action="store_true", help="also through the emulator (root)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="an override for the simulator's runs only")
    ap.add_argument("--kernel-set", dest="kernel_overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="an override for the emulated runs only")
    ap.add_argument("--per-flow", action="store_true",
                    help="print each run's flows: held share, bandwidth estimate, throughput")
    ap.add_argument("--figure", nargs="?", const="", default=None, metavar="PNG",
                    help=f"draw seed 1's runs (default {FIGURES.name}/bbr-policer-CASE.png under docs/)")
    args = ap.parse_args(argv)
    case = fidelity.case_or_error(args.case)
    if case is None:
        return 2
    rows, drawn = [], {}
    for seed in range(1, args.runs + 1):
        for kernel in (False, True) if args.kernel else (False,):
            row, result = run(case, seed, kernel, args.kernel_overrides if kernel else args.overrides,
                              args.per_flow)
            rows.append(row)
            if seed == 1:
                drawn["kernel (emulator)" if kernel else "simulator"] = result
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(f"{args.case}, bbr, measured {fidelity.WARMUP_S}-{fidelity.DURATION_S} s"
              + (f"; simulator with {' '.join(args.overrides)}" if args.overrides else "")
              + (f"; kernel with {' '.join(args.kernel_overrides)}" if args.kernel_overrides else ""))
        print(table.to_string(index=False))
        print("\nmedians over runs:")
        print(table.drop(columns="seed").groupby("engine").median().to_string())
    if args.figure is not None:
        out = Path(args.figure) if args.figure else FIGURES / f"bbr-policer-{args.case}.png"
        draw(drawn, out, f"BBR v1's policer mode: {args.case}, bbr, seed 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
