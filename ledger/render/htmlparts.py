"""The HTML report's review sections: versions side by side (``compare``'s table),
every metric of every version, and the reflections' own text."""

from __future__ import annotations

import html
from typing import Any

from ledger.core.markdown import fmt, signed


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


# Cell and row separators for escaping a table's text at once: control characters
# html.escape leaves alone, and that no cell of a ledger holds (else: cell by cell).
_CELL, _ROW = "\x1f", "\x1e"


def _cells(rows: list[list[str]]) -> str:
    """Every row as ``<tr><td>...</td></tr>``, each cell escaped.

    html.escape maps each character on its own, so escaping the cells joined by
    separators it leaves alone is escaping each cell: one call for the table's
    text instead of one per cell (the every-metric table has 16,000 cells at
    1,000 versions, and the calls were most of its cost)."""
    try:
        text = _ROW.join(_CELL.join(row) for row in rows)
    except TypeError:  # a cell that is not text yet
        text = ""
    separators = sum(len(row) - 1 for row in rows)
    if (
        not text
        or not all(rows)
        or text.count(_CELL) != separators
        or text.count(_ROW) != len(rows) - 1
    ):
        return "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    text = html.escape(text).replace(_CELL, "</td><td>").replace(_ROW, "</td></tr><tr><td>")
    return "<tr><td>" + text + "</td></tr>"


def _table(headers: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = _cells(rows)
    attr = f' class="{cls}"' if cls else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def compare_section(data: dict[str, Any]) -> str:
    table = data.get("compare")
    if not table or not table["rows"]:
        return ""
    from ledger.presets.versions.compare_table import columns

    headers, rows = columns(table)
    shown = ", ".join(table["params"]) or "none differ"
    return (
        '<section id="compare"><h2>Versions side by side</h2>'
        f'<p class="muted">Gate <b>{_e(table["gate"])}</b>; parameters that differ: '
        f"{_e(shown)}. Δ against each version's parent: paired over the shared seeds, or a "
        "difference of means.</p>" + _table(headers, rows, "compare") + "</section>"
    )


def metrics_section(data: dict[str, Any]) -> str:
    rows = [
        [
            v["id"],
            m["gate"],
            m["metric"] + (" (primary)" if m["primary"] else ""),
            str(m["n"]),
            fmt(m["mean"]),
            m["baseline"] or "—",
            fmt(m["baseline_mean"]),
            signed(m["delta"]),
        ]
        for v in data["versions"]
        for m in v.get("metrics", [])
    ]
    if not rows:
        return ""
    headers = ["version", "gate", "metric", "n", "mean", "baseline", "baseline mean", "Δ"]
    return '<section id="metrics"><h2>Every metric</h2>' + _table(headers, rows) + "</section>"


def reflections_section(data: dict[str, Any]) -> str:
    items = [r for r in data["reflections"] if r.get("text")]
    if not items:
        return ""
    blocks = "".join(
        f'<details class="reflection" id="reflection-{_e(r["id"])}" open>'
        f"<summary>{_e(r['id'])} (after {_e(r['after'])})"
        f"{'' if r['complete'] else ' — incomplete'}</summary>"
        f'<pre class="reflection-text">{_e(r["text"])}</pre></details>'
        for r in items
    )
    return f'<section id="reflections"><h2>Reflections</h2>{blocks}</section>'


def matrix_threshold(cells: dict[str, dict[str, Any]]) -> tuple[float, str] | None:
    """The Δ a cell had to pass (the largest threshold among the cells, on the side
    the gate's direction favours)."""
    found = [
        (float(c["threshold"]), c.get("direction", "higher"))
        for c in cells.values()
        if c.get("threshold") is not None
    ]
    if not found:
        return None
    level, direction = max(found)
    sign = -1.0 if direction == "lower" else 1.0
    return sign * level, f"threshold {sign * level:+.4g}"
