"""``python -m ledger`` and the ``git-ledger`` console script.

The platform is checked here, before click or anything else is imported: on
Windows outside WSL the hooks (POSIX shell scripts), the locks (``fcntl``) and
process handling do not work, and a user gets one line saying so, not a
traceback from deep inside an import.
"""

import sys

WINDOWS_UNSUPPORTED = (
    "git-ledger: error: Windows outside WSL is not supported "
    "(supported: Linux, macOS, and Windows through WSL); run it inside WSL\n"
)


def main() -> None:
    if sys.platform == "win32":
        sys.stderr.write(WINDOWS_UNSUPPORTED)
        sys.exit(2)
    from ledger.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
