"""Issue 27, done when: the campaign loop end to end, as its document describes, by
following ``next --json`` at every step with hooks installed and a bare remote.

The tool measures every candidate (``[campaign] run`` at the candidate's commit,
three repeats, provenance recorded); a rejected change is reverted as ``next``
says; a setting of equal gain is promoted over the code head while a larger code
change of equal gain is refused (``[less-invasive]``) and held; the measuring
script changes, ``next`` asks for ``benchmark adjust`` and then the base and the
head re-measured with the new script; the report states n, σ, Δ and the
threshold of every candidate; ``finish`` and ``deliver`` pass, the delivered
tree is the head's code, ``verify`` is clean and the ledger's branch is pushed
through the pre-push hook.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from tests.helpers import Repo, git
from tests.test_i27_campaign_finish import TEMPLATE, commit, gl, ok

BENCH = """\
import json, re, sys
from pathlib import Path
repeat = int(sys.argv[2])
speed = float(re.search(r"speed = (\\d+)", Path("src/speed.toml").read_text()).group(1))
for path in sorted(Path("src").glob("*.py")):
    speed += sum(int(b) for b in re.findall(r"BOOST = (-?\\d+)", path.read_text()))
print(json.dumps({
    "speed": speed * FACTOR + repeat - 2,
    "accel_mem_gb": "N/A: no accelerator",
    "peak_cpu_gb": 1.5,
    "correctness": 0,
}))
"""


def _setup(repo: Repo, remote: str) -> str:
    run = json.dumps([sys.executable, "bench.py", "{commit}", "{repeat}"])
    env = json.dumps([sys.executable, "--version"])
    (repo.path / "ledger.toml").write_text(
        TEMPLATE.read_text().replace("${dir}", "training_log")
        + 'scope = ["src/**"]\nbenchmark_script = "bench.py"\n'
        + f"run = {run}\nenvironment = {{ python = {env} }}\n"
    )
    git(repo.path, "init", "-q", "--bare", remote)
    # The remote judges every push too (pre-receive and update).
    served = gl(Repo(Path(remote)), "hooks", "install", "--server")
    assert served.code == 0, served.err
    git(repo.path, "remote", "add", "origin", remote)
    ok(repo, "init")
    ok(repo, "hooks", "install")
    repo.write("src/speed.toml", "speed = 100\n")
    repo.write("src/app.py", "def main():\n    return 0\n")
    repo.write("bench.py", BENCH.replace("FACTOR", "1"))
    return commit(repo, "feat(src): the base")


def _next(repo: Repo, action: str) -> dict[str, Any]:
    nxt: dict[str, Any] = ok(repo, "next", "--json").json()
    assert nxt["action"] == action, nxt
    return nxt


def _follow(repo: Repo, nxt: dict[str, Any], **fill: str) -> str:
    """Run next's command with its placeholders filled (the words an agent writes)."""
    words = []
    for word in shlex.split(nxt["command"]):
        words.append(fill.get(word, word))
    assert words[:2] == ["git", "ledger"] or words[0] == "git", words
    if words[:2] == ["git", "ledger"]:
        return ok(repo, *words[2:]).out
    return git(repo.path, *words[1:])


def _code(repo: Repo, name: str, boost: int, lines: int) -> str:
    body = "".join(f"step_{i} = {i}\n" for i in range(lines))
    repo.write(f"src/{name}.py", f"BOOST = {boost}\n{body}")
    return commit(repo, f"perf(src): {name}")


def test_the_campaign_loop_end_to_end_by_next(bare_repo: Repo) -> None:
    repo = bare_repo
    base = _setup(repo, str(repo.path.parent / "remote.git"))
    assert "git ledger contract" in _next(repo, "contract")["command"]
    repo.write("training_log/contract.md", "# Contract\n\nSpeed of src/ on bench.py.\n")
    ok(repo, "contract")
    nxt = _next(repo, "record-base")
    assert nxt["command"].endswith("--run")
    _follow(repo, nxt, CANDIDATE=base)
    _follow(repo, _next(repo, "arm"))

    # A code change that improves beyond noise: promoted, measured by the tool.
    kernel = _code(repo, "kernel", 30, 10)
    nxt = _next(repo, "candidate")
    assert kernel[:12] in nxt["command"] and "--run" in nxt["command"]
    out = _follow(repo, nxt, **{"promoted|rejected|held": "promoted", "TEXT": "fused kernel"})
    assert "improved" in out

    # A regression: rejected, then reverted as next says.
    slow = _code(repo, "slow", -20, 2)
    _follow(repo, _next(repo, "candidate"),
            **{"promoted|rejected|held": "rejected", "TEXT": "slower"})  # fmt: skip
    nxt = _next(repo, "revert-rejected")
    assert slow[:10] in nxt["reason"]
    _follow(repo, nxt)

    # A setting of equal gain is the less invasive change: promoted over the code head.
    repo.write("src/speed.toml", "speed = 101\n")
    setting = commit(repo, "perf(src): one more worker")
    nxt = _next(repo, "candidate")
    _follow(repo, nxt, **{"promoted|rejected|held": "promoted", "TEXT": "a setting",
                          "<NOTES>": "a setting, not code"})  # fmt: skip
    entry = json.loads(
        next((repo.path / "training_log/candidates").glob(f"{setting[:12]}-e0.json")).read_text()
    )
    assert entry["kind"] == "setting" and entry["comparison"]["outcome"] == "within noise"

    # A larger code change of equal gain: next names the rival, record refuses, it is held.
    big = _code(repo, "big", 1, 20)
    nxt = _next(repo, "candidate")
    assert "[less-invasive]" in nxt["reason"] and setting[:10] in nxt["reason"]
    fill = {"promoted|rejected|held": "promoted", "TEXT": "a rewrite",
            "<NOTES>": "the less invasive change"}  # fmt: skip
    words = [fill.get(w, w) for w in shlex.split(nxt["command"])]
    refused = gl(repo, *words[2:])
    assert refused.code == 1 and "[less-invasive]" in refused.err, refused.err
    words[words.index("promoted")] = "held"
    ok(repo, *words[2:])

    # The measuring script changes: adjust, then the base and the head re-measured.
    repo.write("bench.py", BENCH.replace("FACTOR", "2"))
    commit(repo, "perf(bench): count both passes")
    refused = gl(repo, "finish", "--json")
    assert refused.code == 1 and "benchmark-changed" in refused.out + refused.err
    _follow(repo, _next(repo, "benchmark-adjust"), TEXT="'both passes counted'")
    nxt = _next(repo, "record-base")
    assert base[:12] in nxt["command"]
    _follow(repo, nxt)
    nxt = _next(repo, "re-measure-head")
    assert big[:12] in nxt["command"]
    _follow(repo, nxt)
    remeasured = json.loads(
        next((repo.path / "training_log/candidates").glob(f"{big[:12]}-e1.json")).read_text()
    )
    assert remeasured["repeats"]["speed"] == [263.0, 264.0, 265.0]  # 2 * (101 + 30 + 1)
    head_blob = git(repo.path, "rev-parse", "HEAD:bench.py").strip()
    assert remeasured["provenance"]["script_blob"] == head_blob

    ok(repo, "mistake", "add", "timed the first pass only", "--caught-by", "review",
       "--should-have-caught", "the contract")  # fmt: skip
    nxt = _next(repo, "candidate")
    close = next(a for a in nxt["alternatives"] if a["action"] == "close")
    _follow(repo, close, TEXT="'kernel and a setting; the rewrite held'")
    report = (repo.path / "training_log/latest-report.md").read_text()
    for line in report.splitlines():
        if line.startswith("- ") and " epoch " in line and ": base" not in line:
            assert all(k in line for k in ("n=3", "σ=", "Δ=", "threshold=")), line
    _follow(repo, _next(repo, "finish"))
    nxt = _next(repo, "deliver")
    _follow(repo, nxt)
    done = _next(repo, "done")
    assert done["done"] is True

    delivered = git(repo.path, "ls-tree", "-r", "--name-only", "campaign/deliver").split()
    assert "src/kernel.py" in delivered and "src/big.py" in delivered
    assert "src/slow.py" not in delivered
    assert "training_log/mistakes.md" in delivered
    for path in ("src/kernel.py", "src/big.py", "src/speed.toml", "src/app.py"):
        assert git(repo.path, "rev-parse", f"campaign/deliver:{path}") == git(
            repo.path, "rev-parse", f"{big}:{path}"
        )
    assert gl(repo, "verify").code == 0
    # The ledger's branch goes through the pre-push hook's verify.
    git(repo.path, "push", "-q", "origin", "HEAD:refs/heads/main")
    assert git(repo.path, "rev-parse", "origin/main") == git(repo.path, "rev-parse", "HEAD")
    # The delivered branch is pushed like any other: through pre-push and pre-receive.
    git(repo.path, "push", "-q", "origin", "campaign/deliver")
    assert git(repo.path, "rev-parse", "origin/campaign/deliver") == git(
        repo.path, "rev-parse", "campaign/deliver"
    )
