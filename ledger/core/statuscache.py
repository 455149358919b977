"""``status`` results cached by what they are a function of: the ledger tree and its config.

The ledger's state is a pure function of the ledger dir's tree and the
configuration, so the state-derived part of ``status`` is cached under
``.git/ledger/cache/status.json`` keyed by (the program's code —
:func:`ledger.core.codeid.code_id` —, config text, tree id of the ledger dir). A warm ``status`` then costs two git calls
whatever the ledger's size, and imports neither pygit2, pydantic nor scipy. Entries
that change nothing in the ledger dir (code commits) keep the key; any
change to an entry or to the config makes a new one. What the loop reads from
history besides (the configuration frozen at an open version's registration, its
code commits) is fixed once those entries are committed, so it keeps the key too;
what can change without them (runs, locks, uncommitted files, other branches) is
read fresh on every call. Derived data only: delete it any time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ledger.core.codeid import code_id
from ledger.core.repobase import write_atomic

KEEP = 8


def key(name: str, text: str, tree: str) -> str:
    return hashlib.sha256(f"{code_id()}\0{name}\0{text}\0{tree}".encode()).hexdigest()


def get(state_dir: Path, cache_key: str) -> dict[str, Any] | None:
    try:
        with open(state_dir / "cache" / "status.json") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    hit = data.get(cache_key) if isinstance(data, dict) else None
    return hit if isinstance(hit, dict) else None


def put(state_dir: Path, cache_key: str, value: dict[str, Any]) -> None:
    path = str(state_dir / "cache" / "status.json")
    try:
        with open(path) as handle:
            data = json.load(handle)
        if not isinstance(data, dict):
            data = {}
    except (OSError, ValueError):
        data = {}
    data.pop(cache_key, None)
    data[cache_key] = value
    data = dict(list(data.items())[-KEEP:])
    try:
        write_atomic(path, json.dumps(data), durable=False)
    except OSError:
        return  # a cache that cannot be written only costs time
