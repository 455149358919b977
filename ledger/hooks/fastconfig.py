"""The commit-msg hook's check of a commit that changes ledger.toml (standard library).

A setting that judges (the verdict-affecting tables: gates, stats, triggers, batches,
campaign) changes only in a commit of the configuration alone, a visible transition,
and with its reason on record (``Ledger-Reason:``, as ``config set`` writes it):
``verify`` finds either missing (config-frozen, config-reason), so the server refuses
such a push; the hook says it before the commit exists.
"""

from __future__ import annotations

from ledger.core import repobase
from ledger.core.repobase import git

REASON = "Ledger-Reason"


def staged_tables(config_file: str) -> tuple[dict[str, object], dict[str, object]]:
    """The verdict-affecting settings at HEAD and as staged (``[ledger] rules`` among
    them, as ``ledger.rules``), each configuration read once."""
    import tomllib

    def tables(rev: str) -> dict[str, object]:
        text = git("show", f"{rev}{config_file}", check=False)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return {"unreadable": text}
        return repobase.frozen_tables(repobase.ledger_table(data, config_file) or {})

    return tables("HEAD:"), tables(":")


def _epoch(tables: dict[str, object]) -> int:
    value = tables.get("ledger.rules", 1)
    return value if isinstance(value, int) else 1


def has_reason(message_file: str) -> bool:
    """Whether the message's last paragraph (comments aside) has a non-empty reason."""
    with open(message_file, encoding="utf-8", errors="replace") as handle:
        lines = [line for line in handle.read().split("\n") if not line.startswith("#")]
    paragraphs = "\n".join(lines).strip().split("\n\n")
    last = paragraphs[-1] if len(paragraphs) > 1 else ""
    for line in last.split("\n"):
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == REASON.lower() and value.strip():
            return True
    return False


def config_refusal(config_file: str, staged: list[str], message_file: str) -> str | None:
    """Why a commit that stages ``config_file`` is refused, or None."""
    before, after = staged_tables(config_file)
    # New gates aside: a gate added changes no verdict already registered.
    if not before or all(after.get(k) == v for k, v in before.items()):
        return None
    if len(staged) > 1:
        return (
            f"[config-frozen] {config_file}'s verdict-affecting settings change in a commit "
            f"with other files (fix: commit {config_file} on its own, or git ledger config "
            "set KEY VALUE --reason TEXT)"
        )
    if max(_epoch(before), _epoch(after)) >= 2 and not has_reason(message_file):
        return (
            f"[config-reason] {config_file}'s verdict-affecting settings change with no "
            f"reason on record (fix: git commit --trailer '{REASON}: why', or git ledger "
            "config set KEY VALUE --reason TEXT)"
        )
    return None
