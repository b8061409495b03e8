"""`aqmlab report DIR`: a self-contained HTML page for a sweep directory.

One figure per metric and axis: the metric's mean over seeds against the axis, one line per
combination of the other axes (for a buffer x discipline sweep: one line per discipline), a
band for the 95 % confidence interval, one panel per measurement period. The figures are
matplotlib PNGs embedded as base64 and the page has no script, so it opens from disk with no
server and no network, and shows what the PNG files would.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from aqmlab.stats import interval_text, physical_range

_QUANTITY = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)\s*$")


class NotASweep(FileNotFoundError):
    """The directory holds no finished sweep tables."""


@dataclass
class XAxis:
    """Where each label of an axis sits on the x axis, and what the axis is called."""

    positions: dict[str, float]
    title: str
    categorical: bool


def x_axis(axis: dict[str, Any]) -> XAxis:
    """Numbers stay numbers; quantities with one unit ("25p", "10Mbps") plot as their number
    with the unit in the title; anything else (a discipline) is categorical, in sweep order."""
    labels = axis["labels"]
    parsed = [m for m in (_QUANTITY.match(str(lab)) for lab in labels) if m is not None]
    units = {m.group(2) for m in parsed}
    if len(parsed) == len(labels) and len(units) == 1:
        unit = units.pop()
        title = f"{axis['name']} ({unit})" if unit else axis["name"]
        return XAxis({lab: float(m.group(1)) for lab, m in zip(labels, parsed, strict=True)}, title, False)
    return XAxis({lab: float(i) for i, lab in enumerate(labels)}, axis["name"], True)


#: Metric name suffixes and the units they carry (the tables' naming rule).
_UNITS = {"_mbps": "Mbit/s", "_kbps": "kbit/s", "_pct": "%", "_ms": "ms", "_s": "s", "_db": "dB"}
#: Metrics whose name says nothing of what they count.
_NAMES = {"jain": "Jain's fairness index", "active_flows": "active flows (count)", "arrivals": "arrivals (packets)",
          "drops": "drops (packets)", "qdelay_mean_ms": "mean queueing delay (ms)",
          "qdelay_p50_ms": "median queueing delay (ms)", "qdelay_p95_ms": "95th percentile queueing delay (ms)",
          "qdelay_p99_ms": "99th percentile queueing delay (ms)", "utilization_mbps": "bottleneck utilization (Mbit/s)",
          "drop_rate_pct": "drop rate (%)"}


def metric_label(metric: str) -> str:
    """An axis label with the unit: "video.goodput_mbps" reads "video goodput (Mbit/s)"."""
    group, _, name = metric.rpartition(".")
    if name in _NAMES:
        text = _NAMES[name]
    else:
        suffix = next((s for s in _UNITS if name.endswith(s)), "")
        text = name.removesuffix(suffix).replace("_", " ") + (f" ({_UNITS[suffix]})" if suffix else "")
    return f"{group} {text}" if group else text


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode()


def metric_figure(points: pd.DataFrame, axes: list[dict[str, Any]], axis: dict[str, Any], metric: str) -> str:
    """The metric against one axis, a line (with its CI band) per combination of the others,
    a panel per period. Returns the PNG as base64."""
    xa = x_axis(axis)
    others = [a["name"] for a in axes if a["name"] != axis["name"]]
    periods = list(points.groupby(["start_s", "end_s"], sort=True).groups)
    fig = Figure(figsize=(4.2 * len(periods) + 1.2, 3.4))
    panels = fig.subplots(1, len(periods), squeeze=False, sharey=True)
    for panel, (start, end) in zip(panels[0], periods, strict=False):
        in_period = points[(points["start_s"] == start) & (points["end_s"] == end)]
        lines = list(in_period.groupby(others, sort=False)) if others else [((), in_period)]
        for i, (key, line) in enumerate(lines):
            dodge = 0.25 * (i - (len(lines) - 1) / 2) / max(len(lines), 1)
            _draw_line(panel, line, axis["name"], xa, metric, _line_label(others, key), f"C{i % 10}", dodge)
        panel.set_title(f"{start:g}-{end:g} s", fontsize=9)
        panel.set_xlabel(xa.title)
        panel.grid(alpha=0.3)
        if xa.categorical:
            panel.set_xticks(list(xa.positions.values()), list(xa.positions), rotation=20, fontsize=8)
    panels[0][0].set_ylabel(metric_label(metric))
    if others:
        panels[0][-1].legend(fontsize=7, loc="best", title=", ".join(others), title_fontsize=7)
    fig.suptitle(f"{metric_label(metric)} against {axis['name']} (mean, 95 % CI over seeds; {metric})", fontsize=10)
    fig.tight_layout()
    return _png(fig)


def _line_label(others: list[str], key: Any) -> str:
    key = key if isinstance(key, tuple) else (key,)
    if len(others) > 1:
        return ", ".join(f"{k}={v}" for k, v in zip(others, key, strict=False))
    return str(key[0]) if others else ""


def _draw_line(panel: Any, line: pd.DataFrame, column: str, xa: XAxis, metric: str, label: str, color: str,
               dodge: float) -> None:
    """A line with a CI band over a numeric axis; over categories (disciplines), points with
    error bars, dodged sideways so that lines do not hide each other. Bands and bars stop at
    what the metric can be (a loss never below 0 %, Jain's index never above 1)."""
    line = line.assign(_x=[xa.positions[str(v)] for v in line[column]]).sort_values("_x")
    mean, ci = line[f"{metric}_mean"], line[f"{metric}_ci95"]
    lo, hi = physical_range(metric.rpartition(".")[2])
    low, high = (mean - ci).clip(lower=lo), (mean + ci).clip(upper=hi)
    if xa.categorical:
        yerr = [(mean - low).fillna(0), (high - mean).fillna(0)]
        panel.errorbar(line["_x"] + dodge, mean, yerr=yerr, fmt="o", ms=4, capsize=3, color=color,
                       label=label or None)
        return
    panel.plot(line["_x"], mean, marker="o", ms=3.5, lw=1.4, color=color, label=label or None)
    if ci.notna().any():  # one seed per point has no interval
        panel.fill_between(line["_x"], low, high, color=color, alpha=0.2, lw=0)


def points_table(points: pd.DataFrame, axes: list[dict[str, Any]], metrics: list[str]) -> pd.DataFrame:
    """The per-point table as "mean ± half-width" per metric ("mean [low, high] clipped" where
    the interval leaves the metric's range, as the reproductions' tables write it)."""
    cols = [a["name"] for a in axes] + ["start_s", "end_s", "seeds"]
    table = points[cols].copy()
    for m in metrics:
        bounds = physical_range(m.rpartition(".")[2])
        pairs = zip(points[f"{m}_mean"], points[f"{m}_ci95"], strict=True)
        table[m] = [interval_text(mean, half, ".4g", bounds, half_fmt=".2g") for mean, half in pairs]
    return table


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
figure { margin: 1em 0; } figure img { max-width: 100%; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } code { background: #f3f3f3; padding: 0 0.2em; }
"""


def render(sweep_dir: Path) -> str:
    """The whole page as one string."""
    sweep_dir = Path(sweep_dir)
    if not (sweep_dir / "sweep.json").is_file():
        raise NotASweep(f"{sweep_dir}: no sweep.json; run aqmlab sweep SWEEP.toml --out {sweep_dir} first")
    info = json.loads((sweep_dir / "sweep.json").read_text())
    failed = pd.read_csv(sweep_dir / "failed.csv")
    if not (sweep_dir / "points.parquet").is_file():
        raise NotASweep(f"{sweep_dir}: no finished run yet (points.parquet missing)")
    points = pd.read_parquet(sweep_dir / "points.parquet")
    points = points.astype({a["name"]: str for a in info["axes"]})
    axes, metrics = info["axes"], info["metrics"]
    body = [f"<h1>Sweep {html.escape(info['name'])}</h1>", _summary(info, points, failed)]
    for metric in metrics:
        body.append(f"<h2>{html.escape(metric)}</h2>")
        for axis in axes:
            if len(axis["labels"]) > 1:
                png = metric_figure(points, axes, axis, metric)
                body.append(f'<figure><img alt="{html.escape(metric)} against {html.escape(axis["name"])}" '
                            f'src="data:image/png;base64,{png}"></figure>')
    body.append("<h2>Per point: mean ± 95 % CI half-width over seeds</h2>")
    body.append(points_table(points, axes, metrics).to_html(index=False, border=0, na_rep="-"))
    if len(failed):
        body.append(f"<h2>Failed runs ({len(failed)})</h2>")
        body.append(failed.to_html(index=False, border=0))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>aqmlab sweep {html.escape(info['name'])}</title><style>{_STYLE}</style></head>\n"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")


def _summary(info: dict[str, Any], points: pd.DataFrame, failed: pd.DataFrame) -> str:
    axes = "".join(f"<li><code>{html.escape(a['path'])}</code> as <b>{html.escape(a['name'])}</b>: "
                   f"{html.escape(', '.join(map(str, a['labels'])))}</li>" for a in info["axes"])
    changed = "".join(f" <code>--set {html.escape(a)}</code>" for a in info.get("set", []))
    return (f"<p>Base scenario <code>{html.escape(info['base'])}</code>{changed}; {info['runs']} runs "
            f"({len(info['seeds'])} seeds per point: {', '.join(map(str, info['seeds']))}); "
            f"{len(failed)} failed or not run.</p><ul>{axes}</ul>")


def write_report(sweep_dir: Path, dest: Path | None = None) -> Path:
    """Writes the page (default DIR/report.html) atomically and returns its path."""
    from aqmlab.sweep import write_file_atomically

    dest = Path(dest) if dest else Path(sweep_dir) / "report.html"
    _check_dest(dest)
    page = render(sweep_dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomically(dest, page.encode())
    return dest


def _check_dest(dest: Path) -> None:
    """The report replaces only a file that is itself an aqmlab sweep report (its first bytes
    say so); a directory, a link or any other file is refused and left as it was."""
    from aqmlab.outdir import OutputRefused

    if dest.is_symlink() or (dest.exists() and not dest.is_file()):
        raise OutputRefused(f"--out {dest} is not a file; give the report's file name, e.g. {dest / 'report.html'}")
    if dest.exists():
        with open(dest, "rb") as f:
            head = f.read(200)
        if not (head.startswith(b"<!DOCTYPE html>") and b"<title>aqmlab sweep" in head):
            raise OutputRefused(f"--out {dest} exists and is not an aqmlab report; aqmlab will not replace it: "
                                "choose another file name")
