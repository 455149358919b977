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
import subprocess
import sys
from pathlib import Path

from tests.helpers import Repo, git

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
    git(victim, "commit", "-q", "-am", "chore(ledger): a real gate")
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
    gl(victim, "register", "V1", "--bet", "wider model", "--gate", "recent",
       "--files", "src/model.py", "--falsifier", "score not up")
    pulled = subprocess.run(
        ["git", "pull", "--no-rebase", "--no-edit", "origin", "main"],
        cwd=victim, capture_output=True, text=True, check=False,
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
        cwd=victim, capture_output=True, text=True, check=False,
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
        gl(victim, "register", vid, "--bet", f"bet {vid}", "--gate", "recent",
           "--files", "src/model.py", "--falsifier", "score not up", "--force", "test")
        subprocess.run(
            ["git", "pull", "--no-rebase", "--no-edit", "origin", "main"],
            cwd=victim, capture_output=True, text=True, check=False,
        )
        git(victim, "push", "-q", "origin", "HEAD:main", check=False)
        attacker_pushes_again(attacker, note)

    merge_round("V1", "second note")
    gl(victim, "conclude", "V1", "--verdict", "inconclusive", "--next", "go on", check=False)
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
        cwd=victim, capture_output=True, text=True, check=False,
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
    assert '-I -S -c' in hook and "from ledger.hookrun import main" in hook
    assert "${" not in hook.replace("${stage}", "")  # every placeholder rendered
