"""The README, followed top to bottom.

The rule (also stated in the README's quick start): every ```sh block of README.md runs,
in order, in one bash shell (``set -euo pipefail``, so a failing line fails the test),
starting in an empty directory, with `git ledger` dispatched by git. A block is skipped
only when the line right before its opening fence is an HTML comment
``<!-- not run: why -->``, and the why must name where that block is tested instead.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.helpers import git

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(
    r"(?:^(<!-- not run: (?P<why>.+?) -->)\n)?^```sh\n(?P<code>.*?)^```", re.S | re.M
)


def readme_blocks() -> list[tuple[str | None, str]]:
    text = (ROOT / "README.md").read_text()
    return [(m["why"], m["code"]) for m in FENCE.finditer(text)]


def test_readme_blocks_are_found_and_skips_say_why() -> None:
    blocks = readme_blocks()
    assert len(blocks) == (ROOT / "README.md").read_text().count("```sh\n")
    run = [code for why, code in blocks if why is None]
    assert len(run) >= 5, "the quick start, the matrix and the reports run"
    for why, _ in blocks:
        assert why is None or len(why) > 10


def test_readme_top_to_bottom(tmp_path: Path) -> None:
    script = "set -euo pipefail\n" + "\n".join(
        f"echo '### README block {i}' >&2\n{code}"
        for i, (why, code) in enumerate(readme_blocks())
        if why is None
    )
    proc = subprocess.run(
        ["bash", "--norc", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    shop = tmp_path / "shop"
    log = git(shop, "log", "--format=%(trailers:key=Ledger-Transition,valueonly)")
    kinds = set(log.split())
    # `run` commits all its seeds in one transition of kind "run"
    for kind in ("init", "register", "run", "conclude", "matrix-register", "matrix-conclude"):
        assert kind in kinds, (kind, kinds)
    assert (tmp_path / "report.html").read_text().count("<svg") >= 1
    assert (tmp_path / "comment.md").read_text().startswith("<!-- git-ledger:report -->")
    assert 'id="trajectory"' in (tmp_path / "recent.svg").read_text()
    # The README leaves a clean work tree: the next result is not flagged as dirty.
    assert git(shop, "status", "--porcelain") == ""
    assert "SIZE = 256" in (shop / "src/cache.py").read_text(), "the matrix winner is merged"
