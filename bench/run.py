"""git-ledger's benchmarks: every figure a ratio against a baseline measured in the same run.

    python bench/run.py           # full sizes (ledgers of 200, 1,000 and 10,000 steps; DVC at 200 and 500)
    python bench/run.py --quick   # smaller sizes, under 5 minutes

Each figure is the median of several runs, printed with its spread on a line
containing the word "ratio". These machines are shared and noisy: read the
ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import git_add_commit, median_spread, report, sealed_env, timed


class Bench:
    def __init__(self, quick: bool, rounds: int, dvc: bool) -> None:
        self.quick = quick
        self.rounds = rounds
        self.dvc = dvc
        self.tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-"))
        home = self.tmp / "home"
        home.mkdir()
        self.env = sealed_env(home)
        self.ledgers: dict[int, Path] = {}
        self.ratios: dict[str, float] = {}

    def ledger_repo(self, steps: int) -> Path:
        """A fresh copy of a generated ledger of ``steps`` (generated once, cached in bench/out/)."""
        if steps not in self.ledgers:
            from bench.gate import CACHE, cached_ledger

            started = time.perf_counter()
            fresh = not (CACHE / f"ledger-{steps}" / ".git").exists()
            self.ledgers[steps] = cached_ledger(steps, self.env, self.tmp)
            verb = "generated" if fresh else "copied"
            print(
                f"# {verb} a ledger of {steps} steps ({steps * 5} results) in "
                f"{time.perf_counter() - started:.1f} s",
                flush=True,
            )
        return self.ledgers[steps]

    def cli(self, cwd: Path, *args: str) -> float:
        return timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "ledger", *args],
                cwd=cwd,
                env=self.env,
                check=True,
                capture_output=True,
            )
        )

    def status_times(self, steps: int) -> tuple[list[float], list[float]]:
        repo = self.ledger_repo(steps)
        cold, warm = [], []
        for _ in range(self.rounds):
            shutil.rmtree(repo / ".git" / "ledger" / "cache", ignore_errors=True)
            cold.append(self.cli(repo, "status", "--json"))
        self.cli(repo, "status", "--json")
        for _ in range(self.rounds):
            warm.append(self.cli(repo, "status", "--json"))
        return cold, warm

    def record(self, name: str, ratio: float) -> None:
        self.ratios[name] = ratio

    # --- the figures ---------------------------------------------------------

    def status_vs_dvc(self) -> None:
        from bench import dvcbench

        sizes = (25,) if self.quick else (200, 500)
        for n in sizes:
            cold, warm = self.status_times(n)
            repo = self.tmp / f"dvc-{n}"
            saves = dvcbench.make_repo(repo, n, self.env)
            dvcbench.exp_show(repo, self.env, cold=False)
            dvc_warm = [dvcbench.exp_show(repo, self.env, cold=False) for _ in range(self.rounds)]
            dvc_cold = [dvcbench.exp_show(repo, self.env, cold=True) for _ in range(self.rounds)]
            self.record(
                f"status{n}_vs_dvc_warm",
                report(
                    f"status at {n} steps (warm) vs dvc exp show --json warm", warm, dvc_warm, "dvc"
                ),
            )
            self.record(
                f"status{n}_vs_dvc_cold",
                report(
                    f"status at {n} steps (warm) vs dvc exp show --json cold", warm, dvc_cold, "dvc"
                ),
            )
            report(
                f"status at {n} steps (cold cache) vs dvc exp show --json cold",
                cold,
                dvc_cold,
                "dvc",
            )
            repo_l = self.ledger_repo(n)
            record_times = []
            for i in range(self.rounds):
                results = self.tmp / f"r{i}.json"
                results.write_text(json.dumps({"score": 90 + i, "loss": 0.01}))
                self.cli(
                    repo_l,
                    "register",
                    f"V{n + 1 + i}",
                    "--bet",
                    "A bet",
                    "--gate",
                    "recent",
                    "--files",
                    "x.py",
                    "--falsifier",
                    "none",
                )
                record_times.append(
                    self.cli(
                        repo_l,
                        "record",
                        f"V{n + 1 + i}",
                        "--gate",
                        "recent",
                        "--seed",
                        "1",
                        str(results),
                    )
                )
                self.cli(
                    repo_l, "conclude", f"V{n + 1 + i}", "--verdict", "inconclusive", "--next", "x"
                )
            self.record(
                "record_vs_dvc_save",
                report(
                    "one record (whole process) vs one dvc exp save",
                    record_times,
                    saves[-self.rounds :],
                    "dvc exp save",
                ),
            )

    def transition(self) -> None:
        """One record in process and as a process, against git add && git commit, at scale."""
        from ledger.commands import record as record_cmd
        from ledger.ingest import Measurement

        steps = 1000 if self.quick else 10000
        repo = self.ledger_repo(steps)
        git_times, proc_times, inproc_times = [], [], []
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("GIT_")})
        for i in range(self.rounds * 2):
            vid = f"V{steps + 100 + i}"
            self.cli(
                repo,
                "register",
                vid,
                "--bet",
                "A bet",
                "--gate",
                "recent",
                "--files",
                "x.py",
                "--falsifier",
                "none",
            )
            results = self.tmp / "t.json"
            results.write_text(json.dumps({"score": 91.5 + i, "loss": 0.01}))
            plain = repo / "notes" / f"plain-{i}.json"
            plain.parent.mkdir(exist_ok=True)
            plain.write_text(results.read_text())
            git_times.append(git_add_commit(repo, plain, self.env))
            proc_times.append(
                self.cli(repo, "record", vid, "--gate", "recent", "--seed", "1", str(results))
            )
            m = Measurement(version=vid, gate="recent", seed="2")
            inproc_times.append(
                timed(lambda m=m, vid=vid, r=results: record_cmd.run(repo, vid, r, m, True))
            )
            self.cli(repo, "conclude", vid, "--verdict", "inconclusive", "--next", "x")
        self.record(
            "transition_inproc_vs_git",
            report(
                f"one record in process at {steps} steps vs git add && git commit",
                inproc_times,
                git_times,
                "git",
            ),
        )
        report(
            f"one record as a process at {steps} steps vs git add && git commit",
            proc_times,
            git_times,
            "git",
        )
        batch = 100 if self.quick else 1000
        vid = f"V{steps + 1000}"
        self.cli(
            repo,
            "register",
            vid,
            "--bet",
            "Batch",
            "--gate",
            "recent",
            "--files",
            "x.py",
            "--falsifier",
            "n",
        )
        started = time.perf_counter()
        for seed in range(batch):
            results.write_text(json.dumps({"score": 90.0 + seed / 1000, "loss": 0.01}))
            record_cmd.run(
                repo, vid, results, Measurement(version=vid, gate="recent", seed=str(seed)), True
            )
        per_file = (time.perf_counter() - started) / batch
        med_git, _ = median_spread(git_times)
        print(
            f"batch ingest of {batch} result files: ratio {per_file / med_git:.3f} per file vs git add && "
            f"git commit ({per_file * 1000:.1f} ms per file, {batch / (per_file * batch):.0f} files/s)"
        )

    def scaling(self) -> None:
        low, high = (200, 1000) if self.quick else (1000, 10000)
        _, warm_low = self.status_times(low)
        _, warm_high = self.status_times(high)
        self.record(
            "status_scaling",
            report(f"status warm at {high} vs {low} steps", warm_high, warm_low, f"{low} steps"),
        )
        log_low = [
            self.cli(self.ledger_repo(low), "log", "-n", "20", "--json") for _ in range(self.rounds)
        ]
        log_high = [
            self.cli(self.ledger_repo(high), "log", "-n", "20", "--json")
            for _ in range(self.rounds)
        ]
        report(f"log -n 20 at {high} vs {low} steps", log_high, log_low, f"{low} steps")

    def hooks(self) -> None:
        from bench import hooks

        hooks.compare_with_pre_commit(self.rounds * 2, self.record)

    def concurrency(self) -> None:
        from bench import concurrency

        concurrency.run(8, 25 if self.quick else 100, self.env, self.tmp)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (under 5 minutes)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="runs per figure (median of these)"
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        choices=["status", "transition", "scaling", "hooks", "concurrency"],
    )
    parser.add_argument("--no-dvc", action="store_true", help="skip the DVC comparisons")
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the ratios to this file"
    )
    args = parser.parse_args()
    bench = Bench(args.quick, args.rounds or (3 if args.quick else 5), not args.no_dvc)
    started = time.perf_counter()
    plan = args.only or ["status", "transition", "scaling", "hooks", "concurrency"]
    try:
        for name in plan:
            if name == "status" and not bench.dvc:
                continue
            print(f"## {name}", flush=True)
            getattr(bench, {"status": "status_vs_dvc"}.get(name, name))()
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print(f"# done in {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(bench.ratios, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
