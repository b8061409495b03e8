"""Reproduction of Chung, Zhu and Claypool, "FairPlayer or FoulPlayer? Head to Head Performance
of RealPlayer Streaming Video Over UDP versus TCP" (WPI-CS-TR-02-17, 2002).

For every clip of the population (`head_to_head_model`) and every DSL-TBF bottleneck (600, 300,
150, 75 Kbps, 10 KB queue, 1600 B burst) one head-to-head run: a UDP and a TCP adaptive stream of
the clip start together on the same path (scenario `head-to-head/pair`). Then, as in section
III-C, each clip once over UDP and once over TCP alone through 35 Kbps with a 5 KB queue
(`head-to-head/media-scaling`), and (for Figure 15) the pair on an unconstrained 15 Mbit/s "LAN".
The analyses are `aqmlab.analysis.head_to_head`'s; their inputs are what the paper measured:

* a stream's packet series: its packets leaving the TBF towards the clients (the paper's tcpdump
  on the clients' hub), IP sizes;
* the run's "ping" RTT and loss: the paper pinged the server once a second. Ours: RTT = the
  path's base RTT + the time-average queueing delay of the TBF; loss = the share of 1 s pings
  lost, each lost with the probability a packet had of being lost (path loss, then a TBF drop)
  -- drawn per ping from the run's seed, so that, as in the paper, a low loss rate is often
  sampled as 0 (Section V-E's explanation of Table I's "unfriendly" TCP streams at 600 Kbps);
* the encoded level over time: the server's level sampled every 100 ms.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab.analysis import head_to_head as h2h
from aqmlab.metrics import ARRIVE, DEQUEUE, DROP
from aqmlab.reproduce import parallel_map, write_tables
from aqmlab.reproduce.head_to_head_model import Clip, population
from aqmlab.run import simulate
from aqmlab.scenario import BUILTIN_DIR, Scenario, read_scenario_file, validate
from aqmlab.scenario.overrides import apply_override

SOURCE = "Chung, Zhu, Claypool, WPI-CS-TR-02-17, 2002"
#: Section III-B: DSL-TBF token rates (paper).
BOTTLENECKS_BPS = (600_000, 300_000, 150_000, 75_000)
#: Section III-C, footnote 10: the media scaling runs (paper).
SCALING_BPS = 35_000
#: Section V-D, Figure 15: the campus LAN on a 15 Mbit/s link (paper).
LAN_BPS = 15_000_000
#: The paper's playlist after removing unavailable clips (section IV).
PAPER_CLIPS = 79
QUICK_CLIPS = 8
#: --quick caps clip lengths so that runs stay short but still reach the 100 s steady phase.
QUICK_CLIP_CAP_S = 140.0
#: Pings once a second (section III-B, paper).
PING_INTERVAL_S = 1.0
#: |normalized difference| within this counts as "shared equally" (choice, Figure 9's text).
EQUAL_SHARE_BAND = 0.05
#: Choice: simulated time beyond the clip, for a backlogged TCP stream to finish.
DURATION_FACTOR, DURATION_SLACK_S = 1.5, 30.0
#: Choice: the "ping" seed offset, so the ping draws do not share the simulator's streams.
PING_STREAM = 7_100_2002

# ---- the paper's published values ----------------------------------------------------------

#: Table I: non TCP-friendly flows, (UDP count, UDP %, TCP count, TCP %) per bottleneck.
TABLE1 = {75_000: (8, 12, 0, 0), 150_000: (7, 11, 0, 0), 300_000: (9, 14, 0, 0),
          600_000: (4, 6, 5, 8), "total": (28, 11, 5, 2)}
#: Figure 9 text: share of pairs (%) with equal share / UDP more / TCP more, None if not given.
FIG9 = {600_000: (40, 20, 30), 300_000: (None, 60, None), 150_000: (None, 70, None),
        75_000: (None, 70, None)}
#: Figure 6: the pair whose bandwidth over time is drawn (the population's first clip), 1 s bins.
FIGURE6_CLIP = 0
FIGURE6_BIN_S = 1.0
#: Figures 10 and 12: correlation of (TCP - UDP) with RTT and loss over all bottlenecks.
FIG10_R, FIG12_R = -0.13, -0.03


@dataclass(frozen=True)
class Job:
    kind: str            # "pair", "scaling" or "lan"
    clip: Clip
    bottleneck_bps: int
    seed: int
    transport: str = ""  # scaling runs: "udp" or "tcp"
    clip_cap_s: float = math.inf
    overrides: tuple[str, ...] = ()  # the user's --set, applied before the clip's own fields


#: Figure 2 draws the clip population's lengths, which no scenario field moves (`--set` may not
#: change a clip's length: VARIED).
SCENARIO_FREE_FIGURES = ("fig02.png",)

#: Fields each run sets from its clip and bottleneck (scenario_for), with what for: `--set` may
#: not change them.
VARIED = {
    "seed": "one simulator seed per run, derived from --seed",
    "duration": "the clip's length",
    "topology.bottleneck.qdisc.rate": "the bottleneck rates of Table I and Figure 9",
    "flows.*.sender_delay": "the clip's path RTT",
    "flows.*.path_loss": "the clip's path loss",
    "flows.*.app.levels": "the clip's encoding levels",
    "flows.*.app.clip": "the clip's length",
}


def scenarios() -> list[str]:
    """The built-in scenarios the runs start from (to validate overrides up front)."""
    return ["head-to-head/pair", "head-to-head/media-scaling"]


def run_seed(seed: int, job: Job) -> int:
    """One simulator seed per run, derived from the reproduction seed (deterministic)."""
    return (seed * 1_000_003 + job.clip.clip_id * 101 + job.bottleneck_bps // 1000) % 2**63


def scenario_for(job: Job) -> tuple[Scenario, dict[str, Any]]:
    """The scenario of one run: the built-in pair (or media scaling) file with this clip's
    levels, length, path and this run's bottleneck rate."""
    name = "media-scaling" if job.kind == "scaling" else "pair"
    data = copy.deepcopy(read_scenario_file(BUILTIN_DIR / "head-to-head" / f"{name}.toml"))
    for assignment in job.overrides:
        apply_override(data, assignment)
    clip = job.clip
    length = min(clip.length_s, job.clip_cap_s)
    data["seed"] = run_seed(job.seed, job)
    data["duration"] = f"{round(length * DURATION_FACTOR + DURATION_SLACK_S, 3)}s"
    data["topology"]["bottleneck"]["qdisc"]["rate"] = f"{job.bottleneck_bps}bps"
    # Base RTT = 2 (sender + receiver delay) + bottleneck and reverse delays (1 ms each).
    sender_delay_ms = max(clip.base_rtt_s * 1e3 / 2 - 2.0, 0.1)
    if job.kind == "scaling":
        data["flows"] = [g for g in data["flows"] if g["name"] == job.transport]
    for g in data["flows"]:
        g["sender_delay"] = f"{sender_delay_ms:.3f}ms"
        g["path_loss"] = clip.path_loss
        g["app"]["levels"] = [f"{r}bps" for r in clip.levels_bps]
        g["app"]["clip"] = f"{length}s"
    return validate(data, f"head-to-head/{name} clip {clip.clip_id}"), data


def _series(deq: pd.DataFrame, flow: int) -> pd.DataFrame:
    d = deq[deq["flow"] == flow]
    return pd.DataFrame({"t_s": d["t_ns"].to_numpy() / 1e9, "bytes": d["size"].to_numpy()})


def _levels(samples: pd.DataFrame, flow: int, levels_bps: tuple[int, ...], end_s: float) -> pd.Series:
    """The encoded rate of a stream every 100 ms while it streams (to its last packet)."""
    s = samples[(samples["flow"] == flow) & (samples["t_ns"] <= end_s * 1e9)]
    rates = np.asarray(levels_bps, dtype=float)[s["app_level"].to_numpy()]
    return pd.Series(rates, index=pd.Index(s["t_ns"].to_numpy() / 1e9, name="t_s"), name="rate_bps")


def ping_stats(tables: dict[str, pd.DataFrame], job: Job, end_s: float) -> tuple[float, float]:
    """(RTT s, loss fraction) as the paper's 1 s pings would have seen them (module docstring)."""
    sc_rate = job.bottleneck_bps
    q = tables["queue"]
    q = q[q["t_ns"] <= end_s * 1e9]
    queue_delay = float(q["qlen_bytes"].mean()) * 8.0 / sc_rate if len(q) else 0.0
    rtt = float(tables["flows"]["base_rtt_ns"].iloc[0]) / 1e9 + queue_delay
    pk = tables["packets"]
    arrived = int((pk["event"] == ARRIVE).sum())
    dropped = int((pk["event"] == DROP).sum())
    p_tbf = dropped / arrived if arrived else 0.0
    p = 1.0 - (1.0 - job.clip.path_loss) * (1.0 - p_tbf)
    rng = np.random.default_rng([PING_STREAM, run_seed(job.seed, job)])
    n = max(1, int(end_s / PING_INTERVAL_S))
    return rtt, float(rng.binomial(n, p)) / n


def run_job(job: Job) -> dict[str, Any]:
    """One simulation; returns the measurements the tables and figures need."""
    sc, _ = scenario_for(job)
    res = simulate(sc, progress=False)
    return measure(job, res.tables)


def measure(job: Job, tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    flows = tables["flows"]
    pk = tables["packets"]
    deq = pk[pk["event"] == DEQUEUE]
    ids = dict(zip(flows["group_name"], flows["flow"], strict=True))
    out: dict[str, Any] = {"kind": job.kind, "clip": job.clip.clip_id, "bottleneck_bps": job.bottleneck_bps,
                           "seed": job.seed, "transport": job.transport}
    if job.kind == "scaling":
        f = ids[job.transport]
        series = _series(deq, f)
        end = float(series["t_s"].max()) if len(series) else 0.0
        lv = _levels(tables["flow_samples"], f, job.clip.levels_bps, end)
        out.update({
            "scale_changes": h2h.scale_changes(lv.to_numpy()),
            "levels_seen": h2h.scale_levels(lv.to_numpy()),
            "time_to_adapt_s": h2h.time_to_adapt(lv, job.bottleneck_bps),
            "end_s": end,
            "level_trace": {"t_s": lv.index.to_numpy()[::10].tolist(), "rate_bps": lv.to_numpy()[::10].tolist()},
        })
        return out
    udp, tcp = _series(deq, ids["udp"]), _series(deq, ids["tcp"])
    end = float(max(udp["t_s"].max(), tcp["t_s"].max()))
    rtt, loss = ping_stats(tables, job, end)
    s = h2h.pair_summary(udp, tcp, job.bottleneck_bps, rtt, loss)
    for name in ("udp", "tcp"):
        s[f"{name}_smoothness_ratios"] = np.asarray(s[f"{name}_smoothness_ratios"]).tolist()
    out["pair"] = s
    if job.clip.clip_id == FIGURE6_CLIP:
        # Figure 6: one pair's bandwidth over time (kept for one clip only, to stay small).
        out["series"] = {name: h2h.bandwidth_series(df, FIGURE6_BIN_S, end).tolist()
                         for name, df in (("udp", udp), ("tcp", tcp))}
    return out


def jobs_for(clips: list[Clip], seed: int, cap_s: float, overrides: tuple[str, ...] = ()) -> list[Job]:
    jobs = [Job("pair", c, bw, seed, clip_cap_s=cap_s, overrides=overrides) for bw in BOTTLENECKS_BPS for c in clips]
    jobs += [Job("scaling", c, SCALING_BPS, seed, t, cap_s, overrides) for t in ("udp", "tcp") for c in clips]
    jobs += [Job("lan", c, LAN_BPS, seed, clip_cap_s=cap_s, overrides=overrides) for c in clips]
    return jobs


def _pairs(results: list[dict], kind: str = "pair") -> list[dict]:
    return [r["pair"] for r in results if r["kind"] == kind]


# ---- tables: ours beside the published values ----------------------------------------------

def table1(pop: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for bw in sorted(pop["by_bottleneck"], reverse=False):
        t = pop["by_bottleneck"][bw]["table1"]
        rows.append(_table1_row(f"{int(bw) // 1000} Kbps", t, TABLE1.get(int(bw))))
    rows.append(_table1_row("Total", pop["all"]["table1"], TABLE1["total"]))
    return pd.DataFrame(rows)


def _table1_row(label: str, t: dict, pub: tuple | None) -> dict[str, Any]:
    def cell(n: int, pct: float) -> str:
        return f"{n} ({pct:.0f}%)" if not math.isnan(pct) else f"{n} (-)"
    return {
        "bottleneck": label,
        "evaluated": t["n_evaluated"],
        "unfriendly_udp": cell(t["unfriendly_udp"], t["unfriendly_udp_pct"]),
        "published_udp": f"{pub[0]} ({pub[1]}%)" if pub else "-",
        "unfriendly_tcp": cell(t["unfriendly_tcp"], t["unfriendly_tcp_pct"]),
        "published_tcp": f"{pub[2]} ({pub[3]}%)" if pub else "-",
    }


def share_table(pairs: list[dict]) -> pd.DataFrame:
    """Figure 9 in numbers: per bottleneck, % of pairs sharing equally, UDP more, TCP more."""
    rows = []
    for bw in BOTTLENECKS_BPS:
        d = np.array([p["normalized_difference"] for p in pairs if p["bottleneck_bps"] == bw])
        if d.size == 0:
            continue
        pub = FIG9[bw]
        rows.append({
            "bottleneck": f"{bw // 1000} Kbps", "pairs": int(d.size),
            "median_diff": round(float(np.median(d)), 3),
            "equal_pct": round(100 * float(np.mean(np.abs(d) <= EQUAL_SHARE_BAND)), 1),
            "published_equal_pct": _pub(pub[0]),
            "udp_more_pct": round(100 * float(np.mean(d < -EQUAL_SHARE_BAND)), 1),
            "published_udp_more_pct": _pub(pub[1]),
            "tcp_more_pct": round(100 * float(np.mean(d > EQUAL_SHARE_BAND)), 1),
            "published_tcp_more_pct": _pub(pub[2]),
        })
    return pd.DataFrame(rows)


def _pub(v: Any) -> str:
    return "-" if v is None else f"~{v}"


def correlation_table(pop: dict[str, Any]) -> pd.DataFrame:
    """Figures 10-13: r and slope of (TCP - UDP) against RTT and against loss."""
    def r(fit):
        return "-" if fit is None or math.isnan(fit.r) else f"{fit.r:.2f}"
    rows = [{"bottleneck": "all", "r_rtt": r(pop["all"]["fit_difference_vs_rtt"]),
             "published_r_rtt": FIG10_R, "r_loss": r(pop["all"]["fit_difference_vs_loss"]),
             "published_r_loss": FIG12_R}]
    for bw, g in sorted(pop["by_bottleneck"].items(), reverse=True):
        rows.append({"bottleneck": f"{int(bw) // 1000} Kbps", "r_rtt": r(g["fit_difference_vs_rtt"]),
                     "published_r_rtt": "slight" if bw == 600_000 else "modest, < 0",
                     "r_loss": r(g["fit_difference_vs_loss"]),
                     "published_r_loss": "none" if bw == 600_000 else "moderate, < 0"})
    return pd.DataFrame(rows)


def buffering_table(pairs: list[dict], lan: list[dict]) -> pd.DataFrame:
    """Figures 14 and 15: buffering rate / steady playout rate (clips longer than 100 s)."""
    rows = []
    for label, ps, pub_udp, pub_tcp in (("DSL-TBF (all)", pairs, "up to 6 (low-rate clips)", "-"),
                                        ("LAN 15 Mbit/s", lan, "steps at multiples of level rates", "~2")):
        for name, pub in (("udp", pub_udp), ("tcp", pub_tcp)):
            v = np.array([p[f"{name}_buffering_ratio"] for p in ps], dtype=float)
            v = v[np.isfinite(v)]
            rows.append({"runs": label, "transport": name.upper(), "clips": int(v.size),
                         "median_ratio": round(float(np.median(v)), 2) if v.size else "-",
                         "max_ratio": round(float(np.max(v)), 2) if v.size else "-", "published": pub})
    return pd.DataFrame(rows)


def scaling_table(results: list[dict], clips: list[Clip]) -> pd.DataFrame:
    """Figures 16, 19 and 20 in numbers."""
    n_levels = np.array([len(c.levels_bps) for c in clips])
    rows = [
        {"quantity": "clips with one level (%) [Fig. 16]", "UDP": round(100 * float(np.mean(n_levels == 1)), 1),
         "TCP": "", "published": "~35"},
        {"quantity": "clips with more than 4 levels (%) [Fig. 16]", "UDP": round(100 * float(np.mean(n_levels > 4)), 1),
         "TCP": "", "published": "< 50"},
    ]
    sc = {t: [r for r in results if r["kind"] == "scaling" and r["transport"] == t] for t in ("udp", "tcp")}
    if sc["udp"] and sc["tcp"]:
        def pct(t, cond):
            return round(100 * float(np.mean([cond(r) for r in sc[t]])), 1)

        def q80(t):
            v = np.sort([r["time_to_adapt_s"] for r in sc[t]])
            x = v[int(math.ceil(0.8 * len(v))) - 1]
            return "never" if math.isinf(x) else round(float(x), 1)
        rows += [
            {"quantity": "streams with no scale change (%) [Fig. 19]",
             "UDP": pct("udp", lambda r: r["scale_changes"] == 0),
             "TCP": pct("tcp", lambda r: r["scale_changes"] == 0), "published": "UDP ~35, TCP ~55"},
            {"quantity": "mean scale changes per stream [Fig. 19]",
             "UDP": round(float(np.mean([r["scale_changes"] for r in sc["udp"]])), 2),
             "TCP": round(float(np.mean([r["scale_changes"] for r in sc["tcp"]])), 2), "published": "UDP > TCP"},
            {"quantity": "below 35 Kbps from the start (%) [Fig. 20]",
             "UDP": pct("udp", lambda r: r["time_to_adapt_s"] <= 0.1),
             "TCP": pct("tcp", lambda r: r["time_to_adapt_s"] <= 0.1), "published": "~15"},
            {"quantity": "adapted within 10 s (%) [Fig. 20]", "UDP": pct("udp", lambda r: r["time_to_adapt_s"] <= 10),
             "TCP": pct("tcp", lambda r: r["time_to_adapt_s"] <= 10), "published": "UDP ~80"},
            {"quantity": "80th percentile time to adapt (s) [Fig. 20]", "UDP": q80("udp"), "TCP": q80("tcp"),
             "published": "UDP <= 10, TCP > 25"},
        ]
    return pd.DataFrame(rows)


def smoothness_table(pop: dict[str, Any]) -> pd.DataFrame:
    """Figure 21 in numbers: share of consecutive 500 ms ratios within [0.9, 1.1]."""
    rows = []
    for bw, g in sorted(pop["by_bottleneck"].items(), reverse=True):
        sm = g["smoothness"]
        rows.append({"bottleneck": f"{int(bw) // 1000} Kbps",
                     "udp_within_10pct": round(sm["udp"]["fraction_within"], 3),
                     "tcp_within_10pct": round(sm["tcp"]["fraction_within"], 3),
                     "published": "both smooth" if bw == 600_000 else "UDP smoother than TCP"})
    return pd.DataFrame(rows)


TITLES = {
    "table1": "Table I: number (and percent) of non TCP-friendly flows",
    "fig9_shares": "Figure 9: head-to-head share of the bottleneck, (TCP - UDP) / bottleneck",
    "fig10_13_correlation": "Figures 10-13: correlation of (TCP - UDP) with RTT and loss",
    "fig14_15_buffering": "Figures 14-15: buffering rate / steady playout rate",
    "fig16_20_scaling": "Figures 16, 19, 20: media scaling (35 Kbps, 5 KB queue)",
    "fig21_smoothness": "Figure 21: smoothness, share of 500 ms ratios within [0.9, 1.1]",
}


def reproduce(out_dir: Path, seed: int = 1, clips: int | None = None, quick: bool = False,
              workers: int | None = None, overrides: tuple[str, ...] = ()) -> dict[str, pd.DataFrame]:
    """Runs everything and writes tables, figures, report.md and measurements.json into
    `out_dir` (a fresh directory: the caller makes it atomic)."""
    n = clips or (QUICK_CLIPS if quick else PAPER_CLIPS)
    cap = QUICK_CLIP_CAP_S if quick else math.inf
    pop_clips = population(n, seed)
    results = parallel_map(run_job, jobs_for(pop_clips, seed, cap, tuple(overrides)), workers)
    tables, pop = summarize(results, pop_clips)
    write_tables(tables, out_dir / "tables")
    from aqmlab.reproduce import head_to_head_figures

    head_to_head_figures.draw_all(results, pop, pop_clips, out_dir / "figures")
    write_report(tables, seed, n, quick, out_dir / "report.md")
    (out_dir / "clips.json").write_text(json.dumps([asdict(c) for c in pop_clips], indent=1) + "\n")
    (out_dir / "measurements.json").write_text(json.dumps(results, sort_keys=True, default=_json) + "\n")
    return tables


def _json(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, pd.DataFrame):
        return o.to_dict(orient="list")
    if isinstance(o, tuple):
        return list(o)
    return str(o)


def summarize(results: list[dict], clips: list[Clip]) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    pairs = _pairs(results)
    pop = h2h.population_summary(pairs)
    tables = {
        "table1": table1(pop),
        "fig9_shares": share_table(pairs),
        "fig10_13_correlation": correlation_table(pop),
        "fig14_15_buffering": buffering_table(pairs, _pairs(results, "lan")),
        "fig16_20_scaling": scaling_table(results, clips),
        "fig21_smoothness": smoothness_table(pop),
    }
    return tables, pop



def write_report(tables: dict[str, pd.DataFrame], seed: int, n: int, quick: bool, path: Path) -> None:
    lines = [f"# Head-to-head UDP vs TCP streaming ({SOURCE})", "",
             f"Seed {seed}, {n} clips{f' (quick: clips capped at {int(QUICK_CLIP_CAP_S)} s)' if quick else ''}. "
             "Published values are the paper's text (its figures' plotted values are not available); "
             "model and choices: scenarios/head-to-head/*.toml, aqmlab/reproduce/head_to_head_model.py "
             "and docs/reproductions/head-to-head.md.", ""]
    for name, df in tables.items():
        lines += [f"## {TITLES[name]}", "", df.to_markdown(index=False), ""]
    lines += ["Figures: figures/fig02.png ... fig21.png (one per paper figure, 2-4 and 6-21; Figure 6 "
              "shows the population's first clip at 600 and 75 Kbps).", ""]
    path.write_text("\n".join(lines))
