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

import re
from typing import Any, Literal, NamedTuple

# "read" changes nothing; "write" records a transition that a later one can
# follow or amend; "destructive" cannot be taken back by another call (a
# verdict, a voided version, a merged winner, removed worktrees or lock files).
Kind = Literal["read", "write", "destructive"]
Output = Literal["json", "text"]


class Declared(NamedTuple):
    """How one verb is run and shown besides its click options (its typed arguments).

    A NamedTuple, not a dataclass: a warm ``status`` imports this module (for
    :func:`proposal`), and importing dataclasses (and inspect) is a tenth of its time."""

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
    # The verb reaches past the ledger: it starts a program the configuration names, or
    # talks to a remote (a push of the ledger, a fetch of cells).
    open_world: bool = False
    # False: not an MCP tool; where it is declared says why.
    served: bool = True
    # What each positional argument is, in words an agent can act on (click gives
    # arguments no help); (click name, description) pairs.
    args: tuple[tuple[str, str], ...] = ()
    # The argument that names a ledger.toml key: the MCP server refuses keys that name
    # a command to run or a place outside the repository (a person edits those).
    config_key: str | None = None
    # The MCP server holds a call of this verb until the calls in flight of open-world
    # verbs (a run still starting) have returned: ``wait`` then sees their runs.
    after_runs: bool = False
    # The machine preconditions the verb needs besides those every step of the loop holds
    # (names of ``ledger.core.machine.PRECONDITIONS``): the verb is refused by their check,
    # with the action that clears the first that fails, which ``next`` proposes first.
    requires: tuple[str, ...] = ()


# What the common positional arguments are, for every verb that takes one and says
# nothing more specific in its declaration.
ARGS: dict[str, str] = {
    "step_id": "The step's id, e.g. V12 (a version), V12a (a sibling) or V13.A (a cell).",
    "matrix_id": "The matrix's version id, e.g. V13 (its cells are V13.A, V13.B, ...).",
    "file": "A file inside the repository, relative to its directory.",
    "rev": "A git revision (commit, branch or tag) to read the ledger at.",
    "rev_range": "A git revision range, e.g. main~10..main (default: all of history).",
}


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

    ``placeholders`` are the words of ``command`` a caller fills in, ``meanings`` what
    each word to fill in stands for (every loop's, found in the command), ``edit`` the
    files to edit first; ``decide`` (only when given) says that the step is a
    person's decision and what they decide.
    """
    out: dict[str, Any] = {
        "action": name,
        "command": command,
        "reason": reason,
        "step": step,
        "placeholders": placeholders or [],
        "meanings": meanings(command, placeholders or []),
        "edit": edit or [],
    }
    if decide is not None:
        out["decide"] = decide
    return out


# What the words a caller fills in stand for, in every loop's commands.
MEANINGS: dict[str, str] = {
    "<BET>": "The hypothesis in one sentence: which change should move which metric.",
    "<FALSIFIER>": "The result that would show the bet wrong.",
    "<FILES>": "The files the version's code will change, comma-separated.",
    "<GATE>": "A gate named in ledger.toml.",
    "<REASON>": "Why, in one line of your own words.",
    "TEXT": "Why, in one line of your own words.",
    "<NEXT>": "What the loop does next, in one line.",
    "<NOTES>": "Why this candidate is kept besides one with an equal gain.",
    "<RESULTS.json>": "A results JSON object (over MCP: pass it inline as 'result').",
    "RESULTS.json": "A results JSON object (over MCP: pass it inline as 'result').",
    "CANDIDATE": "The commit (sha) of the candidate that was measured.",
    "X": "The measured value: a number, or 'N/A: reason'.",
    "WEIGHTS.json": "A {target: {key: value}} JSON file inside the repository: the weights.",
    "RUN": "The loop's run id, a short name of your choice.",
    "VALUE": "The new value.",
    "SEEDS": "The seeds, comma-separated.",
    "<V>": "A version id, e.g. V12.",
}
_FILL = re.compile(
    r"<[A-Z][A-Za-z_.]*>"  # <BET>
    r"|(?<![\w$/.<-])[A-Z][A-Z_]*(?:\.json)?(?![\w<>])"  # TEXT, WEIGHTS.json (not $EDITOR)
    r"|(?<![\w-])[a-z]+(?:\|[a-z]+)+(?![\w])"  # promoted|rejected|held
)
_NOT_TO_FILL = frozenset({"HEAD", "ORIG_HEAD", "FETCH_HEAD"})


def meanings(command: str, placeholders: list[str]) -> list[dict[str, str]]:
    """What each word of ``command`` a caller fills in stands for (the declared ones and
    those the command shows bare, such as CANDIDATE or true|false), in order."""
    found = [*placeholders]
    for match in _FILL.finditer(command):
        word = match.group(0)
        # A bare capital word is one to fill only when it is known (a matrix cell is
        # named A, a gate may be named in capitals): <...>, a|b and NAME.json always are.
        bare = word[0].isupper() and not word.endswith(".json")
        if word in found or word in _NOT_TO_FILL or (bare and word not in MEANINGS):
            continue
        found.append(word)
    return [{"name": word, "meaning": _meaning(word)} for word in found]


def _meaning(word: str) -> str:
    if word in MEANINGS:
        return MEANINGS[word]
    if "|" in word:
        return f"One of: {', '.join(word.split('|'))}."
    return "A value you choose; the reason says what it is for."
