"""Parsed entries cached by blob id under .git/ledger/, so big ledgers stay fast.

A blob id names its content and the cache is keyed by the program's own code
(:func:`ledger.core.codeid.code_id`: its version and its modules), so a cached
parse is never stale: reading a 10,000-step ledger re-parses only the files
whose content is new, and a program that parses differently (an upgrade, an
edited checkout) starts a new cache. The cache is derived data (delete it any
time); it is written atomically and a corrupt or foreign one is simply ignored.

One process reads the file once: ``conclude`` loads the state and replays
history (ledger.core.verify), and at 10,000 steps the file is tens of megabytes, so
every :class:`EntryCache` of one path shares what was read while the file on
disk is the one it was read from (size, mtime and inode unchanged).

A transition adds a handful of entries to a cache of tens of thousands, so
the file is a log: its first line is the whole cache (``{"version", "entries"}``,
written atomically), and a save appends one line with only the entries that
are new (``{"version", "entries"}`` again, each line keyed by the code that
parsed it). Rewriting 45 MB for five new entries cost a ``conclude`` at
10,000 steps more than a second. A line that does not parse (a torn append
after a crash) or names other code is skipped; every append starts on a new
line so a torn one never swallows the next; after :data:`MAX_LINES` appends
the next save writes the whole cache again in one line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ledger.core.codeid import code_id
from ledger.core.repobase import write_atomic

MAX_LINES = 200


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
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return {}, 0
    me = code_id()
    data: dict[str, Any] = {}
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if not line:
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            continue  # a torn append
        if not isinstance(raw, dict) or raw.get("version") != me:
            if number == 0:
                return {}, 0  # another program's cache: start a new one
            continue
        entries = raw.get("entries")
        if isinstance(entries, dict):
            data.update(entries)
    return data, sum(1 for line in lines if line)


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
        data, lines = _read(self.path)
        self._shared = _LOADED[str(self.path)] = _Loaded(signature, data, lines)
        return self._shared

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
        try:
            if 0 < shared.lines < MAX_LINES and _signature(self.path) is not None:
                line = json.dumps({"version": code_id(), "entries": shared.fresh})
                # Appended, not replaced: see the module's docstring. The leading
                # newline ends a line a crash may have left torn.
                # O_NOFOLLOW: like write_atomic, never write through a planted link.
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
                try:
                    os.write(fd, f"\n{line}\n".encode())
                finally:
                    os.close(fd)
                shared.lines += 1
            else:
                data = json.dumps({"version": code_id(), "entries": shared.data})
                write_atomic(self.path, data + "\n", durable=False)
                shared.lines = 1
        except OSError:
            return  # a cache that cannot be written only costs speed
        shared.fresh = {}
        shared.signature = _signature(self.path)
