"""The single next action of the loop, from the repository alone.

After a crash or a context reset, a person or an agent asks ``git ledger
next`` and gets one action with the exact command; this module decides it
from the ledger state (pure). The promise is that the command is never one the
ledger would refuse: the verdict proposed is the one the statistics support, the
gate and files are the parent's, and whatever only a person can supply is a
placeholder in angle brackets (``<BET>``), listed in ``placeholders``. ``edit``
lists files to change before running the command (code for a bet, a reflection's
sections).

An open version is judged from its :class:`~ledger.presets.versions.reading.Reading`
(its results under the configuration frozen at its registration), the very object
``conclude`` judges it from, so the verdict proposed is the one conclude accepts.

What a tree cannot say (a reflection written but not yet committed, whether the
code of a version was committed, a matrix's cells on their branches, an id taken on
another branch) is added by :mod:`ledger.presets.versions.fresh` on every call, after
the machine problems :mod:`ledger.core.machine` puts first.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.core import reflectiontext
from ledger.core.actions import proposal
from ledger.core.state import LedgerState, Version
from ledger.presets.versions import rules
from ledger.presets.versions.reading import Reading, read

SEEDS = "1,2,3"


@dataclass(frozen=True)
class NextAction:
    action: str
    command: str
    reason: str
    step: str | None = None
    placeholders: tuple[str, ...] = ()
    edit: tuple[str, ...] = field(default=())
    alternatives: tuple[NextAction, ...] = ()
    decide: str | None = None  # what only a person can decide before the command is run

    def as_dict(self) -> dict[str, Any]:
        out = proposal(
            self.action,
            self.command,
            self.reason,
            step=self.step,
            placeholders=list(self.placeholders),
            edit=list(self.edit),
            decide=self.decide,
        )
        if self.alternatives:
            out["alternatives"] = [a.as_dict() for a in self.alternatives]
        return out


def quote(text: str) -> str:
    return text if text.startswith("<") and text.endswith(">") else shlex.quote(text)


def has_command(state: LedgerState, gate: str) -> bool:
    cfg = state.config.gates.get(gate)
    return bool((cfg is not None and cfg.command) or state.config.run.command)


def _key_order(key: str) -> tuple[int, int | str]:
    return (0, int(key)) if key.isdigit() else (1, key)


def parent_keys(state: LedgerState, version: Version, gate: str) -> str | None:
    """The seeds (or windows) the version's parent was measured on for ``gate``, so every
    comparison with it is paired (None: none known)."""
    parent = version.front.parent
    keys = {r.key for r in state.results_for(parent, gate)} if parent else set()
    if not keys and gate != version.front.gate:
        # No parent there: the version's own seeds on its targeted gate, one set throughout.
        keys = {r.key for r in state.results_for(version.id, version.front.gate)}
    return ",".join(sorted(keys, key=_key_order)) if keys else None


def unmeasured_gates(state: LedgerState, version: Version) -> list[str]:
    """The gates still to measure after the targeted one: each ``--noop-gates`` gate, then
    the other configured gates a command can measure. A gate with any run on record
    (failed ones too) counts as measured, so a broken gate never holds the verdict."""
    measured = {r.gate for r in state.results if r.version == version.id}
    noop = [g for g in version.front.noop_gates if g in state.config.gates]
    others = [g for g in sorted(state.config.gates) if g not in noop and has_command(state, g)]
    return [
        g for g in dict.fromkeys([*noop, *others]) if g != version.front.gate and g not in measured
    ]


def _dated(state: LedgerState, version: Version, gate: str, keys: str) -> str:
    """The parent's windows with the dates they were measured on (ID=START..END), so the
    new version's effective N is computed from dates too; a gate whose windows_manifest
    lists them needs only the ids."""
    if state.config.gates[gate].windows_manifest or not version.front.parent:
        return keys
    spans = {
        r.key: f"{r.data.window_start}..{r.data.window_end}"
        for r in state.results_for(version.front.parent, gate)
        if r.data.window_start and r.data.window_end
    }
    return ",".join(f"{k}={spans[k]}" if k in spans else k for k in keys.split(","))


def measure(state: LedgerState, vid: str, gate: str, seeds: str | None = None) -> NextAction:
    version = state.version(vid)
    keys = seeds or (parent_keys(state, version, gate) if version is not None else None)
    walk = (
        state.config.gates.get(gate) is not None and state.config.gates[gate].mode == "walk-forward"
    )
    flag = "--windows" if walk and keys else "--seeds"
    if flag == "--windows" and keys and version is not None and not seeds:
        keys = _dated(state, version, gate, keys)
    keys = keys or SEEDS
    paired = " (the parent's, so every comparison is paired)" if not seeds and keys != SEEDS else ""
    if has_command(state, gate):
        return NextAction(
            "measure",
            f"git ledger run {vid} --gate {gate} {flag} {keys}",
            f"{vid} is registered and has no results on '{gate}' yet{paired}",
            vid,
        )
    first = keys.split(",")[0]
    return NextAction(
        "measure",
        f"git ledger record {vid} --gate {gate} {flag[:-1]} {first} <RESULTS.json>",
        f"{vid} has no results on '{gate}'; no command is configured for it "
        "(set [run] command in ledger.toml to let 'git ledger run' measure)",
        vid,
        ("<RESULTS.json>",),
    )


def code_commit(state: LedgerState, version: Version) -> NextAction:
    """What to do when a version has no code commit yet (used when git says so)."""
    scope = version.front.subsystem or version.front.gate
    files = version.front.files
    bet = version.front.bet.rstrip(".")
    subject = f"feat({scope}): {version.id} — {bet[:1].lower()}{bet[1:]}"
    paths = " ".join(shlex.quote(f) for f in files)
    return NextAction(
        "commit-code",
        # The trailer is written out: the hook adds it too, but not every clone has hooks.
        # The paths again after `git commit`: only the bet's files are committed, never
        # what else is staged (a reflection being written: ledger files and code in one
        # commit, which the pre-commit hook refuses).
        f"git add -- {paths} && git commit -m "
        f"{shlex.quote(subject)} -m {shlex.quote('Ledger-Step: ' + version.id)} -- {paths}",
        f"{version.id} is registered; change {', '.join(files)} for its bet and commit it "
        "(the commit carries its Ledger-Step), then measure it",
        version.id,
        (),
        tuple(files),
    )


def conclude(reading: Reading) -> NextAction:
    verdict = reading.supported()
    return NextAction(
        "conclude",
        f"git ledger conclude {reading.id} --verdict {verdict} --next '<NEXT>'",
        f"{reading.id} has {len(reading.results)} result(s) on '{reading.gate}'; "
        f"the statistics support '{verdict}'",
        reading.id,
        ("<NEXT>",),
    )


def measure_missing(state: LedgerState, reading: Reading) -> NextAction:
    """Seeds a run started and never measured (it was killed): conclude refuses the
    verdict until they have results (readiness.check_results), so they come first."""
    seeds = ",".join(reading.missing)
    step = measure(state, reading.id, reading.gate, seeds)
    return NextAction(
        "measure-missing",
        step.command,
        f"seeds {seeds} of {reading.id} on '{reading.gate}' were started but have no results "
        "(a run was stopped half-way): measure them before the verdict",
        reading.id,
        step.placeholders,
    )


def void(reading: Reading, why: str) -> NextAction:
    """A version no measurement can conclude: close it as void, or conclude on nothing."""
    verdict = reading.supported()
    return NextAction(
        "void",
        f"git ledger void {reading.id} --reason '<REASON>'",
        f"{why}: no measurement can give it a verdict; close it as void (its id is never "
        "reused) and register the next bet under today's configuration",
        reading.id,
        ("<REASON>",),
        alternatives=(
            NextAction(
                "conclude",
                f"git ledger conclude {reading.id} --verdict {verdict} --next '<NEXT>'",
                f"conclude it '{verdict}', on no numbers",
                reading.id,
                ("<NEXT>",),
            ),
        ),
    )


def register(state: LedgerState) -> NextAction:
    prefix = state.config.ledger.id_prefix
    real = [v for v in state.versions if not v.front.matrix]
    parent = real[-1] if real else None
    winner = _last_matrix_winner(state)
    if winner is not None and (
        parent is None or state.version_key(winner.id) > state.version_key(parent.id)
    ):
        parent = winner
    last = state.versions[-1].id if state.versions else None
    number = state.version_key(last).number + 1 if last else 1
    suggested = f"{prefix}{number}"
    placeholders = ["<BET>", "<FALSIFIER>"]
    retired = rules.retired_gates(state)
    gates = sorted(g for g in state.config.gates if g not in retired)
    if parent is not None and parent.front.gate in gates:
        gate = parent.front.gate
    elif len(gates) == 1:
        gate = gates[0]
    else:
        gate = "<GATE>"
        placeholders.append(gate)
    if parent is not None and parent.front.files:
        files = ",".join(parent.front.files)
    else:
        files = "<FILES>"
        placeholders.append(files)
    cmd = (
        f"git ledger register {suggested} --bet '<BET>' --gate {quote(gate)} "
        f"--files {quote(files)} --falsifier '<FALSIFIER>'"
    )
    cite = rules.uncited_reflection(state)
    if cite:
        cmd += f" --cites {cite}"
    reason = "no version yet" if last is None else f"{last} is concluded"
    if gate == "<GATE>":
        reason += f" (gates: {', '.join(gates) or 'none; add one to ledger.toml'})"
    return NextAction(
        "register",
        cmd,
        f"{reason}: pre-register the next bet before any code",
        suggested,
        tuple(placeholders),
    )


def _last_matrix_winner(state: LedgerState) -> Version | None:
    for _, matrix in reversed(state.matrices):
        if matrix.concluded and matrix.winner:
            return state.version(f"{matrix.id}.{matrix.winner}")
    return None


def next_action(state: LedgerState, readings: Mapping[str, Reading] | None = None) -> NextAction:
    """The loop's next step in ``state``; ``readings``: the open versions' (read without
    history when missing)."""
    if state.problems:
        path, error = state.problems[0]
        return NextAction(
            "fix-entry", "git ledger doctor", f"{path} does not parse: {error}", None, (), (path,)
        )
    opened = state.open_versions()
    if opened:
        version = opened[0]
        gate = version.front.gate
        reading = (readings or {}).get(version.id) or read(None, state, version.id, None, None)
        if not reading.results:
            if reading.failed:
                seeds = ",".join(sorted({r.key for r in reading.failed}))
                action = measure(state, version.id, gate, seeds)
                return NextAction(
                    "fix-run",
                    action.command,
                    f"every run of {version.id} on '{gate}' failed (seeds {seeds}); "
                    "read the run log, fix the evaluation, and run those seeds again",
                    version.id,
                    action.placeholders,
                )
            return measure(state, version.id, gate)
        unjudged = reading.unjudged()
        if unjudged:
            return void(reading, unjudged)
        if reading.missing:
            return measure_missing(state, reading)
        pending = unmeasured_gates(state, version)
        if pending:
            step = measure(state, version.id, pending[0])
            why = (
                "registered as unaffected (--noop-gates): the eval-noise tripwire reads it"
                if pending[0] in version.front.noop_gates
                else "a regression there is seen only if it is measured"
            )
            return NextAction(
                "measure-gate",
                step.command,
                f"{version.id} is measured on '{gate}'; gate '{pending[0]}' is not yet ({why}; "
                f"still unmeasured: {', '.join(pending)})",
                version.id,
                step.placeholders,
            )
        return conclude(reading)
    matrices = state.open_matrices()
    if matrices:
        matrix = matrices[0]
        return NextAction(
            "matrix",
            f"git ledger matrix status {matrix.id}",
            f"matrix {matrix.id} is open: measure each cell in its worktree, then conclude it",
            matrix.id,
        )
    if state.phase is not None and state.phase.state == "parked":
        # Resuming needs no argument, only the judgment the parking asked for.
        criteria = "; ".join(state.phase.resume_criteria) or "(none listed)"
        first = quote(state.phase.resume_criteria[0]) if state.phase.resume_criteria else None
        return NextAction(
            "resume-phase",
            f"git ledger phase resume --criterion {first} --evidence '<EVIDENCE>'"
            if first
            else "git ledger phase resume --force '<REASON>'",
            f"the loop is parked; resume once the criteria in CAMPAIGN_STATUS.md hold: {criteria}",
            placeholders=("<EVIDENCE>",) if first else ("<REASON>",),
            decide=f"whether the resume criteria hold (which one, with what evidence): {criteria}",
        )
    fired, incomplete = rules.reflection_pending(state)
    if incomplete:
        reflection = next(r for r in state.reflections if r.front.id == incomplete)
        return NextAction(
            "complete-reflection",
            f"git ledger reflect {reflection.front.after} --commit",
            f"{incomplete} is committed incomplete; to fill in: "
            f"{reflectiontext.incomplete(reflection.lacks)}; then commit it",
            incomplete,
            (),
            (reflection.path,),
        )
    if fired:
        after = state.concluded()[-1].id
        return NextAction(
            "reflect",
            f"git ledger reflect {after}",
            "triggers fired: " + "; ".join(f.message for f in fired),
            f"REFLECTION_{after}",
        )
    return register(state)
