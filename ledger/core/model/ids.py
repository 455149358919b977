"""Step ids: validated like git ref names and always kept inside the ledger dir.

An id ends up in a file name, a branch name and a commit trailer, so it must be
safe in all three: no ``..``, no ``/``, no leading ``-`` (it would read as an
option), no ``.lock`` suffix (git's lock files), no control characters or shell
metacharacters. Nor may it differ from a name already taken only in letter
case (:func:`case_twin`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ledger.core.errors import BadInput
from ledger.core.repobase import split_version

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def one_line(value: str | None, option: str) -> str:
    """A value that goes into a subject or a trailer: present and one line."""
    text = (value or "").strip()
    if not text:
        raise BadInput(f"{option} is empty", f"say why: {option} TEXT")
    if "\n" in text or "\r" in text:
        raise BadInput(
            f"{option} must be one line (it goes into the commit's subject or trailers)",
            "put longer text in the entry file",
        )
    return text


def check_safe(value: str, what: str = "id") -> str:
    """Refuse anything that could escape a directory or confuse git."""
    if not _SAFE.match(value) or ".." in value or value.endswith(".lock") or value.endswith("."):
        shown = value.encode("unicode_escape").decode("ascii")
        raise BadInput(
            f"invalid {what} {shown!r}",
            "use letters, digits, '_', '-' and '.', starting with a letter or digit",
        )
    return value


@dataclass(frozen=True, order=True)
class VersionId:
    """``V200``, a sibling ``V200a``, or a matrix cell ``V213.A``."""

    prefix: str
    number: int
    sibling: str = ""
    cell: str = ""

    def __str__(self) -> str:
        text = f"{self.prefix}{self.number}{self.sibling}"
        return f"{text}.{self.cell}" if self.cell else text

    @property
    def base(self) -> VersionId:
        """The version without its cell part."""
        return VersionId(self.prefix, self.number, self.sibling)

    def next_number(self) -> VersionId:
        return VersionId(self.prefix, self.number + 1)

    def with_sibling(self, sibling: str) -> VersionId:
        return VersionId(self.prefix, self.number, sibling)


def parse_version(value: str, prefix: str) -> VersionId:
    check_safe(value, "version id")
    parsed = try_parse_version(value, prefix)
    if parsed is None:
        raise BadInput(
            f"invalid version id {value!r}",
            f"expected {prefix}<number> with an optional sibling letter, e.g. {prefix}200 "
            f"or {prefix}200a (cells: {prefix}213.A)",
        )
    return parsed


@functools.lru_cache(maxsize=1 << 16)
def try_parse_version(value: str, prefix: str) -> VersionId | None:
    """The grammar lives in :func:`ledger.core.repobase.split_version` (the hooks read ids too).

    Remembered (a VersionId is frozen): a report at 1,000 versions parses the same ids
    tens of thousands of times (sorting, each commit of history that names a step)."""
    parts = split_version(value, prefix)
    return None if parts is None else VersionId(prefix, *parts)


def case_twin(name: str, taken: Iterable[str]) -> str | None:
    """A name in ``taken`` that differs from ``name`` only in letter case, if any.

    Ids and names become file and branch names. On a case-insensitive file
    system (macOS's default APFS, Windows) ``V2a.md`` and ``V2A.md`` are one
    file, and ``refs/heads/ledger/V3.Ab`` and ``.../V3.AB`` one ref.
    """
    folded = name.casefold()
    return next((t for t in taken if t != name and t.casefold() == folded), None)


def check_case_unique(name: str, taken: Iterable[str], what: str) -> str:
    """Refuse ``name`` when it differs from one in ``taken`` only in letter case."""
    twin = case_twin(name, taken)
    if twin is not None:
        raise BadInput(
            f"{what} {name!r} differs from {twin!r} only in letter case",
            "on a case-insensitive file system (macOS, Windows) they would be one file: "
            "pick a name that differs in more than case",
        )
    return name


def next_sibling(taken: set[str], base: VersionId) -> VersionId:
    """The next free sibling id of ``base``: V200 -> V200a -> V200b ..."""
    for letter in "abcdefghijklmnopqrstuvwxyz":
        candidate = base.with_sibling(letter)
        if str(candidate) not in taken:
            return candidate
    raise BadInput(f"no free sibling id left for {base}", "pick an explicit id")
