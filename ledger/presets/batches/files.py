"""The batch loop's files by name, apart from the models that read them, so that what
only names them (``status`` and ``next`` answered from their caches) imports neither
the store nor pydantic."""

REVISION_LOG = "revision_log.jsonl"  # in the ledger directory: the generated view
JOURNAL = "trace-lines"  # under .git/ledger/: digests of the trace lines the verbs wrote
