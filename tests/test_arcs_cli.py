"""The loop's failure arcs replayed through real git and the real CLI.

Each history registers, runs (a scripted evaluation: tests/scripted.py),
concludes and reflects exactly as a user does, with the hooks installed; after
every conclusion ``git ledger triggers --json`` says which triggers are due, and
the test states the version at which each must fire, or stay silent.
tests/test_triggers_replay.py replays the same arcs in memory, step by step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import Repo, ledger, register
from tests.scripted import SPLIT, Plan

SECTIONS = (
    "Eval stability",
    "Variance estimate",
    "Subsystem audit",
    "Revert-and-branch option",
    "Untouched dimensions",
    "Observability-gap audit",
)
FILES = '["src/model.py"]'


class Loop:
    """One loop driven through the CLI; ``fired`` is what ``triggers`` said after each step."""

    def __init__(self, repo: Repo, plan: Plan) -> None:
        self.repo = repo
        self.plan = plan
        self.fired: dict[str, list[tuple[str, str | None]]] = {}
        self.cites: str | None = None

    def register(self, vid: str, gate: str, *extra: str) -> None:
        cites = ("--cites", self.cites) if self.cites else ()
        done = register(self.repo, vid, gate=gate, extra=(*extra, *cites))
        assert done.code == 0, done.err
        self.cites = None

    def version(
        self,
        vid: str,
        gate: str,
        verdict: str,
        *,
        subsystem: str | None = None,
        noop: str | None = None,
        **means: float,
    ) -> list[tuple[str, str | None]]:
        extra = (("--subsystem", subsystem) if subsystem else ()) + (
            ("--noop-gates", noop) if noop else ()
        )
        self.register(vid, gate, *extra)
        # The bet's code, committed through the installed hooks, which give it the version.
        self.repo.write("src/model.py", f"STEP = {vid!r}\n")
        self.repo.commit_all(f"feat(model): {vid} — the bet")
        assert self.repo.trailers()["Ledger-Step"] == vid
        self.plan.means(vid, **means)
        for g in means:
            self.plan.run(vid, g)
        self.repo.ok("conclude", vid, "--verdict", verdict, "--next", "go on")
        return self.triggers(vid)

    def triggers(self, at: str) -> list[tuple[str, str | None]]:
        found = self.repo.run("triggers", "--json")
        assert found.code in (0, 1), found.err
        self.fired[at] = sorted((f["rule"], f["evidence"].get("gate")) for f in found.json())
        return self.fired[at]

    def reflect(self, after: str, exhausted: tuple[str, ...] = ()) -> str:
        self.repo.ok("reflect", after)
        path = self.repo.path / f"training_log/REFLECTION_{after}.md"
        text = path.read_text()
        if exhausted:
            text = text.replace("exhausted: []\n", f"exhausted: {json.dumps(list(exhausted))}\n")
        for title in SECTIONS:
            text = text.replace(
                f"## {title}\n", f"## {title}\n\nWe checked {title.lower()} against the numbers.\n"
            )
        # Issue 26: the tripwire's reflection decides about its target gate.
        text = text.replace(
            "## Target audit\n", "## Target audit\n\nTypical of its regime: keep as target\n"
        )
        path.write_text(text)
        self.repo.ok("reflect", after, "--commit")
        assert self.repo.run("triggers").code == 0
        self.cites = f"REFLECTION_{after}"
        return text


GOODHART, STAGNATION, EVAL_NOISE, SUBSYSTEM, DRIFT = (
    "goodhart-tripwire",
    "stagnation",
    "eval-noise",
    "subsystem-patching-loop",
    "drifted-high-water",
)


def test_the_long_loop_arcs_fire_at_the_versions_its_history_says(bare_repo: Repo) -> None:
    """Streak, stagnation, subsystem loop, drift, eval noise and a confirmation on one gate,
    in one history of nine versions with four reflections between them."""
    repo = bare_repo
    loop = Loop(repo, Plan(repo, ("recent", "crisis")))
    repo.ok("hooks", "install")
    assert loop.version("V1", "recent", "confirmed", recent=10.0, crisis=5000.0) == []
    # Confirmed on recent; crisis moved by 0.1 (within noise): its baseline stays V1.
    assert loop.version("V2", "recent", "confirmed", recent=15.0, crisis=5000.1) == []
    rows = {r["gate"]: r for r in repo.ok("baseline", "--json").json()}
    assert rows["recent"]["version"] == "V2" and rows["crisis"]["version"] == "V1"
    assert rows["crisis"]["latest_version"] == "V2"
    assert abs(rows["crisis"]["delta_vs_parent"] - 0.1) < 0.3
    assert abs(rows["crisis"]["delta_vs_best"] - 0.1) < 0.3
    assert "Δ vs parent" in (repo.path / "training_log/README.md").read_text()
    table = repo.ok("baseline").out
    assert "Δ vs parent" in table and "Δ vs best" in table

    assert loop.version("V3", "recent", "refuted", subsystem="carry", recent=15.0) == []
    # Within noise and labelled inconclusive: it still counts against the gate.
    assert loop.version("V4", "recent", "inconclusive", subsystem="carry", recent=15.05) == []
    assert loop.version("V5", "recent", "refuted", subsystem="carry", recent=15.0) == [
        (GOODHART, "recent"),
        (STAGNATION, None),
        (SUBSYSTEM, "recent"),
    ]
    blocked = register(repo, "V6", extra=("--subsystem", "carry"))
    assert blocked.code == 1 and "reflection-due" in blocked.err
    # The reflection asks for the best version re-measured: allowed while it is pending,
    # kept apart from V2's verdict, and quoted in the reflection's eval-stability section.
    loop.plan.shift("V2", "recent", "1", 1000, 0.25)
    repo.ok("run", "V2", "--gate", "recent", "--seeds", "1", "--remeasure", "is V2 stable")
    assert repo.ok("baseline", "--json").json()[1]["n"] == 4
    text = loop.reflect("V5")
    stability = text.split("## Eval stability", 1)[1].split("##", 1)[0]
    assert "> V2 `recent` 1: re-measured" in stability and "(is V2 stable)" in stability
    assert "eval noise σ" in stability
    assert "> gate `crisis` was not targeted in the last 5 bets" in text
    # The same bet after the reflection (same gate, same subsystem): both counts go on.
    fired = loop.version("V6", "recent", "refuted", subsystem="carry", recent=15.0, crisis=3000.0)
    assert fired == [(GOODHART, "recent"), (SUBSYSTEM, "recent")]
    loop.reflect("V6", exhausted=("carry",))
    # The audit declared carry exhausted: betting on it again needs --force REASON.
    again = register(repo, "V7", extra=("--subsystem", "carry", "--cites", "REFLECTION_V6"))
    assert again.code == 1 and "exhausted" in again.err and "--force" in again.err
    # crisis is 2000 below its best (V1) but unchanged against the parent V6: no eval-noise
    # flag. Its best was set at V1 and six versions have passed, reflections or not: drift.
    fired = loop.version(
        "V7", "recent", "refuted", subsystem="sizing", noop="crisis", recent=15.0, crisis=3000.0
    )
    assert fired == [(DRIFT, "crisis")]
    loop.reflect("V7")
    # crisis moved by +900 against the parent V7 on a gate registered as unaffected.
    fired = loop.version(
        "V8", "recent", "refuted", subsystem="sizing", noop="crisis", recent=15.0, crisis=3900.0
    )
    assert fired == [(DRIFT, "recent"), (EVAL_NOISE, "crisis")]
    noise = repo.run("triggers", "--json").json()
    flag = next(f for f in noise if f["rule"] == EVAL_NOISE)
    assert flag["evidence"]["parent"] == "V7" and abs(flag["evidence"]["delta"] - 900) < 1
    loop.reflect("V8")
    # Three bets on sizing since recent last improved, across two reflections.
    assert loop.version("V9", "recent", "refuted", subsystem="sizing", recent=15.0) == [
        (GOODHART, "recent"),
        (SUBSYSTEM, "recent"),
    ]
    streak = next(f for f in repo.run("triggers", "--json").json() if f["rule"] == GOODHART)
    assert streak["evidence"]["versions"] == ["V7", "V8", "V9"]
    # The reflection pre-fills the numbers behind each trigger and the bets.
    repo.ok("reflect", "V9")
    text = (repo.path / "training_log/REFLECTION_V9.md").read_text()
    assert "> V9: gate `recent`, subsystem sizing, refuted" in text
    assert "> `crisis`: high-water V1; 8 bet(s) since" in text
    assert "[goodhart-tripwire] 3 bets on gate 'recent'" in text
    assert loop.fired["V1"] == loop.fired["V2"] == loop.fired["V3"] == loop.fired["V4"] == []


def _cells(tmp: Path, names: str, gate: str = "recent") -> Path:
    spec = tmp / f"cells-{names}.toml"
    spec.write_text(
        "".join(
            f'[cells.{n}]\nslug = "try-{n.lower()}"\nbet = "Cell {n}"\ngate = "{gate}"\n'
            f'files = {FILES}\nfalsifier = "not above the baseline"\n'
            for n in names
        )
    )
    return spec


def _run_matrix(loop: Loop, mid: str, tmp: Path, means: dict[str, float]) -> dict[str, Any]:
    repo = loop.repo
    cites = ("--cites", loop.cites) if loop.cites else ()
    spec = str(_cells(tmp, "".join(means)))
    made = repo.run("matrix", "new", mid, "--spec", spec, *cites, "--json")
    assert made.code == 0, made.err
    loop.cites = None
    # Every cell touches src/model.py: matrix new warns that they are not independent.
    assert "both touch src/model.py" in made.err
    trees = {c["cell"]: Path(c["worktree"]) for c in made.json()["cells"]}
    for name, mean in means.items():
        cid = f"{mid}.{name}"
        loop.plan.means(cid, recent=mean)
        done = ledger(trees[cid], "run", cid, "--gate", "recent", "--seeds", ",".join(SPLIT))
        assert done.code == 0, done.err + done.out
    status = repo.ok("matrix", "status", mid, "--json").json()
    return {str(c["cell"]).split(".")[1]: c for c in status["cells"]}


def test_matrices_of_three_and_six_cells_count_cell_by_cell_and_hand_on_their_winner(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    loop = Loop(repo, Plan(repo, ("recent",)))
    repo.ok("hooks", "install")
    loop.version("V1", "recent", "confirmed", recent=10.0)
    loop.version("V2", "recent", "refuted", recent=10.0)
    # Three cells, none beyond noise: three bets, as if they had run one after another
    # (issue 26; they used to count as one).
    cells = _run_matrix(loop, "V3", tmp_path, {"A": 10.0, "B": 10.02, "C": 9.98})
    assert all(c["k"] >= 2.5 and not c["pass"] for c in cells.values())
    registration = (repo.path / "training_log/V3-matrix.md").read_text()
    assert "threshold for 3 cells" in registration and "floored at 2.5σ" in registration
    repo.ok("matrix", "conclude", "V3", "--none")
    assert loop.triggers("V3") == [(GOODHART, "recent"), (STAGNATION, None)]
    streak = next(f for f in repo.run("triggers", "--json").json() if f["rule"] == GOODHART)
    assert streak["evidence"]["versions"] == ["V2", "V3.A", "V3.B", "V3.C"]
    loop.reflect("V3.C")
    loop.version("V4", "recent", "refuted", recent=10.0)
    # A matrix with no winner merged nothing: the parent is the code on the branch (V2),
    # never one of its cells.
    assert repo.ok("show", "V4", "--json").json()["registration"]["parent"] == "V2"
    loop.reflect("V4")
    # Six cells: every cell's threshold at least 3σ (the rule beyond 5 cells), never the
    # 1.96σ a per-cell Bonferroni on few cells would fall to. Two cells pass.
    cells = _run_matrix(
        loop, "V5", tmp_path, {"A": 10.0, "B": 20.0, "C": 10.0, "D": 18.0, "E": 10.0, "F": 10.0}
    )
    assert min(c["k"] for c in cells.values()) >= 3.0
    assert [n for n, c in cells.items() if c["pass"]] == ["B", "D"]
    assert "floored at 3σ" in (repo.path / "training_log/V5-matrix.md").read_text()
    done = repo.ok("matrix", "conclude", "V5", "--winner", "B", "--json").json()
    assert done["passing"] == ["B", "D"] and "2×2" in done["suggestion"]
    assert "V5.B + V5.D" in done["suggestion"] or "V5.D + V5.B" in done["suggestion"]
    assert loop.triggers("V5") == []
    # The next version builds on the matrix's winner, not on the last cell concluded.
    loop.register("V6", "recent")
    assert repo.ok("show", "V6", "--json").json()["registration"]["parent"] == "V5.B"


def test_overlapping_walk_forward_windows_are_not_accepted_on_nominal_n(bare_repo: Repo) -> None:
    """Five 90-day windows offset by 15 days (n_eff ≈ 1.37): a mean Δ of +2.2 with a
    spread of ~80 is not 'improved', whatever the nominal n of five says."""
    repo = bare_repo
    repo.write(
        "ledger.toml",
        '[ledger]\ndir = "training_log"\n\n[gates.wf]\nmetric = "pnl"\nmode = "walk-forward"\n'
        'bar = { mean = 0.0 }\n[gates.wf.metrics]\npnl = "$.pnl"\n',
    )
    repo.commit_all("chore: walk-forward gate")
    repo.ok("init")
    inbox = repo.path.parent / "windows"
    inbox.mkdir()

    def windows(vid: str, pnl: list[float]) -> None:
        for i, value in enumerate(pnl):
            start = f"2024-{1 + i // 2:02d}-{1 + 15 * (i % 2):02d}"
            end = f"2024-{4 + i // 2:02d}-{1 + 15 * (i % 2):02d}"
            path = inbox / f"{vid}-{i}.json"
            path.write_text(json.dumps({"pnl": value}))
            repo.ok(
                "record", vid, "--gate", "wf", "--window", f"w{i}", "--window-start", start,
                "--window-end", end, str(path),
            )  # fmt: skip

    assert register(repo, "V1", gate="wf").code == 0
    windows("V1", [100.0, 100.0, 100.0, 100.0, 100.0])
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    assert register(repo, "V2", gate="wf").code == 0
    windows("V2", [190.0, 20.0, 160.0, 50.0, 91.0])  # mean Δ +2.2
    dry = repo.ok("conclude", "V2", "--dry-run", "--json").json()
    target = dry["gates"][0]
    assert target["n"] == 5 and 1.3 < target["n_eff"] < 1.45
    assert "confirmed" not in dry["allowed"]
    refused = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "go on")
    assert refused.code == 1 and "verdict-contradicted" in refused.err
    repo.ok("conclude", "V2", "--verdict", "inconclusive", "--next", "more windows")
    # The MDE preflight uses the same n_eff and degrees of freedom: an effect of 300 is
    # detectable on five nominal windows (MDE ≈ 260) but not on these (≈ 870).
    small = register(repo, "V3", gate="wf", extra=("--effect", "300"))
    assert small.code == 1 and "[below-mde]" in small.err and "n_eff=1.36" in small.err
    mde = float(small.err.split("minimum detectable effect ", 1)[1].split()[0])
    assert 800 < mde < 950
