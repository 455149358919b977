"""What an installed hook runs: ``python -S -m``-style entry into :func:`main`.

Hooks run on every commit, so the fast path imports only ``os``, ``sys``,
:mod:`ledger.core.repobase`, the plumbing it shares with the full program, and
:mod:`ledger.core.caches`, the one derived-cache mechanism (not even
``subprocess``: importing it costs ~17 ms here, more than the interpreter
start; git is spawned with ``os.posix_spawnp`` instead) and makes as few git
calls as it can (~4 ms each; a commit runs three hooks):

- where am I: git tells hooks already (cwd is the top level, ``GIT_DIR`` is
  set), so no ``git rev-parse`` is needed;
- the ledger's settings: ledger.toml is parsed (tomllib) only when its size,
  mtime or inode changed, into a small text cache;
- what is open: the open version and its planned files, from a text cache
  keyed by the tree id of the ledger dir at HEAD (one ``git rev-parse``); a
  campaign's code commit, from the full check's pass at that tree (:mod:`.fastcode`).

These caches live under ``.git/ledger/`` and are derived data: the same key
always maps to the same answer, and deleting them only costs time. They, and the
memos kept in the worktree's git dir, are files of lines read and written by
:mod:`ledger.core.caches` (:func:`~ledger.core.caches.load_lines`), the one
derived-cache mechanism, which is standard library only and cheap to import. Only when
there is ledger work does a hook import :mod:`ledger.hooks.full` (pygit2,
pydantic), after restoring site-packages if it was started with ``-S``.
"""

from __future__ import annotations

import os
import sys

from ledger import __version__
from ledger.core import caches, repobase
from ledger.core.repobase import git

# Not typing.TYPE_CHECKING: importing typing costs a -S interpreter ~9 ms, and
# mypy treats any name TYPE_CHECKING as true, so annotations still check.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

STAGES = ("pre-commit", "prepare-commit-msg", "commit-msg", "pre-push", "pre-receive", "update")
SERVER_STAGES = ("pre-receive", "update")
# What a working clone runs; the server stages belong to the repository pushed to
# (`hooks install --server`).
CLIENT_STAGES = tuple(s for s in STAGES if s not in SERVER_STAGES)
SETTINGS_CACHE = "hook-settings"
OPEN_CACHE = "hook-open"


def _restore_site() -> None:
    """Started with -S for speed: bring back site-packages before heavy imports."""
    if sys.flags.no_site:
        import site

        site.main()


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


def settings(top: str, common: str) -> dict[str, str] | None:
    """The hooks' view of ledger.toml (or [tool.ledger]); None when there is no ledger."""
    source = None
    for name in repobase.CONFIG_FILES:
        on_disk = repobase.stat_key(os.path.join(top, name))
        if on_disk != "-":
            source = (name, f"{_parser_key()} {name} {on_disk}")
            break
    committed = None
    if source is None:
        # A sparse checkout may leave the configuration out of the work tree: then the
        # committed one applies, as it does for the full program.
        for name in repobase.CONFIG_FILES:
            blob = git("rev-parse", "-q", "--verify", f"HEAD:{name}", check=False).strip()
            if blob:
                source, committed = (name, f"{_parser_key()} {name} blob {blob}"), blob
                break
        if source is None:
            return None
    cache = os.path.join(common, repobase.STATE_DIR, SETTINGS_CACHE)
    lines = caches.load_lines(cache, source[1])
    if lines is not None:
        values = dict(line.split("=", 1) for line in lines if "=" in line)
        return None if values.get("none") else values
    text = git("cat-file", "blob", committed, check=False) if committed else None
    parsed = _parse_settings(os.path.join(top, source[0]), source[0], text)
    body = [f"{k}={v}" for k, v in sorted((parsed or {"none": "1"}).items())]
    caches.save_lines(cache, source[1], body)  # a cache not written only costs time
    return parsed


def _parser_key() -> str:
    """What the cached settings depend on besides the file: the code that read it
    (its version, and in a checkout, where code changes under one version, the
    parser's files as the OS sees them; two stat calls)."""
    return "|".join(
        (__version__, repobase.stat_key(__file__), repobase.stat_key(repobase.__file__))
    )


def _parse_settings(path: str, name: str, text: str | None = None) -> dict[str, str] | None:
    import tomllib

    try:
        if text is not None:
            data = tomllib.loads(text)
        else:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError):
        # A broken ledger.toml goes to the full check, which says what is wrong.
        return {"broken": "1"} if name == repobase.CONFIG_FILE else None
    table = repobase.ledger_table(data, name)
    return None if table is None else repobase.hook_settings(table, name)


def _commit_key(gitdir: str, common: str) -> str:
    """What one commit's hooks have in common: the index file and HEAD, as the OS sees them.

    Any change to the index (a hook that stages something, the next commit) or
    to HEAD or the branch it names gives a new key, so the memo below is reused
    only between the hooks of one commit.
    """
    index = os.path.abspath(os.environ.get("GIT_INDEX_FILE") or os.path.join(gitdir, "index"))
    parts = [index]
    head = _read_lines(os.path.join(gitdir, "HEAD"))
    parts.append(head[0] if head else "")
    paths = [index, os.path.join(common, "packed-refs")]
    if head and head[0].startswith("ref: "):
        paths.append(os.path.join(common, head[0][5:]))
    parts += [repobase.stat_key(path) for path in paths]
    return "|".join(parts)


class CommitMemo:
    """Answers one hook of a commit found, for the next hooks of the same commit.

    A commit runs pre-commit, prepare-commit-msg and commit-msg; each would ask
    git for the staged paths and the ledger tree again (~4 ms a question). The
    memo lives in the worktree's git dir, keyed by :func:`_commit_key`.
    """

    def __init__(self, gitdir: str, common: str) -> None:
        self.path = os.path.join(gitdir, "ledger-hook-memo")
        self.key = _commit_key(gitdir, common)
        lines = caches.load_lines(self.path, self.key) or []
        self.values: dict[str, str] = dict(line.split("=", 1) for line in lines if "=" in line)

    def get(self, name: str, compute: Callable[[], str]) -> str:
        if name not in self.values:
            self.values[name] = compute()
            body = [f"{k}={v}" for k, v in sorted(self.values.items())]
            caches.save_lines(self.path, self.key, body)
        return self.values[name]


def staged_paths(memo: CommitMemo) -> list[str]:
    # -z: paths with newlines or quotes come through verbatim; --no-renames: a
    # rename is a delete plus an add, both of which matter to the ledger. The
    # NULs are kept as \x1f in the memo (one line per value).
    out = memo.get(
        "staged",
        lambda: git("diff", "--cached", "--name-only", "-z", "--no-renames").replace("\0", "\x1f"),
    )
    return [p for p in out.split("\x1f") if p]


def open_version(
    common: str, gitdir: str, directory: str, memo: CommitMemo
) -> tuple[str | None, list[str], str]:
    """The open version at HEAD, its planned files and its registration commit, from the
    cache or the heavy path."""
    from ledger.hooks.fastcode import ledger_tree

    tree = ledger_tree(memo.get, directory)
    # The branch is part of the key: a matrix cell's worktree shares the ledger
    # tree with its base but has its cell open. HEAD is a file; no git call.
    head = _read_lines(os.path.join(gitdir, "HEAD"))
    tree = f"{tree}@{head[0] if head else ''}"
    cache = os.path.join(common, repobase.STATE_DIR, OPEN_CACHE)
    lines = caches.load_lines(cache, _open_key()) or []
    for line in lines:
        parts = line.split("\t")
        if len(parts) == 4 and parts[0] == tree:
            return (parts[1] or None), [f for f in parts[2].split("\x1f") if f], parts[3]
    _restore_site()
    from ledger.hooks import full as hookcheck

    opened, files, registration = hookcheck.open_version_info()
    lines = [*lines[-15:], f"{tree}\t{opened or ''}\t{chr(0x1F).join(files)}\t{registration}"]
    caches.save_lines(cache, _open_key(), lines)
    return opened, files, registration


def _open_key() -> str:
    """What the cached open versions depend on besides the tree: the program that read
    them (its version; the heavy path's code is too many files to stat on every commit)."""
    return f"{OPEN_CACHE} {__version__}"


def version_paths(registration: str) -> list[str]:
    """Paths the commits since the version's registration touched (first parents, no
    merges: what the branch itself did); the caller keeps the code among them, so the
    yellow flag counts a version's files across all its code commits."""
    if not registration:
        return []
    out = git(
        "log",
        "--first-parent",
        "--no-merges",
        "--format=",
        "--name-only",
        "-z",
        "--no-renames",
        f"{registration}..HEAD",
        check=False,
    )
    return list(dict.fromkeys(p.strip("\n") for p in out.split("\0") if p.strip("\n")))


def head_commit(gitdir: str, common: str) -> str | None:
    """HEAD's commit id read from the ref files, without a git call (None: ask git)."""
    head = _read_lines(os.path.join(gitdir, "HEAD"))
    if not head:
        return None
    if not head[0].startswith("ref: "):
        return head[0].strip() or None
    ref = head[0][5:].strip()
    loose = _read_lines(os.path.join(common, ref))
    if loose:
        return loose[0].strip() or None
    for line in _read_lines(os.path.join(common, "packed-refs")):
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def _last_reflog_entry(gitdir: str) -> str:
    try:
        with open(os.path.join(gitdir, "logs", "HEAD"), "rb") as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 4096))
            lines = handle.read().decode("utf-8", "replace").rstrip("\n").split("\n")
    except OSError:
        return ""
    return lines[-1] if lines else ""


def earlier_code(
    gitdir: str,
    common: str,
    registration: str,
    code: list[str],
    keep: Callable[[list[str]], list[str]],
) -> list[str]:
    """The code files the version's earlier commits touched, for the yellow flag.

    A git call (``git log``, ~4 ms) the first time; then a cache in the worktree's git dir
    carries the set from one commit to the next: what this commit stages is noted as
    pending on HEAD, and taken in when the reflog says the next HEAD is a plain commit
    on top of it. Anything else (an amend, a reset, a rebase) asks git again.
    """
    path = os.path.join(gitdir, "ledger-version-files")
    head = head_commit(gitdir, common)
    lines = caches.load_lines(path, registration) or []
    known: list[str] | None = None
    if head and len(lines) == 4:
        files = [f for f in lines[1].split("\x1f") if f]
        pending_on, pending = lines[2], [f for f in lines[3].split("\x1f") if f]
        if lines[0] == head:
            known = files
        else:
            entry = _last_reflog_entry(gitdir)
            moved = entry.split(" ", 2)
            if (
                len(moved) == 3
                and moved[0] == pending_on == lines[0]
                and moved[1] == head
                and "\tcommit: " in entry
            ):
                known = list(dict.fromkeys([*files, *pending]))
    if known is None:
        known = keep(version_paths(registration))
    if head:
        caches.save_lines(path, registration, [head, "\x1f".join(known), head, "\x1f".join(code)])
    return known


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in STAGES:
        sys.stderr.write(f"git-ledger hook: usage: hookrun {{{'|'.join(STAGES)}}} [ARGS]\n")
        return 2
    stage, rest = args[0], args[1:]
    if stage in SERVER_STAGES:
        # A bare repository on a server: no work tree, the pushed refs on stdin.
        return _heavy(stage.replace("-", "_"), [], refs=" ".join(rest))
    where = repobase.locate()
    if where is None:
        return 0  # not in a work tree (e.g. a bare repo): nothing to check
    top, gitdir, common = where
    values = settings(top, common)
    if values is None:
        return 0
    if values.get("broken"):
        return _heavy("pre_commit", [])  # reports the broken ledger.toml
    directory = values["dir"]
    if stage == "pre-push":
        from ledger.hooks.fastpush import verified

        pushed = sys.stdin.read() if sys.stdin is not None and not sys.stdin.isatty() else ""
        if verified(common, values, pushed):
            return 0
        return _heavy("pre_push", [], remote=rest[0] if rest else "", pushed=pushed)
    memo = CommitMemo(gitdir, common)
    staged = staged_paths(memo)
    prefix = directory + "/"
    outside = [p for p in staged if not p.startswith(prefix)]
    if stage == "pre-commit":
        # Frozen numbers in ledger.toml, code held to a loop's discipline: loops.py says.
        from ledger.core.loops import hook_facts

        facts = hook_facts(values.get("preset"))
        frozen = facts["config_checked"] and values["config_file"] in staged
        alone = len(outside) == len(staged) and not frozen  # code alone, or nothing
        if alone and not (outside and facts["code_checked"]):
            return 0
        from ledger.hooks.fastcode import passed  # code the loop's full check passed before

        known = alone and passed(top, common, values["config_file"], memo.get, directory, outside)
        return 0 if known else _heavy("pre_commit", staged)
    config_file = values["config_file"]
    code = code_paths(outside, config_file, values["free_paths"])
    if not rest:
        sys.stderr.write(f"git-ledger hook: {stage} needs the message file\n")
        return 2
    if stage == "prepare-commit-msg":
        source = rest[1] if len(rest) > 1 else os.environ.get("PRE_COMMIT_COMMIT_MSG_SOURCE", "")
        if source in ("merge", "squash"):
            return 0
        if staged == [config_file]:
            # The configuration alone: a transition of its own (see git ledger verify).
            return add_trailers(rest[0], ["Ledger-Transition: config", "Ledger-Step: config"])
        from ledger.core.loops import hook_facts

        if not code or not hook_facts(values.get("preset"))["code_needs_version"]:
            return 0  # a loop whose code commits belong to no version (campaign, batches)
        opened, _, _ = open_version(common, gitdir, directory, memo)
        return add_trailer(rest[0], opened) if opened else 0
    if os.path.exists(os.path.join(gitdir, "MERGE_HEAD")):
        return 0  # a merge commit carries the bets of its parents
    if config_file in staged:
        from ledger.hooks.fastconfig import config_refusal

        refusal = config_refusal(config_file, staged, rest[0])
        if refusal is not None:
            sys.stderr.write(f"git-ledger commit-msg refused: {refusal}\n")
            return 1
    return _commit_msg(values, common, gitdir, directory, code, rest[0], memo)


def code_paths(paths: list[str], config_file: str, free: str) -> list[str]:
    """Staged paths that are code: not the configuration, not a free path."""
    from ledger.core.commitrules import is_free

    patterns = [p for p in free.split("\x1f") if p]
    return [p for p in paths if p != config_file and not is_free(p, patterns)]


def _commit_msg(
    values: dict[str, str],
    common: str,
    gitdir: str,
    directory: str,
    code: list[str],
    message_file: str,
    memo: CommitMemo,
) -> int:
    from ledger.core.commitrules import check_message, strip_comments
    from ledger.core.loops import hook_facts

    # A loop without versions (a campaign's candidates, a batch loop) needs no open version.
    versions = hook_facts(values.get("preset"))["code_needs_version"]
    opened, plan, registration = (
        open_version(common, gitdir, directory, memo) if code and versions else (None, [], "")
    )
    earlier: list[str] = []
    if opened and registration:
        free = values["free_paths"]
        config_file = values["config_file"]
        prefix = directory + "/"

        def keep(paths: list[str]) -> list[str]:
            return code_paths([p for p in paths if not p.startswith(prefix)], config_file, free)

        earlier = earlier_code(gitdir, common, registration, code, keep)
    with open(message_file, encoding="utf-8", errors="replace") as handle:
        message = strip_comments(handle.read())
    findings = check_message(
        message,
        code_paths=code,
        version_paths=earlier,
        open_version=opened,
        plan=plan,
        id_prefix=values["id_prefix"],
        conventional=values["conventional_commits"] == "1",
        require_open_version=versions and values["require_open_version"] == "1",
        max_files=int(values["max_files_warning"]),
        warn_outside_plan=values["warn_outside_plan"] == "1",
    )
    refused = False
    for rule, text, fix, refuse in findings:
        kind = "refused" if refuse else "warning"
        sys.stderr.write(f"git-ledger commit-msg {kind}: [{rule}] {text} (fix: {fix})\n")
        refused = refused or refuse
    return 1 if refused else 0


def add_trailer(message_file: str, version: str) -> int:
    """Append ``Ledger-Step: <version>`` to the message's trailer block (before comments)."""
    return add_trailers(message_file, [f"Ledger-Step: {version}"])


def add_trailers(message_file: str, trailers: list[str]) -> int:
    """Append ``trailers`` to the message's trailer block (before comments)."""
    with open(message_file, encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    missing = [t for t in trailers if t not in text]
    if not missing:
        return 0
    trailer = "\n".join(missing)
    lines = text.split("\n")
    cut = next((i for i, line in enumerate(lines) if line.startswith("#")), len(lines))
    body = "\n".join(lines[:cut]).rstrip("\n")
    rest = "\n".join(lines[cut:])
    last = body.rsplit("\n\n", 1)[-1] if "\n\n" in body else ""
    in_trailers = bool(last) and all(
        ":" in ln and " " not in ln.split(":", 1)[0] for ln in last.split("\n")
    )
    body = f"{body}\n{trailer}" if in_trailers else f"{body}\n\n{trailer}"
    # git reads the file back once the hook exits: atomic, no need to flush to disk.
    repobase.write_atomic(
        message_file, body + "\n" + (("\n" + rest) if rest else ""), durable=False
    )
    return 0


def run() -> int:
    """The installed hooks' entry: :func:`main`, then a fast exit when it stayed light.

    Tearing down the interpreter (module dicts, the import system) costs about
    2 ms of a fast-path stage's 11, and a commit runs three stages. Everything the
    fast path writes goes through :func:`ledger.core.repobase.write_atomic` (closed and
    renamed before it returns), so once stdout and stderr are flushed nothing is
    left to finish. The heavy path (pygit2, pydantic, and whatever they registered
    with atexit) ends the normal way.
    """
    code = main()
    if "ledger.hooks.full" in sys.modules or sys.stdout is None or sys.stderr is None:
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code  # a closed or broken stream: let the normal exit report it
    os._exit(code)


def _heavy(check: str, staged: list[str], **kwargs: str) -> int:
    _restore_site()
    from ledger.hooks import full as hookcheck

    return hookcheck.run(check, staged, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
