"""``git ledger verify [RANGE]``: every history rule, from the repository alone.

Exit 0 clean, 1 with one finding per line (commit, path, rule, what to do),
2 when history cannot be verified (a shallow clone, missing objects).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger.core import output
from ledger.core.errors import BadInput

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the incremental path stays light
if TYPE_CHECKING:
    from ledger.core.verify import Report


def _locate(cwd: Path) -> tuple[Path, Path, Path, str] | None:
    """(top, common git dir, git dir, HEAD) in one git call; None when any is missing
    (then the full program says what is wrong) or the clone is shallow."""
    from ledger.core import gitcli

    proc = gitcli.run(
        ["rev-parse", "--show-toplevel", "--git-common-dir", "--absolute-git-dir", "HEAD"],
        cwd,
        check=False,
    )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) < 4:
        return None
    top, common, git_dir = Path(lines[0]), Path(lines[1]), Path(lines[2])
    common = common if common.is_absolute() else (cwd / common).resolve()
    if (common / "shallow").exists() or (git_dir / "shallow").exists():
        return None
    return top, common, git_dir, lines[3].strip()


def _from_cache(
    common: Path, head: str
) -> tuple[str, list[dict[str, str]], list[dict[str, str]]] | None:
    """A repeated verify of an unchanged HEAD: the saved report, without pygit2 or pydantic."""
    from ledger.core import verifycache

    state_dir = str(common / "ledger")
    findings = verifycache.load(state_dir, str(common), head)
    if findings is None:
        return None
    return head, findings, verifycache.load_notes(state_dir)


def _print(
    tip: str | None, findings: list[dict[str, str]], notes: list[dict[str, str]], as_json: bool
) -> int:
    if as_json:
        output.emit_json(
            {
                "schema": 1,
                "tip": tip,
                "ok": not findings,
                "findings": findings,
                "notes": notes,
                "void": sorted({n["step"] for n in notes if n["kind"] == "void"}),
            }
        )
        return 1 if findings else 0
    for f in findings:
        where = f"{f['commit'][:10]} {f['path']}" if f["path"] else f["commit"][:10]
        output.say(f"{where}: [{f['rule']}] {f['message']} (fix: {f['fix']})")
    for n in notes:
        output.say(
            f"note: {n['commit'][:10]} {n['kind']}: {n['step']} {n['path']} {n['text']}".rstrip()
        )
    if findings:
        output.say(f"{len(findings)} finding(s)")
    else:
        output.say(f"verified {tip[:10] if tip else 'an empty branch'}: every history rule holds")
    return 1 if findings else 0


def _incremental(top: Path, common: Path, git_dir: Path, head: str) -> Report | None:
    """Verify the few commits since a cached tip without pygit2 or pydantic
    (:mod:`ledger.hooks.history`); None when only the full replay may answer."""
    from ledger.core.verify import NeedsFull, verify
    from ledger.hooks.history import open_light

    light = open_light(top, common, git_dir, head)
    if light is None:
        return None
    history: Any = light[0]  # the read-only part of a Store verify uses
    try:
        return verify(history, light[1], light[2], head)
    except NeedsFull:
        return None
    finally:
        history.close()


def extend(cwd: Path) -> None:
    """Save verify's report for HEAD when that is cheap: the few commits since a cached
    tip, replayed by the light reader. Never the full replay: a verb's warm-up
    (ledger.cli.status.warm) must not become a whole-history replay after an upgrade
    (40 s at 10,000 steps); the next reader that needs it pays it, as before."""
    found = _locate(cwd)
    if found is not None and _from_cache(found[1], found[3]) is None:
        _incremental(*found)


def run_at_hand(cwd: Path, as_json: bool) -> int | None:
    """``git ledger verify [--json]`` of HEAD when the answer is at hand without the click
    app (``ledger.__main__`` calls it first): the saved report, or the light replay of
    the few commits since a cached tip. None when only :func:`run` may answer (no
    repository, a shallow clone, a clone without witnesses, a full replay, any error):
    it then runs as it always has, and says what is wrong. Its result is :func:`run`'s,
    without the 40 ms of importing click and every loop's verbs."""
    from ledger.core.witnessrefs import witnesses_absent

    try:
        found = _locate(cwd)
        if found is None or witnesses_absent(cwd) is not None:
            return None
        tip: str | None
        cached = _from_cache(found[1], found[3])
        if cached is not None:
            tip, findings, notes = cached
        else:
            report = _incremental(*found)
            if report is None:
                return None
            tip = report.tip
            findings = [f.as_json() for f in report.findings]
            notes = [n.as_json() for n in report.notes]
    except Exception:  # the full command reports it, as it always has
        return None
    return _print(tip, findings, notes, as_json)


def run(cwd: Path, rev_range: str | None, as_json: bool) -> int:
    from ledger.core.witnessrefs import require_witnesses, witnesses_absent

    found = None if rev_range else _locate(cwd)
    if found is not None:
        # A saved report does not say which registrations history holds: a clone without
        # witnesses replays, so it can say the witness check cannot be made (exit 2).
        cached = _from_cache(found[1], found[3]) if witnesses_absent(cwd) is None else None
        if cached is not None:
            return _print(*cached, as_json)
        report = _incremental(*found)
        if report is not None:
            require_witnesses(cwd, report.registrations)
            return _print(
                report.tip,
                [f.as_json() for f in report.findings],
                [n.as_json() for n in report.notes],
                as_json,
            )
    from ledger.core.context import delivered_here, load_config, open_context, open_store
    from ledger.core.verify import require_full, verify

    store = open_store(cwd)
    ended = delivered_here(store) if load_config(store) is None else None
    # A delivery branch holds no ledger: its history up to the delivery is judged by the
    # configuration the delivery took away (a CI job verifies its pull request as any).
    ctx = open_context(cwd, store.snapshot(f"{ended}^") if ended else None)
    store = ctx.store
    require_full(store)  # before a range is resolved: its commits may be cut off
    tip: str | None = None
    since: list[str] = []
    if rev_range:
        if "..." in rev_range:
            raise BadInput(f"cannot verify the symmetric range {rev_range!r}", "use A..B or a tip")
        start, dots, end = rev_range.partition("..")
        tip = end or "HEAD" if dots else start
        if dots and start:
            resolved = store.resolve(start)
            since = [resolved] if resolved else []
    report = verify(store, ctx.config, ctx.config_file, tip, since)
    require_witnesses(cwd, report.registrations)
    return _print(
        report.tip,
        [f.as_json() for f in report.findings],
        [n.as_json() for n in report.notes],
        as_json,
    )
