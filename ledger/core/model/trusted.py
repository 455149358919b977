"""A model rebuilt from what this very code dumped after validating it, without
validating it again.

The entry cache keeps each entry as ``model_dump(mode="json")`` of the model that
validated its file, under a key of this program's code (:mod:`ledger.core.cache`), and
so does the configuration cache (:mod:`ledger.core.context`). Validating that data
again proves nothing new, and it is what a cold ``next``, ``status`` or ``report``
paid most for: pydantic builds a model's validator on its first use in a process
(``defer_build``), 30 ms for ``LedgerConfig`` and as much for ``VersionFront``. A
rebuilt model is equal to the validated one (``==``); it is built as
``model_construct`` builds one, nested models included, so the validators are built
only in a process that validates something new. Its lists and dicts are the kept
data's own (no copy): like the models, they are never changed in place.

Only for models whose fields are JSON's own types, other models of that kind, and
lists, dicts and optionals of them (the entries' and the configuration's: the tests
rebuild every one from a validated instance and compare).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)
_Shape = tuple[str, type[BaseModel]]  # ("one" | "list" | "dict", the nested model)
_PLANS: dict[type[BaseModel], dict[str, _Shape]] = {}


def rebuild(cls: type[M], data: Mapping[str, Any]) -> M:
    """``cls`` from ``data``, a ``model_dump(mode="json")`` of a validated ``cls``."""
    values = dict(data)
    for name, (shape, inner) in _plan(cls).items():
        value = values.get(name)
        if value is None:
            continue
        if shape == "one":
            values[name] = rebuild(inner, value)
        elif shape == "list":
            values[name] = [rebuild(inner, item) for item in value]
        else:
            values[name] = {key: rebuild(inner, item) for key, item in value.items()}
    if values.keys() != cls.model_fields.keys() or cls.__private_attributes__:
        return cls.model_construct(**values)  # a field left out: its default
    # Every field is there: what model_construct does then, without its per-field
    # default and alias handling (a tenth of a report's time at 1,000 versions).
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


_set = object.__setattr__
_DEFAULTS: dict[type[BaseModel], tuple[dict[str, Any], dict[str, Any]]] = {}


def construct(cls: type[M], **values: Any) -> M:
    """``cls`` from values this code computed from validated data, every other field at
    its default (a default factory called for each model): ``model_construct`` without
    its per-field work (22 µs a call against validation's 4 µs once the validator is
    built; a baseline history makes thousands), and no validator built."""
    known = _DEFAULTS.get(cls)
    if known is None:
        known = _DEFAULTS[cls] = (
            {
                name: field.default
                for name, field in cls.model_fields.items()
                if not field.is_required() and field.default_factory is None
            },
            {
                name: field.default_factory
                for name, field in cls.model_fields.items()
                if field.default_factory is not None
            },
        )
    defaults, factories = known
    made = {name: factory() for name, factory in factories.items() if name not in values}
    return rebuild(cls, {**defaults, **made, **values})


def plain(model: BaseModel) -> dict[str, Any]:
    """What ``model.model_dump(mode="json")`` gives for these models, without pydantic's
    serializer (built with the validator: a rebuilt model has neither)."""
    out: dict[str, Any] = {}
    for name in type(model).model_fields:
        out[name] = _plain(getattr(model, name))
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return plain(value)
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _plan(cls: type[BaseModel]) -> dict[str, _Shape]:
    """The fields of ``cls`` that hold models, and how."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = {}
        for name, field in cls.model_fields.items():
            shape = _shape(field.annotation)
            if shape is not None:
                plan[name] = shape
        _PLANS[cls] = plan
    return plan


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _shape(annotation: Any) -> _Shape | None:
    model = _model(annotation)
    if model is not None:
        return "one", model
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        shapes = [_shape(arg) for arg in args if arg is not type(None)]
        return shapes[0] if len(shapes) == 1 else None
    if origin is list and args and (model := _model(args[0])) is not None:
        return "list", model
    if origin is dict and len(args) == 2 and (model := _model(args[1])) is not None:
        return "dict", model
    return None
