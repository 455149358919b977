"""The one error type, and what each kind of failure means for the exit code.

Exit codes are a contract (DESIGN section 5): 0 ok, 1 a rule refused or a
check found something, 2 bad usage or bad input (nothing written), 3 a bug,
4 the commit is made but the index and work tree are behind (``doctor --fix``
completes it), 5 the environment refused (a full disk, a permission, a
read-only file system; nothing was committed). The top-level handler in
``cli.py`` turns a :class:`LedgerError` into one line on stderr; a plain
``LedgerError`` (no more specific class) and anything else is a bug and gets a
traceback in ``.git/ledger/last-error.log``. :meth:`LedgerError.as_dict` is the same error
for machines (the MCP server's structured tool errors): the kind, the rule that
refused, the message and the fix, never text a client must parse.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Sequence
from typing import Protocol

# What each exit code means, as a word a client can switch on.
KINDS = {1: "refused", 2: "bad-input", 3: "internal", 4: "incomplete", 5: "environment"}

# A refusal by a named rule starts "[rule-name] ..." (see rules.Finding.line).
_RULE_TAG = re.compile(r"^\[([a-z][a-z0-9-]*)\] ")


class _Finding(Protocol):
    """What :meth:`Refused.of` needs from a finding (``rules.Finding``)."""

    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def fix(self) -> str: ...
    def line(self) -> str: ...


class LedgerError(Exception):
    """An error a user can act on: what went wrong, and how to fix it."""

    exit_code = 3

    def __init__(self, message: str, hint: str | None = None, *, rule: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        tag = _RULE_TAG.match(message)
        self.rule = rule if rule is not None else (tag.group(1) if tag else None)
        self.findings: list[dict[str, str | None]] = [
            {"rule": self.rule, "message": message, "fix": hint}
        ]

    def one_line(self) -> str:
        text = self.message.replace("\n", " ")
        if self.hint:
            text += f" ({self.hint})"
        return text

    def as_dict(self) -> dict[str, object]:
        """The error for machines: kind, exit code, rule, message, fix, and every finding."""
        return {
            "kind": KINDS.get(self.exit_code, "internal"),
            "exit_code": self.exit_code,
            "rule": self.rule,
            "message": self.message,
            "fix": self.hint or self.findings[0]["fix"],
            "findings": self.findings,
        }


class Refused(LedgerError):
    """A discipline rule refused the action, or a check found something."""

    exit_code = 1

    @classmethod
    def of(cls, findings: Sequence[_Finding]) -> Refused:
        """One refusal for several findings: one line for people, each finding for machines."""
        error = cls("; ".join(f.line() for f in findings), rule=findings[0].rule)
        error.findings = [
            {"rule": f.rule, "message": f.message, "fix": f.fix or None} for f in findings
        ]
        return error


class BadInput(LedgerError):
    """Bad usage or bad input; nothing was written."""

    exit_code = 2


class WorktreeBehind(LedgerError):
    """The branch moved to the new commit, but its index and work tree could not follow.

    Never exit 2: something *was* written. The commit is safe; the journal
    (``<gitdir>/ledger-pending.json``) stays, and ``git ledger doctor --fix``
    (or the next transition) brings index and work tree in line.
    """

    exit_code = 4

    def __init__(self, commit: str, cause: str, hint: str | None = None) -> None:
        self.commit = commit
        fix = "run git ledger doctor --fix"
        super().__init__(
            f"committed as {commit}; the work tree is behind: {fix} ({cause})",
            f"{hint}, then {fix}" if hint else None,
        )


class EnvironmentFailure(LedgerError):
    """The system refused a write (disk full, permissions, read-only file system).

    Not the user's input, not a bug: the hint comes from the errno.
    """

    exit_code = 5

    def __init__(self, message: str, hint: str | None = None, *, code: int | None = None) -> None:
        super().__init__(message, hint)
        self.errno = code


# What to do about each errno a write can meet, when the cause is outside git-ledger.
_ERRNO_HINTS: dict[int, str] = {
    errno.ENOSPC: "the disk is full: free some space, then retry",
    errno.EDQUOT: "your disk quota is used up: free some space or ask for a larger quota",
    errno.EFBIG: "the file size limit stops the write: raise it (ulimit -f) and retry",
    errno.EACCES: "permission denied: check the owner and mode (ls -ld), e.g. chmod u+w",
    errno.EPERM: "the operation is not permitted: check the owner, mode and attributes "
    "(ls -ld; lsattr for an immutable file)",
    errno.EROFS: "the file system is read-only: remount it read-write, or work in a writable clone",
    errno.EIO: "the disk reported an I/O error: check it (dmesg) before retrying",
    errno.EMFILE: "too many open files: raise the limit (ulimit -n)",
    errno.ENFILE: "the system has too many open files: retry when fewer are open",
    errno.ENOMEM: "out of memory: close other programs and retry",
    errno.ENOTDIR: "a file stands where a directory must be: move it away",
    errno.EEXIST: "something already stands at that path: move it away",
    errno.EISDIR: "a directory stands where a file must be: move it away",
    errno.ENAMETOOLONG: "the path is too long for this file system: use a shorter directory",
    errno.ELOOP: "a symbolic link loop is in the way: remove the link",
}
ENVIRONMENT_ERRNOS = frozenset(_ERRNO_HINTS)


def errno_hint(code: int | None) -> str | None:
    return _ERRNO_HINTS.get(code) if code is not None else None


def errno_in(text: str) -> int | None:
    """The errno whose C-locale description ends a message from git or libgit2.

    Every git call the tool reads runs with ``LC_ALL=C`` (``gitcli``) and libgit2
    formats in this process (whose messages are never localised), so the text
    is ``strerror`` in English: matched against the table, never guessed.
    """
    for code in _ERRNO_HINTS:
        if os.strerror(code) in text:
            return code
    return None


def os_errno(exc: OSError) -> int | None:
    """The errno of an OSError; pygit2 raises some without one, its text naming it."""
    return exc.errno if exc.errno is not None else errno_in(str(exc))


def environment_error(exc: OSError, what: str) -> LedgerError:
    """An OSError as what it is: the environment's refusal, with the errno's hint.

    An errno outside the table (EINVAL from a bad argument, ...) is not the
    environment's: it stays a plain error, a bug with a traceback.
    """
    code = os_errno(exc)
    reason = exc.strerror or str(exc)
    where = f" {exc.filename}" if exc.filename else ""
    if code in ENVIRONMENT_ERRNOS:
        return EnvironmentFailure(f"{what}:{where} {reason}", errno_hint(code), code=code)
    return LedgerError(f"{what}:{where} {reason}")
