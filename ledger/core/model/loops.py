"""The shared base and parser of the loops' typed entry models (one file per fact).

Each preset that keeps JSON entries owns its models (``ledger.presets.campaign.models``,
``ledger.presets.batches.models``); they derive from :class:`LoopEntry` and are
read through :func:`parse_entry`, so a file that does not parse is a listed
problem (status, finish, doctor), never a silently dropped entry.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ledger.core.errors import BadInput
from ledger.core.model.documents import load_json


class LoopEntry(BaseModel):
    """A loop's entry file: no unknown field, immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


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
