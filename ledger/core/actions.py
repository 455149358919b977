"""A verb's declaration, and the one shape of a step that ``next`` proposes.

Every verb of the command line is declared once, where it is defined (each
preset's ``verbs.py``, the generic verbs in ``ledger.cli.app``), with
:func:`ledger.core.clikit.declare`: whether it reads, writes or cannot be
undone, which loop's ledgers list it, and how the MCP server shows it. The
server's tool list is walked off the click app from these declarations
(``ledger.mcp.tools``), so no table repeats the verbs and a new verb is not
served until it says how. Every verb that ``next`` or a refusal sends an agent
to is served (tests/test_mcp.py holds it); a verb declared ``served=False`` says
why where it is declared.

A proposal is what ``next --json`` gives for one step: :func:`proposal` is its
only shape (DESIGN section 4: ``next`` comes from the same declarations).

Standard library only: the verb modules that import this load on every
``git ledger`` call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# "read" changes nothing; "write" records a transition that a later one can
# follow or amend; "destructive" cannot be taken back by another call (a
# verdict, a voided version, a merged winner, removed worktrees or lock files).
Kind = Literal["read", "write", "destructive"]
Output = Literal["json", "text"]


@dataclass(frozen=True)
class Declared:
    """How one verb is run and shown besides its click options (its typed arguments)."""

    kind: Kind
    # The loop whose ledgers list the verb's tool (None: every ledger). A call is
    # not refused on this account; the command itself decides, as on the CLI.
    loop: str | None = None
    # Parameters (click names) the tool does not take, and argv it always adds.
    hidden: frozenset[str] = frozenset()
    fixed: tuple[str, ...] = ()
    # "json": the command's --json output; "text": what it prints (report).
    output: Output = "json"
    # Said after the command's help in the tool's description.
    note: str = ""
    # The verb reaches past the ledger (starts a program the configuration names).
    open_world: bool = False
    # False: not an MCP tool; where it is declared says why.
    served: bool = True


def proposal(
    name: str,
    command: str,
    reason: str,
    *,
    step: str | None = None,
    placeholders: list[str] | None = None,
    edit: list[str] | None = None,
    decide: str | None = None,
) -> dict[str, Any]:
    """One step ``next --json`` proposes: the action's name, the exact command, why.

    ``placeholders`` are the words of ``command`` a caller fills in, ``edit`` the
    files to edit first; ``decide`` (only when given) says that the step is a
    person's decision and what they decide.
    """
    out: dict[str, Any] = {
        "action": name,
        "command": command,
        "reason": reason,
        "step": step,
        "placeholders": placeholders or [],
        "edit": edit or [],
    }
    if decide is not None:
        out["decide"] = decide
    return out
