"""Nothing a repository carries ever runs on a collaborator's machine (issue #12).

A hostile collaborator with push access commits a top-level ``ledger/``
package, a ``ledger.py`` and ``sitecustomize.py``/``usercustomize.py``, each
of which would write a marker file outside the repository if Python ever
imported it. The victim then does what a user does every day: ``git pull``
and ``git merge`` (the ``ledger-views`` merge driver runs on the generated
README), ``git ledger sync``, commits and pushes through the four hooks,
``run --detach``, ``wait`` and ``doctor --fix``. The markers must not exist.

A control test proves the payload is live: with the merge driver defined as
git-ledger 0.1 defined it (``'<python>' -m ledger merge-driver ...``), the
same merge does import the repository's package. ``doctor`` reports that
definition as a security finding and ``doctor --fix`` (or ``sync``, or
``hooks install``) rewrites it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, git, register

PAYLOAD_FILES = (
    "ledger/__init__.py",
    "ledger/__main__.py",
    "ledger.py",
    "sitecustomize.py",
    "usercustomize.py",
)

EVAL = """\
import argparse, json
parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--out", required=True)
args = parser.parse_args()
with open(args.out, "w") as handle:
    json.dump({"score": 10.0 + 0.01 * args.seed}, handle)
"""

CONFIG_GATE = """
[gates.recent]
metric = "score"
direction = "higher"
noise_floor = 1.0
command = [%s, "-I", "eval.py", "--seed", "{seed}", "--out", "{out}"]
[gates.recent.metrics]
score = "$.score"
"""


def gl(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git ledger ARGS`` through git's own dispatch, as a user types it."""
    proc = subprocess.run(
        ["git", "ledger", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if check:
        assert proc.returncode == 0, f"git ledger {' '.join(args)}: {proc.stderr}{proc.stdout}"
    return proc


def plant(clone: Path, marker_dir: Path) -> None:
    """The attacker's payload: each file writes a marker named after itself."""
    for rel in PAYLOAD_FILES:
        path = clone / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = marker_dir / rel.replace("/", "__")
        path.write_text(
            f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
            if not rel.endswith("__init__.py")
            else f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
            "def main():\n    return 0\n"
        )


def touch_readme(clone: Path, line: str) -> None:
    """Change the generated README outside its blocks (a hand edit of prose)."""
    readme = clone / "training_log" / "README.md"
    readme.write_text(readme.read_text() + f"\n{line}\n")


def setup(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """A bare remote, the victim's clone (ledger, gate, hooks) and the attacker's clone."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", str(remote), str(victim))
    git(victim, "config", "pull.rebase", "false")
    (victim / "eval.py").write_text(EVAL)
    (victim / "src").mkdir()
    (victim / "src" / "model.py").write_text("WIDTH = 1\n")
    git(victim, "add", "-A")
    git(victim, "commit", "-q", "-m", "chore: start")
    gl(victim, "init")
    config = victim / "ledger.toml"
    text = config.read_text()
    start = text.index("[gates.recent]")
    end = text.index("[stats]")
    config.write_text(text[:start] + CONFIG_GATE % json.dumps(sys.executable) + text[end:])
    git(victim, "commit", "-q", "-am", "chore(ledger): a real gate", "--trailer",
        "Ledger-Reason: the gate the project measures")  # fmt: skip
    gl(victim, "hooks", "install")
    git(victim, "push", "-q", "origin", "HEAD:main")

    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(attacker))
    markers = tmp_path / "markers"
    markers.mkdir()
    plant(attacker, markers)
    touch_readme(attacker, "Notes from a collaborator.")
    git(attacker, "add", "-A")
    git(attacker, "commit", "-q", "-m", "docs: notes")
    git(attacker, "push", "-q", "origin", "HEAD:main")
    return remote, victim, attacker, markers


def attacker_pushes_again(attacker: Path, line: str) -> None:
    git(attacker, "pull", "-q", "--no-rebase", "origin", "main")
    touch_readme(attacker, line)
    git(attacker, "commit", "-q", "-am", f"docs: {line}")
    git(attacker, "push", "-q", "origin", "HEAD:main")


def no_markers(markers: Path) -> None:
    assert sorted(p.name for p in markers.iterdir()) == []


def test_nothing_from_a_hostile_push_runs_on_the_victim(tmp_path: Path) -> None:
    _remote, victim, attacker, markers = setup(tmp_path)

    # 1. git pull: both sides changed the generated README, so git runs the driver.
    gl(
        victim,
        "register",
        "V1",
        "--bet",
        "wider model",
        "--gate",
        "recent",
        "--files",
        "src/model.py",
        "--falsifier",
        "score not up",
    )
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit", "origin", "main"],
        cwd=victim,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pulled.returncode == 0, pulled.stderr
    readme = (victim / "training_log" / "README.md").read_text()
    assert "V1" in readme and "<<<<<<<" not in readme  # the driver regenerated the view
    assert "Notes from a collaborator." in readme  # and kept the other side's prose
    assert (victim / "ledger" / "__init__.py").exists()  # the payload is in the work tree
    git(victim, "push", "-q", "origin", "HEAD:main")  # pre-push, with the payload checked out
    no_markers(markers)

    # 2. git fetch + git merge, the view changed on both sides again.
    attacker_pushes_again(attacker, "second note")
    (victim / "src" / "model.py").write_text("WIDTH = 2\n")
    git(victim, "commit", "-q", "-am", "feat(model): wider")  # the hooks run here too
    gl(victim, "run", "V1", "--gate", "recent", "--seeds", "1,2")
    git(victim, "fetch", "-q", "origin")
    merged = subprocess.run(
        ["git", "merge", "--no-edit", "origin/main"],
        cwd=victim,
        capture_output=True,
        text=True,
        check=False,
    )
    assert merged.returncode == 0, merged.stderr
    git(victim, "push", "-q", "origin", "HEAD:main")
    no_markers(markers)

    # 3. git ledger sync, with a conflicting change of the view waiting on the remote.
    attacker_pushes_again(attacker, "third note")
    gl(victim, "run", "V1", "--gate", "recent", "--seeds", "3")
    gl(victim, "sync")
    no_markers(markers)

    # 4. The four hooks: a code commit (three stages), a commit with ledger work
    #    (the heavy path), and a push (pre-push).
    (victim / "src" / "model.py").write_text("WIDTH = 3\n")
    git(victim, "commit", "-q", "-am", "feat(model): wider still")
    touch_readme(victim, "victim's own note")
    git(victim, "commit", "-q", "-am", "docs(ledger): note")
    git(victim, "push", "-q", "origin", "HEAD:main")
    no_markers(markers)

    # 5. A detached run and wait.
    started = gl(victim, "run", "V1", "--gate", "recent", "--seeds", "4", "--detach")
    assert started.returncode == 0
    gl(victim, "wait")
    assert (victim / "training_log" / "results" / "V1" / "recent").is_dir()
    no_markers(markers)

    # 6. doctor --fix, and doctor from a subdirectory.
    gl(victim, "doctor", "--fix", check=False)
    gl(victim / "src", "doctor", check=False)
    no_markers(markers)
    # Nothing above ran the payload even though it sat at the top of the work tree.
    assert all((victim / rel).exists() for rel in PAYLOAD_FILES)


def test_old_driver_definition_runs_repository_code_and_doctor_repairs_it(
    tmp_path: Path,
) -> None:
    _remote, victim, attacker, markers = setup(tmp_path)
    old = f"'{sys.executable}' -m ledger merge-driver %O %A %B %P"
    git(victim, "config", "merge.ledger-views.driver", old)

    found = gl(victim, "doctor", check=False)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "security" in found.stdout and "ledger-views" in found.stdout
    assert "doctor --fix" in found.stdout

    # The control: with the 0.1 definition, once the payload is checked out, the
    # next merge of the view imports the repository's ledger/ package (so the
    # payload is live, and the test above could fail).
    def merge_round(vid: str, note: str) -> None:
        gl(
            victim,
            "register",
            vid,
            "--bet",
            f"bet {vid}",
            "--gate",
            "recent",
            "--files",
            "src/model.py",
            "--falsifier",
            "score not up",
            "--force",
            "test",
        )
        subprocess.run(
            ["git", "pull", "--no-rebase", "--no-edit", "origin", "main"],
            cwd=victim,
            capture_output=True,
            text=True,
            check=False,
        )
        git(victim, "push", "-q", "origin", "HEAD:main", check=False)
        attacker_pushes_again(attacker, note)

    merge_round("V1", "second note")
    gl(victim, "void", "V1", "--reason", "closed unmeasured for the next round")
    merge_round("V2", "third note")
    assert (markers / "ledger____init__.py").exists(), sorted(markers.iterdir())
    for marker in markers.iterdir():
        marker.unlink()
    subprocess.run(["git", "merge", "--abort"], cwd=victim, capture_output=True, check=False)
    git(victim, "reset", "-q", "--hard", "HEAD")

    fixed = gl(victim, "doctor", "--fix", check=False)
    assert "rewrote" in fixed.stdout, fixed.stdout
    driver = git(victim, "config", "merge.ledger-views.driver").strip()
    assert " -I -c " in driver and "-m ledger" not in driver
    assert gl(victim, "doctor", check=False).stdout.count("security") == 0
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit", "origin", "main"],
        cwd=victim,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pulled.returncode == 0, pulled.stderr
    no_markers(markers)


def test_sync_and_hooks_install_rewrite_an_old_driver_silently(tmp_path: Path) -> None:
    _remote, victim, _attacker, _markers = setup(tmp_path)
    old = f"'{sys.executable}' -m ledger merge-driver %O %A %B %P"
    for verb in (("hooks", "install"), ("sync",)):
        git(victim, "config", "merge.ledger-views.driver", old)
        gl(victim, *verb)
        driver = git(victim, "config", "merge.ledger-views.driver").strip()
        assert "-m ledger" not in driver and " -I -c " in driver, verb


def test_every_spawn_site_uses_the_launcher() -> None:
    """No module starts ``python -m ledger`` or ``sys.executable`` on its own."""
    root = Path(__file__).resolve().parent.parent / "ledger"
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "launch.py":
            continue
        text = path.read_text()
        if '"-m", "ledger"' in text or "sys.executable" in text:
            offenders.append(path.name)
    assert offenders == [], offenders


def test_installed_hook_is_isolated(repo: Repo) -> None:
    repo.ok("hooks", "install")
    hook = (repo.path / ".git" / "hooks" / "pre-commit").read_text()
    assert "-I -S -c" in hook and "from ledger.hooks.fast import run" in hook
    # Every template placeholder rendered (shell expansions such as ${0%/*} are not ones).
    assert re.findall(r"\$\{[A-Za-z_]\w*\}", hook) == []


# --- what a pushed file may not steer ---------------------------------------------------

SPEC = """\
[cells.A]
bet = "a"
gate = "recent"
falsifier = "f"
slug = "alpha"
[cells.B]
bet = "b"
gate = "recent"
falsifier = "f"
slug = "beta"
"""


def _matrix(repo: Repo, tmp_path: Path) -> None:
    spec = tmp_path / "cells.toml"
    spec.write_text(SPEC)
    repo.ok("matrix", "new", "V1", "--spec", str(spec))


def test_matrix_clean_never_runs_git_in_a_committed_repository(repo: Repo, tmp_path: Path) -> None:
    """A bare repository committed where a cell's worktree goes (its config runs
    core.fsmonitor) is refused by `matrix clean`, which never runs git inside it."""
    _matrix(repo, tmp_path)
    repo.git("worktree", "remove", "--force", ".ledger/worktrees/v1-b-beta")
    embedded = repo.path / ".ledger/worktrees/v1-b-beta"
    for sub in ("objects", "refs"):
        (embedded / sub).mkdir(parents=True)
        (embedded / sub / ".keep").write_text("")
    (embedded / "HEAD").write_text("ref: refs/heads/main\n")
    marker = tmp_path / "fsmonitor-ran"
    (embedded / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
        f'\tfsmonitor = "echo ran > {marker}; false"\n'
    )
    refused = repo.run("matrix", "clean", "V1")
    assert refused.code == 1, refused.err
    assert "not a worktree git has on record" in refused.err
    assert not marker.exists()


def test_a_pushed_matrix_file_cannot_aim_a_worktree_outside(repo: Repo, tmp_path: Path) -> None:
    _matrix(repo, tmp_path)
    outside = tmp_path / "outside"
    entry = repo.path / "training_log" / "V1-matrix.md"
    text = entry.read_text()
    traversal = "x/" + "../" * 12 + str(outside).lstrip("/")
    entry.write_text(text.replace("slug: beta", f"slug: {traversal}"))
    repo.git("commit", "-q", "-am", "docs(ledger): wording", "--no-verify")
    repo.git("worktree", "remove", "--force", ".ledger/worktrees/v1-b-beta")
    joined = repo.run("matrix", "join", "V1", "B")
    assert joined.code != 0
    assert joined.code != 3, joined.err
    assert not outside.exists()
    assert "slug" in (joined.err + joined.out)


def test_a_legacy_hook_that_is_git_ledgers_own_is_never_run(repo: Repo, tmp_path: Path) -> None:
    """The pre-commit framework moves an installed hook to <stage>.legacy; running
    it from itself would recurse forever. A foreign legacy hook still runs first."""
    repo.ok("hooks", "install")
    hooks = repo.path / ".git" / "hooks"
    ours = (hooks / "pre-commit").read_text()
    marker = tmp_path / "legacy-ran"
    # A legacy hook carrying git-ledger's identity: skipped (it would be the hook itself).
    (hooks / "pre-commit.legacy").write_text(
        ours.replace('run_ledger "$@"\n', f"echo ran > {marker}\n", 1)
    )
    (hooks / "pre-commit.legacy").chmod(0o755)
    repo.write("training_log/notes.md", "a note\n")
    repo.git("add", "-A")
    proc = subprocess.run(
        [str(hooks / "pre-commit")],
        cwd=repo.path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert not marker.exists(), proc.stderr
    # A foreign legacy hook: runs, and its refusal stops the commit.
    (hooks / "pre-commit.legacy").write_text(f"#!/bin/sh\necho ran > {marker}\nexit 1\n")
    proc = subprocess.run(
        [str(hooks / "pre-commit")],
        cwd=repo.path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert marker.exists() and proc.returncode == 1


def test_framework_install_refuses_a_look_alike_entry(repo: Repo, tmp_path: Path) -> None:
    marker = tmp_path / "entry-ran"
    repo.write(
        ".pre-commit-config.yaml",
        "repos:\n  - repo: local\n    hooks:\n      - id: git-ledger-pre-commit\n"
        "        name: git-ledger (pre-commit)\n"
        f"        entry: sh -c 'echo ran > {marker}; exec git-ledger hooks run pre-commit'\n"
        "        language: system\n        always_run: true\n        pass_filenames: false\n",
    )
    refused = repo.run("hooks", "install", "--pre-commit-framework")
    assert refused.code == 1, refused.err
    assert "git-ledger-pre-commit" in refused.err and "not git-ledger" in refused.err
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists()
    assert not marker.exists()


def test_run_outputs_are_never_written_through_a_committed_link(
    bare_repo: Repo, tmp_path: Path
) -> None:
    repo = bare_repo
    repo.write("eval.py", EVAL)
    repo.commit_all("chore: eval")
    repo.ok("init")
    config = repo.path / "ledger.toml"
    text = config.read_text()
    start, end = text.index("[gates.recent]"), text.index("[stats]")
    config.write_text(
        text[:start]
        + CONFIG_GATE % json.dumps(sys.executable)
        + text[end:]
        + '\n[run]\noutput_dir = "runs"\n'
    )
    outside = tmp_path / "victim-home"
    outside.mkdir()
    precious = outside / "precious"
    precious.write_text("keep me\n")
    # A link to a file of the user's, placed where the run's log goes.
    (repo.path / "runs" / "V1" / "recent").mkdir(parents=True)
    (repo.path / "runs" / "V1" / "recent" / "seed-1.log").symlink_to(precious)
    repo.commit_all("chore(ledger): outputs", "--no-verify")
    register(repo, "V1")
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1")
    assert precious.read_text() == "keep me\n"
    # A link standing for a whole folder of the output tree is refused outright.
    (repo.path / "runs" / "V1" / "recent").rename(repo.path / "runs" / "V1" / "old")
    (repo.path / "runs" / "V1" / "recent").symlink_to(outside)
    refused = repo.run("run", "V1", "--gate", "recent", "--seeds", "2")
    assert refused.code == 2, refused.err
    assert "symbolic link" in refused.err
    assert sorted(p.name for p in outside.iterdir()) == ["precious"]
