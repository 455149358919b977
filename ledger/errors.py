"""The one error type, and what each kind of failure means for the exit code.

Exit codes are a contract (DESIGN section 5): 0 ok, 1 a rule refused or a
check found something, 2 bad usage or bad input (nothing written), 3 a bug.
The top-level handler in ``cli.py`` turns a :class:`LedgerError` into one line
on stderr; anything else is a bug and gets a traceback in
``.git/ledger/last-error.log``. :meth:`LedgerError.as_dict` is the same error
for machines (the MCP server's structured tool errors): the kind, the rule that
refused, the message and the fix, never text a client must parse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

# What each exit code means, as a word a client can switch on.
KINDS = {1: "refused", 2: "bad-input", 3: "internal"}

# A refusal by a named rule starts "[rule-name] ..." (see rules.Finding.line).
_RULE_TAG = re.compile(r"^\[([a-z][a-z0-9-]*)\] ")


class _Finding(Protocol):
    """What :meth:`Refused.of` needs from a finding (``rules.Finding``)."""

    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def fix(self) -> str: ...
    def line(self) -> str: ...


class LedgerError(Exception):
    """An error a user can act on: what went wrong, and how to fix it."""

    exit_code = 3

    def __init__(self, message: str, hint: str | None = None, *, rule: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        tag = _RULE_TAG.match(message)
        self.rule = rule if rule is not None else (tag.group(1) if tag else None)
        self.findings: list[dict[str, str | None]] = [
            {"rule": self.rule, "message": message, "fix": hint}
        ]

    def one_line(self) -> str:
        text = self.message.replace("\n", " ")
        if self.hint:
            text += f" ({self.hint})"
        return text

    def as_dict(self) -> dict[str, object]:
        """The error for machines: kind, exit code, rule, message, fix, and every finding."""
        return {
            "kind": KINDS.get(self.exit_code, "internal"),
            "exit_code": self.exit_code,
            "rule": self.rule,
            "message": self.message,
            "fix": self.hint or self.findings[0]["fix"],
            "findings": self.findings,
        }


class Refused(LedgerError):
    """A discipline rule refused the action, or a check found something."""

    exit_code = 1

    @classmethod
    def of(cls, findings: Sequence[_Finding]) -> Refused:
        """One refusal for several findings: one line for people, each finding for machines."""
        error = cls("; ".join(f.line() for f in findings), rule=findings[0].rule)
        error.findings = [
            {"rule": f.rule, "message": f.message, "fix": f.fix or None} for f in findings
        ]
        return error


class BadInput(LedgerError):
    """Bad usage or bad input; nothing was written."""

    exit_code = 2
