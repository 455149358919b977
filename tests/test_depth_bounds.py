"""The nesting bound of entry data is exact at its edge, whichever check answers it:
the bracket count that spares the walk, the flow-bracket scan, or the walk itself."""

from __future__ import annotations

import json

import pytest

from ledger.core.errors import BadInput
from ledger.core.model.documents import MAX_DEPTH, load_json, load_yaml, nesting_depth


def _json_nested(levels: int, padding: str = "") -> bytes:
    inner: object = 1
    for _ in range(levels - 1):
        inner = [inner]
    return json.dumps({"x": inner, "note": padding}).encode()


@pytest.mark.parametrize("padding", ["", "[{" * 40], ids=["plain", "brackets-in-strings"])
def test_json_nested_to_the_bound_is_read_and_one_more_is_refused(padding: str) -> None:
    assert nesting_depth(load_json(_json_nested(MAX_DEPTH, padding), "a.json")) == MAX_DEPTH
    with pytest.raises(BadInput, match="nested deeper"):
        load_json(_json_nested(MAX_DEPTH + 1, padding), "a.json")


@pytest.mark.parametrize("block", [False, True], ids=["flow", "block"])
def test_yaml_nested_to_the_bound_is_read_and_one_more_is_refused(block: bool) -> None:
    def text(levels: int) -> str:
        if block:  # no bracket at all: only the walk of the parsed data sees it
            return "x:\n" + "- " * (levels - 1) + "v\n"
        return "x: " + "[" * (levels - 1) + "v" + "]" * (levels - 1) + "\n"

    assert nesting_depth(load_yaml(text(MAX_DEPTH), "a.md")) == MAX_DEPTH
    with pytest.raises(BadInput, match="nested deeper"):
        load_yaml(text(MAX_DEPTH + 1), "a.md")


def test_nesting_depth_of_scalars_and_siblings() -> None:
    assert nesting_depth(3) == 0 and nesting_depth("x") == 0 and nesting_depth(None) == 0
    assert nesting_depth([]) == 1 and nesting_depth({}) == 1
    assert nesting_depth({"a": [1, {"b": [2]}], "c": [[[]]]}) == 4
