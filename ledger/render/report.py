"""The report's data (one gathering for md, json and html) and its markdown.

Markdown is a compact pull-request comment: stable for the same ledger (no
clock in it), with a watermark line so a bot re-running ``git ledger report``
updates the same comment instead of adding another.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from ledger import __version__
from ledger.core.context import Context
from ledger.core.markdown import fmt, signed
from ledger.core.model.ids import VersionId
from ledger.core.state import LedgerState
from ledger.presets.versions import rules
from ledger.presets.versions.baseline import baseline_rows
from ledger.presets.versions.compare_table import status_of
from ledger.presets.versions.metrics import Summaries, metric_rows

WATERMARK = "<!-- git-ledger:report -->"


def _cell(text: object) -> str:
    return str("" if text is None else text).replace("|", "\\|").replace("\n", " ")


def _determinism(ctx: Context, state: LedgerState, ids: set[str]) -> list[dict[str, Any]]:
    """The stored DETERMINISM outcomes of the versions in the report."""
    import json

    prefix = f"{ctx.dir}/determinism/"
    snap = ctx.store.snapshot()
    out = []
    for path in sorted(p for p in state.files if p.startswith(prefix) and p.endswith(".json")):
        try:
            item = json.loads(snap.read(path) or b"")
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("version") in ids and "gate" in item:
            out.append(item)
    return out


def flag_note(version: dict[str, Any]) -> str:
    """What a reader must know about a version's results: measured on a dirty tree, or
    before any code commit of the version (conclude refuses both without --override)."""
    notes = []
    if version.get("dirty"):
        notes.append(f"{version['dirty']} on a dirty tree")
    if version.get("before_code"):
        notes.append(f"{version['before_code']} before code")
    if version.get("yellow_flag"):
        notes.append("yellow flag: " + str(version["yellow_flag"]).split(" (more than", 1)[0])
    return f" ({'; '.join(notes)})" if notes else ""


def _fork(ctx: Context) -> tuple[str, str, str] | None:
    """(branch, default branch, merge base) when HEAD is on a feature branch."""
    from ledger.core.branches import current_branch, fork_point

    if ctx.store.workdir is None:
        return None
    # The checked-out branch asked once (fork_point asked git for it again): a detached
    # HEAD has no fork, and a report spawns one git fewer.
    branch = current_branch(ctx.store.workdir)
    if branch is None:
        return None
    fork = fork_point(ctx.store.workdir, branch)
    return (branch, *fork) if fork is not None else None


def gather(ctx: Context, since: str | None, everything: bool = True) -> dict[str, Any]:
    """The report's data; ``everything=False`` (``report`` without ``--all``): on a
    feature branch, only the versions registered since its merge base with the
    default branch (what the pull request adds)."""
    state = ctx.state()
    limit = state.version_key(since) if since else None
    if since and state.version(since) is None:
        from ledger.core.errors import BadInput

        raise BadInput(f"--since {since}: no such version", "see 'git ledger status'")
    in_range = [v for v in state.versions if limit is None or state.version_key(v.id) >= limit]
    fork = None if everything or since else _fork(ctx)
    before: LedgerState | None = None
    if fork is not None:
        before = ctx.state(ctx.store.snapshot(fork[2]))
        old = {v.id for v in before.versions}
        in_range = [v for v in in_range if v.id not in old]
    from ledger.presets.versions.readiness import flags_of

    flagged = flags_of(ctx.store, state, [v.id for v in in_range])
    # Each version's results and values, read once for the every-metric table, the
    # compare table and the series.
    summaries = Summaries(state)
    versions = []
    for v in in_range:
        c = v.front.conclusion
        target = c.gates[0] if c and c.gates else None
        versions.append(
            {
                "id": v.id,
                "bet": v.front.bet,
                "gate": v.front.gate,
                "matrix": v.front.matrix,
                "verdict": status_of(v),  # a voided version is void, whatever it had
                "override": c.override if c else None,
                "yellow_flag": c.yellow_flag if c else None,
                "n": target.n if target else None,
                "mean": target.mean if target else None,
                "delta": target.delta if target else None,
                "threshold": target.threshold if target else None,
                "se": target.se if target else None,
                "outcome": target.outcome if target else None,
                "baseline_version": target.baseline_version if target else None,
                "metrics": metric_rows(
                    state,
                    v.id,
                    v.front.gate,
                    target.baseline_version if target else None,
                    summaries,
                ),
                "dirty": len(flagged[v.id].dirty),
                "before_code": len(flagged[v.id].before_code),
            }
        )
    before = before if fork is not None else _before(state, limit)
    old_best = {r.gate: r.version for r in baseline_rows(before)} if before is not None else {}
    baseline = []
    for row in baseline_rows(state):
        data = asdict(row)
        data["change"] = (
            ""
            if old_best.get(row.gate) == row.version
            else (f"new best (was {old_best[row.gate]})" if row.gate in old_best else "established")
        )
        baseline.append(data)
    report: dict[str, Any] = {
        "schema": 1,
        "generator": f"git-ledger {__version__}",
        "commit": state.commit_id,
        "dir": ctx.dir,
        "preset": ctx.config.ledger.preset,
        "since": since,
        "branch": ({"name": fork[0], "default": fork[1], "merge_base": fork[2]} if fork else None),
        "versions": versions,
        "baseline": baseline,
        "triggers": [{"rule": f.rule, "message": f.message} for f in rules.triggers(state)],
        "overrides": [{"id": v["id"], "reason": v["override"]} for v in versions if v["override"]],
        "determinism": _determinism(ctx, state, {str(v["id"]) for v in versions}),
        "reflections": [
            {
                "id": r.front.id,
                "after": r.front.after,
                "complete": r.complete,
                "text": _body(ctx, state, r.path),
            }
            for r in state.reflections
        ],
        "phase": state.phase.model_dump(mode="json") if state.phase else None,
        "matrices": [
            {
                "id": m.id,
                "winner": m.winner,
                "concluded": m.concluded,
                "cells": {n: s.model_dump(mode="json") for n, s in m.comparison.items()},
            }
            for _, m in state.matrices
        ],
        "series": _series(state, summaries),
        "compare": _compare(ctx, state, {v.id for v in in_range}, summaries),
        "history": _history(ctx),
    }
    from ledger.core.loops import preset_for

    report.update(preset_for(ctx.config).report_section(ctx))
    return report


def _body(ctx: Context, state: LedgerState, path: str) -> str:
    """A markdown entry's text below its front matter."""
    raw = ctx.store.snapshot(state.commit_id).read(path) or b""
    text = raw.decode("utf-8", errors="replace")
    if text.startswith("---\n") and "\n---\n" in text[4:]:
        text = text[4:].split("\n---\n", 1)[1]
    return text.strip()


def _compare(
    ctx: Context, state: LedgerState, ids: set[str], summaries: Summaries | None = None
) -> dict[str, Any] | None:
    """The versions in range side by side (``git ledger compare``'s table)."""
    from ledger.presets.versions.compare_table import Filters, build

    if not ids or not ctx.config.gates:
        return None
    return build(ctx, state, Filters(), only=ids, summaries=summaries)


def _history(ctx: Context) -> list[dict[str, str]]:
    """verify's notes, shown forever: results withdrawn by a whole revert (with the
    revert's reason), replaced results, voided versions, configuration transitions."""
    from ledger.core.verify import history_notes

    return [
        n
        for n in history_notes(ctx.store, ctx.config, ctx.config_file)
        if n["kind"] in ("withdrawn", "replaced", "void", "config", "restored")
    ]


def history_line(note: dict[str, str]) -> str:
    """One note as the reports print it: ``V1 withdrawn: <reason> (path, commit)``."""
    text = note["text"] if note["kind"] != "void" else f"void: {note['text']}"
    where = note["path"] if note["kind"] != "config" else "configuration"
    step = "" if note["kind"] == "config" else f"{note['step']} "
    return f"{step}{text} ({where}, {note['commit'][:10]})"


def _before(state: LedgerState, limit: VersionId | None) -> LedgerState | None:
    if limit is None:
        return None
    return replace(state, versions=[v for v in state.versions if state.version_key(v.id) < limit])


def _series(
    state: LedgerState, summaries: Summaries | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Per gate, per concluded or measured version: mean, spread, verdict (for the plots)."""
    summaries = summaries or Summaries(state)
    return {
        gate: series(state, gate, cfg.metric, summaries)
        for gate, cfg in sorted(state.config.gates.items())
    }


def series(
    state: LedgerState, gate: str, metric: str, summaries: Summaries | None = None
) -> list[dict[str, Any]]:
    """Per measured version of ``gate``: ``metric``'s mean, spread and the version's state."""
    from ledger.core import stats

    summaries = summaries or Summaries(state)
    points = []
    for v in state.versions:
        values = summaries.values(v.id, gate, metric)
        if not values:
            continue
        s = stats.sample(values)
        points.append(
            {
                "id": v.id,
                "mean": s.mean,
                "sd": s.sd,
                "n": s.n,
                "verdict": status_of(v),
                "override": bool(v.front.conclusion and v.front.conclusion.override),
                "matrix": v.front.matrix,
            }
        )
    return points


# The standing-baseline table, one row per gate: the same in markdown and html.
BASELINE_HEADERS = (
    "gate",
    "metric",
    "best",
    "mean",
    "n",
    "σ",
    "latest",
    "Δ vs parent",
    "Δ vs best",
    "status",
    "change",
)


def baseline_cells(b: dict[str, Any]) -> tuple[str, ...]:
    """One gate's row of the standing-baseline table (``gather``'s ``baseline`` item)."""
    return (
        b["gate"],
        f"{b['metric']} ({b['direction']})",
        b["version"],
        fmt(b["mean"]),
        str(b["n"]),
        fmt(b["sigma"]),
        b["latest_version"] or "—",
        fmt(b["delta_vs_parent"]),
        fmt(b["delta_vs_best"]),
        b["status"],
        b["change"] or "—",
    )


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown(data: dict[str, Any]) -> str:
    span = f" since {data['since']}" if data["since"] else ""
    if data.get("branch"):
        fork = data["branch"]
        span = f" for {fork['name']} (since it left {fork['default']} at {fork['merge_base'][:10]})"
    parts = [WATERMARK, f"## git-ledger report{span} ({data['dir']}/, {data['preset']})", ""]
    if data["versions"]:
        parts += [
            "### Versions",
            "",
            table(
                ["version", "bet", "gate", "verdict", "n", "Δ", "threshold", "outcome"],
                [
                    [
                        v["id"],
                        v["bet"],
                        v["gate"],
                        v["verdict"] + (" (override)" if v["override"] else "") + flag_note(v),
                        v["n"] if v["n"] is not None else "—",
                        signed(v["delta"]),
                        fmt(v["threshold"]),
                        v["outcome"] or "—",
                    ]
                    for v in data["versions"]
                ],
            ),
        ]
    metric_lines = [
        [
            v["id"],
            m["metric"] + (" (primary)" if m["primary"] else ""),
            m["n"],
            fmt(m["mean"]),
            signed(m["delta"]) + (f" vs {m['baseline']}" if m["baseline"] else ""),
        ]
        for v in data["versions"]
        for m in v.get("metrics", [])
        if m["n"]
    ]
    if metric_lines:
        parts += [
            "### Every metric",
            "",
            table(["version", "metric", "n", "mean", "Δ"], metric_lines),
        ]
    if data["baseline"]:
        parts += [
            "### Standing baseline",
            "",
            table(
                list(BASELINE_HEADERS),
                [list(baseline_cells(b)) for b in data["baseline"]],
            ),
        ]
    if data["triggers"]:
        parts += (
            ["### Triggers firing", ""]
            + [f"- **{t['rule']}**: {t['message']}" for t in data["triggers"]]
            + [""]
        )
    if data.get("determinism"):
        parts += (
            ["### DETERMINISM", ""]
            + [
                f"- **{d['version']}** `{d['gate']}`: {'PASS' if d['pass'] else 'FAIL'}"
                + "".join(
                    f"; seed {s['seed']}: first divergent field {s['first_divergence']}"
                    for s in d.get("seeds", [])
                    if s.get("first_divergence")
                )
                for d in data["determinism"]
            ]
            + [""]
        )
    if data["overrides"]:
        parts += (
            ["### Overrides used", ""]
            + [
                f"- **{o['id']}**: concluded against the statistics: {o['reason']}"
                for o in data["overrides"]
            ]
            + [""]
        )
    if data.get("history"):
        parts += (
            ["### History notes (git ledger verify)", ""]
            + [f"- {_cell(history_line(n))}" for n in data["history"]]
            + [""]
        )
    for m in data["matrices"]:
        if m["cells"]:
            parts += [
                f"### Matrix {m['id']} (winner: {m['winner'] or 'none'})",
                "",
                table(
                    ["cell", "n", "mean", "Δ", "SE", "outcome"],
                    [
                        [
                            f"{m['id']}.{name}",
                            s["n"],
                            fmt(s["mean"]),
                            signed(s.get("delta")),
                            fmt(s.get("se")),
                            s["outcome"],
                        ]
                        for name, s in sorted(m["cells"].items())
                    ],
                ),
            ]
    if data.get("candidates"):
        names = sorted({k for c in data["candidates"] for k in c["measurements"]})
        units = data.get("units") or {}
        parts += [
            "### Candidates",
            "",
            table(
                [
                    "#",
                    "commit",
                    "verdict",
                    *[f"{n} ({units[n]})" if n in units else n for n in names],
                    "n",
                    "σ",
                    "Δ vs head",
                    "threshold",
                    "judged",
                    "reason",
                    "notes",
                ],
                [
                    [
                        c["seq"],
                        c["commit"][:10] + (" (invalidated)" if c["invalidated"] else ""),
                        c["verdict"],
                        *[c["measurements"].get(n, "") for n in names],
                        *_judged(c.get("comparison")),
                        c["reason"],
                        c.get("notes", ""),
                    ]
                    for c in data["candidates"]
                ],
            ),
            *[
                f"- benchmark adjustment {e['epoch']}: {e['reason']}"
                for e in data.get("adjustments", [])
            ],
            "",
        ]
    if data.get("batches"):
        b = data["batches"]
        parts += [
            "### Batches",
            "",
            table(
                ["batch", "pass ratio", "≥ bar"],
                [
                    [i, f"{r:.3f}", "yes" if r >= b["bar"] else "no"]
                    for i, r in enumerate(b["ratios"])
                ],
            ),
            f"Converged: {'yes' if b['converged'] else 'no'} (bar {b['bar']:g})",
            "",
        ]
    commit = (data["commit"] or "unborn")[:10]
    parts += [
        f"<sub>{data['generator']} at {commit}; re-run `git ledger report` to update this comment.</sub>",
        "",
    ]
    return "\n".join(parts)


def _judged(comparison: dict[str, Any] | None) -> list[str]:
    """A campaign candidate's comparison with the head: n, σ, Δ, the threshold, the
    verdict it allowed (diagnostic only without a noise estimate)."""
    if not comparison:
        return ["", "", "", "", ""]
    sigma, threshold = comparison.get("sigma"), comparison.get("threshold")
    outcome = str(comparison.get("outcome", ""))
    return [
        f"{comparison.get('n')} vs {comparison.get('n_head')}",
        "none" if sigma is None else f"{sigma:.4g}",
        f"{comparison.get('delta', 0.0):+.4g}",
        "none" if threshold is None else f"{threshold:.4g}",
        outcome + (" (diagnostic only)" if comparison.get("diagnostic") else ""),
    ]
