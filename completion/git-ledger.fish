function _git_ledger_completion;
    set -l response (env _GIT_LEDGER_COMPLETE=fish_complete COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -t) git-ledger);

    for completion in $response;
        set -l metadata (string split "," $completion);

        if test $metadata[1] = "dir";
            __fish_complete_directories $metadata[2];
        else if test $metadata[1] = "file";
            __fish_complete_path $metadata[2];
        else if test $metadata[1] = "plain";
            echo $metadata[2];
        end;
    end;
end;

complete --no-files --command git-ledger --arguments "(_git_ledger_completion)";

# `git ledger <TAB>`: fish's git completion lists git-ledger as a command but does not
# hand its arguments on, so complete them here from the words after `ledger`.
function __git_ledger_via_git
    set -l words (commandline -opc)
    set -l at (contains -i -- ledger $words)
    or return
    set -l rest
    if test (count $words) -gt $at
        set rest $words[(math $at + 1)..-1]
    end
    complete -C "git-ledger $rest "(commandline -ct)
end

complete --command git --no-files --condition '__fish_seen_subcommand_from ledger' --arguments '(__git_ledger_via_git)'
