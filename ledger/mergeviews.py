"""The ``ledger-views`` merge driver: generated views are regenerated, never line-merged.

git runs ``git-ledger merge-driver %O %A %B %P`` for each path marked
``merge=ledger-views`` in .gitattributes (a driver runs only because the user's
git config defines it: ``hooks install``, ``init`` and ``sync`` write that
definition; a .gitattributes alone never makes code run). git passes the
commit being merged in as ``GITHEAD_<sha>`` and HEAD is ours, so the driver
merges the two trees in memory (entry files never conflict: one file per
fact), reads the ledger state of that merged tree, and writes the view for
``%P`` into ``%A``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ledger import batches, campaign
from ledger.context import load_config
from ledger.errors import LedgerError
from ledger.model.config import LedgerConfig
from ledger.model.documents import decode_text
from ledger.state import README, load_state
from ledger.store import Snapshot, Store
from ledger.views import apply_views, readme_views

DRIVER = "ledger-views"


def view_paths(config: LedgerConfig) -> list[str]:
    base = config.dir
    paths = [f"{base}/{README}"]
    if config.ledger.preset == "campaign":
        paths += [
            f"{base}/{campaign.JSONL}",
            f"{base}/{campaign.CSV}",
            f"{base}/{campaign.MISTAKES}",
        ]
    if config.ledger.preset == "batches":
        paths.append(f"{base}/{batches.REVISION_LOG}")
    return paths


def attributes_text(config: LedgerConfig, current: str) -> str:
    """.gitattributes with a ``merge=ledger-views`` line for every generated view."""
    lines = current.splitlines()
    for path in view_paths(config):
        line = f"/{path} merge={DRIVER}"
        if line not in lines:
            lines.append(line)
    return "\n".join(lines) + "\n"


def driver_command() -> str:
    return f"'{sys.executable}' -m ledger merge-driver %O %A %B %P"


def regenerate(
    config: LedgerConfig, snap: Snapshot, path: str, ours_text: bytes, store: Store
) -> bytes:
    base = config.dir
    if path == f"{base}/{README}":
        state = load_state(store, config, snap)
        return apply_views(decode_text(ours_text, path), readme_views(state)).encode()
    if config.ledger.preset == "campaign":
        rendered = campaign.render_views(campaign.load(config, snap))
        name = path[len(base) + 1 :]
        if name in rendered:
            return rendered[name]
    if config.ledger.preset == "batches" and path == f"{base}/{batches.REVISION_LOG}":
        return batches.render_log(batches.load(config, snap))
    raise LedgerError(f"merge driver: {path} is not a generated view")


def run(ancestor: str, ours_file: str, theirs_file: str, path: str) -> int:
    heads = [k[len("GITHEAD_") :] for k in os.environ if k.startswith("GITHEAD_")]
    store = Store(Path("."))
    loaded = load_config(store)
    if loaded is None or len(heads) != 1:
        # Not a merge we can see through (e.g. a rebase step): let git report a
        # conflict rather than guess.
        sys.stderr.write(
            f"git-ledger merge driver: cannot regenerate {path} here; resolve with "
            "'git ledger sync' or by re-running the verb\n"
        )
        return 1
    config = loaded[0]
    snap = store.merged_snapshot(heads[0])
    data = regenerate(config, snap, path, Path(ours_file).read_bytes(), store)
    Path(ours_file).write_bytes(data)
    return 0
