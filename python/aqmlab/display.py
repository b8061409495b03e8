"""Printing result tables where they go: the rich layout on a terminal, full Markdown tables
when stdout is a pipe or a file (logs and CI keep every column and every digit, never an
ellipsis), and one JSON document with ``--json``.

A command adds its tables to a :class:`TablePrinter` and calls :meth:`TablePrinter.finish`
once: text modes print each table as it is added, JSON prints everything at the end so that
stdout holds exactly one document (``aqmlab reproduce rb-rio --json | jq``). Notes that
accompany a table (where files went, the published source) go to stderr in JSON mode.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # pandas loads only when a table is printed, not at every command's start
    import pandas as pd


@dataclass
class Cells:
    """A table already in text: its headers and rows of cells, what the text modes print; a
    command that builds its cells itself prints them without pandas (`aqmlab run`, issue 22)."""

    headers: list[str]
    rows: list[list[str]]

    def __len__(self) -> int:
        return len(self.rows)


def _cells(df: pd.DataFrame | Cells) -> tuple[list[str], list[list[str]]]:
    """Headers and cells as the text modes show them (str of each value, as before)."""
    if isinstance(df, Cells):
        return [str(c) for c in df.headers], [[str(v) for v in row] for row in df.rows]
    headers = [str(c) for c in df.columns]
    return headers, [[str(v) for v in row] for row in df.itertuples(index=False)]


def markdown(df: pd.DataFrame | Cells) -> str:
    """A pipe table of the cells exactly as str() shows them (no re-rounding of numbers)."""
    from tabulate import tabulate  # type: ignore[import-untyped]

    headers, rows = _cells(df)
    align = ["right" if all(_numeric(r[i]) for r in rows) else "left" for i in range(len(headers))]
    return tabulate(rows, headers, tablefmt="pipe", disable_numparse=True, colalign=align)


def _numeric(cell: str) -> bool:
    """Whether a cell reads as a number (or as the missing-value marks), for alignment; a number
    may have thousands separators and a unit after a space ("1,174", "4,156 k")."""
    if cell in ("", "-", "nan", "None", "<NA>"):
        return True
    try:
        float(cell.split(" ")[0].replace(",", ""))
    except ValueError:
        return False
    return True


def records(df: pd.DataFrame | Cells) -> list[dict[str, Any]]:
    """The rows as JSON objects; NaN and missing values become null (text cells stay text)."""
    if isinstance(df, Cells):
        return [dict(zip(df.headers, row, strict=True)) for row in df.rows]
    return json.loads(df.to_json(orient="records", double_precision=15))


@dataclass
class TablePrinter:
    """Collects a command's tables and prints them in the form that fits stdout."""

    as_json: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        if self.as_json:
            return "json"
        return "rich" if self.stream.isatty() else "markdown"

    def table(self, key: str, title: str, df: pd.DataFrame | Cells, json_df: pd.DataFrame | None = None,
              sections: list[int] | None = None, left_columns: tuple[str, ...] = ("scenario", "qdisc"),
              no_wrap: tuple[str, ...] = ()) -> None:
        """Shows `df` (cells as text) under `title`; in JSON, `json_df` (default `df`) with its
        numbers as numbers. `sections`: row indices after which the rich layout draws a rule;
        `left_columns`: the text columns the rich layout aligns left (numbers align right);
        `no_wrap`: columns the rich layout keeps on one line (a field path that must stay
        copyable), the others folding to make room."""
        if self.mode == "json":
            self.tables[key] = {"title": title, "rows": records(df if json_df is None else json_df)}
        elif self.mode == "rich":
            self._rich(title, df, set(sections or ()), left_columns, set(no_wrap))
        else:
            self.stream.write(f"{title}\n\n{markdown(df)}\n\n")
            self.stream.flush()

    def _rich(self, title: str, df: pd.DataFrame | Cells, sections: set[int], left_columns: tuple[str, ...],
              no_wrap: set[str]) -> None:
        # rich loads only in this mode: a pipe or a file gets Markdown, without it.
        from rich.console import Console
        from rich.table import Table

        t = Table(title=title, title_justify="left", header_style="bold")
        headers, rows = _cells(df)
        for col in headers:
            # fold, not ellipsis: on a narrow terminal a number wraps instead of losing digits
            t.add_column(col, justify="left" if col in left_columns else "right", overflow="fold",
                         no_wrap=col in no_wrap)
        for i, row in enumerate(rows):
            t.add_row(*row, end_section=i in sections)
        Console(file=self.stream).print(t)

    def note(self, text: str) -> None:
        """A line about the tables (the published source, where files were written)."""
        if self.mode == "json":
            sys.stderr.write(text + "\n")
        elif self.mode == "rich":
            from rich.console import Console
            from rich.markup import escape

            Console(file=self.stream).print(f"[dim]{escape(text)}[/]", highlight=False)
        else:
            self.stream.write(text + "\n")

    def finish(self, **extra: Any) -> None:
        """In JSON mode, prints the one document: {"tables": {...}, **extra}."""
        if self.mode == "json":
            self.stream.write(json.dumps({"tables": self.tables, **extra}, indent=1, default=str) + "\n")
            self.stream.flush()
