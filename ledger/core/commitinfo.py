"""A commit as the history rules read it (id, parents, message, trailers): standard
library only, so ``verify``'s incremental path imports neither pygit2 nor pydantic."""

from __future__ import annotations

import re
from typing import NamedTuple

TRAILER_TRANSITION = "Ledger-Transition"
TRAILER_STEP = "Ledger-Step"
# Why a setting that judges changed, or a fact was taken back (config set, void).
TRAILER_REASON = "Ledger-Reason"
_TRAILER_LINE = re.compile(r"^([A-Za-z0-9-]+):[ \t]*(.*)$")


class CommitInfo(NamedTuple):
    """A NamedTuple, not a dataclass: importing dataclasses (and inspect, ast, dis)
    costs an incremental ``verify`` a fifth of its time."""

    id: str
    parents: tuple[str, ...]
    message: str
    time: int
    author: str
    trailers: tuple[tuple[str, str], ...]

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    def trailer(self, key: str) -> str | None:
        for k, v in self.trailers:
            if k.lower() == key.lower():
                return v
        return None


def parse_trailers(message: str) -> tuple[tuple[str, str], ...]:
    """Trailers of the last paragraph, repeated keys kept (unlike message_trailers)."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if len(paragraphs) < 2:
        return ()
    found = []
    for line in paragraphs[-1].splitlines():
        match = _TRAILER_LINE.match(line.strip())
        if not match:
            return ()
        found.append((match.group(1), match.group(2).strip()))
    return tuple(found)
