"""The findings of the last ``git ledger verify`` of a tip, read with the standard library.

``status`` shows history findings as problems, and a warm ``status`` imports
neither pygit2 nor pydantic: when HEAD and the witness refs are what the last
verify saw, its findings are read from ``.git/ledger/verify-report.json``.

The report is one derived cache (:mod:`ledger.core.caches`): one record keyed by
the program's code, the history rules' version and the tip, which holds the
witness refs as the file system saw them (:func:`refs_key`) beside the findings.
The refs are compared once the key matches, not hashed into it: reading them
costs a file per witness ref, which a report of another tip (the miss before
every new verify, which then saves and reads them anyway) never needs. A report
saved for another tip, other refs, other rules or other code, or a file that is
corrupt or foreign, is not read: verify runs again.
"""

from __future__ import annotations

import os
from typing import Any

from ledger.core import caches
from ledger.core.repobase import stat_key

REPORT_FILE = "verify-report.json"
# The version of the history rules, shared with the replay's cache
# (:data:`ledger.core.verify.engine.CACHE_VERSION`): a report saved by other rules is not
# read. 4: a re-measurement is a kind of transition of its own. 5: a preset's content
# checks (history_checks: the batches trace, meta.json). 6: a transition is checked
# against what its verb could have written (second conclusions, renames, merges). 7: the
# ledger's place (config file, dir, id_prefix, preset) never changes. 8: no result is
# withdrawn or replaced after its conclusion. 9: a delivery ends the ledger on its own branch.
# 10: a merge is judged by the facts of every side (fact-replaced, fact-lost); a commit
# is judged within bounds; entry paths are unique in letter case (#47). 11: a setting
# that judges changes with its reason on record (config-reason).
RULES_VERSION = 11

# The report :func:`load` last accepted (or :func:`save` last made), per state dir:
# :func:`load_notes` gives its notes, so findings and notes come from one report.
_accepted: dict[str, dict[str, Any]] = {}


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


def _file(state_dir: str) -> str:
    # Beside the replay's cache (verify-cache.json), which the report goes with.
    return os.path.join(state_dir, REPORT_FILE)


def _key(tip: str) -> str:
    return caches.key("verify-report", str(RULES_VERSION), tip)


def save(
    state_dir: str,
    common: str,
    tip: str,
    findings: list[dict[str, str]],
    notes: list[dict[str, str]] | None = None,
) -> None:
    data = {"refs": refs_key(common), "findings": findings, "notes": notes or []}
    _accepted[state_dir] = data
    caches.save(_file(state_dir), _key(tip), data)  # a cache not written only costs time


def load(state_dir: str, common: str, tip: str) -> list[dict[str, str]] | None:
    """The findings verify saved for ``tip`` and the refs as they are now; None if none."""
    _accepted.pop(state_dir, None)
    data = caches.load(_file(state_dir), _key(tip), dict)
    if data is None or not isinstance(data.get("findings"), list):
        return None
    if data.get("refs") != refs_key(common):
        return None
    _accepted[state_dir] = data
    findings: list[dict[str, str]] = data["findings"]
    return findings


def load_notes(state_dir: str) -> list[dict[str, str]]:
    """The notes saved with the report :func:`load` just accepted."""
    notes = _accepted.get(state_dir, {}).get("notes")
    return notes if isinstance(notes, list) else []
