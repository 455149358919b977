"""The CLI ends without the interpreter's teardown only when nothing is left to finish.

ledger.__main__.exit_now: an integer status, one thread, nothing registered
with atexit, stdout and stderr flushed. Each case runs in its own process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PROLOGUE = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from ledger.__main__ import exit_now
"""


def run(body: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROLOGUE + body], capture_output=True, text=True, timeout=60
    )


def test_buffered_output_and_the_status_survive_the_fast_exit() -> None:
    done = run(
        "sys.stdout.write('no newline, still buffered')\n"
        "sys.stderr.write('err')\n"
        "exit_now(SystemExit(4))\n"
        "sys.stdout.write(' NOT REACHED')\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (4, "no newline, still buffered", "err")


@pytest.mark.parametrize(
    "setup",
    [
        "import atexit; atexit.register(lambda: print('atexit ran'))",
        "import tempfile, weakref; d = tempfile.TemporaryDirectory(); print('atexit ran')",
        "import threading, time; t = threading.Thread(target=lambda: (time.sleep(0.3), "
        "print('atexit ran'))); t.start()",
    ],
    ids=["atexit-callback", "tempfile-finalizer", "live-thread"],
)
def test_pending_work_gets_the_normal_exit(setup: str) -> None:
    done = run(f"{setup}\nexit_now(SystemExit(3))\nprint('returned')\nsys.exit(3)\n")
    assert done.returncode == 3
    assert "returned" in done.stdout and "atexit ran" in done.stdout


def test_a_message_status_is_left_to_sys_exit() -> None:
    done = run(
        "exit_now(SystemExit('a message'))\nprint('returned')\nraise SystemExit('a message')\n"
    )
    assert done.returncode == 1 and "returned" in done.stdout and "a message" in done.stderr


def test_a_closed_pipe_gets_the_normal_exit(tmp_path: Path) -> None:
    """stdout to a reader that went away: the flush fails, exit_now returns."""
    script = PROLOGUE + (
        "import os\nr, w = os.pipe(); os.close(r); sys.stdout = os.fdopen(w, 'w')\n"
        "sys.stdout.write('x')\nexit_now(SystemExit(0))\n"
        "sys.stderr.write('returned')\nos._exit(7)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (7, "returned")


def test_a_profiled_run_writes_its_profile(tmp_path: Path) -> None:
    """python -m cProfile writes its output after main returns: no fast exit under it."""
    script = tmp_path / "main.py"
    script.write_text(PROLOGUE + "exit_now(SystemExit(0))\n")
    out = tmp_path / "out.prof"
    done = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(out), str(script)], capture_output=True
    )
    assert done.returncode == 0 and out.stat().st_size > 0


@pytest.mark.parametrize("closed", ["2>&-", ">&-"])
def test_a_closed_descriptor_keeps_the_status(tmp_path: Path, closed: str) -> None:
    """Started with stdout or stderr closed, Python has no sys.stdout or sys.stderr:
    the status the command chose is still the process's."""
    script = tmp_path / "main.py"
    script.write_text(PROLOGUE + "exit_now(SystemExit(0))\nsys.exit(0)\n")
    done = subprocess.run(["sh", "-c", f'"$0" "$1" {closed}', sys.executable, str(script)])
    assert done.returncode == 0
