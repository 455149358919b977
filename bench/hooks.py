"""Hook overhead: `git commit` with the ledger hooks vs `--no-verify`, in one run.

Two commits: one that touches no ledger path (the fast path: git program and
standard library only) and one that touches a ledger entry (the heavy path).
Prints the ratio and the milliseconds the hooks add (target: under 100 ms
for a commit with no ledger work).
"""

from __future__ import annotations

import argparse

from bench.common import Sandbox, median_spread, report, timed


def measure(rounds: int) -> dict[str, float]:
    box = Sandbox("hooks")
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
    results: dict[str, float] = {}
    for label, path in (
        ("code commit (no ledger work)", "src/x.py"),
        ("ledger commit (entry file)", "training_log/notes.md"),
    ):
        hooked: list[float] = []
        plain: list[float] = []
        for i in range(rounds):
            for verify, sink in ((True, hooked), (False, plain)):
                target = box.repo / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(f"{i} {verify}\n")
                box.git("add", path)
                args = ["commit", "-q", "-m", f"feat(x): V1 — step {i}"]
                if not verify:
                    args.append("--no-verify")
                sink.append(timed(lambda args=args: box.git(*args)))
        ratio = report(f"hooks {label}", hooked, plain, "--no-verify")
        added = (median_spread(hooked)[0] - median_spread(plain)[0]) * 1000
        print(f"hooks {label}: added {added:.1f} ms per commit (ratio {ratio:.3f})")
        results[label] = added
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    measure(args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
