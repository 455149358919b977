"""The HTML report's tables escape their cells at once, as cell by cell would."""

from __future__ import annotations

import html

import pytest

from ledger.render.htmlparts import _cells


def _one_by_one(rows: list[list[str]]) -> str:
    return "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )


@pytest.mark.parametrize(
    "rows",
    [
        [],
        [[""]],
        [["a", ""], ["", "b"]],
        [["V1", "<b>&'\"</b>", "—"], ["V2", "x > y", "1 & 2"]],
        [["holds \x1f a separator", "b"], ["c", "d"]],
        [["holds \x1e a separator"], ["e"]],
        [["a", "b"], []],
    ],
    ids=["none", "one-empty", "empties", "specials", "cell-sep", "row-sep", "empty-row"],
)
def test_cells_escaped_at_once_are_the_cells_escaped_one_by_one(rows: list[list[str]]) -> None:
    assert _cells(rows) == _one_by_one(rows)
