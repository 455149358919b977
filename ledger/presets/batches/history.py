"""The batches loop's rules on what history says, beyond which transition may write a path
(:meth:`ledger.presets.batches.preset.BatchesPreset.history_rules`): ``verify`` runs
them on every commit (:meth:`ledger.core.loops.Preset.history_checks`), and the verbs run
:func:`trace_lines` on the trace that is about to ride along with a transition.

- ``trace-transitions-only``: trace events enter history only with a batches transition
  (they ride along with it; DESIGN: trace events are not transitions);
- ``trace-append-only``: a committed trace line is never changed or removed (a whole
  ``git revert`` of the transition that carried it excepted);
- ``trace-seq``: each line's ``seq`` is one past the line before (never reused);
- ``trace-after-run-end``: nothing follows a ``run_end`` event;
- ``meta-frozen``: ``weights/meta.json`` is written once by ``weights init``; the
  ``converged`` transition only adds ``converged`` and ``weights vocabulary`` only
  changes ``vocabulary`` (the frozen targets, the run id and the thresholds never change).

Pure: bytes in, ``(rule, message, fix)`` out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

Check = Callable[[str | None, bytes | None, bytes | None, bool], list[tuple[str, str, str]]]

# Every transition of the loop; trace events ride along with any of them.
TRANSITIONS = frozenset(
    {
        "weights-init",
        "weights-revise",
        "weights-copy",
        "topic",
        "topic-remeasure",
        "batch-close",
        "converged",
        "vocabulary",
    }
)


def line_id(line: str) -> str:
    """The digest by which the verbs remember a trace line they wrote."""
    return hashlib.sha256(line.strip().encode()).hexdigest()


def trace_lines(old: str, new: str, known: set[str] | None = None) -> list[tuple[str, str, str]]:
    """What is wrong with the lines ``new`` adds to ``old``: a change to a line already
    there, a line that is not an event, a ``seq`` that is not one past the last, an
    event after ``run_end``; with ``known`` (the digests of the lines the verbs wrote),
    a line none of them wrote."""
    if not new.startswith(old):
        return [
            (
                "trace-append-only",
                "committed trace lines were changed or removed; a trace is only appended to",
                "restore the committed trace (git checkout -- TRACE) and emit again",
            )
        ]
    seq, ended = _last(old)
    found = []
    for line in new[len(old) :].splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("seq"), int):
            found.append(("trace-unparseable", f"{line[:60]!r} is not a trace event", _FIX))
            continue
        name = f"event {event.get('event')!r} (seq {event['seq']})"
        if known is not None and line_id(line) not in known:
            found.append(
                (
                    "trace-hand-written",
                    f"{name} was not written by git ledger trace emit or a batches verb",
                    _FIX,
                )
            )
        if ended:
            found.append(("trace-after-run-end", f"{name} follows the run's run_end", _FIX))
        if event["seq"] != seq + 1:
            found.append(
                ("trace-seq", f"{name}: seq {event['seq']} where {seq + 1} comes next", _FIX)
            )
        seq = max(seq, event["seq"])
        ended = ended or event.get("event") == "run_end"
    return found


_FIX = "remove the line from the trace file; trace events come only from 'git ledger trace emit'"


def _last(text: str) -> tuple[int, bool]:
    """The last ``seq`` of a trace, and whether it has ended (a ``run_end`` event)."""
    seq, ended = 0, False
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("seq"), int):
            seq = max(seq, event["seq"])
            ended = ended or event.get("event") == "run_end"
    return seq, ended


def ended(text: str) -> bool:
    return _last(text)[1]


def check_trace(
    kind: str | None, old: bytes | None, new: bytes | None, undoes: bool
) -> list[tuple[str, str, str]]:
    if undoes:
        return []  # a whole revert of the transition that carried these lines
    if kind not in TRANSITIONS:
        return [
            (
                "trace-transitions-only",
                f"trace lines were committed outside a batches transition "
                f"(this commit: {kind or 'none'}); they ride along with the next one",
                "restore the trace (git revert the commit) and emit with git ledger trace emit",
            )
        ]
    if new is None:
        return [("trace-append-only", "the trace was deleted; it is only appended to", _FIX)]
    return trace_lines(_text(old), _text(new))


def check_meta(
    kind: str | None, old: bytes | None, new: bytes | None, undoes: bool
) -> list[tuple[str, str, str]]:
    if undoes or kind not in ("weights-init", "converged", "vocabulary"):
        return []  # the transitions-only rule speaks for a hand edit
    before, after = _json(old), _json(new)
    if kind == "weights-init" and old is not None:
        return [("meta-frozen", "weights init rewrote weights/meta.json", _META_FIX)]
    if kind in ("converged", "vocabulary"):
        drop = {kind}
        same = {k: v for k, v in before.items() if k not in drop} == {
            k: v for k, v in after.items() if k not in drop
        }
        if not same:
            return [
                (
                    "meta-frozen",
                    f"the {kind} transition changed weights/meta.json beyond '{kind}' "
                    "(frozen targets, run id, thresholds or vocabulary)",
                    _META_FIX,
                )
            ]
    return []


_META_FIX = "restore weights/meta.json as weights init wrote it (git revert the commit)"


def _text(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _json(data: bytes | None) -> dict[str, Any]:
    try:
        value = json.loads(data or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


CHECKS: dict[str, Check] = {"trace/*.jsonl": check_trace, "weights/meta.json": check_meta}
