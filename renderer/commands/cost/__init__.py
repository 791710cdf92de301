"""`gpuplane cost USAGE`: the guide's effective cost per team, pool and accepted unit.

`usage` reads the documented CSV, `prometheus` the Prometheus HTTP API's JSON of the export query
(`query`); `model` applies the pools' rates and the guide's formula; `forms` prints text,
Markdown and JSON; `chart` draws the cost per accepted unit as SVG or PNG. `rules` documents the
findings every reader and the arithmetic report. See docs/cost.md.
"""
