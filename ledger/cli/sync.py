"""``git ledger sync [REMOTE]``: share the ledger through an ordinary git remote.

Everything that talks to the remote goes through the git program, so
credential helpers, ssh config and ``--atomic`` work as the user set them up.
One round: fetch; if the remote moved, rename any version id both sides
registered (the unpublished one becomes the next free sibling, with a note),
merge (the ``ledger-views`` driver regenerates generated views from the merged
entries), verify every entry parses and every view matches, then push with
``--force-with-lease=<ref>:<sha>`` on the sha we merged. A rejected push means
another machine won the race: fetch and try again, with bounded, jittered
backoff.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace as dc_replace
from pathlib import Path

from ledger.cli.syncrebase import rebase_if_clean
from ledger.core import gitcli, output
from ledger.core.context import Context, open_context
from ledger.core.errors import BadInput, Refused
from ledger.core.loops import preset_for
from ledger.core.model.documents import decode_text, parse_document
from ledger.core.model.entries import VersionFront
from ledger.core.model.ids import next_sibling, parse_version
from ledger.core.repobase import results_dir
from ledger.core.share import after_register as after_register
from ledger.core.share import default_remote, mirror_witnesses
from ledger.core.state import Version
from ledger.core.store import Snapshot, Transition
from ledger.core.verify import REMOTE_WITNESS, WITNESS, create_witness
from ledger.core.verify import verify as verify_history
from ledger.core.views import drift, readme_path, readme_update
from ledger.hooks.mergeviews import configure_driver, regenerate, view_paths


def _remote_sha(ctx: Context, remote: str, branch: str) -> str | None:
    proc = gitcli.run(
        ["rev-parse", "-q", "--verify", f"refs/remotes/{remote}/{branch}^{{commit}}"],
        ctx.store.require_workdir(),
        check=False,
        clean_env=True,
    )
    return proc.stdout.strip() or None


def rename_collisions(ctx: Context, theirs: str) -> list[str]:
    """Versions registered here and, with different content, on the remote: rename ours.

    Ours is the one not yet published, so it is the later registration as far
    as the remote (the only external witness) is concerned.
    """
    store = ctx.store
    ours = store.resolve(None)
    if ours is None:
        return []
    base = store.repo.merge_base(ours, theirs)
    base_snap = store.snapshot(str(base)) if base else None
    mine, other = ctx.state(store.snapshot(ours)), ctx.state(store.snapshot(theirs))
    base_ids = {v.id for v in ctx.state(base_snap).versions} if base_snap else set()
    clashes = [
        v
        for v in mine.versions
        if v.id not in base_ids
        and other.version(v.id) is not None
        and not v.front.matrix
        and store.snapshot(ours).blob_id(v.path) != store.snapshot(theirs).blob_id(v.path)
    ]
    notes = []
    for version in clashes:
        taken = {v.id for v in mine.versions} | {v.id for v in other.versions}
        new_id = str(next_sibling(taken, parse_version(version.id, ctx.config.ledger.id_prefix)))

        def build(snap: Snapshot, old: str = version.id, new: str = new_id) -> Transition:
            base_dir = ctx.dir
            writes: dict[str, bytes | None] = {}
            path = f"{base_dir}/{old}.md"
            doc = parse_document(decode_text(snap.read(path) or b"", path), path)
            front = {**doc.front, "id": new}
            note = (
                f"\n> Renamed from {old} by `git ledger sync`: {old} was registered concurrently "
                "on another machine and reached the remote first. Code commits made before the "
                f"rename still carry `Ledger-Step: {old}`.\n"
            )
            writes[path] = None
            writes[f"{base_dir}/{new}.md"] = (
                doc.replace(front=front, body=doc.body + note).render().encode()
            )
            old_results = results_dir(base_dir, old)
            for file, blob in snap.files(old_results).items():
                writes[file] = None
                target = results_dir(base_dir, new) + file[len(old_results) :]
                data = snap.read_blob(blob).replace(
                    f'"version": "{old}"'.encode(), f'"version": "{new}"'.encode()
                )
                writes[target] = data
            state = ctx.state(snap)
            renamed = [v for v in state.versions if v.id != old]

            moved = state.version(old)
            if moved is not None:
                renamed.append(
                    Version(
                        VersionFront.model_validate({**moved.front.model_dump(), "id": new}),
                        f"{base_dir}/{new}.md",
                        moved.hypothesis,
                    )
                )
            after = dc_replace(
                state, versions=sorted(renamed, key=lambda v: state.version_key(v.id))
            )
            writes.update(readme_update(snap, after, preset_for(ctx.config)))
            return Transition(
                kind="rename",
                step=new,
                subject=f"docs(ledger): rename {old} to {new} (id taken on the remote)",
                body=note.strip("\n> "),
                writes=writes,
            )

        commit_id, _ = ctx.store.transact(build)
        # Ours was never published (the remote's witness names theirs): its local
        # witness goes with it to the new id, and the remote's is taken for the old one.
        ctx.store.delete_ref(f"{WITNESS}{version.id}")
        create_witness(ctx.store, new_id, commit_id)
        notes.append(f"{version.id} was also registered on the remote: renamed ours to {new_id}")
    return notes


def verify(ctx: Context) -> list[str]:
    """After a merge: every entry parses and every view matches its entries."""
    snap = ctx.store.snapshot()
    state = ctx.state(snap)
    found = [f"{p}: {e}" for p, e in state.problems]
    where = readme_path(ctx.config)
    readme = snap.read(where)
    found += drift(
        decode_text(readme, "README") if readme is not None else None,
        preset_for(ctx.config).readme_views(state),
        where,
    )
    workdir = ctx.store.require_workdir()
    for path in view_paths(ctx.config):
        if (workdir / path).is_file() and "<<<<<<<" in (workdir / path).read_text(errors="replace"):
            found.append(f"{path}: conflict markers")
    return found


def _check_arriving(ctx: Context, theirs: str, ours: str | None) -> None:
    """``git ledger verify`` on what arrives: a finding there is never merged."""
    report = verify_history(ctx.store, ctx.config, ctx.config_file, theirs, [ours] if ours else [])
    if report.findings:
        lines = "; ".join(f.line() for f in report.findings[:3])
        more = f" (and {len(report.findings) - 3} more)" if len(report.findings) > 3 else ""
        raise Refused(
            f"what the remote holds does not verify: {lines}{more}",
            f"nothing was merged; inspect it with git ledger verify {theirs[:10]}",
        )


def _adopt_witnesses(ctx: Context, remote: str) -> None:
    """The remote's witnesses of registrations we lack become ours (created, never moved)."""
    prefix = f"{REMOTE_WITNESS}{remote}/witness/"
    local = ctx.store.refs(WITNESS)
    for name, target in ctx.store.refs(prefix).items():
        vid = name[len(prefix) :]
        if f"{WITNESS}{vid}" not in local and ctx.store.has_commit(target):
            create_witness(ctx.store, vid, target)


def _regenerate_views(ctx: Context) -> str | None:
    """Commit regenerated views if the merged tree's views are stale (a safety net)."""

    def build(snap: Snapshot) -> Transition:
        writes: dict[str, bytes | None] = {}
        for path in view_paths(ctx.config):
            current = snap.read(path) or b""
            fresh = regenerate(ctx.config, snap, path, current, ctx.store)
            if fresh != current:
                writes[path] = fresh
        if not writes:
            raise Refused("views already match")
        return Transition(
            kind="views",
            step="views",
            subject="docs(ledger): regenerate views after merge",
            writes=writes,
        )

    try:
        commit_id, _ = ctx.store.transact(build)
    except Refused:
        return None
    return commit_id


def _fetch(ctx: Context, remote: str, branch: str) -> str | None:
    """Fetch the remote's branch and witnesses; the remote's tip (None: no such branch).

    Decided by exit codes, never by git's English: ``ls-remote --exit-code``
    exits 2 when the branch does not exist there; a fetch that fails after that
    is a rewrite when the remote's tip no longer contains what we last saw of it.
    """
    workdir = ctx.store.require_workdir()
    listed = gitcli.run(
        ["ls-remote", "--exit-code", remote, f"refs/heads/{branch}"],
        workdir,
        check=False,
        clean_env=True,
        timeout=300,
    )
    if listed.returncode not in (0, 2):
        raise Refused(
            f"cannot read {remote}: {gitcli.reason(listed)}",
            f"check it with: git ls-remote {remote}",
        )
    exists = listed.returncode == 0
    known = _remote_sha(ctx, remote, branch)
    # No '+' on the branch: a remote branch that was rewritten (force-pushed) is
    # refused by git itself and the tracking ref keeps what we saw, so a rerun
    # refuses too.
    refspecs = [f"refs/heads/{branch}:refs/remotes/{remote}/{branch}"] if exists else []
    fetch = gitcli.run(
        [
            "fetch",
            "--no-progress",
            remote,
            *refspecs,
            f"+{WITNESS}*:{REMOTE_WITNESS}{remote}/witness/*",
        ],
        workdir,
        check=False,
        clean_env=True,
        timeout=300,
    )
    if fetch.returncode != 0:
        tip = listed.stdout.split("\t", 1)[0].strip() if exists else ""
        if known and tip and ctx.store.has_commit(tip) and not ctx.store.is_ancestor(known, tip):
            raise Refused(
                f"{remote}/{branch} was rewritten (force-pushed): {known[:10]}, which "
                "it had published, is no longer in its history; a rewrite is never merged",
                f"restore the remote's history (git push {remote} "
                f"{known[:10]}:refs/heads/{branch} after checking it), then sync",
            )
        raise Refused(
            f"git fetch {remote} failed: {gitcli.reason(fetch)}",
            f"check it with: git fetch {remote}",
        )
    return _remote_sha(ctx, remote, branch) if exists else None


def _remote_tip(ctx: Context, remote: str, branch: str) -> str | None:
    """Where the remote's branch is now (None: absent, or the remote cannot be read)."""
    listed = gitcli.run(
        ["ls-remote", "--exit-code", remote, f"refs/heads/{branch}"],
        ctx.store.require_workdir(),
        check=False,
        clean_env=True,
        timeout=300,
    )
    return listed.stdout.split("\t", 1)[0].strip() or None if listed.returncode == 0 else None


def _merge(ctx: Context, remote: str, branch: str, theirs: str) -> None:
    workdir = ctx.store.require_workdir()
    merged = gitcli.run(
        [
            "merge",
            "--no-edit",
            "--quiet",
            "-m",
            f"chore(ledger): sync with {remote}/{branch}",
            theirs,
        ],
        workdir,
        check=False,
        clean_env=True,
    )
    if merged.returncode == 0:
        return
    unmerged = gitcli.output(
        ["diff", "--name-only", "-z", "--diff-filter=U"], workdir, clean_env=True
    ).split("\0")
    conflicts = [path for path in unmerged if path]
    gitcli.run(["merge", "--abort"], workdir, check=False, clean_env=True)
    if conflicts:
        raise Refused(
            f"merging {remote}/{branch} left conflicts outside generated views: "
            + ", ".join(conflicts[:5]),
            f"merge by hand: git merge {remote}/{branch}",
        )
    raise Refused(
        f"git could not merge {remote}/{branch}: {gitcli.reason(merged)}",
        f"merge by hand: git merge {remote}/{branch}",
    )


def _push(ctx: Context, remote: str, branch: str, theirs: str | None) -> bool:
    """Push the branch and witnesses atomically; False when another machine won the race.

    ``--porcelain`` gives one line per ref on stdout, ``FLAG\tFROM:TO\tSUMMARY
    (REASON)``, with ``!`` for a ref the remote did not take. Whether that was a
    race is decided by the remote's state, not by the reason's words: the
    branch no longer where we leased it (``ls-remote``) means another machine
    pushed first (git says "stale info", "fetch first", or, when it moved
    between the ref advertisement and the update, "failed to update ref").
    Any other refusal (a hook, a protected branch, a witness that exists with
    another commit) is shown with the remote's reason and its hook's output.
    """
    lease = f"--force-with-lease=refs/heads/{branch}:{theirs or ''}"
    witnesses = [f"{name}:{name}" for name in ctx.store.refs(WITNESS)]
    push = gitcli.run(
        ["push", "--porcelain", "--atomic", lease, remote, f"HEAD:refs/heads/{branch}", *witnesses],
        ctx.store.require_workdir(),
        check=False,
        clean_env=True,
        timeout=300,
    )
    if push.returncode == 0:
        return True
    refused: list[tuple[str, str]] = []
    for line in push.stdout.splitlines():
        flag, _, rest = line.partition("\t")
        if flag != "!":
            continue
        ref, _, summary = rest.partition("\t")
        why = summary[summary.find("(") + 1 : summary.rfind(")")] if "(" in summary else summary
        if why != "atomic push failed":  # the others' echo of the one that failed
            refused.append((ref.rpartition(":")[2], why))
    if refused and _remote_tip(ctx, remote, branch) != theirs:
        return False
    said = [
        line[len("remote:") :].strip()
        for line in push.stderr.splitlines()
        if line.startswith("remote:") and line[len("remote:") :].strip()
    ]
    if refused:
        reasons = "; ".join(f"{ref}: {why}" for ref, why in refused)
        hook = f" — {'; '.join(said[-5:])}" if said else ""
        raise Refused(f"{remote} refused the push ({reasons}){hook}", "git ledger verify")
    # Nothing reached the remote (a local pre-push hook, a connection): git's
    # and the hook's own lines are the reason.
    lines = [line.strip() for line in push.stderr.splitlines() if line.strip()]
    raise Refused(
        f"git push {remote} failed: {'; '.join(lines[-5:]) or gitcli.reason(push)}",
        f"check it with: git push {remote}",
    )


def run(cwd: Path, remote: str | None, as_json: bool) -> int:
    ctx = open_context(cwd)
    workdir = ctx.store.require_workdir()
    remote = remote or default_remote(ctx)
    if remote is None:
        raise BadInput(
            "no remote to sync with", "git remote add origin URL, or git ledger sync REMOTE"
        )
    if remote not in gitcli.remotes(workdir):
        raise BadInput(f"no remote named {remote!r}", "see 'git remote -v'")
    staged = gitcli.run(["diff", "--cached", "--quiet"], workdir, check=False, clean_env=True)
    if staged.returncode == 1:  # a merge would refuse, or carry them into its commit
        raise BadInput(
            "there are staged changes; sync merges and must start from a clean index",
            "commit them, or unstage them with 'git restore --staged .'",
        )
    branch = ctx.store.branch().removeprefix("refs/heads/")
    configure_driver(workdir)  # also repairs a 0.1 definition, silently
    notes: list[str] = []
    rounds = 0
    for rounds in range(1, ctx.config.sync.max_rounds + 1):
        theirs = _fetch(ctx, remote, branch)
        ours = ctx.store.resolve(None)
        if theirs and ours and not ctx.store.is_ancestor(theirs, ours):
            if not ctx.store.is_ancestor(ours, theirs):
                notes += rename_collisions(ctx, theirs)
                ours = ctx.store.resolve(None)
            _check_arriving(ctx, theirs, ours)
            if ours is not None and ctx.store.is_ancestor(ours, theirs):
                forward = gitcli.run(
                    ["merge", "--quiet", "--ff-only", theirs], workdir, check=False, clean_env=True
                )
                if forward.returncode != 0:  # e.g. an untracked file where theirs adds one
                    raise Refused(
                        f"git could not fast-forward to {remote}/{branch}: "
                        f"{gitcli.reason(forward)}",
                        f"fix what git names, then sync (or: git merge --ff-only {remote}/{branch})",
                    )
            elif ours is None or not rebase_if_clean(ctx, theirs, ours):
                _merge(ctx, remote, branch, theirs)
            problems = verify(ctx)
            if problems and _regenerate_views(ctx):
                problems = verify(ctx)
            if problems:
                raise Refused("after the merge: " + "; ".join(problems[:3]), "git ledger status")
        _adopt_witnesses(ctx, remote)
        if _push(ctx, remote, branch, theirs):
            mirror_witnesses(ctx, remote)
            break
        time.sleep(min(2.0, 0.05 * 2**rounds) * random.uniform(0.5, 1.5))  # noqa: S311 - jitter, not crypto
    else:
        raise Refused(
            f"the remote kept moving: gave up after {rounds} rounds", "run 'git ledger sync' again"
        )
    if as_json:
        output.emit_json(
            {
                "remote": remote,
                "branch": branch,
                "rounds": rounds,
                "notes": notes,
                "head": ctx.store.resolve(None),
            }
        )
    else:
        for note in notes:
            output.say(f"note: {note}")
        output.say(f"synced {branch} with {remote} in {rounds} round(s)")
    return 0
