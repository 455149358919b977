"""The CI examples, run locally: their shell steps, as written, against a bare remote.

Each `run:` step of examples/github/*.yml, and each script line of
examples/gitlab/.gitlab-ci.yml, reads only environment variables, so the test runs it
with bash in a clone of a bare remote. A fake `gh` on PATH keeps the pull request's
comments in a JSON file and records every call (a fake `curl` does the same for
GitLab's notes API); the seed fan-out's matrix jobs are parallel clones that each run
their seed and `git ledger sync`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import Repo, git
from tests.test_next_walk_states import shop

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

FAKE_GH = f"""#!{sys.executable}
import json, os, sys
store = os.environ["FAKE_GH_STORE"]
data = json.load(open(store)) if os.path.exists(store) else {{"comments": [], "calls": []}}
args = sys.argv[1:]
data["calls"].append(args)
def body(arg):
    return open(arg.split("=@", 1)[1]).read() if "=@" in arg else arg.split("=", 1)[1]
if args[:2] == ["pr", "comment"]:
    text = open(args[args.index("--body-file") + 1]).read()
    data["comments"].append({{"id": len(data["comments"]) + 101, "body": text}})
elif args[0] == "api" and "PATCH" in args:
    path = next(a for a in args if a.startswith("repos/"))
    cid = int(path.rsplit("/", 1)[1])
    comment = next(c for c in data["comments"] if c["id"] == cid)
    comment["body"] = body(args[args.index("-F") + 1])
elif args[0] == "api":
    jq = args[args.index("--jq") + 1]
    mark = jq.split('startswith("', 1)[1].split('")', 1)[0]
    for c in data["comments"]:
        if c["body"].startswith(mark):
            print(c["id"])
else:
    sys.exit("fake gh: unexpected call " + repr(args))
json.dump(data, open(store, "w"))
"""


def steps(workflow: str) -> dict[str, str]:
    data: Any = yaml.safe_load((EXAMPLES / "github" / workflow).read_text())
    (job,) = data["jobs"].values()
    return {s["name"]: s["run"] for s in job["steps"] if "run" in s and "name" in s}


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def cloned_with_fake(tmp_path: Path, repo: Repo, tool: str, script: str) -> tuple[Path, Path]:
    """A fresh clone of the published remote, and a bin dir holding a fake ``tool``."""
    remote = published(tmp_path, repo)
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(remote), str(checkout))
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    (bindir / tool).write_text(script)
    (bindir / tool).chmod(0o755)
    return checkout, bindir


def published(tmp_path: Path, repo: Repo) -> Path:
    """A loop with V1 concluded and V2's code committed, pushed to a bare remote."""
    shop(repo)
    repo.ok(
        "register",
        "V1",
        "--bet",
        "baseline",
        "--gate",
        "recent",
        "--files",
        "src/cache.py",
        "--falsifier",
        "none",
    )
    repo.ok("run", "V1", "--gate", "recent", "--seeds", "1,2")
    repo.ok("conclude", "V1", "--verdict", "confirmed", "--next", "wider")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    repo.git("remote", "add", "origin", str(remote))
    repo.git("push", "-q", "-u", "origin", "main")
    repo.ok(
        "register",
        "V2",
        "--bet",
        "A wider cache lifts the score",
        "--gate",
        "recent",
        "--files",
        "src/cache.py",
        "--falsifier",
        "no gain",
    )
    repo.write("src/cache.py", "SIZE = 96\n")
    repo.commit_all("feat(cache): V2 — wider")
    repo.git("push", "-q", "origin", "main")
    return remote


def test_pull_request_workflow_verifies_and_keeps_one_comment(
    bare_repo: Repo, tmp_path: Path
) -> None:
    checkout, bindir = cloned_with_fake(tmp_path, bare_repo, "gh", FAKE_GH)
    store = tmp_path / "gh.json"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_GH_STORE": str(store),
        "RUNNER_TEMP": str(tmp_path),
        "PR": "7",
        "REPO": "octo/shop",
        "GH_TOKEN": "t",
    }
    run = steps("ledger.yml")
    assert set(run) == {"install", "verify", "comment"}
    assert run["install"].strip() == 'pip install "$GIT_LEDGER_SOURCE"'
    verify = bash(run["verify"], checkout, env)
    if "No such command 'verify'" not in verify.stderr:  # `verify` arrives with #15
        assert verify.returncode == 0, verify.stderr
    first = bash(run["comment"], checkout, env)
    assert first.returncode == 0, first.stderr
    data = json.loads(store.read_text())
    assert [c[:3] for c in data["calls"]] == [
        ["api", "repos/octo/shop/issues/7/comments", "--paginate"],
        ["pr", "comment", "7"],
    ]
    assert len(data["comments"]) == 1
    assert data["comments"][0]["body"].startswith("<!-- git-ledger:report -->")
    assert "V1" in data["comments"][0]["body"]
    # A new push to the pull request: the same comment is updated, none is added.
    bare_repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2")
    bare_repo.git("push", "-q", "origin", "main")
    git(checkout, "pull", "-q", "--ff-only")
    second = bash(run["comment"], checkout, env)
    assert second.returncode == 0, second.stderr
    data = json.loads(store.read_text())
    assert len(data["comments"]) == 1, data["comments"]
    assert any("PATCH" in c and "repos/octo/shop/issues/comments/101" in c for c in data["calls"])
    assert "V2" in data["comments"][0]["body"]


def test_seed_fan_out_jobs_share_results_through_the_remote(
    bare_repo: Repo, tmp_path: Path
) -> None:
    remote = published(tmp_path, bare_repo)
    run = steps("ledger-seeds.yml")
    assert set(run) == {"install", "run", "sync"}
    workflow = yaml.safe_load((EXAMPLES / "github/ledger-seeds.yml").read_text())
    seeds = workflow["jobs"]["seed"]["strategy"]["matrix"]["seed"]
    jobs = []
    for seed in seeds:  # each matrix job: a fresh checkout, its seed, then sync
        clone = tmp_path / f"job-{seed}"
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        env = {**os.environ, "VERSION": "V2", "GATE": "recent", "SEED": str(seed)}
        script = run["run"] + "\n" + run["sync"]
        jobs.append(_start_job(script, clone, env))
    _finish_jobs_and_check_the_remote(jobs, remote, seeds)


FAKE_CURL = f"""#!{sys.executable}
import json, os, sys, urllib.parse
store = os.environ["FAKE_GITLAB_STORE"]
data = json.load(open(store)) if os.path.exists(store) else {{"notes": [], "calls": []}}
args = sys.argv[1:]
data["calls"].append(args)
method, body, url, headers = "GET", None, None, []
i = 0
while i < len(args):
    a = args[i]
    if a == "--request":
        method = args[i + 1]; i += 2; continue
    if a == "--header":
        headers.append(args[i + 1]); i += 2; continue
    if a == "--data-urlencode":
        name, _, source = args[i + 1].partition("@")
        body = open(source).read(); i += 2; continue
    if a.startswith("-"):
        i += 1; continue
    url = a; i += 1
if "PRIVATE-TOKEN: " + os.environ["LEDGER_TOKEN"] not in headers:
    sys.exit(22)  # curl -f on a 401
prefix = os.environ["CI_API_V4_URL"] + "/projects/" + os.environ["CI_PROJECT_ID"]
path = url.split("?", 1)[0].removeprefix(prefix)
assert path.startswith("/merge_requests/" + os.environ["CI_MERGE_REQUEST_IID"] + "/notes"), url
if method == "GET":
    print(json.dumps(data["notes"]))
elif method == "POST":
    data["notes"].append({{"id": len(data["notes"]) + 501, "body": body}})
elif method == "PUT":
    nid = int(path.rsplit("/", 1)[1])
    next(n for n in data["notes"] if n["id"] == nid)["body"] = body
json.dump(data, open(store, "w"))
"""


def gitlab() -> Any:
    return yaml.safe_load((EXAMPLES / "gitlab/.gitlab-ci.yml").read_text())


def gitlab_script(job: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """A job as the runner runs it: before_script (but the install) then script, each
    line in one bash with -e, the job's variables in the environment."""
    data = gitlab()
    before = [line for line in data["default"]["before_script"] if not line.startswith("pip ")]
    assert data["default"]["before_script"][0] == 'pip install "$GIT_LEDGER_SOURCE"'
    lines = [*before, *data[job]["script"]]
    variables = {k: str(v) for k, v in data.get("variables", {}).items()}
    return bash("\n".join(lines), cwd, {**variables, **env})


def test_gitlab_merge_request_job_verifies_and_keeps_one_note(
    bare_repo: Repo, tmp_path: Path
) -> None:
    checkout, bindir = cloned_with_fake(tmp_path, bare_repo, "curl", FAKE_CURL)
    store = tmp_path / "gitlab.json"
    env = {
        **os.environ,
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_GITLAB_STORE": str(store),
        "CI_PIPELINE_SOURCE": "merge_request_event",
        "CI_API_V4_URL": "https://gitlab.example/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "LEDGER_TOKEN": "glpat-test",
    }
    assert gitlab()["ledger:verify"]["rules"] == [
        {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}
    ]
    first = gitlab_script("ledger:verify", env, checkout)
    assert first.returncode == 0, first.stderr + first.stdout
    data = json.loads(store.read_text())
    assert [
        c[-1] if "--request" not in c else c[c.index("--request") + 1] for c in data["calls"]
    ] == [
        "https://gitlab.example/api/v4/projects/42/merge_requests/7/notes?per_page=100",
        "POST",
    ]
    (note,) = data["notes"]
    assert note["body"].startswith("<!-- git-ledger:report -->") and "V1" in note["body"]
    # A new push to the merge request: the same note is updated in place.
    bare_repo.ok("run", "V2", "--gate", "recent", "--seeds", "1,2")
    bare_repo.git("push", "-q", "origin", "main")
    git(checkout, "pull", "-q", "--ff-only")
    second = gitlab_script("ledger:verify", env, checkout)
    assert second.returncode == 0, second.stderr + second.stdout
    data = json.loads(store.read_text())
    assert len(data["notes"]) == 1, data["notes"]
    assert any(
        "PUT" in c
        and c[-1]
        == f"https://gitlab.example/api/v4/projects/42/merge_requests/7/notes/{note['id']}"
        for c in data["calls"]
    ), data["calls"]
    assert "V2" in data["notes"][0]["body"]
    # verify refusing (a tampered history) fails the job before any note is written.
    calls = len(data["calls"])
    reg = checkout / "training_log/V2.md"
    reg.write_text(reg.read_text().replace("A wider cache", "A narrower cache"))
    git(checkout, "commit", "-q", "--no-verify", "-am", "docs: V2 reworded")
    third = gitlab_script("ledger:verify", env, checkout)
    assert third.returncode != 0 and "frozen" in third.stdout + third.stderr, third.stdout
    assert len(json.loads(store.read_text())["calls"]) == calls


def test_gitlab_seed_jobs_share_results_through_the_remote(bare_repo: Repo, tmp_path: Path) -> None:
    remote = published(tmp_path, bare_repo)
    job = gitlab()["ledger:seeds"]
    assert job["rules"] == [{"if": "$VERSION && $GATE"}]
    seeds = job["parallel"]["matrix"][0]["SEED"]
    assert seeds == ["1", "2", "3", "4"]
    push_url = "https://ci:glpat-test@gitlab.example/group/shop.git"
    jobs = []
    for seed in seeds:  # each parallel job: a detached checkout, as the runner makes it
        clone = tmp_path / f"job-{seed}"
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        git(clone, "checkout", "-q", "--detach")
        # The runner's network: the token URL the job pushes to is the bare remote here.
        git(clone, "config", f"url.{remote}.insteadOf", push_url)
        env = {
            **os.environ,
            "VERSION": "V2",
            "GATE": "recent",
            "SEED": seed,
            "CI_COMMIT_BRANCH": "main",
            "LEDGER_TOKEN": "glpat-test",
            "CI_SERVER_HOST": "gitlab.example",
            "CI_PROJECT_PATH": "group/shop",
        }
        data = gitlab()
        before = [line for line in data["default"]["before_script"] if not line.startswith("pip ")]
        script = "\n".join([*before, *job["script"]])
        jobs.append(_start_job(script, clone, env))
    _finish_jobs_and_check_the_remote(jobs, remote, seeds)


def _start_job(script: str, clone: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """One CI job's shell steps, started in its own clone (jobs run side by side)."""
    return subprocess.Popen(
        ["bash", "-eo", "pipefail", "-c", script],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish_jobs_and_check_the_remote(
    jobs: list[subprocess.Popen[str]], remote: Path, seeds: list[Any]
) -> None:
    """Every job passed, and the remote holds one result per seed of V2, fsck-clean."""
    for job in jobs:
        out, err = job.communicate()
        assert job.returncode == 0, err + out
    listed = git(
        remote,
        "--git-dir",
        str(remote),
        "ls-tree",
        "-r",
        "--name-only",
        "main",
        "training_log/results/V2/recent/",
    )
    assert sorted(Path(p).name for p in listed.split()) == [f"seed-{s}.json" for s in seeds]
    git(remote, "--git-dir", str(remote), "fsck", "--strict")
