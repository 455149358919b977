"""What a reflection's sections say: the words of real content each holds (comments,
pre-filled facts, placeholders and filler answers count as none), which of the
required ones are missing, and what each of those lacks. Parsed into the entry cache
with the reflection.

What a section lacks is said once, by :func:`lacking`: the refusal of
``reflect --commit`` and ``next`` name it in the same words, so an agent that does what
it is told is never told the same thing again (a Goodhart reflection whose target audit
was prose without its decision was refused as "empty" 202 times in a 250-step walk).
"""

from __future__ import annotations

import re

from ledger.core.model.documents import get_section
from ledger.core.model.sections import REFLECTION_SECTIONS
from ledger.core.model.sections import TARGET_AUDIT as TARGET_AUDIT

PLACEHOLDER = re.compile(r"^\s*(_?\(?(todo|tbd|fill in|write here)[^\n]*\)?_?)?\s*$", re.I | re.S)
FILLER = re.compile(
    r"^(n/?a|none|nothing|no|yes|ok(ay)?|fine|same|as above|see above|[-—–.?!*_]+|tbd|todo)\W*$",
    re.I,
)
MIN_WORDS = 3
# The target audit counts only when its last line decides (see target_audit).
DECISION_LINE = "a line 'keep as target' or 'retire'"
DECIDE = f"end it with {DECISION_LINE}"
# Why a section holds no words that count, by cause (lacking() says it to the writer).
ABSENT, EMPTY, FILLED_IN, REPEAT, UNDECIDED = "absent", "empty", "filler", "repeat", "undecided"


def section_words(body: str) -> dict[str, int]:
    """Words of real content per required section (-1: absent)."""
    return read_sections(body, False)[0]


def read_sections(body: str, target: bool) -> tuple[dict[str, int], dict[str, str]]:
    """Words of real content per required section (-1: absent), the target audit's too
    when ``target`` (a Goodhart reflection), and why each section that holds none holds
    none (ABSENT, EMPTY, FILLED_IN, REPEAT, UNDECIDED). Comments, the ledger's pre-filled
    facts (quoted '>' lines), placeholders and filler answers such as 'n/a', '-' or 'ok'
    count as none."""
    words: dict[str, int] = {}
    why: dict[str, str] = {}
    seen: set[str] = set()
    for title in REFLECTION_SECTIONS:
        stripped = own_text(body, title)
        if stripped is None:
            words[title], why[title] = -1, ABSENT
            continue
        if not stripped:
            words[title], why[title] = 0, EMPTY
            continue
        if PLACEHOLDER.fullmatch(stripped) or FILLER.fullmatch(stripped):
            words[title], why[title] = 0, FILLED_IN
            continue
        # A section must say something of its own: the same text pasted under another
        # title answers one question, not two (issue 26).
        same = " ".join(re.findall(r"\w+", stripped.lower()))
        words[title] = 0 if same in seen else len(re.findall(r"\w+", stripped))
        if same in seen:
            why[title] = REPEAT
        seen.add(same)
    if target:
        words[TARGET_AUDIT], decided = target_audit(body)
        if not decided:
            text = own_text(body, TARGET_AUDIT)
            why[TARGET_AUDIT] = ABSENT if text is None else EMPTY if not text else UNDECIDED
    return words, why


def own_text(body: str, title: str) -> str | None:
    """A section's own words: no comments, no quoted ('>') facts the ledger pre-filled."""
    text = get_section(body, title)
    if text is None:
        return None
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    own = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(">"))
    return own.strip()


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
    # The target audit, if due, where the skeleton puts it: before the observability audit.
    extra = [t for t in words if t not in REFLECTION_SECTIONS]
    order = (*REFLECTION_SECTIONS[:-1], *extra, REFLECTION_SECTIONS[-1])
    return tuple(t for t in order if words.get(t, -1) < max(min_words, 1))


def lacking(words: dict[str, int], why: dict[str, str], min_words: int) -> tuple[str, ...]:
    """What each incomplete section lacks, one finding a section ("Title: what is
    missing"), in the order of :func:`missing_from`: the words ``reflect --commit``
    refuses with and ``next`` proposes by."""
    return tuple(
        f"{title}: {_lack(title, words.get(title, -1), why.get(title), min_words)}"
        for title in missing_from(words, min_words)
    )


def _lack(title: str, count: int, cause: str | None, min_words: int) -> str:
    if count < 0 or cause == ABSENT:
        return f"absent (add a '## {title}' heading and answer under it)"
    if cause == UNDECIDED:
        return DECIDE
    if cause == EMPTY:
        return f"empty (write what you found, then {DECIDE})" if title == TARGET_AUDIT else "empty"
    if cause == FILLED_IN:
        return (
            "no answer of its own (placeholders, 'n/a', '-', 'ok' and the quoted '>' lines "
            "do not count)"
        )
    if cause == REPEAT:
        return "repeats another section word for word (answer it in its own words)"
    need = max(min_words, 1)
    return f"{count} word{'' if count == 1 else 's'} (write at least {need})"


def incomplete(lacks: tuple[str, ...]) -> str:
    """The findings of :func:`lacking` as one line, for the refusal and ``next`` alike."""
    return "; ".join(lacks)
