"""What the hooks' fast path and the full program both need: standard library only.

One place for: finding the repository and its git dirs, ledger.toml's file
names, defaults and key names, the grammar of version ids, the name of a
result file, and writing a file atomically. The hooks import this module on
every commit, before they know whether there is any ledger work, so it
imports only ``os`` (already loaded by the interpreter): no ``re`` (~6 ms),
``subprocess`` (~17 ms), ``typing`` or ``dataclasses``; ``tomllib`` only
inside the function that parses.

The full program reads the same names from here (:mod:`ledger.core.model.config`
takes its defaults from these constants, :mod:`ledger.core.model.ids` parses ids
with :func:`split_version`), so the hooks and the program cannot drift apart.
"""

from __future__ import annotations

import os

# Not typing.TYPE_CHECKING: importing typing costs a -S interpreter ~9 ms, and
# mypy treats any name TYPE_CHECKING as true, so annotations still check.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

# What a Windows user outside WSL reads (README: Platforms): the hooks are POSIX
# shell scripts, the locks use fcntl; one line, never a traceback from an import.
WINDOWS_UNSUPPORTED = (
    "git-ledger: error: Windows outside WSL is not supported "
    "(supported: Linux, macOS, and Windows through WSL); run it inside WSL\n"
)

# --- the repository ---------------------------------------------------------

STATE_DIR = "ledger"  # below the common git dir: caches, run records, last-error.log
# For a ``git status`` that only reads (``--no-optional-locks``, so the index is never
# refreshed): a file whose size and mtime (whole seconds) match the index is unchanged.
# Without it, the index of a copied or restored work tree (other inodes, other ctimes)
# matches no file, and each read hashed every file again: 10 ms instead of 3 at 1,000
# versions, more with the results. git's racy-entry check still hashes a file written
# in the second the index was; what is missed is an edit that keeps the size and sets
# the mtime back, which only the ledger-files warning reads (a push sends commits).
STAT_BY_SIZE_AND_MTIME = ("-c", "core.checkStat=minimal", "-c", "core.trustCtime=false")


def git(*args: str, check: bool = True) -> str:
    """Run git, return its stdout; stderr is discarded (the caller says what failed).

    ``os.posix_spawnp``, not :mod:`subprocess`: importing subprocess costs a
    hook more than the interpreter start. The full program runs git through
    :mod:`ledger.core.gitcli`.
    """
    read_end, write_end = os.pipe()
    actions = [
        (os.POSIX_SPAWN_DUP2, write_end, 1),
        (os.POSIX_SPAWN_CLOSE, read_end),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    try:
        pid = os.posix_spawnp("git", ["git", *args], os.environ, file_actions=actions)
    finally:
        os.close(write_end)
    chunks = []
    try:
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if check and os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"git {args[0]} failed")
    return b"".join(chunks).decode("utf-8", errors="surrogateescape")


def stat_key(path: str) -> str:
    """A file as the OS sees it (size, modification time, inode), for cache keys; "-" if absent.

    A rewrite by git or an editor changes one of them (a rename gives a new inode).
    """
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"


def common_dir(gitdir: str) -> str:
    """The git dir shared by all worktrees: a linked worktree's git dir names it in ``commondir``."""
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            pointer = handle.read().strip()
    except FileNotFoundError:
        return gitdir
    return os.path.normpath(os.path.join(gitdir, pointer))


def locate(cwd: str | None = None) -> tuple[str, str, str] | None:
    """(top level, git dir, common git dir) of the work tree at ``cwd``; None outside one.

    With ``cwd`` None (a hook), the answer comes from the environment git
    gives hooks when it is there (~4 ms saved per hook, a commit runs three);
    otherwise git itself is asked, so ``GIT_DIR``, ``GIT_WORK_TREE``,
    ``GIT_CEILING_DIRECTORIES`` and ``safe.directory`` apply as they do to git.
    :class:`ledger.core.store.Store` finds the repository in-process with libgit2,
    which it loads anyway, and takes the common dir from :func:`common_dir`.
    """
    found = _from_hook_env() if cwd is None else None
    if found is None:
        where = ("-C", cwd) if cwd is not None else ()
        try:
            out = git(*where, "rev-parse", "--show-toplevel", "--absolute-git-dir")
            top, gitdir = out.splitlines()[:2]
        except (RuntimeError, ValueError):
            return None
        found = (top, gitdir)
    top, gitdir = found
    return top, gitdir, common_dir(gitdir)


def _from_hook_env() -> tuple[str, str] | None:
    gitdir = os.environ.get("GIT_DIR")
    if gitdir and os.path.isdir(gitdir) and not os.environ.get("GIT_WORK_TREE"):
        # githooks(5): a hook runs at the top of the work tree with GIT_DIR set.
        return os.getcwd(), os.path.abspath(gitdir)
    if os.environ.get("GIT_INDEX_FILE") and os.path.exists(".git"):
        # A commit hook: git sets GIT_INDEX_FILE (not GIT_DIR) and runs it at the
        # top of the work tree, where .git is the git dir or, in a linked
        # worktree, a "gitdir: <path>" file.
        top = os.getcwd()
        if os.path.isdir(".git"):
            return top, os.path.abspath(".git")
        with open(".git", encoding="utf-8") as handle:
            pointer = handle.read().strip()
        if pointer.startswith("gitdir: "):
            return top, os.path.normpath(os.path.join(top, pointer[len("gitdir: ") :]))
    return None


# --- ledger.toml ------------------------------------------------------------

CONFIG_FILE = "ledger.toml"
# git's id of no object: the old or new side of a ref a push creates or deletes.
ZERO = "0" * 40
PYPROJECT = "pyproject.toml"
CONFIG_FILES = (CONFIG_FILE, PYPROJECT)  # the first that holds a ledger configuration wins
# The merge driver of the ledger's generated views, named in .gitattributes.
VIEWS_DRIVER = "ledger-views"


def project_part(data: bytes) -> object:
    """pyproject.toml as parsed, less ``[tool.ledger]``: what a delivery keeps as it was
    (it takes only the ledger's tables away). Unreadable: the bytes themselves."""
    import tomllib

    try:
        parsed: dict[str, object] = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return data
    tool = parsed.get("tool")
    if isinstance(tool, dict):
        tool.pop("ledger", None)
        if not tool:
            parsed.pop("tool")
    return parsed


def without_ledger_attributes(data: bytes | None) -> list[bytes]:
    """.gitattributes's lines less the ones that name the ledger's merge driver (which
    init writes): what a delivery's code is compared by."""
    mark = f"merge={VIEWS_DRIVER}".encode()
    return [line for line in (data or b"").splitlines() if mark not in line.split()]


# The defaults of the keys the hooks read; ledger.core.model.config's tables use them.
DEFAULT_DIR = "training_log"
DEFAULT_ID_PREFIX = "V"
DEFAULT_PRESET: Final = "versions"
DEFAULT_CONVENTIONAL_COMMITS = True
DEFAULT_REQUIRE_OPEN_VERSION = True
DEFAULT_MAX_FILES_WARNING = 3
DEFAULT_WARN_OUTSIDE_PLAN = True
# Paths a commit may touch with no version open ([hooks] free_paths): documentation
# and tooling, as a user of pre-commit or a CI service expects. The ledger dir is
# never code, and the configuration file is a transition of its own.
DEFAULT_FREE_PATHS = (
    "*.md",
    "docs/**",
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".gitignore",
    ".gitattributes",
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    "LICENSE*",
)
# The keys the hooks read, by table.
HOOK_KEYS = {
    "ledger": ("dir", "id_prefix", "preset"),
    "hooks": (
        "conventional_commits",
        "require_open_version",
        "max_files_warning",
        "warn_outside_plan",
        "free_paths",
    ),
}
# The configuration tables a verdict reads: frozen per version (see ledger.core.verify).
FROZEN_TABLES = ("gates", "stats", "triggers", "batches", "campaign")


def ledger_table(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The ledger's settings in a parsed file: all of ledger.toml, or pyproject.toml's
    ``[tool.ledger]`` (None when it has none)."""
    if name.endswith(PYPROJECT):
        tool = data.get("tool")
        table = tool.get("ledger") if isinstance(tool, dict) else None
        return table if isinstance(table, dict) else None
    return data


def hook_settings(table: dict[str, Any], name: str) -> dict[str, str]:
    """The keys the hooks read, as text (a cache line each), defaults filled in."""

    def flag(value: bool) -> str:
        return "1" if value else "0"

    values = {
        "dir": DEFAULT_DIR,
        "id_prefix": DEFAULT_ID_PREFIX,
        "preset": DEFAULT_PRESET,
        "conventional_commits": flag(DEFAULT_CONVENTIONAL_COMMITS),
        "require_open_version": flag(DEFAULT_REQUIRE_OPEN_VERSION),
        "max_files_warning": str(DEFAULT_MAX_FILES_WARNING),
        "warn_outside_plan": flag(DEFAULT_WARN_OUTSIDE_PLAN),
        "free_paths": "\x1f".join(DEFAULT_FREE_PATHS),
        "config_file": name,
    }
    for section_name, keys in HOOK_KEYS.items():
        section = table.get(section_name, {})
        if not isinstance(section, dict):
            continue
        for key in keys:
            if key not in section:
                continue
            value = section[key]
            if key == "free_paths":
                if isinstance(value, list):
                    values[key] = "\x1f".join(str(v) for v in value)
            else:
                values[key] = flag(value) if isinstance(value, bool) else str(value)
    values["dir"] = normal_dir(values["dir"])
    return values


def normal_dir(value: str) -> str:
    """The ledger dir as the configuration's model gives it (``./training_log/`` is
    ``training_log``), without pathlib: the hooks' fast path reads it. A dir the model
    refuses (absolute, ``..``) stays as it is, for the full check to refuse."""
    if value.startswith("/") or ".." in value.split("/"):
        return value
    return "/".join(part for part in value.split("/") if part not in ("", ".")) or "."


# The history rules a ledger has opted into (``[ledger] rules``). A rule added after a
# ledger was made judges it from the commit that raises this number (a configuration
# transition with its reason): history written before is judged by the rules it was
# written under, and the number never goes down. 1: the rules before it existed.
# 2: a setting that judges changes with its reason on record (config-reason).
RULES_EPOCH = 2


def rules_epoch(table: dict[str, Any]) -> int:
    """The ``[ledger] rules`` a configuration opted into (1 when it names none)."""
    section = table.get("ledger", {})
    value = section.get("rules", 1) if isinstance(section, dict) else 1
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def frozen_tables(table: dict[str, Any]) -> dict[str, Any]:
    """The verdict-affecting settings of a ledger table, a gate each on its own key
    (``gates.<name>``), so that adding a gate is told apart from changing one; the
    rules the ledger opted into judge too (``ledger.rules``)."""
    out = {k: table.get(k) for k in FROZEN_TABLES if k != "gates"}
    out["ledger.rules"] = rules_epoch(table)
    gates = table.get("gates")
    for name, gate in gates.items() if isinstance(gates, dict) else ():
        out[f"gates.{name}"] = gate
    return out


def ledger_dir(table: dict[str, Any]) -> str | None:
    """The ledger dir a configuration names (None when ``dir`` is not text)."""
    section = table.get("ledger", {})
    value = section.get("dir", DEFAULT_DIR) if isinstance(section, dict) else None
    return normal_dir(value) if isinstance(value, str) else None


# --- ids and file names ------------------------------------------------------


def is_cell_name(name: str) -> bool:
    """A matrix cell's name: a capital letter, then up to 15 ASCII letters or digits."""
    return (
        0 < len(name) <= 16
        and "A" <= name[0] <= "Z"
        and all(c.isascii() and c.isalnum() for c in name)
    )


def split_version(value: str, prefix: str) -> tuple[int, str, str] | None:
    """(number, sibling, cell) of ``V200``, ``V200a`` or ``V213.A``; None for anything else.

    The one grammar of version ids: the prefix, 1-9 ASCII digits, at most two
    lower-case letters (a sibling), and optionally ``.`` and a cell name.
    """
    if not prefix or not value.startswith(prefix):
        return None
    head, dot, cell = value[len(prefix) :].partition(".")
    digits = len(head) - len(head.lstrip("0123456789"))
    sibling = head[digits:]
    if not 1 <= digits <= 9 or len(sibling) > 2 or not all("a" <= c <= "z" for c in sibling):
        return None
    if dot and not is_cell_name(cell):
        return None
    return int(head[:digits]), sibling, cell


def base_id(vid: str) -> str:
    """The version a matrix cell belongs to (``V213.A`` -> ``V213``); any other id unchanged."""
    return vid.partition(".")[0]


def cell_of(vid: str) -> str:
    """The cell name of a matrix cell's id (``V213.A`` -> ``A``); "" for any other id."""
    return vid.partition(".")[2]


def result_stem(seed: str | None, window: str | None, replicate: int | None, failed: bool) -> str:
    """The file name (without .json) of a result: seed-42, window-w3-r2, seed-1-failed."""
    stem = f"seed-{seed}" if seed is not None else f"window-{window}"
    if replicate is not None:
        stem += f"-r{replicate}"
    return stem + ("-failed" if failed else "")


def results_dir(directory: str, version: str, gate: str | None = None) -> str:
    """Where a version's results (on one gate) live in the ledger dir ``directory``."""
    base = f"{directory}/results/{version}" if directory else f"results/{version}"
    return f"{base}/{gate}" if gate is not None else base


def result_path(directory: str, version: str, gate: str, stem: str) -> str:
    """``<dir>/results/<version>/<gate>/<stem>.json`` (``directory`` "" for the relative path)."""
    return f"{results_dir(directory, version, gate)}/{stem}.json"


# --- writing files ----------------------------------------------------------


def read_regular(path: str | os.PathLike[str]) -> bytes | None:
    """The bytes of a regular file, or None: missing, unreadable, or not a regular file.

    Opened without blocking and checked on the open descriptor, so a FIFO or a device
    put where a file is expected (by a hand, or swapped in between a check and a read)
    never hangs the reader or feeds it without end.
    """
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | str,
    *,
    durable: bool = True,
    mode: int | None = None,
) -> None:
    """Replace ``path`` with ``data``: a reader, or a crash, sees the old file or the new, never half.

    The data goes to a new temporary file beside ``path`` (the same file
    system, so the rename is atomic; created exclusively and never through a
    link), which is flushed to disk, renamed over ``path``, and then the
    directory is flushed so that the rename survives a power cut too. A link
    at ``path`` is replaced, not written through: a planted link cannot send
    the write elsewhere.
    ``durable=False`` skips both flushes: for derived data (caches), which a
    crash may lose at no cost but time, while a flush costs ~15 ms on a
    commit's path. The file gets ``mode`` if given (a hook script: 0o755),
    else the permission bits of the file it replaces, else 0o666 less the
    umask, as ``open`` gives.

    Raises :class:`OSError` with the old file untouched and no temporary left.
    """
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    os.makedirs(directory, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    keep = mode
    if keep is None:
        try:
            keep = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            keep = None
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.urandom(6).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666)
    try:
        try:
            if keep is not None:
                os.fchmod(fd, keep)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    if durable:
        _fsync_dir(directory)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        return  # the error being raised says what went wrong


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # a directory we may not open: the file itself is on disk
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot flush a directory (EINVAL); the rename is done
    finally:
        os.close(fd)
