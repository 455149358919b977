#!/bin/sh
# git-ledger hook: installed by `git ledger hooks install`, removed by `uninstall`.
# identity: git-ledger-hook v2
# stage: ${stage}
# interpreter: ${python}
# package: ${package}
#
# A foreign hook that was here before is kept as ${stage}.legacy and runs first.
# The ledger's check runs with the interpreter git-ledger was installed with,
# started with -I -S: isolated (the repository's directory and PYTHON* variables
# never reach sys.path, so no file in a repository can shadow a module the hook
# imports, and bytecode is cached even under PYTHONDONTWRITEBYTECODE) and
# without site (the fast path needs only the standard library; the heavy path
# restores site-packages itself).
LEDGER_PYTHON='${python}'
LEDGER_PACKAGE='${package}'
[ -x "$LEDGER_PYTHON" ] || LEDGER_PYTHON=python3
# ${0%/*}, not $(dirname "$0"): a commit runs three hooks, and each fork counts.
case "$0" in */*) HOOK_DIR=${0%/*} ;; *) HOOK_DIR=. ;; esac
LEGACY="$HOOK_DIR/${stage}.legacy"
# Never run a git-ledger hook as the legacy one: the pre-commit framework moves
# an installed hook to <stage>.legacy and runs it, and this script would then
# run itself forever.
if [ -x "$LEGACY" ] && grep -q 'identity: git-ledger-hook' "$LEGACY" 2>/dev/null; then
    LEGACY=
fi
run_ledger() {
    "$LEDGER_PYTHON" -I -S -c '${boot}' "$LEDGER_PACKAGE" ${stage} "$@"
}
if [ "${stage}" = "pre-push" ] || [ "${stage}" = "pre-receive" ] || [ "${stage}" = "post-receive" ]; then
    # These get the refs on stdin: keep a copy for both hooks (a legacy one would
    # read it all, and ours would judge or remember an empty push).
    INPUT=$(cat)
    if [ -n "$LEGACY" ] && [ -x "$LEGACY" ] && [ "${stage}" = "post-receive" ]; then
        # The push landed: a failing legacy post-receive keeps nothing from being remembered.
        printf '%s\n' "$INPUT" | "$LEGACY" "$@"
    elif [ -n "$LEGACY" ] && [ -x "$LEGACY" ]; then
        printf '%s\n' "$INPUT" | "$LEGACY" "$@" || exit $?
    fi
    printf '%s\n' "$INPUT" | run_ledger "$@"
    exit $?
fi
if [ -n "$LEGACY" ] && [ -x "$LEGACY" ]; then
    "$LEGACY" "$@" || exit $?
fi
# git runs pre-receive on a whole push before the update hook of any of its refs, and
# runs no update hook once pre-receive refused: with ours beside it, every ref was
# judged already (update is for hosts that run nothing else).
if [ "${stage}" = "update" ] && [ -x "$HOOK_DIR/pre-receive" ] &&
    grep -q 'identity: git-ledger-' "$HOOK_DIR/pre-receive" 2>/dev/null; then
    exit 0
fi
run_ledger "$@"
