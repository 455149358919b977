"""Parsed entries cached by blob id under .git/ledger/, so big ledgers stay fast.

A blob id names its content and the cache is keyed by the program's own code
(:func:`ledger.core.caches.key`), so a cached parse is never stale: reading a
10,000-step ledger re-parses only the files whose content is new, and a program
that parses differently (an upgrade, an edited checkout) starts a new cache.
The cache is derived data (delete it any time); it is written atomically and a
corrupt or foreign one is simply ignored (:mod:`ledger.core.caches`).

One process reads the file once: ``conclude`` loads the state and replays
history (ledger.core.verify), and at 10,000 steps the file is tens of megabytes, so
every :class:`EntryCache` of one path shares what was read while the file on
disk is the one it was read from (size, mtime and inode unchanged).

A transition adds a handful of entries to a cache of tens of thousands, so
the file is a log (:func:`ledger.core.caches.append`): its first line is the
whole cache, written atomically, and a save appends one line with only the
entries that are new, each line under the key of the code that parsed it.
Rewriting 45 MB for five new entries cost a ``conclude`` at 10,000 steps more
than a second. A line that does not parse (a torn append after a crash) or
names other code is skipped; after :data:`MAX_LINES` appends the next save
writes the whole cache again in one line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ledger.core import caches

MAX_LINES = 200
FILE = "entries.json"


class _Loaded:
    """The entries of one cache file, shared by every EntryCache of it in this process."""

    def __init__(
        self, signature: tuple[int, int, int] | None, data: dict[str, Any], lines: int
    ) -> None:
        self.signature = signature
        self.data = data
        self.lines = lines  # lines of this code's file on disk (0: none, or foreign)
        self.fresh: dict[str, Any] = {}  # put since the last save

    @property
    def dirty(self) -> bool:
        return bool(self.fresh)


_LOADED: dict[str, _Loaded] = {}


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _read(path: Path) -> tuple[dict[str, Any], int]:
    """The entries this code wrote to ``path``, and how many lines the file has."""
    records, lines = caches.read_log(path, caches.key(FILE), dict)
    data: dict[str, Any] = {}
    for entries in records:
        data.update(entries)
    return data, lines


class EntryCache:
    def __init__(self, state_dir: Path) -> None:
        self.path = Path(caches.path(state_dir, FILE))
        self._shared: _Loaded | None = None

    def _load(self) -> _Loaded:
        if self._shared is not None:
            return self._shared
        signature = _signature(self.path)
        known = _LOADED.get(str(self.path))
        if known is not None and (known.dirty or known.signature == signature):
            self._shared = known
            return known
        data, lines = _read(self.path)
        self._shared = _LOADED[str(self.path)] = _Loaded(signature, data, lines)
        return self._shared

    def unread_bytes(self) -> int:
        """What a first :meth:`get` would read: the file's size, or 0 when this process
        holds it already (or there is none)."""
        if self._shared is not None:
            return 0
        signature = _signature(self.path)
        known = _LOADED.get(str(self.path))
        if signature is None or (
            known is not None and (known.dirty or known.signature == signature)
        ):
            return 0
        return signature[0]

    def get(self, key: str) -> Any:
        return self._load().data.get(key)

    def put(self, key: str, value: Any) -> None:
        shared = self._load()
        shared.data[key] = value
        shared.fresh[key] = value

    def save(self) -> None:
        shared = self._shared
        if shared is None or not shared.dirty:
            return
        cache_key = caches.key(FILE)
        # Appended while the log is short (see the module's docstring), else whole;
        # a cache that cannot be written only costs speed.
        if 0 < shared.lines < MAX_LINES and caches.append(self.path, cache_key, shared.fresh):
            shared.lines += 1
        elif caches.save(self.path, cache_key, shared.data):
            shared.lines = 1
        else:
            return
        shared.fresh = {}
        shared.signature = _signature(self.path)
