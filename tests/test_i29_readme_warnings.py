"""Issue 29: the README's examples, run top to bottom as a user would, raise no warning
(its matrix example used to warn that two cells editing one file are not independent)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.test_readme import readme_blocks


def test_readme_examples_raise_no_warning(tmp_path: Path) -> None:
    script = "set -euo pipefail\n" + "\n".join(code for why, code in readme_blocks() if why is None)
    proc = subprocess.run(
        ["bash", "--norc", "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "matrix new V3" in script, "the matrix example runs"
    warned = [line for line in proc.stderr.splitlines() if "warning" in line.lower()]
    assert warned == [], warned
