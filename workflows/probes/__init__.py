"""Acceptance probes: each measures one thing on the pool it runs on and writes one JSON result.

Every result shares one envelope (schemas/results/result.schema.json):
`{"schemaVersion": 1, "probe", "cluster", "pool", "startedAt", "durationSeconds", "ok", "error",
"environment": {labels…}, "metrics": {…}}`; `metrics` is described per probe by
schemas/results/<probe>.schema.json. One module per probe, each with a `run_<probe>(...)` function
that returns the result as a dict; `python -m workflows.probes <probe> --out PATH` runs one and
writes it (workflows/probes/cli.py). This package imports no torch: the modules that need it do.
Importing the package itself imports nothing (PROBES and SCHEMA_VERSION load on first use), so
`python -m workflows.probes preflight` runs on any Python 3 (workflows/probes/preflight.py).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PROBES", "SCHEMA_VERSION"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import envelope

        return getattr(envelope, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
