"""What the verbs ask of the replay about one step: is its history clean, which ids are
taken, which configuration was in force at its registration."""

from __future__ import annotations

from typing import Any

from ledger.core.errors import Refused
from ledger.core.repobase import base_id
from ledger.core.verify.engine import replay, verify
from ledger.core.witnessrefs import WITNESS

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.store import Store


def _unregistered(vid: str) -> Refused:
    return Refused(
        f"{vid} has no registration commit on this branch", f"git ledger register {vid} ..."
    )


def require_clean(store: Store, config: Any, config_file: str, vid: str, tip: str | None) -> str:
    """The registration commit of ``vid``; Refused when its history has findings."""
    report = verify(store, config, config_file, tip)
    reg = report.registrations.get(base_id(vid))
    if reg is None:
        raise _unregistered(vid)
    found = report.for_step(vid, reg, store)
    if found:
        lines = "; ".join(f.line() for f in found[:3]) + (" ..." if len(found) > 3 else "")
        raise Refused(
            f"{vid}'s history does not verify ({len(found)} finding(s)): {lines}",
            f"see 'git ledger verify'; close it with 'git ledger void {vid} --reason ...'",
        )
    return reg


def registration(
    store: Store, config: Any, config_file: str, vid: str, tip: str | None = None
) -> str:
    """The commit that registered ``vid`` (its own file: a matrix cell has none), by the
    one frozen-registration rule (:mod:`.registrations`): Refused with that rule's
    finding, worded as ``verify`` words it, when the registration was edited or deleted
    after it; Refused when there is none on this branch."""
    report = verify(store, config, config_file, tip)
    found = [f for f in report.findings if f.rule == "frozen-registration" and f.step == vid]
    if found:
        raise Refused.of(found)
    commit = report.registrations.get(vid) if vid in report.ever else None
    if commit is None:
        raise _unregistered(vid)
    return commit


def reserved_ids(store: Store, config: Any, config_file: str) -> dict[str, str]:
    """Ids ever registered here (id -> registration commit): never registered again."""
    out = {name[len(WITNESS) :]: target for name, target in store.refs(WITNESS).items()}
    if store.is_shallow():
        return out
    tip = store.resolve(None)
    if tip is None:
        return out
    state, _ = replay(store, config, config_file, tip)
    for vid, vs in state["v"].items():
        if "x" not in vs[3]:
            out.setdefault(vid, vs[0])
    return out


def frozen_config(ctx: Any, state: Any, registration: str) -> Any:
    """``state`` with the verdict-affecting configuration in force at ``registration``.

    Invariant 4: a change after the registration (a configuration transition)
    applies to versions registered after it, never to this one.
    """
    from dataclasses import replace

    from ledger.core.context import load_config

    store = getattr(ctx, "store", ctx)  # a context or the store itself
    loaded = load_config(store, store.snapshot(registration))
    if loaded is None:
        return state
    then, _ = loaded
    now = state.config
    update: dict[str, Any] = {
        "gates": {**now.gates, **then.gates},
        "stats": then.stats,
        "triggers": then.triggers,
    }
    from ledger.core.loops import NAMES

    # Each loop's own table of ledger.toml ([campaign], [batches]) is frozen the same way.
    for table in (name for name in NAMES if name in type(then).model_fields):
        if getattr(then, table) is not None:
            update[table] = getattr(then, table)
    return replace(state, config=now.model_copy(update=update))


def ingest_config(store: Store, config: Any, config_file: str, vid: str) -> Any:
    """``config`` with the gates (their metrics and JSON paths) frozen at ``vid``'s
    registration: a ``config set`` of a gate's mapping after it applies to versions
    registered later, never to this one's results (invariant 4, at ingest)."""
    from ledger.core.context import load_config
    from ledger.core.errors import LedgerError

    tip = store.resolve(None)
    if tip is None:
        return config
    try:
        # The replay alone (verify's registrations, without its findings and its saved
        # report): what a record asks of history, paid on every result it records.
        state, _ = replay(store, config, config_file, tip)
    except LedgerError:
        return config  # no history to read (a shallow clone): today's, as before
    found = state["v"].get(base_id(vid))
    reg = found[0] if found is not None and "g" not in found[3] else None
    loaded = load_config(store, store.snapshot(reg)) if reg is not None else None
    if loaded is None:
        return config
    then, _ = loaded
    return config.model_copy(update={"gates": {**config.gates, **then.gates}})
