"""``git ledger show ID``: one entry with its results and the statistics behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.context import open_context
from ledger.core.errors import LedgerError
from ledger.core.markdown import fmt, signed
from ledger.core.model.documents import decode_text, parse_document
from ledger.core.model.entries import MatrixFront
from ledger.core.model.ids import check_safe
from ledger.core.state import LedgerState, load_state
from ledger.core.store import Snapshot, Store
from ledger.presets.versions import readiness
from ledger.presets.versions.verdicts import evidence


def version_data(state: LedgerState, vid: str, store: Store | None = None) -> dict[str, Any]:
    version = state.version(vid)
    if version is None:
        raise state.no_version(vid)
    results = [
        {"path": r.path, **r.data.model_dump(mode="json")}
        for r in state.results
        if r.version == vid
    ]
    conclusion = version.front.conclusion
    if conclusion is not None:
        evidence_rows = [g.model_dump(mode="json") for g in conclusion.gates]
    else:  # the targeted gate first, as conclude will see it (under its frozen config)
        frozen = _frozen(store, state, vid) if store is not None else state
        evidence_rows = [g.model_dump(mode="json") for g in evidence(frozen, vid)]
    reflection = state.reflection_for(vid)
    flags = _flags(store, state, vid) if store is not None else None
    from ledger.presets.versions.compare_table import metric_cell
    from ledger.presets.versions.metrics import metric_rows

    metrics = []
    for e in evidence_rows:
        e["test"] = delta_test(e)
        for row in metric_rows(state, vid, e["gate"], e.get("baseline_version")):
            cell = metric_cell(state.results_for(vid, e["gate"]), [], row["metric"])
            # metric_rows' Δ is of the two means; the evidence's may be paired: say which.
            row.update(sd=cell["sd"], ci95=cell["ci95"], delta_test="difference of means")
            metrics.append(row)
    return {
        "id": vid,
        "kind": "version",
        "path": version.path,
        "state": "void" if version.front.void else "concluded" if conclusion else "open",
        "void": version.front.void,
        "seeds": [seed_table(state, vid, e["gate"]) for e in evidence_rows],
        "registration": version.front.registered(),
        "hypothesis": version.hypothesis.strip(),
        "verdict": conclusion.verdict if conclusion else None,
        "override": conclusion.override if conclusion else None,
        "conclusion": conclusion.model_dump(mode="json", exclude={"gates"}) if conclusion else None,
        "evidence": evidence_rows,
        "metrics": metrics,
        "results": results,
        "reflection": reflection.front.id if reflection else None,
        "flags": {
            "dirty": list(flags.dirty),
            "before_code": list(flags.before_code),
            "mixed": list(flags.mixed),
        }
        if flags
        else {"dirty": [], "before_code": [], "mixed": []},
    }


def delta_test(stat: dict[str, Any]) -> str | None:
    """Which test a gate's Δ is: paired over the shared seeds (or windows), or a
    difference of means."""
    if stat.get("delta") is None:
        return None
    if stat.get("pairing") == "paired":
        return f"paired over {stat['n']} shared seeds"
    if stat.get("pairing") == "walk-forward":
        return f"paired over {stat['n']} matched windows"
    return "difference of means"


def seed_table(state: LedgerState, vid: str, gate: str) -> dict[str, Any]:
    """Every result of ``vid`` on ``gate``, one row per seed (or window) and replicate,
    each metric's value; then each metric's mean, sd and 95% interval."""
    from ledger.presets.versions.compare_table import metric_cell

    cfg = state.config.gates.get(gate)
    results = state.results_for(vid, gate)
    names = [cfg.metric, *sorted(m for m in cfg.metrics if m != cfg.metric)] if cfg else []
    rows = [
        {
            "key": r.key,
            "replicate": r.data.replicate,
            "metrics": {m: r.metrics.get(m) for m in names},
        }
        for r in sorted(results, key=lambda r: (r.key, r.data.replicate or 0))
    ]
    summary = {m: metric_cell(results, [], m) for m in names}
    return {"gate": gate, "metrics": names, "rows": rows, "summary": summary}


def _seed_lines(table: dict[str, Any]) -> None:
    names = table["metrics"]
    if not table["rows"]:
        return
    cells = [
        [
            r["key"] + (f" #{r['replicate']}" if r["replicate"] is not None else ""),
            *(fmt(r["metrics"][m]) for m in names),
        ]
        for r in table["rows"]
    ]
    summary = table["summary"]
    cells.append(["mean", *(fmt(summary[m]["mean"]) for m in names)])
    cells.append(["sd", *(fmt(summary[m]["sd"]) for m in names)])
    cells.append(
        [
            "95% CI",
            *(
                f"[{fmt(summary[m]['ci95'][0])}, {fmt(summary[m]['ci95'][1])}]"
                if summary[m]["ci95"]
                else "—"
                for m in names
            ),
        ]
    )
    output.table(f"per seed: {table['gate']}", ("seed", *names), cells)


def _frozen(store: Store, state: LedgerState, vid: str) -> LedgerState:
    """``state`` with the verdict-affecting configuration in force at ``vid``'s
    registration (invariant 4): what conclude will use."""
    from ledger.core.history import check_registration
    from ledger.core.verify import frozen_config

    try:
        registration = check_registration(store, state.config.dir, vid).commit
    except LedgerError:
        return state
    frozen: LedgerState = frozen_config(store, state, registration)
    return frozen


def _flags(store: Store, state: LedgerState, vid: str) -> readiness.Flags:
    from ledger.core.history import check_registration

    try:
        registration = check_registration(store, state.config.dir, vid).commit
    except LedgerError:  # not registered on this branch (a cell): no history to read
        return readiness.flags(store, state, vid, None)
    return readiness.flags(store, state, vid, readiness.code_commits(store, vid, registration))


def _show_matrix(path: str, matrix: MatrixFront, as_json: bool) -> int:
    cells: list[dict[str, Any]] = [
        {
            "cell": f"{matrix.id}.{c.name}",
            "bet": c.bet,
            "gate": c.gate,
            "files": c.files,
            "branch": c.branch,
            "verdict": matrix.verdicts.get(c.name)
            or ("not measured" if matrix.concluded else "open"),
            "stat": matrix.comparison[c.name].model_dump(mode="json")
            if c.name in matrix.comparison
            else None,
        }
        for c in matrix.cells
    ]
    data = {
        "id": matrix.id,
        "kind": "matrix",
        "path": path,
        "state": "concluded" if matrix.concluded else "open",
        "winner": matrix.winner,
        "override": matrix.override,
        "baselines": matrix.baselines,
        "cites": matrix.cites,
        "cells": cells,
    }
    if as_json:
        output.emit_json(data)
        return 0
    winner = f" · winner {matrix.winner}" if matrix.winner else ""
    output.say(f"{matrix.id} [matrix · {data['state']}{winner}] {len(cells)} cells ({path})")
    if matrix.override:
        output.say(f"  OVERRIDE: {matrix.override}")
    output.table(
        "cells",
        ("cell", "gate", "verdict", "n", "mean", "Δ", "outcome", "bet"),
        [
            (
                c["cell"],
                c["gate"],
                c["verdict"],
                c["stat"]["n"] if c["stat"] else "—",
                fmt(c["stat"]["mean"]) if c["stat"] else "—",
                signed(c["stat"]["delta"]) if c["stat"] else "—",
                c["stat"]["outcome"] if c["stat"] else "—",
                c["bet"],
            )
            for c in cells
        ],
    )
    return 0


def run(cwd: Path, vid: str, as_json: bool) -> int:
    check_safe(vid, "id")
    ctx = open_context(cwd)
    snap = ctx.store.snapshot()
    state = load_state(ctx.store, ctx.config, snap)
    found = state.matrix(vid)
    if found is not None:
        return _show_matrix(found[0], found[1], as_json)
    reflection = next((r for r in state.reflections if r.front.id == vid), None)
    if reflection is not None:
        data: dict[str, Any] = {
            "id": vid,
            "kind": "reflection",
            "path": reflection.path,
            "after": reflection.front.after,
            "triggers": reflection.front.triggers,
            "complete": reflection.complete,
            "missing_sections": list(reflection.missing),
            "body": parse_document(
                decode_text(snap.read(reflection.path) or b"", reflection.path), reflection.path
            ).body.strip(),
        }
        if as_json:
            output.emit_json(data)
        else:
            state_text = (
                "complete" if reflection.complete else "missing: " + ", ".join(reflection.missing)
            )
            output.say(
                f"{vid}: reflection after {reflection.front.after} ({reflection.path}; {state_text})"
            )
            output.say(f"  triggers: {', '.join(reflection.front.triggers) or 'none'}")
            output.say("")
            output.say(data["body"])
        return 0
    data = version_data(state, vid, ctx.store)
    data["determinism"] = _determinism(ctx.store.snapshot(), state, vid)
    data["history"] = history_of(ctx, vid)
    if as_json:
        output.emit_json(data)
        return 0
    reg = data["registration"]
    if data["void"]:  # its results never count, whatever verdict it had
        output.say(f"{vid} [void] {reg['bet']}")
        output.say(f"  VOID: {data['void']}")
    else:
        verdict = f" · {data['verdict']}" if data["verdict"] else ""
        output.say(f"{vid} [{data['state']}{verdict}] {reg['bet']}")
    output.say(f"  gate: {reg['gate']}   falsifier: {reg['falsifier']}")
    output.say(f"  files: {', '.join(reg['files']) or '—'}   parent: {reg['parent'] or '—'}")
    if data["override"]:
        output.say(f"  OVERRIDE: {data['override']}")
    if (data["conclusion"] or {}).get("yellow_flag"):
        output.say(f"  yellow flag: {data['conclusion']['yellow_flag']}")
    flagged = readiness.Flags(
        tuple(data["flags"]["dirty"]),
        tuple(data["flags"]["before_code"]),
        tuple(data["flags"].get("mixed", ())),
    )
    for line in flagged.lines():
        output.say(f"  FLAGGED: {line}")
    rows = [
        (
            e["gate"],
            e["n"],
            fmt(e["mean"]),
            e["baseline_version"] or "—",
            fmt(e["delta"]),
            e["test"] or "—",
            fmt(e["se"]),
            fmt(e["threshold"]),
            e["outcome"],
        )
        for e in data["evidence"]
    ]
    output.table(
        "evidence",
        ("gate", "n", "mean", "baseline", "Δ", "Δ is", "SE", "threshold", "outcome"),
        rows,
    )
    for table in data["seeds"]:
        _seed_lines(table)
    if data["metrics"]:
        output.table(
            "metrics",
            ("gate", "metric", "n", "mean", "sd", "baseline", "baseline mean", "Δ of means"),
            [
                (
                    m["gate"],
                    m["metric"] + (" (primary)" if m["primary"] else "") + f" ({m['direction']})",
                    m["n"],
                    fmt(m["mean"]),
                    fmt(m["sd"]),
                    m["baseline"] or "—",
                    fmt(m["baseline_mean"]),
                    signed(m["delta"]),
                )
                for m in data["metrics"]
            ],
        )
    for item in data["determinism"]:
        seeds = "; ".join(
            f"seed {s['seed']} {'PASS' if s['pass'] else 'FAIL'}"
            + (f" (first divergent field {s['first_divergence']})" if s["first_divergence"] else "")
            for s in item.get("seeds", [])
        )
        again = f", re-measurement: {item['remeasure']}" if item.get("remeasure") else ""
        output.say(
            f"  DETERMINISM ({item.get('gate')}{again}): "
            f"{'PASS' if item.get('pass') else 'FAIL'}: {seeds}"
        )
    if data["conclusion"]:
        output.say(f"  next: {data['conclusion']['next']}")
    for note in data["history"]:
        output.say(f"  {note['text']} ({note['path'] or note['step']}, {note['commit'][:10]})")
    return 0


def history_of(ctx: Any, vid: str) -> list[dict[str, str]]:
    """What history says of ``vid`` beyond its entries, forever: results withdrawn by a
    whole revert, replaced results, a void (verify's notes)."""
    from ledger.core.verify import history_notes

    out = []
    for note in history_notes(ctx.store, ctx.config, ctx.config_file):
        if note["step"] == vid or note["step"].split(".")[0] == vid:
            text = note["text"] if note["kind"] != "void" else f"void: {note['text']}"
            out.append({**note, "text": text})
    return out


def _determinism(snap: Snapshot, state: LedgerState, vid: str) -> list[dict[str, Any]]:
    """The stored DETERMINISM outcomes of ``vid`` (one per gate run with replicates)."""
    import json

    prefix = f"{state.config.dir}/determinism/{vid}-"
    out = []
    for path in sorted(p for p in state.files if p.startswith(prefix) and p.endswith(".json")):
        raw = snap.read(path)
        try:
            item = json.loads(raw or b"")
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("version") == vid:
            out.append(item)
    return out
