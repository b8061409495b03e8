"""Which directories aqmlab may replace: only its own.

Every output directory aqmlab creates (a run's results, a reproduction, a comparison, a sweep,
a capture's analysis) holds the marker file :data:`MARKER`. ``--force`` replaces a directory
only when it carries that marker; anything else at ``--out`` (a directory of the user's own
files, a regular file, a symbolic link, the working directory or one of its parents, a mount
point) is refused with one line and left untouched. Without ``--force`` an existing target is
always refused.

Directories written before the marker existed (aqmlab up to this change) are recognised by
their layout, strictly: every top-level entry must be a name (or, for a run's results, a file
type) that aqmlab writes there, and the layout's signature files must be present. A directory
holding anything else, such as a file the user added, is refused; the message says how to
remove it by hand. Subdirectories are not inspected: ``--force`` replaces the whole directory,
files added inside its ``tables/`` or ``figures/`` included.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The marker file in every directory aqmlab writes; its presence is what lets --force replace it.
MARKER = ".aqmlab-results"
#: The marker's content: constant, so that the same run gives the same bytes.
MARKER_TEXT = ("This directory was written by aqmlab. `--force` replaces only directories that hold "
               "this file; delete the file to keep aqmlab from ever replacing the directory.\n")

#: Layouts of output directories written before the marker existed: (signature entries that must
#: all be present, entries allowed at the top level, file suffixes allowed at the top level).
_LEGACY_LAYOUTS: tuple[tuple[frozenset[str], frozenset[str], frozenset[str]], ...] = (
    # aqmlab run / emulate (python/aqmlab/run.py) plus what plot and quality add to it
    (frozenset({"summary.json", "scenario.toml"}), frozenset(),
     frozenset({".parquet", ".csv", ".json", ".toml", ".pcap", ".png", ".mp4"})),
    # aqmlab reproduce / compare (python/aqmlab/reproduce/, compare.py)
    (frozenset({"tables"}), frozenset({"tables", "figures", "data", "runs", "report.md", "measurements.json",
                                       "clips.json"}), frozenset()),
    # aqmlab sweep (python/aqmlab/sweep.py) and each of its stored runs
    (frozenset({"sweep.json"}), frozenset({"runs", "runs.parquet", "points.parquet", "failed.csv", "sweep.json",
                                           "report.html"}), frozenset()),
    (frozenset({"run.json"}), frozenset({"run.json", "scenario.toml", "metrics.parquet", "error.txt"}), frozenset()),
    # aqmlab analyze head-to-head (python/aqmlab/analysis/pcap.py write_outputs)
    (frozenset({"summary.csv", "summary.json"}), frozenset(), frozenset({".csv", ".md", ".json", ".png"})),
)


class OutputRefused(FileExistsError):
    """The output path holds something aqmlab did not write (or may not replace); one line."""


def write_marker(folder: Path) -> None:
    """Marks a directory that aqmlab is creating as its own."""
    (Path(folder) / MARKER).write_text(MARKER_TEXT)


def is_aqmlab_output(folder: Path) -> bool:
    """Whether `folder` is a directory aqmlab wrote: it holds the marker, or (written before the
    marker existed) it has exactly one of aqmlab's known layouts."""
    folder = Path(folder)
    if (folder / MARKER).is_file():
        return True
    entries = {p.name for p in folder.iterdir() if not p.name.startswith(".")}
    for signature, names, suffixes in _LEGACY_LAYOUTS:
        if not entries or not signature <= entries:
            continue
        if all(e in names or (Path(e).suffix in suffixes and (folder / e).is_file()) for e in entries):
            return True
    return False


def check_output(target: Path, force: bool, option: str = "--out", force_name: str = "--force") -> None:
    """Raises OutputRefused (one line) unless `target` may be written: it does not exist, or
    `force` is given and it is a directory aqmlab wrote (or an empty directory). Called before
    any work starts and again just before the final rename. `option` and `force_name` are how
    the caller's user spells the target and the force (`--out`/`--force` on the command line,
    `out`/`force=True` in the Python API), so that the message names what they wrote."""
    target = Path(target)
    shown = f"{option} {target}" if option else str(target)
    if target.is_symlink():
        raise OutputRefused(f"{shown} is a symbolic link; aqmlab replaces only a directory it wrote, "
                            "never a link or what it points to: choose another path")
    if not target.exists():
        return
    resolved = target.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        what = "the working directory" if resolved == cwd else "a parent of the working directory"
        raise OutputRefused(f"{shown} is {what}; aqmlab never replaces it: give a new directory name")
    if not target.is_dir():
        raise OutputRefused(f"{shown} is a file, not a results directory; aqmlab will not replace it: "
                            "choose another path or remove the file yourself")
    if os.path.ismount(target):
        raise OutputRefused(f"{shown} is a mount point; aqmlab will not replace it: give a directory inside it")
    if not force:
        raise OutputRefused(f"{shown} exists; pass {force_name} to replace it")
    if not any(target.iterdir()) or is_aqmlab_output(target):
        return
    raise OutputRefused(f"{shown} is not a directory aqmlab wrote (no {MARKER} file) and {force_name} replaces "
                        f"only those: choose another path, or if it is an aqmlab result you no longer need, "
                        f"remove it yourself (rm -r {target})")


def check_sweep_dir(target: Path, option: str = "--out") -> None:
    """Raises OutputRefused unless `target` may hold a sweep: it does not exist, is empty, or
    is a directory aqmlab wrote. A sweep adds its runs to the directory and rewrites its own
    tables there (it is resumable, so an existing sweep directory is reused, not replaced)."""
    target = Path(target)
    shown = f"{option} {target}" if option else str(target)
    if target.is_symlink():
        raise OutputRefused(f"{shown} is a symbolic link; give the sweep a directory of its own")
    if not target.exists():
        return
    if not target.is_dir():
        raise OutputRefused(f"{shown} is a file, not a sweep directory: choose another path")
    if any(target.iterdir()) and not is_aqmlab_output(target):
        raise OutputRefused(f"{shown} holds files aqmlab did not write (no {MARKER} file); a sweep writes "
                            "runs/ and its tables into its directory: give it a new or empty one")


def atomic_write(path: Path, write) -> None:
    """Writes one file through a hidden sibling and renames it into place: never a half-written
    file. `write(tmp)` writes the sibling, whose name keeps `path`'s suffix (writers such as
    matplotlib and pandas pick the format by it)."""
    tmp = path.parent / f".tmp-{os.getpid()}-{path.name}"
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
