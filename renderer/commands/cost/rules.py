"""The findings of `gpuplane cost`: what each rule id means and how to satisfy it.

One module, below the readers and the arithmetic, so each of them names its rules without
importing the other (`renderer.cli.loading.load_every_rule` imports it for `explain`).
"""

from __future__ import annotations

from typing import Final

from renderer.findings.rules import document_rule

MAX_USAGE_BYTES: Final = 8 * 1024 * 1024
"""A usage export is a few kilobytes to a few megabytes (one row or series per team, pool and
term); a file over 8 MiB is refused before it is read."""

MAX_ROWS: Final = 100_000
"""More CSV rows or JSON series than this are refused: no platform has that many teams x pools."""

MAX_DEPTH: Final = 16
"""The Prometheus API's JSON nests five levels; deeper JSON is refused before it is parsed."""

STAGE: Final = "cost"

for _rule, _doc in {
    "cost-unreadable": f"""A usage file for `gpuplane cost` cannot be read.

It is not a regular file, cannot be opened, is larger than {MAX_USAGE_BYTES // (1024 * 1024)} MiB,
holds more than {MAX_ROWS:,} rows or series, or is not UTF-8 text. A usage export is small: one
row (CSV) or three series (JSON) per team and pool.

To satisfy it: pass the CSV described in docs/cost.md, or the JSON that the Prometheus HTTP API
returns for the query `gpuplane cost --query WINDOW` prints, saved as UTF-8.""",
    "cost-csv-header": """The header of a usage CSV names an unknown or repeated column.

The first line that is neither blank nor a `#` comment is the header: `team`, then any of
`pool`, `allocated_gpu_hours`, `used_gpu_hours`, `failed_gpu_hours`, `accepted_units`, `network`,
`storage`, `support`, `operations`, each at most once. A misspelt column would otherwise be
silently dropped from the cost.

To satisfy it: spell the columns as docs/cost.md lists them (`team,pool,allocated_gpu_hours,...`),
once each, on the first line.""",
    "cost-csv-row": """A row of a usage CSV cannot be read as a GPU-hours row or a team row.

A row with a `pool` gives the team's GPU-hours on that pool (`allocated_gpu_hours` and
`used_gpu_hours` required, `failed_gpu_hours` empty for none) and nothing else; a row without
one gives the team's other terms (`accepted_units`, `network`, `storage`, `support`,
`operations`). Team `*` is the platform-wide row: money only, shared among the teams. A row
with more or fewer cells than the header, an unclosed quote or a missing team is refused.

To satisfy it: put GPU-hours and team terms on separate rows as docs/cost.md shows (a team
row leaves `pool` empty), with one cell per header column.""",
    "cost-number": """A figure in a usage file is not a finite, non-negative number.

GPU-hours, accepted units and money amounts are plain decimal numbers (`12.5`, `3e2`), never
negative, never NaN or infinite. Prometheus writes `NaN` for a sample that divided by zero:
such a sample says nothing about what was spent.

To satisfy it: write the figure as a decimal number without currency signs or thousands
separators; for a `NaN` or `Inf` sample, fix the series it comes from and export again.""",
    "cost-duplicate": """A usage export gives the same figure twice.

Each team has at most one row of terms, each team and pool at most one GPU-hours row, and in
the JSON each team, pool and term at most one series. Two would be added or one dropped,
and either way the cost would be wrong without a word.

To satisfy it: merge the rows into one, or export the query again (its `sum by` gives one
series per team, pool and term).""",
    "cost-json": """A usage JSON is not a Prometheus HTTP API query response this command can read.

It must be one JSON object as `/api/v1/query` returns it: `status` `success`, `data.resultType`
`vector` (or `matrix`, whose series must all end at the same time: the last sample of each is
the window ending then), and series whose `metric` carries `term` (allocated_gpu_hours,
used_gpu_hours or failed_gpu_hours), `team` and `pool`, with the value as a string. No
duplicate keys, NaN literals, or nesting deeper than the API's.

To satisfy it: save the response of the query that `gpuplane cost --query WINDOW` prints, as
the curl command in docs/cost.md does.""",
    "cost-unknown-name": """A usage export names a team or pool that the platform does not declare.

Rates come from the pool's file and accepted units from the team's; a name not declared has
neither, so its cost cannot be computed (and a renamed team would silently lose its spend).

To satisfy it: correct the name in the usage export, or declare the team in `teams/` or the
pool in `pools/`.""",
    "cost-wrong-cluster": """A usage series puts a pool on a cluster other than the pool file's.

Every series of the export carries the cluster its Prometheus runs in; a pool of another
cluster is a mix-up of exports or a pool file that moved.

To satisfy it: export each cluster's usage from that cluster's Prometheus, or correct
`spec.cluster` in the pool's file.""",
    "cost-hours": """A team's used and failed GPU-hours on a pool exceed its allocated GPU-hours.

Used GPU-hours are the busy part of the allocation held by runs that did not fail, failed
GPU-hours the allocation held by runs that failed: together they cannot exceed what was
allocated, or the idle cost would be negative.

To satisfy it: export the three figures from the same window and the same recording rules
(`gpuplane cost --query WINDOW`), or correct the CSV row.""",
    "cost-mixed-currency": """The pools a usage export involves price GPU-hours in more than one currency.

The guide's formula adds every term into one figure; amounts in two currencies cannot be
added without an exchange rate the platform does not declare.

To satisfy it: set one `spec.cost.currency` on every pool, or report each currency's pools in
separate usage exports.""",
    "cost-unshared": """A platform-wide row (team `*`) has money to share but no team allocated a GPU-hour.

The platform-wide terms are shared among teams by their share of allocated GPU-hours; with
none allocated there is no share to give.

To satisfy it: add the teams' GPU-hours to the export, or put the amounts on the teams' own
rows instead of the `*` row.""",
    "cost-empty": """A usage export holds neither GPU-hours nor team terms.

An empty file or an empty query result (a window before the recording rules ran, or a
Prometheus without them) would print a cost of zero.

To satisfy it: check that the cluster's Prometheus records the gpuplane series
(`gpuplane:pod:gpus_allocated`, docs/cost.md) and export a window in which they exist.""",
}.items():
    document_rule(_rule, STAGE, _doc)
