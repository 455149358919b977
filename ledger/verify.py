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
   (registrations, results, conclusions, matrices, the phase, and the
   campaign's and batches' generated files); a merge adds nothing of its own.
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

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from ledger.cache import EntryCache
from ledger.commitrules import is_free
from ledger.errors import BadInput, LedgerError, Refused
from ledger.model.entries import REGISTERED_KEYS
from ledger.repobase import (
    DEFAULT_FREE_PATHS,
    base_id,
    cell_of,
    frozen_tables,
    ledger_table,
    results_dir,
    write_atomic,
)
from ledger.state import classify, parse_entry
from ledger.store import TRAILER_STEP, TRAILER_TRANSITION, CommitInfo, Store

WITNESS = "refs/ledger/witness/"
REMOTE_WITNESS = "refs/ledger/remotes/"
CACHE_FILE = "verify-cache.json"
CACHE_VERSION = 2
KEEP_TIPS = 4
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})")
# Files each preset writes only through its own transitions (paths inside the ledger dir).
PRESET_FILES: dict[str, tuple[str, ...]] = {
    "campaign": ("contract.md", "candidates/", "candidates.jsonl", "benchmark.csv", "mistakes.md"),
    "batches": ("weights/", "revision_log.jsonl", "trace/"),
}
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
        self.entries = EntryCache(store.ledger_state_dir)
        self._config_tables: dict[str, dict[str, str]] = {}
        self._diffs: dict[str, list[tuple[str, str | None, str | None]]] = {}
        self.marks: dict[str, dict[str, list[list[str]]]] = {}

    # --- helpers ------------------------------------------------------------

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
        return hashlib.sha256(text.encode()).hexdigest()[:16]

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
            try:
                data = self.store.snapshot().read_blob(blob)
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
        model = parsed["model"]
        if kind == "version":
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
        """Digests of the verdict-affecting tables in one configuration blob (one per gate)."""
        if blob is None:
            return {}
        if blob in self._config_tables:
            return self._config_tables[blob]
        try:
            data = tomllib.loads(self.store.snapshot().read_blob(blob).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            data = {"unreadable": blob}
        tables = frozen_tables(ledger_table(data, self.config_file) or {})
        digests = {
            k: hashlib.sha256(json.dumps(v, sort_keys=True, default=str).encode()).hexdigest()[:16]
            for k, v in tables.items()
        }
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
            for prefix in PRESET_FILES.get(self.preset, ()):
                if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
                    if kind is None:
                        self.finding(
                            c,
                            path,
                            "transitions-only",
                            f"a {self.preset} entry changed outside a ledger transition",
                            "change it with the git ledger verbs; revert this commit",
                            "",
                        )
                    break

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
            snap = self.store.snapshot(c.id)
            if snap.is_tree(results_dir(self.dir, vid)) and current is not None:
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
                self.note(c, "withdrawn", vid, path, f"withdrawn: {c.subject}")
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


def _empty() -> dict[str, Any]:
    return {"v": {}, "cfg": False, "marks": []}


def _load_cache(path: str, key: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {"key": key, "tips": {}, "marks": {}}
    if not isinstance(data, dict) or data.get("key") != key:
        return {"key": key, "tips": {}, "marks": {}}
    return data


def _save_cache(path: str, data: dict[str, Any]) -> None:
    try:
        write_atomic(path, json.dumps(data, separators=(",", ":")), durable=False)
    except OSError:
        return  # a cache that cannot be written only costs time


def replay(
    store: Store, config: Any, config_file: str, tip: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(state at ``tip``, per-commit marks), from the cache plus the new commits."""
    if store.is_shallow():
        raise BadInput(
            "cannot verify a shallow clone: the history that proves the ledger is missing",
            "git fetch --unshallow",
        )
    r = _Replay(store, config, config_file)
    cache_path = str(store.ledger_state_dir / CACHE_FILE)
    cache = _load_cache(cache_path, r.key())
    tips: dict[str, Any] = cache["tips"]
    r.marks = cache["marks"]
    if tip in tips:
        return tips[tip], r.marks
    anchors = [t for t in tips if store.has_commit(t) and store.is_ancestor(t, tip)]
    todo = store.walk_new(tip, anchors)
    states: dict[str, dict[str, Any]] = {a: tips[a] for a in anchors}
    needs: dict[str, int] = {}
    for c in todo:
        for p in c.parents:
            needs[p] = needs.get(p, 0) + 1
    if any(p not in states and p not in {c.id for c in todo} for c in todo for p in c.parents):
        # A parent hidden by an anchor but not itself cached: replay from the root.
        todo = store.walk_new(tip, [])
        states, needs = {}, {}
        for c in todo:
            for p in c.parents:
                needs[p] = needs.get(p, 0) + 1
    for c in todo:
        parents = []
        for p in c.parents:
            needs[p] -= 1
            st = states[p]
            if needs[p] == 0 and p not in tips:
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
    tips[tip] = final
    for old in list(tips)[:-KEEP_TIPS]:
        del tips[old]
    _save_cache(cache_path, {"key": r.key(), "tips": tips, "marks": r.marks})
    r.entries.save()
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
        from ledger import verifycache

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
    local = store.refs(WITNESS)
    remote = store.refs(REMOTE_WITNESS)
    for vid, (reg, _frozen, _blob, flags) in sorted(versions.items()):
        if "g" in flags or "x" in flags or reg in hidden:
            continue
        named = []
        if f"{WITNESS}{vid}" in local:
            named.append((f"{WITNESS}{vid}", local[f"{WITNESS}{vid}"]))
        named += [(n, t) for n, t in remote.items() if n.endswith(f"/witness/{vid}")]
        for name, target in named:
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

    from ledger.context import load_config

    loaded = load_config(ctx.store, ctx.store.snapshot(registration))
    if loaded is None:
        return state
    then, _ = loaded
    now = state.config
    update: dict[str, Any] = {
        "gates": {**now.gates, **then.gates},
        "stats": then.stats,
        "triggers": then.triggers,
    }
    from ledger.presets import NAMES

    # Each loop's own table of ledger.toml ([campaign], [batches]) is frozen the same way.
    for table in (name for name in NAMES if name in type(then).model_fields):
        if getattr(then, table) is not None:
            update[table] = getattr(then, table)
    return replace(state, config=now.model_copy(update=update))
