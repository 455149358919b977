"""What only history can say about a campaign: the rules ``finish``, ``deliver``,
``candidate record`` and ``next`` read from the commits, not from the entries.

- ``history``: ``verify`` is clean. A rejected candidate flipped to promoted with
  ``--no-verify`` is a verify finding, and a campaign with one is never finished.
- ``unrecorded-commit``: every code commit after the base is a recorded candidate
  (any verdict), or a revert of one, or reverted itself (a revert commit says it is
  left out); a change that was never measured is never delivered silently, nor left
  out silently. ``next`` proposes the oldest first.
- ``measured-with``: a candidate kept (promoted or held) sits on no unrecorded code
  commit and no rejected candidate that is not reverted under it: what was measured
  is what deliver ships. ``next`` proposes reverting a rejected candidate before the
  next one is committed, and offers only ``rejected`` to a commit on top of one.
- ``benchmark-changed``: the measuring script is the one of the current benchmark
  epoch (the tree that recorded its base, or the adjustment that opened it); a
  change without ``benchmark adjust`` makes every later number incomparable.
"""

from __future__ import annotations

import re

from ledger.core import gitcli
from ledger.core.context import Context
from ledger.core.errors import BadInput
from ledger.core.findings import Finding
from ledger.core.store import TRAILER_TRANSITION
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign.loop import Campaign

REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})")


def history_findings(ctx: Context) -> list[Finding]:
    """verify's findings, each as this loop's refusal names it."""
    from ledger.core.verify import verify

    report = verify(ctx.store, ctx.config, ctx.config_file)
    return [
        Finding("history", f"history does not verify: {f.line()}", f.fix or "git ledger verify")
        for f in report.findings
    ]


def _log(ctx: Context, args: list[str]) -> str:
    return gitcli.output(["log", *args], ctx.store.require_workdir())


def epoch_start(ctx: Context, camp: Campaign) -> str | None:
    """The commit whose tree holds the current epoch's measuring script: the adjustment
    that opened the epoch, else the transition that recorded epoch 0's base."""
    if camp.epoch > 0:
        path = f"{ctx.dir}/benchmark/adjust-{camp.epoch:03d}.json"
    else:
        base = camp.base()
        if base is None:
            return None
        path = base.path
    out = _log(ctx, ["-1", "--format=%H", "--diff-filter=A", "--", path]).strip()
    return out or None


def script_changed(ctx: Context, camp: Campaign) -> Finding | None:
    """The measuring script changed after the current epoch began (no ``benchmark adjust``)."""
    script = campaign.table(ctx.config).benchmark_script
    if not script:
        return None
    start = epoch_start(ctx, camp)
    if start is None:
        return None
    head = ctx.store.snapshot()
    then = ctx.store.snapshot(start)
    if head.blob_id(script) == then.blob_id(script):
        return None
    last = _log(ctx, ["-1", "--format=%H", "--", script]).strip()
    since = f"benchmark adjustment {camp.epoch}" if camp.epoch else "the base was measured"
    return Finding(
        "benchmark-changed",
        f"the measuring script {script} changed ({last[:10] or 'work tree'}) since {since}: "
        "numbers measured with it are not comparable with the epoch's",
        "git ledger benchmark adjust --reason TEXT, then re-measure the base and the head",
    )


def script_blob_differs(ctx: Context, camp: Campaign, blob: str | None) -> Finding | None:
    """A run measured with a benchmark script (blob id ``blob``) other than the current
    epoch's: refused until ``benchmark adjust`` (the epoch's script is the one of the
    commit that opened it, else the one at HEAD while no base is recorded)."""
    script = campaign.table(ctx.config).benchmark_script
    if not script:
        return None
    start = epoch_start(ctx, camp)
    epoch_blob = ctx.store.snapshot(start).blob_id(script)
    if blob == epoch_blob:
        return None
    return Finding(
        "benchmark-changed",
        f"the run measured with {script} at blob {(blob or 'none')[:10]}, but benchmark "
        f"epoch {camp.epoch} measures with blob {(epoch_blob or 'none')[:10]}: its numbers "
        "are not comparable with the epoch's",
        "git ledger benchmark adjust --reason TEXT (then re-measure the base and the head), "
        "or measure a commit that has the epoch's script",
    )


def instrument(ctx: Context, camp: Campaign, sha: str) -> tuple[str | None, bytes | None]:
    """The benchmark script a run at ``sha`` measures with: its blob id, and the bytes to
    put in the run's worktree when ``sha`` is older than the epoch (the base re-measured
    after ``benchmark adjust`` runs the epoch's script, not the one it was committed with).
    A newer commit runs its own script, which ``script_blob_differs`` then judges."""
    script = campaign.table(ctx.config).benchmark_script
    if not script:
        return None, None
    start = epoch_start(ctx, camp) or ctx.store.resolve(None)
    then = ctx.store.snapshot(start)
    own = ctx.store.snapshot(sha).blob_id(script)
    epoch_blob = then.blob_id(script)
    if own != epoch_blob and start and sha != start and ctx.store.is_ancestor(sha, start):
        return epoch_blob, then.read(script)
    return own, None


def code_paths(ctx: Context, paths: list[str]) -> list[str]:
    """The paths of a commit that are code: not the ledger, its configuration or the
    measuring script; with ``[campaign] scope``, only paths inside it."""
    cfg = campaign.table(ctx.config)
    code = [
        p
        for p in paths
        if not p.startswith(ctx.dir + "/") and p not in (ctx.config_file, cfg.benchmark_script)
    ]
    outside = set(campaign.out_of_scope(ctx.config, code))
    return [p for p in code if p not in outside]


def code_commits(ctx: Context, span: str) -> list[tuple[str, str]]:
    """(id, message) of the commits in ``span`` that change code, oldest last; ledger
    transitions are never code."""
    # One log: id, the transition trailer, the message; then the changed paths (-z keeps
    # any file name whole).
    out = _log(
        ctx,
        [
            "--no-merges",
            "-z",
            "--name-only",
            f"--format=%x01%H%x02%(trailers:key={TRAILER_TRANSITION},valueonly)%x02%B%x02",
            span,
        ],
    )
    found: list[tuple[str, str]] = []
    for record in out.split("\x01")[1:]:
        sha, trailer, body, rest = [*record.split("\x02", 3), "", "", ""][:4]
        if trailer.strip():
            continue
        paths = [p.strip("\n") for p in rest.split("\0") if p.strip("\n")]
        if code_paths(ctx, paths):
            found.append((sha, body))
    return found


def unrecorded_commits(ctx: Context, camp: Campaign) -> list[Finding]:
    """Code commits after the first base that no candidate records (reverts of recorded
    candidates excepted)."""
    first = next((c for c in camp.candidates if c.verdict == "base"), None)
    if first is None:
        return []
    recorded = {c.commit for c in camp.candidates}
    commits = code_commits(ctx, f"{first.commit}..HEAD")
    undone = {m.group(1) for _, body in commits if (m := REVERTS.search(body))}
    found: list[Finding] = []
    for sha, body in commits:
        reverted = REVERTS.search(body)
        if sha in recorded or sha in undone or (reverted and reverted.group(1) in undone):
            continue
        found.append(
            Finding(
                "unrecorded-commit",
                f"code commit {sha[:10]} is not a recorded candidate",
                f"git ledger candidate record --commit {sha[:12]} --verdict rejected "
                "--reason TEXT ... (or revert it)",
                {"commit": sha},
            )
        )
    return found


def head_not_delivered(ctx: Context, camp: Campaign) -> Finding | None:
    """The promoted head was measured with a change deliver would not ship: a commit
    under it (after the base) that is neither kept (promoted or held) nor undone by a
    revert under it. ``deliver`` compares the trees as well, after it builds them."""
    base, head = camp.base(), camp.head()
    if base is None or head is None or head.commit == base.commit:
        return None
    if not ctx.store.is_ancestor(base.commit, head.commit):
        return None
    kept = set(camp.promoted_commits())
    commits = code_commits(ctx, f"{base.commit}..{head.commit}")
    undone = {m.group(1) for _, body in commits if (m := REVERTS.search(body))}
    extra = [
        sha
        for sha, body in commits
        if sha not in kept and sha not in undone and not REVERTS.search(body)
    ]
    if not extra:
        return None
    return Finding(
        "delivered-tree",
        f"the head {head.commit[:10]} was measured with {', '.join(s[:10] for s in extra[:3])}, "
        "which deliver does not ship (neither promoted nor held): what was measured is not "
        "what would ship",
        f"git revert {extra[0][:10]}, commit the head's change again on top, measure and record it",
    )


def standing_rejected(ctx: Context, camp: Campaign) -> list[str]:
    """The rejected candidates whose code is still on the branch (after the base, not
    reverted), oldest first: a candidate committed on top would be measured with them,
    and a promotion of it could not be delivered (``delivered-tree``)."""
    base = camp.base()
    rejected = {c.commit for c in camp.candidates if c.verdict == "rejected"}
    if base is None or not rejected:
        return []
    commits = code_commits(ctx, f"{base.commit}..HEAD")
    undone = {m.group(1) for _, body in commits if (m := REVERTS.search(body))}
    return [sha for sha, _ in reversed(commits) if sha in rejected and sha not in undone]


def measured_with(ctx: Context, camp: Campaign, sha: str) -> list[Finding]:
    """What a candidate ``sha`` kept (promoted or held) would carry that deliver does not
    ship: a code commit under it, after the base, that is not a recorded candidate (it
    is recorded first, oldest first), or a rejected one not reverted under it."""
    base = camp.base()
    if base is None or sha == base.commit or not ctx.store.is_ancestor(base.commit, sha):
        return []
    recorded = {c.commit: c.verdict for c in camp.candidates}
    commits = [c for c in code_commits(ctx, f"{base.commit}..{sha}") if c[0] != sha]
    undone = {m.group(1) for _, body in commits if (m := REVERTS.search(body))}
    found: list[Finding] = []
    for other, body in reversed(commits):
        if other in undone or REVERTS.search(body):
            continue
        if other not in recorded:
            found.append(
                Finding(
                    "measured-with",
                    f"{sha[:10]} sits on code commit {other[:10]}, which is not a recorded "
                    "candidate: it would be kept with a change nobody measured",
                    f"git ledger candidate record --commit {other[:12]} ... (record the "
                    "oldest first), or revert it and record this candidate again on top",
                )
            )
        elif recorded[other] == "rejected":
            found.append(
                Finding(
                    "measured-with",
                    f"{sha[:10]} sits on rejected candidate {other[:10]}, which deliver does "
                    "not ship: what was measured is not what would ship",
                    f"git revert --no-edit {other[:12]}, then commit this change again on "
                    "top and measure it",
                )
            )
    return found


def measure_change(ctx: Context, sha: str, declared: str | None) -> tuple[str, dict[str, int]]:
    """The kind and the size of ``sha``'s own change (against its first parent)."""
    from ledger.presets.campaign.invasive import KINDS, infer_kind

    # -z keeps any file name whole; --no-renames counts a move as what it rewrites;
    # --root gives a first commit its whole tree as its change.
    out = gitcli.output(
        ["diff-tree", "-r", "-z", "--numstat", "--no-renames", "--root", "--no-commit-id", sha],
        ctx.store.require_workdir(),
    )
    fields = out.split("\0")
    sizes: dict[str, int] = {}
    for field in fields:
        parts = field.strip("\n").split("\t", 2)
        if len(parts) != 3:
            continue
        added, removed, path = parts
        # A binary file has no line count ("-"): it counts as one changed line.
        sizes[path] = int(added) + int(removed) if added.isdigit() and removed.isdigit() else 1
    paths = code_paths(ctx, sorted(sizes))
    kind = infer_kind(paths)
    if declared is not None:
        if declared not in KINDS:
            raise BadInput(f"--kind {declared!r} is not a kind", f"one of {', '.join(KINDS)}")
        if KINDS.index(declared) < KINDS.index(kind) and not (
            {declared, kind} == {"setting", "dependency"}
        ):
            raise BadInput(
                f"--kind {declared}: {sha[:10]} changes {', '.join(paths[:3])}, a {kind} change",
                f"record it as --kind {kind} (a kind is read from the files, not declared less)",
            )
        kind = declared
    return kind, {"files": len(paths), "lines": sum(sizes[p] for p in paths)}


def outstanding(ctx: Context, camp: Campaign) -> list[Finding]:
    """Everything that keeps the campaign from being finished or delivered: the entries'
    rules (:func:`ledger.presets.campaign.rules.finish_outstanding_at`) and history's."""
    from ledger.presets.campaign.rules import finish_outstanding_at

    found = finish_outstanding_at(ctx.store.snapshot(), camp)
    changed = script_changed(ctx, camp)
    if changed is not None:
        found.append(changed)
    found += unrecorded_commits(ctx, camp)
    tree = head_not_delivered(ctx, camp)
    if tree is not None:
        found.append(tree)
    found += history_findings(ctx)
    return found
