"""One self-contained HTML report: no network needed to open it, light and dark themes."""

from __future__ import annotations

import html
from typing import Any

from ledger.core.markdown import fmt, signed
from ledger.render import htmlparts, plots
from ledger.render.report import BASELINE_HEADERS, WATERMARK, baseline_cells, flag_note

CSS = """
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #5b6370; --line: #d8dde3;
        --ok: #2e9e44; --bad: #d0453b; --warn: #b07800; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0f1216; --fg: #e6e9ee; --muted: #9aa3af; --line: #2a3038; --warn: #e0a100; }
}
body { background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto;
       max-width: 62rem; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .5rem; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.muted { color: var(--muted); } .override { color: var(--warn); font-weight: 600; }
.confirmed { color: var(--ok); } .refuted { color: var(--bad); }
figure.plot { margin: 1rem 0 1.5rem; color: var(--fg); } figure.plot svg { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: .85rem; }
pre.reflection-text { white-space: pre-wrap; font-size: .85rem; }
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render(data: dict[str, Any], gates: dict[str, tuple[str, str]]) -> str:
    """``gates``: gate -> (metric, unit) from ledger.toml."""
    sections = []
    versions = data["versions"]
    if versions:
        rows = [
            [
                _e(v["id"]),
                _e(v["bet"]),
                _e(v["gate"]),
                f'<span class="{_e(v["verdict"])}">{_e(v["verdict"])}</span>'
                + (' <span class="override">override</span>' if v["override"] else "")
                + (f' <span class="override">{_e(note.strip())}</span>' if note else ""),
                _e(v["n"] if v["n"] is not None else "—"),
                _e(signed(v["delta"])),
                _e(fmt(v["threshold"])),
                _e(v["outcome"] or "—"),
            ]
            for v, note in ((v, flag_note(v)) for v in versions)
        ]
        sections.append(
            '<section id="versions"><h2>Versions</h2>'
            + _table(
                ["version", "bet", "gate", "verdict", "n", "Δ", "threshold", "outcome"],
                rows,
                {4, 5, 6},
            )
            + "</section>"
        )
    if data["baseline"]:
        rows = [[_e(cell) for cell in baseline_cells(b)] for b in data["baseline"]]
        sections.append(
            '<section id="baseline"><h2>Standing baseline</h2>'
            + _table(list(BASELINE_HEADERS), rows, {3, 4, 5})
            + "</section>"
        )
    sections += [
        htmlparts.compare_section(data),
        htmlparts.metrics_section(data),
        htmlparts.reflections_section(data),
    ]
    figures = []
    best = {b["gate"]: b for b in data["baseline"]}
    reflections = [r["after"] for r in data["reflections"] if r["complete"]]
    phase = (
        data["phase"]["declared_after"]
        if data["phase"] and data["phase"].get("state") == "parked"
        else None
    )
    for gate, points in data["series"].items():
        if not points:
            continue
        metric, unit = gates.get(gate, (gate, ""))
        svg = plots.gate_svg(gate, metric, unit, points, best.get(gate), reflections, phase)
        figures.append(
            f'<figure class="plot" id="plot-{_e(gate)}" data-gate="{_e(gate)}">{svg}'
            f"<figcaption>Gate <b>{_e(gate)}</b>: mean {_e(metric)} per version (±1 SE), "
            "markers by verdict, the standing baseline and its ±2σ noise band; dotted lines are "
            "reflections.</figcaption></figure>"
        )
    if figures:
        sections.append(
            '<section id="plots"><h2>Trajectories per gate</h2>' + "".join(figures) + "</section>"
        )
    for m in data["matrices"]:
        if not m["cells"]:
            continue
        names = sorted(m["cells"])
        deltas = [float(m["cells"][n].get("delta") or 0.0) for n in names]
        colours = ["#2e9e44" if n == m["winner"] else "#8a8f98" for n in names]
        svg = plots.bars_plot(
            f"matrix-{m['id']}",
            f"matrix {m['id']}: Δ per cell vs the shared baseline",
            [f"{m['id']}.{n}" for n in names],
            deltas,
            "Δ",
            0.0,
            "baseline",
            colours,
            threshold=htmlparts.matrix_threshold(m["cells"]),
        )
        sections.append(
            f'<section class="matrix" id="matrix-{_e(m["id"])}"><h2>Matrix {_e(m["id"])}</h2>'
            f'<figure class="plot matrix-plot">{svg}<figcaption>Winner: {_e(m["winner"] or "none")}'
            "</figcaption></figure></section>"
        )
    if data.get("batches"):
        b = data["batches"]
        svg = plots.line_plot(
            "batches",
            "pass ratio per batch",
            b["ratios"],
            "pass ratio",
            b["bar"],
            f"convergence bar {b['bar']:g}",
        )
        sections.append(
            f'<section id="batches"><h2>Batches</h2><figure class="plot">{svg}</figure></section>'
        )
    if data.get("candidates"):
        cands = data["candidates"]
        labels = [f"#{c['seq']} {c['commit'][:7]}" for c in cands]
        for measure, title in (
            ("speed", "speed per candidate"),
            ("peak_cpu_gb", "peak CPU memory per candidate"),
        ):
            values = [c["measurements"].get(measure) for c in cands]
            numbers = [float(v) if isinstance(v, int | float) else 0.0 for v in values]
            base = next(
                (
                    float(c["measurements"][measure])
                    for c in cands
                    if c["verdict"] == "base"
                    and isinstance(c["measurements"].get(measure), int | float)
                ),
                None,
            )
            svg = plots.bars_plot(
                f"campaign-{measure}", title, labels, numbers, measure, base, "base"
            )
            sections.append(
                f'<section class="campaign" id="campaign-{measure}"><h2>{_e(title)}</h2>'
                f'<figure class="plot">{svg}</figure></section>'
            )
    if data["triggers"]:
        items = "".join(
            f"<li><b>{_e(t['rule'])}</b>: {_e(t['message'])}</li>" for t in data["triggers"]
        )
        sections.append(
            f'<section id="triggers"><h2>Triggers firing</h2><ul>{items}</ul></section>'
        )
    if data["overrides"]:
        items = "".join(
            f'<li><span class="override">{_e(o["id"])}</span>: {_e(o["reason"])}</li>'
            for o in data["overrides"]
        )
        sections.append(
            f'<section id="overrides"><h2>Overrides used</h2><ul>{items}</ul></section>'
        )
    if data.get("history"):
        from ledger.render.report import history_line

        items = "".join(
            f'<li class="{_e(n["kind"])}">{_e(history_line(n))}</li>' for n in data["history"]
        )
        sections.append(
            f'<section id="history"><h2>History notes (git ledger verify)</h2><ul>{items}</ul>'
            "</section>"
        )
    title = f"git-ledger report: {data['dir']}/ ({data['preset']})"
    return (
        "<!doctype html>\n" + WATERMARK + '\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{_e(title)}</h1><p class="muted">{_e(data["generator"])} at '
        f"{_e((data['commit'] or 'unborn')[:10])}</p></header>"
        + "".join(sections)
        + "<script>document.documentElement.dataset.plots = "
        "String(document.querySelectorAll('figure.plot svg').length);</script></body></html>\n"
    )
