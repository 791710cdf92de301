"""Acceptance probes: each measures one thing on the pool it runs on and writes one JSON result.

Every result shares one envelope (schemas/results/result.schema.json):
`{"schemaVersion": 1, "probe", "cluster", "pool", "startedAt", "durationSeconds", "ok", "error",
"environment": {labels…}, "metrics": {…}}`; `metrics` is described per probe by
schemas/results/<probe>.schema.json.
"""
