"""What a transition is, and the names it may write.

A transition is one commit: a kind, a step id, a message whose trailers name
both, and the files it writes (``None`` deletes). Every name it writes is
checked here before any object is made: it stays inside the repository and
never differs from a name already in the tree only in letter case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import pygit2

from ledger.core.commitinfo import TRAILER_STEP, TRAILER_TRANSITION
from ledger.core.errors import BadInput
from ledger.core.store.objects import case_twins


@dataclass(frozen=True)
class Transition:
    """One ledger transition: its kind, step id, message and the files it writes."""

    kind: str
    step: str
    subject: str
    writes: dict[str, bytes | None]
    body: str = ""
    trailers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # One-line fields reach the subject and the trailers: a newline there
        # would split the subject or forge a trailer (Ledger-Transition: ...).
        for what, value in (("subject", self.subject), ("step", self.step), ("kind", self.kind)):
            if "\n" in value.strip() or "\r" in value:
                raise BadInput(f"the {what} of a transition must be one line", "remove the newline")
        for key, value in self.trailers:
            if "\n" in value or "\r" in value or "\n" in key:
                raise BadInput(
                    f"{key} must be one line (it becomes a commit trailer)",
                    "put multi-line text in the entry file, not in a trailer",
                )

        big = [p for p, data in self.writes.items() if data is not None and len(data) > 1 << 16]
        if big:
            # Every entry is read back with this limit: writing one over it would make the
            # step vanish from every later reading (status, next, verify), so the text
            # that would is refused before anything is written.
            from ledger.core.model.documents import MAX_ENTRY_BYTES

            for path in big:
                size = len(self.writes[path] or b"")
                if size > MAX_ENTRY_BYTES:
                    raise BadInput(
                        f"{path} would be {size} bytes, over the {MAX_ENTRY_BYTES}-byte limit "
                        "every entry is read with",
                        "shorten the text given to this verb (a file's path or a summary "
                        "instead of its content)",
                    )

    def message(self) -> str:
        lines = [self.subject.strip()]
        if self.body.strip():
            lines += ["", self.body.strip()]
        lines += ["", f"{TRAILER_TRANSITION}: {self.kind}", f"{TRAILER_STEP}: {self.step}"]
        lines += [f"{k}: {v}" for k, v in self.trailers]
        return "\n".join(lines) + "\n"


def check_entry_path(path: str) -> str:
    """A repository-relative path that stays inside the repository."""
    pure = PurePosixPath(path)
    if (
        not path
        or pure.is_absolute()
        or ".." in pure.parts
        or pure.parts[0] == ".git"
        or any(ord(c) < 32 for c in path)
    ):
        raise BadInput(f"refusing to write outside the ledger: {path!r}")
    return path


def check_identity(name: str, email: str, role: str) -> None:
    """Refuse what git refuses in an identity: a newline or angle brackets would write
    a commit object that fails ``git fsck`` and breaks every later command."""
    for what, value in (("name", name), ("email", email)):
        if any(c in value for c in "<>\n\r\0"):
            raise BadInput(
                f"the {role} {what} {value!r} contains a newline or angle brackets",
                f"fix it: git config user.{what} ... (or GIT_{role.upper()}_{what.upper()})",
            )


def check_case(
    base: pygit2.Tree | None,
    here: dict[str, bytes | None],
    below: dict[str, dict[str, bytes | None]],
    prefix: str,
) -> None:
    """Refuse a new name that differs from a name of the tree only in letter case.

    On a case-insensitive file system (macOS's default, Windows) ``seed-a.json``
    and ``seed-A.json`` are one file: the work tree could never match the
    commit. Ids, gates and cells are checked where they are named, with a
    better message; this is the guard for every other name a transition makes.
    It runs on each level of the tree a transition rebuilds, with the trees
    already loaded, and compares only names new to their directory.
    """
    made = [n for n, data in here.items() if data is not None] + list(below)
    seen: dict[str, str] = {}
    for name in made:
        if seen.setdefault(name.casefold(), name) != name:  # two names in this transition
            _case_clash(prefix + name, prefix + seen[name.casefold()])
    if base is None:
        return
    for name in made:
        if name in base:
            continue
        for twin in case_twins(base, name):
            if here.get(twin, b"") is not None:  # unless this transition deletes it
                _case_clash(prefix + name, prefix + twin)


def _case_clash(path: str, other: str) -> None:
    raise BadInput(
        f"{path} differs from {other} only in letter case",
        "on a case-insensitive file system (macOS, Windows) they would be one file: "
        "pick a name that differs in more than case",
    )
