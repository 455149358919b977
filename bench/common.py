"""Shared helpers for the benchmarks: sealed git environments, timing, medians and spreads.

Every figure is measured side by side with its baseline in the same run and
printed as a ratio (these machines are shared and noisy); absolute numbers are
printed only next to the ratio they explain.
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"


def tool_executable(package: str, program: str) -> Path:
    """``program`` from ``package``, installed once into its own venv under bench/out/.

    The baselines (DVC, the pre-commit framework) are never the development
    environment's: a plain ``pip install -e .`` has neither, and a tool that
    shares our venv would share (and skew) its imports.
    """
    venv = OUT / f"{package}-venv"
    exe = venv / "bin" / program
    if not exe.exists():
        print(f"# installing {package} into {venv} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "-q", package], capture_output=True, text=True
        )
        if pip.returncode != 0:
            raise RuntimeError(f"pip install {package} failed:\n{pip.stderr}")
    return exe


def sealed_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "LEDGER_"))}
    # Bytecode is cached as for any installed package (pip compiles DVC's at install
    # time); a machine-wide PYTHONDONTWRITEBYTECODE would recompile ours every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    env.update(
        {
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.com",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.com",
            "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        }
    )
    return env


class Sandbox:
    """A temporary HOME and repository with a sealed environment."""

    def __init__(self, name: str) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix=f"ledger-bench-{name}-"))
        atexit.register(shutil.rmtree, self.tmp, True)  # never leave sandboxes behind
        (self.tmp / "home").mkdir()
        self.env = sealed_env(self.tmp / "home")
        self.repo = self.tmp / "repo"
        self.repo.mkdir()
        self.git("init", "-q")

    def run(self, *args: str, cwd: Path | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            list(args),
            cwd=cwd or self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {proc.stderr}")
        return proc.stdout

    def git(self, *args: str, check: bool = True) -> str:
        return self.run("git", *args, check=check)

    def ledger(self, *args: str, check: bool = True) -> str:
        return self.run(sys.executable, "-m", "ledger", *args, check=check)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_spread(samples: list[float]) -> tuple[float, float]:
    """Median and spread (half the inter-quartile range, or half the range for n < 4)."""
    ordered = sorted(samples)
    med = statistics.median(ordered)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        return med, (q[2] - q[0]) / 2
    return med, (ordered[-1] - ordered[0]) / 2


def verdict(ratio: float, target: float | None) -> str:
    """`` — target ≤ T: met`` (or ``missed``); empty for a figure printed for scale."""
    if target is None:
        return ""
    return f" — target ≤ {target:g}: {'met' if ratio <= target else 'missed'}"


def report(
    name: str,
    ours: list[float],
    theirs: list[float],
    baseline: str,
    target: float | None = None,
) -> float:
    mo, so = median_spread(ours)
    mt, st = median_spread(theirs)
    ratio = mo / mt if mt else float("inf")
    print(
        f"{name}: ratio {ratio:.3f} (ours {mo * 1000:.1f} ± {so * 1000:.1f} ms vs {baseline} "
        f"{mt * 1000:.1f} ± {st * 1000:.1f} ms, n={len(ours)}){verdict(ratio, target)}",
        flush=True,
    )
    return ratio


def git_add_commit(repo: Path, path: Path, env: dict[str, str]) -> float:
    """Seconds for ``git add PATH && git commit`` with hooks off: the baseline transition."""

    def both() -> None:
        for args in (["add", str(path)], ["commit", "-q", "-m", "x"]):
            subprocess.run(
                ["git", "-c", "core.hooksPath=/dev/null", *args], cwd=repo, env=env, check=True
            )

    return timed(both)
