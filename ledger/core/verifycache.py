"""The findings of the last ``git ledger verify`` of a tip, read with the standard library.

``status`` shows history findings as problems, and a warm ``status`` imports
neither pygit2 nor pydantic: when HEAD and the witness refs are what the last
verify saw, its findings are read from ``.git/ledger/verify-report.json``.
"""

from __future__ import annotations

import json
import os

from ledger.core.repobase import stat_key, write_atomic

REPORT_FILE = "verify-report.json"
# The version of the history rules, shared with the replay's cache
# (:data:`ledger.core.verify.engine.CACHE_VERSION`): a report saved by other rules is not
# read. 4: a re-measurement is a kind of transition of its own.
RULES_VERSION = 4


def refs_key(common: str) -> str:
    """What the witness refs are, as the file system sees them (loose and packed)."""
    parts = [stat_key(os.path.join(common, "packed-refs"))]
    base = os.path.join(common, "refs", "ledger")
    for root, _dirs, files in sorted(os.walk(base)):
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                with open(path, encoding="utf-8") as handle:
                    parts.append(f"{os.path.relpath(path, base)}={handle.read().strip()}")
            except OSError:
                parts.append(f"{name}=?")
    return "|".join(parts)


def save(
    state_dir: str,
    common: str,
    tip: str,
    findings: list[dict[str, str]],
    notes: list[dict[str, str]] | None = None,
) -> None:
    data = {
        "rules": RULES_VERSION,
        "tip": tip,
        "refs": refs_key(common),
        "findings": findings,
        "notes": notes or [],
    }
    try:
        write_atomic(os.path.join(state_dir, REPORT_FILE), json.dumps(data), durable=False)
    except OSError:
        return  # a cache that cannot be written only costs time


def load(state_dir: str, common: str, tip: str) -> list[dict[str, str]] | None:
    try:
        with open(os.path.join(state_dir, REPORT_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("rules") != RULES_VERSION or data.get("tip") != tip:
        return None
    if data.get("refs") != refs_key(common):
        return None
    findings = data.get("findings")
    return findings if isinstance(findings, list) else None


def load_notes(state_dir: str) -> list[dict[str, str]]:
    """The notes saved with the report :func:`load` just accepted."""
    try:
        with open(os.path.join(state_dir, REPORT_FILE), encoding="utf-8") as handle:
            notes = json.load(handle).get("notes", [])
    except (OSError, ValueError, AttributeError):
        return []
    return notes if isinstance(notes, list) else []
