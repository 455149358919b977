"""Facts: what a ledger recorded, each under a key that exists once in all of history.

A loop's truth is the set of facts ever recorded in the history that reaches a commit,
not one branch's tree: a result (step, gate, seed or window), a verdict (step), a
candidate's verdict (commit, epoch), a topic's gate (batch, topic), a batch's close, a
weight revision (batch), a registration. Each preset declares its kinds of facts
(:meth:`ledger.core.loops.Preset.fact_kinds`): a glob inside the ledger dir and a
function from one entry blob to the facts it holds, each a key and a value digest.
``verify`` folds them over every parent of every merge
(:mod:`ledger.core.verify.facts`), so a second value for a key, or a fact a merge
lost, is a finding whatever merge strategy made it.

Standard library only: ``verify``'s light path declares and reads facts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol


class Fact(NamedTuple):
    """One fact an entry holds: its key, a digest of its value and the step it taints."""

    key: str
    value: str
    step: str = ""


class FactReader(Protocol):
    """What a fact function may read: blobs, parsed entries (cached by blob id), the id
    grammar's prefix."""

    prefix: str

    def read_blob(self, blob: str) -> bytes: ...

    def parse(self, kind: str, blob: str, path: str) -> dict[str, Any] | str: ...


# (reader, rel path inside the ledger dir, blob id) -> the facts that blob holds there.
FactFn = Callable[[FactReader, str, str], list[Fact]]


def by_path(kind: str, step: Callable[[str], str] | None = None) -> FactFn:
    """Facts keyed by their path (the entry's name is its key, as one file per fact
    makes it), valued by the blob itself: nothing is read."""

    def facts(_reader: FactReader, rel: str, blob: str) -> list[Fact]:
        name = rel.rsplit(".", 1)[0] if "." in rel.rsplit("/", 1)[-1] else rel
        return [Fact(f"{kind} {name}", blob, step(rel) if step else "")]

    return facts


def digest(value: object) -> str:
    """A short, stable digest of a parsed value (canonical JSON)."""
    import hashlib
    import json

    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
