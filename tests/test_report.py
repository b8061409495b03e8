"""aqmlab report: the HTML page of a sweep, loaded in headless Chromium (the Debian package
`chromium`, installed by .ci/run): its plots paint, and the page logs no console message."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from conftest import METRICS, aqmlab, write_sweep

CHROMIUM = shutil.which("chromium")
# Skipped on a developer's machine without it; never in CI, where .ci/run installs it.
pytestmark = pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                                reason="needs the Debian package chromium (.ci/run installs it)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
#: matplotlib's first two line colours (C0, C1): the report draws its lines in them.
LINE_COLOURS = {"C0": (31, 119, 180), "C1": (255, 127, 14)}


def load_in_chromium(page: Path, work: Path) -> dict:
    """Loads `page` from disk twice in a fresh profile: a screenshot of its top 1280x3000 pixels
    and the DOM after load; returns them with the console lines Chromium logged."""
    base = [CHROMIUM, *FLAGS, f"--user-data-dir={work / 'profile'}", "--enable-logging=stderr", "--v=0"]
    shot = work / "shot.png"
    r = subprocess.run([*base, "--window-size=1280,3000", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    d = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stderr[-2000:]
    console = [line for line in (r.stderr + d.stderr).splitlines() if ":CONSOLE" in line]
    pixels = (image.imread(shot)[:, :, :3] * 255).round().astype(int)
    painted = {name: int((np.abs(pixels - rgb).max(axis=2) <= 8).sum()) for name, rgb in LINE_COLOURS.items()}
    return {"dom": d.stdout, "console": console, "painted": painted}


def test_report_opens_without_a_server_and_its_plots_render(tmp_path):
    out = tmp_path / "sweep"
    r = aqmlab("sweep", str(write_sweep(tmp_path)), "--out", str(out), "--workers", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    r = aqmlab("report", str(out))
    assert r.returncode == 0, r.stderr
    page = out / "report.html"
    html = page.read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html  # self-contained
    seen = load_in_chromium(page, tmp_path / "good")
    # One figure per metric and axis (2 axes), every one an inline PNG, and the tables.
    images = re.findall(r'<img [^>]*src="data:image/png;base64,', seen["dom"])
    assert len(images) == 2 * len(METRICS)
    assert "Per point: mean" in seen["dom"] and "droptail" in seen["dom"]
    assert seen["console"] == []
    # The plots painted: both lines' colours cover many pixels of the screenshot.
    assert min(seen["painted"].values()) > 300, seen["painted"]

    # The same checks catch a page whose images are broken and whose script fails.
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,AAAA", html)
                      .replace("</body>", "<script>undefinedFunction();</script></body>"))
    bad = load_in_chromium(broken, tmp_path / "bad")
    assert max(bad["painted"].values()) < 50, bad["painted"]
    assert any("undefinedFunction" in line for line in bad["console"])


def test_report_of_a_directory_without_a_sweep_is_refused(tmp_path):
    r = aqmlab("report", str(tmp_path))
    assert r.returncode == 2 and "no sweep.json" in r.stderr and "Traceback" not in r.stderr


def test_axis_labels_carry_units():
    from aqmlab.report import metric_label

    assert metric_label("video.goodput_mbps") == "video goodput (Mbit/s)"
    assert metric_label("drop_rate_pct") == "drop rate (%)"
    assert metric_label("qdelay_p95_ms") == "95th percentile queueing delay (ms)"
    assert metric_label("jain") == "Jain's fairness index"
    assert metric_label("bulk.throughput_mbps") == "bulk throughput (Mbit/s)"
    assert metric_label("tcp.stall_s") == "tcp stall (s)"


def test_intervals_stop_at_the_metrics_range():
    """A t interval over few seeds can leave what a metric can be (a loss of 5 ± 20 %): the
    table writes it clipped, as the reproductions' tables do, and the band and the error bars
    stop at 0 (and at 100 % or at Jain's 1)."""
    import pandas as pd
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    from aqmlab import report

    points = pd.DataFrame({"load": [1, 2], "start_s": 0.0, "end_s": 10.0, "seeds": 3,
                           "video.loss_pct_mean": [5.0, 90.0], "video.loss_pct_ci95": [20.0, 30.0],
                           "jain_mean": [0.9, 0.5], "jain_ci95": [0.05, 0.1]})
    table = report.points_table(points, [{"name": "load"}], ["video.loss_pct", "jain"])
    assert list(table["video.loss_pct"]) == ["5 [0, 25] clipped", "90 [60, 100] clipped"]
    assert list(table["jain"]) == ["0.9 ± 0.05", "0.5 ± 0.1"]
    for categorical in (False, True):
        xa = report.XAxis(title="load", positions={"1": 0.0, "2": 1.0}, categorical=categorical)
        panel = Figure().add_subplot()
        report._draw_line(panel, points, "load", xa, "video.loss_pct", "", "C0", 0.0)
        if categorical:
            segments = [seg for c in panel.collections for seg in c.get_segments()]
            ys = [y for seg in segments for _, y in seg]
        else:
            ys = [y for c in panel.collections if isinstance(c, PolyCollection)
                  for path in c.get_paths() for _, y in path.vertices]
        assert ys and min(ys) == 0.0 and max(ys) == 100.0, (categorical, min(ys), max(ys))
