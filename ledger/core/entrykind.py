"""What kind of entry a path inside the ledger directory is: standard library only, so
``verify``'s incremental path can classify a commit's changes without pydantic."""

from __future__ import annotations

from ledger.core.model.ids import try_parse_version

PHASE_FILE = "CAMPAIGN_STATUS.md"
README = "README.md"
TEMPLATE = "_template.md"


def classify(rel: str, prefix: str) -> str | None:
    """What kind of entry a path inside the ledger dir is (None: not an entry)."""
    parts = rel.split("/")
    if len(parts) == 1:
        name = parts[0]
        if name in (README, TEMPLATE):
            return None
        if name == PHASE_FILE:
            return "phase"
        if name.startswith("REFLECTION_") and name.endswith(".md"):
            return "reflection"
        if name.endswith("-matrix.md"):
            return "matrix"
        if name.endswith(".md") and try_parse_version(name[:-3], prefix):
            return "version"
        return None
    if parts[0] == "results" and len(parts) == 4 and parts[3].endswith(".json"):
        return "result"
    return None
