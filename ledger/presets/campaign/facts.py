"""The campaign loop's facts (:mod:`ledger.core.facts`): a candidate's verdict (its
commit and benchmark epoch, the name of ``candidates/<commit12>-e<epoch>.json``), a
benchmark adjustment (its epoch) and the contract, each valued by its bytes: one file
per fact, added once, so its path is its key."""

from __future__ import annotations

from ledger.core.facts import FactFn, by_path

FACTS: list[tuple[str, FactFn]] = [
    ("candidates/*.json", by_path("candidate verdict")),
    ("benchmark/*.json", by_path("benchmark epoch")),
    ("contract.md", by_path("contract")),
]
