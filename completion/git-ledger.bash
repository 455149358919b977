# bash completion for git-ledger: `git ledger <TAB>` and `git-ledger <TAB>`.
#
# git's own completion (git-completion.bash) completes `git ledger ...` by calling a
# function named _git_ledger when one is defined, and asks bash-completion's loader for
# this file (installed as share/bash-completion/completions/git-ledger) when it is not.
# Without bash-completion, source this file from ~/.bashrc after git's completion.
# The candidates come from git-ledger itself (click's completion protocol), so they
# always match the installed version.

__git_ledger_candidates() {
    # $1: the words after the program name, $2: the index of the word being completed
    local IFS=$'\n' line
    COMPREPLY=()
    for line in $(COMP_WORDS="git-ledger $1" COMP_CWORD="$2" \
        _GIT_LEDGER_COMPLETE=bash_complete git-ledger 2>/dev/null); do
        case "${line%%,*}" in
            dir) COMPREPLY=(); compopt -o dirnames 2>/dev/null; return ;;
            file) COMPREPLY=(); compopt -o default 2>/dev/null; return ;;
            *) COMPREPLY+=("${line#*,}") ;;
        esac
    done
}

# Called by git's completion for `git [opts] ledger ...`; it sets words and cword.
_git_ledger() {
    local i start=-1
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} == ledger ]]; then start=$i; break; fi
    done
    ((start < 0)) && return
    local rest=""
    for ((i = start + 1; i < ${#words[@]}; i++)); do
        rest+="$(printf '%q' "${words[i]}") "
    done
    # An empty word under the cursor must survive as one (click reads it as "").
    [[ -z ${words[cword]} ]] && rest+="''"
    __git_ledger_candidates "$rest" $((cword - start))
}

# `git-ledger <TAB>`, the console script called directly.
_git_ledger_direct() {
    local rest="" i
    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
        rest+="$(printf '%q' "${COMP_WORDS[i]}") "
    done
    [[ -z ${COMP_WORDS[COMP_CWORD]} ]] && rest+="''"
    __git_ledger_candidates "$rest" "$COMP_CWORD"
}

complete -o nosort -F _git_ledger_direct git-ledger 2>/dev/null ||
    complete -F _git_ledger_direct git-ledger
