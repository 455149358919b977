"""What the program's derived caches are a function of, besides their inputs: its own code.

The entry cache and the status cache map an input (a blob id, a tree id and
the config) to what this program computed from it. That mapping changes when
the program does, and an editable install or a checkout changes code without
changing ``__version__``; so there the caches are keyed by the version *and*
the size and modification time of every module of the package (a few
milliseconds of stat calls). An installed wheel changes its files only with
its version, so there the version alone is the key, at no cost.
Standard library only (the status fast path uses it).
"""

from __future__ import annotations

import functools
import hashlib
import os

from ledger import __version__


@functools.cache
def code_id() -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ledger/
    if not os.path.exists(os.path.join(os.path.dirname(root), "pyproject.toml")):
        return __version__  # an installed wheel: its files change only with its version
    parts = [__version__]
    _modules(root, "", parts)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _modules(folder: str, rel: str, parts: list[str]) -> None:
    """``rel/name.py:size:mtime`` of every module below ``folder``, by name, as
    ``os.walk`` finds them (a linked directory is not entered); a name built by
    joining strings, not ``os.path.relpath``, which cost more than the stat calls."""
    with os.scandir(folder) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_dir():
            if entry.name != "__pycache__" and not entry.is_symlink():
                _modules(entry.path, f"{rel}{entry.name}/", parts)
        elif entry.name.endswith(".py"):
            info = entry.stat()
            parts.append(f"{rel}{entry.name}:{info.st_size}:{info.st_mtime_ns}")
