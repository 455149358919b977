"""What a reflection's sections say: the words of real content each holds (comments,
pre-filled facts, placeholders and filler answers count as none), and which of the
required ones are missing. Parsed into the entry cache with the reflection."""

from __future__ import annotations

import re

from ledger.core.model.documents import get_section
from ledger.core.model.entries import REFLECTION_SECTIONS

PLACEHOLDER = re.compile(r"^\s*(_?\(?(todo|tbd|fill in|write here)[^\n]*\)?_?)?\s*$", re.I | re.S)
FILLER = re.compile(
    r"^(n/?a|none|nothing|no|yes|ok(ay)?|fine|same|as above|see above|[-—–.?!*_]+|tbd|todo)\W*$",
    re.I,
)
MIN_WORDS = 3


def section_words(body: str) -> dict[str, int]:
    """Words of real content per required section (-1: absent). Comments, the
    ledger's pre-filled facts (quoted '>' lines), placeholders and filler
    answers such as 'n/a', '-' or 'ok' count as none."""
    out: dict[str, int] = {}
    seen: set[str] = set()
    for title in REFLECTION_SECTIONS:
        stripped = own_text(body, title)
        if stripped is None:
            out[title] = -1
            continue
        if not stripped or PLACEHOLDER.fullmatch(stripped) or FILLER.fullmatch(stripped):
            out[title] = 0
            continue
        # A section must say something of its own: the same text pasted under another
        # title answers one question, not two (issue 26).
        same = " ".join(re.findall(r"\w+", stripped.lower()))
        out[title] = 0 if same in seen else len(re.findall(r"\w+", stripped))
        seen.add(same)
    return out


def own_text(body: str, title: str) -> str | None:
    """A section's own words: no comments, no quoted ('>') facts the ledger pre-filled."""
    text = get_section(body, title)
    if text is None:
        return None
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    own = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))
    return own.strip()


TARGET_AUDIT = "Target audit"


def target_audit(body: str) -> tuple[int, str | None]:
    """(words, "keep" | "retire" | None) of the Goodhart reflection's target audit: it
    counts only when its last line decides, "keep as target" or "retire"."""
    text = own_text(body, TARGET_AUDIT)
    if text is None:
        return -1, None
    last = text.splitlines()[-1].lower() if text else ""
    decided = "keep" if "keep as target" in last else "retire" if "retire" in last else None
    return (len(re.findall(r"\w+", text)) if decided else 0), decided


def reflection_missing(body: str, min_words: int = MIN_WORDS) -> tuple[str, ...]:
    """Required sections that are absent or hold no real content."""
    return missing_from(section_words(body), min_words)


def missing_from(words: dict[str, int], min_words: int) -> tuple[str, ...]:
    extra = [t for t in words if t not in REFLECTION_SECTIONS]  # the target audit, if due
    return tuple(t for t in (*REFLECTION_SECTIONS, *extra) if words.get(t, -1) < max(min_words, 1))
