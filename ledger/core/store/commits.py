"""History as the store walks it: commits in log order, what each changed, and refs.

``verify`` replays these walks; the witness refs (``refs/ledger/witness/<id>``)
are created here once and never moved.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import pygit2

from ledger.core.commitinfo import CommitInfo
from ledger.core.errors import BadInput
from ledger.core.repobase import ZERO
from ledger.core.store.objects import get_object, info_of, missing_object
from ledger.core.store.repository import Repository


class Commits(Repository):
    """Walks of the commit graph, tree diffs and references."""

    def walk(self, rev: str | None = None, first_parent: bool = False) -> Iterator[CommitInfo]:
        """Commits reachable from ``rev`` (default HEAD), newest first, topologically."""
        tip = self.resolve(rev)
        if tip is None:
            return
        walker = self.repo.walk(tip, pygit2.enums.SortMode.TIME | pygit2.enums.SortMode.TOPOLOGICAL)
        if first_parent:
            walker.simplify_first_parent()
        for commit in walker:
            yield info_of(commit)

    def walk_log(self, rev: str | None = None) -> Iterator[CommitInfo]:
        """Commits reachable from ``rev`` (default HEAD), newest first, read lazily.

        The order ``log`` shows, the same whether or not the reader stops early:
        newest commit time first, ties in the order found (first parents first,
        as ``git log``), and never a commit before any of its children, so
        same-second commits (a fixed clock, a fast script) keep their order.
        Only the commits shown and their parents are read (plus, while branches
        run side by side, the commits between them): ``log -n 20`` at 10,000
        steps does not read the history first, as a topological sort must.
        """
        tip = self.resolve(rev)
        if tip is None:
            return
        heap: list[tuple[int, int, str]] = []
        waiting: dict[str, int] = {}  # commit -> children found but not yet shown
        found: dict[str, pygit2.Commit] = {}
        pushed: set[str] = set()
        order = 0

        def push(oid: str) -> None:
            nonlocal order
            commit = get_object(self.repo, oid, pygit2.Commit)
            found[oid] = commit
            pushed.add(oid)
            for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                if parent not in pushed:  # reached again by a child found late
                    waiting[parent] = waiting.get(parent, 0) + 1
            heapq.heappush(heap, (-commit.commit_time, order, oid))
            order += 1

        push(tip)
        while heap:
            _, _, oid = heapq.heappop(heap)
            commit = found.pop(oid)
            # Only a commit no older than this one can be its descendant (clock
            # skew aside), which keeps this check off long parallel branches.
            if any(
                -when >= commit.commit_time and self.repo.descendant_of(other, oid)
                for when, _, other in heap
            ):
                # A child not found yet (a longer branch of a merge, same second):
                # forget this commit; that child brings it back when it is shown.
                pushed.discard(oid)
                for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                    if parent not in pushed:
                        left = waiting.get(parent, 0) - 1
                        if left > 0:
                            waiting[parent] = left
                        else:
                            waiting.pop(parent, None)
                continue
            yield info_of(commit)
            for parent in dict.fromkeys(str(p) for p in commit.parent_ids):
                if parent in pushed:
                    continue
                # A parent that was put back (deferred above) while this child was
                # found has no count for it: its last known child is shown, bring it in.
                left = waiting.get(parent, 1) - 1
                if left > 0:
                    waiting[parent] = left
                else:
                    waiting.pop(parent, None)
                    push(parent)

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return bool(self.repo.descendant_of(descendant, ancestor))

    def walk_new(self, tip: str, hide: list[str]) -> list[CommitInfo]:
        """Commits reachable from ``tip`` but not from ``hide``, parents first."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        try:
            walker = self.repo.walk(pygit2.Oid(hex=tip), order)
            for commit in hide:
                walker.hide(pygit2.Oid(hex=commit))
            return [info_of(c) for c in walker]
        except (KeyError, pygit2.GitError) as exc:
            raise BadInput(
                f"history is incomplete: {exc}",
                "fetch the missing objects (git fetch --unshallow, or a full clone)",
            ) from None

    def changes(self, old: str | None, new: str) -> list[tuple[str, str | None, str | None]]:
        """(path, old blob, new blob) for every file that differs between two commits.

        ``old`` None: against the empty tree. Identical subtrees are skipped, so
        one transition costs a few tree reads however large the repository.
        """
        new_tree = get_object(self.repo, new, pygit2.Commit).tree
        if old is None:
            empty = get_object(self.repo, self.repo.TreeBuilder().write(), pygit2.Tree)
            diff = empty.diff_to_tree(new_tree)
        else:
            diff = get_object(self.repo, old, pygit2.Commit).tree.diff_to_tree(new_tree)
        out = []
        for delta in diff.deltas:
            before = str(delta.old_file.id)
            after = str(delta.new_file.id)
            out.append(
                (
                    delta.new_file.path or delta.old_file.path,
                    None if before == ZERO else before,
                    None if after == ZERO else after,
                )
            )
        return out

    def blob_sizes(self, blob_ids: list[str]) -> dict[str, int]:
        """Each blob's size from its object header, without reading it (verify's bounds)."""
        sizes = {}
        for blob in blob_ids:
            try:
                sizes[blob] = int(self.repo.odb.read_header(pygit2.Oid(hex=blob))[1])
            except (KeyError, ValueError, pygit2.GitError):
                raise missing_object(blob) from None
        return sizes

    def refs(self, prefix: str) -> dict[str, str]:
        """Direct references below ``prefix``: name -> target commit id."""
        out = {}
        for name in self.repo.references:
            if name.startswith(prefix):
                ref = self.repo.references.get(name)
                if ref is not None and ref.type == pygit2.enums.ReferenceType.DIRECT:
                    out[name] = str(ref.target)
        return out

    def create_ref(self, name: str, target: str, message: str) -> bool:
        """Create ``name`` at ``target``; never move it (False if it already exists)."""
        try:
            self.repo.create_reference_direct(name, pygit2.Oid(hex=target), False, message=message)
        except (pygit2.AlreadyExistsError, ValueError):
            return False
        return True

    def delete_ref(self, name: str) -> None:
        ref = self.repo.references.get(name)
        if ref is not None:
            ref.delete()
