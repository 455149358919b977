"""One verb, one module: each exposes a typed ``run(...)`` returning an exit code."""
