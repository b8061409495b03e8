"""Published values stand only beside runs of the paper's own scenario: a `--set` that changes
what the paper fixed replaces them by a note naming the override and the paper's value."""

from __future__ import annotations

import pandas as pd

from aqmlab.reproduce import published
from conftest import aqmlab

RATE_NOTE = "published: n/a (--set topology.bottleneck.rate=30Mbps differs from the paper's 25Mbps)"


def test_an_override_of_a_fixed_field_is_a_departure_naming_the_papers_value():
    got = published.departures(["rb-rio/tcp-droptail"], ["topology.bottleneck.rate=30Mbps"])
    assert got == ["--set topology.bottleneck.rate=30Mbps differs from the paper's 25Mbps"]


def test_a_star_override_names_the_values_the_papers_items_set():
    got = published.departures(["rb-rio/tcp-droptail", "rb-rio/mpeg-droptail"],
                               ["flows.*.app.tcp.mss=1460B", "flows.*.app.tcp.profile=linux"])
    assert got == ["--set flows.*.app.tcp.mss=1460B differs from the paper's 960B",
                   "--set flows.*.app.tcp.profile=linux differs from the paper's default (not set in its scenario)"]


def test_the_papers_own_value_written_otherwise_and_neutral_fields_are_no_departure():
    assert published.departures(["rb-rio/tcp-droptail"],
                                ["topology.bottleneck.rate=25000kbps", "seed=7", "name=mine"]) == []


def test_withhold_drops_published_columns_from_tables_files_and_report(tmp_path):
    ours = pd.DataFrame({"run": ["a"], "ours": [1.5], "published util": [2.0], "published_drop_rate_pct": [3.0],
                         "published": [4.0], "pub. jain": [0.9], "publisher": ["kept: not a published value"]})
    model = pd.DataFrame({"H": [100], "published model": [99.49]})
    (tmp_path / "tables").mkdir()
    report = f"# Report\n\n{ours.to_markdown(index=False)}\n\n{model.to_markdown(index=False)}\n"
    (tmp_path / "report.md").write_text(report)
    new = published.withhold({"sim": ours, "table1": model}, ["--set x=1 differs from the paper's 2"], tmp_path,
                             keep=["table1"])
    assert list(new["sim"].columns) == ["run", "ours", "publisher"]
    assert list(new["table1"].columns) == ["H", "published model"]
    assert list(pd.read_csv(tmp_path / "tables" / "sim.csv").columns) == ["run", "ours", "publisher"]
    report = (tmp_path / "report.md").read_text()
    assert report.splitlines()[2] == "published: n/a (--set x=1 differs from the paper's 2)"
    assert "published util" not in report and "99.49" in report


def test_run_replaces_the_published_columns_by_the_note(tmp_path):
    r = aqmlab("run", "rb-rio/tcp-droptail", "--out", str(tmp_path / "a"), "--no-progress",
               "--set", "topology.bottleneck.rate=30Mbps")
    assert r.returncode == 0, r.stderr
    assert "published util" not in r.stdout and "Figure 5" not in r.stdout
    assert f"tcp-droptail: {RATE_NOTE}" in r.stdout
    same = aqmlab("run", "rb-rio/tcp-droptail", "--out", str(tmp_path / "b"), "--no-progress",
                  "--set", "topology.bottleneck.rate=25Mbps")
    assert "published util" in same.stdout and "n/a" not in same.stdout


def test_reproduce_withholds_simulated_published_values_but_keeps_the_models(tmp_path):
    out = tmp_path / "pels"
    r = aqmlab("reproduce", "pels", "--quick", "--out", str(out), "--set", "topology.bottleneck.delay=30ms")
    assert r.returncode == 0, r.stderr
    assert "published: n/a (--set topology.bottleneck.delay=30ms differs from the paper's 10ms)" in r.stdout
    assert list(pd.read_csv(out / "tables" / "mechanisms.csv").columns) == ["claim", "ours", "note"]
    assert "published improvement %" not in pd.read_csv(out / "tables" / "quality.csv").columns
    # Table 1's published values are the paper's model (eq. 2): no scenario field moves them.
    assert "published model" in pd.read_csv(out / "tables" / "table1.csv").columns
    assert "published: n/a" in (out / "report.md").read_text()


def test_head_to_head_withholds_published_values_under_a_set_that_changes_its_runs(tmp_path):
    """Head-to-head used to print the paper's shares and counts beside runs of another TCP."""
    out = tmp_path / "h2h"
    r = aqmlab("reproduce", "head-to-head", "--quick", "--clips", "2", "--out", str(out),
               "--set", "flows.*.app.tcp.profile=linux")
    assert r.returncode == 0, r.stderr
    assert "published: n/a (--set flows.*.app.tcp.profile=linux differs from the paper's" in r.stdout
    for table in ("table1", "fig9_shares", "fig21_smoothness"):
        columns = pd.read_csv(out / "tables" / f"{table}.csv").columns
        assert not any(c.startswith("published") for c in columns), (table, list(columns))


def test_figures_of_a_run_under_set_say_so_and_the_models_do_not(tmp_path):
    """A figure copied out of a run under --set still says it is not the paper's scenario (a
    strip below it); the closed-form model's figures, which no scenario field moves, stay as
    the plain run draws them."""
    from PIL import Image

    plain, changed = tmp_path / "plain", tmp_path / "changed"
    assert aqmlab("reproduce", "pels", "--quick", "--out", str(plain)).returncode == 0
    assert aqmlab("reproduce", "pels", "--quick", "--out", str(changed),
                  "--set", "topology.bottleneck.delay=30ms").returncode == 0
    for name in ("fig2.png", "fig5.png"):
        assert (plain / "figures" / name).read_bytes() == (changed / "figures" / name).read_bytes()
    with Image.open(plain / "figures" / "fig7.png") as a, Image.open(changed / "figures" / "fig7.png") as b:
        assert b.width == a.width and b.height > a.height
        strip = b.convert("RGB").crop((0, a.height, b.width, b.height))
        # red text on white: the note is drawn
        colours = {colour for _, colour in strip.getcolors(maxcolors=1 << 16) or []}
        assert any(r > 120 and g < 60 and bl < 60 for r, g, bl in colours)


def test_tables_whose_own_scenarios_an_override_leaves_alone_keep_their_published_values(tmp_path):
    """A TCP setting changes rb-rio's TCP and mixed sets, not its MPEG-only one: Tables 1 and 2
    keep the paper's values and Figure 6 stays unmarked; Figure 5's table and Figure 8 do not."""
    from PIL import Image

    plain, tcp = tmp_path / "plain", tmp_path / "tcp"
    assert aqmlab("reproduce", "rb-rio", "--quick", "--out", str(plain)).returncode == 0
    r = aqmlab("reproduce", "rb-rio", "--quick", "--out", str(tcp), "--set", "flows.*.app.tcp.profile=linux")
    assert r.returncode == 0, r.stderr
    assert "kept in fig6_jain, table1, table2" in r.stdout
    for table in ("table1", "table2"):
        assert any(c.startswith("published") for c in pd.read_csv(tcp / "tables" / f"{table}.csv").columns), table
        assert (tcp / "tables" / f"{table}.csv").read_bytes() == (plain / "tables" / f"{table}.csv").read_bytes()
    assert not any(c.startswith("published") for c in pd.read_csv(tcp / "tables" / "fig5.csv").columns)
    assert (tcp / "figures" / "fig6.png").read_bytes() == (plain / "figures" / "fig6.png").read_bytes()
    with Image.open(plain / "figures" / "fig8.png") as a, Image.open(tcp / "figures" / "fig8.png") as b:
        assert b.height > a.height


def test_an_override_valid_only_beside_another_is_judged_with_it():
    """`--set ...congestion_control=bbr --set ...bbr_policer_detection=false`: the second alone
    is refused (a BBR part with the scenario's NewReno), so it is judged against all the
    overrides but it; both depart from the paper, and nothing raises (it did: a traceback)."""
    overrides = ["flows.*.app.tcp.congestion_control=bbr", "flows.*.app.tcp.bbr_policer_detection=false"]
    got = published.departures(["rb-rio/tcp-droptail"], overrides)
    assert got == ["--set flows.*.app.tcp.congestion_control=bbr differs from the paper's default (not set in its "
                   "scenario)",
                   "--set flows.*.app.tcp.bbr_policer_detection=false differs from the paper's default (not set in "
                   "its scenario)"]
