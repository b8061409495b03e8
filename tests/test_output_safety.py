"""--out and --force never touch what aqmlab did not write (aqmlab.outdir): the user's
directories and files survive byte for byte, refusals are one line with exit status 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aqmlab.outdir import MARKER, OutputRefused, check_output, is_aqmlab_output
from aqmlab.run import atomic_directory
from conftest import aqmlab, small_scenario, write_sweep


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root` (not following links): file bytes, link targets, directories."""
    found: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                found[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                found[rel] = "dir"
            else:
                found[rel] = p.read_bytes()
    return found


def users_directory(tmp_path: Path) -> Path:
    d = tmp_path / "mine"
    (d / "sub").mkdir(parents=True)
    (d / "thesis.tex").write_bytes(b"\\section{Results}\n" * 50)
    (d / "sub" / "data.bin").write_bytes(bytes(range(256)) * 4)
    return d


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


def refused_by_run(args: list[str], tmp_path: Path, write_scenario, cwd: Path | None = None):
    scenario = tmp_path / "scenario.toml"
    if not scenario.exists():
        write_scenario(small_scenario())
    r = aqmlab("run", str(scenario), *args, cwd=cwd)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = error_lines(r.stderr)
    assert len(lines) == 1, r.stderr
    return lines[0]


# ---- the rule, on its own ---------------------------------------------------------------------


def test_a_users_directory_is_refused_even_with_force(tmp_path):
    d = users_directory(tmp_path)
    with pytest.raises(OutputRefused, match="not a directory aqmlab wrote"):
        check_output(d, force=True)


def test_empty_and_marked_directories_may_be_replaced(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    check_output(empty, force=True)
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / MARKER).write_text("x")
    (marked / "anything.txt").write_text("x")
    check_output(marked, force=True)
    with pytest.raises(OutputRefused, match="exists; pass --force"):
        check_output(marked, force=False)


def test_legacy_layouts_are_recognised_strictly(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("summary.json", "scenario.toml", "packets.parquet", "periods.csv", "queue.png"):
        (run / name).write_text("x")
    assert is_aqmlab_output(run)
    (run / "notes.txt").write_text("mine")  # a file the user added: no longer aqmlab's alone
    assert not is_aqmlab_output(run)
    repro = tmp_path / "repro"
    (repro / "tables").mkdir(parents=True)
    (repro / "figures").mkdir()
    (repro / "report.md").write_text("x")
    assert is_aqmlab_output(repro)
    (repro / "paper.pdf").write_text("mine")
    assert not is_aqmlab_output(repro)
    lone = tmp_path / "lone"  # aqmlab's names without the layout's signature file
    lone.mkdir()
    (lone / "figures").mkdir()
    assert not is_aqmlab_output(lone)


def test_atomic_directory_writes_the_marker_and_refuses_a_target_that_became_the_users(tmp_path):
    target = tmp_path / "out"
    with atomic_directory(target) as tmp:
        (tmp / "a.txt").write_text("1")
    assert (target / MARKER).is_file()
    with atomic_directory(target) as tmp:  # ours: replaced
        (tmp / "a.txt").write_text("2")
    assert (target / "a.txt").read_text() == "2"
    d = users_directory(tmp_path)
    before = snapshot(d)
    with pytest.raises(OutputRefused):
        with atomic_directory(d) as tmp:
            (tmp / "a.txt").write_text("3")
    assert snapshot(d) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


# ---- aqmlab run -------------------------------------------------------------------------------


def test_run_force_refuses_a_users_directory_and_leaves_it_byte_for_byte(tmp_path, write_scenario):
    d = users_directory(tmp_path)
    before = snapshot(d)
    line = refused_by_run(["--out", str(d), "--force"], tmp_path, write_scenario)
    assert "not a directory aqmlab wrote" in line and MARKER in line
    assert snapshot(d) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mine")]


def test_run_force_refuses_a_regular_file(tmp_path, write_scenario):
    f = tmp_path / "results"
    f.write_bytes(b"precious\x00bytes")
    line = refused_by_run(["--out", str(f), "--force"], tmp_path, write_scenario)
    assert "is a file" in line
    assert f.read_bytes() == b"precious\x00bytes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "scenario.toml"]


def test_run_force_refuses_a_symlink_and_what_it_points_to(tmp_path, write_scenario):
    d = users_directory(tmp_path)
    before = snapshot(d)
    link = tmp_path / "link"
    link.symlink_to(d)
    line = refused_by_run(["--out", str(link), "--force"], tmp_path, write_scenario)
    assert "symbolic link" in line
    assert link.is_symlink() and snapshot(d) == before


@pytest.mark.parametrize("out", [".", "..", "CWD"])
def test_run_force_refuses_the_working_directory_and_its_parents(tmp_path, write_scenario, out):
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_bytes(b"keep")
    write_scenario(small_scenario())
    before = snapshot(tmp_path)
    target = str(work) if out == "CWD" else out
    line = refused_by_run(["--out", target, "--force"], tmp_path, write_scenario, cwd=work)
    assert ("working directory" in line), line
    assert snapshot(tmp_path) == before


def test_run_force_replaces_its_own_results(tmp_path, write_scenario):
    out = tmp_path / "r"
    sc = str(write_scenario(small_scenario()))
    assert aqmlab("run", sc, "--out", str(out)).returncode == 0
    assert (out / MARKER).is_file()
    (out / "summary.json").write_text("stale")
    r = aqmlab("run", sc, "--out", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert (out / "summary.json").read_text() != "stale"
    r = aqmlab("run", sc, "--out", str(out))
    assert r.returncode == 2 and "exists; pass --force" in r.stderr


# ---- the other commands that write ------------------------------------------------------------


@pytest.mark.parametrize("command", [["reproduce", "rb-rio", "--quick"], ["reproduce", "head-to-head", "--quick"],
                                     ["compare", "rb-rio", "--quick"]])
def test_reproduce_and_compare_refuse_a_users_directory(tmp_path, command):
    d = users_directory(tmp_path)
    before = snapshot(d)
    r = aqmlab(*command, "--out", str(d), "--force")
    assert r.returncode == 2 and len(error_lines(r.stderr)) == 1, r.stderr
    assert "not a directory aqmlab wrote" in r.stderr
    assert snapshot(d) == before


def test_sweep_refuses_a_directory_of_the_users_files(tmp_path):
    sweep = write_sweep(tmp_path, seeds=1)
    d = users_directory(tmp_path)
    before = snapshot(d)
    r = aqmlab("sweep", str(sweep), "--out", str(d), "--workers", "1", "--no-progress")
    assert r.returncode == 2 and len(error_lines(r.stderr)) == 1, r.stderr
    assert "did not write" in r.stderr
    assert snapshot(d) == before


def test_report_does_not_overwrite_a_file_that_is_not_a_report(tmp_path):
    sweep = write_sweep(tmp_path, seeds=1, axes=[{"path": "topology.bottleneck.qdisc.limit", "name": "buffer",
                                                  "values": ["20p", "40p"]}])
    out = tmp_path / "s"
    assert aqmlab("sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress").returncode == 0
    assert (out / MARKER).is_file()
    mine = tmp_path / "index.html"
    mine.write_bytes(b"<html>my page</html>")
    r = aqmlab("report", str(out), "--out", str(mine))
    assert r.returncode == 2 and "not an aqmlab report" in r.stderr
    assert mine.read_bytes() == b"<html>my page</html>"
    report = tmp_path / "report.html"
    assert aqmlab("report", str(out), "--out", str(report)).returncode == 0
    assert aqmlab("report", str(out), "--out", str(report)).returncode == 0  # its own: replaced
