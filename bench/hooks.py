"""Hook overhead: `git commit` with the ledger hooks vs no hooks, in one run.

Two commits: one that touches no ledger path (the fast path: git program and
standard library only) and one that touches a ledger entry (the heavy path);
then the same commit through the pre-commit framework running one no-op hook,
as the reference. Prints ratios and the milliseconds the hooks add (target:
under 100 ms for a commit with no ledger work).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Sandbox, median_spread, report, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    compare_with_pre_commit(args.rounds, lambda name, ratio: None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


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
        print(
            f"ledger hooks, commit with {label}: added {added[label] * 1000:.1f} ms (ratio "
            f"{median_spread(hooked)[0] / median_spread(bare)[0]:.2f} of a hookless commit)"
        )
    ref = Sandbox("hooks-pre-commit")
    (ref.repo / ".pre-commit-config.yaml").write_text(
        "repos:\n  - repo: local\n    hooks:\n      - id: noop\n        name: no-op\n"
        f"        entry: {sys.executable} -c pass\n        language: system\n        always_run: true\n"
        "        pass_filenames: false\n"
    )
    ref.git("add", "-A")
    ref.git("commit", "-q", "-m", "chore: pre-commit")
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or "pre-commit"
    ref.run(exe, "install")
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
    )
