"""The first field where two results files differ, so a user knows which producer to chase."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Divergence:
    path: str
    left: Any
    right: Any

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


def first_divergence(
    left: Any,
    right: Any,
    path: str = "$",
    ignore: frozenset[str] = frozenset(),
    key: tuple[str, ...] = (),
) -> Divergence | None:
    """Depth-first, keys in sorted order: the first JSON path whose values differ.

    Keys named in ``ignore`` (volatile fields such as a wall time) are skipped
    at any depth. With ``key`` (e.g. cycle, symbol, side), arrays of records that
    all carry those fields are aligned by them before comparing, so one inserted
    record does not make every later one differ.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        for name in sorted((set(left) | set(right)) - ignore):
            sub = f"{path}.{name}"
            if name not in left or name not in right:
                return Divergence(sub, left.get(name, _MISSING), right.get(name, _MISSING))
            found = first_divergence(left[name], right[name], sub, ignore, key)
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list) and key:
        a, b = _keyed(left, key), _keyed(right, key)
        if a is not None and b is not None:
            order = list(a) + [k for k in b if k not in a]
            for k in order:
                label = ",".join(f"{n}={v}" for n, v in zip(key, k, strict=True))
                sub = f"{path}[{label}]"
                if k not in a or k not in b:
                    return Divergence(sub, a.get(k, _MISSING), b.get(k, _MISSING))
                found = first_divergence(a[k], b[k], sub, ignore, key)
                if found:
                    return found
            return None
    if isinstance(left, list) and isinstance(right, list):
        for i, (a, b) in enumerate(zip(left, right, strict=False)):
            found = first_divergence(a, b, f"{path}[{i}]", ignore, key)
            if found:
                return found
        if len(left) != len(right):
            i = min(len(left), len(right))
            return Divergence(
                f"{path}[{i}]",
                left[i] if i < len(left) else _MISSING,
                right[i] if i < len(right) else _MISSING,
            )
        return None
    if type(left) is not type(right) or left != right:
        return Divergence(path, left, right)
    return None
