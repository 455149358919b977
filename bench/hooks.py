"""Hook overhead: `git commit` with the ledger hooks vs no hooks, in one run.

Two commits: one that touches no ledger path (the fast path: git program and
standard library only) and one that touches a ledger entry (the heavy path);
then the same commit through the pre-commit framework running one no-op hook,
as the reference (the framework installed into its own venv under bench/out/).
Targets: the hooks of a commit that adds a ledger entry add at most 100 ms
(all stages); those of a commit with no ledger work at most 0.25x what the
framework's no-op hook adds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from bench.common import Sandbox, median_spread, report, timed, tool_executable, verdict

ENTRY_BUDGET = 0.100  # seconds all hook stages may add to a commit with ledger work
NOOP_TARGET = 0.25  # x the pre-commit framework's no-op hook, for a commit with none


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    compare_with_pre_commit(args.rounds, lambda name, ratio: None)
    return 0


def _commit_times(box: Sandbox, path: str, rounds: int, hooks: bool, message: str) -> list[float]:
    times = []
    for i in range(rounds):
        target = box.repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{i} {hooks} {time.perf_counter()}\n")
        box.git("add", path)
        args = (
            ["commit", "-q", "-m", message]
            if hooks
            else ["-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", message]
        )
        times.append(timed(lambda args=args: box.git(*args)))
    return times


def compare_with_pre_commit(
    rounds: int, record: Callable[[str, float], None], details: dict[str, float] | None = None
) -> None:
    """Added cost of the ledger's hooks vs the pre-commit framework running one no-op hook."""
    box = Sandbox("hooks-ledger")
    box.ledger("init")
    box.ledger("hooks", "install")
    box.ledger(
        "register",
        "V1",
        "--bet",
        "A bet",
        "--gate",
        "recent",
        "--files",
        "src/x.py",
        "--falsifier",
        "none",
    )
    added = {}
    for label, path in (
        ("no ledger work", "src/x.py"),
        ("a ledger entry", "training_log/notes.md"),
    ):
        hooked = _commit_times(box, path, rounds, True, "feat(x): V1 — step")
        bare = _commit_times(box, path, rounds, False, "feat(x): V1 — step")
        report(f"git commit with the ledger hooks ({label}) vs no hooks", hooked, bare, "no hooks")
        added[label] = median_spread(hooked)[0] - median_spread(bare)[0]
        if label == "a ledger entry":
            budget = added[label] / ENTRY_BUDGET
            record("hooks_entry_vs_budget", budget)
            print(
                f"ledger hooks, commit adding {label}: ratio {budget:.3f} of the "
                f"{ENTRY_BUDGET * 1000:.0f} ms budget (added {added[label] * 1000:.1f} ms)"
                f"{verdict(budget, 1.0)}",
                flush=True,
            )
    ref = Sandbox("hooks-pre-commit")
    (ref.repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: noop\n        name: no-op\n"
        f"        entry: {sys.executable} -c pass\n        language: system\n        always_run: true\n"
        "        pass_filenames: false\n"
    )
    ref.git("add", "-A")
    ref.git("commit", "-q", "-m", "chore: pre-commit")
    ref.run(str(tool_executable("pre-commit", "pre-commit")), "install")
    framework = _commit_times(ref, "src/x.py", rounds, True, "x")
    framework_bare = _commit_times(ref, "src/x.py", rounds, False, "x")
    framework_added = median_spread(framework)[0] - median_spread(framework_bare)[0]
    ratio = added["no ledger work"] / framework_added if framework_added > 0 else float("inf")
    record("hooks_vs_pre_commit", ratio)
    if details is not None:
        details["ledger_added"] = added["no ledger work"]
        details["framework_added"] = framework_added
    print(
        f"ledger hooks (3 stages, no ledger work) vs the pre-commit framework's one no-op hook: ratio "
        f"{ratio:.3f} ({added['no ledger work'] * 1000:.1f} ms vs {framework_added * 1000:.1f} ms added)"
        f"{verdict(ratio, NOOP_TARGET)}",
        flush=True,
    )


if __name__ == "__main__":
    raise SystemExit(main())
