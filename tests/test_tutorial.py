"""docs/tutorial.ipynb runs end to end. Its code cells are executed directly, in order, in one
namespace (as a kernel would, without needing Jupyter: no nbclient, ipykernel or zmq to
install), from a temporary working directory; IPython's `%` magics are skipped. The value of a
cell's last expression is rendered as the notebook would show it (figures drawn to PNG, tables
to text), so a figure that fails to draw fails the test. Set AQMLAB_TUTORIAL_FIGURES=DIR to
keep the figures for looking at them."""

from __future__ import annotations

import ast
import io
import json
import os
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "tutorial.ipynb"


def _code_cells() -> list[tuple[int, str]]:
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    cells = [(i, "".join(c["source"])) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), "stored without outputs"
    return cells


def _show(value: object, keep: Path | None, name: str) -> None:
    """Renders a cell's value as Jupyter would show it."""
    from matplotlib.figure import Figure

    if isinstance(value, Figure):
        buf = io.BytesIO()
        value.savefig(buf, format="png")
        assert buf.getbuffer().nbytes > 1000
        if keep is not None:
            (keep / f"{name}.png").write_bytes(buf.getvalue())
    elif hasattr(value, "to_string"):
        assert value.to_string()  # type: ignore[attr-defined]
    else:
        repr(value)


def test_the_tutorial_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    keep = Path(os.environ["AQMLAB_TUTORIAL_FIGURES"]) if os.environ.get("AQMLAB_TUTORIAL_FIGURES") else None
    namespace: dict[str, object] = {"__name__": "__main__"}
    cells = _code_cells()
    assert len(cells) >= 8
    for index, source in cells:
        lines = [line for line in source.splitlines() if not line.lstrip().startswith("%")]
        tree = ast.parse("\n".join(lines), filename=f"cell {index}")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        try:
            exec(compile(tree, f"<tutorial cell {index}>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), f"<tutorial cell {index}>", "eval"), namespace)
                _show(value, keep, f"cell{index:02d}")
        except Exception as e:  # noqa: BLE001 - reported with the cell that raised it
            pytest.fail(f"tutorial cell {index} raised {type(e).__name__}: {e}\n--- cell ---\n{source}")
    # the last cell saved a results directory into the working directory, and nothing else was written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    assert (tmp_path / "results" / "tutorial-red" / "summary.json").is_file()
