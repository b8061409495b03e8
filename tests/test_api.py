"""The Python API (aqmlab.api): what it returns, that it writes nothing unless asked, that it
gives the command line's results and errors, and that `import aqmlab` stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from matplotlib.figure import Figure

import aqmlab
from conftest import aqmlab as cli, small_scenario, write_sweep


def test_keyword_and_set_overrides_are_the_same_override(write_scenario):
    path = write_scenario(small_scenario())
    by_kw = aqmlab.load(path, topology__bottleneck__rate="20Mbps", flows__bulk__count=3)
    by_set = aqmlab.load(str(path), set=["topology.bottleneck.rate=20Mbps", "flows.bulk.count=3"])
    assert by_kw.overrides == by_set.overrides == ("topology.bottleneck.rate=20Mbps", "flows.bulk.count=3")
    assert by_kw.raw == by_set.raw
    assert by_kw.model.topology.bottleneck.rate == 20_000_000
    assert by_kw.flows[0].count == 3  # model attributes read through
    assert aqmlab.load(small_scenario(), seed=9).model.seed == 9
    assert repr(aqmlab.load("rb-rio/tcp-red", seed=2, duration="40s")) == \
        "<aqmlab.LoadedScenario rb-rio/tcp-red --set duration=40s --seed 2: tcp-red>"
    # a dict value is an inline table, as --set 'k={...}' takes it
    red = aqmlab.load(path, topology__bottleneck__qdisc={"kind": "droptail", "limit": "30p"})
    assert red.model.topology.bottleneck.qdisc.kind == "droptail"
    assert red.overrides == ('topology.bottleneck.qdisc={kind = "droptail", limit = "30p"}',)


def test_a_bad_value_is_the_command_lines_one_line_error_with_its_field(write_scenario):
    path = write_scenario(small_scenario())
    with pytest.raises(aqmlab.ScenarioError) as e:
        aqmlab.load(path, topology__bottleneck__rate="20Mbs")
    (problem,) = e.value.problems
    assert problem.path == "topology.bottleneck.rate"
    assert problem.origin == f"{path}: --set topology.bottleneck.rate=20Mbs"
    shown = cli("run", str(path), "--out", str(path.parent / "x"), "--set", "topology.bottleneck.rate=20Mbs")
    assert shown.returncode == 2
    assert shown.stderr == f"error: {e.value}\n"


def test_run_writes_nothing_and_save_writes_what_the_command_line_writes(tmp_path, write_scenario, monkeypatch):
    path = write_scenario(small_scenario())
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    res = aqmlab.run(aqmlab.load(path), seed=3)
    assert list(work.iterdir()) == []  # nothing on disk
    assert res.out_dir is None and res.scenario.model.seed == 3
    for name in ("periods", "flow_periods", "flows", "packets", "queue", "flow_samples"):
        assert isinstance(getattr(res, name), pd.DataFrame) and len(getattr(res, name))
    assert set(res.flow_packets(2)["flow"]) == {2}
    with pytest.raises(aqmlab.AqmlabError, match="no table 'frames'.* it has: flow_periods, flow_samples"):
        res.table("frames")

    saved = res.save(tmp_path / "api")
    done = cli("run", str(path), "--seed", "3", "--out", str(tmp_path / "cli"))
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert names == sorted(p.name for p in saved.iterdir())
    for name in names:
        assert (saved / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_summary_is_the_table_run_json_prints(tmp_path, write_scenario):
    path = write_scenario(small_scenario())
    res = aqmlab.run(path)
    done = cli("run", str(path), "--out", str(tmp_path / "o"), "--json")
    rows = json.loads(done.stdout)["tables"]["periods"]["rows"]
    ours = json.loads(res.summary.to_json(orient="records", double_precision=15))
    assert [{k: v for k, v in r.items() if k != "results"} for r in rows] == \
        [{k: v for k, v in r.items() if k != "results"} for r in ours]


def test_published_values_stand_only_beside_the_papers_own_scenario():
    paper = aqmlab.load("rb-rio/tcp-red")
    changed = paper.set("topology.bottleneck.rate=30Mbps")
    assert changed.overrides == ("topology.bottleneck.rate=30Mbps",)
    from aqmlab.api import _withheld

    assert _withheld(paper) == []
    assert _withheld(changed) and "30Mbps" in _withheld(changed)[0]


def test_out_replaces_only_what_aqmlab_wrote(tmp_path, write_scenario):
    path = write_scenario(small_scenario())
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_bytes(b"my own words\n")
    # The refusals name the API's own argument, not the command line's --force.
    with pytest.raises(aqmlab.OutputRefused, match=r"exists; pass force=True to replace it"):
        aqmlab.run(path, out=mine)
    with pytest.raises(aqmlab.OutputRefused, match=r"not a directory aqmlab wrote \(no \.aqmlab-results file\) "
                                                   r"and force=True replaces only those"):
        aqmlab.run(path, out=mine, force=True)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert (mine / "notes.txt").read_bytes() == b"my own words\n"
    first = aqmlab.run(path, out=tmp_path / "res")
    assert first.out_dir == tmp_path / "res" and (tmp_path / "res" / ".aqmlab-results").is_file()
    aqmlab.run(path, out=tmp_path / "res", force=True)  # aqmlab's own: replaced
    with pytest.raises(aqmlab.OutputRefused, match=r"out .* exists; pass force=True"):
        first.save(tmp_path / "res")
    with pytest.raises(aqmlab.OutputRefused, match="force=True replaces only those"):
        first.save(mine, force=True)
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]


def test_figures_are_figures_and_leave_the_pyplot_backend_alone(write_scenario):
    res = aqmlab.run(write_scenario(small_scenario()))
    had_pyplot = "matplotlib.pyplot" in sys.modules
    for fig in (res.queue_figure(), res.throughput_figure(), res.flow_figure(1)):
        assert isinstance(fig, Figure) and fig.axes
    assert ("matplotlib.pyplot" in sys.modules) == had_pyplot


def test_no_figure_module_loads_pyplot_or_sets_a_backend():
    """Reproductions, comparisons, the sweep report and the analyses draw on Figure objects: a
    notebook that calls them keeps its own backend (they used to switch it to Agg)."""
    code = """
import sys, matplotlib
backend = matplotlib.get_backend()
import aqmlab.report, aqmlab.compare
import aqmlab.reproduce.rb_rio_figures, aqmlab.reproduce.head_to_head_figures
import aqmlab.reproduce.pels, aqmlab.reproduce.pels_quality, aqmlab.reproduce.sqf
import aqmlab.analysis.abr, aqmlab.analysis.rtc, aqmlab.analysis.pcap, aqmlab.analysis.calls, aqmlab.analysis.l4s
import pandas as pd
points = pd.DataFrame({"load": [1, 2], "start_s": 0.0, "end_s": 10.0, "seeds": 2,
                       "jain_mean": [0.9, 0.5], "jain_ci95": [0.05, 0.1]})
axis = {"name": "load", "labels": ["1", "2"]}
assert aqmlab.report.metric_figure(points, [axis], axis, "jain")
assert "matplotlib.pyplot" not in sys.modules, "pyplot loaded"
assert matplotlib.get_backend() == backend
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "MPLBACKEND": "svg"})
    assert r.returncode == 0, r.stderr


def test_seeds_and_confidence_intervals(write_scenario):
    sc = aqmlab.load(write_scenario(small_scenario()))
    df = aqmlab.run_seeds(sc, seeds=[1, 2, 3])
    assert list(df["seed"].unique()) == [1, 2, 3] and df.columns[0] == "seed"
    ci = aqmlab.confidence(df, ["start_s", "end_s"], ["utilization_mbps"])
    assert list(ci["n"]) == [3, 3]
    first = df[df["start_s"] == 0]["utilization_mbps"]
    assert ci["utilization_mbps_mean"][0] == pytest.approx(first.mean())
    # Student's t with 2 degrees of freedom: 4.303 * s / sqrt(3)
    assert ci["utilization_mbps_ci95"][0] == pytest.approx(4.303 * first.std() / 3 ** 0.5, rel=1e-3)


def test_a_sweep_in_memory_leaves_no_directory(tmp_path, monkeypatch):
    path = write_sweep(tmp_path, seeds=2)
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    res = aqmlab.sweep(path, quick=True, workers=1)
    assert set(tmp_path.iterdir()) == before and res.out is None
    assert len(res.failed) == 0 and res.ran_now == 4
    assert set(res.runs["seed"]) == {1} and len(res.points) == 4 * 2  # 4 points x 2 periods
    kept = aqmlab.sweep(path, quick=True, workers=1, out=tmp_path / "kept")
    assert (tmp_path / "kept" / "points.parquet").is_file()
    pd.testing.assert_frame_equal(kept.points, res.points)
    assert aqmlab.sweep(path, quick=True, workers=1, out=tmp_path / "kept").done_before == 4  # resumed
    with pytest.raises(aqmlab.AqmlabError, match="give either --quick or --seeds"):
        aqmlab.sweep(path, quick=True, seeds=3)


def test_a_sweep_on_a_local_dask_cluster_gives_the_pools_tables(tmp_path):
    pytest.importorskip("distributed")
    path = write_sweep(tmp_path, seeds=2)
    pool = aqmlab.sweep(path, quick=True, workers=1)
    dask = aqmlab.sweep(path, quick=True, workers=2, dask="local")
    assert dask.ran_now == 4
    pd.testing.assert_frame_equal(dask.points, pool.points)
    pd.testing.assert_frame_equal(dask.runs, pool.runs)


def test_a_dask_sweep_without_dask_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(aqmlab.AqmlabError,
                       match=r"^dask: dask.distributed is not installed; pip install 'aqmlab\[sweep\]'"):
        aqmlab.sweep(write_sweep(tmp_path, seeds=2), quick=True, dask="local")


def test_reproduce_refuses_what_the_command_line_refuses(tmp_path):
    with pytest.raises(aqmlab.AqmlabError, match="paper 'rbrio': allowed: head-to-head, pels, rb-rio, sqf"):
        aqmlab.reproduce("rbrio")
    with pytest.raises(aqmlab.AqmlabError) as e:
        aqmlab.reproduce("rb-rio", quick=True, topology__bottleneck__qdisc__kind="red")
    assert "topology.bottleneck.qdisc.kind" in str(e.value)
    with pytest.raises(aqmlab.AqmlabError, match="--clips applies only to head-to-head"):
        aqmlab.reproduce("sqf", clips=3)
    with pytest.raises(aqmlab.AqmlabError) as e:
        aqmlab.reproduce("rb-rio", set=["duration=5s"])
    assert e.value.lines[0].startswith("--set duration=5s: duration 5s ends before flow group joining starts")
    shown = cli("reproduce", "rb-rio", "--set", "duration=5s", "--out", str(tmp_path / "r"))
    assert shown.returncode == 2
    assert shown.stderr.splitlines() == [f"error: {line}" for line in e.value.lines]


def test_reproduce_returns_the_tables_and_writes_only_into_out(tmp_path, monkeypatch):
    """The PELS reproduction with --quick is the fastest of the four (a few seconds)."""
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", aqmlab.AqmlabWarning)  # the paper's scenarios warn about nothing
        rep = aqmlab.reproduce("pels", quick=True, workers=1)
    assert list(tmp_path.iterdir()) == [] and rep.out is None
    assert rep.tables and all(isinstance(t, pd.DataFrame) and len(t) for t in rep.tables.values())
    assert set(rep.titles) == set(rep.tables)


def test_emulation_runs_where_root_and_is_one_clear_error_elsewhere(write_scenario, tmp_path):
    from aqmlab.emu import netns

    path = write_scenario(small_scenario())
    missing = netns.missing_requirement()
    if missing is not None:
        with pytest.raises(aqmlab.EmulationFailed) as e:
            aqmlab.run(path, engine="emu")
        assert str(e.value) == missing and "\n" not in str(e.value)
        return
    res = aqmlab.run(path, engine="emu", out=tmp_path / "emu")
    assert res.info["engine"] == "emu" and list(res.periods["start_s"]) == [0.0, 2.0]
    assert (res.periods["utilization_mbps"] > 1).all() and len(res.packets)
    assert (tmp_path / "emu" / "summary.json").is_file()


def test_importing_aqmlab_loads_neither_pydantic_nor_the_data_libraries():
    code = ("import sys, aqmlab; heavy = [m for m in ('pydantic', 'pandas', 'pyarrow', 'matplotlib', 'numpy', "
            "'rich', 'click') if m in sys.modules]; print(','.join(heavy)); print(aqmlab.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    heavy, version = done.stdout.splitlines()
    assert heavy == "" and version == aqmlab.__version__


def test_the_api_names_win_over_the_modules_of_the_same_name():
    import aqmlab.reproduce.published  # noqa: F401 - importing the submodules must not rebind the names
    import aqmlab.run
    import aqmlab.sweep
    from aqmlab.run import simulate

    assert callable(simulate)
    assert (aqmlab.run, aqmlab.sweep, aqmlab.reproduce) == (aqmlab.api.run, aqmlab.api.sweep, aqmlab.api.reproduce)
    assert isinstance(sys.modules["aqmlab.run"].__dict__["simulate"], type(simulate))
    assert Path(aqmlab.scenario.__file__).name == "__init__.py"  # other submodules as before


def test_compare_returns_the_table_the_command_line_writes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rep = aqmlab.api.compare("pels", quick=True, workers=1)
    assert list(tmp_path.iterdir()) == [] and list(rep.tables) == ["pels"]
    done = cli("compare", "pels", "--quick", "--workers", "1", "--out", str(tmp_path / "cmp"), "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)["tables"]["pels"]
    assert shown["title"] == rep.titles["pels"]
    assert shown["rows"] == json.loads(rep.tables["pels"].to_json(orient="records", double_precision=15))
    with pytest.raises(aqmlab.AqmlabError, match="allowed: head-to-head, pels, rb-rio, sqf"):
        aqmlab.api.compare("nopaper")
