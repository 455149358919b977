#!/bin/sh
# git-ledger hook: installed by `git ledger hooks install`, removed by `uninstall`.
# identity: git-ledger-hook v1
# stage: ${stage}
# interpreter: ${python}
#
# A foreign hook that was here before is kept as ${stage}.legacy and runs first.
# The ledger's own check runs with the interpreter git-ledger was installed
# with; its fast path uses only the git program and the standard library.
LEDGER_PYTHON='${python}'
[ -x "$LEDGER_PYTHON" ] || LEDGER_PYTHON=python3
HOOK_DIR=$(dirname "$0")
LEGACY="$HOOK_DIR/${stage}.legacy"
if [ "${stage}" = "pre-push" ]; then
    # pre-push gets the refs on stdin: keep a copy for both hooks.
    INPUT=$(cat)
    if [ -x "$LEGACY" ]; then
        printf '%s\n' "$INPUT" | "$LEGACY" "$@" || exit $?
    fi
    printf '%s\n' "$INPUT" | "$LEDGER_PYTHON" -m ledger.hookrun ${stage} "$@"
    exit $?
fi
if [ -x "$LEGACY" ]; then
    "$LEGACY" "$@" || exit $?
fi
exec "$LEDGER_PYTHON" -m ledger.hookrun ${stage} "$@"
