# The hooks git-ledger answers (``git ledger hooks run STAGE``): the client's, then the
# server's. Standard library only: the command line imports this on every call.
STAGES = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "pre-push",
    "pre-receive",
    "update",
    "post-receive",
)
