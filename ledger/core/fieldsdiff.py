"""Where two results files differ, so a user knows which producer to chase: the first
divergent field, and how many fields and rows (records of an array) diverge."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Divergence:
    path: str
    left: Any
    right: Any
    # The record of the outermost array the field sits in (None: not inside an array).
    row: str | None = field(default=None, compare=False)

    def describe(self) -> str:
        def show(value: Any) -> str:
            if isinstance(value, float):
                return f"{value!r} ({value.hex()})"
            return "(missing)" if value is _MISSING else repr(value)

        return f"{self.path}: {show(self.left)} != {show(self.right)}"


_MISSING: Any = object()


def _keyed(items: list[Any], key: tuple[str, ...]) -> dict[tuple[str, ...], Any] | None:
    """Records of an array by their key fields (None: not an array of such records)."""
    out: dict[tuple[str, ...], Any] = {}
    for item in items:
        if not isinstance(item, dict) or any(k not in item for k in key):
            return None
        out[tuple(json.dumps(item[k], sort_keys=True) for k in key)] = item
    return out if len(out) == len(items) else None


def divergences(
    left: Any,
    right: Any,
    path: str = "$",
    ignore: frozenset[str] = frozenset(),
    key: tuple[str, ...] = (),
    row: str | None = None,
) -> Iterator[Divergence]:
    """Depth-first, keys in sorted order: every JSON path whose values differ.

    Keys named in ``ignore`` (volatile fields such as a wall time) are skipped
    at any depth. With ``key`` (e.g. cycle, symbol, side), arrays of records that
    all carry those fields are aligned by them before comparing, so one inserted
    record does not make every later one differ.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        for name in sorted((set(left) | set(right)) - ignore):
            sub = f"{path}.{name}"
            if name not in left or name not in right:
                yield Divergence(sub, left.get(name, _MISSING), right.get(name, _MISSING), row)
                continue
            yield from divergences(left[name], right[name], sub, ignore, key, row)
        return
    if isinstance(left, list) and isinstance(right, list) and key:
        a, b = _keyed(left, key), _keyed(right, key)
        if a is not None and b is not None:
            order = list(a) + [k for k in b if k not in a]
            for k in order:
                label = ",".join(f"{n}={v}" for n, v in zip(key, k, strict=True))
                sub = f"{path}[{label}]"
                here = row or sub
                if k not in a or k not in b:
                    yield Divergence(sub, a.get(k, _MISSING), b.get(k, _MISSING), here)
                    continue
                yield from divergences(a[k], b[k], sub, ignore, key, here)
            return
    if isinstance(left, list) and isinstance(right, list):
        for i, (a, b) in enumerate(zip(left, right, strict=False)):
            sub = f"{path}[{i}]"
            yield from divergences(a, b, sub, ignore, key, row or sub)
        for i in range(min(len(left), len(right)), max(len(left), len(right))):
            sub = f"{path}[{i}]"
            yield Divergence(
                sub,
                left[i] if i < len(left) else _MISSING,
                right[i] if i < len(right) else _MISSING,
                row or sub,
            )
        return
    if type(left) is not type(right) or left != right:
        yield Divergence(path, left, right, row)


def first_divergence(
    left: Any,
    right: Any,
    path: str = "$",
    ignore: frozenset[str] = frozenset(),
    key: tuple[str, ...] = (),
) -> Divergence | None:
    """The first JSON path whose values differ (see :func:`divergences`)."""
    return next(divergences(left, right, path, ignore, key), None)


@dataclass(frozen=True)
class Summary:
    """How far two files diverge: the count of fields and rows, and the first few."""

    fields: int
    rows: int
    first: tuple[Divergence, ...]


def summarize(left: Any, right: Any, key: tuple[str, ...] = (), limit: int = 10) -> Summary:
    """Every divergence counted (one pass), the first ``limit`` kept."""
    count = 0
    rows: set[str] = set()
    first: list[Divergence] = []
    for found in divergences(left, right, key=key):
        count += 1
        if found.row is not None:
            rows.add(found.row)
        if len(first) < limit:
            first.append(found)
    return Summary(count, len(rows), tuple(first))
