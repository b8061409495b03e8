"""An outside check of aqmlab's ABR decisions against Sabre (Spiteri et al.'s ABR simulator).

Sabre (https://github.com/UMass-LIDS/sabre, BSD 2-Clause, Copyright (c) 2018 Kevin Spiteri) is
run here as an outside program only: this script neither contains nor imports its code. Give a
checkout with `--sabre DIR` or the environment variable `SABRE_DIR` (the directory holding
`src/sabre.py` and `example/`); without one the script says so and exits.

Both sides get the same network trace (Sabre's JSON: periods of `duration_ms`,
`bandwidth_kbps`, `latency_ms`, looped when the video outlasts it) and the same ladder (Sabre's
`example/mmsys18/bbb.json`: 10 rungs, 199 segments of 3 s). Sabre runs its own session
(`sabre.py -v`, whose per-segment lines give the rung of every segment). aqmlab's side is a
replay harness (`replay` below) that moves the player through the same trace the way Sabre's
network model does (a download takes one latency, then its bits at the period's bandwidth;
the buffer drains one second of media per second; a segment is requested once it fits under
the maximum buffer) and asks aqmlab's own decision code (`aqmlab._core.abr_choose`, the
`app::abr` algorithms of aqmlab-model) for each segment's rung. Agreement is the share of
segments fetched at the same rung.

Each comparison is run in steps: Sabre's and aqmlab's defaults first, then one documented
difference removed at a time (a Sabre flag, a rule of Sabre's switched off by subclassing it in
a module this script writes, or the harness measuring throughput as Sabre does), so that every
step's change in agreement is the effect of that one difference.

    SABRE_DIR=/path/to/sabre python benches/sabre_check.py            # the table in docs/video.md
    python benches/sabre_check.py --sabre /path/to/sabre --markdown
    python benches/sabre_check.py --bolae-stall-rule --markdown       # BOLA-E's stall rule row
    python benches/sabre_check.py --only BOLA-O --markdown            # one section

BOLA-E keeps state between decisions, so its side is aqmlab's whole client (`replay_client`,
`_core.AbrClient`) rather than `abr_choose`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

MAX_BUFFER_S = 25.0  # Sabre's default `--max-buffer`; aqmlab's BOLA target follows it.

#: The Sabre example traces compared (paths inside the checkout), beside two synthetic ones.
SABRE_TRACES = {
    "3G (3Glogs 2010-09-13)": "example/mmsys18/3Glogs/report.2010-09-13_1003CEST.json",
    "4G (4Glogs bicycle 0001)": "example/mmsys18/4Glogs/report_bicycle_0001.json",
    "FCC HD (hd_fs 0000)": "example/mmsys18/hd_fs/trace0000.json",
}
MANIFEST = "example/mmsys18/bbb.json"

#: Synthetic traces: a constant 4 Mbit/s, and steps 6 -> 1.5 -> 4 Mbit/s of 60 s each; 20 ms
#: latency. Rates are away from 0.9 x any rung of bbb.json, so no decision is a float tie.
SYNTHETIC_TRACES = {
    "constant 4 Mbit/s": [{"duration_ms": 60000, "bandwidth_kbps": 4000, "latency_ms": 20}],
    "steps 6/1.5/4 Mbit/s": [{"duration_ms": 60000, "bandwidth_kbps": b, "latency_ms": 20}
                             for b in (6000, 1500, 4000)],
}

#: A Sabre ABR module (loaded by `sabre.py -a FILE.py`, class named as the file) that keeps
#: Sabre's BOLA and only drops what BOLA-BASIC lacks: the throughput cap on up-switches
#: (BOLA-U) and the startup/end-of-video shrinking of the buffer target. Our code, not Sabre's.
BUFFER_RULE_ONLY = '''import __main__

class BolaBufferRuleOnly(__main__.Bola):
    def get_quality_delay(self, segment_index):
        return (self.quality_from_buffer(), 0)
'''


#: A Sabre ABR module that keeps Sabre's BOLA-E (`BolaEnh`) and changes one thing: after a
#: download during which playback stalled, the placeholder is not raised to the fetched rung's
#: lower level. Sabre's own comment says it does not want that raise when rebuffering, but its
#: test (`level > 0`, after the new segment is in the buffer) is always true. A stall is told
#: from the buffer at the request (at the decision, less BOLA-E's own pause) being shorter than
#: the download. Our code, not Sabre's.
BOLAE_NO_RAISE_AFTER_STALL = '''import __main__

class BolaEnhNoRaiseAfterStall(__main__.BolaEnh):
    def get_quality_delay(self, segment_index):
        quality, delay = super().get_quality_delay(segment_index)
        self.at_request = __main__.get_buffer_level() - delay
        return quality, delay

    def report_download(self, metrics, is_replacment):
        before = self.placeholder
        super().report_download(metrics, is_replacment)
        at_request = getattr(self, "at_request", None)
        if at_request is not None and metrics.abandon_to_quality is None and at_request < metrics.time:
            level_was = __main__.get_buffer_level() + metrics.time
            cap = max(0, self.max_buffer_for_quality(metrics.quality) - level_was)
            self.placeholder = min(self.placeholder, before, cap)
'''

#: The Sabre modules a step may name, by the placeholder standing for the module's path.
SABRE_MODULES = {"{rule}": ("BolaBufferRuleOnly.py", BUFFER_RULE_ONLY),
                 "{bolae_no_raise}": ("BolaEnhNoRaiseAfterStall.py", BOLAE_NO_RAISE_AFTER_STALL)}


@dataclass
class Period:
    duration_ms: float
    bandwidth_kbps: float
    latency_ms: float


@dataclass
class TraceNetwork:
    """A looped piecewise-constant trace, advanced as Sabre's network model advances its own
    (`NetworkModel.do_latency_delay`, `do_download`, `delay`): times in ms, sizes in bits."""

    periods: list[Period]
    index: int = 0
    left_ms: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.periods or any(p.duration_ms <= 0 or p.bandwidth_kbps <= 0 for p in self.periods):
            raise ValueError("trace: every period needs duration_ms > 0 and bandwidth_kbps > 0")
        self.left_ms = self.periods[0].duration_ms

    def _next(self) -> None:
        self.index = (self.index + 1) % len(self.periods)
        self.left_ms = self.periods[self.index].duration_ms

    def delay(self, ms: float) -> None:
        while ms > self.left_ms:
            ms -= self.left_ms
            self._next()
        self.left_ms -= ms

    def latency(self) -> float:
        """One latency, which may run over several periods (each with its own latency)."""
        units, total = 1.0, 0.0
        while units > 0:
            lat = self.periods[self.index].latency_ms
            if units * lat <= self.left_ms:
                total += units * lat
                self.left_ms -= units * lat
                units = 0
            else:
                total += self.left_ms
                units -= self.left_ms / lat
                self._next()
        return total

    def transfer(self, bits: float) -> float:
        total = 0.0
        while bits > 0:
            bw = self.periods[self.index].bandwidth_kbps  # bits per ms
            if bits <= self.left_ms * bw:
                total += bits / bw
                self.left_ms -= bits / bw
                bits = 0
            else:
                total += self.left_ms
                bits -= self.left_ms * bw
                self._next()
        return total


def ladder_json(manifest: dict) -> str:
    """aqmlab's ladder from a Sabre manifest (bits -> bytes rounded up; the replay itself
    downloads the manifest's exact bits, as Sabre does)."""
    sizes = manifest["segment_sizes_bits"]
    rungs = len(manifest["bitrates_kbps"])
    return json.dumps({
        "segment_duration_ns": int(manifest["segment_duration_ms"]) * 1_000_000,
        "bitrates_bps": [int(b) * 1000 for b in manifest["bitrates_kbps"]],
        "sizes_bytes": [[-(-int(seg[r]) // 8) for seg in sizes] for r in range(rungs)],
    })


def abr_params(algorithm: str, max_buffer_s: float = MAX_BUFFER_S) -> dict:
    """aqmlab's defaults (`AbrParams::defaults`), written out: the throughput rule's 0.9 and 4
    segments, BOLA's gamma p = 5 and target = the maximum buffer (BOLA-E: the larger of it and
    10 s + 2 s per rung, 30 s for bbb.json's 10 rungs, as Sabre's `bolae`)."""
    return {"algorithm": algorithm, "safety_factor": 0.9, "throughput_window": 4,
            "bba_reservoir_s": 90 / 240 * max_buffer_s, "bba_cushion_s": 126 / 240 * max_buffer_s,
            "bola_gamma_p": 5.0, "bola_buffer_target_s": max_buffer_s, "mpc_horizon": 5}


def replay(manifest: dict, trace: list[dict], params: dict, *, max_buffer_s: float = MAX_BUFFER_S,
           throughput_excludes_latency: bool = False) -> list[int]:
    """aqmlab's rung for every segment of `manifest` replayed over `trace`.

    Throughput of a segment is its bits over the time from request to last byte, as aqmlab's
    client measures it (docs/video.md, "The client"); `throughput_excludes_latency` measures it
    over the transfer alone, after the first byte, as Sabre does."""
    from aqmlab import _core

    seg_ms = float(manifest["segment_duration_ms"])
    sizes = manifest["segment_sizes_bits"]
    net = TraceNetwork([Period(float(p["duration_ms"]), float(p["bandwidth_kbps"]), float(p["latency_ms"]))
                        for p in trace])
    ladder, pj = ladder_json(manifest), json.dumps(params)
    max_ms = max_buffer_s * 1000
    buffer_ms, last, tputs, rungs = 0.0, None, [], []
    for k in range(len(sizes)):
        room = buffer_ms + seg_ms - max_ms
        if k > 0 and room > 0:  # wait for room; only a playing buffer drains (playback began)
            net.delay(room)
            buffer_ms -= room
        rung = _core.abr_choose(pj, ladder, k, buffer_ms / 1000, last, tputs, [])
        bits = float(sizes[k][rung])
        first_byte = net.latency()
        total = first_byte + net.transfer(bits)
        if k > 0:
            buffer_ms = max(0.0, buffer_ms - total)
        buffer_ms += seg_ms
        measured_ms = total - first_byte if throughput_excludes_latency else total
        tputs.append(bits / measured_ms * 1000)
        last = rung
        rungs.append(rung)
    return rungs


#: TCP settings for the client's configuration; the replay has no TCP, so they are unused.
_TCP = {"mss": 1448, "initial_cwnd_segments": 10, "initial_rto_ns": 1_000_000_000, "min_rto_ns": 200_000_000,
        "max_rto_ns": 60_000_000_000, "clock_granularity_ns": 1_000_000, "delayed_ack": False,
        "delayed_ack_timeout_ns": 40_000_000, "rwnd": 4_000_000, "ecn": False}


def replay_client(manifest: dict, trace: list[dict], params: dict, *,
                  max_buffer_s: float = MAX_BUFFER_S) -> list[int]:
    """aqmlab's rung for every segment, from aqmlab's whole client (`_core.AbrClient`, the
    simulator's own `app::abr::client::Client`: decisions, the algorithm's state between them,
    the playback buffer, waits for room and BOLA-E's pauses), moved through `trace` as Sabre's
    network model moves (`TraceNetwork`). For BOLA-E, which keeps state between decisions
    (`abr_choose` refuses it). The client measures a segment's throughput from request to last
    byte, as in `replay`; playback starts and resumes after one segment, as in Sabre."""
    from aqmlab import _core

    seg_ns = int(manifest["segment_duration_ms"]) * 1_000_000
    sizes = manifest["segment_sizes_bits"]
    net = TraceNetwork([Period(float(p["duration_ms"]), float(p["bandwidth_kbps"]), float(p["latency_ms"]))
                        for p in trace])
    cfg = {"abr": params, "ladder": json.loads(ladder_json(manifest)), "max_buffer_ns": round(max_buffer_s * 1e9),
           "startup_ns": seg_ns, "request_size": 300, "request_timeout_ns": 1_000_000_000, "tcp": _TCP}
    client = _core.AbrClient(json.dumps(cfg), 0)
    now_ms, rungs = 0.0, []
    while True:
        step = client.next(round(now_ms * 1e6))
        if step[0] == "done":
            return rungs
        if step[0] == "wait":
            net.delay(step[1] / 1e6)
            now_ms += step[1] / 1e6
            continue
        if step[0] != "fetch":
            raise RuntimeError(f"AbrClient.next: {step}")
        _, segment, rung, _size = step
        if segment != len(rungs):
            raise RuntimeError(f"AbrClient fetched segment {segment} out of order")
        first_byte = net.latency()
        now_ms += first_byte + net.transfer(float(sizes[segment][rung]))
        client.complete(round(now_ms * 1e6), 1)
        rungs.append(rung)


_SEGMENT_LINE = re.compile(r"^\[\d+-\d+\]\s+(\d+): q=(\d+) ")


def parse_sabre_verbose(text: str) -> list[int]:
    """Each segment's rung from `sabre.py -v` output: its `[t0-t1]  index: q=rung ...` lines,
    the last one that was not abandoned (an abandoned download is fetched again)."""
    rungs: dict[int, int] = {}
    for line in text.splitlines():
        m = _SEGMENT_LINE.match(line)
        if m and "ABANDONED" not in line:
            rungs[int(m.group(1))] = int(m.group(2))
    if sorted(rungs) != list(range(len(rungs))):
        raise ValueError("sabre output: segment indices are not 0..n-1")
    return [rungs[i] for i in range(len(rungs))]


def run_sabre(sabre_dir: Path, manifest_path: Path, trace_path: Path, args: list[str]) -> list[int]:
    cmd = [sys.executable, str(sabre_dir / "src" / "sabre.py"), "-v", "-n", str(trace_path),
           "-m", str(manifest_path), "-b", str(MAX_BUFFER_S), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120)
    return parse_sabre_verbose(out.stdout)


def agreement(a: list[int], b: list[int]) -> float:
    if len(a) != len(b) or not a:
        raise ValueError(f"decision lists differ in length: {len(a)} vs {len(b)}")
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


@dataclass
class Step:
    label: str
    sabre_args: list[str]
    excludes_latency: bool = False
    zero_latency: bool = False
    #: Raise by 1 kbit/s every period whose bandwidth equals a rung's bitrate: without
    #: latency the throughput measured on it is that bitrate exactly on Sabre's side and a
    #: hair below it on aqmlab's (its client's clock counts whole ns), a tie the two break
    #: differently.
    off_rungs: bool = False


#: Per algorithm: aqmlab's name and the steps from both defaults to every known difference
#: removed. `{rule}` stands for the BUFFER_RULE_ONLY module's path.
STEPS: dict[str, tuple[str, list[Step]]] = {
    "BOLA": ("bola", [
        Step("Sabre defaults (`-a bola`)", ["-a", "bola"]),
        Step("+ no abandonment (`-noa`)", ["-a", "bola", "-noa"]),
        Step("+ fixed buffer target (`-ab`)", ["-a", "bola", "-noa", "-ab"]),
        Step("+ no throughput cap on up-switches (buffer rule only)", ["-a", "{rule}", "-noa"]),
    ]),
    "BOLA-E": ("bola_e", [
        Step("Sabre defaults (`-a bolae`)", ["-a", "bolae"]),
        Step("+ no abandonment (`-noa`)", ["-a", "bolae", "-noa"]),
        Step("+ mean of last 4 (`-ma sliding -ws 4`)", ["-a", "bolae", "-noa", "-ma", "sliding", "-ws", "4"]),
        Step("+ trace latency 0, no bandwidth on a rung's bitrate (6000 -> 6001 kbit/s)",
             ["-a", "bolae", "-noa", "-ma", "sliding", "-ws", "4"], zero_latency=True, off_rungs=True),
    ]),
    # BOLA-E with the throughput cap that minimizes oscillations (aqmlab's `bola_e_variant =
    # "bola_o"`, Sabre's `-ao`); its steps are BOLA-E's.
    "BOLA-O": ("bola_e", [
        Step("Sabre defaults (`-a bolae -ao`)", ["-a", "bolae", "-ao"]),
        Step("+ no abandonment (`-noa`)", ["-a", "bolae", "-ao", "-noa"]),
        Step("+ mean of last 4 (`-ma sliding -ws 4`)", ["-a", "bolae", "-ao", "-noa", "-ma", "sliding", "-ws", "4"]),
        Step("+ trace latency 0, no bandwidth on a rung's bitrate (6000 -> 6001 kbit/s)",
             ["-a", "bolae", "-ao", "-noa", "-ma", "sliding", "-ws", "4"], zero_latency=True, off_rungs=True),
    ]),
    "throughput rule": ("throughput", [
        Step("Sabre defaults (`-a throughput`)", ["-a", "throughput"]),
        Step("+ no abandonment (`-noa`)", ["-a", "throughput", "-noa"]),
        Step("+ no insufficient-buffer rule (`-noibr`)", ["-a", "throughput", "-noa", "-noibr"]),
        Step("+ mean of last 4 (`-ma sliding -ws 4`)",
             ["-a", "throughput", "-noa", "-noibr", "-ma", "sliding", "-ws", "4"]),
        Step("(+ aqmlab measures throughput after the first byte, latency kept)",
             ["-a", "throughput", "-noa", "-noibr", "-ma", "sliding", "-ws", "4"], excludes_latency=True),
        Step("+ trace latency 0 instead (no latency to treat differently)",
             ["-a", "throughput", "-noa", "-noibr", "-ma", "sliding", "-ws", "4"], zero_latency=True),
    ]),
}


#: Traces compared for one algorithm only (its table gets their columns): BOLA-E's
#: placeholder meets stalls here. 1 s at 4 Mbit/s, 20 s at 0.6, then 3 Mbit/s, 20 ms latency.
_STALLING = {"drop 4/0.6/3 Mbit/s (stalls)": [
    {"duration_ms": d, "bandwidth_kbps": b, "latency_ms": 20}
    for d, b in ((1000, 4000), (20000, 600), (30000, 3000))]}
EXTRA_TRACES: dict[str, dict[str, list[dict]]] = {"BOLA-E": _STALLING, "BOLA-O": _STALLING}

#: aqmlab's parameters beyond an algorithm's defaults, per table section.
PARAMS: dict[str, dict] = {"BOLA-O": {"bola_e_variant": "bola_o"}}


#: Not in the table: BOLA-E with Sabre's placeholder raise after a stalled download removed,
#: the one rule where aqmlab's BOLA-E differs from Sabre's on purpose (`--bolae-stall-rule`
#: prints this row: if it equals the "mean of last 4" row, the rule changed no decision).
BOLAE_STALL_RULE = Step("+ mean of last 4, no placeholder raise after a stall (Sabre module)",
                        ["-a", "{bolae_no_raise}", "-noa", "-ma", "sliding", "-ws", "4"])


def find_sabre(given: str | None) -> Path | None:
    d = given or os.environ.get("SABRE_DIR")
    if d and (Path(d) / "src" / "sabre.py").is_file():
        return Path(d)
    return None


def traces(sabre_dir: Path) -> dict[str, list[dict]]:
    out = {name: json.loads((sabre_dir / rel).read_text()) for name, rel in SABRE_TRACES.items()}
    out.update(SYNTHETIC_TRACES)
    return out


def compare(sabre_dir: Path, algorithm: str, step: Step, trace_name: str, trace: list[dict],
            work: Path, params: dict | None = None) -> tuple[float, int | None]:
    """Agreement of one step on one trace, and the first segment where the two differ;
    `params` are aqmlab's parameters beyond the algorithm's defaults."""
    manifest_path = sabre_dir / MANIFEST
    manifest = json.loads(manifest_path.read_text())
    if step.zero_latency:
        trace = [dict(p, latency_ms=0) for p in trace]
    if step.off_rungs:
        rungs = set(manifest["bitrates_kbps"])
        trace = [dict(p, bandwidth_kbps=p["bandwidth_kbps"] + 1) if p["bandwidth_kbps"] in rungs else p
                 for p in trace]
    trace_path = work / (re.sub(r"\W+", "_", trace_name) + ("_nolat" if step.zero_latency else "")
                         + ("_off" if step.off_rungs else "") + ".json")
    trace_path.write_text(json.dumps(trace))
    args = []
    for a in step.sabre_args:
        if a in SABRE_MODULES:
            name, source = SABRE_MODULES[a]
            (work / name).write_text(source)
            a = str(work / name)
        args.append(a)
    theirs = run_sabre(sabre_dir, manifest_path, trace_path, args)
    ours_params = {**abr_params(algorithm), **(params or {})}
    if algorithm == "bola_e":
        ours = replay_client(manifest, trace, ours_params)
    else:
        ours = replay(manifest, trace, ours_params, throughput_excludes_latency=step.excludes_latency)
    share = agreement(ours, theirs)
    first = next((i for i, (x, y) in enumerate(zip(ours, theirs, strict=True)) if x != y), None)
    return share, first


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--sabre", help="a Sabre checkout (default: $SABRE_DIR)")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--bolae-stall-rule", action="store_true",
                    help="only BOLA-E, with Sabre's placeholder raise after a stall removed")
    ap.add_argument("--only", metavar="ALGORITHM", help="one section of the table (its title, e.g. BOLA-O)")
    a = ap.parse_args(argv)
    sabre_dir = find_sabre(a.sabre)
    if sabre_dir is None:
        print("sabre_check: no Sabre checkout: give --sabre DIR or SABRE_DIR (a clone of "
              "https://github.com/UMass-LIDS/sabre, holding src/sabre.py); skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        header = None
        table = {"BOLA-E": ("bola_e", [BOLAE_STALL_RULE])} if a.bolae_stall_rule else STEPS
        if a.only is not None:
            if a.only not in table:
                print(f"sabre_check: --only {a.only!r}: one of {', '.join(table)}", file=sys.stderr)
                return 2
            table = {a.only: table[a.only]}
        for title, (algorithm, steps) in table.items():
            all_traces = {**traces(sabre_dir), **EXTRA_TRACES.get(title, {})}
            names = list(all_traces)
            if a.markdown and names != header:
                if header is not None:
                    print()
                print("| algorithm | step | " + " | ".join(names) + " |")
                print("| --- | --- | " + " | ".join("---:" for _ in names) + " |")
                header = names
            for step in steps:
                cells = []
                for name in names:
                    share, first = compare(sabre_dir, algorithm, step, name, all_traces[name], work,
                                           PARAMS.get(title))
                    cells.append(f"{100 * share:.1f} %" + ("" if first is None else f" (from {first})"))
                if a.markdown:
                    print(f"| {title} | {step.label} | " + " | ".join(cells) + " |")
                else:
                    print(f"{title:16} {step.label}")
                    for name, cell in zip(names, cells, strict=True):
                        print(f"    {name:28} {cell}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
