"""`aqmlab plot --out` replaces only figures aqmlab wrote, and a run without period metrics
(records.packet_events off, as scale/newreno-10k) says why instead of printing an empty table
(issue 23 point 12)."""

from __future__ import annotations

import json

from conftest import aqmlab, small_scenario


def test_plot_out_never_replaces_a_file_aqmlab_did_not_write(tmp_path, write_scenario):
    res = tmp_path / "res"
    assert aqmlab("run", str(write_scenario(small_scenario())), "--out", str(res)).returncode == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "queue.png").write_bytes(b"my own picture")
    refused = aqmlab("plot", str(res), "--out", str(mine))
    assert refused.returncode == 2
    assert refused.stderr == (f"error: --out {mine} holds queue.png, which aqmlab did not write (no .aqmlab-results "
                              "file there); aqmlab will not replace it: choose another directory\n")
    assert (mine / "queue.png").read_bytes() == b"my own picture" and len(list(mine.iterdir())) == 1

    a_file = tmp_path / "figure.png"
    a_file.write_bytes(b"not a directory")
    refused = aqmlab("plot", str(res), "--out", str(a_file))
    assert refused.returncode == 2 and "is a file; --out takes a directory" in refused.stderr
    assert refused.stderr.count("\n") == 1 and a_file.read_bytes() == b"not a directory"

    # a directory of the user's without those names, a new one, and the results directory itself
    (mine / "queue.png").unlink()
    (mine / "notes.txt").write_text("kept")
    for dest in (mine, tmp_path / "new", tmp_path / "new", None):
        done = aqmlab("plot", str(res), *(["--out", str(dest)] if dest else []))
        assert done.returncode == 0, done.stderr
        assert ((dest or res) / "queue.png").read_bytes().startswith(b"\x89PNG")
    assert (mine / "notes.txt").read_text() == "kept"


def test_a_run_without_period_metrics_says_why(tmp_path, write_scenario):
    path = write_scenario(small_scenario(records={"packet_events": False}))
    done = aqmlab("run", str(path), "--out", str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert "Bottleneck per period" not in done.stdout
    assert done.stdout == ("small: no period metrics: records.packet_events is off, and they are computed from the "
                           "bottleneck's events (--set records.packet_events=true to have them; summary.json keeps "
                           "the bottleneck's counters)\n")
    as_json = aqmlab("run", str(path), "--out", str(tmp_path / "b"), "--json")
    assert json.loads(as_json.stdout)["tables"]["periods"]["rows"] == []
    assert "records.packet_events is off" in as_json.stderr


def test_a_paper_scenario_without_period_metrics_and_its_published_values_withheld(tmp_path):
    # An override that changes the simulation withholds the paper's published columns; with no
    # period rows there were no columns to drop, and the command ended in a KeyError traceback
    # (found by benches/bench_run_process.py's 600-flow case with records off).
    overrides = ["--set", "records.packet_events=false", "--set", "topology.bottleneck.rate=30Mbps",
                 "--set", "duration=12s", "--set", 'metrics.periods=[["10s","12s"]]']
    for extra in ([], ["--json"]):
        done = aqmlab("run", "rb-rio/tcp-droptail", "--out", str(tmp_path / f"r{len(extra)}"), *overrides, *extra)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        out = done.stdout if not extra else done.stderr
        assert "no period metrics: records.packet_events is off" in out
        assert "withheld" in out or "published" in out


def test_run_with_plot_writes_the_same_results_and_the_figures(tmp_path, write_scenario):
    # `aqmlab run --plot` takes the pandas-free road too (issue 22) and then draws from the
    # written directory: every file of a run without --plot, byte for byte, and the figures.
    path = str(write_scenario(small_scenario()))
    plain, plotted = tmp_path / "plain", tmp_path / "plotted"
    for target, extra in ((plain, []), (plotted, ["--plot"])):
        done = aqmlab("run", path, "--out", str(target), *extra)
        assert done.returncode == 0, done.stderr
    figures = {"queue.png", "flow_throughput.png"}
    assert {p.name for p in plotted.iterdir()} == {p.name for p in plain.iterdir()} | figures
    for f in plain.iterdir():
        if f.name != "summary.json":  # it holds the run's wall time
            assert (plotted / f.name).read_bytes() == f.read_bytes(), f.name
    for name in figures:
        assert (plotted / name).read_bytes().startswith(b"\x89PNG")
