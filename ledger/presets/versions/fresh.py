"""The versions loop's next step, corrected by what its ledger tree cannot say.

``status`` caches what is a function of the ledger tree and its configuration;
this module reads the rest fresh on every call, with the git program (a warm
``next`` imports neither pygit2 nor pydantic unless a matrix is open): whether
the version's code is committed, whether a refuted version's code is still on
the branch, a reflection written but not committed, a matrix's cells on their
branches, an id taken by a registration on another branch, and whether the work
tree is clean enough to re-measure flagged results.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from ledger.core import gitcli
from ledger.core.actions import proposal
from ledger.core.repobase import cell_of

STEP_LOG = "%H %(trailers:key=Ledger-Transition,valueonly,separator=%x2c)"
WITNESS = "refs/ledger/witness/"


def fresh_next(cwd: Path, top: Path, common: Path, data: dict[str, Any]) -> dict[str, Any]:
    """The loop's next step, with the brief it starts from (the latest concluded entry's
    Next-steps text, see ``preset._brief``)."""
    nxt = _fresh_next(cwd, top, common, data)
    brief = data.get("brief")
    return {**nxt, "brief": brief["text"]} if brief else nxt


def _fresh_next(cwd: Path, top: Path, common: Path, data: dict[str, Any]) -> dict[str, Any]:
    nxt: dict[str, Any] = data["next"]
    step = nxt.get("step")
    if nxt["action"] == "register":
        draft = next((d for d in data.get("drafts", []) if "/REFLECTION_" in d), None)
        if draft is not None:
            return _complete_reflection(
                top,
                draft,
                data,
                f"{draft} is written but not committed, and a registration waits for a clean "
                "ledger directory",
            )
        nxt = _existing_files(top, _free_id(top, common, nxt))
        refuted = data.get("refuted")
        standing = refuted_code(top, refuted) if refuted else []
        if standing:
            build_on = f"{nxt['command']} --parent {refuted}"
            return {
                **proposal(
                    "revert-or-build-on",
                    f"git revert --no-edit {' '.join(standing)}",
                    f"{refuted} was refuted and its code is still on the branch: revert its "
                    f"code commits (this command), or build on it with a stated reason: "
                    f"{build_on} (say in the bet why refuted code stays)",
                    step=refuted,
                ),
                "alternatives": [{**nxt, "command": build_on}],
            }
        return nxt
    code_first = data.get("code_first")
    if (
        nxt["action"] == "measure"
        and code_first is not None
        and step
        and not _has_code(top, step, "HEAD")
    ):
        return dict(code_first)
    if nxt["action"] == "reflect" and step:
        rel = f"{data['dir']}/{step}.md"
        if (top / rel).exists():
            return _complete_reflection(top, rel, data, f"{rel} is written but not committed")
    if nxt["action"] == "matrix" and step:
        return _matrix_next(cwd, step)
    if nxt["action"] == "conclude" and step and "--override" not in nxt["command"]:
        flag = next((f for f in data.get("flagged", []) if f["id"] == step), None)
        if flag:
            return _flagged_next(top, data, nxt, flag)
    return nxt


def _complete_reflection(top: Path, rel: str, data: dict[str, Any], why: str) -> dict[str, Any]:
    """Commit the written reflection, after doing what each of its sections lacks, in the
    words ``reflect --commit`` refuses with (reflectiontext.lacking, on the same text)."""
    from ledger.core.errors import BadInput
    from ledger.core.model.documents import parse_document
    from ledger.core.reflectiontext import MIN_WORDS, incomplete, lacking, read_sections

    step = rel.rsplit("/", 1)[-1].removesuffix(".md")
    after = step.removeprefix("REFLECTION_")
    try:
        text = (top / rel).read_bytes().decode("utf-8").replace("\r\n", "\n")
        doc = parse_document(text, rel)
    except (BadInput, UnicodeDecodeError, OSError) as exc:
        todo = f"it does not read ({getattr(exc, 'message', exc)}): repair it, then commit it"
    else:
        words, lack = read_sections(doc.body, bool(doc.front.get("target_gate")))
        lacks = lacking(words, lack, int(data.get("reflection_min_words", MIN_WORDS)))
        todo = (
            f"to fill in: {incomplete(lacks)}; then commit it"
            if lacks
            else "every section is filled: commit it"
        )
    return proposal(
        "complete-reflection",
        f"git ledger reflect {after} --commit",
        f"{why}; {todo}",
        step=step,
        edit=[rel],
    )


def _existing_files(top: Path, nxt: dict[str, Any]) -> dict[str, Any]:
    """The registration ``next`` proposes, with only the parent's planned files that are
    still in the work tree (the ledger tree cannot say: code moves, and a bet's new file
    may never have been written); none left, the person names them (``<FILES>``)."""
    words = shlex.split(nxt["command"])
    if "--files" not in words[:-1]:
        return nxt
    planned = words[words.index("--files") + 1]
    if planned == "<FILES>":
        return nxt
    kept = [f for f in planned.split(",") if (top / f).exists()]
    if len(kept) == len(planned.split(",")):
        return nxt
    files = ",".join(kept) or "<FILES>"
    command = nxt["command"].replace(
        f"--files {shlex.quote(planned)}", f"--files {shlex.quote(files)}", 1
    )
    placeholders = [*nxt.get("placeholders", []), *([] if kept else ["<FILES>"])]
    return {**nxt, "command": command, "placeholders": placeholders}


def _has_code(cwd: Path, step: str, rev: str) -> bool:
    """Is there a code commit of ``step`` (its Ledger-Step, no transition) in ``rev``?"""
    grep = f"--grep=^Ledger-Step: {step.replace('.', '[.]')}$"
    found = gitcli.output(["log", f"--format={STEP_LOG}", grep, rev], cwd)
    return any(len(line.split()) == 1 for line in found.splitlines())


def _free_id(top: Path, common: Path, nxt: dict[str, Any]) -> dict[str, Any]:
    """The registration next proposes, with an id no registration on another branch took.

    A witness ref is created with every registration and never moved: an id that has
    one was registered (on an unmerged branch, or withdrawn since) and register
    refuses it, as ids are never reused.
    """
    proposed = str(nxt.get("step") or "")
    match = re.fullmatch(r"(.*?)(\d+)", proposed)
    if match is None:
        return nxt
    prefix, number = match.group(1), int(match.group(2))
    taken = []
    vid = proposed
    while _witnessed(top, common, vid):
        taken.append(vid)
        number += 1
        vid = f"{prefix}{number}"
    if not taken:
        return nxt
    return {
        **nxt,
        "command": nxt["command"].replace(f"register {proposed} ", f"register {vid} ", 1),
        "reason": f"{nxt['reason']} ({', '.join(taken)} was registered on another branch or "
        "withdrawn: an id is never reused)",
        "step": vid,
    }


def _witnessed(top: Path, common: Path, vid: str) -> bool:
    """Does ``refs/ledger/witness/<vid>`` exist? Read from the files refs live in (a loose
    ref, or a line of packed-refs), which costs no git process; git is asked only when
    the repository keeps its refs in a reftable."""
    name = f"{WITNESS}{vid}"
    if (common / "reftable").is_dir():
        proc = gitcli.run(["rev-parse", "--verify", "--quiet", name], top, check=False)
        return proc.returncode == 0
    if (common / name).is_file():
        return True
    try:
        packed = (common / "packed-refs").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return any(line.endswith(f" {name}") for line in packed.splitlines())


def _flagged_next(
    top: Path, data: dict[str, Any], nxt: dict[str, Any], flag: dict[str, Any]
) -> dict[str, Any]:
    """conclude refuses results measured on a dirty work tree, or before the version's
    code was committed, without an override. On a clean tree with the code committed,
    measuring those seeds again is the way that needs no override; otherwise (or as
    the other way) the verdict needs a stated reason."""
    step = str(nxt["step"])
    why = "; ".join(
        text
        for n, text in (
            (flag["dirty"], f"{flag['dirty']} result(s) were measured on a dirty work tree"),
            (
                flag.get("before_code", 0),
                f"{flag.get('before_code', 0)} result(s) were measured before any code "
                f"commit of {step}",
            ),
            (
                flag.get("mixed", 0),
                f"{flag.get('mixed', 0)} result(s) were measured at another code commit of "
                f"{step}, or under other conditions, than the rest",
            ),
        )
        if n
    )
    override = {
        **nxt,
        "command": f"{nxt['command']} --override '<REASON>'",
        "reason": f"{nxt['reason']}; {why}, so the verdict needs a stated reason (or "
        "commit the code and re-measure from a clean tree with --replace)",
        "placeholders": [*nxt.get("placeholders", []), "<REASON>"],
    }
    again = data.get("remeasure") or {}
    if again.get("step") != step:
        return override
    if again.get("before_code") and not _has_code(top, step, "HEAD"):
        return override  # nothing to measure again yet: the code is still to be committed
    if gitcli.DirtyCheck(top, str(data["dir"])).result():
        return override  # a measurement now would be as dirty
    seeds = ",".join(again["seeds"])
    gate = again["gate"]
    if again.get("run"):
        command = f"git ledger run {step} --gate {gate} --seeds {seeds} --replace '<REASON>'"
        placeholders = ["<REASON>"]
    else:
        first = again["seeds"][0]
        command = (
            f"git ledger record {step} --gate {gate} --seed {first} <RESULTS.json> "
            "--replace '<REASON>'"
        )
        placeholders = ["<RESULTS.json>", "<REASON>"]
    return {
        **proposal(
            "re-measure",
            command,
            f"{why}; the work tree is clean and the code committed now: measure seeds "
            f"{seeds} again (--replace says why), and the verdict needs no override",
            step=step,
            placeholders=placeholders,
        ),
        "alternatives": [override],
    }


def _matrix_next(cwd: Path, mid: str) -> dict[str, Any]:
    """Each cell in turn: its worktree, its code commit, its measurement; then the winner."""
    import os
    import shlex

    from ledger.core.context import open_context
    from ledger.presets.versions.baseline import NO_RESULTS
    from ledger.presets.versions.matrix import WORKTREES, comparison
    from ledger.presets.versions.nextstep import code_commit, measure

    ctx = open_context(cwd)
    state = ctx.state()
    found = state.matrix(mid)
    if found is None:
        return proposal("status", "git ledger status", f"matrix {mid} is not on this branch")
    matrix = found[1]
    _, common = gitcli.locate(cwd)
    here = cwd.resolve()
    table = comparison(ctx, state, matrix)
    for cell in matrix.cells:
        row = table[cell.name]
        cid = f"{mid}.{cell.name}"
        tree = common.parent / WORKTREES / f"{mid.lower()}-{cell.name.lower()}-{cell.slug}"
        rel = os.path.relpath(tree, here)
        if row["stat"].outcome != NO_RESULTS:
            continue
        if not tree.is_dir():
            return proposal(
                "matrix-join",
                f"git ledger matrix join {mid} {cell.name}",
                f"cell {cid} has no worktree on this machine",
                step=cid,
            )
        version = state.version(cid)
        if version is None:
            continue
        if not _has_code(tree, cid, cell.branch):  # git itself: in the cell's worktree
            step = code_commit(state, version)
            edit = [os.path.join(rel, f) for f in step.edit]
            command = f"cd {shlex.quote(rel)} && {step.command}"
        else:  # run and record of a cell go to its worktree themselves (cells.home)
            step = measure(state, cid, cell.gate)
            edit = []
            command = step.command
        return proposal(
            step.action,
            command,
            f"matrix {mid}, cell {cell.name}: {step.reason}",
            step=cid,
            placeholders=list(step.placeholders),
            edit=edit,
        )
    passing = [r for r in table.values() if r["pass"]]
    if passing:
        best = max(passing, key=lambda r: r["z"] or 0.0)
        name = cell_of(str(best["cell"]))
        return proposal(
            "matrix-conclude",
            f"git ledger matrix conclude {mid} --winner {name}",
            f"every cell of {mid} is measured; {name} passes the adjusted threshold best",
            step=mid,
        )
    return proposal(
        "matrix-conclude",
        f"git ledger matrix conclude {mid} --none",
        f"every cell of {mid} is measured; none passes the adjusted threshold",
        step=mid,
    )


def refuted_code(top: Path, vid: str) -> list[str]:
    """The code commits of ``vid`` still on the branch (not reverted), newest first."""
    found = gitcli.output(
        ["log", f"--format={STEP_LOG}", f"--grep=^Ledger-Step: {vid}$", "HEAD"], top
    )
    code = [line.split()[0] for line in found.splitlines() if len(line.split()) == 1]
    if not code:
        return []
    bodies = gitcli.output(["log", "--format=%B", "--grep=^This reverts commit ", "HEAD"], top)
    reverted = set(re.findall(r"This reverts commit ([0-9a-f]{40})", bodies))
    return [sha for sha in code if sha not in reverted]
