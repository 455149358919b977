"""One derived cache: a key from the program's code and the inputs, a load that never
trusts a foreign or corrupt file, an atomic save.

Every cache under ``.git/ledger/cache/`` maps inputs (a blob id, a tree id and
the configuration, a chain of versions) to what this program computed from
them. That mapping changes when the program does, so every key starts with the
program's code id (:func:`ledger.core.codeid.code_id`: its version, and in a
checkout the size and mtime of every module): an upgrade or an edited checkout
never reads an answer older code gave, and the same key always means the same
answer, so a cached one is never stale.

One format: a cache file is JSON lines, each a record ``{"key": K, "data": D}``.
Most caches are one record, replaced whole (:func:`save`, :func:`load`), or a
few recent answers in one record (:func:`remember`, :func:`recall`). A large
cache that grows by a few answers at a time is a log (:func:`append`,
:func:`read_log`): a whole first record, then appended ones.

The hooks' fast path keeps its few small caches as lines (:func:`save_lines`,
:func:`load_lines`): the key on the first line, the answer on the others. Its
whole budget is about 11 ms a stage, and importing ``json`` (``re``, ``enum``) alone
costs several of them; for the same reason its keys are the few files
of code that compute each answer, not :func:`key` (hashlib, and in a checkout a
stat of every module).

Derived data: delete any of it at any time. A file that is missing, unreadable,
torn, not JSON, of another shape or under another key is never believed (it
reads as empty), and one that cannot be written only costs time (the savers
return False, never raise). Saves are atomic (:func:`ledger.core.repobase.write_atomic`,
without the flushes a commit's path cannot afford). Standard library only, and
importing this module costs nothing beyond ``os``: the fast paths of ``status``
and the hooks use it (``json`` and ``hashlib`` are imported by what needs them).
"""

from __future__ import annotations

import os

from ledger.core.repobase import write_atomic

# Not typing.TYPE_CHECKING: importing typing costs a -S interpreter ~9 ms (the hooks'
# fast path imports this module); mypy treats any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias, TypeVar

    _T = TypeVar("_T")
    PathLike: TypeAlias = "str | os.PathLike[str]"


def path(state_dir: PathLike, name: str) -> str:
    """Where the cache ``name`` lives: ``<common git dir>/ledger/cache/<name>``."""
    return os.path.join(state_dir, "cache", name)


def code_id() -> str:
    """:func:`ledger.core.codeid.code_id`, imported when a key is first asked (hashlib)."""
    from ledger.core.codeid import code_id as of_this_program

    return of_this_program()


def key(name: str, *inputs: str) -> str:
    """The key of cache ``name`` for ``inputs``, as this program's code computes them."""
    import hashlib
    import json

    text = json.dumps([code_id(), name, *inputs])  # a list: inputs never run together
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _record(cache_key: str, data: Any) -> str:
    import json

    return json.dumps({"key": cache_key, "data": data}, separators=(",", ":"))


def _data(raw: Any, cache_key: str, kind: type[_T]) -> _T | None:
    if isinstance(raw, dict) and raw.get("key") == cache_key:
        data = raw.get("data")
        if isinstance(data, kind):
            return data
    return None


def load(file: PathLike, cache_key: str, kind: type[_T]) -> _T | None:
    """What :func:`save` wrote under ``cache_key``, if it is a ``kind``; else None."""
    import json

    try:
        with open(file, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError):  # a bad encoding is a ValueError too
        return None
    return _data(raw, cache_key, kind)


def save(file: PathLike, cache_key: str, data: Any) -> bool:
    """Replace the cache with ``data`` under ``cache_key``; False if it cannot be written."""
    try:
        write_atomic(file, _record(cache_key, data) + "\n", durable=False)
    except OSError:
        return False
    return True


def recall(file: PathLike, cache_key: str, item: str, kind: type[_T]) -> _T | None:
    """The answer :func:`remember` kept for ``item``, if it is a ``kind``."""
    found = load(file, cache_key, dict)
    value = found.get(item) if found is not None else None
    return value if isinstance(value, kind) else None


def remember(file: PathLike, cache_key: str, item: str, value: Any, keep: int) -> bool:
    """Keep ``value`` for ``item`` among the ``keep`` most recent answers of the cache."""
    found = load(file, cache_key, dict) or {}
    found.pop(item, None)
    found[item] = value
    return save(file, cache_key, dict(list(found.items())[-keep:]))


def read_log(file: PathLike, cache_key: str, kind: type[_T]) -> tuple[list[_T], int]:
    """Every record of ``cache_key`` in a log, oldest first, and how many lines it has.

    A first line under another key is another program's cache: nothing, 0 lines
    (the next save starts a new one). A later line that does not parse (an append
    a crash tore) or is under another key is skipped: it costs only its own data.
    """
    import json

    try:
        with open(file, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, ValueError):
        return [], 0
    found: list[_T] = []
    lines = [line for line in text.split("\n") if line]
    for number, line in enumerate(lines):
        try:
            raw = json.loads(line)
        except ValueError:
            raw = None
        data = _data(raw, cache_key, kind)
        if data is None and number == 0:
            return [], 0
        if data is not None:
            found.append(data)
    return found, len(lines)


def append(file: PathLike, cache_key: str, data: Any) -> bool:
    """Add a record to the end of an existing log; False if it cannot (then save it whole).

    Appended, not replaced: rewriting tens of megabytes for a few new answers is
    what a log avoids. The leading newline ends a line a crash may have left
    torn, so it never swallows this one; ``O_NOFOLLOW``, like ``write_atomic``,
    never writes through a planted link; no ``O_CREAT``: a log starts with a save.
    """
    try:
        fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        os.write(fd, f"\n{_record(cache_key, data)}\n".encode())
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def load_lines(file: PathLike, cache_key: str) -> list[str] | None:
    """The lines :func:`save_lines` wrote under ``cache_key``; None for any other file."""
    try:
        with open(file, encoding="utf-8", newline="") as handle:  # a "\r" is data
            lines = handle.read().split("\n")
    except (OSError, ValueError):
        return None
    if len(lines) < 2 or lines[0] != cache_key or lines[-1] != "":
        return None  # another key, or not a file of lines (a save always ends with one)
    return lines[1:-1]


def save_lines(file: PathLike, cache_key: str, lines: list[str]) -> bool:
    """Replace the cache with ``lines`` under ``cache_key``; False if it cannot be written.

    A line holding a newline would read back as two: such an answer is not kept.
    """
    if any("\n" in line for line in (cache_key, *lines)):
        return False
    try:
        write_atomic(file, "".join(f"{line}\n" for line in (cache_key, *lines)), durable=False)
    except OSError:
        return False
    return True
