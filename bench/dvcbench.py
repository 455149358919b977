"""DVC, installed in its own virtual environment, as the baseline the ledger is measured against.

Experiments are made the way the issue describes: params.yaml and metrics.json
written, a dvc.yaml stage listing both, then ``dvc exp save -n NAME``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from bench.common import timed, tool_executable

DVC_YAML = """\
stages:
  train:
    cmd: python3 train.py
    params:
      - lr
      - width
    metrics:
      - metrics.json:
          cache: false
"""


def dvc_executable() -> Path:
    return tool_executable("dvc", "dvc")


def make_repo(path: Path, experiments: int, env: dict[str, str]) -> list[float]:
    """A DVC repository with ``experiments`` saved experiments; returns each save's seconds."""
    dvc = str(dvc_executable())
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    subprocess.run([dvc, "init", "-q"], cwd=path, check=True, env=env)
    (path / "dvc.yaml").write_text(DVC_YAML)
    (path / "train.py").write_text("print('train')\n")
    (path / "params.yaml").write_text("lr: 0.1\nwidth: 32\n")
    (path / "metrics.json").write_text(json.dumps({"score": 0.0, "loss": 1.0}))
    subprocess.run(["git", "add", "-A"], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=path, check=True, env=env)
    saves = []
    for i in range(experiments):
        (path / "params.yaml").write_text(f"lr: {0.1 + i * 0.001:.4f}\nwidth: {32 + i % 8}\n")
        (path / "metrics.json").write_text(
            json.dumps({"score": 90 + i * 0.01, "loss": 1 / (90 + i * 0.01)})
        )
        saves.append(
            timed(
                lambda i=i: subprocess.run(
                    [dvc, "exp", "save", "-q", "-n", f"exp-{i}"],
                    cwd=path,
                    check=True,
                    env=env,
                    capture_output=True,
                )
            )
        )
    return saves


def exp_show(path: Path, env: dict[str, str], cold: bool) -> float:
    dvc = str(dvc_executable())
    if cold:
        shutil.rmtree(path / ".dvc" / "tmp" / "exps" / "cache", ignore_errors=True)
    return timed(
        lambda: subprocess.run(
            [dvc, "exp", "show", "--json"], cwd=path, check=True, env=env, capture_output=True
        )
    )
