"""One benchmark measurement as a gate command for this repository's own ledger.

    python bench/gate.py status-scaling --seed 1 --out results.json

Writes ``{"ratio": ..., "ours_ms": ..., "baseline_ms": ...}``: the same ratios as
bench/run.py --quick, measured once per seed (the seed only labels the
repetition; each run is a fresh measurement, so the spread across seeds is
the benchmark's noise). Generated ledgers are cached in bench/out/ between runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, git_add_commit, median_spread, sealed_env, timed
from bench.ledgergen import generate

CACHE = ROOT / "bench" / "out" / "ledgers"


def cached_ledger(steps: int, env: dict[str, str], into: Path) -> Path:
    source = CACHE / f"ledger-{steps}"
    if not (source / ".git").exists():
        shutil.rmtree(source, ignore_errors=True)
        generate(source, steps, env=env)
    target = into / f"ledger-{steps}"
    shutil.copytree(source, target, symlinks=True)
    shutil.rmtree(target / ".git" / "ledger", ignore_errors=True)
    return target


def ledger_cli(cwd: Path, env: dict[str, str], *args: str) -> float:
    import subprocess

    return timed(
        lambda: subprocess.run(
            [sys.executable, "-m", "ledger", *args],
            cwd=cwd,
            env=env,
            check=True,
            capture_output=True,
        )
    )


def status_scaling(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    small, big = cached_ledger(200, env, tmp), cached_ledger(1000, env, tmp)
    for repo in (small, big):
        ledger_cli(repo, env, "status", "--json")
    low = [ledger_cli(small, env, "status", "--json") for _ in range(3)]
    high = [ledger_cli(big, env, "status", "--json") for _ in range(3)]
    return median_spread(high)[0], median_spread(low)[0]


def status_warm(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """Warm ``git ledger status --json`` at 1,000 steps vs ``git status`` in the same repository."""
    import subprocess

    repo = cached_ledger(1000, env, tmp)
    ledger_cli(repo, env, "status", "--json")
    ours = [ledger_cli(repo, env, "status", "--json") for _ in range(5)]
    theirs = [
        timed(
            lambda: subprocess.run(
                ["git", "status", "--porcelain"], cwd=repo, env=env, check=True, capture_output=True
            )
        )
        for _ in range(5)
    ]
    return median_spread(ours)[0], median_spread(theirs)[0]


def transition(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    import os

    from ledger.presets.versions import record as record_cmd
    from ledger.presets.versions.ingest import Measurement

    repo = cached_ledger(1000, env, tmp)
    os.environ.update(env)
    ours, theirs = [], []
    results = tmp / "r.json"
    ledger_cli(
        repo,
        env,
        "register",
        "V5000",
        "--bet",
        "A bet",
        "--gate",
        "recent",
        "--files",
        "x.py",
        "--falsifier",
        "none",
    )
    for i in range(5):
        results.write_text(json.dumps({"score": 99.0 + i, "loss": 0.01}))
        m = Measurement(version="V5000", gate="recent", seed=str(i))
        ours.append(timed(lambda m=m: record_cmd.run(repo, "V5000", results, m, True)))
        plain = repo / "notes" / f"{i}.json"
        plain.parent.mkdir(exist_ok=True)
        plain.write_text(results.read_text())
        theirs.append(git_add_commit(repo, plain, env))
    return median_spread(ours)[0], median_spread(theirs)[0]


def _register(repo: Path, env: dict[str, str], vid: str) -> None:
    ledger_cli(
        repo,
        env,
        *("register", vid, "--bet", "A bet", "--gate", "recent"),
        *("--files", "x.py", "--falsifier", "none"),
    )


def writes(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """One ``record`` as a process at 1,000 steps vs ``git add && git commit`` as processes."""
    repo = cached_ledger(1000, env, tmp)
    ledger_cli(repo, env, "status", "--json")  # the entry cache, as a ledger in use has it
    _register(repo, env, "V5000")
    ours, theirs = [], []
    results = tmp / "r.json"
    for i in range(3):
        results.write_text(json.dumps({"score": 99.0 + i, "loss": 0.01}))
        ours.append(
            ledger_cli(
                repo, env, "record", "V5000", "--gate", "recent", "--seed", str(i), str(results)
            )
        )
        plain = repo / "notes" / f"{i}.json"
        plain.parent.mkdir(exist_ok=True)
        plain.write_text(results.read_text())
        theirs.append(git_add_commit(repo, plain, env))
    return median_spread(ours)[0], median_spread(theirs)[0]


def register(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """One ``register`` as a process at 1,000 steps vs ``git add && git commit`` as processes.

    Each register is concluded (void, as a processes' cost is what is measured) so the
    next one may open; the README's baseline block makes register compute each gate's
    MDE, which is what this gate sees.
    """
    repo = cached_ledger(1000, env, tmp)
    ledger_cli(repo, env, "status", "--json")  # the entry cache, as a ledger in use has it
    ours, theirs = [], []
    for i in range(3):
        vid = f"V{5000 + i}"
        ours.append(
            ledger_cli(
                repo,
                env,
                *("register", vid, "--bet", "A bet", "--gate", "recent"),
                *("--files", "x.py", "--falsifier", "none"),
            )
        )
        ledger_cli(repo, env, "void", vid, "--reason", "measured")
        plain = repo / "notes" / f"{i}.md"
        plain.parent.mkdir(exist_ok=True)
        plain.write_text(f"note {i}\n")
        theirs.append(git_add_commit(repo, plain, env))
    return median_spread(ours)[0], median_spread(theirs)[0]


def report(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """``report --format html`` at 1,000 versions vs a warm ``status --json`` (as bench/run.py)."""
    repo = cached_ledger(1000, env, tmp)
    ledger_cli(repo, env, "status", "--json")
    warm = [ledger_cli(repo, env, "status", "--json") for _ in range(3)]
    out = tmp / "report.html"
    html = [
        ledger_cli(repo, env, "report", "--format", "html", "--out", str(out)) for _ in range(3)
    ]
    return median_spread(html)[0], median_spread(warm)[0]


def cold_status(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """A cold ``status --json`` (no .git/ledger/) at 1,000 steps vs ``git cat-file --batch``
    reading the same entry blobs: what parsing costs against what reading costs."""
    import subprocess

    repo = cached_ledger(1000, env, tmp)  # copied without .git/ledger/: cold
    ours = ledger_cli(repo, env, "status", "--json")
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--object-only", "HEAD", "training_log/"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    ).stdout
    theirs = [
        timed(
            lambda: subprocess.run(
                ["git", "cat-file", "--batch"],
                cwd=repo,
                env=env,
                input=listing,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        )
        for _ in range(3)
    ]
    return ours, median_spread(theirs)[0]


def conclude_scaling(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    """``conclude`` as a process at 1,000 vs 200 steps (caches warm, as in use)."""
    times = []
    for steps in (1000, 200):
        repo = cached_ledger(steps, env, tmp)
        ledger_cli(repo, env, "status", "--json")
        runs = []
        for i in range(2):
            vid = f"V{steps + 100 + i}"
            _register(repo, env, vid)
            results = tmp / "c.json"
            results.write_text(json.dumps({"score": 90.0 + i, "loss": 0.01}))
            ledger_cli(repo, env, "record", vid, "--gate", "recent", "--seed", "1", str(results))
            runs.append(
                ledger_cli(repo, env, "conclude", vid, "--verdict", "inconclusive", "--next", "x")
            )
        times.append(min(runs))
    return times[0], times[1]


def hooks(env: dict[str, str], tmp: Path) -> tuple[float, float]:
    import contextlib
    import io

    from bench import hooks as hook_bench

    found: dict[str, float] = {}
    with contextlib.redirect_stdout(io.StringIO()):
        hook_bench.compare_with_pre_commit(6, found.__setitem__, details=found)
    return found["ledger_added"], found["framework_added"]


GATES = {
    "status-scaling": status_scaling,
    "status-warm": status_warm,
    "transition": transition,
    "hooks": hooks,
    "writes": writes,
    "register": register,
    "report": report,
    "cold-status": cold_status,
    "conclude-scaling": conclude_scaling,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("gate", choices=sorted(GATES))
    parser.add_argument("--seed", required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ledger-gate-"))
    home = tmp / "home"
    home.mkdir()
    try:
        ours, baseline = GATES[args.gate](sealed_env(home), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.write_text(
        json.dumps(
            {
                "ratio": round(ours / baseline, 4),
                "ours_ms": round(ours * 1000, 2),
                "baseline_ms": round(baseline * 1000, 2),
                "seed": args.seed,
            }
        )
        + "\n"
    )
    print(
        f"{args.gate}: ratio {ours / baseline:.3f} ({ours * 1000:.1f} ms vs {baseline * 1000:.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
