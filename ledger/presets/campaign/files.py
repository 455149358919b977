"""The campaign's files in the ledger directory, by name.

Apart from :mod:`ledger.presets.campaign.loop` so that what only names them (the
machine-problem checks of ``status`` and ``next``, the hooks' fast questions) does
not import the entries' models, the store and pydantic with them.
"""

VERDICTS = ("base", "promoted", "rejected", "held")
JSONL = "records/candidates.jsonl"
CSV = "benchmark.csv"
MISTAKES = "mistakes.md"
CONTRACT = "contract.md"
REPORT = "latest-report.md"
OWNER = "owner.json"
DELIVERED = "delivered.json"
