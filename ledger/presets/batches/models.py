"""Typed entry models of the batches loop (one file per fact).

Every entry file under the loop's directory is parsed by one of these
(:func:`ledger.core.model.loops.parse_entry`); one that does not parse is a
listed problem, never a silently dropped entry.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ledger.core.model.loops import LoopEntry


class Thresholds(LoopEntry):
    fidelity_min: float = Field(ge=0, le=1)
    batch_ratio_min: float = Field(ge=0, le=1)
    hard_line: int = Field(ge=0)
    topics_per_batch: int = Field(ge=1)
    converge_k: int = Field(ge=1)


class WeightsMeta(LoopEntry):
    frozen: list[str] = Field(default_factory=list)
    run_id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
    thresholds: Thresholds | None = None
    converged: int | None = None
    # The forbidden vocabulary, frozen at ``weights init`` (``weights vocabulary`` changes it).
    vocabulary: list[str] | None = None


class BatchGateEntry(LoopEntry):
    batch: int = Field(ge=0)
    inputs: dict[str, Any]
    ratio: float = Field(ge=0, le=1)
    thresholds: dict[str, Any]
    rule: str
    # "pass" is a keyword: read through the alias.
    passed: bool = Field(alias="pass")


class Remeasure(LoopEntry):
    """Why a topic was measured again (``gate topic --remeasure``), and what it replaced."""

    k: int = Field(ge=1)
    reason: str = Field(min_length=1)
    previous: dict[str, Any] | None = None


class TopicEntry(LoopEntry):
    batch: int = Field(ge=0)
    topic: str = Field(min_length=1)
    seq: int = Field(default=0, ge=0)
    inputs: dict[str, Any]
    thresholds: dict[str, Any]
    rule: str
    passed: bool = Field(alias="pass")
    remeasure: Remeasure | None = None


class RevisionEntry(LoopEntry):
    batch: int = Field(ge=0)
    target: str
    key: str
    old: Any = None
    new: Any = None
    reason: str = Field(min_length=1)
    # The topic and the decision table's signal the revision answers (``--topic``/``--signal``).
    topic: str | None = None
    signal: str | None = None
