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


# The document's decision table (§backprop): each signal a closed batch's topics show,
# in priority order (loss-1 > loss-2 middle collision > whole card), and the target
# weight that answers it. Endpoints not separated with the rigor-floor flag set is an
# alarm only: it permits a copy, never a revision; a topic whose z⊥C confound check is
# not flat has its loss-2 void (no weight is revised on it that batch).
TABLE = (
    ("loss-1", "axis_prose"),
    ("loss-2-middle", "interp_params"),
    ("loss-2-endpoints", "axis_prose"),
    ("whole-card", "assembler_params"),
)
SIGNALS = tuple(name for name, _ in TABLE)


def topic_signals(t: Mapping[str, object], fidelity_min: float) -> list[str]:
    """The failure signals one recorded topic shows (void and alarm-only ones left out)."""
    inputs = t.get("inputs")
    if not isinstance(inputs, dict):
        return []
    found = []
    if float(inputs.get("fidelity_rate", 1.0)) < fidelity_min:
        found.append("loss-1")
    if inputs.get("confound", "flat") == "flat":
        mono, ends = bool(inputs.get("monotonicity")), bool(inputs.get("endpoints"))
        if ends and not mono:
            found.append("loss-2-middle")
        if not ends and not inputs.get("rigor_floor_flag"):
            found.append("loss-2-endpoints")
    return found


def alarms(b: Batches, n: int) -> list[str]:
    """Topics of batch ``n`` whose endpoints are not separated with the rigor floor set."""
    out = []
    for t in b.done_topics(n):
        inputs = t.get("inputs") or {}
        if not inputs.get("endpoints") and inputs.get("rigor_floor_flag"):
            out.append(str(t["topic"]))
    return out


def batch_signals(b: Batches, n: int, fidelity_min: float) -> list[tuple[str, str]]:
    """(signal, topic) of batch ``n`` in the decision table's priority order; the whole
    card when half the topics or more fail both losses."""
    found = [(s, str(t["topic"])) for t in b.done_topics(n) for s in topic_signals(t, fidelity_min)]
    double = [
        t for t in b.done_topics(n)
        if "loss-1" in topic_signals(t, fidelity_min) and len(topic_signals(t, fidelity_min)) > 1
    ]  # fmt: skip
    if double and 2 * len(double) >= max(1, len(b.done_topics(n))):
        found.append(("whole-card", "*"))
    return sorted(found, key=lambda st: SIGNALS.index(st[0]))


def revise_blockers(
    b: Batches, n: int, fidelity_min: float, topic: str | None, signal: str | None
) -> list[Finding]:
    """Why a revision of closed batch ``n`` naming ``topic``/``signal`` is refused."""
    shown = batch_signals(b, n, fidelity_min)
    if not shown and alarms(b, n):
        return [
            Finding(
                "rigor-floor-alarm",
                f"batch {n}'s only failures are endpoints not separated with the rigor-floor "
                f"flag set ({', '.join(alarms(b, n))}): an alarm, which permits only a copy",
                "git ledger weights copy",
            )
        ]
    if topic is None and signal is None:
        return []
    if signal is not None and signal not in SIGNALS:
        return [Finding("unknown-signal", f"--signal {signal}", f"one of {', '.join(SIGNALS)}")]
    entry = next((t for t in b.done_topics(n) if t["topic"] == topic), None)
    if topic not in (None, "*") and entry is None:
        return [Finding("unknown-topic", f"batch {n} has no topic {topic}", "git ledger resume")]
    inputs = (entry or {}).get("inputs") or {}
    if (
        entry is not None
        and inputs.get("confound", "flat") != "flat"
        and (signal or "").startswith("loss-2")
    ):
        return [
            Finding(
                "confound-void",
                f"topic {topic}'s z⊥C confound check is not flat: its loss-2 is void and no "
                f"weight is revised on it in batch {n}",
                "answer another topic's signal, or git ledger weights copy",
            )
        ]
    if (signal, topic) not in shown and not (signal is None and any(t == topic for _, t in shown)):
        return [
            Finding(
                "signal-not-shown",
                f"batch {n} does not show {signal or 'a signal'} on topic {topic}",
                "name a topic and signal the batch shows (git ledger next proposes one)",
            )
        ]
    return []
