"""Entry files round-trip byte for byte: render(parse(x)) == x."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.errors import BadInput
from ledger.core.model.documents import (
    Document,
    dump_json,
    get_block,
    load_json,
    parse_document,
    set_block,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
fronts = st.dictionaries(st.text(min_size=1, max_size=12), values, max_size=6)
bodies = st.text(max_size=200).map(lambda s: s.replace("\r", ""))


@settings(max_examples=200)
@given(front=fronts, body=bodies)
def test_markdown_round_trip_is_byte_stable(front: dict[str, object], body: str) -> None:
    text = Document(front=front, body=body).render()
    parsed = parse_document(text, "x.md")
    assert parsed.front == front
    assert parsed.body == body
    assert parsed.render() == text


@settings(max_examples=200)
@given(front=fronts, body=bodies)
def test_hand_formatted_front_matter_is_kept_verbatim(front: dict[str, object], body: str) -> None:
    """A hand-written entry is never reformatted while its data is unchanged."""
    raw = json.dumps(front, sort_keys=False) + "\n"  # JSON is valid YAML, and not our style
    text = "---\n" + raw + "---\n" + body
    try:
        parsed = parse_document(text, "x.md")
    except BadInput:
        return  # a key or value YAML reads differently from JSON; not this property
    assert parsed.render() == text


@settings(max_examples=200)
@given(data=st.dictionaries(st.text(max_size=10), values, max_size=6))
def test_json_round_trip_is_byte_stable(data: dict[str, object]) -> None:
    text = dump_json(data)
    assert text.endswith("\n")
    assert dump_json(load_json(text.encode(), "x.json")) == text


@given(content=st.text(max_size=80).filter(lambda s: "<!--" not in s))
def test_blocks_replace_only_their_own_fence(content: str) -> None:
    doc = "intro\n<!-- ledger:begin a -->\nold\n<!-- ledger:end a -->\noutro\n"
    new = set_block(doc, "a", content)
    expected = content if not content or content.endswith("\n") else content + "\n"
    assert get_block(new, "a") == expected
    assert new.startswith("intro\n") and new.endswith("outro\n")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("no front matter", "missing YAML front matter"),
        ("---\na: 1\n", "not closed"),
        ("---\n- a\n---\n", "must be a mapping"),
        ("---\na: &x [1]\nb: *x\n---\n", "aliases are not allowed"),
        ("---\na: !!python/object:os.system x\n---\n", "invalid YAML"),
    ],
)
def test_bad_front_matter_is_bad_input(text: str, reason: str) -> None:
    with pytest.raises(BadInput, match=reason):
        parse_document(text, "x.md")


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"", "empty"),
        (b"{", "invalid JSON"),
        (b'{"a": NaN}', "invalid JSON"),
        (b"\xff\xfe", "UTF-8"),
        (b'{"a": Infinity}', "invalid JSON"),
    ],
)
def test_bad_json_is_bad_input(data: bytes, reason: str) -> None:
    with pytest.raises(BadInput, match=reason):
        load_json(data, "x.json")


# Plain scalars YAML 1.1 reads as something other than a string, and shapes the
# direct construction leaves to PyYAML (merge keys, explicit tags, timestamps, sets).
yaml_words = st.sampled_from(
    [
        "yes",
        "No",
        "ON",
        "off",
        "~",
        "null",
        "Null",
        "0x1F",
        "0o17",
        "017",
        "0b101",
        "1_000",
        "190:20:30",
        "-1.5e3",
        ".inf",
        "-.Inf",
        ".NaN",
        "2026-11-30",
        "2026-11-30 01:02:03",
        "<<",
        "=",
        "!!str 12",
        "!!int '7'",
        "!!float 1",
        "!!bool yes",
        "!!set {a, b}",
        "!!binary aGk=",
        "!!timestamp 2001-12-14",
        "!!python/none ''",
        "'quoted'",
        '"dq\\n"',
        "{a: 1, b: [2, 3]}",
        "[x, {y: z}]",
        "? complex\n: key",
        "key: |\n  block\n",
        "-",
        "a: b: c",
        "\t",
        "%YAML 1.1\n---\nx: 1",
        "--- 1\n--- 2",
        "<<: {a: 1}\nb: 2",
    ]
)
yaml_texts = st.one_of(
    st.lists(st.one_of(yaml_words, st.text(max_size=12)), max_size=6).map(
        lambda parts: "\n".join(f"k{i}: {p}" for i, p in enumerate(parts))
    ),
    st.lists(yaml_words, max_size=4).map(lambda parts: "".join(f"- {p}\n" for p in parts)),
    yaml_words,
    st.text(max_size=60),
    fronts.map(lambda front: yaml.safe_dump(front, sort_keys=False, allow_unicode=True)),
)


def _outcome(load: Any) -> tuple[str, Any]:
    try:
        value = load()
    except Exception as exc:
        return "error", type(exc).__name__
    return "value", repr(value)


@settings(max_examples=400)
@given(text=yaml_texts)
def test_fast_yaml_reads_what_the_safe_loader_reads(text: str) -> None:
    """The C loader's direct construction gives exactly what libyaml's SafeLoader gives
    (values and their types, including floats, bools and nulls), or the same error."""
    from ledger.core.model.yamlio import _load_c

    expected = _outcome(lambda: yaml.load(text, Loader=yaml.CSafeLoader))
    assert _outcome(lambda: _load_c(text)) == expected
    assert _outcome(lambda: _load_c(text)) == expected  # the memo of plain scalars
