"""Open a repository and its ledger configuration."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledger.core.configfile import read_config_text
from ledger.core.errors import BadInput, LedgerError, Refused
from ledger.core.model.config import LedgerConfig, parse_config
from ledger.core.state import LedgerState, load_state
from ledger.core.store import Snapshot, Store


@dataclass
class Context:
    store: Store
    config: LedgerConfig
    config_file: str
    # The last state this context loaded (any commit): what a reader after the verb may
    # borrow (ledger.cli.status.warm). None: the verb never read the ledger whole.
    loaded: LedgerState | None = field(default=None, repr=False, compare=False)

    @property
    def dir(self) -> str:
        return self.config.dir

    def state(
        self, snap: Snapshot | None = None, previous: LedgerState | None = None
    ) -> LedgerState:
        """The ledger state at ``snap`` (default HEAD), through the blob-id cache;
        ``previous`` (a state of another commit) lends what it built (load_state)."""
        snap = snap or self.store.snapshot()
        self.loaded = load_state(self.store, self.config, snap, previous=previous)
        return self.loaded

    def require_committed_config(self) -> None:
        """Thresholds a transition relies on must be on record, not just on disk."""
        if self.store.workdir is None:
            return
        committed = self.store.snapshot().blob_id(self.config_file)
        # Through git's filters: a CRLF checkout (core.autocrlf) is not a change.
        on_disk = self.store.worktree_blob(self.config_file, (committed,))
        if on_disk is None and self.store.skip_worktree(self.config_file):
            return  # outside a sparse checkout: what is committed is what applies
        if on_disk != committed:
            raise Refused(
                f"{self.config_file} has uncommitted changes",
                f"commit it first (git commit {self.config_file}) so the numbers "
                "a transition uses are on record",
            )


CONFIG_CACHE = "config.json"
CONFIG_KEEP = 8  # configurations kept: a branch or two and the frozen ones being read


def load_config(store: Store, snap: Snapshot | None = None) -> tuple[LedgerConfig, str] | None:
    found = read_config_text(store, snap)
    if found is None:
        return None
    name, text = found
    return parsed_config(store, text, name), name


def parsed_config(store: Store, text: str, name: str) -> LedgerConfig:
    """:func:`parse_config` of ``text``, remembered across processes by its text (and
    this program's code): a configuration that validated once is rebuilt, not
    validated again (:mod:`ledger.core.model.trusted`). One that does not validate is
    never kept, so it is refused each time."""
    import hashlib

    from ledger.core import caches
    from ledger.core.model.trusted import rebuild

    file = caches.path(store.ledger_state_dir, CONFIG_CACHE)
    key = caches.key(CONFIG_CACHE)
    item = hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()
    known = caches.recall(file, key, item, dict)
    if known is not None:
        try:
            return rebuild(LedgerConfig, known)
        except (AttributeError, TypeError):  # not what this code kept: parse again
            pass
    config = parse_config(text, name)
    caches.remember(file, key, item, config.model_dump(mode="json"), CONFIG_KEEP)
    return config


def open_preset(cwd: Path | str, preset: str) -> Context:
    """The context of a ledger that must be of ``preset`` (a campaign verb in a campaign)."""
    from ledger.core.loops import require

    ctx = open_context(cwd)
    require(ctx.config, preset)
    return ctx


def open_store(cwd: Path | str = ".") -> Store:
    return Store(cwd)


def open_context(cwd: Path | str = ".", snap: Snapshot | None = None) -> Context:
    store = open_store(cwd)
    loaded = load_config(store, snap)
    if loaded is None:
        ended = delivered_here(store) if snap is None else None
        if ended is not None:
            raise BadInput(
                f"no ledger on this branch: it ended with the delivery {ended[:10]} (a "
                "delivery branch holds the kept code and the closed report, not the ledger)",
                "run git ledger on the branch the loop ran on (git switch BRANCH)",
            )
        raise BadInput(
            "no ledger here: neither ledger.toml nor [tool.ledger] in pyproject.toml",
            "run 'git ledger init' first",
        )
    config, name = loaded
    ctx = Context(store=store, config=config, config_file=name)
    store.on_commit.append(lambda transition: _committed(ctx, transition.writes))
    return ctx


def _committed(ctx: Context, writes: Mapping[str, bytes | None]) -> None:
    """After each commit ``ctx``'s store made: its entries kept for the next reader, and
    the context noted for the status cache (:data:`ledger.core.statuscache.moved`)."""
    from ledger.core import statuscache

    _keep_quietly(ctx.store, ctx.config, writes)
    moved = statuscache.moved
    if moved is not None and not any(known is ctx for known in moved):
        moved.append(ctx)


def _keep_quietly(store: Store, config: LedgerConfig, writes: Mapping[str, bytes | None]) -> None:
    """:func:`keep_entries` after a commit: what fails there costs the next reader a parse,
    never the transition its exit code (the commit is made)."""
    with contextlib.suppress(LedgerError, OSError, ValueError, RecursionError):
        keep_entries(store, config, writes)


def keep_entries(store: Store, config: LedgerConfig, writes: Mapping[str, bytes | None]) -> None:
    """The entries a transition wrote, parsed into the entry cache by the process that
    made them: the next reader (a ``next`` after each step) finds them there instead of
    parsing them again (YAML, and a validator pydantic builds for it). Only speed is at
    stake: an entry that does not parse is kept as such, as a reader would keep it, and
    a cache that cannot be written is left. A cache this process has not read is
    appended to, never read: ``record`` at 10,000 steps reads one version, not the
    cache of all (ledger.core.cache)."""
    import hashlib

    from ledger.core import caches
    from ledger.core.cache import FILE, EntryCache
    from ledger.core.state import classify, parse_entry

    base = f"{config.dir}/"
    parsed: dict[str, Any] = {}
    for path, data in writes.items():
        kind = (
            classify(path[len(base) :], config.ledger.id_prefix) if path.startswith(base) else None
        )
        if data is None or kind is None:
            continue
        # git's id of the blob the transition wrote (its bytes as given, no filter).
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()
        try:
            parsed[f"{kind}:{blob}"] = parse_entry(kind, data, path)
        except BadInput as exc:
            parsed[f"{kind}:{blob}"] = {"error": exc.message}
    if not parsed:
        return
    cache = EntryCache(store.ledger_state_dir)
    if cache.unread_bytes():
        caches.append(cache.path, caches.key(FILE), parsed)
        return
    for key, value in parsed.items():
        cache.put(key, value)
    cache.save()


def delivered_here(store: Store) -> str | None:
    """The delivery commit that took the ledger away on the checked-out branch (None:
    there was none; this is asked only where no ledger is found)."""
    from ledger.core import gitcli
    from ledger.core.repobase import CONFIG_FILES
    from ledger.core.store import TRAILER_TRANSITION

    if store.workdir is None:
        return None
    grep = f"--grep=^{TRAILER_TRANSITION}: deliver$"
    found = gitcli.run(
        ["log", "-1", "--format=%H", grep, "HEAD", "--", *CONFIG_FILES], store.workdir, check=False
    )
    sha = found.stdout.strip()
    return sha if found.returncode == 0 and sha else None


def error_log(cwd: Path) -> Path | None:
    """Where a bug's traceback goes: .git/ledger/last-error.log if we are in a repo."""
    try:
        path = Store(cwd).ledger_state_dir / "last-error.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    except Exception:
        return None
