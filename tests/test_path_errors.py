"""Every path argument refuses what it cannot use (nothing there, a directory, an unreadable
file, a file that is not TOML) in one line, exit status 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqmlab.scenario import ScenarioError, read_toml
from conftest import aqmlab


def bad_paths(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "one.toml").write_text('name = "x"\n')
    binary = tmp_path / "picture.toml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = [unclosed\n")
    return {"directory": (folder, "is a directory"), "missing": (tmp_path / "nope.toml", "no such"),
            "binary": (binary, "not a TOML text file"), "invalid": (broken, "not valid TOML")}


def one_line(r) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("kind", ["directory", "missing", "binary", "invalid"])
@pytest.mark.parametrize("command", ["run", "sweep", "emulate"])
def test_scenario_and_sweep_paths(tmp_path, command, kind):
    path, expect = bad_paths(tmp_path)[kind]
    out = tmp_path / "out"
    line = one_line(aqmlab(command, str(path), "--out", str(out)))
    assert str(path) in line and expect in line, line
    assert ("sweep file" if command == "sweep" else "scenario file") in line or kind == "invalid", line
    assert not out.exists()


def test_a_directory_lists_the_files_to_give_instead(tmp_path):
    path, _ = bad_paths(tmp_path)["directory"]
    assert "give one of its files" in one_line(aqmlab("run", str(path), "--out", str(tmp_path / "o")))
    line = one_line(aqmlab("run", "rb-rio", "--out", str(tmp_path / "o")))
    assert "rb-rio/tcp-red" in line or "rb-rio/mixed-red" in line, line


def test_an_unreadable_file(tmp_path, monkeypatch):
    """Root reads every file, so permission is refused by a stand-in for open()."""
    import sys

    load_module = sys.modules["aqmlab.scenario.load"]  # the attribute of that name is the load() function

    target = tmp_path / "secret.toml"
    target.write_text('name = "x"\n')

    def refuse(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(load_module, "open", refuse, raising=False)
    with pytest.raises(ScenarioError) as err:
        read_toml(target)
    assert err.value.lines == [f"{target}: cannot read the scenario file (permission denied)"]


@pytest.mark.parametrize("command", [["plot"], ["quality"], ["report"], ["analyze", "head-to-head"]])
def test_directory_and_file_arguments_of_the_other_commands(tmp_path, command):
    missing = tmp_path / "missing"
    assert str(missing) in one_line(aqmlab(*command, str(missing)))
    afile = tmp_path / "file.txt"
    afile.write_text("x")
    folder = tmp_path / "folder"
    folder.mkdir()
    wrong = folder if command[0] == "analyze" else afile  # analyze takes a file, the others a directory
    assert str(wrong) in one_line(aqmlab(*command, str(wrong)))
