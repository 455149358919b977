"""The batches loop's rules, each one pure function of the loop's state: the verb that
refuses and ``next`` that proposes ask the same function (DESIGN: a refusal and ``next``
evaluate the same preconditions on the same state).

- ``topic-withdrawn``: a topic result of the open batch withdrawn by ``git revert`` blocks
  the batch until the topic is measured again (``gate topic --remeasure --reason``);
- ``topics-missing``: a batch closes from its recorded topics only, all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ledger.core.findings import Finding
from ledger.presets.batches.loop import Batches, next_topic, topic_of

MEASURE = "--fidelity-rate X --mono true|false --endpoint true|false"


@dataclass(frozen=True)
class Withdrawn:
    """A topic measurement of batch ``batch`` that a ``git revert`` took back."""

    batch: int
    topic: str
    k: int  # which measurement (0: the first, K: the K-th re-measurement)
    commit: str  # the revert


def withdrawn_topics(notes: Iterable[Mapping[str, str]], dir_: str) -> list[Withdrawn]:
    """The topic measurements ``verify`` reports withdrawn (its ``withdrawn`` notes)."""
    out = []
    for note in notes:
        path = note.get("path", "")
        if note.get("kind") != "withdrawn" or not path.startswith(f"{dir_}/topics/"):
            continue
        where = topic_of(path)
        if where is not None:
            out.append(Withdrawn(where[0], where[1], where[2], note.get("commit", "")))
    return out


def next_k(b: Batches, n: int, topic: str, withdrawn: Iterable[Withdrawn]) -> int:
    """The number of the topic's next measurement: past every one recorded or withdrawn,
    so a path once written is never written again."""
    ks = [int(t.get("k", 0)) for t in b.done_topics(n) if t["topic"] == topic]
    ks += [w.k for w in withdrawn if w.batch == n and w.topic == topic]
    return max(ks) + 1 if ks else 0


def pending_withdrawn(b: Batches, n: int, withdrawn: Iterable[Withdrawn]) -> list[Withdrawn]:
    """Withdrawn measurements of batch ``n`` that no later measurement replaced."""
    current = {str(t["topic"]): int(t.get("k", 0)) for t in b.done_topics(n)}
    pending: dict[str, Withdrawn] = {}
    for w in withdrawn:
        if w.batch == n and current.get(w.topic, -1) <= w.k:
            pending[w.topic] = w
    return [pending[t] for t in sorted(pending)]


def remeasure_command(topic: str) -> str:
    return f"git ledger gate topic --record --remeasure --topic {topic} --reason TEXT {MEASURE}"


def close_blockers(
    b: Batches, n: int, topics_per_batch: int, withdrawn: Iterable[Withdrawn]
) -> list[Finding]:
    """Why batch ``n`` cannot be closed now (empty: ``gate batch --record`` may close it)."""
    found = [
        Finding(
            "topic-withdrawn",
            f"topic {w.topic} of batch {n} was withdrawn by a revert ({w.commit[:10]}); "
            "the batch waits until it is measured again",
            remeasure_command(w.topic),
        )
        for w in pending_withdrawn(b, n, withdrawn)
    ]
    done = b.done_topics(n)
    if len(done) < topics_per_batch:
        topic, _ = next_topic(done)
        found.append(
            Finding(
                "topics-missing",
                f"batch {n} has {len(done)} of {topics_per_batch} topics recorded; "
                "a batch closes from its recorded topics only",
                f"git ledger gate topic --record --topic {topic} {MEASURE}",
            )
        )
    return found


def topic_flags(b: Batches, n: int) -> list[bool]:
    """The batch's flags, read from its recorded topics (in the order they were measured)."""
    return [bool(t["pass"]) for t in b.done_topics(n)]
