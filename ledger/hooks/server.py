"""The server side of the hooks: pre-receive (or update) judges what a push brings.

History is judged as written (no ``refs/replace/*`` stand-ins), every ref whose history
ever carried a ledger is verified, a witness is created once and names a registration on
a pushed branch, and a push never drops ledger transitions (a force-push, or a branch
deleted and pushed again: the server remembers each ledger branch's last accepted tip,
:mod:`ledger.hooks.servertips`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ledger.core.commitinfo import CommitInfo
from ledger.core.context import load_config
from ledger.core.errors import LedgerError
from ledger.core.findings import Finding
from ledger.core.model.config import LedgerConfig
from ledger.core.repobase import ZERO
from ledger.core.store import TRAILER_TRANSITION, Store
from ledger.core.verify import WITNESS, verify
from ledger.core.verify.bounds import pushed_bounds
from ledger.hooks.servertips import SERVER_REFS, memory_findings, namespace_findings


def server_side(stage: str, refs: str) -> int:
    """pre-receive (refs on stdin) or update (REF OLD NEW): verify what is pushed."""
    if stage == "update":
        parts = refs.split()
        updates = [(parts[1], parts[2], parts[0])] if len(parts) == 3 else []
    else:
        updates = []
        for line in sys.stdin.read().splitlines():
            parts = line.split()
            if len(parts) == 3:
                updates.append((parts[0], parts[1], parts[2]))
    # The pushed history is judged as written: a refs/replace/* object (pushed earlier, or
    # with this push) must not stand in for a commit in any git this hook starts.
    os.environ["GIT_NO_REPLACE_OBJECTS"] = "1"
    try:
        found = receive(Store("."), updates)
    except LedgerError as exc:
        sys.stderr.write(f"git-ledger {stage} refused: {exc.one_line()}\n")
        return 1
    for finding in found:
        sys.stderr.write(f"git-ledger {stage} refused: {finding.line()}\n")
    return 1 if found else 0


def receive(store: Store, updates: list[tuple[str, str, str]]) -> list[Finding]:
    """Findings for a push of ``updates`` ((old, new, ref)) into ``store``."""
    found: list[Finding] = namespace_findings(updates)
    incoming: dict[str, str] = {}
    for old, new, ref in updates:
        if ref.startswith("refs/replace/"):
            found.append(
                Finding(
                    "replace-refs",
                    f"{ref}: a replace ref makes git show one commit in place of another, "
                    "which would hide a rewritten ledger from every reader",
                    "push without refs/replace/* (git push REMOTE BRANCH)",
                )
            )
        elif ref.startswith(WITNESS):
            if old != ZERO:
                found.append(
                    Finding(
                        "witness",
                        f"{ref} exists here ({old[:10]}): a witness is never moved or deleted",
                        "push the original history; a rewritten registration cannot replace it",
                    )
                )
            else:
                incoming[ref[len(WITNESS) :]] = new
    branches = store.refs("refs/heads/")
    heads = list(branches.values())
    after = {
        **branches,
        **{ref: new for _old, new, ref in updates if ref.startswith("refs/heads/")},
    }
    registered: dict[str, set[str]] = {}
    for old, new, ref in updates:
        if ref.startswith((WITNESS, "refs/replace/", SERVER_REFS)):
            continue
        # An annotated tag is judged as the commit it names; one naming no commit (a
        # tree, a blob) carries no history to judge.
        peeled = _commit_of(store, new)
        if peeled is None:
            continue
        old, new = _commit_of(store, old) or ZERO, peeled
        if new == ZERO:
            found += _deleted(store, old, ref, [t for r, t in after.items() if r != ref])
            continue
        # Whatever the new tip carries: a ledger branch's name pushed again with a
        # history that has no ledger is the same evasion.
        found += memory_findings(store, ref, old, new)
        ended = ended_in_place(store, ref, old, new)
        if ended is not None:
            found.append(ended)
        # Every ref that names a commit (a tag too: it can be checked out and verified)
        # is judged; one with no ledger anywhere in its history passes unchecked.
        loaded = load_config(store, store.snapshot(new))
        if loaded is None and old != ZERO and store.has_commit(old):
            # A branch that carried a ledger stays judged by it: a push whose tip drops
            # ledger.toml drops the ledger's history with it.
            loaded = load_config(store, store.snapshot(old))
        if loaded is None:
            # A branch that ever carried a ledger is judged by the newest one it carried:
            # a tip without ledger.toml hides nothing its history holds (a new branch
            # whose tip dropped the ledger it grew from, a delivery). One that never did
            # (a product branch a delivery is squash-merged into) is no ledger's.
            loaded = _ledger_in_history(store, new)
        if loaded is None:
            continue
        config, config_file = loaded
        if old != ZERO and store.has_commit(old) and not store.is_ancestor(old, new):
            dropped = [
                c for c in store.walk_new(old, [new]) if c.trailer(TRAILER_TRANSITION) is not None
            ]
            if dropped:
                found.append(
                    Finding(
                        "rewritten-history",
                        f"{ref} would lose {len(dropped)} ledger transition(s), e.g. "
                        f"{dropped[-1].id[:10]} ({dropped[-1].subject}): history is append-only",
                        "merge instead of force-pushing (git pull --no-rebase, or git ledger sync)",
                    )
                )
        since = [old] if old != ZERO and store.has_commit(old) else heads
        # Bounds first: a commit too large to judge is refused before anything is parsed.
        if bounded := pushed_bounds(store, config.dir, new, since):
            found += bounded
            continue
        report = verify(store, config, config_file, new, since)
        found += [
            Finding(f.rule, f"{f.commit[:10]} {f.path}: {f.message}", f.fix)
            for f in report.findings
        ]
        for vid, commit in report.registrations.items():
            registered.setdefault(vid, set()).add(commit)
        for vid, target in incoming.items():
            reg = report.registrations.get(vid)
            if reg is not None and reg != target:
                found.append(
                    Finding(
                        "witness",
                        f"the witness pushed for {vid} ({target[:10]}) is not its registration "
                        f"in {ref} ({reg[:10]})",
                        "push the registration's own witness",
                    )
                )
    pushed = [
        new
        for _old, new, ref in updates
        if not ref.startswith((WITNESS, "refs/replace/", SERVER_REFS))
    ]
    tips = heads + pushed
    found += _orphan_witnesses(store, incoming, registered, [t for t in tips if t != ZERO])
    return found


def _ends_ledger(store: Store, c: CommitInfo) -> bool:
    """A delivery's last commit (kind ``deliver``, no ledger after it): a document commit
    of the delivery branch, which its branch may be deleted without."""
    return (
        c.trailer(TRAILER_TRANSITION) == "deliver"
        and load_config(store, store.snapshot(c.id)) is None
    )


def _commit_of(store: Store, sha: str) -> str | None:
    """The commit ``sha`` names (itself, or what an annotated tag points at); ZERO stays
    ZERO; None when it names no commit, or one this repository does not have."""
    if sha == ZERO:
        return ZERO
    try:
        return store.resolve(sha)
    except LedgerError:
        return None


def ended_in_place(store: Store, ref: str, old: str, new: str) -> Finding | None:
    """A ref that holds a ledger where it is pushed keeps it: a delivery ends a ledger
    only on a branch of its own (``verify`` accepts the delivery commit itself), never on
    the ledger's branch, where it would end the loop and let another begin in its place."""
    if old == ZERO or new == ZERO or not store.has_commit(old):
        return None
    if load_config(store, store.snapshot(old)) is None:
        return None
    if load_config(store, store.snapshot(new)) is not None:
        return None
    return Finding(
        "config-frozen",
        f"{ref} holds a ledger here and the push takes its configuration away: a ledger "
        "ends only on a delivery branch of its own",
        f"push the delivery as a new branch (git push REMOTE HEAD:refs/heads/NAME), and "
        f"{ref} with its ledger",
    )


def _orphan_witnesses(
    store: Store, incoming: dict[str, str], registered: dict[str, set[str]], heads: list[str]
) -> list[Finding]:
    """A witness names a registration: one for an id no branch registered there would make
    the owner's honest registration read as rewritten once it comes."""
    found = []
    scanned = False
    for vid, target in sorted(incoming.items()):
        if target in registered.get(vid, set()):
            continue
        # A branch already here may hold it (the witness pushed after its branch). What
        # counts is the registration history shows, never a commit's trailers: an empty
        # commit that says "register V2" registers nothing.
        for head in heads if not scanned else ():
            loaded = load_config(store, store.snapshot(head)) or _ledger_in_history(store, head)
            if loaded is not None and store.has_commit(head):
                report = verify(store, loaded[0], loaded[1], head)
                for other, commit in report.registrations.items():
                    registered.setdefault(other, set()).add(commit)
        scanned = True
        ok = target in registered.get(vid, set())
        if not ok:
            found.append(
                Finding(
                    "witness",
                    f"{WITNESS}{vid} names {target[:10]}, which is no registration of {vid} "
                    "on a branch pushed here",
                    "push the branch that registers it with its witness "
                    "(git ledger sync), or do not push the witness",
                )
            )
    return found


def _ledger_in_history(store: Store, tip: str) -> tuple[LedgerConfig, str] | None:
    """The configuration of the newest commit under ``tip`` that carried a ledger (the
    parent of the commit that dropped it), None when its history never had one."""
    from ledger.core import gitcli

    listed = gitcli.run(
        ["rev-list", "--max-count=64", tip, "--", "ledger.toml", "pyproject.toml"],
        Path("."),
        check=False,
    )
    for commit in listed.stdout.split():
        for rev in (commit, *store.commit_info(commit).parents):
            loaded = load_config(store, store.snapshot(rev))
            if loaded is not None:
                return loaded
    return None


def _deleted(store: Store, old: str, ref: str, others: list[str]) -> list[Finding]:
    """Deleting a branch drops its ledger transitions unless another branch keeps them
    (a delete, then a push of a rewritten branch, would pass as two new pushes)."""
    if not ref.startswith("refs/heads/") or old == ZERO or not store.has_commit(old):
        return []
    kept = [t for t in others if t != ZERO and store.has_commit(t)]
    dropped = [
        c
        for c in store.walk_new(old, kept)
        if c.trailer(TRAILER_TRANSITION) is not None and not _ends_ledger(store, c)
    ]
    if not dropped:
        return []
    return [
        Finding(
            "rewritten-history",
            f"deleting {ref} would lose {len(dropped)} ledger transition(s), e.g. "
            f"{dropped[-1].id[:10]} ({dropped[-1].subject}): history is append-only",
            "keep the branch (or merge it into one that stays) before deleting it",
        )
    ]
