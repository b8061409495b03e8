"""`.ci/debian-packages`, the test command's one step outside PyPI and crates.io: it installs
only the Debian packages whose tool is missing, and says which before it installs them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "debian-packages"


def _fake_bin(tmp_path: Path, present: list[str]) -> tuple[Path, Path]:
    """A PATH holding only `id`, a fake apt-get that logs its calls, and fake `present` tools."""
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir()
    (bin_dir / "id").symlink_to(shutil.which("id"))
    for tool in ["apt-get", "sudo", *present]:
        fake = bin_dir / tool
        body = 'if [ "${0##*/}" = sudo ]; then exec "$@"; fi\necho "${0##*/} $*" >> "$LOG"\n'
        fake.write_text("#!/bin/bash\n" + body)
        fake.chmod(0o755)
    return bin_dir, log


def _run(tmp_path: Path, present: list[str]) -> list[str]:
    bin_dir, log = _fake_bin(tmp_path, present)
    with log.open("a") as out:  # the script's stdout and apt-get's calls in one file, in order
        subprocess.run(["/bin/bash", str(SCRIPT)], stdout=out, check=True,
                       env={**os.environ, "PATH": str(bin_dir), "LOG": str(log)})
    return log.read_text().splitlines()


def test_states_the_missing_packages_then_installs_exactly_those(tmp_path):
    lines = _run(tmp_path, present=["ip", "chromium", "irtt"])
    assert lines[0].startswith("installing Debian packages ethtool ffmpeg iputils-ping (apt-get"), lines
    assert lines[1] == "apt-get update -qq"
    assert lines[2].startswith("apt-get install") and lines[2].split()[-3:] == ["ethtool", "ffmpeg", "iputils-ping"]
    assert len(lines) == 3


def test_the_probe_tools_come_from_their_debian_packages(tmp_path):
    """ping is in iputils-ping, irtt in irtt (the emulated RRUL's probes)."""
    lines = _run(tmp_path, present=["ip", "ethtool", "ffmpeg", "chromium"])
    assert lines[2].split()[-2:] == ["iputils-ping", "irtt"], lines


def test_installs_nothing_when_every_tool_is_there(tmp_path):
    assert _run(tmp_path, present=["ip", "ethtool", "ffmpeg", "chromium", "ping", "irtt"]) == []
