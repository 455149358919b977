"""``candidate record --run``: the tool runs ``[campaign] run``, never the agent's word.

The measuring command is an argv from ledger.toml (never a shell), started at the
candidate's own commit in a temporary detached worktree
(:func:`ledger.core.scratchtree.detached`), so the user's work tree is never
touched and what is measured is exactly that commit. It runs ``--repeats`` times
(default ``[campaign] run_repeats``) and prints one JSON object per run, a number or
``"N/A: why"`` per configured measurement; ``{commit}`` and ``{repeat}`` in the
argv are replaced. The values go through the same parser as ``--measure`` (a
negative memory or time is still bad input), and the candidate carries its
provenance: the command, the code commit, the benchmark script and its blob id,
and the configured environment facts (each the output of a named version
command, e.g. ``python = ["python3", "--version"]``).

A run whose benchmark-script blob is not the current epoch's is refused
(``benchmark-changed``, :func:`ledger.presets.campaign.evidence.script_blob_differs`)
before anything runs and again when it is recorded.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

from ledger.core.context import Context
from ledger.core.errors import BadInput, Refused
from ledger.presets.campaign.loop import NA_PREFIX, table

# What git exported for its own dispatch: the measuring command works in its own
# worktree, never in the repository these name.
_GIT_SCOPE = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _GIT_SCOPE}


def _start(argv: list[str], cwd: str, timeout: float | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise BadInput(
            f"the program {argv[0]!r} of [campaign] run was not found",
            "fix [campaign] run in ledger.toml (an argv list whose first word is a program)",
        ) from None
    except subprocess.TimeoutExpired:
        raise Refused(
            f"{' '.join(argv)} ran longer than {timeout:g} s ([run] timeout_seconds)",
            "nothing was recorded; fix the benchmark or raise the timeout",
        ) from None


def _fact(argv: list[str], cwd: str) -> str:
    """One environment fact: what a version command prints (or why it printed nothing)."""
    try:
        proc = subprocess.run(
            argv, cwd=cwd, env=_env(), stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{NA_PREFIX} {type(exc).__name__}"
    text = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    if proc.returncode != 0:
        return f"{NA_PREFIX} exit {proc.returncode}"
    return text[0].strip() if text else ""


def _parse(names: list[str], out: str, argv: list[str]) -> dict[str, Any]:
    try:
        data = json.loads(out)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise BadInput(
            f"{' '.join(argv)} did not print one JSON object of measurements",
            'print e.g. {"speed": 101.5, "accel_mem_gb": "N/A: no accelerator", ...}',
        )
    missing = [n for n in names if n not in data]
    if missing:
        raise BadInput(
            f"{' '.join(argv)} printed no {', '.join(repr(n) for n in missing)}",
            'print every [campaign] measurement: a number or "N/A: why"',
        )
    return data


def _joined(name: str, values: list[Any]) -> str:
    """The ``--measure`` text of one measurement over the runs: ``a,b,c`` or ``N/A: why``."""
    texts = [v for v in values if isinstance(v, str)]
    if texts and len(texts) != len(values):
        raise Refused(
            f"'{name}' was measured in some runs and not in others",
            "a measurement is a number in every run or N/A in every run",
        )
    if texts:
        return texts[0]
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise BadInput(f"'{name}' is {values[0]!r}: not a number nor 'N/A: why'")
    return ",".join(repr(float(v)) for v in values)


def measure(
    ctx: Context, sha: str, repeats: int | None, blob: str | None, overlay: bytes | None
) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Run ``[campaign] run`` at ``sha``: the ``--measure NAME=VALUE`` items of its runs
    and the provenance the candidate records. ``blob`` is the benchmark script's blob id
    the run measures with; ``overlay``, when given, its bytes, written over an older
    commit's script in the worktree (:func:`ledger.presets.campaign.evidence.instrument`)."""
    from ledger.core.scratchtree import detached

    cfg = table(ctx.config)
    if not cfg.run:
        raise BadInput(
            "--run needs [campaign] run in ledger.toml",
            'e.g. run = ["python3", "bench.py", "--commit", "{commit}"] under [campaign]',
        )
    count = repeats if repeats is not None else cfg.run_repeats
    if count < 1:
        raise BadInput(f"--repeats {count}: at least one run", "e.g. --repeats 3")
    timeout = ctx.config.run.timeout_seconds
    runs: list[dict[str, Any]] = []
    argvs: list[list[str]] = []
    script = cfg.benchmark_script
    with detached(ctx.store, sha, "campaign-run") as tree:
        if script and overlay is not None:
            (tree / script).parent.mkdir(parents=True, exist_ok=True)
            (tree / script).write_bytes(overlay)
        facts = {name: _fact(argv, str(tree)) for name, argv in sorted(cfg.environment.items())}
        for i in range(1, count + 1):
            argv = [w.replace("{commit}", sha).replace("{repeat}", str(i)) for w in cfg.run]
            argvs.append(argv)
            proc = _start(argv, str(tree), timeout)
            if proc.returncode != 0:
                tail = (proc.stderr.strip() or proc.stdout.strip())[-300:]
                raise Refused(
                    f"{' '.join(argv)} exited {proc.returncode} at {sha[:10]} (run {i} of "
                    f"{count}): {tail or 'no output'}",
                    "nothing was recorded; fix the benchmark or the candidate, then run again",
                )
            runs.append(_parse(cfg.measurements, proc.stdout, argv))
    items = tuple(f"{name}={_joined(name, [r[name] for r in runs])}" for name in cfg.measurements)
    provenance: dict[str, Any] = {
        "command": list(cfg.run),
        "code_commit": sha,
        "repeats": count,
        "environment": facts,
        "benchmark_script": script,
        "script_blob": blob,
    }
    return items, provenance
