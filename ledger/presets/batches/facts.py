"""The batches loop's facts (:mod:`ledger.core.facts`): a topic's gate (batch, topic and
re-measurement, the name of ``topics/batch-N/T[~K].json``), a batch's close
(``gates/batch-N.json``), a weight revision (``weights/batch-N.json``) and its record
(``revisions/batch-N.json``), each valued by its bytes: one file per fact, added once,
so its path is its key."""

from __future__ import annotations

from ledger.core.facts import FactFn, by_path

FACTS: list[tuple[str, FactFn]] = [
    ("topics/**", by_path("topic")),
    ("gates/batch-*.json", by_path("batch close")),
    ("weights/batch-*.json", by_path("weight revision")),
    ("revisions/batch-*.json", by_path("revision")),
]
