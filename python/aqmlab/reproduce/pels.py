"""Reproduction of Kang, Zhang, Dai and Loguinov, "Multi-layer Active Queue Management and
Congestion Control for Scalable Video Streaming" (ICDCS 2004): PELS.

Section 3 and 4 analysis from :mod:`aqmlab.models.pels` (Table 1 with the model beside a
Monte-Carlo simulation, Figures 2 and 5, the utility bound of eq. 6) and section 6 simulations
from ``scenarios/pels/`` (Figure 7: gamma and red loss; Figures 8 and 9 left: green, yellow and
red delays; Figure 9 right: MKC convergence; the best-effort comparison of section 6.5 and the
quality substitution of Figure 10, see :mod:`aqmlab.quality`). Writes tables as CSV and
Markdown (published beside ours), figures as PNG, the figures' data as CSV, and report.md.

``quick`` shortens the simulations (the delay study to its first three waves) for CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from aqmlab import _core
from aqmlab.analysis import pels as pa
from aqmlab.models import pels as model
from aqmlab.reproduce import parallel_map, write_tables
from aqmlab.run import simulate
from aqmlab.scenario import Scenario, apply_override, read_scenario_file, resolve_path, validate
from aqmlab.stats import NON_NEGATIVE, PERCENT, UNIT, ci_text

SOURCE = "Kang, Zhang, Dai and Loguinov, ICDCS 2004"
SIMULATIONS = ("convergence", "gamma-7", "gamma-14", "delay", "best-effort-7", "best-effort-14", "parking-lot")
#: Run lengths with --quick (the scenario files' own durations otherwise).
QUICK_DURATION = {"convergence": "40s", "gamma-7": "40s", "gamma-14": "40s", "delay": "110s",
                  "best-effort-7": "40s", "best-effort-14": "40s", "parking-lot": "60s"}
#: Measurement windows (s): after the start-up transient, and ending DRAIN_S before the run's
#: end, so that every counted packet had time to arrive (red packets wait up to ~4 s).
STEADY_FROM_S = 10.0
DRAIN_S = 5.0
P_THR = 0.75

# ---- published values (the paper's text) ---------------------------------------------------
PUBLISHED = {
    "loss_7": 0.07, "loss_14": 0.14, "red_loss": 0.75, "yellow_loss": 0.0,
    "green_delay_ms": 16.0, "yellow_delay_ms": 25.0, "red_delay_ms": 400.0,
    "fair_rate_bps": 1e6, "fairness_after_s": 13.0,
}


def measured_end(run: dict[str, pd.DataFrame]) -> float:
    """End (s of send time) of a run's measurement window."""
    return float(run["duration_s"]["s"].iloc[0]) - DRAIN_S


#: Fields the reproduction varies across its scenario files, with what for: `--set` may not
#: change them. (`duration` is the runs' own length, which a user may shorten: load_pels leaves
#: out the groups that would start after the end.)
VARIED = {
    "flows.pels.count": "the loss levels: 4 flows near 7 %, 8 near 14 %",
    "topology.bottleneck.qdisc.qdisc": "PELS's colour queues against best effort's",
}


def scenarios() -> list[str]:
    return [f"pels/{s}" for s in SIMULATIONS]


def load_pels(name: str, overrides: list[str] | tuple[str, ...] = (), seed: int | None = None) -> Scenario:
    """A ``scenarios/pels`` scenario with overrides; flow groups that would start after a
    shortened run's end are left out (they would never send)."""
    path = resolve_path(f"pels/{name}")
    data = read_scenario_file(path)
    for assignment in overrides:
        apply_override(data, assignment)
    if seed is not None:
        data["seed"] = seed
    end = _core.parse_time(str(data["duration"]))
    data["flows"] = [g for g in data["flows"] if _core.parse_time(str(g.get("start", "0s"))) < end]
    return validate(data, str(path))


def run_simulation(job: tuple[str, tuple[str, ...], int, bool]) -> dict[str, pd.DataFrame]:
    name, overrides, seed, quick = job
    over = ([f"duration={QUICK_DURATION[name]}"] if quick else []) + list(overrides)
    sc = load_pels(name, over, seed)
    t = simulate(sc, progress=False).tables
    out = {k: t[k] for k in ("pels_frames", "pels_control", "pels_packets", "flows")}
    out["duration_s"] = pd.DataFrame({"s": [sc.duration / 1e9]})
    app = next(g.app for g in sc.flows if g.app.kind == "pels")
    out["pels_app"] = pd.DataFrame({"fps": [app.fps], "payload_bytes": [app.packet_size - _core.UDP_IP_HEADER_BYTES]})
    out["mkc"] = mkc_table(sc)
    return out


def mkc_table(sc: Scenario) -> pd.DataFrame:
    """What eq. (10) needs of a run, per hop: C (below) and the PELS flows' MKC gains."""
    app = next(g.app for g in sc.flows if g.app.kind == "pels")
    caps = pels_capacities(sc)
    flows = sum(g.count for g in sc.flows if g.app.kind == "pels")
    return pd.DataFrame({"hop": range(len(caps)), "capacity_bps": caps, "alpha_bps": float(app.alpha),
                         "beta": app.beta, "pels_flows": flows})


def pels_capacities(sc: Scenario) -> list[float]:
    """Per hop (the bottleneck, then each chain link), the PELS capacity C = share x link rate
    of its `pels_feedback` router (eq. 11), NaN where the hop has none: eq. (10)'s stationary
    rate C/N + alpha/beta is computed from these, so that `--set` on a rate, a share or MKC's
    gains moves the notes with the run."""
    links = [sc.topology.bottleneck] + [hop.forward for hop in sc.topology.chain]
    return [float(link.qdisc.share * link.rate) if link.qdisc.kind == "pels_feedback" and link.rate else float("nan")
            for link in links]


def stationary_rate(run: dict[str, pd.DataFrame], flows: int, hop: int = 0) -> float:
    """MKC's stationary rate of eq. (10), C/N + alpha/beta, of `flows` flows at `hop` (b/s)."""
    mkc = run["mkc"]
    return float(mkc["capacity_bps"].iloc[hop] / flows + mkc["alpha_bps"].iloc[hop] / mkc["beta"].iloc[hop])


def stationary_loss(run: dict[str, pd.DataFrame], hop: int = 0) -> float:
    """The PELS queue's stationary loss that eq. (10) implies for all of the run's PELS flows
    at `hop`: N r* = C + N alpha/beta offered for C served, so p = (N alpha/beta) / (C + N alpha/beta)."""
    mkc = run["mkc"]
    excess = mkc["pels_flows"].iloc[hop] * mkc["alpha_bps"].iloc[hop] / mkc["beta"].iloc[hop]
    return float(excess / (mkc["capacity_bps"].iloc[hop] + excess))


def loss_level_note(run: dict[str, pd.DataFrame], published_pct: int) -> str:
    """The note beside a gamma run's loss: the scenario chose N so that eq. (10) gives the
    paper's loss level; under `--set` (another rate, share, N or gain) that is no longer true,
    and the note says what eq. (10) gives for the run as it ran."""
    predicted = stationary_loss(run) * 100
    if round(predicted) == published_pct:
        return "%; N flows chosen by eq. (10)"
    return f"%; eq. (10): {predicted:.1f} for this run's N and rates (N was chosen for {published_pct} %)"


# ---- tables ---------------------------------------------------------------------------------


def table1(trials: int) -> pd.DataFrame:
    t = model.table1(seed=2004, trials=trials)
    return pd.DataFrame({
        "p": t["p"], "published simulation": t["published_simulation"], "published model": t["published_model"],
        # Four decimals: the paper truncates (99.4967 printed as 99.49, 8.99976 as 8.99).
        "model (eq. 2)": t["model"].round(4), "Monte-Carlo": t["monte_carlo"].round(3),
        "MC s.e.": t["monte_carlo_se"].round(3),
    })


def utility_bound_table() -> pd.DataFrame:
    rows = [(0.1, 0.96), (0.01, 0.996)]
    return pd.DataFrame({"p": [p for p, _ in rows], "p_thr": P_THR, "published bound": [b for _, b in rows],
                         "eq. (6)": [round(model.pels_utility_lower_bound(p, P_THR), 4) for p, _ in rows]})


def _row(claim: str, published: str, ours: float, fmt: str, note: str = "") -> dict[str, Any]:
    return {"claim": claim, "published": published, "ours": float(ours), "fmt": fmt, "note": note}


def _claim_range(claim: str, note: str) -> tuple[float, float]:
    """What a mechanisms row can be: losses and other percentages [0, 100], gamma and the
    utility of eq. (3) [0, 1], rates, delays and times [0, inf)."""
    if note.startswith("%") or "loss" in claim:
        return PERCENT
    if "gamma" in claim.partition(": ")[2] or "utility" in claim:
        return UNIT
    return NON_NEGATIVE


def combine_seeds(per_seed: list[pd.DataFrame]) -> pd.DataFrame:
    """One mechanisms table from one per seed: "ours" as the mean ± 95 % CI over seeds (just
    the value for one seed); notes, which carry further numbers, from the first seed."""
    first = per_seed[0]
    cells = []
    for i, fmt in enumerate(first["fmt"]):
        bounds = _claim_range(str(first["claim"].iloc[i]), str(first["note"].iloc[i]))
        cells.append(ci_text([float(t["ours"].iloc[i]) for t in per_seed], fmt, bounds))
    return pd.DataFrame({"claim": first["claim"], "published": first["published"], "ours": cells,
                         "note": first["note"]})


def mechanisms_table(runs: dict[str, dict[str, pd.DataFrame]]) -> pd.DataFrame:
    rows = []
    for name, level in (("gamma-7", 7), ("gamma-14", 14)):
        pub = f"{level} %"
        t = runs[name]
        end = measured_end(t)
        loss = pa.colour_losses(t["pels_frames"], STEADY_FROM_S, end)
        ctl = pa.controller_summary(t["pels_control"], STEADY_FROM_S, end)
        rows += [
            _row(f"{name}: router loss p (all PELS bytes)", pub, ctl["loss"] * 100, ".2f",
                 loss_level_note(t, level)),
            _row(f"{name}: enhancement-layer loss", "-", loss["enhancement"] * 100, ".2f", "%"),
            _row(f"{name}: mean gamma", "p/p_thr", ctl["gamma"], ".3f",
                 f"p_fgs/p_thr = {loss['enhancement'] / P_THR:.3f}"),
            _row(f"{name}: red loss", "75 %", loss["red"] * 100, ".1f", "%"),
            _row(f"{name}: yellow loss", "0 %", loss["yellow"] * 100, ".2f", "%"),
            _row(f"{name}: green loss", "0 %", loss["green"] * 100, ".2f", "%"),
        ]
    d = runs["delay"]
    end = measured_end(d)
    delays = pa.colour_delays(d["pels_packets"], STEADY_FROM_S, end)
    waves = [pa.colour_delays(d["pels_packets"], a + 10, min(a + 50, end))["red"]
             for a in range(0, int(end), 50) if a + 10 < end]
    rows += [
        _row("delay: green mean one-way delay", "16 ms", delays["green"], ".1f", "ms"),
        _row("delay: yellow mean one-way delay", "25 ms", delays["yellow"], ".1f", "ms"),
        _row("delay: red mean one-way delay", "up to 400 ms", delays["red"], ".0f",
             "ms; per 50 s wave: " + ", ".join(f"{w:.0f}" for w in waves)),
    ]
    c = runs["convergence"]
    end = float(c["duration_s"]["s"].iloc[0])  # sending rates need no drain time
    alone = pa.mean_rates(c["pels_frames"], 3, 10)
    both = pa.mean_rates(c["pels_frames"], 25, end)
    rows += [
        _row("convergence: F1 alone (3-10 s)", "full capacity", alone.iloc[0] / 1e3, ".0f",
             f"kb/s; eq. (10): {stationary_rate(c, 1) / 1e3:.0f}"),
        _row("convergence: F1 (25 s-end)", "1 mb/s", both.iloc[0] / 1e3, ".0f",
             f"kb/s; eq. (10): {stationary_rate(c, 2) / 1e3:.0f}"),
        _row("convergence: F2 (25 s-end)", "1 mb/s", both.iloc[1] / 1e3, ".0f", "kb/s"),
        _row("convergence: time to fairness after F2 joins", "13 s", fairness_time(c["pels_frames"]), ".1f",
             "s; until 2 s mean rates first within 10 %"),
    ]
    be = runs["best-effort-7"]
    end = measured_end(be)

    def w(f: pd.DataFrame) -> pd.DataFrame:
        return f[(f["t_ns"] >= STEADY_FROM_S * 1e9) & (f["t_ns"] < end * 1e9)]

    rows += [
        _row("best effort: enhancement loss", "-",
             pa.colour_losses(be["pels_frames"], STEADY_FROM_S, end)["enhancement"] * 100, ".2f", "%"),
        _row("best effort: mean utility (eq. 3)", "-", w(be["pels_frames"])["utility"].mean(), ".3f", ""),
        _row("PELS (gamma-7): mean utility (eq. 3)", ">= 0.96 (eq. 6)",
             w(runs["gamma-7"]["pels_frames"])["utility"].mean(), ".3f", ""),
    ]
    return pd.DataFrame(rows)


def fairness_time(frames: pd.DataFrame, join_s: float = 10.0, tolerance: float = 0.1, bin_s: float = 2.0) -> float:
    """Seconds after `join_s` until the two flows' mean rates in `bin_s` bins first come within
    `tolerance` of their mean (NaN if never). "First", not "for good": feedback quantization
    (about 15 packets per 30 ms interval, so p moves in steps of ~7 %) keeps both rates
    wandering by ~10 % around C/N + alpha/beta afterwards."""
    r = pa.rate_series(frames, bin_s).pivot(index="t_s", columns="flow", values="rate_bps").dropna()
    r = r[r.index >= join_s]
    if r.shape[1] != 2 or r.empty:
        return float("nan")
    close = (r.max(axis=1) - r.min(axis=1)) <= tolerance * r.mean(axis=1)
    hits = close[close]
    return float(hits.index[0] + bin_s - join_s) if not hits.empty else float("nan")


def parking_lot_tables(runs: list[dict[str, pd.DataFrame]]) -> pd.DataFrame:
    """:func:`parking_lot_table` averaged over seeds (rates and label shares)."""
    tables = [parking_lot_table(r) for r in runs]
    out = tables[0].copy()
    for col, digits in (("mean rate (kb/s)", 0), ("labels from router 1", 2)):
        out[col] = np.mean([t[col].to_numpy(dtype=float) for t in tables], axis=0).round(digits)
    out["mean rate (kb/s)"] = out["mean rate (kb/s)"].astype(int)
    return out


def parking_lot_table(run: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per phase (before and after three flows join hop 0 at 30 s) and group: mean rate, the
    max-min share MKC should reach (eq. 10 at the group's bottleneck), and the share of applied
    labels that came from router id 1 (hop 0)."""
    group = dict(zip(run["flows"]["flow"], run["flows"]["group_name"], strict=True))
    ctl = run["pels_control"].assign(group=lambda d: d["flow"].map(group))
    hop1_of_2 = stationary_rate(run, 2, hop=1)  # before 30 s: long and second share hop 1
    hop0_of_5 = stationary_rate(run, 5, hop=0)  # after: long, first and 3 first-late share hop 0
    fair = {(10, 30): {"long": hop1_of_2, "first": None, "second": hop1_of_2},
            (40, 60): {"long": hop0_of_5, "first": hop0_of_5, "first-late": hop0_of_5, "second": None}}
    rows = []
    for (t0, t1), shares in fair.items():
        rates = pa.mean_rates(run["pels_frames"], t0, t1)
        w = ctl[(ctl["t_ns"] >= t0 * 1e9) & (ctl["t_ns"] < t1 * 1e9)]
        for g, want in shares.items():
            members = [f for f, name in group.items() if name == g and f in rates.index]
            labels = w.loc[w["group"] == g, "router_id"]
            rows.append({"period (s)": f"{t0}-{t1}", "group": g, "mean rate (kb/s)": round(rates[members].mean() / 1e3),
                         "max-min share (kb/s)": "-" if want is None else round(want / 1e3),
                         "labels from router 1": round(float((labels == 1).mean()), 2)})
    return pd.DataFrame(rows)


# ---- figures --------------------------------------------------------------------------------


def _until(frames: pd.DataFrame, end_s: float) -> pd.DataFrame:
    return frames[frames["t_ns"] < end_s * 1e9]


def figure7(runs, folder: Path) -> pd.DataFrame:
    from matplotlib.figure import Figure  # loaded only when figures are drawn

    data = pd.concat([pa.gamma_red_series(_until(runs[n]["pels_frames"], measured_end(runs[n])), 1.0).assign(scenario=n)
                      for n in ("gamma-7", "gamma-14")])
    fig = Figure(figsize=(10, 3.6))
    (left, right) = fig.subplots(1, 2)
    for i, (name, g) in enumerate(data.groupby("scenario", sort=False)):
        left.plot(g["t_s"], g["gamma"], color=f"C{i}", lw=1.2, label=name)
        right.plot(g["t_s"], g["red_loss"], color=f"C{i}", lw=1.2, label=name)
    right.axhline(P_THR, color="0.3", ls=":", lw=1, label="p_thr")
    left.set_ylabel("gamma")
    right.set_ylabel("red packet loss")
    right.set_ylim(0, 1.05)
    for ax in (left, right):
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Figure 7: gamma (left) and red loss (right), sigma = 0.5")
    fig.tight_layout()
    fig.savefig(folder / "fig7.png", dpi=130)
    return data


def figures8_9(runs, folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    from matplotlib.figure import Figure  # loaded only when figures are drawn

    d = runs["delay"]["pels_packets"]
    delays = pa.delay_series(d[d["sent_ns"] < measured_end(runs["delay"]) * 1e9], 1.0)
    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    for ax, colour in zip(axes, ("green", "yellow"), strict=False):
        g = delays[delays["colour"] == colour]
        ax.plot(g["t_s"], g["delay_ms"], color="C2" if colour == "green" else "C1", lw=1.0)
        ax.set_title(f"{colour} packets", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("one-way delay (ms)")
        ax.grid(alpha=0.3)
    fig.suptitle("Figure 8: green (left) and yellow (right) delays, two flows join every 50 s")
    fig.tight_layout()
    fig.savefig(folder / "fig8.png", dpi=130)
    rates = pa.rate_series(runs["convergence"]["pels_frames"], 0.5)
    fig = Figure(figsize=(10, 3.6))
    (left, right) = fig.subplots(1, 2)
    g = delays[delays["colour"] == "red"]
    left.plot(g["t_s"], g["delay_ms"], color="C3", lw=1.0)
    left.set_title("red packets", fontsize=9)
    left.set_xlabel("time (s)")
    left.set_ylabel("one-way delay (ms)")
    for i, (_flow, r) in enumerate(rates.groupby("flow")):
        right.plot(r["t_s"], r["rate_bps"] / 1e3, color=f"C{i}", lw=1.0, label=f"F{i + 1}")
    right.axhline(stationary_rate(runs["convergence"], 2) / 1e3, color="0.3", ls=":", lw=1, label="C/N + alpha/beta")
    right.set_xlabel("time (s)")
    right.set_ylabel("rate (kb/s)")
    right.legend(fontsize=8)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.suptitle("Figure 9: red delays (left), MKC convergence of two flows (right)")
    fig.tight_layout()
    fig.savefig(folder / "fig9.png", dpi=130)
    return delays, rates


# ---- the command ----------------------------------------------------------------------------


TITLES = {
    "table1": "Table 1: useful packets per frame, H = 100 (published, model eq. 2, Monte-Carlo)",
    "utility_bound": "Eq. (6): PELS utility lower bound, the paper's two examples",
    "mechanisms": "Section 6: PELS mechanisms in the simulation, published beside ours",
    "parking_lot": "Parking lot (our scenario, section 5.2's max-override): rates and label origin",
    "quality": "Section 6.5, Figure 10: PSNR of PELS and best effort (rate-quality substitution)",
    "quality_curve": "The rate-quality curve (ffmpeg test sequence, libx264 ladder, PSNR against the source)",
}


#: Tables whose published values come from the paper's closed-form model (eq. 2, eq. 6), not
#: from its simulations: a `--set` of the scenarios leaves them comparable.
SCENARIO_FREE_PUBLISHED = ("table1", "utility_bound")
#: Figures of the closed-form model (eq. 2 and 3), which no scenario field moves.
SCENARIO_FREE_FIGURES = ("fig2.png", "fig5.png")


def reproduce(out_dir: Path, seeds: list[int], overrides: tuple[str, ...] = (), keep_records: bool = False,
              workers: int | None = None, quick: bool = False) -> dict[str, pd.DataFrame]:
    """Runs everything and writes tables, figures and report.md into `out_dir` (a fresh
    directory; the caller replaces the destination atomically). PELS sources are
    deterministic; the seed drives the TCP cross traffic's start times. With several seeds the
    mechanisms and parking-lot tables are means (± 95 % CI) over seeds; figures and the
    quality table use the first seed."""
    jobs = [(name, tuple(overrides), seed, quick) for seed in seeds for name in SIMULATIONS]
    results = parallel_map(run_simulation, jobs, workers)
    by_seed = [dict(zip(SIMULATIONS, results[i:i + len(SIMULATIONS)], strict=True))
               for i in range(0, len(results), len(SIMULATIONS))]
    runs = by_seed[0]
    figures, data = out_dir / "figures", out_dir / "data"
    figures.mkdir(parents=True)
    data.mkdir()
    tables = {"table1": table1(trials=1_000_000), "utility_bound": utility_bound_table(),
              "mechanisms": combine_seeds([mechanisms_table(r) for r in by_seed]),
              "parking_lot": parking_lot_tables([r["parking-lot"] for r in by_seed])}
    model.plot_figure2(fig2 := model.figure2(), figures / "fig2.png")
    model.plot_figure5(fig5 := model.figure5(), figures / "fig5.png")
    fig7 = figure7(runs, figures)
    delays, rates = figures8_9(runs, figures)
    for name, df in (("fig2", fig2), ("fig5", fig5), ("fig7", fig7), ("fig8_9_delays", delays), ("fig9_rates", rates)):
        df.to_csv(data / f"{name}.csv", index=False)
    if keep_records:
        for name, t in runs.items():
            folder = out_dir / "runs" / name
            folder.mkdir(parents=True)
            for k, df in t.items():
                df.to_parquet(folder / f"{k}.parquet", index=False)
    from aqmlab.reproduce import pels_quality

    tables.update(pels_quality.reproduce_quality(runs, out_dir, quick=quick))
    write_tables(tables, out_dir / "tables")
    write_report(tables, seeds, overrides, quick, out_dir / "report.md")
    return tables



def write_report(tables: dict[str, pd.DataFrame], seeds: list[int], overrides: tuple[str, ...], quick: bool,
                 path: Path) -> None:
    many = (f"Seeds {', '.join(map(str, seeds))}: mechanisms and parking lot as mean ± 95 % CI over seeds; "
            f"their notes, the figures and the quality table from seed {seeds[0]}"
            if len(seeds) > 1 else f"Seed {seeds[0]}")
    lines = [f"# PELS reproduction ({SOURCE})", "",
             f"{many}{' (quick: shortened runs)' if quick else ''}. Overrides: {', '.join(overrides) or 'none'}. "
             "Published values are the paper's text; its figures were lost with the text conversion. "
             "Scenario choices: scenarios/pels/*.toml and docs/reproductions/pels.md.", ""]
    for name, df in tables.items():
        lines += [f"## {TITLES[name]}", "", df.to_markdown(index=False), ""]
    lines += ["Figures: figures/fig2.png, fig5.png, fig7.png, fig8.png, fig9.png, fig10.png; their data in data/.", ""]
    path.write_text("\n".join(lines))
