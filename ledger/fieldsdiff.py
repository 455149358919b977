"""The first field where two results files differ, so a user knows which producer to chase."""

from __future__ import annotations

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


def first_divergence(
    left: Any, right: Any, path: str = "$", ignore: frozenset[str] = frozenset()
) -> Divergence | None:
    """Depth-first, keys in sorted order: the first JSON path whose values differ.

    Keys named in ``ignore`` (volatile fields such as a wall time) are skipped
    at any depth.
    """
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted((set(left) | set(right)) - ignore):
            sub = f"{path}.{key}"
            if key not in left or key not in right:
                return Divergence(sub, left.get(key, _MISSING), right.get(key, _MISSING))
            found = first_divergence(left[key], right[key], sub, ignore)
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list):
        for i, (a, b) in enumerate(zip(left, right, strict=False)):
            found = first_divergence(a, b, f"{path}[{i}]", ignore)
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
