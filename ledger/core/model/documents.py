"""Entry files on disk: markdown with YAML front matter, and canonical JSON.

Both formats round-trip byte for byte: ``render(parse(x)) == x``. For markdown
the exact front-matter text is kept and re-emitted while the data it encodes is
unchanged, so a hand-written entry is never reformatted behind its author's
back; new or changed front matter is written canonically (keys in the model's
order, block style, no line wrapping). JSON is written with sorted keys, two
spaces and a trailing newline, so a PR diff reads like the fact it records.

YAML goes through ``safe_load`` semantics only, and aliases are refused
outright: an alias bomb is cheap to parse but explodes whatever walks the
result afterwards (the parser and emitter: :mod:`ledger.core.model.yamlio`,
imported on first use).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import BadInput

MAX_ENTRY_BYTES = 1 << 20
FENCE = "---\n"


def decode_text(data: bytes, where: str, max_bytes: int = MAX_ENTRY_BYTES) -> str:
    if len(data) > max_bytes:
        raise BadInput(f"{where}: file is larger than {max_bytes} bytes", "entries must be small")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where}: not valid UTF-8 (byte {exc.start})") from None


# How deep an entry's data may nest. Entries are a few levels deep; a collaborator's file
# nested thousands deep would exhaust the stack of whatever walks it (the parser, the
# models, the JSON caches), so it is refused before anything else reads it.
MAX_DEPTH = 64


def nesting_depth(value: Any) -> int:
    """The nesting depth of parsed data, walked without recursion.

    Only containers are pushed (a scalar is depth 0 where it stands): the walk
    runs on every entry verify and a cold status read, and most of an entry's
    values are scalars."""
    if not isinstance(value, dict | list):
        return 0
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if depth > deepest:
            deepest = depth
        if depth > MAX_DEPTH:
            break
        inner = depth + 1
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, dict | list):
                todo.append((child, inner))
    return deepest


def _bracketed(text: str) -> int:
    """How many flow brackets ([ and {) open in ``text``: a bound on how deep they nest
    (and, for JSON, on how deep its data nests), counted in C before any walk in Python."""
    return text.count("[") + text.count("{")


def _flow_depth(text: str) -> int:
    """The deepest run of flow brackets ([ and {), quotes ignored: a cheap bound checked
    before the parser, which recurses once per level."""
    depth = deepest = 0
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "\n" and depth == 0:
            quote = ""
    return deepest


def _too_deep(where: str) -> BadInput:
    return BadInput(
        f"{where}: nested deeper than {MAX_DEPTH} levels",
        "ledger entries are flat records; restore the file as its verb wrote it",
    )


def load_yaml(text: str, where: str, first_line: int = 1) -> Any:
    """YAML ``text`` that starts on line ``first_line`` of the file ``where``."""
    if _bracketed(text) > MAX_DEPTH and _flow_depth(text) > MAX_DEPTH:
        raise _too_deep(where)
    # PyYAML is imported on first use: a read served from the entry cache parses none.
    from ledger.core.model import yamlio

    try:
        value = yamlio.load(text, where, first_line)
    except RecursionError:
        raise _too_deep(where) from None
    if nesting_depth(value) > MAX_DEPTH:
        raise _too_deep(where)
    return value


def dump_yaml(data: dict[str, Any]) -> str:
    """Readable YAML (unicode kept) unless that would not read back identically.

    PyYAML emits a few characters (NEL, LS, PS) raw under ``allow_unicode``, and
    they read back as line breaks; escaped output is the exact fallback.
    """
    from ledger.core.model import yamlio

    return yamlio.dump(data)


@dataclass(frozen=True)
class Document:
    """A markdown entry: front matter data plus the body text after it."""

    front: dict[str, Any]
    body: str
    raw_front: str | None = None

    def render(self) -> str:
        raw = self.raw_front
        if raw is not None and load_yaml(raw, "front matter") == self.front:
            return FENCE + raw + FENCE + self.body
        return FENCE + dump_yaml(self.front) + FENCE + self.body

    def replace(self, front: dict[str, Any] | None = None, body: str | None = None) -> Document:
        return Document(
            front=self.front if front is None else front,
            body=self.body if body is None else body,
            raw_front=self.raw_front,
        )


def parse_document(text: str, where: str) -> Document:
    if not text.startswith(FENCE):
        raise BadInput(f"{where}: missing YAML front matter", "the file must start with '---'")
    end = text.find("\n" + FENCE, len(FENCE) - 1)
    if end < 0:
        raise BadInput(f"{where}: front matter is not closed", "add a line '---' after it")
    raw = text[len(FENCE) : end + 1]
    front = load_yaml(raw, where, first_line=2)  # line 1 is the opening fence
    if front is None:
        front = {}
    if not isinstance(front, dict) or not all(isinstance(k, str) for k in front):
        raise BadInput(f"{where}: front matter must be a mapping of names to values")
    return Document(front=front, body=text[end + 1 + len(FENCE) :], raw_front=raw)


# --- generated blocks -------------------------------------------------------


def _block_re(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- ledger:begin {re.escape(name)} -->\n)(.*?)(<!-- ledger:end {re.escape(name)} -->)",
        re.DOTALL,
    )


def get_block(text: str, name: str) -> str | None:
    match = _block_re(name).search(text)
    return match.group(2) if match else None


def set_block(text: str, name: str, content: str) -> str:
    """Replace the fenced block ``name``; append it at the end if it is missing."""
    if content and not content.endswith("\n"):
        content += "\n"
    pattern = _block_re(name)
    if pattern.search(text):
        return pattern.sub(lambda m: m.group(1) + content + m.group(3), text, count=1)
    sep = "" if text.endswith("\n\n") or not text else ("\n" if text.endswith("\n") else "\n\n")
    return f"{text}{sep}<!-- ledger:begin {name} -->\n{content}<!-- ledger:end {name} -->\n"


def get_section(body: str, title: str) -> str | None:
    """The text of a ``## title`` section, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", body, re.M | re.S)
    return match.group(1) if match else None


# --- JSON -------------------------------------------------------------------


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the text: a key given twice is bad input, not the last value silently
    (a result saying ``{"loss": 0.1, "loss": 0.9}`` reads as one number to one tool and
    as the other to the next)."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _v in pairs:
            if key in seen:
                shown = key if len(key) <= 40 else key[:40] + "..."
                raise ValueError(f"duplicate key {shown!r} (keep one value per key)")
            seen.add(key)
    return value


def dump_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def load_json(data: bytes, where: str, max_bytes: int = MAX_ENTRY_BYTES) -> Any:
    text = decode_text(data, where, max_bytes)
    if not text.strip():
        raise BadInput(f"{where}: empty file", "expected a JSON object")
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else "nested too deeply"
        raise BadInput(f"{where}: invalid JSON: {reason}") from None
    # Each array or object of the data opens with its own bracket in the text: with no
    # more brackets than MAX_DEPTH (strings only add to the count), none nests deeper.
    if _bracketed(text) > MAX_DEPTH and nesting_depth(value) > MAX_DEPTH:
        raise _too_deep(where)
    return value


def is_finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
