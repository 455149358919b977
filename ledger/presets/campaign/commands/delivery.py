"""``git ledger deliver``: one clean branch with what the campaign kept.

Built from committed files only, in a temporary worktree that is removed;
refused while ``finish`` has outstanding items.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ledger.core import gitcli
from ledger.core.context import Context
from ledger.core.errors import BadInput, Refused
from ledger.core.model.documents import dump_json
from ledger.core.repobase import project_part, without_ledger_attributes, write_atomic
from ledger.core.store import TRAILER_TRANSITION, Snapshot, Store, Transition
from ledger.core.verify.delivery import TRAILER_DELIVERED_FROM
from ledger.presets.campaign import loop as campaign
from ledger.presets.campaign.commands.closing import outstanding_items
from ledger.presets.campaign.commands.common import is_transition, open_campaign, require_owner, say


def benchmark_commits(ctx: Context, base: str) -> list[str]:
    """Commits after the base that changed the measuring script, oldest first."""
    script = campaign.table(ctx.config).benchmark_script
    if not script:
        return []
    out = gitcli.output(
        ["rev-list", "--reverse", f"{base}..HEAD", "--", script], ctx.store.require_workdir()
    )
    return [sha for sha in out.split() if not is_transition(ctx, sha)]


def branch_exists(workdir: Path, name: str) -> bool:
    """A branch ``name``, or a remote-tracking ref the name would read as (a branch
    ``origin/main`` would shadow ``refs/remotes/origin/main``)."""
    for ref in (f"refs/heads/{name}", f"refs/remotes/{name}"):
        done = gitcli.run(["rev-parse", "-q", "--verify", ref], workdir, check=False)
        if done.returncode == 0:
            return True
    return False


def free_branch(workdir: Path, name: str) -> str:
    """``name``, or the first ``name-N`` no branch has (an earlier delivery keeps its
    branch when its transition is reverted): what deliver refuses and next proposes."""
    candidate, n = name, 1
    while branch_exists(workdir, candidate):
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def code_differs(ctx: Context, temp: Path, head: str) -> list[str]:
    """Paths whose content in the work tree at ``temp`` differs from ``head``'s, outside
    the ledger, its configuration and the measuring script (delivered as committed)."""
    script = campaign.table(ctx.config).benchmark_script
    excluded = [f":(exclude){ctx.dir}", f":(exclude){ctx.config_file}", ":(exclude).gitattributes"]
    if script:
        excluded.append(f":(exclude){script}")
    out = gitcli.output(
        ["diff", "--name-only", "-z", "--no-ext-diff", head, "--", ".", *excluded],
        temp,
        clean_env=True,
    )
    differs = [p for p in out.split("\0") if p]
    delivered = temp / ".gitattributes"
    mine = delivered.read_bytes() if delivered.is_file() else None
    if without_ledger_attributes(mine) != without_ledger_attributes(
        ctx.store.snapshot(head).read(".gitattributes")
    ):
        differs.append(".gitattributes")
    return differs


def without_ledger(config_file: str, data: bytes | None) -> bytes | None:
    """pyproject.toml without its ``[tool.ledger]`` tables: the project's own file stays
    on the delivery branch. None for ledger.toml (removed whole), and a ledger set where
    its tables cannot be cut out (an inline ``ledger = {...}``) is refused."""
    from ledger.core.repobase import PYPROJECT, ledger_table

    if not config_file.endswith(PYPROJECT) or data is None:
        return None
    import re
    import tomllib

    header = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
    out, skipping = [], False
    for line in data.decode("utf-8").splitlines(keepends=True):
        found = header.match(line)
        if found:
            name = found.group(1).replace(" ", "").replace('"', "").replace("'", "")
            skipping = name == "tool.ledger" or name.startswith("tool.ledger.")
        if not skipping:
            out.append(line)
    text = "".join(out)
    if ledger_table(tomllib.loads(text), config_file) is not None:
        raise BadInput(
            f"{config_file} sets [tool.ledger] in a way deliver cannot take out",
            "write it as [tool.ledger] tables, then deliver",
        )
    return text.encode("utf-8")


def _same_project(store: Store, name: str, old: str | None, new: str | None) -> bool:
    """The configuration file ``name`` says the same in blobs ``old`` and ``new`` outside
    the ledger's tables (ledger.toml is the ledger's alone; pyproject.toml is the
    project's, less ``[tool.ledger]``)."""
    from ledger.core.repobase import PYPROJECT

    if not name.endswith(PYPROJECT):
        return True

    def project(blob: str | None) -> object:
        return None if blob is None else project_part(store.snapshot().read_blob(blob))

    return project(old) == project(new)


def _same_attributes(store: Store, old: str | None, new: str | None) -> bool:
    """The two .gitattributes blobs say the same less the ledger's merge-driver lines (a
    base recorded before ``init`` has none; the delivery needs none)."""
    snap = store.snapshot()
    before = snap.read_blob(old) if old is not None else None
    after = snap.read_blob(new) if new is not None else None
    return without_ledger_attributes(before) == without_ledger_attributes(after)


def delivery_problems(store: Store, source: str, tip: str) -> list[str]:
    """Why the delivery commit ``tip`` is not what ``deliver`` makes of the ledger at
    commit ``source``: the campaign finished there (disarmed, its report closed), the
    documents written as the ledger holds them, and the code the promoted head's
    (outside the ledger, its configuration and the measuring script, as deliver checks
    when it builds the branch). ``verify`` asks at every delivery's last commit."""
    from ledger.core.context import load_config

    if not store.has_commit(source):
        # Not a finding: the replay would keep it for this commit after the ledger comes.
        raise BadInput(
            f"delivery {tip[:10]} names the ledger commit {source[:10]}, which is not here: "
            "it cannot be read against its ledger",
            "push the ledger's branch with its delivery (git push REMOTE BRANCH DELIVERY)",
        )
    snap = store.snapshot(source)
    loaded = load_config(store, snap)
    if loaded is None:
        return [f"{source[:10]} holds no ledger"]
    config, config_file = loaded
    camp = campaign.load(config, snap, store)
    problems = []
    if not camp.owner or camp.owner.get("armed") or not campaign.report_is_closed(camp.report):
        problems.append(f"the campaign was not finished at {source[:10]}")
    delivered = store.snapshot(tip)
    kept = campaign.delivered_paths(campaign.table(config).required_records)
    differs = [
        rel
        for rel in kept
        if delivered.read(f"{config.dir}/{rel}") != snap.read(f"{config.dir}/{rel}")
    ]
    if differs:
        problems.append(f"{', '.join(differs[:3])} differ from the ledger's at {source[:10]}")
    head = camp.head()
    script = campaign.table(config).benchmark_script
    if head is not None:
        code = [
            path
            for path, old, new in store.changes(head.commit, tip)
            if not path.startswith(f"{config.dir}/")
            and path != script
            and not (path == config_file and _same_project(store, config_file, old, new))
            and not (path == ".gitattributes" and _same_attributes(store, old, new))
        ]
        if code:
            problems.append(
                f"its code differs from the promoted head {head.commit[:10]} in "
                f"{', '.join(code[:3])}"
            )
    return problems


def deliver(cwd: Path, branch: str | None, as_json: bool) -> int:
    """One clean branch from the base commit: the kept promoted commits and the commits
    that changed the benchmark script, in history order, then the closed report and the
    records. Built from committed files only, in a temporary worktree that is removed."""
    ctx = open_campaign(cwd)
    snap = ctx.store.snapshot()
    camp = campaign.load(ctx.config, snap, ctx.store)
    require_owner(ctx, camp.owner)
    outstanding = outstanding_items(ctx, camp)
    if outstanding:
        # finish's own findings, every one named (the first is not always the cause).
        raise Refused.of(outstanding)
    base = camp.base()
    if base is None:
        raise Refused("no base recorded")
    name = branch or "campaign/deliver"
    from ledger.core.model.ids import check_safe

    for part in name.split("/"):
        check_safe(part, "branch name")
    workdir = ctx.store.require_workdir()
    first = name.split("/")[0]
    if first in ("refs", "HEAD"):
        raise BadInput(
            f"branch name {name!r} would read as another ref ({first}...)",
            "pass a plain branch name, e.g. --branch campaign/deliver",
        )
    if branch_exists(workdir, name):
        raise BadInput(
            f"a branch or remote-tracking ref {name} already exists",
            f"pass --branch {free_branch(workdir, name)}",
        )
    wanted = set(camp.promoted_commits()) | set(benchmark_commits(ctx, base.commit))
    order = gitcli.output(
        ["rev-list", "--reverse", "--topo-order", f"{base.commit}..HEAD"], workdir
    )
    picks = [sha for sha in order.split() if sha in wanted]
    picks += [sha for sha in camp.promoted_commits() if sha not in picks]  # off this branch
    # The closed report, the records, the mistakes log and every required record.
    kept = campaign.delivered_paths(campaign.table(ctx.config).required_records)
    keep = {f"{ctx.dir}/{p}": snap.read(f"{ctx.dir}/{p}") for p in kept}
    unledgered = without_ledger(ctx.config_file, snap.read(ctx.config_file))
    source = ctx.store.resolve(None)  # the finished ledger this delivery is made of
    head = camp.head()
    with tempfile.TemporaryDirectory(prefix="ledger-deliver-") as tmp:
        temp = Path(tmp) / "wt"
        # Built detached: the branch is made only once the delivery is whole, so a
        # killed deliver leaves no half-built branch behind (the worktree is pruned).
        gitcli.run(["worktree", "add", "-q", "--detach", str(temp), base.commit], workdir)
        try:
            for sha in picks:
                proc = gitcli.run(
                    ["cherry-pick", "--allow-empty", "-x", sha], temp, check=False, clean_env=True
                )
                if proc.returncode != 0:
                    gitcli.run(["cherry-pick", "--abort"], temp, check=False)
                    raise Refused(
                        f"commit {sha[:10]} does not apply on the delivery branch",
                        "resolve by hand; the candidates' history is untouched",
                    )
            # Scaffolding and owner state stay out: only the closed report and the records.
            # The configuration goes (or pyproject.toml's [tool.ledger]): the branch is no
            # ledger, which is what lets it be pushed past the hooks (verify's delivery).
            gone = [ctx.dir] + ([] if unledgered is not None else [ctx.config_file])
            gitcli.run(["rm", "-r", "-q", "--ignore-unmatch", "--", *gone], temp, clean_env=True)
            if unledgered is not None:
                write_atomic(temp / ctx.config_file, unledgered, durable=False)
                gitcli.run(["add", "--", ctx.config_file], temp, clean_env=True)
            if head is not None:
                differs = code_differs(ctx, temp, head.commit)
                if differs:
                    raise Refused(
                        f"[delivered-tree] the delivered code differs from the promoted head "
                        f"{head.commit[:10]} in {', '.join(differs[:5])}: what was measured is "
                        "not what would ship",
                        "revert the unrecorded or rejected changes under the head, re-measure "
                        "it, then deliver",
                    )
            for rel, data in keep.items():
                if data is None:
                    continue
                write_atomic(temp / rel, data, durable=False)  # a scratch clone
                gitcli.run(["add", "--", rel], temp, clean_env=True)
            gitcli.run(
                [
                    "-c",
                    "core.hooksPath=/dev/null",
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    "docs(campaign): the closed report and records",
                    "-m",
                    f"{TRAILER_TRANSITION}: deliver\n{TRAILER_DELIVERED_FROM}: {source}",
                ],
                temp,
                clean_env=True,
            )
            tip = gitcli.output(["rev-parse", "HEAD"], temp, clean_env=True).strip()
        except Exception:
            gitcli.run(["worktree", "remove", "--force", str(temp)], workdir, check=False)
            raise
        gitcli.run(["worktree", "remove", "--force", str(temp)], workdir)
    gitcli.run(["worktree", "prune"], workdir, check=False)
    # The branch comes into being whole, or not at all (refused if one appeared since).
    gitcli.run(["update-ref", f"refs/heads/{name}", tip, ""], workdir)
    record = dump_json({"branch": name, "commit": tip, "commits": picks}).encode()

    def delivered(snap: Snapshot) -> Transition:
        return Transition(
            kind="deliver",
            step="deliver",
            subject=f"docs(campaign): delivered on {name}",
            writes={f"{ctx.dir}/{campaign.DELIVERED}": record},
        )

    ctx.store.transact(delivered)
    say(
        as_json,
        {"branch": name, "commits": picks},
        f"delivered {len(picks)} commit(s) on branch {name}; push it with the ledger's "
        f"branch: git push REMOTE {ctx.store.branch().removeprefix('refs/heads/')} {name}",
    )
    return 0
