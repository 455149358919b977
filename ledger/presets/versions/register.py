"""``git ledger register``: the pre-registration commit, written before any code."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path

from ledger.core import output, stats
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import Document, parse_document
from ledger.core.model.entries import VersionFront
from ledger.core.model.ids import (
    VersionId,
    check_case_unique,
    check_safe,
    next_sibling,
    parse_version,
)
from ledger.core.resources import read_resource, render
from ledger.core.state import TEMPLATE, LedgerState, Version
from ledger.core.store import Snapshot, Transition, check_entry_path
from ledger.core.verify import create_witness, reserved_ids
from ledger.presets.versions import backlog, rules
from ledger.presets.versions.baseline import standing_baseline
from ledger.presets.versions.views import readme_update

_TWO_SENTENCES = re.compile(r"[.!?]\s+[A-Z]")


def split_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def check_bet(bet: str) -> str:
    bet = bet.strip()
    if not bet:
        raise BadInput("--bet is empty", "state the one bet in one sentence")
    if "\n" in bet or _TWO_SENTENCES.search(bet):
        raise BadInput(
            "--bet must be one sentence (one bet per version)",
            "split several bets into several versions",
        )
    return bet


def taken_names(state: LedgerState) -> set[str]:
    """Every id that names a file or branch of this ledger: versions, cells, matrices."""
    return {v.id for v in state.versions} | {m.id for _, m in state.matrices}


def check_requested(ctx: Context, requested: str) -> None:
    """An id given by the user; one that only differs in case from a taken id says so.

    ``V2A`` beside ``V2a`` is refused for the collision it would be, not only
    as an id the pattern does not allow (a valid id is checked in
    :func:`choose_id`, against the tip the transition extends).
    """
    try:
        parse_version(requested, ctx.config.ledger.id_prefix)
    except BadInput:
        check_case_unique(requested, taken_names(ctx.state()), "version id")
        raise


def default_parent(state: LedgerState, skip: frozenset[str] = frozenset()) -> str:
    """The newest version; after a matrix, its winning cell (or, with none, the version the
    matrix was measured against), never merely the last cell concluded. ``skip``: versions
    whose code is reverted on HEAD (:func:`~ledger.presets.versions.reverts.reverted_versions`),
    passed over for the newest concluded one before them."""
    if state.versions[-1].id in skip:
        earlier = [
            v
            for v in state.versions
            if v.concluded and v.id not in skip and (not v.front.matrix or v.verdict == "confirmed")
        ]
        if earlier:
            return earlier[-1].id
    last = state.versions[-1]
    mid = last.front.matrix
    if mid is None:
        return last.id
    found = state.matrix(mid)
    matrix = found[1] if found else None
    if matrix is not None and matrix.winner:
        return f"{mid}.{matrix.winner}"
    earlier = [v for v in state.versions if v.front.matrix is None]
    return earlier[-1].id if earlier else last.id


def never_reused(vid: str, reserved: dict[str, str], present: set[str]) -> Refused | None:
    """The refusal of an id registered before whose registration is not here (withdrawn
    by ``git revert``, or left on an unmerged branch); ``reserved``: ids ever registered
    (:func:`ledger.core.verify.reserved_ids`, their witness refs among them, which
    ``next`` skips when it proposes an id), ``present``: the ids registered here."""
    if vid not in reserved or vid in present:
        return None
    return Refused(
        f"[ids-never-reused] {vid} was registered before (commit {reserved[vid][:10]}) "
        "and its registration withdrawn; an id is never reused",
        "omit the id to take the next free one",
    )


def choose_id(
    state: LedgerState,
    requested: str | None,
    parent: str | None,
    reserved: dict[str, str] | None = None,
    skip: frozenset[str] = frozenset(),
) -> tuple[str, str | None]:
    """The new version id and its parent: parent + 1, or the next free sibling.

    ``reserved``: ids registered before in this history (reverted, renamed away),
    which are never registered again.
    """
    prefix = state.config.ledger.id_prefix
    reserved = reserved or {}
    taken = {v.id for v in state.versions} | set(reserved)
    if parent is not None:
        parse_version(parent, prefix)
        if parent not in taken:
            raise BadInput(
                f"--parent {parent} is not a version in this ledger", "see 'git ledger status'"
            )
    elif state.versions:
        parent = default_parent(state, skip)
        newest = parse_version(state.versions[-1].id, prefix)
        if requested is None and newest.number > parse_version(parent, prefix).number:
            return str(VersionId(prefix, newest.number + 1)), parent
    if requested is not None:
        vid = parse_version(requested, prefix)
        if vid.cell:
            raise BadInput(
                f"{requested} is a matrix cell id", "register cells with 'git ledger matrix new'"
            )
        withdrawn = never_reused(str(vid), reserved, {v.id for v in state.versions})
        if withdrawn is not None:
            raise withdrawn
        if str(vid) in taken:
            raise BadInput(f"{requested} is already registered", "pick another id or omit it")
        check_case_unique(str(vid), taken_names(state), "version id")
        return str(vid), parent
    if parent is None:
        first = VersionId(prefix, 1)
        while str(first) in taken:
            first = first.next_number()
        return str(first), None
    base = parse_version(parent, prefix)
    candidate = VersionId(prefix, base.number + 1)
    if str(candidate) in taken:
        candidate = next_sibling(taken, candidate)
    return str(candidate), parent


def mde_for(state: LedgerState, gate: str) -> tuple[float, float, float] | None:
    """(MDE, n_eff, σ) for ``gate`` at the n the loop has been measuring with.

    Where the newest concluded comparison on the gate was paired (shared seeds or
    windows), its σ of the differences and its effective n predict the next one;
    otherwise the standing best's spread, unpaired, at its effective n.
    """
    cfg = state.config.gates[gate]
    st = state.config.stats
    for version in reversed(state.versions):
        conclusion = version.front.conclusion
        stat = next((g for g in conclusion.gates if g.gate == gate), None) if conclusion else None
        if stat is not None and stat.pairing in ("paired", "walk-forward") and stat.sigma:
            # The verdict's own rule at the same design: SE on n_eff and the degrees of
            # freedom the comparison had (for overlapping windows, their spread's own df,
            # not n_eff - 1, which near n_eff = 1 made the MDE explode).
            n_eff = max(stat.n_eff, 1.0)
            se = stat.sigma / math.sqrt(n_eff)
            return (
                stats.mde_for_se(
                    se,
                    stat.df,
                    sigma_k=st.sigma_k,
                    alpha=st.alpha,
                    power=st.power,
                    small_n=st.small_n,
                ),
                n_eff,
                stat.sigma,
            )
    best = standing_baseline(state, gate)
    found = [r for r in state.results_for(best.id, gate)] if best else []
    values = [r.data.metrics[cfg.metric] for r in found if cfg.metric in r.data.metrics]
    sample = stats.sample(values) if values else None
    sigma = sample.sd if sample is not None and sample.sd is not None else cfg.noise_floor
    if sigma is None:
        return None
    n_eff = float(sample.n) if sample is not None else 1.0
    if cfg.mode == "walk-forward" and found:
        spans = [
            (date.fromisoformat(r.data.window_start), date.fromisoformat(r.data.window_end))
            for r in found
            if r.data.window_start and r.data.window_end
        ]
        if len(spans) == len(found):
            n_eff = stats.effective_n(spans)
    return (
        stats.mde(sigma, n_eff, st.alpha, st.power, st.small_n, sigma_k=st.sigma_k, paired=False),
        n_eff,
        sigma,
    )


def version_document(state: LedgerState, snap: Snapshot, front: VersionFront) -> str:
    template_bytes = snap.read(f"{state.config.dir}/{TEMPLATE}")
    template = (
        template_bytes.decode() if template_bytes else read_resource("templates", "version.md")
    )
    body = render(
        template,
        id=front.id,
        bet=front.bet,
        gate=front.gate,
        falsifier=front.falsifier,
        files=", ".join(f"`{f}`" for f in front.files) or "—",
        noop_gates=", ".join(front.noop_gates) or "—",
    )
    if body.startswith("---\n"):  # a user template with its own front matter: keep its body
        body = parse_document(body, TEMPLATE).body
    data = front.model_dump(mode="json", exclude={"conclusion"})
    if not data.get("ships"):  # only when it ships a delta: earlier entries read the same
        data.pop("ships", None)
    return Document(front=data, body=body.lstrip("\n")).render()


@dataclass(frozen=True)
class RegisterOptions:
    """``git ledger register``'s options, named once: the CLI builds this from what it parsed."""

    bet: str
    gate: str
    files: str
    falsifier: str
    step_id: str | None = None
    subsystem: str | None = None
    parent: str | None = None
    noop_gates: str | None = None
    effect: float | None = None
    cites: str | None = None
    force: str | None = None
    as_json: bool = False
    ships: str | None = None  # queued observability deltas it ships (see backlog.py)
    # The machine preconditions the verb declares (its declaration's ``requires``).
    requires: tuple[str, ...] = ()


def run(cwd: Path, options: RegisterOptions) -> int:
    requested, bet, gate, falsifier = options.step_id, options.bet, options.gate, options.falsifier
    files, noop_gates, subsystem, parent = (
        options.files,
        options.noop_gates,
        options.subsystem,
        options.parent,
    )
    effect, cites, force, as_json = options.effect, options.cites, options.force, options.as_json
    ctx = open_context(cwd)
    # Bad input is reported before any rule is consulted (exit 2 before exit 1).
    if requested is not None:
        check_requested(ctx, requested)
    if parent is not None:
        parse_version(parent, ctx.config.ledger.id_prefix)
    ctx.require_committed_config()
    bet = check_bet(bet)
    if not falsifier.strip() or "\n" in falsifier.strip():
        raise BadInput("--falsifier must be one line saying what result would refute the bet")
    ctx.config.gate(gate)
    plan = split_list(files)
    if not plan:
        raise BadInput("--files is empty", "list the files the bet will change: --files a.py,b.py")
    for item in plan:
        check_entry_path(item)
    noop = split_list(noop_gates)
    for name in noop:
        ctx.config.gate(name)
    if gate in noop:
        raise BadInput(f"gate {gate!r} cannot be both targeted and expected unaffected")
    if subsystem is not None:
        check_safe(subsystem, "subsystem")
    if cites is not None:
        check_safe(cites, "reflection id")
    if force is not None and not force.strip():
        raise BadInput("--force needs a reason")
    if force is not None and ("\n" in force.strip() or "\r" in force):
        raise BadInput("--force must be one line (it becomes a commit trailer)")
    _require_clean_ledger_dir(ctx, options.requires)
    reserved = reserved_ids(ctx.store, ctx.config, ctx.config_file)
    from ledger.presets.versions.reverts import reverted_versions

    skip = frozenset(reverted_versions(ctx.store)) if parent is None else frozenset()
    skipped: list[str] = []  # what build() passed over, and the parent it chose
    chosen: list[str | None] = [None]
    ships: list[str] = []

    def build(snap: Snapshot) -> Transition:
        state = ctx.state(snap)
        if cites is not None and not any(r.front.id == cites for r in state.reflections):
            raise BadInput(
                f"--cites {cites} names no committed reflection",
                "commit the reflection first (git ledger reflect ... --commit), then cite its id",
            )
        blockers = rules.registration_blockers(state, cites)
        if blockers:
            raise Refused.of(blockers)
        vid, parent_id = choose_id(state, requested, parent, reserved, skip)
        newest_skipped = parent is None and bool(state.versions) and state.versions[-1].id in skip
        skipped[:] = [v.id for v in state.versions if v.id in skip] if newest_skipped else []
        chosen[0] = parent_id
        forced: str | None = None
        if effect is not None:
            found = mde_for(state, gate)
            if found is not None and abs(effect) < found[0]:
                message = (
                    f"[below-mde] --effect {effect:g} is below the minimum detectable effect "
                    f"{found[0]:.4g} on gate '{gate}' (σ={found[2]:.4g}, n_eff={found[1]:.3g}): "
                    "structurally unfalsifiable"
                )
                if force is None:
                    raise Refused(
                        message, "bet on a bigger effect, measure more seeds, or --force REASON"
                    )
                forced = force
        retired = rules.retired_gates(state).get(gate)
        if retired is not None:
            raise Refused(
                f"[retired-target] {retired} retired gate '{gate}' as a target",
                "target another gate (it can still be measured as a --noop-gates gate)",
            )
        dead = rules.exhausted_subsystems(state).get(subsystem or "")
        if dead is not None:
            if force is None:
                raise Refused(
                    f"[exhausted-subsystem] {dead} declared subsystem '{subsystem}' exhausted",
                    "bet outside it (see the reflection's untouched dimensions), or --force REASON",
                )
            forced = force
        front = VersionFront(
            id=vid,
            parent=parent_id,
            bet=bet,
            gate=gate,
            files=plan,
            falsifier=falsifier.strip(),
            subsystem=subsystem,
            noop_gates=noop,
            effect=effect,
            cites=cites,
            force_reason=forced,
            ships=backlog.to_ship(state, snap.read, split_list(options.ships)),
        )
        ships[:] = front.ships
        path = f"{ctx.dir}/{vid}.md"
        writes: dict[str, bytes | None] = {path: version_document(state, snap, front).encode()}
        after = replace(state, versions=[*state.versions, Version(front, path, "")])
        writes.update(readme_update(snap, after))
        writes.update(backlog.view_update(after, snap.read))
        scope = subsystem or gate
        trailers = (("Ledger-Force", forced),) if forced else ()
        return Transition(
            kind="register",
            step=vid,
            subject=f"docs({scope}): {vid} — register: {bet}",
            body=f"Falsifier: {falsifier.strip()}\nPlanned files: {', '.join(plan)}",
            writes=writes,
            trailers=trailers,
        )

    commit_id, transition = ctx.store.transact(build)
    create_witness(ctx.store, transition.step, commit_id)
    _sync_after_register(ctx)
    if as_json:
        output.emit_json(
            {
                "id": transition.step,
                "commit": commit_id,
                "path": f"{ctx.dir}/{transition.step}.md",
                **({"ships": ships} if ships else {}),
            }
        )
    else:
        output.say(f"registered {transition.step} ({commit_id[:10]}): {bet}")
        if skipped:
            output.say(
                f"parent: {chosen[0]} ({', '.join(skipped)} skipped: "
                "code reverted on this branch; --parent names another)"
            )
        if ships:
            output.say(f"ships (observability backlog): {', '.join(ships)}")
        output.say(f"next: commit the code for {transition.step}, then measure it")
    return 0


def _require_clean_ledger_dir(ctx: Context, requires: tuple[str, ...]) -> None:
    """A registration must not sit on top of ledger entries nobody committed: the
    precondition ``entries-committed`` it declares, checked as ``next`` checks it
    (:func:`ledger.core.machine.require`). An entry that is not a plain file is bad
    input, said first."""
    from ledger.core import machine
    from ledger.core.loops import preset_for
    from ledger.core.workspace import of_loop

    workdir = ctx.store.require_workdir()
    left = of_loop(workdir, ctx.dir, preset_for(ctx.config))
    for _, path in left.entries:
        full = workdir / path
        if full.is_symlink() or (full.exists() and not full.is_file()):
            raise BadInput(
                f"{path} is not a regular file in the working tree",
                "move it away; ledger entries are plain files",
            )
    if left.entries:
        machine.require(requires, ctx.store, ctx.dir, ctx.config.ledger.preset)


def _sync_after_register(ctx: Context) -> None:
    """Push the registration promptly: a remote is the only external witness of its date."""
    from ledger.core import share as sync

    sync.after_register(ctx)
