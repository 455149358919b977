"""git-ledger's benchmarks: every figure a ratio against a baseline measured in the same run.

    python bench/run.py           # full: scaling at 1,000 vs 10,000 steps, DVC at 200 and 500
    python bench/run.py --quick   # the same figures, fewer rounds, scaling at 200 vs 1,000
                                  # steps (under 3 minutes on an idle 2-core machine once
                                  # bench/out/ holds the generated ledgers and the venvs)

Each figure is the median of several runs, printed with its spread on a line
containing the word "ratio"; a figure with a target says "target ≤ T: met"
(or "missed"); peak memory is printed on lines containing "rss". These
machines are shared and noisy: read the ratios, not the milliseconds.

The baselines run beside us: ``git add && git commit`` and ``git cat-file
--batch`` (the floor for a transition and for reading entries), DVC and the
pre-commit framework, each installed once into its own venv under bench/out/
(so a plain ``pip install -e .`` is enough). Generated ledgers are cached in
bench/out/ledgers/ as well.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import git_add_commit, median_spread, report, sealed_env, timed, verdict

WRITE_STEPS = 1000  # the write verbs, DVC and the HTML report: always at 1,000 steps
WRITE_TARGET = 5.0  # record/register/conclude as processes, x git add && git commit
DVC_SAVE_TARGET = 0.15  # one record as a process, x one dvc exp save
CONCLUDE_SCALING_TARGET = 2.0
COLD_STATUS_TARGET = 5.0  # x git cat-file --batch reading the same entry blobs
LOG_SCALING_TARGET = 1.2
STATUS_SCALING_TARGET = 2.0
REPORT_TARGET = 10.0  # HTML report at 1,000 versions, x a warm status
RSS_BUDGET_MB = 200.0
TRACE_TARGET = 2.0  # 336 trace events in one call, x one git add && git commit
TRACE_EVENTS = 336  # one batch of the batches loop's document
VERIFY_TARGET = 1.0  # incremental verify after one transition, x a warm status


class Bench:
    def __init__(self, quick: bool, rounds: int, dvc: bool) -> None:
        self.quick = quick
        # The scaling figures: 1,000 vs 10,000 steps; --quick reads 200 vs 1,000 (a cold
        # status replays the whole history, minutes at 10,000 steps on a loaded machine).
        self.small, self.big = (200, 1000) if quick else (1000, 10000)
        self.rounds = rounds
        # The 10,000-step figures cost seconds each: fewer rounds in --quick.
        self.heavy_rounds = 2 if quick else max(3, rounds)
        self.dvc = dvc
        self.tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-"))
        home = self.tmp / "home"
        home.mkdir()
        self.env = sealed_env(home)
        self.ledgers: dict[int, Path] = {}
        self.ratios: dict[str, float] = {}
        self.targets: list[str] = []
        self.times: dict[str, list[float]] = {}
        self.next_id = 0

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

    def run_cli(self, cwd: Path, *args: str) -> tuple[float, float]:
        """Seconds and peak RSS (MB) of one ``python -m ledger ARGS`` process.

        ``os.wait4`` gives that one child's resource usage (ru_maxrss: the largest
        resident set of it and the git processes it waited for), without psutil.
        """
        with tempfile.TemporaryFile() as err:
            started = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "ledger", *args],
                cwd=cwd,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - started
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                err.seek(0)
                raise RuntimeError(
                    f"git ledger {' '.join(args)} exited {proc.returncode}: "
                    f"{err.read().decode(errors='replace').strip()}"
                )
        # Linux reports kilobytes, macOS bytes.
        rss = usage.ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
        return elapsed, rss

    def cli(self, cwd: Path, *args: str) -> float:
        return self.run_cli(cwd, *args)[0]

    def fresh_id(self, steps: int) -> str:
        self.next_id += 1
        return f"V{steps + 1000 + self.next_id}"

    def register(self, repo: Path, vid: str) -> float:
        return self.cli(
            repo,
            *("register", vid, "--bet", "A bet", "--gate", "recent"),
            *("--files", "x.py", "--falsifier", "none"),
        )

    def results(self, score: float) -> Path:
        path = self.tmp / "results.json"
        path.write_text(json.dumps({"score": score, "loss": 0.01}))
        return path

    def conclude(self, repo: Path, vid: str) -> tuple[float, float]:
        return self.run_cli(repo, "conclude", vid, "--verdict", "inconclusive", "--next", "x")

    def target(self, key: str, ratio: float, line: str) -> None:
        """Keep a figure that has a target, for the summary at the end."""
        self.ratios[key] = ratio
        self.targets.append(line)

    def compare(
        self,
        key: str,
        name: str,
        ours: list[float],
        theirs: list[float],
        baseline: str,
        limit: float | None,
    ) -> float:
        ratio = report(name, ours, theirs, baseline, limit)
        if limit is None:
            self.ratios[key] = ratio
        else:
            self.target(key, ratio, f"{name}: ratio {ratio:.3f}{verdict(ratio, limit)}")
        return ratio

    def rss(self, what: str, megabytes: float) -> None:
        ratio = megabytes / RSS_BUDGET_MB
        line = (
            f"peak rss of {what}: {megabytes:.1f} MB, ratio {ratio:.3f} of the "
            f"{RSS_BUDGET_MB:.0f} MB budget{verdict(ratio, 1.0)}"
        )
        print(line, flush=True)
        self.target(f"rss_{what.split()[0]}", ratio, line)

    # --- the figures ---------------------------------------------------------

    def writes(self) -> None:
        """register, record and conclude as processes at 1,000 steps vs git add && git commit."""
        from ledger.presets.versions import record as record_cmd
        from ledger.presets.versions.ingest import Measurement

        repo = self.ledger_repo(WRITE_STEPS)
        self.cli(repo, "status", "--json")  # the entry cache, as any ledger in use has it
        os.environ.update({k: v for k, v in self.env.items() if k.startswith("GIT_")})
        git_times: list[float] = []
        register, record, conclude, inproc = [], [], [], []
        for i in range(self.rounds):
            vid = self.fresh_id(WRITE_STEPS)
            plain = repo / "notes" / f"plain-{i}.json"
            plain.parent.mkdir(exist_ok=True)
            plain.write_text(json.dumps({"score": 91.5 + i}))
            git_times.append(git_add_commit(repo, plain, self.env))
            register.append(self.register(repo, vid))
            results = self.results(91.5 + i)
            record.append(
                self.cli(repo, "record", vid, "--gate", "recent", "--seed", "1", str(results))
            )
            m = Measurement(version=vid, gate="recent", seed="2")
            with contextlib.redirect_stdout(io.StringIO()):  # its one line is not a figure
                inproc.append(
                    timed(lambda m=m, v=vid, r=results: record_cmd.run(repo, v, r, m, False))
                )
            conclude.append(self.conclude(repo, vid)[0])
        self.times["record"] = record
        at = f"at {WRITE_STEPS:,} steps vs git add && git commit"
        for key, verb, times in (
            ("register_vs_git", "register", register),
            ("record_vs_git", "record", record),
            ("conclude_vs_git", "conclude", conclude),
        ):
            self.compare(
                key, f"one {verb} as a process {at}", times, git_times, "git", WRITE_TARGET
            )
        self.compare(
            "record_inproc_vs_git", f"one record in process {at}", inproc, git_times, "git", None
        )
        batch = 50 if self.quick else 500
        vid = self.fresh_id(WRITE_STEPS)
        self.register(repo, vid)
        results = self.tmp / "batch.json"
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            for seed in range(batch):
                results.write_text(json.dumps({"score": 90.0 + seed / 1000, "loss": 0.01}))
                record_cmd.run(
                    repo,
                    vid,
                    results,
                    Measurement(version=vid, gate="recent", seed=str(seed)),
                    False,
                )
        per_file = (time.perf_counter() - started) / batch
        self.conclude(repo, vid)  # one open version at a time: the figures after it register
        med_git, _ = median_spread(git_times)
        print(
            f"batch ingest of {batch} result files in process at {WRITE_STEPS:,} steps: ratio "
            f"{per_file / med_git:.3f} per file vs git add && git commit "
            f"({per_file * 1000:.1f} ms per file)",
            flush=True,
        )

    def dvc_figures(self) -> None:
        from bench import dvcbench

        sizes = (20,) if self.quick else (200, 500)
        for n in sizes:
            repo = self.tmp / f"dvc-{n}"
            saves = dvcbench.make_repo(repo, n, self.env)
            if n == sizes[-1]:
                record = self.times.get("record") or self._record_times()
                self.compare(
                    "record_vs_dvc_save",
                    f"one record as a process at {WRITE_STEPS:,} steps vs one dvc exp save "
                    f"(of {n} experiments)",
                    record,
                    saves[-self.rounds :],
                    "dvc exp save",
                    DVC_SAVE_TARGET,
                )
            dvcbench.exp_show(repo, self.env, cold=False)
            dvc_warm = [dvcbench.exp_show(repo, self.env, cold=False) for _ in range(self.rounds)]
            dvc_cold = [dvcbench.exp_show(repo, self.env, cold=True) for _ in range(self.rounds)]
            cold, warm = self.status_times(n)
            self.compare(
                f"status{n}_vs_dvc_warm",
                f"warm status at {n} steps vs dvc exp show --json warm",
                warm,
                dvc_warm,
                "dvc",
                0.1,
            )
            self.compare(
                f"status{n}_vs_dvc_cold",
                f"warm status at {n} steps vs dvc exp show --json cold",
                warm,
                dvc_cold,
                "dvc",
                0.02,
            )
            self.compare(
                f"status{n}_cold_vs_dvc_cold",
                f"cold status at {n} steps vs dvc exp show --json cold",
                cold,
                dvc_cold,
                "dvc",
                None,
            )

    def _record_times(self) -> list[float]:
        repo = self.ledger_repo(WRITE_STEPS)
        times = []
        for i in range(self.rounds):
            vid = self.fresh_id(WRITE_STEPS)
            self.register(repo, vid)
            results = self.results(90.0 + i)
            times.append(
                self.cli(repo, "record", vid, "--gate", "recent", "--seed", "1", str(results))
            )
            self.conclude(repo, vid)
        return times

    def status_times(
        self, steps: int, rounds: int | None = None
    ) -> tuple[list[float], list[float]]:
        """Cold (no .git/ledger/: no caches at all) and warm ``status --json`` times."""
        repo = self.ledger_repo(steps)
        cold, warm = [], []
        for _ in range(rounds or self.rounds):
            shutil.rmtree(repo / ".git" / "ledger", ignore_errors=True)
            seconds, rss = self.run_cli(repo, "status", "--json")
            cold.append(seconds)
        if steps == self.big:
            self.rss(f"status (cold) at {steps:,} steps", rss)
        self.cli(repo, "status", "--json")
        for _ in range(self.rounds):
            warm.append(self.cli(repo, "status", "--json"))
        return cold, warm

    def cat_file(self, repo: Path) -> float:
        """``git cat-file --batch`` reading every entry blob of the ledger dir (listed beforehand)."""
        listing = subprocess.run(
            ["git", "ls-tree", "-r", "--object-only", "HEAD", "training_log/"],
            cwd=repo,
            env=self.env,
            check=True,
            capture_output=True,
        ).stdout
        return timed(
            lambda: subprocess.run(
                ["git", "cat-file", "--batch"],
                cwd=repo,
                env=self.env,
                input=listing,
                check=True,
                stdout=subprocess.DEVNULL,
            )
        )

    def scale(self) -> None:
        """What grows with the ledger (1,000 vs 10,000 steps), and the floors git sets."""
        lo, hi = self.small, self.big
        small, big = self.ledger_repo(lo), self.ledger_repo(hi)
        cold_big, warm_big = self.status_times(hi, self.heavy_rounds)
        _, warm_small = self.status_times(lo)
        self.compare(
            "status_scaling",
            f"warm status at {hi:,} vs {lo:,} steps",
            warm_big,
            warm_small,
            f"{lo:,} steps",
            STATUS_SCALING_TARGET,
        )
        reads = [self.cat_file(big) for _ in range(self.heavy_rounds)]
        self.compare(
            "cold_status_vs_cat_file",
            f"cold status at {hi:,} steps vs git cat-file --batch reading the same entry blobs",
            cold_big,
            reads,
            "cat-file",
            COLD_STATUS_TARGET,
        )
        log_small = [self.cli(small, "log", "-n", "20", "--json") for _ in range(self.rounds)]
        log_big = [self.cli(big, "log", "-n", "20", "--json") for _ in range(self.rounds)]
        self.compare(
            "log_scaling",
            f"log -n 20 at {hi:,} vs {lo:,} steps",
            log_big,
            log_small,
            f"{lo:,} steps",
            LOG_SCALING_TARGET,
        )
        conclude_small = [self._conclude_at(small, lo)[0] for _ in range(self.rounds)]
        conclude_big, peak = [], 0.0
        for _ in range(self.heavy_rounds):
            seconds, rss = self._conclude_at(big, hi)
            conclude_big.append(seconds)
            peak = max(peak, rss)
        self.compare(
            "conclude_scaling",
            f"conclude at {hi:,} vs {lo:,} steps",
            conclude_big,
            conclude_small,
            f"{lo:,} steps",
            CONCLUDE_SCALING_TARGET,
        )
        self.rss(f"conclude at {hi:,} steps", peak)
        for name in ("verify-cache.json", "verify-report.json"):  # a full replay
            (big / ".git" / "ledger" / name).unlink(missing_ok=True)
        _, rss = self.run_cli(big, "verify")
        self.rss(f"verify (full) at {hi:,} steps", rss)
        self.html_report(self.ledger_repo(WRITE_STEPS))

    def _conclude_at(self, repo: Path, steps: int) -> tuple[float, float]:
        vid = self.fresh_id(steps)
        self.register(repo, vid)
        self.cli(repo, "record", vid, "--gate", "recent", "--seed", "1", str(self.results(90.0)))
        return self.conclude(repo, vid)

    def html_report(self, repo: Path) -> None:
        """``report --format html`` at 1,000 versions vs a warm status; one self-contained file."""
        out = self.tmp / "report.html"
        self.cli(repo, "status", "--json")
        warm = [self.cli(repo, "status", "--json") for _ in range(self.rounds)]
        html = [
            self.cli(repo, "report", "--format", "html", "--out", str(out))
            for _ in range(self.rounds)
        ]
        text = out.read_text()
        # Self-contained: nothing fetched when it is opened (no external script, style,
        # image or font); plots are inline SVG or data: URIs.
        external = re.findall(r"""(?:src|href)\s*=\s*["'](?!data:|#)([^"']+)""", text)
        self.compare(
            "html_report_vs_status",
            f"report --format html at {WRITE_STEPS:,} versions ({len(text) // 1024} KB, "
            f"{'self-contained' if not external else 'NOT self-contained: ' + external[0]}) "
            "vs warm status",
            html,
            warm,
            "warm status",
            REPORT_TARGET,
        )

    def verify(self) -> None:
        """bench/verify.py (verify's own benchmark), its figures relayed with their target."""
        argv = [sys.executable, str(Path(__file__).with_name("verify.py"))]
        argv += ["--quick", "--rounds", "2"] if self.quick else ["--rounds", str(self.rounds)]
        proc = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=True)
        for line in proc.stdout.splitlines():
            if "ratio" not in line:
                continue
            match = re.search(r"ratio ([0-9.]+|inf)", line)
            if line.startswith("verify incremental") and match:
                ratio = float(match.group(1))
                line += verdict(ratio, VERIFY_TARGET)
                self.target(f"verify_incremental_{len(self.targets)}", ratio, line)
            print(line, flush=True)

    def hooks(self) -> None:
        from bench import hooks

        found: dict[str, float] = {}

        def keep(name: str, ratio: float) -> None:
            found[name] = ratio

        hooks.compare_with_pre_commit(self.rounds * 2, keep)
        self.target(
            "hooks_entry_vs_budget",
            found["hooks_entry_vs_budget"],
            f"ledger hooks, commit adding a ledger entry: ratio "
            f"{found['hooks_entry_vs_budget']:.3f} of the 100 ms budget"
            f"{verdict(found['hooks_entry_vs_budget'], 1.0)}",
        )
        self.target(
            "hooks_vs_pre_commit",
            found["hooks_vs_pre_commit"],
            f"ledger hooks, commit with no ledger work, vs the pre-commit framework's no-op hook: "
            f"ratio {found['hooks_vs_pre_commit']:.3f}"
            f"{verdict(found['hooks_vs_pre_commit'], hooks.NOOP_TARGET)}",
        )

    def trace(self) -> None:
        """A batch's trace events (336) in one ``trace emit --events`` vs one git commit."""
        repo = self.tmp / "trace"
        repo.mkdir()
        run = {"cwd": repo, "env": self.env, "check": True, "capture_output": True}
        subprocess.run(["git", "init", "-q"], **run)  # type: ignore[call-overload]
        self.cli(repo, "init", "--preset", "batches")
        weights = self.tmp / "weights.json"
        weights.write_text(json.dumps({"style": {"tone": "plain"}}))
        self.cli(repo, "weights", "init", str(weights), "--run-id", "bench")
        events = self.tmp / "events.jsonl"
        events.write_text(
            "".join(
                json.dumps({"event": "topic-step", "fields": {"topic": f"t{i % 8}", "i": i}}) + "\n"
                for i in range(TRACE_EVENTS)
            )
        )
        ours, git_times = [], []
        for i in range(self.rounds):
            plain = repo / "notes" / f"plain-{i}.json"
            plain.parent.mkdir(exist_ok=True)
            plain.write_text(json.dumps({"i": i}))
            git_times.append(git_add_commit(repo, plain, self.env))
            ours.append(self.cli(repo, "trace", "emit", "--events", str(events)))
        self.compare(
            "trace_events_vs_git",
            f"{TRACE_EVENTS} trace events in one call vs one git add && git commit",
            ours,
            git_times,
            "git",
            TRACE_TARGET,
        )

    def concurrency(self) -> None:
        from bench import concurrency

        concurrency.run(8, 10 if self.quick else 100, self.env, self.tmp)


SECTIONS = {
    "writes": Bench.writes,
    "dvc": Bench.dvc_figures,
    "hooks": Bench.hooks,
    "scale": Bench.scale,
    "verify": Bench.verify,
    "trace": Bench.trace,
    "concurrency": Bench.concurrency,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds (under 3 minutes)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="runs per figure (median of these)"
    )
    parser.add_argument("--only", nargs="*", default=None, choices=list(SECTIONS))
    parser.add_argument("--no-dvc", action="store_true", help="skip the DVC comparisons")
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the ratios to this file"
    )
    args = parser.parse_args()
    bench = Bench(args.quick, args.rounds or (3 if args.quick else 5), not args.no_dvc)
    started = time.perf_counter()
    plan = args.only or list(SECTIONS)
    try:
        for name in plan:
            if name == "dvc" and not bench.dvc:
                continue
            print(f"## {name}", flush=True)
            SECTIONS[name](bench)
    finally:
        shutil.rmtree(bench.tmp, ignore_errors=True)
    if bench.targets:
        print("## targets")
        for line in bench.targets:
            print(line)
        missed = sum(1 for line in bench.targets if line.endswith("missed"))
        print(f"# {len(bench.targets) - missed} of {len(bench.targets)} targets met")
    print(f"# done in {time.perf_counter() - started:.0f} s (nproc {os.cpu_count()})")
    if args.json:
        args.json.write_text(json.dumps(bench.ratios, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
