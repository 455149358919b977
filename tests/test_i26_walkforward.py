"""Issue 26: walk-forward σ is floored by the gate's noise_floor like the seeds mode,
and `run --windows` carries window dates (inline, or from a manifest named in
ledger.toml), so effective N is computed from dates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers import Repo, register

WINDOWS = [("w1", "2024-01-01", "2024-01-31"), ("w2", "2024-02-01", "2024-02-29"),
           ("w3", "2024-03-01", "2024-03-31"), ("w4", "2024-04-01", "2024-04-30"),
           ("w5", "2024-05-01", "2024-05-31")]  # fmt: skip


def _config(repo: Repo, extra: str = "", command: str = "") -> None:
    repo.write(
        "ledger.toml",
        '[ledger]\ndir = "training_log"\n\n[gates.wf]\nmetric = "pnl"\nmode = "walk-forward"\n'
        f'noise_floor = 200.0\n{command}{extra}[gates.wf.metrics]\npnl = "$.pnl"\n',
    )
    repo.commit_all("chore: walk-forward gate")
    repo.ok("init")


def _record(repo: Repo, vid: str, base: float) -> None:
    for i, (window, start, end) in enumerate(WINDOWS):
        path = repo.path.parent / f"{vid}-{window}.json"
        path.write_text(json.dumps({"pnl": base + 0.01 * i}))
        repo.ok("record", vid, "--gate", "wf", "--window", window,
                "--window-start", start, "--window-end", end, str(path))  # fmt: skip


def test_plus_five_over_five_windows_with_a_floor_of_200_is_not_confirmed(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    _config(repo)
    register(repo, "V1", gate="wf")
    _record(repo, "V1", 1000.0)
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "go on")
    register(repo, "V2", gate="wf")
    _record(repo, "V2", 1005.0)
    dry = repo.ok("conclude", "V2", "--dry-run", "--json").json()
    assert "confirmed" not in dry["allowed"]
    target = dry["gates"][0]
    assert target["outcome"] == "within noise" and target["sigma"] == 200.0
    assert "configured noise_floor 200" in target["sigma_source"]
    refused = repo.run("conclude", "V2", "--verdict", "confirmed", "--next", "x")
    assert refused.code == 1 and "within noise" in refused.err


EVAL = """\
import json, sys
window, start, end, out = sys.argv[1:5]
with open(out, "w") as handle:
    json.dump({"pnl": 100.0, "start": start, "end": end}, handle)
"""


def _run_config(repo: Repo, extra: str = "") -> None:
    script = repo.path.parent / "wf_eval.py"
    script.write_text(EVAL)
    argv = [sys.executable, str(script), "{window}", "{window_start}", "{window_end}", "{out}"]
    _config(repo, extra, f"command = {json.dumps(argv)}\n")


def _stored(repo: Repo, vid: str) -> dict[str, tuple[str, str]]:
    out = {}
    for path in sorted((repo.path / "training_log" / "results" / vid / "wf").glob("*.json")):
        data = json.loads(path.read_text())
        out[data["window"]] = (data.get("window_start"), data.get("window_end"))
    return out


def test_run_windows_takes_ids_with_dates_and_effective_n_comes_from_them(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    _run_config(repo)
    register(repo, "V1", gate="wf")
    # Three 60-day windows, each overlapping the next by 30 days: n_eff < 3.
    repo.ok("run", "V1", "--gate", "wf", "--windows",
            "a=2024-01-01..2024-03-01,b=2024-01-31..2024-03-31,c=2024-03-01..2024-04-30")  # fmt: skip
    assert _stored(repo, "V1") == {
        "a": ("2024-01-01", "2024-03-01"),
        "b": ("2024-01-31", "2024-03-31"),
        "c": ("2024-03-01", "2024-04-30"),
    }
    stat = repo.ok("conclude", "V1", "--dry-run", "--json").json()["gates"][0]
    assert stat["n"] == 3 and stat["n_eff"] < 3
    bad = repo.run("run", "V1", "--gate", "wf", "--windows", "d=2024-05-01..yesterday")
    assert bad.code == 2 and "window 'd'" in bad.err and "YYYY-MM-DD" in bad.err


def test_run_windows_reads_dates_from_the_manifest_named_in_ledger_toml(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    repo.write("windows.csv", "# id,start,end\n" + "".join(f"{w},{s},{e}\n" for w, s, e in WINDOWS))
    _run_config(repo, 'windows_manifest = "windows.csv"\n')
    register(repo, "V1", gate="wf")
    repo.ok("run", "V1", "--gate", "wf", "--windows", "w1,w2,w3,w4,w5")
    assert _stored(repo, "V1") == {w: (s, e) for w, s, e in WINDOWS}
    stat = repo.ok("conclude", "V1", "--dry-run", "--json").json()["gates"][0]
    assert stat["n_eff"] == 5.0
    missing = repo.run("run", "V1", "--gate", "wf", "--windows", "w9")
    assert missing.code == 2 and "w9" in missing.err and "windows.csv" in missing.err
    assert Path(repo.path / "windows.csv").exists()


def test_next_measures_a_new_version_on_the_parents_windows_with_their_dates(
    bare_repo: Repo,
) -> None:
    repo = bare_repo
    _run_config(repo)
    register(repo, "V1", gate="wf")
    spans = "a=2024-01-01..2024-03-01,b=2024-01-31..2024-03-31"
    repo.ok("run", "V1", "--gate", "wf", "--windows", spans)
    repo.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "go on")
    register(repo, "V2", gate="wf")
    repo.write("src/model.py", "X = 2\n")
    repo.commit_all("feat(model): V2 — the bet", "-m", "Ledger-Step: V2")
    nxt = repo.ok("next", "--json").json()
    assert nxt["action"] == "measure"
    assert nxt["command"].endswith(f"--gate wf --windows {spans}")
    repo.ok(*nxt["command"].split()[2:])
    assert _stored(repo, "V2") == _stored(repo, "V1")
