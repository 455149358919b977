"""The terminal boundary: JSON for machines, rich tables for people, plain text when piped.

Colour and boxes only when stdout is a terminal; piped output is plain,
stable, tab-free text so scripts and diffs do not churn.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def is_tty() -> bool:
    return sys.stdout.isatty()


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def say(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def note(text: str) -> None:
    """A line about what the command is doing, beside its output (stderr: ``--json`` stays JSON)."""
    sys.stderr.write(f"git-ledger: {text}\n")


def warn(text: str) -> None:
    sys.stderr.write(f"git-ledger: warning: {text}\n")


def error(text: str) -> None:
    sys.stderr.write(f"git-ledger: error: {text}\n")


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [["" if c is None else str(c) for c in row] for row in rows]
    if is_tty():
        from rich.console import Console
        from rich.table import Table

        rich_table = Table(title=title, title_justify="left")
        for column in columns:
            rich_table.add_column(column)
        for row in cells:
            rich_table.add_row(*row)
        Console().print(rich_table)
        return
    if title:
        say(title)
    widths = [len(c) for c in columns]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    say("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=False)).rstrip())
    for row in cells:
        say("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip())
