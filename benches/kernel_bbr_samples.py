"""Every rate sample the kernel's BBR flows take, and what their max filters make of them (issue 27).

    sudo python3 benches/kernel_bbr_samples.py                 # 50f-100M-40ms-fqcodel, seed 1
    sudo python3 benches/kernel_bbr_samples.py --trace T.txt   # summarize a trace already taken

The emulator reads a kernel flow's state every 10 ms (TCP_INFO, TCP_CC_INFO): the last rate
sample only, and BBR's estimate. This traces every ACK instead. `bpftrace` attaches to the
`tcp:tcp_probe` tracepoint (it fires as a socket receives a segment, before the segment is
processed) and prints, for each pure ACK, the state the previous ACK left: the last rate sample
`tcp_rate_gen` kept (`rate_delivered` segments over `rate_interval_us`, what tcpi_delivery_rate
divides), and from tcp_bbr.c's private `struct bbr` the max filter's bandwidth (`bw.s[0].v`,
segments per microsecond << 24), the round count `rtt_cnt`, `lt_use_bw`, `lt_bw` and the pacing
gain. The fields' offsets come from the kernel's BTF through `pahole`, so the script follows the
running kernel's layout (needs root, bpftrace and pahole, Debian: `apt install bpftrace
pahole`; it mounts tracefs at /sys/kernel/tracing when the tracepoint is not there). Per flow
a new sample is one whose (segments, interval, delivered) differ from the previous ACK's. It
prints, over the measured period:

* each new sample over the estimate before it (can a sample alone lift the estimate far?);
* the estimate's rises of more than 10 %: how many, how large, the sample behind each (its
  interval over the flow's min_rtt, its segments) and the pacing gain then;
* the estimate over the largest sample of the same flow in the previous 0.5, 1 and 2 s (how old
  the samples are that the max filter keeps);
* how long ten rounds last (BBR's max filter window is 10 rounds, tcp_bbr.c `bbr_bw_rtts`);
* at the end of each held spell (`lt_use_bw` 1 -> 0), the max filter over the policed rate;
* in the start-up (the trace's first `STARTUP_S`), how many flows found a policer, and how far
  apart the rates of each flow's consecutive long-term sampling intervals were before it did
  (tcp_bbr.c's `bbr_lt_bw_interval_done` takes two intervals within 1/8 of each other for a
  policer): each change of `lt_bw` ends an interval, its rate the new `lt_bw`, or, where
  `lt_use_bw` turns on, twice the new value less the one before (Linux keeps their mean); an
  interval after `lt_bw` fell to 0 (the sampling restarted) is compared with nothing, as in Linux.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity  # noqa: E402  (the suite's cases and scenarios)
import fidelity_bbr_policer as policer  # noqa: E402  (the start-up measure, on the table's events)

#: The trace's columns, in bpftrace's printf order.
COLUMNS = ["t_ns", "sock", "rate_segs", "rate_interval_us", "delivered", "mss", "bw_v", "lt_use_bw",
           "pacing_gain", "min_rtt_us", "lt_bw_v", "rtt_cnt"]
#: BBR's bandwidth unit: segments per microsecond, shifted left by this (tcp_bbr.c `BW_SCALE`).
BW_SCALE = 24
#: Linux's unit of gains (tcp_bbr.c `BBR_UNIT`): 256 is a gain of 1.
BBR_UNIT = 256
#: The windows `summarize` looks back over for the flow's largest sample.
LOOKBACK_S = (0.5, 1.0, 2.0)
#: BBR's max filter window, in rounds (tcp_bbr.c `bbr_bw_rtts`).
FILTER_ROUNDS = 10
#: The start-up `startup_intervals` looks at, from the trace's first ACK.
STARTUP_S = 3.0


def struct_layout(struct: str) -> dict[str, int]:
    """Byte offsets of `struct`'s members in the running kernel (pahole on its BTF); a bit-field
    member maps to the offset of the word that holds it and `NAME.bit` to its first bit."""
    btf = "/sys/kernel/btf/vmlinux"
    r = subprocess.run(["pahole", "-C", struct, btf], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise SystemExit(f"kernel_bbr_samples.py: pahole found no struct {struct} in {btf}")
    return parse_layout(r.stdout)


def parse_layout(pahole_text: str) -> dict[str, int]:
    """`struct_layout` from pahole's C-like output (each member's comment: offset, then
    ":bit" for a bit-field, then size)."""
    out: dict[str, int] = {}
    for line in pahole_text.splitlines():
        m = re.match(r"\s+.*?\b(\w+)(\[\d+\])?(:\d+)?;\s+/\*\s+(\d+)(?::\s*(\d+))?\s+\d+\s+\*/", line)
        if m:
            out[m.group(1)] = int(m.group(4))
            if m.group(5) is not None:
                out[f"{m.group(1)}.bit"] = int(m.group(5))
    return out


def bpftrace_program() -> str:
    """The bpftrace program for the running kernel's layout (`struct_layout`)."""
    icsk = struct_layout("inet_connection_sock")
    bbr = struct_layout("bbr")
    priv = icsk["icsk_ca_priv"]
    word = lambda field: f"*(uint32 *)($b + {bbr[field]})"  # noqa: E731
    bits = lambda field, width: f"(({word(field)} >> {bbr[field + '.bit']}) & {(1 << width) - 1})"  # noqa: E731
    return f"""tracepoint:tcp:tcp_probe /args->data_len == 0/ {{
  $sk = (uint64)args->skaddr;
  $tp = (struct tcp_sock *)$sk;
  $b = $sk + {priv};
  printf("%llu %llu %u %u %u %u %u %u %u %u %u %u\\n", nsecs, args->sock_cookie, $tp->rate_delivered,
         $tp->rate_interval_us, $tp->delivered, $tp->mss_cache, *(uint32 *)($b + {bbr['bw'] + 4}),
         {bits('lt_use_bw', 1)}, {bits('pacing_gain', 10)}, {word('min_rtt_us')}, {word('lt_bw')},
         {word('rtt_cnt')});
}}
"""


def read_trace(path: Path) -> pd.DataFrame:
    """The trace's well-formed lines (bpftrace's banner and a line cut at the end are dropped),
    the BBR sockets only (pacing gain above 0)."""
    rows = [line.split() for line in path.read_text().splitlines()]
    rows = [r for r in rows if len(r) == len(COLUMNS) and all(x.isdigit() for x in r)]
    trace = pd.DataFrame(np.array(rows, dtype=np.int64).reshape(-1, len(COLUMNS)), columns=COLUMNS)
    return trace[trace["pacing_gain"] > 0].reset_index(drop=True)


def by_flow(trace: pd.DataFrame) -> pd.DataFrame:
    """The trace in each socket's ACK order, with `t_s`: seconds from the trace's first ACK."""
    d = trace.sort_values(["sock", "t_ns"], kind="stable").reset_index(drop=True)
    d["t_s"] = (d["t_ns"] - d["t_ns"].min()) / 1e9
    return d


def summarize(trace: pd.DataFrame, start_s: float, end_s: float) -> dict[str, float]:
    """The measures of the module docstring over [start_s, end_s), in seconds from the trace's
    first ACK. Rates in Mbit/s of payload (segments of the socket's MSS)."""
    d = by_flow(trace)
    mbps = d["mss"] * 8  # segments per microsecond, times bits per segment: Mbit/s
    d["sample"] = (d["rate_segs"] / d["rate_interval_us"].where(d["rate_interval_us"] > 0)) * mbps
    d["estimate"] = d["bw_v"] / 2**BW_SCALE * mbps
    d["policed"] = d["lt_bw_v"] / 2**BW_SCALE * mbps
    g = d.groupby("sock", sort=False)
    before = g["estimate"].shift(1)
    new = ((g["rate_segs"].diff() != 0) | (g["rate_interval_us"].diff() != 0) | (g["delivered"].diff() != 0))
    inside = (d["t_s"] >= start_s) & (d["t_s"] < end_s)
    fresh = inside & new & d["sample"].notna() & (before > 0)
    over = (d["sample"] / before)[fresh]
    out: dict[str, float] = {"flows": float(d["sock"].nunique()), "samples": float(fresh.sum()),
                             "sample_over_estimate_p99": _q(over, 0.99), "sample_over_estimate_max": _q(over, 1.0)}
    rises = inside & (before > 0) & (d["estimate"] > 1.1 * before)
    out["rises"] = float(rises.sum())
    out["rise_p50"] = _q((d["estimate"] / before)[rises], 0.5)
    out["rise_interval_over_min_rtt_p50"] = _q((d["rate_interval_us"] / d["min_rtt_us"])[rises], 0.5)
    out["rise_segments_p50"] = _q(d["rate_segs"][rises], 0.5)
    out["rises_at_gain_1"] = float((d["pacing_gain"][rises] == BBR_UNIT).sum())
    for window in LOOKBACK_S:
        ratios = []
        for _, f in d[d["sample"].notna()].groupby("sock", sort=False):
            largest = pd.Series(f["sample"].to_numpy(), index=pd.to_datetime(f["t_s"], unit="s"))
            largest = largest.rolling(f"{round(window * 1000)}ms").max().to_numpy()
            keep = ((f["t_s"] >= start_s) & (f["t_s"] < end_s)).to_numpy()
            ratios.append(f["estimate"].to_numpy()[keep] / largest[keep])
        out[f"estimate_over_largest_{window:g}s_p90"] = _q(pd.Series(np.concatenate(ratios)), 0.9)
    spans = []
    for _, f in d.groupby("sock", sort=False):
        starts = f.drop_duplicates("rtt_cnt")
        t = starts["t_s"].to_numpy()
        span = t[FILTER_ROUNDS:] - t[:-FILTER_ROUNDS] if len(t) > FILTER_ROUNDS else np.array([])
        spans.append(span[(t[FILTER_ROUNDS:] >= start_s) & (t[FILTER_ROUNDS:] < end_s)] if span.size else span)
    all_spans = pd.Series(np.concatenate(spans)) if spans else pd.Series(dtype=float)
    out["ten_rounds_s_p50"], out["ten_rounds_s_p90"] = _q(all_spans, 0.5), _q(all_spans, 0.9)
    ended = inside & (g["lt_use_bw"].shift(1) == 1) & (d["lt_use_bw"] == 0)
    out["spell_ends"] = float(ended.sum())
    out["estimate_over_policed_at_spell_end_p50"] = _q((d["estimate"] / g["policed"].shift(1))[ended], 0.5)
    return out


def lt_events(trace: pd.DataFrame) -> pd.DataFrame:
    """The trace's long-term sampling events in the simulator's `bbr_intervals` shape (flow, t_ns
    from the trace's first ACK, event, interval_bps in the trace's lt_bw units), up to each
    socket's first policer found: each change of `lt_bw` to a new non-zero value ends an
    interval at that rate; where `lt_use_bw` turns on, a policer, its interval's rate twice the
    new value less the one before (Linux keeps their mean); `lt_bw` falling to 0 is a restart."""
    rows = []
    for sock, f in by_flow(trace).groupby("sock", sort=False):
        prev_lt, prev_use = 0, 0
        for t_s, lt, use in zip(f["t_s"].to_numpy(), f["lt_bw_v"].to_numpy(), f["lt_use_bw"].to_numpy(),
                                strict=True):
            t_ns = round(t_s * 1e9)
            if use and not prev_use:
                rows.append((sock, t_ns, policer.LT_POLICED, 2 * lt - prev_lt if prev_lt else lt))
                break
            if lt != prev_lt:
                rows.append((sock, t_ns, policer.LT_INTERVAL if lt else policer.LT_RESTART, lt))
            prev_lt, prev_use = lt, use
    return pd.DataFrame(rows, columns=["flow", "t_ns", "event", "interval_bps"])


def startup_intervals(trace: pd.DataFrame, until_s: float = STARTUP_S) -> tuple[int, pd.Series]:
    """The flows that found a policer (`lt_use_bw` on) within `until_s` of the trace's first ACK,
    and the relative changes between the rates of each flow's consecutive long-term sampling
    intervals up to its first policer found (module docstring): `lt_events` counted as the
    simulator's `bbr_intervals` are (`fidelity_bbr_policer.startup_intervals`)."""
    return policer.startup_intervals(lt_events(trace), until_s)


def _q(values: pd.Series, q: float) -> float:
    v = values.replace([np.inf, -np.inf], np.nan).dropna()
    return float(v.quantile(q)) if len(v) else float("nan")


def trace_kernel_run(case: fidelity.Case, seed: int, out: Path) -> None:
    """Runs `case` with bbr through the emulator while bpftrace writes the trace to `out`."""
    for tool in ("bpftrace", "pahole"):
        if shutil.which(tool) is None:
            raise SystemExit(f"kernel_bbr_samples.py: {tool} is not installed (Debian: apt install bpftrace pahole)")
    if os.geteuid() != 0:
        raise SystemExit("kernel_bbr_samples.py: tracing and the emulator need root")
    if not Path("/sys/kernel/tracing/events/tcp/tcp_probe").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"], check=False)
    with tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False) as program:
        program.write(bpftrace_program())
    with out.open("w") as sink:
        tracer = subprocess.Popen(["bpftrace", program.name], stdout=sink, stderr=subprocess.DEVNULL)
        try:
            time.sleep(3)  # attached ("Attaching 1 probe...") before the flows start
            if tracer.poll() is not None:
                raise SystemExit(f"kernel_bbr_samples.py: bpftrace stopped (exit {tracer.returncode})")
            scenario = fidelity.scenario(case, "bbr", seed)
            fidelity.run_once(scenario, True)
        finally:
            tracer.terminate()
            tracer.wait()
            os.unlink(program.name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--case", default="50f-100M-40ms-fqcodel", help="a case of benches/fidelity.py")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trace", type=Path, default=None, help="summarize this trace instead of taking one")
    ap.add_argument("--keep", type=Path, default=None, help="where to keep the trace taken")
    args = ap.parse_args(argv)
    case = fidelity.case_or_error(args.case)
    if case is None:
        return 2
    path = args.trace
    if path is None:
        path = args.keep or Path(tempfile.mkdtemp()) / "trace.txt"
        trace_kernel_run(case, args.seed, path)
    trace = read_trace(path)
    summary = summarize(trace, fidelity.WARMUP_S, fidelity.DURATION_S)
    policed, changes = startup_intervals(trace)
    summary[f"policed_by_{STARTUP_S:g}s"] = float(policed)
    summary["startup_interval_change_p50"] = _q(changes, 0.5)
    summary["startup_interval_change_p90"] = _q(changes, 0.9)
    print(f"{args.case}, bbr, kernel, measured {fidelity.WARMUP_S}-{fidelity.DURATION_S} s after the first ACK; "
          f"trace {path}")
    for name, value in summary.items():
        print(f"{name:42s} {value:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
