"""git-ledger: a git-native ledger for improvement loops where commits are state."""

__version__ = "0.2.0"
