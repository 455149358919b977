"""One commit of the replay: what it changed, sent to the rule for each kind of path.

Code (invariant 7, one bet per version), the configuration (invariant 4), the phase and
each preset's own entries and views (invariant 5, as the preset's ``history_rules``
declare them) are judged here; versions and matrices in :mod:`.registrations`, results
in :mod:`.results`. A merge adds nothing of its own.
"""

from __future__ import annotations

from typing import Any

from ledger.core.commitinfo import TRAILER_REASON, TRAILER_STEP, TRAILER_TRANSITION, CommitInfo
from ledger.core.commitrules import glob_match, is_free
from ledger.core.repobase import CONFIG_FILES
from ledger.core.verify.bounds import bounded
from ledger.core.verify.casetwins import commit_twins
from ledger.core.verify.delivery import delivery_end, ended
from ledger.core.verify.findings import withdrawn_reason
from ledger.core.verify.registrations import version_change
from ledger.core.verify.replay import Change, Replay, VState
from ledger.core.verify.results import kind_of, result_change


def step_commit(r: Replay, c: CommitInfo, state: dict[str, Any]) -> None:
    versions: dict[str, VState] = state["v"]
    kind = kind_of(c)  # a re-measurement is a kind of its own
    step = c.trailer(TRAILER_STEP) or ""
    changes = r.diff(c)
    if bounded(r, c, changes):
        return
    if state.get("end") or (kind == "deliver" and delivery_end(r, c, changes, state)):
        ended(r, c, changes, state)
        return
    commit_twins(r, c, changes)
    base = r.dir + "/"
    opened = list(state.get("o", []))  # open before this commit
    # [hooks] as in force before this commit (not HEAD's): its own changes never exempt it.
    hooks = state.get("hk")
    free, strict = (tuple(hooks[0]), bool(hooks[1])) if hooks else (r.free, r.strict)
    code: list[str] = []
    entries = False
    for path, old, new in changes:
        if path == CONFIG_FILES[0] and old is None and new is not None:
            shadowed(r, c, new, opened)
        if path.startswith(base):
            rel = path[len(base) :]
            entry_change(r, Change(c, kind, step, path, rel, old, new), state)
            entries = True
        elif path == r.config_file:
            state["hk"] = r.hook_rules(new)
            layout_change(r, c, path, old, new, opened)
            config_change(r, c, state, kind, old, new, opened, len(changes))
        elif path == CONFIG_FILES[0]:
            # ledger.toml when the tip reads pyproject.toml: it was the configuration then.
            layout_change(r, c, path, old, new, opened)
        elif not is_free(path, free):
            code.append(path)
    if code and kind is None:
        code_commit(r, c, step, code, opened, strict)
    if entries:
        # Kept incrementally (only the versions this commit touched): scanning
        # every version at every commit is quadratic.
        open_now = [v for v in state.get("o", []) if v in versions]
        for vid in state.pop("touched", []):
            flags = versions[vid][3] if vid in versions else "g"
            if set(flags) & set("cvgm"):
                open_now = [v for v in open_now if v != vid]
            elif vid not in open_now:
                open_now.append(vid)
        state["o"] = open_now


def shadowed(r: Replay, c: CommitInfo, new: str, opened: list[str]) -> None:
    """A ledger.toml added beside a pyproject.toml that holds the ledger takes its place
    (ledger.toml is read first): the ledger's place changed, and history written before
    it would be judged by another configuration, or not at all."""
    if r.layout(new, CONFIG_FILES[0]) is None or not c.parents:
        return
    before = r.store.snapshot(c.parents[0]).files(CONFIG_FILES[1]).get(CONFIG_FILES[1])
    if r.layout(before, CONFIG_FILES[1]) is None:
        return
    for vid in opened or [""]:
        r.finding(
            c,
            CONFIG_FILES[0],
            "config-frozen",
            "ledger.toml now configures a ledger in place of pyproject.toml's "
            "[tool.ledger]: history written before it would no longer be judged",
            f"remove it (git revert {c.id[:10]}); a ledger stays where it was created",
            vid,
        )


def open_steps(versions: dict[str, VState]) -> list[str]:
    return [
        vid
        for vid, (_reg, _frozen, _blob, flags) in versions.items()
        if not set(flags) & set("cvgm")
    ]


def code_commit(
    r: Replay, c: CommitInfo, step: str, code: list[str], opened: list[str], strict: bool
) -> None:
    shown = ", ".join(code[:3]) + (" ..." if len(code) > 3 else "")
    if step:
        if step not in opened:
            r.finding(
                c,
                shown,
                "one-bet-per-version",
                f"code commit for {step}, which is not open (registered and not concluded) here",
                f"code for a version comes between its registration and its conclusion; "
                f"git ledger void {opened[0] if opened else step} --reason ... if it cannot count",
                opened[0] if opened else step,
            )
        return
    if opened and strict:
        r.finding(
            c,
            shown,
            "one-bet-per-version",
            f"code commit with no Ledger-Step trailer while {', '.join(opened)} is open",
            "commit code with the hooks installed (git ledger hooks install), or "
            f"git ledger void {opened[0]} --reason ... if its results cannot count",
            opened[0],
        )


def layout_change(
    r: Replay, c: CommitInfo, path: str, old: str | None, new: str | None, opened: list[str]
) -> None:
    """The ledger's place (its configuration file, ``[ledger] dir``, ``id_prefix`` and
    ``preset``) never changes once it exists: history is replayed with the tip's, so a
    moved ledger would leave every entry written before the move unjudged (an adversary
    moves it and edits a result on the way, or drops it and starts over)."""
    before = r.layout(old, path)
    if before is None or before == r.layout(new, path):
        return
    for vid in opened or [""]:
        r.finding(
            c,
            path,
            "config-frozen",
            "the ledger's place changed ([ledger] dir, id_prefix or preset, or the file "
            "that configures it, removed or unreadable): history written before it would "
            "no longer be judged",
            f"restore it (git revert {c.id[:10]}); a ledger stays where it was created",
            vid,
        )


def config_change(
    r: Replay,
    c: CommitInfo,
    state: dict[str, Any],
    kind: str | None,
    old: str | None,
    new: str | None,
    opened: list[str],
    changed: int,
) -> None:
    if not state["cfg"]:
        state["cfg"] = True  # the configuration coming into being
        return
    before, after = r.config_tables(old), r.config_tables(new)
    # A new gate changes no registered version's verdict: only what was there counts.
    if all(after.get(k) == v for k, v in before.items()):
        return
    alone = changed == 1 and kind in (None, "config") and not c.trailer(TRAILER_STEP)
    if (kind == "config" and changed == 1) or alone:
        # A commit of the configuration alone is a visible transition of its own;
        # the hooks add its trailer (Ledger-Transition: config). A setting that judges
        # changes with a reason on record, as config set writes it: a noise floor lowered
        # in silence would pass the next in-noise version.
        r.note(c, "config", "config", r.config_file, c.subject)
        was, now = r.rules_epoch(old), r.rules_epoch(new)
        if now < was:
            r.finding(
                c,
                r.config_file,
                "config-frozen",
                f"[ledger] rules went down from {was} to {now}: the history rules a ledger "
                "keeps never loosen",
                f"restore rules = {was} (git revert {c.id[:10]})",
                "",
            )
        if max(was, now) >= 2 and not (c.trailer(TRAILER_REASON) or "").strip():
            r.finding(
                c,
                r.config_file,
                "config-reason",
                "verdict-affecting settings changed with no reason on record",
                f"say why: git ledger config set KEY VALUE --reason TEXT, or commit "
                f"{r.config_file} alone with --trailer 'Ledger-Reason: why'",
                "",
            )
        return
    why = (
        "in a commit that also changes other files"
        if changed > 1
        else f"in a commit that is not a configuration transition ({kind or 'code'})"
    )
    for vid in opened or [""]:
        r.finding(
            c,
            r.config_file,
            "config-frozen",
            f"verdict-affecting settings ([gates]/[stats]/[triggers]/[batches]/[campaign]) "
            f"changed {why}",
            "change them with 'git ledger config set KEY VALUE --reason TEXT' "
            "(or a commit of ledger.toml alone); "
            + (f"git ledger void {vid} --reason ..." if vid else "they apply to later versions"),
            vid,
        )


def entry_change(r: Replay, change: Change, state: dict[str, Any]) -> None:
    from ledger.core.entrykind import classify

    c, kind, path, rel = change.commit, change.kind, change.path, change.rel
    what = classify(rel, r.prefix)
    if what in ("version", "matrix"):
        version_change(r, change, state, what)
    elif what == "result":
        result_change(r, change, state)
    elif what == "phase":
        if kind != "phase":
            r.finding(
                c,
                path,
                "transitions-only",
                "the phase file changed outside a phase transition",
                "declare or resume a phase with 'git ledger phase'",
                "",
            )
    else:
        preset_change(r, c, kind, path, rel, change.old, change.new)


def preset_rules(r: Replay) -> tuple[list[tuple[str, set[str], bool]], set[str]]:
    """(glob, transitions allowed, append-only) per rule the loop's preset declares
    (:meth:`ledger.core.loops.Preset.history_rules`), and its generated views."""
    if r.rules is None:
        from ledger.core.loops import by_name

        preset = by_name(r.preset)
        rules = []
        for rule in preset.history_rules():
            kinds = {k.strip() for k in rule["changed_by"].split(",")}
            if "hand" not in kinds:  # files people edit are theirs
                rules.append((rule["paths"], kinds, rule.get("mode") == "append"))
        views = {p[len(r.dir) + 1 :] for p in preset.view_paths(r.config)}
        r.rules = (rules, views)
    return r.rules


def preset_change(
    r: Replay,
    c: CommitInfo,
    kind: str | None,
    path: str,
    rel: str,
    old: str | None,
    new: str | None,
) -> None:
    """Invariant 5 for the loop's own entries: each changes only through its transitions."""
    rules, views = preset_rules(r)
    reverted = r.reverted(c)
    undoes = reverted is not None and (path, new, old) in r.diff(reverted)
    content_checks(r, c, kind, path, rel, old, new, undoes)
    if rel in views:
        if kind is None and not undoes:
            r.finding(
                c,
                path,
                "transitions-only",
                f"{rel} is generated by the {r.preset} transitions and was edited by hand",
                f"restore it (git revert {c.id[:10]}); it follows its entries",
                "",
            )
        return
    for glob, kinds, append in rules:
        if not glob_match(rel, glob):
            continue
        if undoes and reverted is not None and reverted.trailer(TRAILER_TRANSITION) in kinds:
            r.note(c, "withdrawn", "", path, f"withdrawn: {withdrawn_reason(c.message)}")
        elif kind not in kinds:
            r.finding(
                c,
                path,
                "transitions-only",
                f"the {r.preset} entry {rel} changed outside its transitions "
                f"({', '.join(sorted(kinds))}; this commit: {kind or 'none'})",
                f"restore it (git revert {c.id[:10]}); change it only with the git ledger verbs",
                "",
            )
        elif append and old is not None:
            r.finding(
                c,
                path,
                "transitions-only",
                f"the {r.preset} entry {rel} was "
                f"{'deleted' if new is None else 'edited'}; it is only ever added",
                f"restore it (git revert {c.id[:10]}); record a new entry instead",
                "",
            )
        return


def content_checks(
    r: Replay,
    c: CommitInfo,
    kind: str | None,
    path: str,
    rel: str,
    old: str | None,
    new: str | None,
    undoes: bool,
) -> None:
    """The preset's rules on what a change says (:meth:`ledger.core.loops.Preset.history_checks`)."""
    if r.checks is None:
        from ledger.core.loops import by_name

        r.checks = by_name(r.preset).history_checks()
    for glob, check in r.checks.items():
        if glob_match(rel, glob):
            before = r.read_blob(old) if old is not None else None
            after = r.read_blob(new) if new is not None else None
            for rule, message, fix in check(kind, before, after, undoes):
                r.finding(c, path, rule, message, fix, "")


def merge_commit(r: Replay, c: CommitInfo, parents: list[dict[str, Any]]) -> dict[str, Any]:
    """A merge adds nothing of its own: each entry equals one side's, and each fact reads
    as the side that recorded it has it (:mod:`.facts`)."""
    from ledger.core.entrykind import classify
    from ledger.core.verify.facts import merge_facts

    merge_facts(r, c)

    snap = r.store.snapshot(c.id)
    merged = snap.files(r.dir)
    sides = [r.store.snapshot(p).files(r.dir) for p in c.parents]
    views = {f"{r.dir}/README.md", f"{r.dir}/_template.md"}
    for path in sorted(set(merged) | {p for s in sides for p in s}):
        rel = path[len(r.dir) + 1 :]
        if path in views or classify(rel, r.prefix) in (None, "reflection"):
            continue
        blob = merged.get(path)
        if blob is not None and any(s.get(path) == blob for s in sides):
            continue
        # An entry one side deleted (its own history judged that) may stay deleted; one
        # every side still holds is lost by the merge alone.
        if blob is None and any(path not in s for s in sides):
            continue
        parts = rel.split("/")
        vid = parts[1] if parts[0] == "results" else rel.removesuffix(".md")
        r.finding(
            c,
            path,
            "transitions-only",
            "the merge commit dropped this entry, which every side holds"
            if blob is None
            else "the merge commit changed this entry beyond what either side recorded",
            f"redo the merge without editing ledger entries (git revert -m 1 {c.id[:10]})",
            vid,
        )
    state: dict[str, Any] = {"v": {}, "cfg": any(p["cfg"] for p in parents), "marks": []}
    end = next((p["end"] for p in parents if p.get("end")), None)
    if end is not None:
        config = snap.files(r.config_file).get(r.config_file)
        if r.layout(config, r.config_file) is None:
            state["end"] = end  # a delivery branch stays one through a merge
        else:
            # What the ended side carries since its delivery was never judged as ledger
            # history: merged into a ledger, it would pass as history unjudged.
            r.finding(
                c,
                r.config_file,
                "config-frozen",
                f"the merge brings a ledger back onto a branch whose ledger ended with its "
                f"delivery {end[:10]}: what that side carries since was never judged",
                f"merge the delivery's code, not its branch (git revert -m 1 {c.id[:10]})",
                "",
            )
    if parents[0].get("hk") is not None:
        state["hk"] = parents[0]["hk"]
    marks: set[str] = set()
    for side, parent in zip(sides, parents, strict=False):
        marks.update(parent["marks"])
        for vid, vs in parent["v"].items():
            vpath = f"{r.dir}/{vid}" + ("-matrix.md" if "m" in vs[3] else ".md")
            in_merge = bool(vs[2]) and merged.get(vpath) == vs[2] == side.get(vpath)
            if vid not in state["v"] or in_merge:
                state["v"][vid] = list(vs)
    for vid, vs in state["v"].items():
        regressed(r, c, vid, vs, [p["v"].get(vid) for p in parents])
    state["marks"] = sorted(marks)
    state["o"] = open_steps(state["v"])
    pending: dict[str, list[str]] = {}
    for parent in parents:
        for path, item in parent.get("del", {}).items():
            if path not in merged:
                pending[path] = item
    if pending:
        state["del"] = pending
    return state


def regressed(r: Replay, c: CommitInfo, vid: str, vs: VState, sides: list[VState | None]) -> None:
    """A concluded or void flag never regresses in a merge: taking the older side's file of
    a version the other side concluded reopens it."""
    if "g" in vs[3] or "x" in vs[3]:
        return
    for side in sides:
        if side is None or "g" in side[3]:
            continue
        lost = [name for flag, name in (("c", "concluded"), ("v", "void")) if flag in side[3]]
        lost = [name for name in lost if name[0] not in vs[3]]
        if lost and side[0] == vs[0]:
            path = f"{r.dir}/{vid}" + ("-matrix.md" if "m" in vs[3] else ".md")
            r.finding(
                c,
                path,
                "transitions-only",
                f"the merge took a side where {vid} is open, but the other side has it "
                f"{' and '.join(lost)}: a merge never reopens a version",
                f"redo the merge keeping {vid}'s closed file (git revert -m 1 {c.id[:10]})",
                vid,
            )
            return
