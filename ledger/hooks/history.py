"""History read through the git program alone, for ``verify``'s incremental path.

A repeated ``git ledger verify`` after a transition or two replays only the new
commits on top of the cached state (:func:`ledger.core.verify.replay`). Importing
pygit2 and pydantic (the configuration's models) costs several times that
work, so the command first tries this reader: the same rules, the same cache,
the configuration as the hooks' fast path reads it (:func:`ledger.hooks.fast.settings`),
and git subprocesses for the few objects the new commits need. Whatever it cannot
build on (no cached state, a merge of uncached sides, a configuration the cache
was not made with) raises :class:`ledger.core.verify.NeedsFull` and the command does
the full replay with the validated configuration.
"""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ledger.core import gitcli
from ledger.core.commitinfo import CommitInfo
from ledger.core.errors import BadInput
from ledger.core.repobase import ZERO

if TYPE_CHECKING:
    import subprocess


class GitHistory:
    """The read-only part of :class:`ledger.core.store.Store` that verify uses."""

    light = True

    def __init__(self, top: Path, common: Path, git_dir: Path, head: str) -> None:
        self.top = top
        self.head = head
        self.common_dir = common
        self.git_dir = git_dir
        self.ledger_state_dir = common / "ledger"
        self.repo = self  # merge_base, as pygit2's Repository has it
        self._refs: dict[str, str] | None = None
        self._batch = gitcli.CatFileBatch(top)  # started at the first packed blob

    def close(self) -> None:
        self._batch.close()

    def read_blob(self, blob_id: str) -> bytes:
        """One blob: a loose object (what the last few commits wrote) straight from the
        object store, else through one ``git cat-file --batch`` for the whole run."""
        loose = self._loose_blob(blob_id)
        if loose is not None:
            return loose
        found = self._batch.read(blob_id)
        if found is None or found[0] != "blob":
            raise BadInput(f"no blob {blob_id}: history is incomplete", "git fetch --unshallow")
        return found[1]

    def _loose_blob(self, blob_id: str) -> bytes | None:
        """The blob as git stores a loose object (``objects/xx/yyyy``: zlib-deflated
        ``blob <size>\\0<contents>``); None when it is packed, elsewhere or not a blob,
        and git itself is asked. A transition's new objects are loose until git packs
        them, and this spares the incremental path a process."""
        import zlib

        if len(blob_id) not in (40, 64) or not all(c in "0123456789abcdef" for c in blob_id):
            return None
        path = self.common_dir / "objects" / blob_id[:2] / blob_id[2:]
        try:
            with open(path, "rb") as handle:
                raw = zlib.decompress(handle.read())
        except (OSError, zlib.error):
            return None
        header, nul, data = raw.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not nul or kind != b"blob" or not size.isdigit() or int(size) != len(data):
            return None
        return data

    def blob_sizes(self, blob_ids: list[str]) -> dict[str, int]:
        """Each blob's size from its object header (verify's bounds), in one
        ``git cat-file --batch-check`` for them all."""
        if not blob_ids:
            return {}
        ids = [b for b in blob_ids if b and not any(c in b for c in "\n\r\0")]
        proc = gitcli.run(
            ["cat-file", "--batch-check"], self.top, check=False, input="\n".join(ids) + "\n"
        )
        sizes = {}
        for line in proc.stdout.splitlines():
            parts = line.split()  # "<id> <type> <size>", or "<name> missing"
            if len(parts) == 3 and parts[2].isdigit():
                sizes[parts[0]] = int(parts[2])
        missing = [b for b in blob_ids if b not in sizes]
        if missing:
            raise BadInput(f"no blob {missing[0]}: history is incomplete", "git fetch --unshallow")
        return sizes

    def _run(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return gitcli.run_bytes(list(args), self.top)

    def _git(self, *args: str) -> bytes:
        proc = self._run(*args)
        if proc.returncode != 0:
            text = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise BadInput(f"git {args[0]} failed: {text[-1] if text else proc.returncode}")
        return proc.stdout

    def is_shallow(self) -> bool:
        return (self.common_dir / "shallow").exists() or (self.git_dir / "shallow").exists()

    def resolve(self, rev: str | None) -> str | None:
        if rev in (None, "HEAD", self.head):
            return self.head
        proc = self._run("rev-parse", "-q", "--verify", f"{rev or 'HEAD'}^{{commit}}")
        if proc.returncode != 0:
            if rev in (None, "HEAD"):
                return None
            raise BadInput(f"unknown revision {rev!r}", "use a commit, branch or tag name")
        return proc.stdout.decode().strip()

    def has_commit(self, commit_id: str) -> bool:
        return self._run("cat-file", "-e", f"{commit_id}^{{commit}}").returncode == 0

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        if ancestor == descendant:
            return True
        return self._run("merge-base", "--is-ancestor", ancestor, descendant).returncode == 0

    def merge_base(self, one: str, two: str) -> str | None:
        proc = self._run("merge-base", one, two)
        return proc.stdout.decode().strip() or None

    def refs(self, prefix: str) -> dict[str, str]:
        if self._refs is None:  # verify asks for two prefixes under refs/ledger/
            self._refs = self._ledger_refs()
        if prefix.startswith("refs/ledger/"):
            return {k: v for k, v in self._refs.items() if k.startswith(prefix)}
        text = self._git("for-each-ref", "--format=%(refname) %(objectname)", prefix).decode()
        return dict(line.split(" ", 1) for line in text.splitlines() if " " in line)

    def _ledger_refs(self) -> dict[str, str]:
        """refs/ledger/* read from the files git keeps them in (packed, then loose);
        git itself when one is not a plain commit id (a symbolic ref)."""
        found: dict[str, str] = {}
        try:
            with open(self.common_dir / "packed-refs", encoding="utf-8") as handle:
                for line in handle:
                    target, _, name = line.strip().partition(" ")
                    if name.startswith("refs/ledger/") and len(target) == 40:
                        found[name] = target
        except OSError:
            pass
        base = self.common_dir / "refs" / "ledger"
        for path in sorted(base.rglob("*")) if base.is_dir() else ():
            if path.is_file():
                target = path.read_text(encoding="utf-8", errors="replace").strip()
                if len(target) != 40:
                    out = self._git("for-each-ref", "--format=%(refname) %(objectname)",
                                    "refs/ledger/")  # fmt: skip
                    return dict(
                        line.split(" ", 1) for line in out.decode().splitlines() if " " in line
                    )
                found["refs/ledger/" + path.relative_to(base).as_posix()] = target
        return found

    def commit_info(self, commit_id: str) -> CommitInfo:
        from ledger.core.verify import log_changes

        found = log_changes(self, commit_id, [], limit=1)
        if not found:
            raise BadInput(f"no commit {commit_id}")
        return found[0][0]

    def changes(self, old: str | None, new: str) -> list[tuple[str, str | None, str | None]]:
        args = ["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev"]
        args += [old, new] if old else ["--root", new]
        tokens = self._git(*args).split(b"\0")
        out = []
        i = 1 if tokens and not tokens[0].startswith(b":") else 0
        while i + 1 < len(tokens):
            meta = tokens[i].decode().split()
            path = tokens[i + 1].decode("utf-8", "surrogateescape")
            out.append(
                (path, None if meta[2] == ZERO else meta[2], None if meta[3] == ZERO else meta[3])
            )
            i += 2
        return out

    def snapshot(self, rev: str | None = None) -> _Snapshot:
        return _Snapshot(self, rev or "HEAD")


class _Snapshot:
    def __init__(self, history: GitHistory, rev: str) -> None:
        self.history = history
        self.rev = rev

    def read_blob(self, blob_id: str) -> bytes:
        return self.history.read_blob(blob_id)

    def is_tree(self, path: str) -> bool:
        proc = self.history._run("cat-file", "-t", f"{self.rev}:{path}")
        return proc.returncode == 0 and proc.stdout.strip() == b"tree"

    def case_twin(self, path: str, checked: Container[str] = ()) -> str | None:
        """:meth:`ledger.core.store.Snapshot.case_twin`, from one ``git ls-tree`` of the
        directories to compare (the light path replays a few commits)."""
        parts = path.split("/")
        levels = [i for i in range(len(parts)) if "/".join(parts[: i + 1]) not in checked]
        dirs = sorted({"".join(p + "/" for p in parts[:i]) for i in levels})
        if not dirs:
            return None
        # Each DIR/ pathspec lists that directory's own entries (the root: no pathspec).
        specs = [d for d in dirs if d]
        args = ["ls-tree", "-z", "--name-only", self.rev]
        listed = self.history._git(*args, *(["--", *specs] if specs else []))
        names = [n.decode("utf-8", "surrogateescape") for n in listed.split(b"\0") if n]
        if "" in dirs and specs:
            root = self.history._git("ls-tree", "-z", "--name-only", self.rev)
            names += [n.decode("utf-8", "surrogateescape") for n in root.split(b"\0") if n]
        wanted = {"/".join(parts[: i + 1]).casefold(): "/".join(parts[: i + 1]) for i in levels}
        for name in names:
            mine = wanted.get(name.casefold())
            if mine is not None and name != mine:
                return name
        return None

    def files(self, prefix: str) -> dict[str, str]:
        out = self.history._git("ls-tree", "-r", "-z", self.rev, "--", prefix)
        found = {}
        for item in out.split(b"\0"):
            meta, _, path = item.partition(b"\t")
            if path and meta.split()[1] == b"blob":
                found[path.decode("utf-8", "surrogateescape")] = meta.split()[2].decode()
        return found


def open_light(
    top: Path, common: Path, git_dir: Path, head: str
) -> tuple[GitHistory, Any, str] | None:
    """(history, configuration, its file) as the hooks read them; None: no ledger here
    or a configuration only the full program may judge (broken, or none)."""
    from ledger.hooks import fast as hookrun

    if not any((top / name).is_file() for name in ("ledger.toml", "pyproject.toml")):
        return None  # a sparse checkout reads the committed one: the full program does
    values = hookrun.settings(str(top), str(common))
    if values is None or values.get("broken"):
        return None
    config = SimpleNamespace(
        dir=values["dir"],
        ledger=SimpleNamespace(id_prefix=values["id_prefix"], preset=values["preset"]),
        hooks=SimpleNamespace(
            free_paths=values["free_paths"].split("\x1f"),
            require_open_version=values.get("require_open_version") == "1",
        ),
    )
    return GitHistory(top, common, git_dir, head), config, values["config_file"]
