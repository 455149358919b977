"""Generate a realistic ledger of N steps fast, for the benchmarks.

History is written with ``git fast-import`` (one commit per transition, as the
CLI would make them: a registration, one per result, a conclusion, each with
its trailers), and the entry files are produced by git-ledger's own models, so
what the benchmarks read is exactly what the CLI writes.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

from ledger.core.model.documents import Document, dump_json
from ledger.core.model.entries import Conclusion, GateStat, Provenance, ResultFile, VersionFront
from ledger.core.resources import read_resource, render

CONFIG = """\
[ledger]
dir = "training_log"

[gates.recent]
metric = "score"
noise_floor = 1.0
[gates.recent.metrics]
score = "$.score"
loss = { path = "$.loss", direction = "lower" }

# The benchmarks add many placeholder versions on top; they measure speed, not
# discipline, so the reflection triggers are set out of reach.
[triggers]
consecutive_refutations = 100000
stagnation_versions = 100000
drift_versions = 100000
"""


def _version_files(
    i: int, seeds: int, rng: random.Random
) -> tuple[str, list[tuple[str, bytes]], str]:
    vid = f"V{i}"
    front = VersionFront(
        id=vid,
        parent=f"V{i - 1}" if i > 1 else None,
        bet=f"Bet {i} lifts the score",
        gate="recent",
        files=["src/model.py"],
        falsifier="no gain beyond noise",
    )
    body = render(
        read_resource("templates", "version.md"),
        id=vid,
        bet=front.bet,
        gate="recent",
        falsifier=front.falsifier,
        files="`src/model.py`",
        noop_gates="—",
    )
    registered = Document(
        front=front.model_dump(mode="json", exclude={"conclusion"}), body=body
    ).render()
    results = []
    for seed in range(1, seeds + 1):
        score = 100 + i * 1.5 + rng.gauss(0, 1)
        entry = ResultFile(
            version=vid,
            gate="recent",
            seed=str(seed),
            metrics={"score": round(score, 6), "loss": round(1 / score, 6)},
            provenance=Provenance(
                source_sha256="0" * 64,
                source_name=f"seed-{seed}.json",
                code_commit="1" * 40,
                dirty=False,
            ),
        )
        results.append(
            (
                f"training_log/results/{vid}/recent/seed-{seed}.json",
                dump_json(entry.model_dump(mode="json", exclude_none=True)).encode(),
            )
        )
    # Every version a confirmed improvement: a healthy loop fires no trigger, so
    # the benchmarks can keep registering on top of it.
    verdict = "confirmed"
    stat = GateStat(
        gate="recent",
        metric="score",
        direction="higher",
        n=seeds,
        n_eff=seeds,
        mean=100.0 + i * 1.5,
        baseline_version=f"V{i - 1}" if i > 1 else None,
        delta=1.5,
        se=0.5,
        threshold=1.0,
        sigma=1.0,
        outcome="improved" if i > 1 else "establishes the baseline",
    )
    conclusion = Conclusion(verdict=verdict, next="keep going", evidence="generated", gates=[stat])
    concluded = Document(
        front={
            **front.model_dump(mode="json", exclude={"conclusion"}),
            "conclusion": conclusion.model_dump(mode="json", exclude_none=True),
        },
        body=body,
    ).render()
    return registered, results, concluded


def generate(path: Path, steps: int, seeds: int = 5, env: dict[str, str] | None = None) -> None:
    """A repository at ``path`` whose ledger has ``steps`` concluded versions."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    rng = random.Random(steps)
    out: list[bytes] = []
    mark = 0
    when = 1767225600

    def commit(message: str, files: list[tuple[str, bytes]]) -> None:
        nonlocal mark, when
        mark += 1
        when += 60
        data = message.encode()
        out.append(b"commit refs/heads/main\n")
        out.append(f"mark :{mark}\n".encode())
        out.append(f"committer bench <bench@example.com> {when} +0000\n".encode())
        out.append(f"data {len(data)}\n".encode() + data + b"\n")
        if mark > 1:
            out.append(f"from :{mark - 1}\n".encode())
        for name, blob in files:
            out.append(f"M 100644 inline {name}\n".encode())
            out.append(f"data {len(blob)}\n".encode() + blob + b"\n")

    readme = read_resource("templates", "ledger-README.md").encode()
    commit(
        "chore(ledger): initialise\n\nLedger-Transition: init\nLedger-Step: init\n",
        [("ledger.toml", CONFIG.encode()), ("training_log/README.md", readme)],
    )
    for i in range(1, steps + 1):
        registered, results, concluded = _version_files(i, seeds, rng)
        commit(
            f"docs(recent): V{i} register\n\nLedger-Transition: register\nLedger-Step: V{i}\n",
            [(f"training_log/V{i}.md", registered.encode())],
        )
        for name, blob in results:
            commit(
                f"docs(ledger): V{i} result\n\nLedger-Transition: record\nLedger-Step: V{i}\n",
                [(name, blob)],
            )
        commit(
            f"docs(recent): V{i} log entry\n\nLedger-Transition: conclude\nLedger-Step: V{i}\n",
            [(f"training_log/V{i}.md", concluded.encode())],
        )
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=path, input=b"".join(out), check=True, env=env
    )
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=path, check=True, env=env)
