"""Planning a run: the ``[run] command`` template checked and rendered, one argv per run.

Nothing runs here. A run's argv is rendered from the template's placeholders
(never a shell); its output folder is chosen (``--out-dir``, ``$LEDGER_OUTPUT_DIR``,
``[run] output_dir``, or ``.git/ledger/runs/out``) and refused when a symbolic link
below it would aim the run elsewhere; its replicate slot is chosen, a
re-measurement's past :data:`~ledger.core.verify.REMEASURE_SLOT`. Every refusal
comes before the first run spends its time.
"""

from __future__ import annotations

import dataclasses
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ledger.core.context import Context
from ledger.core.errors import BadInput
from ledger.core.model.ids import case_twin, check_case_unique, check_safe
from ledger.core.repobase import result_stem, results_dir
from ledger.core.state import load_version
from ledger.core.verify import REMEASURE_SLOT
from ledger.presets.versions.ingest import Measurement, check_measurement, result_path

PLACEHOLDERS = frozenset(
    {"version", "gate", "seed", "window", "window_start", "window_end", "out", "replicate"}
)
PER_RUN = frozenset({"version", "seed", "window", "window_start", "window_end", "out", "replicate"})
OUTPUT_ENV = "LEDGER_OUTPUT_DIR"


@dataclass(frozen=True)
class RunSpec:
    measurement: Measurement
    argv: list[str]
    out: Path
    log: Path
    # A re-measurement runs in a worktree at the version's own code (.owncode):
    # where it runs, and the code commit its result names.
    cwd: Path | None = None
    code_commit: str | None = None

    @property
    def label(self) -> str:
        m = self.measurement
        key = f"seed {m.seed}" if m.seed is not None else f"window {m.window}"
        return f"{m.version} {m.gate} {key}" + (f" r{m.replicate}" if m.replicate else "")


def _fields(token: str) -> set[str]:
    names = set()
    for _, field, _, _ in string.Formatter().parse(token):
        if field is not None:
            names.add(field)
    return names


def check_template(template: list[str], stdout: bool = False) -> None:
    for token in template:
        try:
            names = _fields(token)
        except ValueError as exc:
            raise BadInput(f"ledger.toml: [run] command token {token!r}: {exc}") from None
        unknown = names - PLACEHOLDERS
        if unknown:
            raise BadInput(
                f"ledger.toml: [run] command uses unknown placeholder(s) {sorted(unknown)}",
                f"allowed: {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}",
            )
    if not stdout and not any("out" in _fields(t) for t in template):
        raise BadInput(
            "ledger.toml: [run] command has no {out}",
            'the command must write its results to {out}, or set [run] results = "stdout"',
        )


def conditions_of(template: list[str]) -> tuple[tuple[str, str], ...]:
    """Run conditions: every parameter of the template that is the same for every run.

    ``--flag value`` pairs become ``flag=value``; a pair whose value changes from
    run to run (seed, window, output path, version) is not a condition. The
    version is left out so that versions measured the same way compare.
    """
    out: dict[str, str] = {}
    words = [t for t in template[1:]]
    i = 0
    positional = []
    while i < len(words):
        token = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if token.startswith("-") and value is not None and not value.startswith("-"):
            if not (_fields(value) & PER_RUN) and not (_fields(token) & PER_RUN):
                out[token.lstrip("-")] = value
            i += 2
            continue
        if not (_fields(token) & PER_RUN):
            positional.append(token)
        i += 1
    out["command"] = " ".join([template[0], *positional])
    return tuple(sorted(out.items()))


def output_dir(ctx: Context, override: Path | None) -> Path:
    # Absolute: the command runs at the top of the work tree, not where we started.
    if override is not None:
        return override.absolute()
    env = os.environ.get(OUTPUT_ENV)
    if env:
        return Path(env).absolute()
    if ctx.config.run.output_dir:
        configured = Path(ctx.config.run.output_dir).expanduser()
        return configured if configured.is_absolute() else ctx.store.require_workdir() / configured
    return ctx.store.ledger_state_dir / "runs" / "out"


def _no_links_below(base: Path, target: Path) -> None:
    """Refuse an output folder reached through a symbolic link below the configured one.

    The output folder may sit in the work tree, where a commit can carry a
    link (``runs/V1 -> ~``); a run would then write its files wherever it points.
    """
    current = base
    for part in target.relative_to(base).parts:
        current = current / part
        if current.is_symlink():
            raise BadInput(
                f"{current} is a symbolic link: run outputs are never written through links",
                "remove the link, or pass --out-dir DIR",
            )


def plan(
    ctx: Context,
    vid: str,
    gate: str,
    seeds: list[str],
    windows: list[str],
    replicates: int,
    out_dir: Path | None,
    replace: str | None,
    remeasure: str | None = None,
    command: list[str] | None = None,
    dates: Mapping[str, tuple[str, str]] | None = None,
) -> list[RunSpec]:
    """``command``: the template to use instead of today's (a re-measurement's, frozen
    at the version's registration); ``dates``: each window's start and end."""
    template = command or ctx.config.gate(gate).command or ctx.config.run.command
    if template is None:
        raise BadInput(
            f"no command for gate '{gate}' in ledger.toml",
            f'add [gates.{gate}] command (or [run] command) = ["python3", "eval.py", "--seed", "{{seed}}", "--out", "{{out}}"]',
        )
    check_template(template, stdout=ctx.config.run.results == "stdout")
    ctx.config.gate(gate)
    if bool(seeds) == bool(windows):
        raise BadInput("give --seeds or --windows (one of them)", "e.g. --seeds 1,2,3")
    if replicates < 1:
        raise BadInput("--replicates must be at least 1")
    # Record what ran: a fixed placeholder such as {gate} is a value, never a literal.
    conditions = conditions_of([t.replace("{gate}", gate) for t in template])
    base = output_dir(ctx, out_dir)
    root = base / vid / gate
    _no_links_below(base, root)
    snap = ctx.store.snapshot()
    # Result files are named by seed or window: refuse names that are one file
    # on a case-insensitive file system before anything runs, not after.
    recorded = snap.files(results_dir(ctx.dir, vid, gate))
    keys = seeds or windows
    for i, key in enumerate(keys):
        check_case_unique(key, keys[:i], "seed" if seeds else "window")
    if remeasure is not None and replace is not None:
        raise BadInput("--remeasure adds results and --replace replaces them: give one")
    # Refused before anything runs (a concluded version without --remeasure, an open
    # one with it), not after every seed has spent its time.
    check_measurement(
        ctx.config,
        load_version(ctx.config, snap, vid),
        Measurement(version=vid, gate=gate, seed=(seeds or ["1"])[0], remeasure=remeasure),
    )
    specs = []
    for key in seeds or windows:
        check_safe(key, "seed" if seeds else "window")
        slot = REMEASURE_SLOT
        for rep in range(1, replicates + 1):
            replicate = rep if replicates > 1 else None
            if remeasure is not None:
                # A slot of its own, past any replicate the version's own runs use,
                # so a re-measurement never lands on a file the verdict read.
                taken = Measurement(vid, gate, key if seeds else None, None if seeds else key)
                while snap.read(result_path(ctx.dir, dataclasses.replace(taken, replicate=slot))):
                    slot += 1
                replicate, slot = slot, slot + 1
            span = (dates or {}).get(key) if not seeds else None
            m = Measurement(
                version=vid,
                gate=gate,
                seed=key if seeds else None,
                window=None if seeds else key,
                window_start=span[0] if span else None,
                window_end=span[1] if span else None,
                replicate=replicate,
                conditions=conditions,
                replace=replace,
                remeasure=remeasure,
            )
            twin = case_twin(result_path(ctx.dir, m), recorded)
            if twin is not None:
                raise BadInput(
                    f"{result_path(ctx.dir, m)} differs from the recorded {twin} only in letter case",
                    "on a case-insensitive file system (macOS, Windows) they are one file",
                )
            if snap.read(result_path(ctx.dir, m)) is not None and replace is None:
                raise BadInput(
                    f"{result_path(ctx.dir, m)} is already recorded",
                    "pass --replace REASON to run it again",
                )
            stem = result_stem(m.seed, m.window, m.replicate, failed=False)
            out = root / f"{stem}.json"
            values = {
                "version": vid,
                "gate": gate,
                "seed": key if seeds else "",
                "window": "" if seeds else key,
                "window_start": span[0] if span else "",
                "window_end": span[1] if span else "",
                "out": str(out),
                "replicate": str(replicate or rep),
            }
            argv = [token.format_map(values) for token in template]
            specs.append(RunSpec(m, argv, out, root / f"{stem}.log"))
    return specs


def outputs_in(ctx: Context, folders: list[Path]) -> tuple[str, ...]:
    """The output folders (these, and the configured one) that lie in the work tree, as
    work-tree paths: what runs wrote there does not make the code they measured dirty."""
    top = ctx.store.require_workdir().resolve()
    found = set()
    for folder in [*folders, output_dir(ctx, None)]:
        try:
            found.add(folder.resolve().relative_to(top).as_posix())
        except ValueError:
            continue  # outside the work tree (the default, .git/ledger/runs/out)
    return tuple(sorted(p for p in found if p != "."))
