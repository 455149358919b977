"""Parsed entries cached by blob id under .git/ledger/, so big ledgers stay fast.

A blob id names its content and the cache is keyed by the program's own code
(:func:`ledger.codeid.code_id`: its version and its modules), so a cached
parse is never stale: reading a 10,000-step ledger re-parses only the files
whose content is new, and a program that parses differently (an upgrade, an
edited checkout) starts a new cache. The cache is derived data (delete it any
time); it is written atomically and a corrupt or foreign one is simply ignored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ledger.codeid import code_id
from ledger.repobase import write_atomic


class EntryCache:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "cache" / "entries.json"
        self._data: dict[str, Any] = {}
        self._dirty = False
        self._loaded = False

    def _load(self) -> None:
        self._loaded = True
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return
        if isinstance(raw, dict) and raw.get("version") == code_id():
            entries = raw.get("entries")
            if isinstance(entries, dict):
                self._data = entries

    def get(self, key: str) -> Any:
        if not self._loaded:
            self._load()
        return self._data.get(key)

    def put(self, key: str, value: Any) -> None:
        if not self._loaded:
            self._load()
        self._data[key] = value
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        try:
            data = json.dumps({"version": code_id(), "entries": self._data})
            write_atomic(self.path, data, durable=False)
        except OSError:
            return  # a cache that cannot be written only costs speed
        self._dirty = False
