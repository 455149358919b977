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
    log = (
        "%H %(trailers:key=Ledger-Step,valueonly,separator=%x2c) "
        "%(trailers:key=Ledger-Transition,valueonly,separator=%x2c)"
    )
    found = gitcli.output(["log", f"--format={log}", "--grep=^Ledger-Step: ", "HEAD"], top)
    code: dict[str, list[str]] = {}
    for line in found.splitlines():
        words = line.split()
        if len(words) == 2:  # a code commit: its step and no transition
            code.setdefault(words[1], []).append(words[0])
    if not code:
        return set()
    bodies = gitcli.output(["log", "--format=%B", "--grep=^This reverts commit ", "HEAD"], top)
    reverted = set(re.findall(r"This reverts commit ([0-9a-f]{40})", bodies))
    return {vid for vid, shas in code.items() if all(sha in reverted for sha in shas)}
