"""The ``ledger-views`` merge driver: generated views are regenerated, never line-merged.

git runs ``git-ledger merge-driver %O %A %B %P`` for each path marked
``merge=ledger-views`` in .gitattributes (a driver runs only because the user's
git config defines it: ``hooks install``, ``init``, ``sync`` and ``doctor --fix``
write that definition, here and only here; a .gitattributes alone never makes
code run). The definition starts the installed program isolated
(:mod:`ledger.core.launch`): git runs drivers in the repository's top level, where
``python -m ledger`` would import a ``ledger/`` package pushed by anyone. git passes the
commit being merged in as ``GITHEAD_<sha>`` and HEAD is ours, so the driver
merges the two trees in memory (entry files never conflict: one file per
fact), reads the ledger state of that merged tree, and writes the view for
``%P`` into ``%A``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from ledger.core import gitcli, launch
from ledger.core.context import load_config
from ledger.core.errors import BadInput
from ledger.core.loops import preset_for
from ledger.core.model.config import LedgerConfig
from ledger.core.model.documents import decode_text
from ledger.core.repobase import VIEWS_DRIVER, write_atomic
from ledger.core.state import load_state
from ledger.core.store import Snapshot, Store
from ledger.core.views import apply_views, blank_views, readme_path

DRIVER = VIEWS_DRIVER
DRIVER_NAME = "git-ledger generated views"


def view_paths(config: LedgerConfig) -> list[str]:
    return [readme_path(config), *preset_for(config).view_paths(config)]


def attributes_text(config: LedgerConfig, current: str) -> str:
    """.gitattributes with a ``merge=ledger-views`` line for every generated view."""
    lines = current.splitlines()
    for path in view_paths(config):
        line = f"/{path} merge={DRIVER}"
        if line not in lines:
            lines.append(line)
    return "\n".join(lines) + "\n"


def driver_command() -> str:
    """The driver line for .git/config: the installed program, isolated."""
    return launch.shell_command("merge-driver", raw="%O %A %B %P")


def configure_driver(workdir: Path) -> None:
    """Define (or redefine) the views merge driver in .git/config; idempotent."""
    gitcli.run(["config", f"merge.{DRIVER}.name", DRIVER_NAME], workdir)
    gitcli.run(["config", f"merge.{DRIVER}.driver", driver_command()], workdir)


DriverState = Literal["missing", "current", "unsafe", "other"]


def driver_state(workdir: Path) -> tuple[DriverState, str]:
    """How .git/config defines the driver now, and the definition itself.

    ``unsafe``: a definition that starts Python without isolation (0.1 wrote
    ``'<python>' -m ledger merge-driver ...``), which imports a ``ledger``
    package from the repository on every merge of a view. ``other``: an
    isolated definition of another installation (a moved or second venv).
    """
    current = gitcli.config_get(workdir, f"merge.{DRIVER}.driver") or ""
    if not current:
        return "missing", current
    if current == driver_command():
        return "current", current
    if not launch.is_isolated_command(current):
        return "unsafe", current
    return "other", current


def regenerate(
    config: LedgerConfig, snap: Snapshot, path: str, ours_text: bytes, store: Store
) -> bytes:
    if path == readme_path(config):
        views = preset_for(config).readme_views(load_state(store, config, snap))
        return apply_views(decode_text(ours_text, path), views).encode()
    rendered = preset_for(config).render_view(config, snap, path)
    if rendered is not None:
        return rendered
    raise BadInput(
        f"merge driver: {path} is not a generated view",
        f"remove 'merge=ledger-views' for {path} from .gitattributes",
    )


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
    ours_text = Path(ours_file).read_bytes()
    if path == readme_path(config):
        names = preset_for(config).readme_blocks
        prose = merge_prose(Path(ancestor), Path(ours_file), Path(theirs_file), path, names)
        if prose is None:
            sys.stderr.write(
                f"git-ledger merge driver: both sides edited the text around the views in "
                f"{path}; resolve the text, then run 'git ledger doctor --fix'\n"
            )
            return 1
        ours_text = prose.encode()
    snap = store.merged_snapshot(heads[0])
    # The views of the merged entries under the merged configuration: what the hooks
    # compute for the merge commit (ours alone, a config change merged in from theirs
    # left the README's blocks stale).
    merged = load_config(store, snap)
    data = regenerate(merged[0] if merged else config, snap, path, ours_text, store)
    write_atomic(ours_file, data)
    return 0


def merge_prose(
    ancestor: Path, ours: Path, theirs: Path, path: str, names: tuple[str, ...]
) -> str | None:
    """Merge the hand-written text around the generated blocks; None on a conflict.

    The blocks are emptied on all three sides first (they are regenerated from
    the merged entries afterwards), so only what people wrote is merged, and
    an edit made on either side is kept rather than dropped for ours.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ledger-merge-") as tmp:
        blanked = []
        for side, source in (("ours", ours), ("base", ancestor), ("theirs", theirs)):
            text = decode_text(source.read_bytes(), path) if source.exists() else ""
            text = blank_views(text, names)
            target = Path(tmp) / side
            write_atomic(target, text, durable=False)
            blanked.append(target)
        return gitcli.merge_file(blanked[0], blanked[1], blanked[2], Path(tmp))
