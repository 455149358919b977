"""The only module of the full program that runs the git program (the hooks'
fast path spawns it through :func:`ledger.core.repobase.git`, without subprocess;
tests/test_git_boundary.py holds every other module to it).

pygit2 is the hot path, but some things must go through git itself: push and
fetch (credential helpers, ssh config, ``--atomic``, leases), worktrees,
merges that run merge drivers, and anything where the user's git config must
apply. Every call is an argv list, never a shell.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

from ledger.core import repobase
from ledger.core.errors import BadInput, EnvironmentFailure, LedgerError, errno_hint, errno_in

# The GIT_* variables a git the tool starts for another worktree or a remote
# keeps: how the user reaches remotes (ssh, https, proxies, credentials), their
# configuration and identity, and tracing. Every other GIT_* variable is
# dropped: git exports GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE, GIT_PREFIX,
# GIT_OBJECT_DIRECTORY (and more, as it grows) into the hooks it runs, and an
# inherited one silently redirects the child to the hook's repository or index
# (pre-commit's ``no_git_env`` keeps an allowlist for the same reason:
# https://github.com/pre-commit/pre-commit/issues/300). Variables outside the
# GIT_ namespace (HOME, PATH, SSH_AUTH_SOCK, XDG_*, http_proxy, ...) are the
# user's session, not git's redirections, and pass unchanged.
_KEEP_GIT_VARS = frozenset(
    {
        "GIT_ASKPASS",
        "GIT_TERMINAL_PROMPT",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSH_VARIANT",
        "GIT_PROXY_COMMAND",
        "GIT_PROXY_SSL_CAINFO",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_HTTP_USER_AGENT",
        "GIT_HTTP_LOW_SPEED_LIMIT",
        "GIT_HTTP_LOW_SPEED_TIME",
        "GIT_ALLOW_PROTOCOL",
        "GIT_PROTOCOL_FROM_USER",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",  # what `git -c key=value ledger ...` passes on
        "GIT_TEMPLATE_DIR",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "GIT_CURL_VERBOSE",
    }
)
_KEEP_GIT_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "GIT_SSL_", "GIT_TRACE")


def _kept(name: str) -> bool:
    return (
        not name.startswith("GIT_") or name in _KEEP_GIT_VARS or name.startswith(_KEEP_GIT_PREFIXES)
    )


def git_env(clean: bool = False) -> dict[str, str]:
    """The environment for a git the tool starts.

    Always the C locale: the tool reads git's output (``error:`` lines, the
    ``strerror`` text that names an errno), so a translated git must not change
    what it decides (``LANGUAGE`` would override ``LC_ALL`` for messages).
    ``clean``: only the allowlist above, for git aimed at another worktree or a
    remote; otherwise everything, as a hook's own ``GIT_INDEX_FILE`` must reach
    the git that reads the index being committed.
    """
    env = {k: v for k, v in os.environ.items() if _kept(k)} if clean else dict(os.environ)
    env.pop("LANGUAGE", None)
    env["LC_ALL"] = "C"
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    return env


def run(
    args: list[str],
    cwd: Path,
    *,
    check: bool = True,
    input: str | None = None,
    clean_env: bool = False,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            input=input,
            env=git_env(clean_env),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise BadInput("the git program is not on PATH", "install git") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentFailure(
            f"git {args[0]} did not answer within {timeout:g} s",
            "check the network and the remote, then retry",
        ) from None
    if check and proc.returncode != 0:
        raise failure(f"git {' '.join(args[:2])} failed", proc)
    return proc


def run_bytes(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """:func:`run` for output read as bytes (object contents, paths that may not be UTF-8),
    never checked: the caller says what a failure means."""
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, env=git_env(), check=False
        )
    except FileNotFoundError:
        raise BadInput("the git program is not on PATH", "install git") from None


def responds(cwd: Path, timeout: float) -> str | None:
    """None when git answers at ``cwd`` within ``timeout`` seconds; else why not, as the
    name of what went wrong (``TimeoutExpired``, ``CalledProcessError``, an ``OSError``)."""
    try:
        subprocess.run(
            ["git", "rev-parse", "--git-dir"],
            cwd=cwd,
            capture_output=True,
            timeout=timeout,
            check=True,
            env=git_env(),
        )
    except (subprocess.TimeoutExpired, subprocess.CalledProcessError, OSError) as exc:
        return type(exc).__name__
    return None


def reason(proc: subprocess.CompletedProcess[str]) -> str:
    """Why git failed, in git's words: its ``fatal:``/``error:`` lines with the indented
    lines that follow them (the paths it names), else the first lines it printed."""
    said: list[str] = []
    for raw in (proc.stderr or proc.stdout or "").splitlines():
        if raw.startswith(("fatal:", "error:")):
            said.append(raw.strip())
        elif said and raw[:1] in ("\t", " ") and raw.strip():
            said[-1] += " " + raw.strip()
    if said:
        return "; ".join(dict.fromkeys(said))
    # No prefix git's C locale uses (a translated git, a hook's own words): what it said.
    lines = [ln.strip() for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    return "; ".join(lines[:4]) if lines else f"exit {proc.returncode}"


def failure(what: str, proc: subprocess.CompletedProcess[str]) -> LedgerError:
    """A failed git call as an error: the environment's (an errno in git's words,
    with its hint) or, when nothing says so, a plain error (a bug: git was asked
    something the tool should not have asked)."""
    why = reason(proc)
    code = errno_in(why)
    if code is not None:
        return EnvironmentFailure(f"{what}: {why}", errno_hint(code), code=code)
    return LedgerError(f"{what}: {why}")


def output(args: list[str], cwd: Path, **kwargs: object) -> str:
    return run(args, cwd, **kwargs).stdout  # type: ignore[arg-type]


def remotes(cwd: Path) -> list[str]:
    return output(["remote"], cwd).split()


def config_get(cwd: Path, key: str) -> str | None:
    proc = run(["config", "--get", key], cwd, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


class DirtyCheck:
    """Whether the work tree has changes (tracked or untracked) outside the ledger dir.

    The git program answers this from its index stat cache (and the user's
    fsmonitor or untracked cache): a few milliseconds where libgit2's full
    status re-reads the whole tree. An exclude pathspec would still walk the
    ledger dir for untracked files, so when the ledger dir is a top-level
    folder the other top-level entries are named instead. It starts at once
    and is read when needed, so it runs while the transition is prepared.
    """

    def __init__(self, workdir: Path, directory: str, exclude: tuple[str, ...] = ()) -> None:
        # exclude: work-tree paths that are not the code (a run's own output folder, when
        # --out-dir or [run] output_dir puts it inside the work tree).
        top = directory.split("/", 1)[0]
        if "/" in directory:
            specs = [".", f":(exclude){directory}"]
        else:
            specs = [
                f":(literal){n}"
                for n in sorted(os.listdir(workdir))
                if n not in (".git", top, *exclude)
            ]
        if specs:
            specs += [f":(exclude,literal){p}" for p in exclude]
        self._proc: subprocess.Popen[bytes] | None = None
        if specs:
            self._proc = subprocess.Popen(
                # --no-optional-locks: a probe must not rewrite the index (git status
                # refreshes stale stat data in place), or a refused verb changed it.
                [
                    "git",
                    "--no-optional-locks",
                    "status",
                    "--porcelain",
                    "--untracked-files=normal",
                    "-z",
                    "--",
                    *specs,
                ],
                cwd=workdir,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
        self._answer: bool | None = None if specs else False

    def result(self) -> bool:
        if self._answer is None and self._proc is not None:
            out, _ = self._proc.communicate()
            if self._proc.returncode != 0:
                raise LedgerError("git status failed while checking the work tree")
            self._answer = bool(out.strip(b"\0"))
        return bool(self._answer)


class CatFileBatch:
    """One long-lived ``git cat-file --batch``: objects by id, one process for a whole run.

    A git per object costs a process start each (~2 ms); ``verify``'s incremental
    path reads its blobs through one. Started at the first :meth:`read`, ended
    by :meth:`close`. Whatever git cannot answer (a missing object, git gone)
    reads as None and the caller says what that means.
    """

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            self._proc = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=git_env(),
            )
        except FileNotFoundError:
            raise BadInput("the git program is not on PATH", "install git") from None
        return self._proc

    def read(self, object_id: str) -> tuple[str, bytes] | None:
        """(type, contents) of ``object_id``; None when git has no such object to give."""
        if not object_id or any(c in object_id for c in "\n\r\0"):
            raise BadInput(f"not an object name: {object_id!r}")
        proc = self._proc or self._start()
        pipe_in, pipe_out = proc.stdin, proc.stdout
        if pipe_in is None or pipe_out is None:
            raise BadInput("git cat-file --batch did not start", "check that git is installed")
        try:
            pipe_in.write(object_id.encode() + b"\n")
            pipe_in.flush()
        except BrokenPipeError:
            self.close()
            return None
        header = pipe_out.readline().split()  # "<id> <type> <size>", or "<name> missing"
        if len(header) != 3 or not header[2].isdigit():
            if not header:  # git ended (a corrupt object store): the next read starts anew
                self.close()
            return None
        data = pipe_out.read(int(header[2]))
        pipe_out.read(1)  # the newline after the contents
        return header[1].decode(), data

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def locate(cwd: Path) -> tuple[Path, Path]:
    """(top level of the work tree, common git dir) of the repository at ``cwd``."""
    found = repobase.locate(str(cwd))
    if found is None:
        raise BadInput(
            f"not a git repository (or a bare one): {cwd.resolve()}",
            "run 'git init' first, or pass -C <repo>",
        )
    return Path(found[0]), Path(found[2])


def head_ids(top: Path, directory: str) -> tuple[str, str, str] | None:
    """(HEAD commit, tree id of ``directory`` at HEAD, HEAD's symbolic name), in one call.

    None when any of them does not exist (an unborn branch, no ledger dir yet):
    callers then take the full path, which knows how to say why.
    """
    # --symbolic-full-name applies only to the arguments after it.
    proc = run(
        ["rev-parse", "HEAD", f"HEAD:{directory}", "--symbolic-full-name", "HEAD"], top, check=False
    )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != 3:
        return None
    return lines[0], lines[1], lines[2]


def merge_file(ours: Path, base: Path, theirs: Path, cwd: Path) -> str | None:
    """Three-way merge of three files' text with ``git merge-file``; None on a conflict."""
    proc = run(["merge-file", "-p", "--", str(ours), str(base), str(theirs)], cwd, check=False)
    return proc.stdout if proc.returncode == 0 else None


# The tree with no entries: git knows its id without it being in the object store.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _literal(paths: list[str]) -> list[str]:
    # Entry paths are data, never patterns: a file named "a*" must not match "ab".
    return [f":(literal){p}" for p in paths]


def index_entries(top: Path, paths: list[str]) -> dict[str, tuple[str, bool]]:
    """Staged blob id and skip-worktree bit of each of ``paths`` that is in the index.

    Asked of git, not libgit2: git reads every index format (split index, sparse
    index) and expands a sparse directory for us; ``-t`` tags an entry outside a
    sparse checkout with ``S``.
    """
    if not paths:
        return {}
    out = output(["ls-files", "-s", "-t", "-z", "--", *_literal(paths)], top)
    found: dict[str, tuple[str, bool]] = {}
    for record in out.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        tag, _mode, blob, stage = meta.split(" ")
        if stage == "0":
            found[path] = (blob, tag == "S")
    return found


def hash_path(top: Path, path: str, *, write: bool = False) -> str:
    """The blob id git would stage for the work-tree file ``path``: through its clean
    filters (core.autocrlf, eol and filter attributes), never the raw bytes."""
    args = ["hash-object", *(["-w"] if write else []), f"--path={path}", "--", path]
    return output(args, top).strip()


def write_tree(top: Path) -> str:
    """The tree the index would commit (any index format git reads; GIT_INDEX_FILE honoured)."""
    return output(["write-tree"], top).strip()


def index_busy(message: str) -> bool:
    """Another git process holds ``index.lock`` (EEXIST on it): that ends, so waiting helps.

    Any other failure to take the lock (EACCES, EROFS, ENOSPC) never does.
    """
    return "index.lock" in message and errno_in(message) == errno.EEXIST


def read_tree_update(top: Path, old: str | None, new: str) -> subprocess.CompletedProcess[str]:
    """Move index and work tree from commit ``old`` to ``new`` as ``git checkout`` would.

    A two-tree ``read-tree -m -u`` takes ``index.lock`` before it reads the index
    and renames it into place after writing, so a ``git add`` racing us is either
    before (kept: paths that ``old`` and ``new`` share keep what is staged) or
    after, never lost. It also honours sparse checkouts (new entries outside the
    cone get the skip-worktree bit and no file), split and sparse indexes, smudge
    filters (autocrlf, eol), and records real stat data for the files it writes.
    """
    return run(["read-tree", "-m", "-u", old or EMPTY_TREE, new], top, check=False)
