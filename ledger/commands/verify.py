"""``git ledger verify [RANGE]``: every history rule, from the repository alone.

Exit 0 clean, 1 with one finding per line (commit, path, rule, what to do),
2 when history cannot be verified (a shallow clone, missing objects).
"""

from __future__ import annotations

from pathlib import Path

from ledger import output
from ledger.errors import BadInput


def _from_cache(cwd: Path) -> tuple[str, list[dict[str, str]], list[dict[str, str]]] | None:
    """A repeated verify of an unchanged HEAD: the saved report, without pygit2 or pydantic."""
    from ledger import gitcli, verifycache

    try:
        top, common = gitcli.locate(cwd)
    except BadInput:
        return None
    head = gitcli.run(["rev-parse", "-q", "--verify", "HEAD"], top, check=False).stdout.strip()
    if not head or (Path(common) / "shallow").exists():
        return None
    state_dir = str(Path(common) / "ledger")
    findings = verifycache.load(state_dir, str(common), head)
    if findings is None:
        return None
    return head, findings, verifycache.load_notes(state_dir)


def _print(
    tip: str | None, findings: list[dict[str, str]], notes: list[dict[str, str]], as_json: bool
) -> int:
    if as_json:
        output.emit_json(
            {
                "schema": 1,
                "tip": tip,
                "ok": not findings,
                "findings": findings,
                "notes": notes,
                "void": sorted({n["step"] for n in notes if n["kind"] == "void"}),
            }
        )
        return 1 if findings else 0
    for f in findings:
        where = f"{f['commit'][:10]} {f['path']}" if f["path"] else f["commit"][:10]
        output.say(f"{where}: [{f['rule']}] {f['message']} (fix: {f['fix']})")
    for n in notes:
        output.say(
            f"note: {n['commit'][:10]} {n['kind']}: {n['step']} {n['path']} {n['text']}".rstrip()
        )
    if findings:
        output.say(f"{len(findings)} finding(s)")
    else:
        output.say(f"verified {tip[:10] if tip else 'an empty branch'}: every history rule holds")
    return 1 if findings else 0


def run(cwd: Path, rev_range: str | None, as_json: bool) -> int:
    if not rev_range:
        cached = _from_cache(cwd)
        if cached is not None:
            return _print(*cached, as_json)
    from ledger.context import open_context
    from ledger.verify import require_full, verify

    ctx = open_context(cwd)
    store = ctx.store
    require_full(store)  # before a range is resolved: its commits may be cut off
    tip: str | None = None
    since: list[str] = []
    if rev_range:
        if "..." in rev_range:
            raise BadInput(f"cannot verify the symmetric range {rev_range!r}", "use A..B or a tip")
        start, dots, end = rev_range.partition("..")
        tip = end or "HEAD" if dots else start
        if dots and start:
            resolved = store.resolve(start)
            since = [resolved] if resolved else []
    report = verify(store, ctx.config, ctx.config_file, tip, since)
    return _print(
        report.tip,
        [f.as_json() for f in report.findings],
        [n.as_json() for n in report.notes],
        as_json,
    )
