"""Typed entry models of the campaign and batches loops (one file per fact).

Every entry file of those presets is parsed by one of these models; a file
that does not parse is a listed problem (status, finish, doctor), never a
silently dropped entry.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ledger.core.errors import BadInput
from ledger.core.model.documents import load_json


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


# --- campaign -------------------------------------------------------------------


class CandidateEntry(_Entry):
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    seq: int = Field(ge=1)
    epoch: int = Field(ge=0)
    verdict: str = Field(pattern=r"^(base|promoted|rejected|held)$")
    reason: str = ""
    measurements: dict[str, float | str]
    notes: str = ""


class AdjustmentEntry(_Entry):
    epoch: int = Field(ge=1)
    reason: str = Field(min_length=1)


class MistakeEntry(_Entry):
    seq: int = Field(ge=1)
    text: str = Field(min_length=1)
    caught_by: str = Field(min_length=1)
    should_have_caught: str = Field(min_length=1)


class OwnerEntry(_Entry):
    armed: bool
    owner: str = Field(min_length=1)
    forced: list[dict[str, str]] = Field(default_factory=list)


# --- batches --------------------------------------------------------------------


class Thresholds(_Entry):
    fidelity_min: float = Field(ge=0, le=1)
    batch_ratio_min: float = Field(ge=0, le=1)
    hard_line: int = Field(ge=0)
    topics_per_batch: int = Field(ge=1)
    converge_k: int = Field(ge=1)


class WeightsMeta(_Entry):
    frozen: list[str] = Field(default_factory=list)
    run_id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
    thresholds: Thresholds | None = None
    converged: int | None = None


class BatchGateEntry(_Entry):
    batch: int = Field(ge=0)
    inputs: dict[str, Any]
    ratio: float = Field(ge=0, le=1)
    thresholds: dict[str, Any]
    rule: str
    # "pass" is a keyword: read through the alias.
    passed: bool = Field(alias="pass")


class TopicEntry(_Entry):
    batch: int = Field(ge=0)
    topic: str = Field(min_length=1)
    seq: int = Field(default=0, ge=0)
    inputs: dict[str, Any]
    thresholds: dict[str, Any]
    rule: str
    passed: bool = Field(alias="pass")


class RevisionEntry(_Entry):
    batch: int = Field(ge=0)
    target: str
    key: str
    old: Any = None
    new: Any = None
    reason: str = Field(min_length=1)


M = TypeVar("M", bound=BaseModel)


def parse_entry(model: type[M], data: bytes, path: str) -> M:
    """``data`` as ``model``; a one-line BadInput naming the first wrong field."""
    raw = load_json(data, path)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise BadInput(f"{path}: {where}: {first['msg']}", "fix the file or restore it") from None
