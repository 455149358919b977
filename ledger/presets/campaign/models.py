"""Typed entry models of the campaign loop (one file per fact).

Every entry file under the campaign's directory is parsed by one of these
(:func:`ledger.core.model.loops.parse_entry`); one that does not parse is a
listed problem, never a silently dropped entry.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ledger.core.model.loops import LoopEntry


class CandidateEntry(LoopEntry):
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    seq: int = Field(ge=1)
    epoch: int = Field(ge=0)
    verdict: str = Field(pattern=r"^(base|promoted|rejected|held)$")
    reason: str = ""
    measurements: dict[str, float | str]
    notes: str = ""
    repeats: dict[str, list[float]] = Field(default_factory=dict)
    comparison: dict[str, Any] | None = None
    # What the candidate changes, from git at record time (ledger.presets.campaign.invasive).
    kind: str = Field(default="code", pattern=r"^(setting|dependency|code)$")
    diff: dict[str, int] | None = None
    larger_diff_reason: str = ""
    # How it was measured when the tool ran the measuring command ([campaign] run).
    provenance: dict[str, Any] | None = None


class AdjustmentEntry(LoopEntry):
    epoch: int = Field(ge=1)
    reason: str = Field(min_length=1)


class MistakeEntry(LoopEntry):
    seq: int = Field(ge=1)
    text: str = Field(min_length=1)
    caught_by: str = Field(min_length=1)
    should_have_caught: str = Field(min_length=1)


class OwnerEntry(LoopEntry):
    armed: bool
    owner: str = Field(min_length=1)
    forced: list[dict[str, str]] = Field(default_factory=list)
