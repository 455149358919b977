"""The leak audit of the batches loop: does revised text use the forbidden vocabulary?

A word leaks in any of its forms, so text and vocabulary are both cut into parts (at
spaces, punctuation, ``-``, ``_`` and camelCase) and each part is reduced to its stem by
the Snowball English stemmer (``snowballstemmer``, a maintained implementation of
Porter's second algorithm): "re-checklisted", "checklist-driven", "quality_checklist"
and "Checklists" all hit "checklist". A vocabulary entry also hits when its letters,
run together, appear inside a run of up to one more part than it has ("check  list",
"qualitychecklist"); below five letters only an exact run counts, so a short word
never hits inside an unrelated one.

The vocabulary the audit uses is the committed one, frozen into ``weights/meta.json``
at ``weights init``; ``weights vocabulary --reason`` is the transition that changes it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
MIN_INSIDE = 5  # letters a run-together entry needs to hit inside a longer part


def parts(text: str) -> list[str]:
    """The lower-case parts of ``text``: words, split at punctuation, ``-``, ``_``, camelCase."""
    return [p.lower() for p in _PART.findall(text)]


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    # Imported on first use: only a revision pays for it.
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def hits(entry: str, text: str) -> bool:
    """Whether vocabulary ``entry`` (a word or phrase) appears in ``text`` in any form."""
    want = parts(entry)
    if not want:
        return False
    got = parts(text)
    stems = [stem(p) for p in got]
    wanted = [stem(p) for p in want]
    k = len(wanted)
    if any(stems[i : i + k] == wanted for i in range(len(stems) - k + 1)):
        return True
    squashed = "".join(want)
    for size in range(1, len(want) + 2):
        for i in range(len(got) - size + 1):
            run = "".join(got[i : i + size])
            if run == squashed or stem(run) == stem(squashed):
                return True
            if len(squashed) >= MIN_INSIDE and squashed in run:
                return True
    return False


def matches(words: list[str], text: str) -> list[str]:
    """The vocabulary entries that ``text`` uses, in the vocabulary's order."""
    return [w for w in words if hits(w, text)]


def read_words(text: str) -> list[str]:
    """A vocabulary file's entries: one word or phrase a line, ``#`` comments skipped."""
    return [w.strip() for w in text.splitlines() if w.strip() and not w.strip().startswith("#")]
