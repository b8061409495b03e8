"""The README as a doctest (issue 23 point 10: its examples must run as written).

* Every `aqmlab` command in its bash examples parses with the real command line (subcommand,
  options, choices), and the quick ones (`aqmlab run ...`, a second or two each) run as written,
  from a temporary working directory (`/tmp/` in an `--out` becomes a temporary folder).
* The command synopsis names only commands and options that exist.
* Each documented error line is what the command that causes it prints.
* The Python snippets run, in order, after those commands, in the same working directory.
"""

from __future__ import annotations

import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from aqmlab.cli import main
from conftest import REPO, aqmlab

README = REPO / "README.md"
#: Commands cheap enough to run as written in the test suite (the others are parsed only:
#: reproductions, sweeps over grids, the emulator, which needs root).
RUN = ("run",)


def _blocks() -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def _commands(text: str) -> list[list[str]]:
    """The aqmlab command lines of a bash block (continuations joined, comments and a leading
    `sudo` or `pip install . &&` dropped)."""
    found = []
    for line in text.replace("\\\n", " ").splitlines():
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words[:1] == ["sudo"]:
                words = words[1:]
            if words[:1] == ["aqmlab"]:
                found.append(words[1:])
    return found


def _synopsis(text: str) -> bool:
    return "PAPER" in text


def _unparsed(ctx: click.Context) -> list[str]:
    with warnings.catch_warnings():  # click 8.2 deprecates protected_args, but still keeps them apart
        warnings.simplefilter("ignore", DeprecationWarning)
        return [*ctx.protected_args, *ctx.args]


def _parse(args: list[str]) -> None:
    """Parses a command line as `aqmlab` would, without running it (a bad subcommand, option or
    choice raises click's usage error)."""
    ctx = main.make_context("aqmlab", list(args))
    cmd: click.Command = main
    rest = _unparsed(ctx)
    while isinstance(cmd, click.Group):
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None, name
        ctx = sub.make_context(name or "", rest, parent=ctx)
        cmd, rest = sub, _unparsed(ctx)


def _example_commands() -> list[list[str]]:
    return [c for lang, text in _blocks() if lang == "bash" and not _synopsis(text) for c in _commands(text)]


def test_the_readme_has_examples_of_each_kind():
    kinds = {lang for lang, _ in _blocks()}
    assert {"bash", "python"} <= kinds
    assert {c[0] for c in _example_commands()} >= {"run", "reproduce", "sweep", "report", "emulate"}


@pytest.mark.parametrize("args", _example_commands(), ids=lambda a: " ".join(a)[:60])
def test_every_example_command_parses(args):
    _parse(args)


def test_the_synopsis_names_real_commands_and_options():
    (text,) = [t for lang, t in _blocks() if lang == "bash" and _synopsis(t)]
    for line in text.splitlines():
        words = line.split("#")[0].split()
        assert words[0] == "aqmlab", line
        cmd: click.Command = main
        for w in words[1:]:
            if isinstance(cmd, click.Group) and w in cmd.commands:
                cmd = cmd.commands[w]
        assert cmd is not main, line
        options = {o for p in cmd.params for o in p.opts + p.secondary_opts}
        for opt in re.findall(r"--[a-z-]+", line.split("#")[0]):
            assert opt in options, f"{line}: {opt} is not an option of {cmd.name}"


def test_documented_errors_are_what_the_commands_print(tmp_path):
    errors = [line for lang, text in _blocks() if lang == "" for line in text.splitlines()
              if line.startswith("error: ")]
    assert len(errors) == 2
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    builtin = REPO / "python" / "aqmlab" / "scenarios" / "rb-rio" / "tcp-droptail.toml"
    (scenarios / "x.toml").write_text(f'extends = "{builtin}"\n[topology.bottleneck]\nrate = "25Mbs"\n')
    typo = aqmlab("run", "scenarios/x.toml", "--out", "o", cwd=tmp_path)
    overridden = aqmlab("run", "rb-rio/tcp-red", "--out", "o", "--set", "duration=5s", cwd=tmp_path)
    assert (typo.returncode, overridden.returncode) == (2, 2)
    assert [typo.stderr, overridden.stderr] == [f"{e}\n" for e in errors]
    assert not (tmp_path / "o").exists()


def test_the_examples_run_as_written_and_then_the_python_snippets(tmp_path, monkeypatch):
    ran = 0
    for args in _example_commands():
        if args[0] not in RUN:
            continue
        args = [a.replace("/tmp/", f"{tmp_path}/") for a in args]
        done = aqmlab(*args, cwd=tmp_path)
        assert done.returncode == 0, f"aqmlab {shlex.join(args)}: {done.stderr}"
        ran += 1
    assert ran >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__main__"}
    snippets = [text for lang, text in _blocks() if lang == "python"]
    assert len(snippets) >= 2
    for i, text in enumerate(snippets):
        exec(compile(text, f"<README python snippet {i}>", "exec"), namespace)
    assert not (Path(tmp_path) / "results" / "red30").exists()  # the API wrote nothing it was not asked to
