"""The plan for people: rich tables for a terminal and GitHub-flavoured Markdown for a comment.

Per cluster three tables (four where endpoints are: each at its maximum): pools (capacity and what is promised on them), teams (each quota
entry: guaranteed, nominal, what it can borrow and hold) and ClusterQueues (which namespace
submits where). A table is laid out for the terminal's width: at its natural width when that
fits; else with shorter headers, wrapped cells and a `!` for a row's notes (their codes and
sentences are under the table anyway); and if it still does not fit, its columns are split into
blocks printed one under the other, each repeating the columns that name the row. `width=None`
(`plan --wide`) prints every table at its natural width, one line per row. Nothing is cut.
Nothing here prints: the face hands the renderables to a console.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rich import box
from rich.cells import cell_len
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from renderer.commands.plan import (
    ClusterPlan,
    EndpointRow,
    PlanReport,
    PlanWarning,
    PoolRow,
    QueueRow,
    TeamRow,
)
from renderer.model.capacity import gpus_text
from renderer.model.serving_quota import SURGE
from renderer.output.markdown_escape import cell as markdown_cell
from renderer.output.markdown_escape import code as markdown_code

ENDPOINT_LEGEND = (
    "An endpoint at its maximum holds (replicas.max + 1 surge replica for a rolling update) x "
    "units per replica, each replica admitted by Kueue as a Workload of its own; the team's "
    "endpoints on a pool together must fit its nominal quota there (borrowed quota is "
    "reclaimable: rule endpoint-quota)."
)

# --- shared cell text -------------------------------------------------------------------------


def _nodes(row: PoolRow) -> str:
    if row.nodes_min == row.nodes_max:
        return str(row.nodes_min)
    return f"{row.nodes_min}-{row.nodes_max}"


def _capacity(row: PoolRow) -> str:
    if row.capacity == row.capacity_max:
        return str(row.capacity)
    return f"{row.capacity} / {row.capacity_max}"


def _queue(row: PoolRow) -> str:
    return "-" if row.queue is None else f"{row.queue} ({row.limit:g}x)"


def _used(row: PoolRow) -> str:
    return "-" if row.used is None else f"{row.used:.2f}"


def _limit(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def _short_unit(row: PoolRow) -> str:
    """The unit in a few letters, for the text table (the resource column names the profile)."""
    if row.profile is not None:
        return "MIG instance"
    return {"time-slicing replica": "time-slice", "mps replica": "MPS share"}.get(
        row.unit, row.unit
    )


IN_GPUS = "nominal\nin GPUs"
"""The column of a nominal figure in physical GPUs: shown where some row's unit is not a whole
GPU (a time-slicing or MPS replica, a MIG instance), so `nominal: 2` on a pool of 4 replicas
per GPU reads as 0.5 GPUs."""


def _shared(rows: Sequence[PoolRow | TeamRow]) -> bool:
    """Some row counts units that are not whole GPUs."""
    return any(r.gpu_share != 1 for r in rows)


def _pool_counts(row: PoolRow) -> list[str]:
    """The figures a pool row shows in every format, nominal to used."""
    return [
        str(row.nominal),
        gpus_text(row.physical_nominal),
        str(row.guaranteed),
        str(row.lendable),
        str(row.free),
        str(row.headroom),
        _used(row),
    ]


def _team_counts(row: TeamRow) -> list[str]:
    """The figures a team row shows in every format, guaranteed to maximum."""
    return [
        str(row.guaranteed),
        str(row.nominal),
        gpus_text(row.physical_nominal),
        str(row.lendable),
        _limit(row.borrowing_limit),
        str(row.borrowable),
        str(row.reachable),
        str(row.maximum),
    ]


def _title(cluster: ClusterPlan) -> str:
    return f"{cluster.name} ({cluster.environment}, {cluster.scheduler})"


def _what(row: PoolRow | TeamRow) -> str:
    if isinstance(row, TeamRow):
        return f"{row.team} on {row.pool} {row.resource}"
    return f"{row.pool} {row.resource}"


def _queue_kind(cluster: ClusterPlan) -> str:
    return "ClusterQueue" if cluster.scheduler == "kueue" else "queue"


def _submits(cluster: ClusterPlan) -> str:
    """How a namespace's jobs reach its queue, for the ClusterQueue table's title."""
    if cluster.scheduler == "kueue":
        return "where each namespace's LocalQueue 'default' sends its jobs"
    return "jobs name the queue in spec.queue (the namespace's queue ConfigMap says which)"


def _registries(report: PlanReport) -> list[str]:
    """For each team asked about: the image prefixes its pods may use, or that every pod of
    the team is refused (no `spec.images`: the admission policy allows no image)."""
    return [
        f"images team {team} may run: {', '.join(prefixes)}"
        if prefixes
        else f"images team {team} may run: none: every pod is refused "
        f"(list its registries in spec.images of teams/{team}.yaml)"
        for team, prefixes in report.registries
    ]


def _focus(report: PlanReport) -> str | None:
    parts = [f"team {', '.join(report.teams)}"] if report.teams else []
    parts += [f"pool {', '.join(report.pools)}"] if report.pools else []
    return " on ".join(parts) if parts else None


POOL_LEGEND = (
    "capacity at min/max nodes; guaranteed = nominal - lendingLimit, lendable = lendingLimit "
    "(both all of nominal if unset), summed; free = capacity - nominal"
)
TEAM_LEGEND = (
    "guaranteed = nominal - lendingLimit (all of nominal if unset); borrowable = reachable - "
    "nominal, the smaller of borrowingLimit and what the cohort lends; maximum = nominal + "
    "borrowingLimit up to the pool's max (the max if borrowing is unlimited)"
)

# --- laying a table out for a width -----------------------------------------------------------

GAP = 2
"""Columns are two cells apart (one of padding, one of the box's blank divider)."""

BREAK_RESOURCE = 14
"""A resource name wider than this ("nvidia.com/mig-1g.10gb") is broken after its last `/`
when a table must narrow; "nvidia.com/gpu" stays whole."""


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    """The header at natural width; `\\n` starts a line."""
    narrow: str | None = None
    """A shorter header for a narrow terminal: whole words or an abbreviation, never a word
    cut in two; the table is followed by what each abbreviation stands for (`_abbreviations`)."""
    numeric: bool = False
    key: bool = False
    """Names the row: repeated in every block when a table is split."""
    group: int = 0
    """Columns of one group stay in one block where they fit."""
    wraps: bool = False
    """Cells may wrap at spaces."""
    resource: bool = False
    """Cells are resource names, broken after their last `/` when narrow."""
    notes: bool = False
    """The warning codes: a `!` when narrow."""


@dataclass(frozen=True, slots=True)
class _Grid:
    title: str
    columns: tuple[_Column, ...]
    rows: tuple[tuple[str | Text, ...], ...]


def _lines(cell: str | Text) -> list[str]:
    return (cell.plain if isinstance(cell, Text) else cell).split("\n")


def _least(cell: str | Text, *, wraps: bool) -> int:
    """The narrowest a cell can be shown without cutting: its longest word if it wraps."""
    parts = [w for line in _lines(cell) for w in (line.split() if wraps else [line])]
    return max((cell_len(p) for p in parts), default=0)


def _widths(grid: _Grid, *, narrow: bool) -> list[int]:
    widths = []
    for index, column in enumerate(grid.columns):
        header = column.narrow if narrow and column.narrow else column.header
        cells = [row[index] for row in grid.rows]
        widths.append(
            max(
                _least(header, wraps=narrow and column.wraps),
                *(_least(c, wraps=narrow and column.wraps) for c in cells),
            )
        )
    return widths


def _span(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _narrowed(grid: _Grid) -> _Grid:
    """The grid with broken resource names and a `!` instead of the notes' codes."""
    columns = tuple(
        replace(c, header="!", narrow="!", wraps=False) if c.notes else c for c in grid.columns
    )

    def cell(column: _Column, value: str | Text) -> str | Text:
        if column.notes:
            return Text("!" if _lines(value) != [""] else "", style="yellow")
        if column.resource and isinstance(value, str) and cell_len(value) > BREAK_RESOURCE:
            head, slash, tail = value.rpartition("/")
            return f"{head}{slash}\n{tail}" if slash else value
        return value

    rows = tuple(
        tuple(cell(c, v) for c, v in zip(grid.columns, row, strict=True)) for row in grid.rows
    )
    return _Grid(grid.title, columns, rows)


def _blocks(grid: _Grid, width: int) -> list[list[int]]:
    """Column indexes per block: the key columns, then whole groups while they fit (a group
    wider than a block on its own is split column by column)."""
    widths = _widths(grid, narrow=True)
    keys = [i for i, c in enumerate(grid.columns) if c.key]
    groups: dict[int, list[int]] = {}
    for i, column in enumerate(grid.columns):
        if not column.key:
            groups.setdefault(column.group, []).append(i)
    blocks: list[list[int]] = []
    current: list[int] = []

    def fits(extra: list[int]) -> bool:
        return _span([widths[i] for i in (*keys, *current, *extra)]) <= width

    for group in groups.values():
        if current and not fits(group):
            blocks.append(current)
            current = []
        if fits(group):
            current += group
            continue
        for i in group:
            if current and not fits([i]):
                blocks.append(current)
                current = []
            current.append(i)
    if current or not blocks:
        blocks.append(current)
    return [sorted([*keys, *block]) for block in blocks]


def _table(grid: _Grid, indexes: Sequence[int], title: str, *, narrow: bool, fold: bool) -> Table:
    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1, 0, 0),
    )
    for i in indexes:
        column = grid.columns[i]
        header = column.narrow if narrow and column.narrow else column.header
        table.add_column(
            header,
            min_width=_least(header, wraps=True),  # a header's words are never cut
            justify="right" if column.numeric else "left",
            no_wrap=not (column.wraps and narrow) and not fold,
            overflow="fold",
        )
    for row in grid.rows:
        table.add_row(*(_text(row[i]) for i in indexes))
    return table


def _text(cell: str | Text) -> Text:
    """A cell as rich shows it: plain strings as written, never read as markup."""
    return Text(cell) if isinstance(cell, str) else cell


def _cells(*values: str | Text) -> tuple[str | Text, ...]:
    return values


def _laid_out(grid: _Grid, width: int | None) -> list[RenderableType]:
    """The grid as one table when it fits `width` (None: any width), else narrowed (short
    headers, then a line saying what they stand for), else split; without a notes column where
    no row has a note."""
    notes = [i for i, c in enumerate(grid.columns) if c.notes]
    if notes and all(_lines(row[notes[0]]) == [""] for row in grid.rows):
        grid = _without(grid, grid.columns[notes[0]].header)
    everything = list(range(len(grid.columns)))
    if width is None or _span(_widths(grid, narrow=False)) <= width:
        return [_table(grid, everything, grid.title, narrow=False, fold=False)]
    grid = _narrowed(grid)
    legend = _abbreviations(grid)
    if _span(_widths(grid, narrow=True)) <= width:
        return [_table(grid, everything, grid.title, narrow=True, fold=False), *legend]
    tables: list[RenderableType] = []
    for number, indexes in enumerate(_blocks(grid, width)):
        too_wide = _span([_widths(grid, narrow=True)[i] for i in indexes]) > width
        title = grid.title if number == 0 else f"{grid.title} (continued)"
        tables.append(_table(grid, indexes, title, narrow=True, fold=too_wide))
    return [*tables, *legend]


def _abbreviations(grid: _Grid) -> list[Text]:
    """What the narrow headers stand for: `cap = capacity min/max, nom = nominal, ...`."""
    said = [
        f"{' '.join(c.narrow.split())} = {' '.join(c.header.split())}"
        for c in grid.columns
        if c.narrow and c.narrow != "!" and c.narrow.split() != c.header.split()
    ]
    return [Text("; ".join(said), style="dim")] if said else []


# --- the grids --------------------------------------------------------------------------------


def _notes(warnings: tuple[PlanWarning, ...]) -> Text:
    return Text(", ".join(w.code for w in warnings), style="yellow")


def _pool_grid(cluster: ClusterPlan, *, one_pool: bool) -> _Grid:
    columns = (
        _Column("pool", key=True),
        _Column("resource", key=True, resource=True),
        _Column("unit", group=1, wraps=True),
        _Column("nodes", numeric=True, group=1),
        _Column("capacity\nmin/max", "cap", numeric=True, group=1),
        _Column("queue\n(limit)", group=1, wraps=True),
        _Column("nominal", "nom", numeric=True, group=2),
        _Column(IN_GPUS, "GPUs", numeric=True, group=2),
        _Column("guaranteed", "guar", numeric=True, group=2),
        _Column("lendable", "lend", numeric=True, group=2),
        _Column("free", numeric=True, group=2),
        _Column("headroom\nto limit", "room", numeric=True, group=2),
        _Column("used", numeric=True, group=2),
        _Column("notes", group=3, wraps=True, notes=True),
    )
    rows = tuple(
        _cells(
            r.pool,
            r.resource,
            _short_unit(r),
            _nodes(r),
            _capacity(r),
            _queue(r),
            *_pool_counts(r),
            _notes(r.warnings),
        )
        for r in cluster.pools
    )
    grid = _Grid("pools: counts in each row's unit", columns, rows)
    grid = grid if _shared(cluster.pools) else _without(grid, IN_GPUS)
    queues = {_queue(r) for r in cluster.pools}
    if len(queues) == 1:  # one queue for all: said once, in the title
        grid = _without(grid, "queue\n(limit)")
        grid = replace(grid, title=f"pools: queue {queues.pop()}; counts in each row's unit")
    return _without(grid, "pool" if one_pool else None)


def _team_grid(cluster: ClusterPlan, *, one_team: bool, one_pool: bool) -> _Grid:
    columns = (
        _Column("team", key=True),
        _Column("pool", key=True),
        _Column("resource", key=True, resource=True),
        _Column("guaranteed", "guar", numeric=True, group=1),
        _Column("nominal", "nom", numeric=True, group=1),
        _Column(IN_GPUS, "GPUs", numeric=True, group=1),
        _Column("lendable", "lend", numeric=True, group=1),
        _Column("borrowing\nlimit", "borrow\nlimit", numeric=True, group=2),
        _Column("borrowable", "can\nborrow", numeric=True, group=2),
        _Column("reachable\n(cohort lends)", "reach", numeric=True, group=2),
        _Column("maximum\nwith borrowing", "max", numeric=True, group=2),
        _Column("notes", group=3, wraps=True, notes=True),
    )
    rows = tuple(
        _cells(t.team, t.pool, t.resource, *_team_counts(t), _notes(t.warnings))
        for t in cluster.teams
    )
    grid = _Grid("teams: counts in the unit of the pool's row", columns, rows)
    grid = grid if _shared(cluster.teams) else _without(grid, IN_GPUS)
    grid = _without(grid, "team" if one_team else None)
    return _without(grid, "pool" if one_pool else None)


def _queue_grid(cluster: ClusterPlan, *, one_team: bool) -> _Grid:
    kind = _queue_kind(cluster)
    columns = (
        _Column("team", key=True),
        _Column("namespace", key=True),
        _Column(kind, group=1),
        _Column("purpose", group=1),
        _Column("its purpose's pools", group=2, wraps=True),
        _Column("shared pools", group=2, wraps=True),
    )
    rows = tuple(
        _cells(q.team, ns, q.name, q.purpose, ", ".join(q.pools) or "-", ", ".join(q.shared) or "-")
        for q in cluster.queues
        for ns in q.namespaces
    )
    grid = _Grid(f"{kind}s: {_submits(cluster)}", columns, rows)
    return _without(grid, "team" if one_team else None)


def _at_max(row: EndpointRow) -> str:
    """`(8 + 1) x 1 = 9`: the endpoint's maximum, its surge replica and its units per replica."""
    return f"({row.max_replicas} + {SURGE}) x {row.gpus} = {row.at_max}"


def _of_quota(row: EndpointRow) -> str:
    """`9 of 32`, and `over` where the team's endpoints there outgrow its nominal quota."""
    return f"{row.team_total} of {row.nominal}" + ("" if row.fits else " over")


def _endpoint_grid(cluster: ClusterPlan, *, one_team: bool, one_pool: bool) -> _Grid:
    columns = (
        _Column("team", key=True),
        _Column("namespace", key=True),
        _Column("endpoint", key=True),
        _Column("pool", group=1),
        _Column("resource", group=1, resource=True),
        _Column("replicas", numeric=True, group=2),
        _Column("at max\n(max + surge) x per replica", "at max", group=2),
        _Column("team's endpoints\nat max, of nominal", "of\nnominal", group=2),
    )
    rows = tuple(
        _cells(
            e.team,
            e.namespace,
            e.endpoint,
            e.pool,
            e.resource,
            f"{e.min_replicas}..{e.max_replicas}",
            _at_max(e),
            _of_quota(e),
        )
        for e in cluster.endpoints
    )
    grid = _Grid("endpoints at their maximum, in the unit of the pool's row", columns, rows)
    grid = _without(grid, "team" if one_team else None)
    return _without(grid, "pool" if one_pool else None)


def _without(grid: _Grid, header: str | None) -> _Grid:
    """The grid without the column of that header (one the focus makes the same on every row)."""
    if header is None:
        return grid
    keep = [i for i, c in enumerate(grid.columns) if c.header != header]
    return _Grid(
        grid.title,
        tuple(grid.columns[i] for i in keep),
        tuple(tuple(row[i] for i in keep) for row in grid.rows),
    )


def _explained(rows: tuple[PoolRow, ...] | tuple[TeamRow, ...]) -> list[RenderableType]:
    return [
        Text(f"  ! {_what(row)}: {w.code}: {w.message}", style="yellow")
        for row in rows
        for w in row.warnings
    ]


def plan_tables(report: PlanReport, width: int | None = None) -> list[RenderableType]:
    """For people: per cluster a pool, a team and a ClusterQueue table laid out for `width`
    columns (None: each at its natural width); a warning's code sits in its row, its sentence
    right under the table."""
    out: list[RenderableType] = []
    focus = _focus(report)
    one_team, one_pool = len(report.teams) == 1, len(report.pools) == 1
    if focus is not None:
        out.append(Text(f"plan for {focus}", style="bold"))
        for line in _registries(report):
            out.append(Text(line, style="" if "every pod is refused" not in line else "red"))
        if not report.clusters:
            out.append(Text(f"nothing: no quota or namespace of {focus} on these clusters"))
    for cluster in report.clusters:
        out.append(Text(f"cluster {_title(cluster)}", style="bold underline"))
        if cluster.pools:
            out += _laid_out(_pool_grid(cluster, one_pool=one_pool), width)
            out += [*_explained(cluster.pools), Text(POOL_LEGEND, style="dim"), Text("")]
        if cluster.teams:
            out += _laid_out(_team_grid(cluster, one_team=one_team, one_pool=one_pool), width)
            out += [*_explained(cluster.teams), Text(TEAM_LEGEND, style="dim"), Text("")]
        elif focus is not None:
            out += [Text(f"no quota entry of {focus} here", style="yellow"), Text("")]
        if cluster.queues:
            out += [*_laid_out(_queue_grid(cluster, one_team=one_team), width), Text("")]
        if cluster.endpoints:
            grid = _endpoint_grid(cluster, one_team=one_team, one_pool=one_pool)
            out += [*_laid_out(grid, width), Text(ENDPOINT_LEGEND, style="dim"), Text("")]
    return out


# --- Markdown ---------------------------------------------------------------------------------


def _md_warnings(warnings: tuple[PlanWarning, ...]) -> str:
    return "<br>".join(
        f"⚠️ **{markdown_cell(w.code)}**: {markdown_cell(w.message)}" for w in warnings
    )


def _md_table(
    columns: tuple[tuple[str, bool], ...], rows: list[list[str]], drop: str | None = None
) -> list[str]:
    """The table; without the column headed `drop` when one is named."""
    keep = [i for i, (header, _) in enumerate(columns) if header != drop]
    columns = tuple(columns[i] for i in keep)
    rows = [[row[i] for i in keep] for row in rows]
    lines = ["| " + " | ".join(header for header, _ in columns) + " |"]
    lines.append("|" + "|".join("---:" if numeric else "---" for _, numeric in columns) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _md_pools(pools: tuple[PoolRow, ...]) -> list[str]:
    return _md_table(
        (
            ("pool", False),
            ("resource", False),
            ("unit", False),
            ("nodes", True),
            ("capacity (min / max nodes)", True),
            ("queue (limit)", False),
            ("nominal", True),
            ("nominal in GPUs", True),
            ("guaranteed", True),
            ("lendable", True),
            ("free", True),
            ("headroom to limit", True),
            ("used (x capacity)", True),
            ("warnings", False),
        ),
        [
            [
                markdown_cell(r.pool),
                markdown_code(r.resource, table=True),
                markdown_cell(r.unit),
                _nodes(r),
                _capacity(r),
                markdown_cell(_queue(r)),
                *_pool_counts(r),
                _md_warnings(r.warnings),
            ]
            for r in pools
        ],
        drop=None if _shared(pools) else "nominal in GPUs",
    )


def _md_teams(teams: tuple[TeamRow, ...]) -> list[str]:
    return _md_table(
        (
            ("team", False),
            ("pool", False),
            ("resource", False),
            ("team Cohort", False),
            ("ClusterQueues", False),
            ("guaranteed", True),
            ("nominal", True),
            ("nominal in GPUs", True),
            ("lendable", True),
            ("borrowing limit", True),
            ("borrowable", True),
            ("reachable (cohort lends)", True),
            ("maximum with borrowing", True),
            ("warnings", False),
        ),
        [
            [
                markdown_cell(t.team),
                markdown_cell(t.pool),
                markdown_code(t.resource, table=True),
                markdown_cell(t.cohort or "-"),
                markdown_cell(", ".join(t.cluster_queues) or "-"),
                *_team_counts(t),
                _md_warnings(t.warnings),
            ]
            for t in teams
        ],
        drop=None if _shared(teams) else "nominal in GPUs",
    )


def _md_queues(cluster: ClusterPlan) -> list[str]:
    def local(q: QueueRow) -> str:
        return "-" if q.local_queue is None else markdown_code(q.local_queue, table=True)

    return _md_table(
        (
            ("team", False),
            ("namespaces", False),
            ("LocalQueue", False),
            (_queue_kind(cluster), False),
            ("purpose", False),
            ("its purpose's pools", False),
            ("shared pools", False),
        ),
        [
            [
                markdown_cell(q.team),
                markdown_cell(", ".join(q.namespaces)),
                local(q),
                markdown_cell(q.name),
                markdown_cell(q.purpose),
                markdown_cell(", ".join(q.pools) or "-"),
                markdown_cell(", ".join(q.shared) or "-"),
            ]
            for q in cluster.queues
        ],
    )


def _md_endpoints(cluster: ClusterPlan) -> list[str]:
    return _md_table(
        (
            ("team", False),
            ("namespace", False),
            ("endpoint", False),
            ("pool", False),
            ("resource", False),
            ("replicas", True),
            ("at max: (max + surge) x per replica", True),
            ("team's endpoints at max, of nominal", True),
        ),
        [
            [
                markdown_cell(e.team),
                markdown_cell(e.namespace),
                markdown_cell(e.endpoint),
                markdown_cell(e.pool),
                markdown_code(e.resource, table=True),
                f"{e.min_replicas}..{e.max_replicas}",
                _at_max(e),
                _of_quota(e),
            ]
            for e in cluster.endpoints
        ],
    )


def plan_markdown(report: PlanReport) -> str:
    """The plan as GitHub-flavoured Markdown, for a pull-request comment."""
    focus = _focus(report)
    lines = ["# GPU capacity plan" + (f" for {markdown_cell(focus)}" if focus else ""), ""]
    if focus is not None and not report.clusters:
        lines += [f"Nothing: no quota or namespace of {markdown_cell(focus)} here.", ""]
    registries = [f"- {markdown_cell(line)}" for line in _registries(report)]
    lines += [*registries, ""] if registries else []
    for cluster in report.clusters:
        lines += [f"## {markdown_cell(_title(cluster))}", ""]
        if cluster.pools:
            lines += ["### Pools", "", *_md_pools(cluster.pools), ""]
        if cluster.teams:
            lines += ["### Teams", "", *_md_teams(cluster.teams), ""]
        if cluster.queues:
            kind = _queue_kind(cluster)
            submits = markdown_cell(_submits(cluster))
            lines += [f"### {kind}s", "", f"{submits[:1].upper()}{submits[1:]}.", ""]
            lines += [*_md_queues(cluster), ""]
        if cluster.endpoints:
            lines += ["### Endpoints at their maximum", "", f"{ENDPOINT_LEGEND}", ""]
            lines += [*_md_endpoints(cluster), ""]
    lines += [
        "Counts are in each pool row's unit: GPUs, MIG instances or time-slicing replicas.",
        "",
    ]
    lines += [f"- **{markdown_cell(term)}**: {markdown_cell(text)}" for term, text in report.legend]
    return "\n".join(lines) + "\n"
