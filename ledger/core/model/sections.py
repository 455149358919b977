"""The required sections of a reflection, by title: the file format's part, kept apart
from the pydantic models so that reading a reflection's text (``next`` on a written,
uncommitted one) needs no pydantic."""

from __future__ import annotations

REFLECTION_SECTIONS: tuple[str, ...] = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
    "Observability-gap audit",
)
# The Goodhart reflection's seventh (its front matter names a target_gate).
TARGET_AUDIT = "Target audit"
