"""The server's memory: per ledger branch, the tip it last accepted.

Asking only whether *some* branch still holds a ledger's transitions lets an adversary
push the real ledger under another name, delete the ledger branch, push a rewritten
history under the old name and bury the archive afterwards (a merge with ``-s ours``,
then a delete). The server therefore remembers what each ledger branch last held, in
``refs/ledger/server/tips/<branch>``, and a push of that branch whose new history does
not contain the remembered tip is refused (:func:`memory_findings`, run by pre-receive).

Why post-receive writes the memory, not pre-receive: pre-receive runs before a single ref
moved, with the pushed objects still in quarantine (git refuses ref updates there), and
the push may yet fail after it (another hook, a lost ref lock, ``--atomic``). A tip
remembered there could name a commit the server never kept, and every later push would
be refused for it. post-receive runs once the refs really moved, and records what each
branch holds *then* (not the pushed value: a concurrent push may have moved it since),
so the memory only ever names a commit a ref held. While a branch exists its own value
is the memory's best witness too, so a post-receive that did not run (a host without
it, a crash) loses nothing until the branch is deleted; the deletion's post-receive
then remembers the deleted tip. The reference-transaction hook would see the same
moves, but also every update the server makes itself (this memory included), and needs
git 2.28; post-receive is what every host runs.

A "ledger branch" is a ``refs/heads/*`` branch whose tip carries the ledger (its
configuration) and whose history holds a ledger transition, or one remembered already.
Clients never write this namespace: a push that creates, moves or deletes a ref under
``refs/ledger/server/`` is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ledger.core import gitcli
from ledger.core.commitinfo import TRAILER_TRANSITION
from ledger.core.errors import LedgerError
from ledger.core.findings import Finding
from ledger.core.repobase import ZERO

SERVER_REFS = "refs/ledger/server/"
TIPS = SERVER_REFS + "tips/"
HEADS = "refs/heads/"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ledger.core.store import Store


def namespace_findings(updates: list[tuple[str, str, str]]) -> list[Finding]:
    """A push that touches the server's own memory: only the server writes it."""
    return [
        Finding(
            "server-memory",
            f"{ref}: refs/ledger/server/* is the server's memory of what each ledger "
            "branch last held; only the server writes it",
            f"push without it (git push REMOTE BRANCH), never {SERVER_REFS}*",
        )
        for _old, _new, ref in updates
        if ref.startswith(SERVER_REFS)
    ]


def memory_findings(store: Store, ref: str, old: str, new: str) -> list[Finding]:
    """A push of branch ``ref`` from ``old`` to ``new`` (commits; ZERO: none) keeps the
    tip the server last accepted for it.

    When the remembered tip is ``old`` itself, the force-push rule of the server hook
    judges what is dropped (code commits may go, transitions never). Otherwise (the
    branch was deleted and is pushed again, or it moved without the memory) the new
    history must contain the remembered tip.
    """
    if not ref.startswith(HEADS) or new == ZERO:
        return []
    tip = remembered(store, ref)
    if tip is None or tip == old or not store.has_commit(tip) or store.is_ancestor(tip, new):
        return []
    branch = ref[len(HEADS) :]
    return [
        Finding(
            "server-memory",
            f"{ref} last held {tip} here, and the pushed history ({new[:10]}) does not "
            "contain it: a ledger branch deleted and pushed again keeps its history",
            f"merge it (git fetch REMOTE {TIPS}{branch} && git merge FETCH_HEAD), or "
            f"restore the branch at it (git push REMOTE {tip}:{ref})",
        )
    ]


def remembered(store: Store, ref: str) -> str | None:
    """The tip the server last accepted for branch ``ref``, None when it remembers none."""
    name = TIPS + ref[len(HEADS) :]
    return store.refs(name).get(name)


def remember(lines: str, cwd: Path = Path(".")) -> list[str]:
    """post-receive: record each pushed ledger branch's tip (``lines``: git's stdin, one
    ``OLD NEW REF`` a line). Returns one warning per memory it could not write."""
    from ledger.core.store import Store

    store = Store(str(cwd))
    warnings = []
    for line in lines.splitlines():
        parts = line.split()
        if len(parts) != 3 or not parts[2].startswith(HEADS):
            continue
        old, _new, ref = parts
        memory = TIPS + ref[len(HEADS) :]
        known = store.refs(memory).get(memory)
        # What the branch holds now: a push after this one may have moved it already.
        now = store.refs(ref).get(ref)
        try:
            target = _to_remember(store, old, now, known)
        except LedgerError as exc:  # one ref's history unreadable: the others still count
            warnings.append(f"{memory}: {exc.one_line()}")
            continue
        if target is None:
            continue
        args = ["update-ref", "-m", f"ledger: the server accepted {ref}", memory, target]
        written = gitcli.run([*args, known or ZERO], cwd, check=False)
        if written.returncode != 0:
            warnings.append(f"{memory}: {written.stderr.strip() or 'not written'}")
    return warnings


def _to_remember(store: Store, old: str, now: str | None, known: str | None) -> str | None:
    """What a branch's memory becomes after a push (None: it stays as it is). ``old``: the
    branch before the push, ``now``: after it (None: deleted), ``known``: the memory."""
    if now is None:
        # Deleted: the memory stays as it was, or starts at the deleted tip.
        return old if known is None and old != ZERO and _is_ledger(store, old) else None
    if now != known and (known is not None or _is_ledger(store, now)):
        return now
    return None


def _is_ledger(store: Store, tip: str) -> bool:
    """A tip that carries the ledger (its configuration) and a ledger transition."""
    from ledger.core.context import load_config

    if not store.has_commit(tip):
        return False
    try:
        if load_config(store, store.snapshot(tip)) is None:
            return False
    except LedgerError:
        pass  # a configuration that does not parse is still a ledger's
    found = gitcli.run(
        ["rev-list", "--max-count=1", f"--grep=^{TRAILER_TRANSITION}:", tip],
        Path(store.common_dir),
        check=False,
    )
    return bool(found.stdout.strip())


def main() -> int:
    """The installed post-receive hook's entry (``post-receive`` is its one argument).

    The push already landed: a memory not written is said, never an error."""
    if sys.flags.no_site:
        # Started with -S (hooks/ledger-hook.sh), as the fast path is: the store needs
        # site-packages (pygit2) back. Not ledger.hooks.fast's helper: fast reaches the
        # server hook, which reads this module's rules, and hooks import no circle.
        import site

        site.main()
    for warning in remember(sys.stdin.read() if sys.stdin is not None else ""):
        sys.stderr.write(f"git-ledger post-receive: the server could not remember {warning}\n")
    return 0
