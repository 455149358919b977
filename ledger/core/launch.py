"""Start the installed git-ledger, never code that a repository carries.

Whatever the tool starts, or asks git to start on its behalf (hooks, the
``ledger-views`` merge driver, detached runs), runs with the current working
directory inside a repository that other people push to. ``python -m ledger``
puts that directory first on ``sys.path``: a top-level ``ledger/`` package,
``ledger.py`` or ``sitecustomize.py`` pushed by a collaborator would then run
on the next ``git pull`` that merges a generated view. So every such process
is started here, one way:

- the interpreter git-ledger runs under, by absolute path;
- in isolated mode (``-I``): no current directory or script directory on
  ``sys.path`` (``-P``), no ``PYTHON*`` variables (``-E``: no ``PYTHONPATH``,
  ``PYTHONSTARTUP``), no user site directory (``-s``);
- with the directory this very ``ledger`` package was imported from pinned
  first on ``sys.path``, so the program that starts is the one that is
  running now, wherever it was installed (a venv, ``pip install --user``, an
  editable checkout).

This module imports only the standard library: the hooks' fast path and the
full program both use it.
"""

from __future__ import annotations

import os
import shlex
import sys

# The entry program: pin the package's parent directory, then call its entry point.
# No single quotes inside, so it can sit in a single-quoted shell word.
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from {module} import {entry}; sys.exit({entry}())"
)


def package_root() -> str:
    """The directory holding the ``ledger`` package that is running now."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ledger/
    return os.path.dirname(os.path.realpath(package))


def interpreter() -> str:
    """The interpreter git-ledger runs under, by absolute path."""
    return os.path.abspath(sys.executable)


def boot(module: str, entry: str = "main") -> str:
    """The ``-c`` program that imports ``module`` from the pinned root and runs ``entry()``."""
    return _BOOT.format(module=module, entry=entry)


def argv(*args: str, module: str = "ledger.cli.app") -> list[str]:
    """The argv that runs ``git-ledger ARGS...`` from the installed package, isolated."""
    return [interpreter(), "-I", "-c", boot(module), package_root(), *args]


def shell_command(*args: str, raw: str = "") -> str:
    """``argv(*args)`` as one shell command line, for git config values.

    ``raw`` is appended unquoted: git substitutes placeholders such as the
    merge driver's ``%O %A %B %P`` with file names it quotes itself.
    """
    line = shlex.join(argv(*args))
    return f"{line} {raw}" if raw else line


def is_isolated_command(line: str) -> bool:
    """Whether a configured command line starts Python isolated with a pinned root.

    Anything else that names ``-m ledger`` (the 0.1 merge driver) imports the
    ``ledger`` package from the current directory first.
    """
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    return len(words) >= 4 and words[1] == "-I" and words[2] == "-c" and "from ledger." in words[3]
