"""The batches loop's facts (:mod:`ledger.core.facts`): a topic's gate (batch, topic and
re-measurement, the name of ``topics/batch-N/T[~K].json``), a batch's close
(``gates/batch-N.json``), a weight revision (``weights/batch-N.json``) and its record
(``revisions/batch-N.json``), each valued by its bytes: one file per fact, added once,
so its path is its key. And each trace event, by its trace and ``seq``, valued by its
line: a trace is appended to, so two sides that append the same ``seq`` wrote it twice."""

from __future__ import annotations

import json

from ledger.core.facts import Fact, FactFn, FactReader, by_path
from ledger.presets.batches.history import line_id


def trace_facts(reader: FactReader, rel: str, blob: str) -> list[Fact]:
    name = rel.rsplit("/", 1)[-1].removesuffix(".jsonl")
    found = []
    for line in reader.read_blob(blob).decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # trace-unparseable: judged where it was written
        if isinstance(event, dict) and isinstance(event.get("seq"), int):
            found.append(Fact(f"trace event {name} {event['seq']}", line_id(line)))
    return found


FACTS: list[tuple[str, FactFn]] = [
    ("topics/**", by_path("topic")),
    ("gates/batch-*.json", by_path("batch close")),
    ("weights/batch-*.json", by_path("weight revision")),
    ("revisions/batch-*.json", by_path("revision")),
    ("trace/*.jsonl", trace_facts),
]
