"""Which versions' code is reverted on HEAD: read from git's history (the git program)."""

from __future__ import annotations

import re
from pathlib import Path

from ledger.core import gitcli


def reverted_versions(top: Path) -> set[str]:
    """Versions whose every code commit is reverted on HEAD: a parent no bet can build on.

    After ``next``'s own advice to revert a refuted version, the default parent was still
    that version: its no-op gates then compared against code no longer there (a false
    eval-noise trigger, a forced reflection)."""
    # One walk of history for both: the code commits (a Ledger-Step and no transition)
    # and the reverts' bodies; each record starts with a NUL (bodies hold newlines).
    log = (
        "%x00%H%x1f%(trailers:key=Ledger-Step,valueonly,separator=%x2c)%x1f"
        "%(trailers:key=Ledger-Transition,valueonly,separator=%x2c)%x01%B"
    )
    found = gitcli.output(
        ["log", f"--format={log}", "--grep=^Ledger-Step: ", "--grep=^This reverts commit ", "HEAD"],
        top,
    )
    code: dict[str, list[str]] = {}
    reverted: set[str] = set()
    for record in found.split("\0")[1:]:
        head, _, body = record.partition("\x01")
        sha, step, kind = [*head.split("\x1f"), "", ""][:3]
        if step.strip() and not kind.strip():  # a code commit: its step and no transition
            code.setdefault(step.strip(), []).append(sha.strip())
        reverted.update(re.findall(r"This reverts commit ([0-9a-f]{40})", body))
    return {vid for vid, shas in code.items() if all(sha in reverted for sha in shas)}
