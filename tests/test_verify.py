"""verify's legitimate undos, its limits (shallow clones), recovery with ``void``, and the
inputs that reach a commit object (identities, one-line fields)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Repo, Templates, fingerprint, git, register
from tests.test_tamper import SEED1, V1, hand_commit, honest_loop, hooked_commit

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def loop(templates: Templates, tmp_path: Path) -> Repo:
    """An honest loop: V1 registered, its code committed through the hooks, 3 results."""
    return templates.copy("honest-loop", tmp_path, honest_loop)


def notes(repo: Repo) -> list[dict[str, str]]:
    result = repo.run("verify", "--json")
    assert result.code == 0, result.out + result.err
    data = result.json()
    assert data["ok"] and data["findings"] == []
    notes: list[dict[str, str]] = data["notes"]
    return notes


def test_whole_revert_of_a_record_is_accepted_and_shown_as_withdrawn(loop: Repo) -> None:
    record = loop.git("log", "-1", "--format=%H", "--", SEED1).strip()
    loop.git("revert", "--no-edit", record)
    withdrawn = [n for n in notes(loop) if n["kind"] == "withdrawn"]
    assert withdrawn and withdrawn[0]["path"] == SEED1
    assert "withdrawn" in loop.run("verify").out
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "more", "--override", "n=2")


def test_withdrawn_shows_with_its_reason_in_log_show_and_reports_forever(loop: Repo) -> None:
    record = loop.git("log", "-1", "--format=%H", "--", SEED1).strip()
    reason = "the GPU was throttled during this seed"
    loop.git("revert", "--no-edit", record)
    loop.git(
        "commit",
        "-q",
        "--amend",
        "--no-verify",
        "-m",
        f"Revert seed 1\n\n{reason}\n\nThis reverts commit {record}.",
    )
    shown = f"withdrawn: {reason}"
    rows = loop.run("log", "--json").json()
    assert rows[0]["withdrawn"] == reason and rows[0]["reverts"] == record
    assert shown in loop.run("log").out
    assert shown in loop.run("show", "V1").out
    assert any(shown in n["text"] for n in loop.run("show", "V1", "--json").json()["history"])
    # ... and still, later: the loop goes on, V1 concludes, V2 is registered.
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "more", "--override", "n=2")
    assert register(loop).code == 0
    for fmt in ("md", "html", "json"):
        report = loop.run("report", "--format", fmt)
        assert report.code == 0, report.err
        assert shown in report.out and SEED1 in report.out, fmt
    assert shown in loop.run("show", "V1").out
    assert any(r.get("withdrawn") == reason for r in loop.run("log", "--json").json())


def test_record_replace_is_accepted_and_shown(loop: Repo, tmp_path: Path) -> None:
    new = tmp_path / "again.json"
    new.write_text(json.dumps({"score": 10.5}))
    loop.ok("record", "V1", "--gate", "recent", "--seed", "1", str(new), "--replace", "rerun")
    replaced = [n for n in notes(loop) if n["kind"] == "replaced"]
    assert replaced and "rerun" in replaced[0]["text"]
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")


def test_config_set_is_a_transition_for_later_versions_only(loop: Repo) -> None:
    before = (loop.path / "ledger.toml").read_text()
    loop.ok("config", "set", "gates.recent.noise_floor", "0.25", "--reason", "measured noise")
    text = (loop.path / "ledger.toml").read_text()
    assert "noise_floor = 0.25" in text and text.count("\n") == before.count("\n")
    assert loop.trailers()["Ledger-Transition"] == "config"
    assert [n for n in notes(loop) if n["kind"] == "config"]
    assert loop.git("status", "--porcelain") == ""
    # V1 was registered under noise_floor 1.0: its verdict still uses it.
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")
    front = (loop.path / V1).read_text()
    assert "noise_floor" not in front or "0.25" not in front


def test_config_set_refuses_bad_values_and_newlines(loop: Repo) -> None:
    before = fingerprint(loop.path)
    for args in (
        ["gates.recent.direction", "sideways", "--reason", "r"],
        ["gates.recent.noise_floor", "-1", "--reason", "r"],
        ["gates.recent.noise_floor", "0.5", "--reason", "two\nlines"],
        ["nokey", "1", "--reason", "r"],
    ):
        result = loop.run("config", "set", *args)
        assert result.code == 2, (args, result.err)
        assert fingerprint(loop.path) == before


def test_ledger_toml_only_commit_after_hooks_install_is_a_config_transition(repo: Repo) -> None:
    repo.ok("hooks", "install")
    text = (repo.path / "ledger.toml").read_text().replace("noise_floor = 1.0", "noise_floor = 2.0")
    repo.write("ledger.toml", text)
    done = hooked_commit(
        repo, "chore(config): the real noise floor\n\nLedger-Reason: measured it", "ledger.toml"
    )
    assert done.returncode == 0, done.stderr
    assert repo.trailers()["Ledger-Transition"] == "config"
    assert [n for n in notes(repo) if n["kind"] == "config"]
    assert register(repo, "V1").code == 0


def test_ledger_toml_with_code_is_refused_by_the_hooks(loop: Repo) -> None:
    text = (loop.path / "ledger.toml").read_text().replace("sigma_k = 2.0", "sigma_k = 1.0")
    loop.write("ledger.toml", text)
    loop.write("src/model.py", "x = 5\n")
    done = hooked_commit(loop, "feat(model): V1 — more", "ledger.toml", "src/model.py")
    assert done.returncode == 1 and "config-frozen" in done.stderr


@pytest.mark.parametrize(
    "path", ["docs/guide.md", "NOTES.md", ".github/workflows/ci.yml", ".gitignore"]
)
def test_free_paths_need_no_open_version(repo: Repo, path: str) -> None:
    repo.ok("hooks", "install")
    repo.write(path, "text\n")
    done = hooked_commit(repo, "docs: a note", path)
    assert done.returncode == 0, done.stderr
    assert repo.run("verify").code == 0


def test_code_needs_an_open_version_unless_free_paths_say_otherwise(repo: Repo) -> None:
    repo.ok("hooks", "install")
    repo.write("src/x.py", "x = 1\n")
    assert hooked_commit(repo, "feat: x", "src/x.py").returncode == 1
    repo.git("restore", "--staged", "src/x.py")
    text = (repo.path / "ledger.toml").read_text() + '\n[hooks]\nfree_paths = ["src/**"]\n'
    repo.write("ledger.toml", text)
    assert hooked_commit(repo, "chore(config): src is free", "ledger.toml").returncode == 0
    assert hooked_commit(repo, "feat: x", "src/x.py").returncode == 0


def test_void_closes_a_tampered_version_and_its_id_is_never_reused(loop: Repo) -> None:
    data = json.loads((loop.path / SEED1).read_text())
    data["metrics"]["score"] = 99.0
    (loop.path / SEED1).write_text(json.dumps(data))
    hand_commit(loop, "docs: tidy", SEED1)
    assert loop.run("verify").code == 1
    assert loop.run("void", "V1", "--reason", "a result was edited by hand").code == 0
    shown = notes(loop)
    assert any(n["kind"] == "void" and n["step"] == "V1" for n in shown)
    status = loop.run("status", "--json").json()
    assert any(v["id"] == "V1" and v["state"] == "void" for v in status["recent"])
    assert (
        loop.run("record", "V1", "--gate", "recent", "--seed", "9", str(loop.path / SEED1)).code
        == 1
    )
    again = register(loop, "V1")
    assert again.code == 2
    assert register(loop).code == 0
    assert (loop.path / "training_log/V2.md").exists()


def test_reverted_registration_id_is_refused_and_skipped(loop: Repo) -> None:
    reg = loop.git("log", "--format=%H", "--", V1).split()[-1]
    loop.git("revert", "--no-edit", reg)
    assert loop.run("verify").code == 0  # a whole revert of a registration is legitimate
    result = register(loop, "V1")
    assert result.code == 1 and "never reused" in result.err
    assert register(loop).code == 0
    assert (loop.path / "training_log/V2.md").exists()


def test_status_lists_findings_as_problems(loop: Repo) -> None:
    (loop.path / SEED1).unlink()
    hand_commit(loop, "chore: drop", SEED1)
    status = loop.run("status")
    assert "[append-only-results]" in status.out
    assert loop.run("status", "--json").json()["history"][0]["rule"] == "append-only-results"


def test_shallow_clone_exits_2_with_the_fix(loop: Repo, tmp_path: Path) -> None:
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{loop.path}", str(clone)], check=True
    )
    result = Repo(clone).run("verify")
    assert result.code == 2 and "git fetch --unshallow" in result.err
    assert Repo(clone).run("conclude", "V1", "--verdict", "refuted", "--next", "x").code == 2


def test_verify_is_incremental_and_range_limited(loop: Repo) -> None:
    first = loop.head()
    cache = loop.path / ".git/ledger/verify-cache.json"
    loop.ok("verify")
    assert first in json.loads(cache.read_text())["data"]["tips"]
    (loop.path / SEED1).unlink()
    bad = hand_commit(loop, "chore: drop", SEED1)
    assert loop.run("verify").code == 1
    assert loop.run("verify", f"{first}..{bad}").code == 1
    assert loop.run("verify", first).code == 0


def test_verify_passes_on_this_repositorys_own_history(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "own"
    proc = subprocess.run(
        ["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], capture_output=True, text=True
    )
    if proc.returncode != 0 or (clone / ".git/shallow").exists():
        pytest.skip("the checkout's history is not complete")

    def verify() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ledger", "verify"],
            cwd=clone,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )

    # Issue 30: a plain clone has no witnesses; verify names the fetch, which a clone
    # runs once (as the CI examples do), and then verifies.
    result = verify()
    if result.returncode == 2 and "witnesses" in result.stderr:
        spec = "+refs/ledger/witness/*:refs/ledger/remotes/origin/witness/*"
        git(clone, "config", "--add", "remote.origin.fetch", spec)
        git(clone, "fetch", "-q", "origin")
        result = verify()
    assert result.returncode == 0, result.stdout + result.stderr


# --- inputs that reach a commit object ------------------------------------------------


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("GIT_AUTHOR_NAME", "Eve\nLedger-Transition: conclude"),
        ("GIT_AUTHOR_EMAIL", "eve@example.com>"),
        ("GIT_COMMITTER_NAME", "<Eve"),
    ],
)
def test_identity_with_newline_or_angle_brackets_is_refused(
    repo: Repo, monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    before = fingerprint(repo.path)
    monkeypatch.setenv(var, value)
    result = register(repo, "V1")
    assert result.code == 2, result.err
    assert fingerprint(repo.path) == before
    monkeypatch.delenv(var)
    assert subprocess.run(["git", "fsck"], cwd=repo.path, capture_output=True).returncode == 0


@pytest.mark.parametrize(
    "args",
    [
        ["conclude", "V1", "--verdict", "refuted", "--next", "x", "--override", "a\nLedger-X: y"],
        ["void", "V1", "--reason", "a\nb"],
        ["record", "V1", "--gate", "recent", "--seed", "1", "RESULT", "--replace", "a\nb"],
    ],
)
def test_one_line_fields_refuse_newlines(loop: Repo, args: list[str], tmp_path: Path) -> None:
    new = tmp_path / "r.json"
    new.write_text(json.dumps({"score": 1.0}))
    args = [str(new) if a == "RESULT" else a for a in args]
    before = fingerprint(loop.path)
    result = loop.run(*args)
    assert result.code == 2, result.out + result.err
    assert fingerprint(loop.path) == before


def test_subsystem_with_newline_is_refused(repo: Repo) -> None:
    before = fingerprint(repo.path)
    assert register(repo, "V1", extra=("--subsystem", "a\nb")).code == 2
    assert fingerprint(repo.path) == before


def test_conclude_with_no_results_is_refused(repo: Repo) -> None:
    assert register(repo, "V1").code == 0
    before = fingerprint(repo.path)
    result = repo.run("conclude", "V1", "--verdict", "refuted", "--next", "x")
    assert result.code == 1 and "no results" in result.err
    assert fingerprint(repo.path) == before


def test_register_refused_with_uncommitted_or_untracked_entries(repo: Repo) -> None:
    repo.write("training_log/notes.md", "x\n")
    result = register(repo, "V1")
    assert result.code == 1 and "notes.md" in result.err and "doctor --fix" in result.err
    (repo.path / "training_log/notes.md").unlink()
    readme = repo.path / "training_log/README.md"
    readme.write_text(readme.read_text() + "\nedit\n")
    assert register(repo, "V1").code == 1


def test_register_cites_must_name_a_committed_reflection(repo: Repo) -> None:
    before = fingerprint(repo.path)
    result = register(repo, "V1", extra=("--cites", "REFLECTION_V9"))
    assert result.code == 2 and "no committed reflection" in result.err
    assert fingerprint(repo.path) == before


def test_doctor_fix_never_autosaves_an_edit_of_a_frozen_part(loop: Repo) -> None:
    text = (loop.path / V1).read_text().replace("A bet", "A safer bet")
    (loop.path / V1).write_text(text)
    head = loop.head()
    result = loop.run("doctor", "--fix")
    assert loop.head() == head
    assert "frozen" in result.out + result.err and f"git restore {V1}" in result.out + result.err
    loop.git("restore", V1)
    loop.ok("conclude", "V1", "--verdict", "inconclusive", "--next", "x", "--override", "t")


def test_default_free_paths_match_docs_and_tooling() -> None:
    from ledger.core.commitrules import glob_match, is_free
    from ledger.core.repobase import DEFAULT_FREE_PATHS

    assert glob_match("docs/a/b.md", "docs/**") and glob_match("README.md", "*.md")
    assert glob_match("sub/dir/NOTES.md", "*.md") and not glob_match("src/x.py", "*.md")
    assert glob_match(".github/workflows/ci.yml", ".github/**")
    assert not glob_match("src/docs/x.py", "docs/**") and glob_match("LICENSE.txt", "LICENSE*")
    assert not is_free("src/model.py", DEFAULT_FREE_PATHS)


def test_incremental_verify_agrees_with_a_full_replay_and_stays_light(loop: Repo) -> None:
    """After new commits, verify builds on its cached state through git alone (no pygit2,
    no pydantic unless a new entry must be parsed); what it says is what a full replay
    from the root says."""
    from tests.test_tamper import SCENARIOS

    probe = (
        "import sys\nfrom ledger.cli.app import main\ntry:\n    main(['verify', '--json'])\n"
        "except SystemExit:\n    pass\n"
        "sys.stderr.write(repr(sorted(m for m in ('pygit2', 'pydantic') if m in sys.modules)))\n"
    )
    state = loop.path / ".git/ledger"
    for name in ("code_commit_without_trailer", "result_edited", "noise_floor_lowered_with_code"):
        loop.run("verify")  # the cached state the next call builds on
        SCENARIOS[name](loop)
        light = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=loop.path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        if name != "result_edited":  # a new entry's blob is parsed (pydantic) once
            assert light.stderr.strip().endswith("[]"), (name, light.stderr)
        for cached in ("verify-cache.json", "verify-report.json"):
            (state / cached).unlink()
        full = loop.run("verify", "--json")
        assert full.code == 1 and json.loads(light.stdout) == full.json(), name


def _light_and_full(repo: Repo) -> tuple[Any, Any]:
    """verify --json built on the caches as they are, then a full replay from the root."""
    light = repo.run("verify", "--json")
    for cached in ("verify-cache.json", "verify-report.json"):
        (repo.path / ".git/ledger" / cached).unlink(missing_ok=True)
    full = repo.run("verify", "--json")
    assert light.code in (0, 1) and full.code in (0, 1), light.err + full.err
    return light.json(), full.json()


def _amend_with_code(repo: Repo) -> None:
    """The configuration transition amended into a commit that also changes code."""
    repo.write("src/model.py", "x = 9\n")
    repo.git("add", "src/model.py")
    repo.git(
        "-c", "core.hooksPath=/dev/null", "commit", "-q", "--amend", "--no-edit", "--no-verify"
    )


def _reset_and_recommit(repo: Repo) -> None:
    """The transition dropped (a force-push's view) and the same settings committed with code."""
    repo.git("reset", "-q", "--hard", "HEAD~1")
    edit_text_in(repo, "ledger.toml", "noise_floor = 1.0", "noise_floor = 0.25")
    repo.write("src/model.py", "x = 9\n")
    hand_commit(repo, "feat(model): V1 — tune\n\nLedger-Step: V1", "ledger.toml", "src/model.py")


def _rebase_onto_a_code_commit(repo: Repo) -> None:
    """The transition replayed on top of a new code commit (a rebase): a new commit id
    for the same configuration blob, now after a commit that breaks a rule."""
    repo.git("branch", "-f", "moved", "HEAD")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.write("src/model.py", "x = 9\n")
    hand_commit(repo, "feat: for another\n\nLedger-Step: V9", "src/model.py")
    repo.git("-c", "core.hooksPath=/dev/null", "cherry-pick", "moved")


def edit_text_in(repo: Repo, path: str, old: str, new: str) -> None:
    text = (repo.path / path).read_text()
    assert old in text
    (repo.path / path).write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "rewrite",
    [_amend_with_code, _reset_and_recommit, _rebase_onto_a_code_commit],
    ids=["amend", "reset-and-recommit", "rebase"],
)
def test_cached_configurations_never_hide_a_rewrite(loop: Repo, rewrite: Any) -> None:
    """verify keeps the verdict-affecting tables of recent configuration blobs in its
    cache (keyed by blob id: by content); history rewritten after that cache was written
    is judged as a full replay from the root judges it, findings included."""
    loop.ok("config", "set", "gates.recent.noise_floor", "0.25", "--reason", "measured noise")
    loop.run("status", "--json")  # status verifies and caches, as in daily use
    assert loop.run("verify").code == 0
    cache = json.loads((loop.path / ".git/ledger/verify-cache.json").read_text())
    assert len(cache["data"]["cfg"]) == 2  # the configuration before and after the transition
    rewrite(loop)
    light, full = _light_and_full(loop)
    assert light == full
    assert not full["ok"] and full["findings"], full
    status = loop.run("status", "--json").json()
    assert [f["rule"] for f in status["history"]] == [f["rule"] for f in full["findings"]]


def test_light_history_reads_loose_and_packed_blobs_as_git_does(loop: Repo) -> None:
    from ledger.core.errors import BadInput
    from ledger.hooks.history import GitHistory

    common = loop.path / ".git"
    blob = loop.git("rev-parse", "HEAD:ledger.toml").strip()
    tree = loop.git("rev-parse", "HEAD^{tree}").strip()
    expected = (loop.path / "ledger.toml").read_bytes()
    for packed in (False, True):
        if packed:
            loop.git("gc", "-q")
        loose = (common / "objects" / blob[:2] / blob[2:]).exists()
        assert loose is not packed
        history = GitHistory(loop.path, common, common, loop.head())
        try:
            assert history.read_blob(blob) == expected
            with pytest.raises(BadInput):
                history.read_blob(tree)  # an object that is not a blob is no blob
        finally:
            history.close()


def test_verify_reads_latin1_messages_and_file_names_that_are_not_utf8(loop: Repo) -> None:
    """History is read as bytes, field by field: a Latin-1 commit message and file names
    that are not UTF-8 (in the code and in the ledger dir) are history like any other."""
    names = [os.fsdecode(b"docs/caf\xe9.md"), os.fsdecode(b"training_log/caf\xe9-notes.txt")]
    for name in names:
        (loop.path / name).parent.mkdir(parents=True, exist_ok=True)
        (loop.path / name).write_bytes(b"notes\n")
    message = loop.path.parent / "message.txt"
    message.write_bytes(b"docs: caf\xe9 notes\n")
    loop.git("add", "-A", "--", "docs", "training_log")
    loop.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "--no-verify", "-F", str(message))
    for cached in ("verify-cache.json", "verify-report.json"):
        (loop.path / ".git/ledger" / cached).unlink(missing_ok=True)
    done = loop.run("verify")
    assert done.code == 0, done.out + done.err


def test_verify_at_hand_answers_as_the_app_does_without_click(loop: Repo) -> None:
    """``git ledger verify [--json]`` answers from the saved report, or the light replay
    of the commits since it, before click is imported (ledger.__main__); what it prints
    and its exit code are the app's, clean or with a finding."""
    from tests.test_tamper import SCENARIOS

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    app = (
        "import sys\nfrom ledger.cli.app import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit as exc:\n    sys.exit(exc.code)\n"
    )

    def both(*args: str) -> tuple[tuple[int, str], tuple[int, str]]:
        fast = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ledger", *args],
            cwd=loop.path,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert " click" not in fast.stderr, "the app was imported"
        full = subprocess.run(
            [sys.executable, "-c", app, *args],
            cwd=loop.path,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        return (fast.returncode, fast.stdout), (full.returncode, full.stdout)

    loop.ok("verify")  # the saved report of HEAD
    for args in (("verify",), ("verify", "--json")):
        fast, full = both(*args)
        assert fast == full and fast[0] == 0, (fast, full)
    SCENARIOS["result_edited"](loop)
    fast, full = both("verify", "--json")  # the light replay of the new commit
    assert fast == full and fast[0] == 1 and json.loads(fast[1])["findings"], (fast, full)
    fast, full = both("verify")  # its saved report
    assert fast == full and fast[0] == 1 and "append-only" in fast[1], (fast, full)
