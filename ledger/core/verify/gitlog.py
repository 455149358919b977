"""The commits a replay reads, with their changes, from one ``git log``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import gitcli
from ledger.core.commitinfo import CommitInfo, parse_trailers
from ledger.core.errors import BadInput
from ledger.core.repobase import ZERO

_LOG_FORMAT = "%H %P%x00%an <%ae>%x00%ct%x00%B"


def log_changes(
    store: Any, tip: str, hide: list[str], limit: int | None = None
) -> list[tuple[CommitInfo, list[tuple[str, str | None, str | None]] | None]]:
    """Commits reachable from ``tip`` but not from ``hide``, parents first, each with
    its changes against its first parent (None for a merge), from one ``git log``.

    git's own tree diff is an order of magnitude cheaper than one libgit2 diff per
    commit, and a cold replay of a long ledger is mostly this walk.
    """
    args = [
        # A refs/replace/* object would swap a commit for another in this walk (git
        # honours them by default; libgit2, which reads the entries, does not): history
        # is judged as it was written.
        "--no-replace-objects",
        f"--git-dir={store.git_dir}",
        "log",
        "-z",
        "--raw",
        "--no-renames",
        "--no-abbrev",
        "--diff-merges=off",
        "--root",
        "--topo-order",
        "--reverse",
        f"--format={_LOG_FORMAT}",
        *([f"-{limit}"] if limit else []),
        tip,
        *(f"^{h}" for h in hide),
        "--",
    ]
    # Bytes, decoded field by field: history may hold a Latin-1 message or a file name
    # that is not UTF-8, which strict text decoding would turn into an exit 3.
    proc = gitcli.run_bytes(args, Path(store.git_dir))
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(
            f"history is incomplete: {text[-1] if text else proc.returncode}",
            "fetch the missing objects (git fetch --unshallow, or a full clone)",
        )
    tokens = proc.stdout.split(b"\0")
    out: list[tuple[CommitInfo, list[tuple[str, str | None, str | None]] | None]] = []
    i = 0
    while i + 3 < len(tokens):
        ids = tokens[i].decode().split()
        author = tokens[i + 1].decode("utf-8", "replace")
        when = int(tokens[i + 2] or b"0")
        message = tokens[i + 3].decode("utf-8", "replace")
        i += 4
        changes: list[tuple[str, str | None, str | None]] = []
        while i + 1 < len(tokens) and tokens[i].lstrip(b"\n").startswith(b":"):
            meta = tokens[i].lstrip(b"\n").decode().split()
            path = tokens[i + 1].decode("utf-8", "surrogateescape")
            old, new = meta[2], meta[3]
            changes.append((path, None if old == ZERO else old, None if new == ZERO else new))
            i += 2
        info = CommitInfo(
            id=ids[0],
            parents=tuple(ids[1:]),
            message=message,
            time=when,
            author=author,
            trailers=parse_trailers(message),
        )
        out.append((info, changes if len(info.parents) < 2 else None))
    return out
