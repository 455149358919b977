"""Commit-message rules, pure and standard-library only (hooks import this on every commit).

They are part of the rules (see :mod:`ledger.presets.versions.rules`) but live apart so that
the ``commit-msg`` hook's fast path does not import pydantic or scipy.
"""

from __future__ import annotations

# DEFAULT_FREE_PATHS is defined with the other defaults the hooks read; applied here.
from ledger.core.repobase import DEFAULT_FREE_PATHS as DEFAULT_FREE_PATHS
from ledger.core.repobase import split_version

TYPES = frozenset(
    (
        "feat",
        "fix",
        "perf",
        "refactor",
        "docs",
        "test",
        "tests",
        "chore",
        "build",
        "ci",
        "style",
        "revert",
    )
)
# No regular expressions here: importing re costs the commit-msg hook ~6 ms.


def _match_segment(name: str, pattern: str) -> bool:
    """fnmatch for one path segment (``*`` and ``?``), without importing fnmatch/re."""
    if not pattern:
        return not name
    if pattern[0] == "*":
        rest = pattern.lstrip("*")
        return any(_match_segment(name[i:], rest) for i in range(len(name) + 1))
    if not name:
        return False
    if pattern[0] in ("?", name[0]):
        return _match_segment(name[1:], pattern[1:])
    return False


def _match_parts(parts: list[str], pats: list[str]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match_parts(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and _match_segment(parts[0], pats[0]) and _match_parts(parts[1:], pats[1:])


def glob_match(path: str, pattern: str) -> bool:
    """gitignore-like: a pattern without '/' matches the file name at any depth;
    otherwise it is anchored at the top, and ``**`` matches any number of folders."""
    pattern = pattern.strip().lstrip("/")
    if not pattern:
        return False
    if "/" not in pattern:
        return _match_segment(path.rsplit("/", 1)[-1], pattern)
    return _match_parts(path.split("/"), pattern.split("/"))


def is_free(path: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(glob_match(path, p) for p in patterns)


def outside_scope(paths: list[str], scope: list[str]) -> list[str]:
    """The ``paths`` no glob of ``scope`` matches (fnmatch: ``*`` crosses ``/``); none
    when there is no scope. The campaign's ``[campaign] scope``, for its hook's warning
    and for the fast path that answers without it (:mod:`ledger.hooks.fastcode`)."""
    from fnmatch import fnmatchcase

    if not scope:
        return []
    return [p for p in paths if not any(fnmatchcase(p, g) for g in scope)]


def is_conventional(subject: str) -> bool:
    """``type(scope)!: summary`` with a known type; scope and ``!`` optional."""
    head, sep, summary = subject.partition(": ")
    if not sep or not summary[:1].strip():
        return False
    head = head.removesuffix("!")
    kind, paren, scope = head.partition("(")
    if paren:
        inner = scope[:-1]
        if (
            not scope.endswith(")")
            or not inner
            or inner[0].isspace()
            or "(" in inner
            or ")" in inner
        ):
            return False
    return kind in TYPES


def step_trailers(message: str) -> set[str]:
    found = set()
    for line in message.splitlines():
        key, sep, value = line.partition(":")
        if sep and key == "Ledger-Step" and value.strip() and " " not in value.strip():
            found.add(value.strip())
    return found


def version_ids(text: str, prefix: str) -> set[str]:
    """The version ids (V200, V200a, V213.A) named in ``text``."""
    found = set()
    for raw in text.replace("(", " ").replace(")", " ").replace(",", " ").replace(":", " ").split():
        word = raw.strip(".;!?'\"`")
        if split_version(word, prefix) is not None:
            found.add(word)
    return found


class MessageFinding(tuple[str, str, str, bool]):
    """(rule, message, fix, refuse): a plain tuple, since importing dataclasses or
    typing would cost the hook more than the check itself."""

    def __new__(cls, rule: str, message: str, fix: str, refuse: bool = True) -> MessageFinding:
        return super().__new__(cls, (rule, message, fix, refuse))

    @property
    def rule(self) -> str:
        return self[0]

    @property
    def refuse(self) -> bool:
        return self[3]


def strip_comments(text: str, comment_char: str = "#") -> str:
    """The message as git will store it: comment lines and the scissors cut removed."""
    lines = []
    for line in text.splitlines():
        if line.startswith(f"{comment_char} ------------------------ >8"):
            break
        if not line.startswith(comment_char):
            lines.append(line)
    return "\n".join(lines).strip()


def check_message(
    message: str,
    *,
    code_paths: list[str],
    open_version: str | None,
    version_paths: list[str] | None = None,
    plan: list[str],
    id_prefix: str,
    conventional: bool,
    require_open_version: bool,
    max_files: int,
    warn_outside_plan: bool,
) -> list[MessageFinding]:
    found: list[MessageFinding] = []
    subject = message.split("\n", 1)[0].strip()
    if conventional and subject and not is_conventional(subject):
        example = f"feat(scope): {open_version} — the bet" if open_version else "docs(ledger): ..."
        found.append(
            MessageFinding(
                "conventional-commits",
                f"subject {subject!r} is not a conventional commit",
                f"use 'type(scope): summary', e.g. '{example}'",
            )
        )
    if not code_paths:
        return found
    if open_version is None:
        if require_open_version:
            found.append(
                MessageFinding(
                    "one-bet-per-version",
                    f"a code commit ({', '.join(code_paths[:3])}{' ...' if len(code_paths) > 3 else ''}) "
                    "while no version is open",
                    "pre-register the bet first: git ledger register --bet ... --gate ...",
                )
            )
        return found
    named = step_trailers(message) | version_ids(subject, id_prefix)
    others = sorted(n for n in named if n != open_version)
    if others:
        found.append(
            MessageFinding(
                "one-bet-per-version",
                f"the message names {', '.join(others)} but the open version is {open_version}",
                f"code commits belong to {open_version}; conclude it before working on another",
            )
        )
    # The flag is about the bet, not the commit: a version's files are counted across
    # all its code commits, or five one-file commits would pass as one small change.
    touched = dict.fromkeys([*(version_paths or []), *code_paths])
    if len(touched) > max_files:
        earlier = len(touched) - len(code_paths)
        across = f" across its code commits ({earlier} earlier)" if earlier > 0 else ""
        found.append(
            MessageFinding(
                "yellow-flag",
                f"{open_version} touches {len(touched)} files{across} (more than "
                f"{max_files}): is it still one bet?",
                "split it, or carry on knowingly",
                refuse=False,
            )
        )
    if warn_outside_plan and plan:
        outside = [p for p in code_paths if p not in plan]
        if outside:
            found.append(
                MessageFinding(
                    "outside-plan",
                    f"{', '.join(outside)} not in {open_version}'s registered --files",
                    "fine if deliberate; the conclusion should say why",
                    refuse=False,
                )
            )
    return found
