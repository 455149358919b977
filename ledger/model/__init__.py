"""The file formats: ledger.toml, entry files and step ids (pydantic at the edges)."""
