"""What one replay carries from commit to commit: the store it reads, the configuration
it was made with, the findings and notes it marks on commits, and the reads it shares
(parsed entries, configuration tables, tree diffs). The rules themselves live in
:mod:`.commits`, :mod:`.registrations` and :mod:`.results`."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from ledger.core.commitinfo import CommitInfo
from ledger.core.errors import LedgerError
from ledger.core.repobase import DEFAULT_FREE_PATHS, frozen_tables, ledger_table
from ledger.core.verify.findings import REVERTS

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.cache import EntryCache
    from ledger.core.facts import FactFn
    from ledger.core.store import Store

# A version's state in history: [registration commit, frozen hash, blob, flags].
# flags: c concluded, v void, g gone (reverted or renamed away), m matrix file,
# x matrix cell.
VState = list[str]

# Parsing the entry at one changed path (a version: YAML and pydantic, its blob before
# and after, about 1.5 ms) costs about what reading this much of the shared entry cache
# does (JSON at 20-40 ms a MB on this project's machines).
PATH_PARSE_BYTES = 50_000


class NeedsFull(Exception):
    """The light history reader (:mod:`ledger.hooks.history`) met what only a full replay
    with the validated configuration may do: no cached state to build on."""


class Change(NamedTuple):
    """One path inside the ledger dir that a commit changed, as the replay checks it."""

    commit: CommitInfo
    kind: str | None  # the commit's kind of transition (None: not a transition)
    step: str  # its Ledger-Step
    path: str
    rel: str  # the path inside the ledger dir
    old: str | None  # blob ids before and after (None: absent)
    new: str | None


class _Parsed(dict[str, Any]):
    """The entries one incremental run parsed (EntryCache's get/put/save), kept in memory."""

    def put(self, key: str, value: Any) -> None:
        self[key] = value

    def save(self) -> None:
        return None


class Replay:
    def __init__(self, store: Store, config: Any, config_file: str) -> None:
        self.store = store
        self.dir = config.dir
        self.prefix = config.ledger.id_prefix
        self.preset = config.ledger.preset
        self.config_file = config_file
        hooks = config.hooks
        self.free = tuple(getattr(hooks, "free_paths", DEFAULT_FREE_PATHS))
        self.strict = bool(hooks.require_open_version)
        self._entries: EntryCache | _Parsed | None = None
        self._expected: int | None = None
        self.config_cache: dict[str, dict[str, str]] = {}
        self.diffs: dict[str, list[tuple[str, str | None, str | None]]] = {}
        self.marks: dict[str, dict[str, list[list[str]]]] = {}
        self._snap: Any = None
        self.config = config
        self.rules: tuple[list[tuple[str, set[str], bool]], set[str]] | None = None
        self.checks: dict[str, Any] | None = None  # the preset's history_checks
        self._hooks: dict[str, list[Any]] = {}
        self.fact_kinds: list[tuple[str, FactFn]] | None = None  # the preset's fact_kinds

    def expect(self, changed: int | None) -> None:
        """How many ledger paths the commits to replay change (None: too many to count,
        a merge among them): see :attr:`entries`."""
        self._expected = changed

    @property
    def entries(self) -> EntryCache | _Parsed:
        """The shared parsed-entry cache, read only when an entry is parsed (a commit
        that changes none, such as a configuration transition, never loads it).

        The incremental path parses the few new blobs itself: the shared cache holds
        every entry ever parsed (tens of MB at 10,000 steps), and reading it whole to
        replay a commit or two cost a ``record`` at 1,000 steps 80 ms, eighty times
        the parses it saved. The light reader always does; a full one does when the
        paths to replay (:meth:`expect`) cost less to parse than the file to read,
        unless this process holds the file already."""
        if self._entries is None:
            if getattr(self.store, "light", False):
                self._entries = _Parsed()
            else:
                from ledger.core.cache import EntryCache

                shared = EntryCache(self.store.ledger_state_dir)
                paths = self._expected
                if paths is not None and paths * PATH_PARSE_BYTES < shared.unread_bytes():
                    self._entries = _Parsed()  # not saved: a later state load parses them
                else:
                    self._entries = shared
        return self._entries

    def save_entries(self) -> None:
        if self._entries is not None:
            self._entries.save()

    def read_blob(self, blob: str) -> bytes:
        if self._snap is None:
            self._snap = self.store.snapshot()
        data: bytes = self._snap.read_blob(blob)
        return data

    def finding(self, c: CommitInfo, path: str, rule: str, msg: str, fix: str, step: str) -> None:
        mark = self.marks.setdefault(c.id, {"f": [], "n": []})
        mark["f"].append([path, rule, msg, fix, step])

    def note(self, c: CommitInfo, kind: str, step: str, path: str, text: str) -> None:
        mark = self.marks.setdefault(c.id, {"f": [], "n": []})
        mark["n"].append([kind, step, path, text])

    def parse(self, kind: str, blob: str, path: str) -> dict[str, Any] | str:
        """The parsed entry (through the shared blob cache), or the error text."""
        key = f"{kind}:{blob}"
        parsed = self.entries.get(key)
        if parsed is None:
            from ledger.core.state import parse_entry  # pydantic: only for an entry not cached
            from ledger.core.store.objects import MissingObject

            try:
                data = self.read_blob(blob)
                parsed = parse_entry(kind, data, path)
            except MissingObject:
                raise  # exit 2: the clone lacks it; the entry itself may be whole
            except LedgerError as exc:
                parsed = {"error": exc.message}
            except (RecursionError, ValueError, TypeError) as exc:
                parsed = {"error": f"{path}: cannot be parsed ({type(exc).__name__})"}
            self.entries.put(key, parsed)
        if "error" in parsed:
            return str(parsed["error"])
        return dict(parsed)

    def config_tables(self, blob: str | None) -> dict[str, str]:
        """The verdict-affecting tables in one configuration blob (one per gate), each as
        canonical JSON text; kept in the cache by blob id, so the configuration before
        a transition is not read again."""
        if blob is None:
            return {}
        if blob in self.config_cache:
            self.config_cache[blob] = self.config_cache.pop(blob)  # recently used
            return self.config_cache[blob]
        import tomllib

        try:
            data = tomllib.loads(self.read_blob(blob).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {"unreadable": blob}
        tables = frozen_tables(ledger_table(data, self.config_file) or {})
        digests = {k: json.dumps(v, sort_keys=True, default=str) for k, v in tables.items()}
        self.config_cache[blob] = digests
        return digests

    def rules_epoch(self, blob: str | None) -> int:
        """The ``[ledger] rules`` one configuration blob opted into (1: none named), from
        its verdict-affecting tables (:meth:`config_tables`, which carry it)."""
        value = self.config_tables(blob).get("ledger.rules", "1")
        return int(value) if value.isdigit() else 1

    def hook_rules(self, blob: str | None) -> list[Any] | None:
        """([hooks] free_paths, require_open_version) of one configuration blob: the
        settings a code commit is judged by are the ones in force when it was made, so a
        later configuration commit never erases an earlier finding."""
        if blob is None:
            return None
        if blob not in self._hooks:
            import tomllib

            from ledger.core.repobase import hook_settings

            try:
                data = tomllib.loads(self.read_blob(blob).decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                data = {}
            values = hook_settings(ledger_table(data, self.config_file) or {}, self.config_file)
            free = [p for p in values["free_paths"].split("\x1f") if p]
            self._hooks[blob] = [free, values["require_open_version"] == "1"]
        return self._hooks[blob]

    def layout(self, blob: str | None, name: str) -> tuple[str, str, str] | None:
        """(dir, id_prefix, preset) a configuration blob names; None: no ledger in it."""
        if blob is None:
            return None
        import tomllib

        from ledger.core.repobase import hook_settings

        try:
            data = tomllib.loads(self.read_blob(blob).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            return ("", "", "unreadable")
        table = ledger_table(data, name)
        if table is None:
            return None
        values = hook_settings(table, name)
        return values["dir"], values["id_prefix"], values["preset"]

    def diff(self, commit: CommitInfo) -> list[tuple[str, str | None, str | None]]:
        if commit.id not in self.diffs:
            parent = commit.parents[0] if commit.parents else None
            self.diffs[commit.id] = self.store.changes(parent, commit.id)
        return self.diffs[commit.id]

    def reverted(self, c: CommitInfo) -> CommitInfo | None:
        """The commit ``c`` says it reverts, when this repository has it."""
        match = REVERTS.search(c.message)
        if match is None or not self.store.has_commit(match.group(1)):
            return None
        return self.store.commit_info(match.group(1))
