"""The one error type, and what each kind of failure means for the exit code.

Exit codes are a contract (DESIGN section 5): 0 ok, 1 a rule refused or a
check found something, 2 bad usage or bad input (nothing written), 3 a bug.
The top-level handler in ``cli.py`` turns a :class:`LedgerError` into one line
on stderr; anything else is a bug and gets a traceback in
``.git/ledger/last-error.log``.
"""

from __future__ import annotations


class LedgerError(Exception):
    """An error a user can act on: what went wrong, and how to fix it."""

    exit_code = 3

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message.replace("\n", " ")
        if self.hint:
            text += f" ({self.hint})"
        return text


class Refused(LedgerError):
    """A discipline rule refused the action, or a check found something."""

    exit_code = 1


class BadInput(LedgerError):
    """Bad usage or bad input; nothing was written."""

    exit_code = 2
