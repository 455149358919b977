"""Parsed entries cached by blob id under .git/ledger/, so big ledgers stay fast.

A blob id names its content and the cache is keyed by the program's own code
(:func:`ledger.codeid.code_id`: its version and its modules), so a cached
parse is never stale: reading a 10,000-step ledger re-parses only the files
whose content is new, and a program that parses differently (an upgrade, an
edited checkout) starts a new cache. The cache is derived data (delete it any
time); it is written atomically and a corrupt or foreign one is simply ignored.

One process reads the file once: ``conclude`` loads the state and replays
history (ledger.verify), and at 10,000 steps the file is tens of megabytes, so
every :class:`EntryCache` of one path shares what was read while the file on
disk is the one it was read from (size, mtime and inode unchanged).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ledger.codeid import code_id
from ledger.repobase import write_atomic


class _Loaded:
    """The entries of one cache file, shared by every EntryCache of it in this process."""

    def __init__(self, signature: tuple[int, int, int] | None, data: dict[str, Any]) -> None:
        self.signature = signature
        self.data = data
        self.dirty = False


_LOADED: dict[str, _Loaded] = {}


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class EntryCache:
    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "cache" / "entries.json"
        self._shared: _Loaded | None = None

    def _load(self) -> _Loaded:
        if self._shared is not None:
            return self._shared
        signature = _signature(self.path)
        known = _LOADED.get(str(self.path))
        if known is not None and (known.dirty or known.signature == signature):
            self._shared = known
            return known
        data: dict[str, Any] = {}
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError):
            raw = None
        if isinstance(raw, dict) and raw.get("version") == code_id():
            entries = raw.get("entries")
            if isinstance(entries, dict):
                data = entries
        self._shared = _LOADED[str(self.path)] = _Loaded(signature, data)
        return self._shared

    def get(self, key: str) -> Any:
        return self._load().data.get(key)

    def put(self, key: str, value: Any) -> None:
        shared = self._load()
        shared.data[key] = value
        shared.dirty = True

    def save(self) -> None:
        shared = self._shared
        if shared is None or not shared.dirty:
            return
        try:
            data = json.dumps({"version": code_id(), "entries": shared.data})
            write_atomic(self.path, data, durable=False)
        except OSError:
            return  # a cache that cannot be written only costs speed
        shared.dirty = False
        shared.signature = _signature(self.path)
