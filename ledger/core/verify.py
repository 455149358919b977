"""The one implementation of the ledger's history rules: ``git ledger verify``.

Hooks are a convenience (``--no-verify``, ``git revert``, rebase, amend, a
force-push or a squash merge all skip them); history is the proof. This module
replays the commits that lead to a tip, parents first, and checks every
transition against the rules below. ``conclude`` (for its version),
``status`` (as problems), the pre-push hook (what is pushed), ``sync`` (what
arrives) and the server-side pre-receive hook all call :func:`verify`.

Rules (each finding names one):

1. ``frozen-registration``: a registration's frozen part (registered front
   matter and the Hypothesis) is byte-identical in every commit after it; a
   registration is deleted only by reverting it; ``witness``: the
   registration commit in history is the one ``refs/ledger/witness/<id>``
   names (locally and as fetched from a remote), so a rewritten registration
   is caught even when the rewriter moved the branch.
2. ``append-only-results``: a result changes only by ``record --replace``
   (a ``Ledger-Replace`` trailer) and disappears only by a whole ``git revert``
   of the transition that recorded it (shown as "withdrawn" forever).
3. ``ids-never-reused``: an id registered once is never registered again;
   results that predate the current registration of their id never count.
4. ``config-frozen``: the verdict-affecting tables of the configuration
   (``gates``, ``stats``, ``triggers``, ``batches``, ``campaign``) change only
   in a configuration transition (``Ledger-Transition: config``).
5. ``transitions-only``: entries change only through their transitions
   (registrations, results, conclusions, matrices, the phase, and each
   preset's own entries and views as its ``history_rules`` declare them); a
   merge adds nothing of its own.
6. ``unparseable-entry``: an entry the tool cannot parse is a finding, never
   a crash.
7. ``one-bet-per-version``: while a version is open, a code commit carries its
   ``Ledger-Step`` trailer or touches only free paths (``[hooks] free_paths``).

Replay is incremental: the state after a verified tip is cached by commit id
under ``.git/ledger/``, so a repeated call reads only the new commits.
Findings of a commit depend only on the commit and its parents, so they are
cached by commit id too.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from typing import Any

from ledger.core import gitcli
from ledger.core.commitinfo import TRAILER_STEP, TRAILER_TRANSITION, CommitInfo, parse_trailers
from ledger.core.commitrules import glob_match, is_free
from ledger.core.errors import BadInput, LedgerError, Refused
from ledger.core.repobase import (
    DEFAULT_FREE_PATHS,
    base_id,
    cell_of,
    frozen_tables,
    ledger_table,
    results_dir,
    write_atomic,
)

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.cache import EntryCache
    from ledger.core.store import Store

WITNESS = "refs/ledger/witness/"
REMOTE_WITNESS = "refs/ledger/remotes/"
CACHE_FILE = "verify-cache.json"
CACHE_VERSION = 3
KEEP_CONFIGS = 8  # configuration blobs whose verdict-affecting tables are cached
KEEP_TIPS = 4
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})")
RESULT_KINDS = ("record", "run", "run-failed")  # transitions that add results


@dataclass(frozen=True)
class Finding:
    commit: str
    path: str
    rule: str
    message: str
    fix: str
    step: str = ""

    def line(self) -> str:
        where = f"{self.commit[:10]} {self.path}" if self.path else self.commit[:10]
        return f"{where}: [{self.rule}] {self.message} (fix: {self.fix})"

    def as_json(self) -> dict[str, str]:
        return {
            "commit": self.commit,
            "path": self.path,
            "rule": self.rule,
            "message": self.message,
            "fix": self.fix,
            "step": self.step,
        }


@dataclass(frozen=True)
class Note:
    """A legitimate undo or change, shown forever: withdrawn, replaced, config, void."""

    commit: str
    kind: str
    step: str
    path: str
    text: str

    def line(self) -> str:
        return f"{self.commit[:10]} {self.kind}: {self.step} {self.path} {self.text}".rstrip()

    def as_json(self) -> dict[str, str]:
        return {
            "commit": self.commit,
            "kind": self.kind,
            "step": self.step,
            "path": self.path,
            "text": self.text,
        }


@dataclass
class Report:
    tip: str | None
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    registrations: dict[str, str] = field(default_factory=dict)
    ever: set[str] = field(default_factory=set)
    void: set[str] = field(default_factory=set)
    commits: int = 0

    def for_step(self, vid: str, since: str, store: Store) -> list[Finding]:
        """Findings that taint ``vid``: its own (or its matrix's), and unassigned ones
        in commits after its registration ``since``."""
        mine = {vid, base_id(vid)}
        return [
            f
            for f in self.findings
            if f.step in mine or (not f.step and store.is_ancestor(since, f.commit))
        ]


# A version's state in history: [registration commit, frozen hash, blob, flags].
# flags: c concluded, v void, g gone (reverted or renamed away), m matrix file,
# x matrix cell.
VState = list[str]


@dataclass(frozen=True)
class _Change:
    """One path inside the ledger dir that a commit changed, as the replay checks it."""

    commit: CommitInfo
    kind: str | None  # the commit's Ledger-Transition (None: not a transition)
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


class _Replay:
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
        self._config_tables: dict[str, dict[str, str]] = {}
        self._diffs: dict[str, list[tuple[str, str | None, str | None]]] = {}
        self.marks: dict[str, dict[str, list[list[str]]]] = {}
        self._snap: Any = None
        self.config = config
        self._rules: tuple[list[tuple[str, set[str], bool]], set[str]] | None = None

    # --- helpers ------------------------------------------------------------

    @property
    def entries(self) -> EntryCache | _Parsed:
        """The shared parsed-entry cache, read only when an entry is parsed (a commit
        that changes none, such as a configuration transition, never loads it)."""
        if self._entries is None:
            if getattr(self.store, "light", False):
                # The incremental path parses the few new blobs itself: the shared
                # cache holds every entry ever parsed (tens of MB at 10,000 steps).
                self._entries = _Parsed()
            else:
                from ledger.core.cache import EntryCache

                self._entries = EntryCache(self.store.ledger_state_dir)
        return self._entries

    def read_blob(self, blob: str) -> bytes:
        if self._snap is None:
            self._snap = self.store.snapshot()
        data: bytes = self._snap.read_blob(blob)
        return data

    def key(self) -> str:
        text = json.dumps(
            [
                CACHE_VERSION,
                self.dir,
                self.prefix,
                self.preset,
                self.config_file,
                self.free,
                self.strict,
            ]
        )
        return text  # short, and no hashlib on the incremental path

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

            try:
                data = self.read_blob(blob)
                parsed = parse_entry(kind, data, path)
            except LedgerError as exc:
                parsed = {"error": exc.message}
            except (RecursionError, ValueError, TypeError) as exc:
                parsed = {"error": f"{path}: cannot be parsed ({type(exc).__name__})"}
            self.entries.put(key, parsed)
        if "error" in parsed:
            return str(parsed["error"])
        return dict(parsed)

    def frozen(self, kind: str, parsed: dict[str, Any]) -> tuple[str, str]:
        """(hash of the frozen part, hash of the conclusion part) of a version or matrix."""
        import hashlib

        model = parsed["model"]
        if kind == "version":
            from ledger.core.model.entries import REGISTERED_KEYS

            frozen: Any = [{k: model.get(k) for k in REGISTERED_KEYS}, parsed.get("hypothesis")]
            closing: Any = [model.get("conclusion"), model.get("void")]
        else:
            frozen = {k: model.get(k) for k in ("id", "baselines", "cites", "cells")}
            closing = {
                k: model.get(k)
                for k in ("concluded", "winner", "override", "verdicts", "comparison")
            }
        digest = [
            hashlib.sha256(json.dumps(x, sort_keys=True).encode()).hexdigest()[:16]
            for x in (frozen, closing)
        ]
        return digest[0], digest[1]

    def config_tables(self, blob: str | None) -> dict[str, str]:
        """The verdict-affecting tables in one configuration blob (one per gate), each as
        canonical JSON text; kept in the cache by blob id, so the configuration before
        a transition is not read again."""
        if blob is None:
            return {}
        if blob in self._config_tables:
            self._config_tables[blob] = self._config_tables.pop(blob)  # recently used
            return self._config_tables[blob]
        import tomllib

        try:
            data = tomllib.loads(self.read_blob(blob).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {"unreadable": blob}
        tables = frozen_tables(ledger_table(data, self.config_file) or {})
        digests = {k: json.dumps(v, sort_keys=True, default=str) for k, v in tables.items()}
        self._config_tables[blob] = digests
        return digests

    def diff(self, commit: CommitInfo) -> list[tuple[str, str | None, str | None]]:
        if commit.id not in self._diffs:
            parent = commit.parents[0] if commit.parents else None
            self._diffs[commit.id] = self.store.changes(parent, commit.id)
        return self._diffs[commit.id]

    # --- one commit ---------------------------------------------------------

    def step_commit(self, c: CommitInfo, state: dict[str, Any]) -> None:
        versions: dict[str, VState] = state["v"]
        kind = c.trailer(TRAILER_TRANSITION)
        step = c.trailer(TRAILER_STEP) or ""
        changes = self.diff(c)
        base = self.dir + "/"
        opened = list(state.get("o", []))  # open before this commit
        code: list[str] = []
        entries = False
        for path, old, new in changes:
            if path.startswith(base):
                rel = path[len(base) :]
                self.entry_change(_Change(c, kind, step, path, rel, old, new), state)
                entries = True
            elif path == self.config_file:
                self.config_change(c, state, kind, old, new, opened, len(changes))
            elif not is_free(path, self.free):
                code.append(path)
        if code and kind is None:
            self.code_commit(c, step, code, opened)
        if entries:
            # Kept incrementally (only the versions this commit touched): scanning
            # every version at every commit is quadratic.
            open_now = [v for v in state.get("o", []) if v in versions]
            for vid in state.pop("touched", []):
                flags = versions[vid][3] if vid in versions else "g"
                if set(flags) & set("cvgm"):
                    open_now = [v for v in open_now if v != vid]
                elif vid not in open_now:
                    open_now.append(vid)
            state["o"] = open_now

    @staticmethod
    def open_steps(versions: dict[str, VState]) -> list[str]:
        return [
            vid
            for vid, (_reg, _frozen, _blob, flags) in versions.items()
            if not set(flags) & set("cvgm")
        ]

    def code_commit(self, c: CommitInfo, step: str, code: list[str], opened: list[str]) -> None:
        shown = ", ".join(code[:3]) + (" ..." if len(code) > 3 else "")
        if step:
            if step not in opened:
                self.finding(
                    c,
                    shown,
                    "one-bet-per-version",
                    f"code commit for {step}, which is not open (registered and not concluded) here",
                    f"code for a version comes between its registration and its conclusion; "
                    f"git ledger void {opened[0] if opened else step} --reason ... if it cannot count",
                    opened[0] if opened else step,
                )
            return
        if opened and self.strict:
            self.finding(
                c,
                shown,
                "one-bet-per-version",
                f"code commit with no Ledger-Step trailer while {', '.join(opened)} is open",
                "commit code with the hooks installed (git ledger hooks install), or "
                f"git ledger void {opened[0]} --reason ... if its results cannot count",
                opened[0],
            )

    def config_change(
        self,
        c: CommitInfo,
        state: dict[str, Any],
        kind: str | None,
        old: str | None,
        new: str | None,
        opened: list[str],
        changed: int,
    ) -> None:
        if not state["cfg"]:
            state["cfg"] = True  # the configuration coming into being
            return
        before, after = self.config_tables(old), self.config_tables(new)
        # A new gate changes no registered version's verdict: only what was there counts.
        if all(after.get(k) == v for k, v in before.items()):
            return
        alone = changed == 1 and kind in (None, "config") and not c.trailer(TRAILER_STEP)
        if (kind == "config" and changed == 1) or alone:
            # A commit of the configuration alone is a visible transition of its own;
            # the hooks add its trailer (Ledger-Transition: config).
            self.note(c, "config", "config", self.config_file, c.subject)
            return
        why = (
            "in a commit that also changes other files"
            if changed > 1
            else f"in a commit that is not a configuration transition ({kind or 'code'})"
        )
        for vid in opened or [""]:
            self.finding(
                c,
                self.config_file,
                "config-frozen",
                f"verdict-affecting settings ([gates]/[stats]/[triggers]/[batches]/[campaign]) "
                f"changed {why}",
                "change them with 'git ledger config set KEY VALUE --reason TEXT' "
                "(or a commit of ledger.toml alone); "
                + (
                    f"git ledger void {vid} --reason ..." if vid else "they apply to later versions"
                ),
                vid,
            )

    def entry_change(self, change: _Change, state: dict[str, Any]) -> None:
        from ledger.core.entrykind import classify

        c, kind, path, rel = change.commit, change.kind, change.path, change.rel
        what = classify(rel, self.prefix)
        if what in ("version", "matrix"):
            self.version_change(change, state, what)
        elif what == "result":
            self.result_change(change, state)
        elif what == "phase":
            if kind != "phase":
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    "the phase file changed outside a phase transition",
                    "declare or resume a phase with 'git ledger phase'",
                    "",
                )
        else:
            self.preset_change(c, kind, path, rel, change.old, change.new)

    def preset_rules(self) -> tuple[list[tuple[str, set[str], bool]], set[str]]:
        """(glob, transitions allowed, append-only) per rule the loop's preset declares
        (:meth:`ledger.core.loops.Preset.history_rules`), and its generated views."""
        if self._rules is None:
            from ledger.core.loops import by_name

            preset = by_name(self.preset)
            rules = []
            for rule in preset.history_rules():
                kinds = {k.strip() for k in rule["changed_by"].split(",")}
                if "hand" not in kinds:  # files people edit are theirs
                    rules.append((rule["paths"], kinds, rule.get("mode") == "append"))
            views = {p[len(self.dir) + 1 :] for p in preset.view_paths(self.config)}
            self._rules = (rules, views)
        return self._rules

    def preset_change(
        self, c: CommitInfo, kind: str | None, path: str, rel: str, old: str | None, new: str | None
    ) -> None:
        """Invariant 5 for the loop's own entries: each changes only through its transitions."""
        rules, views = self.preset_rules()
        reverted = self.reverted(c)
        undoes = reverted is not None and (path, new, old) in self.diff(reverted)
        if rel in views:
            if kind is None and not undoes:
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    f"{rel} is generated by the {self.preset} transitions and was edited by hand",
                    f"restore it (git revert {c.id[:10]}); it follows its entries",
                    "",
                )
            return
        for glob, kinds, append in rules:
            if not glob_match(rel, glob):
                continue
            if undoes and reverted is not None and reverted.trailer(TRAILER_TRANSITION) in kinds:
                self.note(c, "withdrawn", "", path, f"withdrawn: {withdrawn_reason(c.message)}")
            elif kind not in kinds:
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    f"the {self.preset} entry {rel} changed outside its transitions "
                    f"({', '.join(sorted(kinds))}; this commit: {kind or 'none'})",
                    f"restore it (git revert {c.id[:10]}); change it only with the git ledger "
                    "verbs",
                    "",
                )
            elif append and old is not None:
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    f"the {self.preset} entry {rel} was "
                    f"{'deleted' if new is None else 'edited'}; it is only ever added",
                    f"restore it (git revert {c.id[:10]}); record a new entry instead",
                    "",
                )
            return

    def version_change(self, change: _Change, state: dict[str, Any], what: str) -> None:
        c, kind, step, path, rel = change.commit, change.kind, change.step, change.path, change.rel
        old, new = change.old, change.new
        versions: dict[str, VState] = state["v"]
        vid = rel[: -len("-matrix.md")] if what == "matrix" else rel[:-3]
        starts = ("matrix-register",) if what == "matrix" else ("register", "rename")
        current = versions.get(vid)
        touched = state.setdefault("touched", [])
        touched.append(vid)
        if what == "matrix":
            touched.extend(f"{vid}.{name}" for name in self.cells_of(new or old, path))
        if new is None:
            if current is None:
                return
            reverted = self.reverted(c)
            if kind == "rename" or (
                reverted is not None
                and reverted.trailer(TRAILER_TRANSITION) in starts
                and reverted.trailer(TRAILER_STEP) == vid
            ):
                self.note(c, "withdrawn", vid, path, f"registration withdrawn: {c.subject}")
            else:
                self.finding(
                    c,
                    path,
                    "frozen-registration",
                    f"the registration of {vid} was deleted",
                    f"restore it (git revert {c.id[:10]}), or git ledger void {vid} --reason ...",
                    vid,
                )
            self.set_flags(versions, vid, add="g")
            return
        parsed = self.parse(what, new, path)
        if isinstance(parsed, str):
            self.finding(
                c, path, "unparseable-entry", parsed, f"restore the committed text of {path}", vid
            )
            return
        frozen, closing = self.frozen(what, parsed)
        model = parsed["model"]
        flags = ("m" if what == "matrix" else "") + self.closing_flags(what, model)
        if old is None or current is None or "g" in current[3]:
            if current is not None:
                self.finding(
                    c,
                    path,
                    "ids-never-reused",
                    f"{vid} was registered before (commit {current[0][:10]}); an id is never "
                    "registered twice",
                    f"register the next id instead, and git ledger void {vid} --reason ...",
                    vid,
                )
            elif kind not in starts or step != vid:
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    f"{vid} came into being in a commit that is not its registration "
                    f"(Ledger-Transition: {kind or 'none'}); a squash merge or a hand edit",
                    "merge ledger branches with a merge commit or rebase-merge, never squash; "
                    f"git ledger void {vid} --reason ...",
                    vid,
                )
            if current is not None and self.store.snapshot(c.id).is_tree(
                results_dir(self.dir, vid)
            ):
                self.finding(
                    c,
                    results_dir(self.dir, vid),
                    "ids-never-reused",
                    f"results of {vid} recorded before its current registration never count",
                    f"register the next id instead, and git ledger void {vid} --reason ...",
                    vid,
                )
            versions[vid] = [c.id, frozen + ":" + closing, new, flags]
            if what == "matrix":
                for cell in model.get("cells", []):
                    versions[f"{vid}.{cell.get('name')}"] = [
                        c.id,
                        "",
                        "",
                        "x" + flags.replace("m", ""),
                    ]
            return
        old_frozen, _, old_closing = current[1].partition(":")
        if frozen != old_frozen:
            self.finding(
                c,
                path,
                "frozen-registration",
                f"the registered part of {vid} (front matter and Hypothesis) changed after its "
                f"registration {current[0][:10]}",
                f"a registration is a contract: git ledger void {vid} --reason ..., then register "
                "a new version",
                vid,
            )
        if closing != old_closing:
            allowed = ("matrix-conclude",) if what == "matrix" else ("conclude", "void")
            if kind not in allowed or step != vid:
                self.finding(
                    c,
                    path,
                    "transitions-only",
                    f"the conclusion of {vid} changed outside its conclude transition",
                    f"restore it (git revert {c.id[:10]}); a verdict is written only by "
                    "git ledger conclude",
                    vid,
                )
            if kind == "void":
                self.note(c, "void", vid, path, str(model.get("void") or ""))
            pending = state.get("del", {})
            for gone in [p for p, (_c, _b, v) in pending.items() if v == vid]:
                self.finding(
                    c, gone, "append-only-results", *deleted_finding(pending.pop(gone))[2:], vid
                )
        current[1] = old_frozen + ":" + closing
        current[2] = new
        current[3] = ("m" if what == "matrix" else "") + self.closing_flags(what, model)
        if what == "matrix":
            for cell in model.get("cells", []):
                cell_state = versions.get(f"{vid}.{cell.get('name')}")
                if cell_state is not None:
                    cell_state[3] = "x" + current[3].replace("m", "")

    def cells_of(self, blob: str | None, path: str) -> list[str]:
        if blob is None:
            return []
        parsed = self.parse("matrix", blob, path)
        if isinstance(parsed, str):
            return []
        return [str(cell.get("name")) for cell in parsed["model"].get("cells", [])]

    @staticmethod
    def closing_flags(what: str, model: dict[str, Any]) -> str:
        if what == "matrix":
            return "c" if model.get("concluded") else ""
        return ("c" if model.get("conclusion") else "") + ("v" if model.get("void") else "")

    @staticmethod
    def set_flags(versions: dict[str, VState], vid: str, add: str) -> None:
        current = versions.get(vid)
        if current is not None and add not in current[3]:
            current[3] += add

    def reverted(self, c: CommitInfo) -> CommitInfo | None:
        match = _REVERTS.search(c.message)
        if match is None or not self.store.has_commit(match.group(1)):
            return None
        return self.store.commit_info(match.group(1))

    def result_change(self, change: _Change, state: dict[str, Any]) -> None:
        c, kind, step, path, rel = change.commit, change.kind, change.step, change.path, change.rel
        old, new = change.old, change.new
        vid = rel.split("/")[1]
        versions: dict[str, VState] = state["v"]
        if new is None:
            reverted = self.reverted(c)
            if kind == "rename":
                return
            if (
                reverted is not None
                and reverted.trailer(TRAILER_TRANSITION) in RESULT_KINDS
                and (path, None, old) in self.diff(reverted)
            ):
                self.note(c, "withdrawn", vid, path, f"withdrawn: {withdrawn_reason(c.message)}")
                return
            # Pending: a finding unless the same bytes come back before its verdict.
            state.setdefault("del", {})[path] = [c.id, old, vid]
            return
        parsed = self.parse("result", new, path)
        if isinstance(parsed, str):
            self.finding(c, path, "unparseable-entry", parsed, f"restore {path} as recorded", vid)
            return
        if old is not None:
            reverted = self.reverted(c)
            reason = parsed["model"].get("provenance", {}).get("replaced")
            if kind in RESULT_KINDS and step == vid and reason:
                self.note(c, "replaced", vid, path, f"replaced: {reason}")
            elif reverted is not None and (path, new, old) in self.diff(reverted):
                self.note(c, "withdrawn", vid, path, f"replacement withdrawn: {c.subject}")
            else:
                self.finding(
                    c,
                    path,
                    "append-only-results",
                    f"a result of {vid} was edited outside 'record --replace'",
                    f"restore it (git revert {c.id[:10]}); replace a result only with "
                    "git ledger record --replace REASON",
                    vid,
                )
            return
        reverted = self.reverted(c)
        pending = state.get("del", {}).pop(path, None)
        if pending is not None and pending[1] == new:
            self.note(
                c, "restored", vid, path, f"deleted in {pending[0][:10]}, restored: {c.subject}"
            )
            return
        if pending is not None:
            self.finding(c, path, "append-only-results", *deleted_finding(pending)[2:], vid)
        if reverted is not None and (path, new, None) in self.diff(reverted):
            self.note(c, "restored", vid, path, f"restored: {c.subject}")
            return
        # matrix conclude brings every cell's results onto the base branch at once.
        by_matrix = kind == "matrix-conclude" and bool(cell_of(vid)) and base_id(vid) == step
        # sync's rename moves a version's results with it, in the same commit.
        by_matrix = by_matrix or (kind == "rename" and step == vid)
        if (kind not in RESULT_KINDS or step != vid) and not by_matrix:
            self.finding(
                c,
                path,
                "transitions-only",
                f"a result of {vid} was added outside a record transition "
                f"(Ledger-Transition: {kind or 'none'})",
                f"record results with git ledger record/run; revert {c.id[:10]}",
                vid,
            )
            return
        current = versions.get(vid)
        if current is None or "g" in current[3]:
            self.finding(
                c,
                path,
                "ids-never-reused",
                f"a result of {vid} recorded while {vid} has no current registration",
                f"git ledger void {vid} --reason ...",
                vid,
            )
        elif set(current[3]) & set("cv") and not by_matrix:
            self.finding(
                c,
                path,
                "append-only-results",
                f"a result of {vid} recorded after its conclusion could not have informed it",
                "register a new version to measure again",
                vid,
            )

    # --- merges -------------------------------------------------------------

    def merge_commit(self, c: CommitInfo, parents: list[dict[str, Any]]) -> dict[str, Any]:
        """A merge adds nothing of its own: each entry equals one side's."""
        from ledger.core.entrykind import classify

        snap = self.store.snapshot(c.id)
        merged = snap.files(self.dir)
        sides = [self.store.snapshot(p).files(self.dir) for p in c.parents]
        base_id = (
            self.store.repo.merge_base(c.parents[0], c.parents[1]) if len(c.parents) == 2 else None
        )
        base = self.store.snapshot(str(base_id)).files(self.dir) if base_id else {}
        views = {f"{self.dir}/README.md", f"{self.dir}/_template.md"}
        for path in sorted(set(merged) | {p for s in sides for p in s}):
            rel = path[len(self.dir) + 1 :]
            if path in views or classify(rel, self.prefix) in (None, "reflection"):
                continue
            blob = merged.get(path)
            if blob is not None and any(s.get(path) == blob for s in sides):
                continue
            if blob is None and (base.get(path) is not None or all(path not in s for s in sides)):
                continue
            parts = rel.split("/")
            vid = parts[1] if parts[0] == "results" else rel.removesuffix(".md")
            self.finding(
                c,
                path,
                "transitions-only",
                "the merge commit changed this entry beyond what either side recorded",
                f"redo the merge without editing ledger entries (git revert -m 1 {c.id[:10]})",
                vid,
            )
        state: dict[str, Any] = {"v": {}, "cfg": any(p["cfg"] for p in parents), "marks": []}
        marks: set[str] = set()
        for side, parent in zip(sides, parents, strict=False):
            marks.update(parent["marks"])
            for vid, vs in parent["v"].items():
                vpath = f"{self.dir}/{vid}" + ("-matrix.md" if "m" in vs[3] else ".md")
                in_merge = bool(vs[2]) and merged.get(vpath) == vs[2] == side.get(vpath)
                if vid not in state["v"] or in_merge:
                    state["v"][vid] = list(vs)
        state["marks"] = sorted(marks)
        state["o"] = self.open_steps(state["v"])
        pending: dict[str, list[str]] = {}
        for parent in parents:
            for path, item in parent.get("del", {}).items():
                if path not in merged:
                    pending[path] = item
        if pending:
            state["del"] = pending
        return state


def withdrawn_reason(message: str) -> str:
    """Why a ``git revert`` withdrew what it undid: the revert's own words.

    The body a user wrote (``git revert -e``, or ``-m`` text) without git's
    "This reverts commit ..." line and trailers; git's subject when there is none.
    """
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    subject = paragraphs[0].splitlines()[0] if paragraphs else ""
    body = paragraphs[1:]
    if body and parse_trailers(message):
        body = body[:-1]  # the trailers
    kept = [
        " ".join(line.strip() for line in p.splitlines()) for p in body if not _REVERTS.search(p)
    ]
    return " ".join(kept) if kept else subject


def history_notes(store: Store, config: Any, config_file: str) -> list[dict[str, str]]:
    """verify's notes for HEAD (withdrawn, replaced, config, void, restored), shown forever
    by log, show and the reports; none when history cannot be verified (a shallow clone)."""
    from ledger.core import verifycache

    tip = store.resolve(None)
    if tip is None:
        return []
    if verifycache.load(str(store.ledger_state_dir), str(store.common_dir), tip) is not None:
        return verifycache.load_notes(str(store.ledger_state_dir))
    try:
        return [n.as_json() for n in verify(store, config, config_file, tip).notes]
    except LedgerError:
        return []


def deleted_finding(pending: list[str]) -> tuple[str, str, str, str]:
    """(commit, rule, message, fix) for a result deleted in ``pending[0]``."""
    commit, _blob, vid = pending
    return (
        commit,
        "append-only-results",
        f"a result of {vid} was deleted in {commit[:10]} without reverting the transition "
        "that recorded it",
        f"restore it (git revert {commit[:10]}); a result is withdrawn only by 'git revert' "
        "of its record commit",
    )


def _outside(logged: list[tuple[CommitInfo, Any]]) -> set[str]:
    """Parents of the logged commits that are not themselves logged."""
    ids = {c.id for c, _changes in logged}
    return {p for c, _changes in logged for p in c.parents if p not in ids}


def _empty() -> dict[str, Any]:
    return {"v": {}, "cfg": False, "marks": []}


def _load_cache(path: str, key: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict) or data.get("key") != key:
        return {"key": key, "tips": {}, "marks": {}, "cfg": {}}
    configs = data.get("cfg")
    valid = isinstance(configs, dict) and all(
        isinstance(v, dict) and all(isinstance(t, str) for t in v.values())
        for v in configs.values()
    )
    data["cfg"] = configs if valid else {}
    return data


def _save_cache(path: str, data: dict[str, Any]) -> None:
    try:
        write_atomic(path, json.dumps(data, separators=(",", ":")), durable=False)
    except OSError:
        return  # a cache that cannot be written only costs time


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
        "git",
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
    try:
        proc = subprocess.run(args, capture_output=True, check=False, env=gitcli.git_env())
    except FileNotFoundError:
        raise BadInput("the git program is not on PATH", "install git") from None
    if proc.returncode != 0:
        text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(
            f"history is incomplete: {text[-1] if text else proc.returncode}",
            "fetch the missing objects (git fetch --unshallow, or a full clone)",
        )
    tokens = proc.stdout.split(b"\0")
    out: list[tuple[CommitInfo, list[tuple[str, str | None, str | None]] | None]] = []
    zero = "0" * 40
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
            changes.append((path, None if old == zero else old, None if new == zero else new))
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


class NeedsFull(Exception):
    """The light history reader (:mod:`ledger.hooks.history`) met what only a full replay
    with the validated configuration may do: no cached state to build on."""


def require_full(store: Store) -> None:
    """Exit 2 in a shallow clone: the history that proves the ledger is not there."""
    if store.is_shallow():
        raise BadInput(
            "cannot verify a shallow clone: the history that proves the ledger is missing",
            "git fetch --unshallow",
        )


def replay(
    store: Store, config: Any, config_file: str, tip: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state at ``tip``, per-commit marks), from the cache plus the new commits."""
    require_full(store)
    r = _Replay(store, config, config_file)
    cache_path = str(store.ledger_state_dir / CACHE_FILE)
    cache = _load_cache(cache_path, r.key())
    tips: dict[str, Any] = cache["tips"]
    r.marks = cache["marks"]
    r._config_tables = cache["cfg"]
    if tip in tips:
        return tips[tip], r.marks
    light = bool(getattr(store, "light", False))
    if light:
        # The newest cached tip, unchecked: if HEAD does not descend from it, the walk
        # meets a parent that is not cached (or nothing at all) and the full replay runs.
        anchors = list(tips)[-1:]
        if not anchors:
            raise NeedsFull(tip)
        try:
            logged = log_changes(store, tip, anchors)
        except BadInput:
            raise NeedsFull(tip) from None
        if not logged:
            raise NeedsFull(tip)
    else:
        anchors = [t for t in tips if store.has_commit(t) and store.is_ancestor(t, tip)]
        logged = log_changes(store, tip, anchors)
    states: dict[str, dict[str, Any]] = {a: tips[a] for a in anchors}
    if any(p not in states for p in _outside(logged)):
        if light:
            raise NeedsFull(tip)
        # A parent hidden by an anchor but not itself cached: replay from the root.
        logged = log_changes(store, tip, [])
        states = {}
    todo = [c for c, _changes in logged]
    for c, changes in logged:
        if changes is not None:
            r._diffs[c.id] = changes
        r.marks.pop(c.id, None)  # replayed again: its marks are made afresh
    needs: dict[str, int] = {}
    for c in todo:
        for p in c.parents:
            needs[p] = needs.get(p, 0) + 1
    kept = set(tips) - set(anchors)  # anchors are superseded by the new tip (below)
    for c in todo:
        parents = []
        for p in c.parents:
            needs[p] -= 1
            st = states[p]
            if needs[p] == 0 and p not in kept:  # the last child takes it over, uncopied
                del states[p]
                parents.append(st)
            else:
                parents.append(json.loads(json.dumps(st)))
        if len(parents) > 1:
            state = r.merge_commit(c, parents)
        else:
            state = parents[0] if parents else _empty()
            r.step_commit(c, state)
        if c.id in r.marks and c.id not in state["marks"]:
            state["marks"].append(c.id)
        states[c.id] = state
    final = states[tip]
    for anchor in anchors:
        # An ancestor's state is superseded by its descendant's (and the cache stays one
        # state long while HEAD moves forward); tips of other branches are kept.
        tips.pop(anchor, None)
    tips[tip] = final
    for old in list(tips)[:-KEEP_TIPS]:
        del tips[old]
    configs = dict(list(r._config_tables.items())[-KEEP_CONFIGS:])
    _save_cache(cache_path, {"key": r.key(), "tips": tips, "marks": r.marks, "cfg": configs})
    if r._entries is not None:
        r._entries.save()
    return final, r.marks


def verify(
    store: Store,
    config: Any,
    config_file: str = "ledger.toml",
    tip: str | None = None,
    since: list[str] | None = None,
) -> Report:
    """Every history rule for the commits reachable from ``tip`` (default HEAD).

    ``since``: report only findings of commits not reachable from these (a
    pushed range); the replay still starts at the root (or the cache).
    """
    tip_id = store.resolve(tip)
    report = Report(tip=tip_id)
    if tip_id is None:
        return report
    state, marks = replay(store, config, config_file, tip_id)
    hidden: set[str] = set()
    if since:
        hidden = {c for c in state["marks"] if any(store.is_ancestor(c, s) for s in since if s)}
    for commit in state["marks"]:
        if commit in hidden:
            continue
        mark = marks.get(commit, {})
        for path, rule, msg, fix, step in mark.get("f", []):
            report.findings.append(Finding(commit, path, rule, msg, fix, step))
        for kind, step, path, text in mark.get("n", []):
            report.notes.append(Note(commit, kind, step, path, text))
    versions: dict[str, VState] = state["v"]
    report.ever = {vid for vid, vs in versions.items() if "x" not in vs[3]}
    report.registrations = {vid: vs[0] for vid, vs in versions.items() if "g" not in vs[3]}
    report.void = {vid for vid, vs in versions.items() if "v" in vs[3]}
    for path, pending in sorted(state.get("del", {}).items()):
        commit, rule, msg, fix = deleted_finding(pending)
        if commit not in hidden:
            report.findings.append(Finding(commit, path, rule, msg, fix, pending[2]))
    report.findings += witness_findings(store, versions, hidden)
    # A void version's findings stay on record as notes: its results never count.
    kept = []
    for f in report.findings:
        if f.step and (f.step in report.void or base_id(f.step) in report.void):
            report.notes.append(Note(f.commit, "void", f.step, f.path, f"[{f.rule}] {f.message}"))
        else:
            kept.append(f)
    report.findings = kept
    if not since:
        from ledger.core import verifycache

        verifycache.save(
            str(store.ledger_state_dir),
            str(store.common_dir),
            tip_id,
            [f.as_json() for f in report.findings],
            [n.as_json() for n in report.notes],
        )
    return report


def witness_findings(store: Store, versions: dict[str, VState], hidden: set[str]) -> list[Finding]:
    found = []
    # Each witness ref once (local, then every remote's copy): not each version.
    by_id: dict[str, list[tuple[str, str]]] = {}
    for name, target in store.refs(WITNESS).items():
        by_id.setdefault(name[len(WITNESS) :], []).append((name, target))
    for name, target in store.refs(REMOTE_WITNESS).items():
        _remote, marker, vid = name[len(REMOTE_WITNESS) :].partition("/witness/")
        if marker:
            by_id.setdefault(vid, []).append((name, target))
    for vid in sorted(by_id):
        if vid not in versions:
            continue
        reg, _frozen, _blob, flags = versions[vid]
        if "g" in flags or "x" in flags or reg in hidden:
            continue
        for name, target in by_id[vid]:
            if target != reg:
                found.append(
                    Finding(
                        reg,
                        "",
                        "witness",
                        f"the registration of {vid} in this history is {reg[:10]}, but {name} "
                        f"names {target[:10]}: the registration was rewritten (amend, rebase, "
                        "squash or a force-push)",
                        f"restore the original history (git reset --hard {target[:10]} on a "
                        f"branch that had it), or git ledger void {vid} --reason ...",
                        vid,
                    )
                )
    return found


def require_clean(store: Store, config: Any, config_file: str, vid: str, tip: str | None) -> str:
    """The registration commit of ``vid``; Refused when its history has findings."""
    report = verify(store, config, config_file, tip)
    reg = report.registrations.get(base_id(vid))
    if reg is None:
        raise Refused(
            f"{vid} has no registration commit on this branch", f"git ledger register {vid} ..."
        )
    found = report.for_step(vid, reg, store)
    if found:
        lines = "; ".join(f.line() for f in found[:3]) + (" ..." if len(found) > 3 else "")
        raise Refused(
            f"{vid}'s history does not verify ({len(found)} finding(s)): {lines}",
            f"see 'git ledger verify'; close it with 'git ledger void {vid} --reason ...'",
        )
    return reg


def create_witness(store: Store, step: str, commit: str) -> None:
    """``refs/ledger/witness/<step>`` at the registration commit: created once, never moved."""
    store.create_ref(f"{WITNESS}{step}", commit, f"ledger: witness of {step}")


def reserved_ids(store: Store, config: Any, config_file: str) -> dict[str, str]:
    """Ids ever registered here (id -> registration commit): never registered again."""
    out = {name[len(WITNESS) :]: target for name, target in store.refs(WITNESS).items()}
    if store.is_shallow():
        return out
    tip = store.resolve(None)
    if tip is None:
        return out
    state, _ = replay(store, config, config_file, tip)
    for vid, vs in state["v"].items():
        if "x" not in vs[3]:
            out.setdefault(vid, vs[0])
    return out


def frozen_config(ctx: Any, state: Any, registration: str) -> Any:
    """``state`` with the verdict-affecting configuration in force at ``registration``.

    Invariant 4: a change after the registration (a configuration transition)
    applies to versions registered after it, never to this one.
    """
    from dataclasses import replace

    from ledger.core.context import load_config

    store = getattr(ctx, "store", ctx)  # a context or the store itself
    loaded = load_config(store, store.snapshot(registration))
    if loaded is None:
        return state
    then, _ = loaded
    now = state.config
    update: dict[str, Any] = {
        "gates": {**now.gates, **then.gates},
        "stats": then.stats,
        "triggers": then.triggers,
    }
    from ledger.core.loops import NAMES

    # Each loop's own table of ledger.toml ([campaign], [batches]) is frozen the same way.
    for table in (name for name in NAMES if name in type(then).model_fields):
        if getattr(then, table) is not None:
            update[table] = getattr(then, table)
    return replace(state, config=now.model_copy(update=update))
