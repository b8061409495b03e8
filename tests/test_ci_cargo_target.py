"""The test command builds outside the clone: `.ci/cargo-target` (sourced by .ci/run) points
cargo and maturin at a temporary folder and removes it when the command exits, so no target/
is left in the clone; a CARGO_TARGET_DIR the developer gives is used and kept."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / ".ci" / "cargo-target"


def _source_then(cmd: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", f"set -euo pipefail; source {SCRIPT}; {cmd}"], cwd=REPO, env=env,
                          capture_output=True, text=True, check=check)


def test_builds_go_to_a_temporary_folder_outside_the_clone_removed_at_exit(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"} | {"TMPDIR": str(tmp_path)}
    r = _source_then('touch "$CARGO_TARGET_DIR/built"; echo "DIR=$CARGO_TARGET_DIR"', env)
    folder = Path(r.stdout.split("DIR=")[1].strip())
    assert folder.parent == tmp_path and not folder.is_relative_to(REPO)
    assert f"building in {folder}" in r.stdout
    assert not folder.exists(), "the build folder outlived the test command"


def test_the_folder_is_removed_when_the_command_fails_too(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"} | {"TMPDIR": str(tmp_path)}
    r = _source_then('echo "DIR=$CARGO_TARGET_DIR"; false', env, check=False)
    assert r.returncode != 0
    assert not Path(r.stdout.split("DIR=")[1].strip()).exists()


def test_a_folder_the_developer_gives_is_used_and_kept(tmp_path):
    mine = tmp_path / "cache"
    mine.mkdir()
    r = _source_then('touch "$CARGO_TARGET_DIR/built"', dict(os.environ, CARGO_TARGET_DIR=str(mine)))
    assert f"building in {mine}" in r.stdout
    assert (mine / "built").exists()


def test_the_test_command_sets_the_folder_before_anything_builds():
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    first_build = min(i for i, line in enumerate(lines) if line.startswith(("cargo ", "python3 -m pip")))
    assert lines.index("source .ci/cargo-target") < first_build
