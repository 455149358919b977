"""``git ledger show ID``: one entry with its results and the statistics behind it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger import output
from ledger.context import open_context
from ledger.errors import BadInput
from ledger.model.ids import check_safe
from ledger.render.markdown import fmt
from ledger.state import LedgerState, load_state
from ledger.store import Snapshot
from ledger.verdicts import evidence


def version_data(state: LedgerState, vid: str) -> dict[str, Any]:
    version = state.version(vid)
    if version is None:
        raise BadInput(f"no version {vid!r} in {state.config.dir}/", "see 'git ledger status'")
    results = [
        {"path": r.path, **r.data.model_dump(mode="json")}
        for r in state.results
        if r.data.version == vid
    ]
    conclusion = version.front.conclusion
    if conclusion is not None:
        evidence_rows = [g.model_dump(mode="json") for g in conclusion.gates]
    else:  # the targeted gate first, as conclude will see it
        evidence_rows = [g.model_dump(mode="json") for g in evidence(state, vid)]
    reflection = state.reflection_for(vid)
    return {
        "id": vid,
        "kind": "version",
        "path": version.path,
        "state": "concluded" if conclusion else "open",
        "registration": version.front.registered(),
        "hypothesis": version.hypothesis.strip(),
        "verdict": conclusion.verdict if conclusion else None,
        "override": conclusion.override if conclusion else None,
        "conclusion": conclusion.model_dump(mode="json", exclude={"gates"}) if conclusion else None,
        "evidence": evidence_rows,
        "results": results,
        "reflection": reflection.front.id if reflection else None,
    }


def run(cwd: Path, vid: str, as_json: bool) -> int:
    check_safe(vid, "id")
    ctx = open_context(cwd)
    state = load_state(ctx.store, ctx.config, ctx.store.snapshot())
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
        }
        if as_json:
            output.emit_json(data)
        else:
            output.say(f"{vid}: reflection after {reflection.front.after} ({reflection.path})")
            output.say(
                "complete" if reflection.complete else "missing: " + ", ".join(reflection.missing)
            )
        return 0
    data = version_data(state, vid)
    data["determinism"] = _determinism(ctx.store.snapshot(), state, vid)
    if as_json:
        output.emit_json(data)
        return 0
    reg = data["registration"]
    output.say(
        f"{vid} [{data['state']}{' · ' + data['verdict'] if data['verdict'] else ''}] {reg['bet']}"
    )
    output.say(f"  gate: {reg['gate']}   falsifier: {reg['falsifier']}")
    output.say(f"  files: {', '.join(reg['files']) or '—'}   parent: {reg['parent'] or '—'}")
    if data["override"]:
        output.say(f"  OVERRIDE: {data['override']}")
    rows = [
        (
            e["gate"],
            e["n"],
            fmt(e["mean"]),
            e["baseline_version"] or "—",
            fmt(e["delta"]),
            fmt(e["se"]),
            fmt(e["threshold"]),
            e["outcome"],
        )
        for e in data["evidence"]
    ]
    output.table(
        "evidence", ("gate", "n", "mean", "baseline", "Δ", "SE", "threshold", "outcome"), rows
    )
    for item in data["determinism"]:
        seeds = "; ".join(
            f"seed {s['seed']} {'PASS' if s['pass'] else 'FAIL'}"
            + (f" (first divergent field {s['first_divergence']})" if s["first_divergence"] else "")
            for s in item.get("seeds", [])
        )
        output.say(
            f"  DETERMINISM ({item.get('gate')}): {'PASS' if item.get('pass') else 'FAIL'}: {seeds}"
        )
    if data["conclusion"]:
        output.say(f"  next: {data['conclusion']['next']}")
    return 0


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
