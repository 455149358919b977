"""Where the ledger's configuration is, and its text: standard library only.

Kept apart from the pydantic model (:mod:`ledger.core.model.config`) so that paths
that only need the text, such as the status cache's key, stay cheap.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from ledger.core.errors import BadInput
from ledger.core.repobase import CONFIG_FILES, PYPROJECT, ledger_table
from ledger.core.repobase import ledger_dir as _table_dir

TYPE_CHECKING = False  # see hookrun.py: no typing import on light paths
if TYPE_CHECKING:
    from ledger.core.store import Snapshot, Store

MAX_CONFIG_BYTES = 1 << 20


def has_tool_ledger(pyproject_text: str) -> bool:
    try:
        data = tomllib.loads(pyproject_text)
    except tomllib.TOMLDecodeError:
        return False
    return ledger_table(data, PYPROJECT) is not None


def _decode(data: bytes, name: str) -> str:
    if len(data) > MAX_CONFIG_BYTES:
        raise BadInput(f"{name}: file is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{name}: not valid UTF-8 (byte {exc.start})") from None


def read_worktree_config(workdir: Path) -> tuple[str, str] | None:
    """(file name, text) of the configuration in a work tree, without opening the repository."""
    for name in CONFIG_FILES:
        path = workdir / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise BadInput(f"{name} is not a regular file", "replace it with a plain file")
        if not path.is_file():
            continue
        text = _decode(path.read_bytes(), name)
        if name == PYPROJECT and not has_tool_ledger(text):
            continue
        return name, text
    return None


def read_config_text(store: Store, snap: Snapshot | None = None) -> tuple[str, str] | None:
    """(file name, text) of the ledger configuration.

    The working tree wins where there is one, as git does with .gitattributes:
    a user who edits ledger.toml sees the effect (and transitions then insist
    the edit is committed). Historical reads pass the snapshot to read instead.
    """
    if snap is None and store.workdir is not None:
        found = read_worktree_config(store.workdir)
        if found is not None:
            return found
        # None on disk: a sparse checkout may leave it out; the committed one applies
        # (a deletion is caught as an uncommitted change before any transition).
    for name in CONFIG_FILES:
        data = (snap or store.snapshot()).read(name)
        if data is None:
            continue
        text = _decode(data, name)
        if name == PYPROJECT and not has_tool_ledger(text):
            continue
        return name, text
    return None


def ledger_dir(name: str, text: str) -> str | None:
    """The ledger dir a (valid) configuration names, without validating the rest."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    table = ledger_table(data, name)
    return None if table is None else _table_dir(table)
