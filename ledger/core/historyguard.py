"""Every loop's writers refuse on a history tampered with past the hooks.

The hooks can be skipped (``--no-verify``, a collaborator's push): a verdict flipped by
hand, an entry edited, a trace line forged. A transition built on such a history would
judge against the forgery (a candidate measured against a forged head), so each writing
verb asks ``verify`` first and is refused while it has findings, naming the commit, the
rule and the repair; ``next`` proposes the repair first (``ledger.core.machine``'s
history-verifies). ``verify`` answers from its cache: the commits since the last report.
"""

from __future__ import annotations

from ledger.core.context import Context
from ledger.core.errors import Refused
from ledger.core.findings import Finding


def require_verified_history(ctx: Context) -> None:
    """Refused (exit 1) while ``verify`` has findings, naming the first three."""
    from ledger.core.verify import verify

    report = verify(ctx.store, ctx.config, ctx.config_file)
    if report.findings:
        raise Refused.of(
            [
                Finding(
                    "history-findings",
                    f"history does not verify: {f.commit[:10]} {f.path}: [{f.rule}] {f.message}",
                    f.fix,
                )
                for f in report.findings[:3]
            ]
        )
