"""``git ledger verify [RANGE]``: every history rule, from the repository alone.

Exit 0 clean, 1 with one finding per line (commit, path, rule, what to do),
2 when history cannot be verified (a shallow clone, missing objects).
"""

from __future__ import annotations

from pathlib import Path

from ledger import output
from ledger.context import open_context
from ledger.errors import BadInput
from ledger.verify import verify


def run(cwd: Path, rev_range: str | None, as_json: bool) -> int:
    ctx = open_context(cwd)
    store = ctx.store
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
    if as_json:
        output.emit_json(
            {
                "schema": 1,
                "tip": report.tip,
                "ok": not report.findings,
                "findings": [f.as_json() for f in report.findings],
                "notes": [n.as_json() for n in report.notes],
                "void": sorted(report.void),
            }
        )
    else:
        for finding in report.findings:
            output.say(finding.line())
        for note in report.notes:
            output.say(f"note: {note.line()}")
        if not report.findings:
            tip_text = report.tip[:10] if report.tip else "an empty branch"
            output.say(f"verified {tip_text}: every history rule holds")
        else:
            output.say(f"{len(report.findings)} finding(s)")
    return 1 if report.findings else 0
