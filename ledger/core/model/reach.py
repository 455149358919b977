"""Which configuration keys reach outside the ledger, read from the model's declaration.

A field of :class:`ledger.core.model.config.LedgerConfig` (or of a table under it) that
names a program, an argument list, a script or a place outside the ledger carries a
:class:`~ledger.core.model.config.PersonOnly` mark where it is declared. This module
answers, for a dotted key as ``config set`` takes it, whether setting it would set
such a field: the field itself, a value inside it (``campaign.environment.cc``), or a
whole table holding one (``run``, ``gates.fast``). A table added later is covered as
soon as its fields are marked; there is no list of names to keep in step.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from ledger.core.model.config import LedgerConfig, PersonOnly


def _mark(metadata: Any) -> PersonOnly | None:
    return next((m for m in metadata if isinstance(m, PersonOnly)), None)


def _unwrap(annotation: Any) -> tuple[Any, PersonOnly | None]:
    """``X`` out of ``Annotated[X, ...]`` and ``X | None``; a mark found on the way."""
    mark = None
    while True:
        metadata = getattr(annotation, "__metadata__", None)
        if metadata is not None:
            mark = mark or _mark(metadata)
            annotation = annotation.__origin__
            continue
        if get_origin(annotation) in (types.UnionType, Union):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
                continue
        return annotation, mark


def _model(annotation: Any) -> type[BaseModel] | None:
    return (
        annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
    )


def _dict_value(annotation: Any) -> Any | None:
    """``X`` of ``dict[str, X]``; None for anything else."""
    if get_origin(annotation) is dict:
        return get_args(annotation)[1]
    return None


def marked_fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, PersonOnly]]:
    """Every marked field under ``model`` as (dotted key, mark); ``*`` for a free key."""
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        yield from _marked(field, key)


def _marked(field: FieldInfo, key: str) -> Iterator[tuple[str, PersonOnly]]:
    annotation, mark = _unwrap(field.annotation)
    mark = mark or _mark(field.metadata)
    if mark is not None:
        yield key, mark
        return
    yield from _marked_type(annotation, key)


def _marked_type(annotation: Any, key: str) -> Iterator[tuple[str, PersonOnly]]:
    annotation, mark = _unwrap(annotation)
    if mark is not None:
        yield key, mark
        return
    inner = _model(annotation)
    if inner is not None:
        yield from marked_fields(inner, f"{key}.")
        return
    value = _dict_value(annotation)
    if value is not None:
        yield from _marked_type(value, f"{key}.*")


class Reach(NamedTuple):
    """What setting a key would set that a person must: the marked field (``*`` for a
    free key such as a gate's name), why, and whether the key names a table above it."""

    key: str
    why: str
    table: bool


def person_only(key: str) -> Reach | None:
    """The person's field that setting ``key`` would set, or None.

    ``key`` is dotted as ``config set`` takes it (quotes around a part are dropped).
    A key the model does not know is None here: ``config set`` refuses it as unknown.
    """
    parts = [part.strip().strip('"').strip("'") for part in key.split(".")]
    annotation: Any = LedgerConfig
    walked: list[str] = []
    for part in parts:
        annotation, mark = _unwrap(annotation)
        if mark is not None:  # a value inside a marked field (campaign.environment.cc)
            return Reach(".".join(walked), mark.why, table=False)
        model = _model(annotation)
        if model is not None:
            field = model.model_fields.get(part)
            if field is None:
                return None
            walked.append(part)
            mark = _mark(field.metadata)
            if mark is not None:
                return Reach(".".join(walked), mark.why, table=False)
            annotation = field.annotation
            continue
        value = _dict_value(annotation)
        if value is None:
            return None  # inside a plain value: config set refuses it
        walked.append("*")
        annotation = value
    # The key names a value, or a whole table (set as an inline table): is anything
    # under it marked?
    annotation, mark = _unwrap(annotation)
    if mark is not None:
        return Reach(".".join(walked), mark.why, table=False)
    found = next(iter(_marked_type(annotation, ".".join(walked))), None)
    return None if found is None else Reach(found[0], found[1].why, table=True)
