"""The report as Markdown for one sticky pull-request comment, cut to GitHub's size limit.

Input text is quoted in the comment: every value goes through the one Markdown escaper
(`renderer.output.markdown_escape`); the layout and the truncation that must never break a table or
leave a `<details>` open live here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from renderer.commands.diff.findings import (
    DERIVED,
    OWN,
    RISKS,
    ClusterHeading,
    DiffReport,
    Finding,
    PoolTotals,
    QuotaChange,
    Risk,
    Side,
    SimulatedWaits,
    plural,
)
from renderer.commands.diff.waits import CODE as WAIT_CODE
from renderer.commands.diff.waits import bound_text
from renderer.commands.simulate.compare_forms import absent_lines, tables
from renderer.commands.simulate.forms import markdown_tables
from renderer.model.capacity import gpus_text
from renderer.output import markdown_escape

MARKER = "<!-- gpuplane-diff -->"
"""First line of the Markdown: lets a CI job find and update its one sticky comment."""

MAX_CHARS = 60000
"""Default size limit of the Markdown (GitHub refuses comments over 65,536 characters)."""


DETAILS_LABELS = {
    "namespace-removed": "what Argo CD prunes",
    "team-removed": "what Argo CD prunes",
}
"""The summary line of a finding's collapsed details, by code ("what changed" otherwise)."""

_QUOTA_CODES = frozenset({"gpu-quota", "gpu-affected"})


_BADGE = {Risk.HIGH: "🔴 high", Risk.MEDIUM: "🟠 medium", Risk.LOW: "⚪ low"}


def _text(value: object) -> str:
    return markdown_escape.cell(value)


def _code(value: object) -> str:
    return markdown_escape.code(value, table=True)


_html = markdown_escape.html


def _verdict(report: DiffReport) -> str:
    high, medium, low = (report.count(r) for r in RISKS)
    lead = f"**{plural(high, 'high-risk change')}**" if high else "**No high-risk changes**"
    return f"{lead} · {medium} medium · {low} low"


def _side_text(side: Side) -> str:
    commit = f" ({_code(side.commit[:12])})" if side.commit else ""
    return f"{_code(side.label)}{commit}"


def _table(
    header: Sequence[str], align: Sequence[bool], rows: Iterable[Sequence[str]]
) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if right else "---" for right in align) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _details(summary: str, items: Iterable[str]) -> list[str]:
    return [f"<details><summary>{_html(summary)}</summary>", "", *items, "", "</details>", ""]


def _arrow(before: object, after: object, absent: str = "-") -> str:
    old = absent if before is _ABSENT else _limit_cell(before)
    new = absent if after is _ABSENT else _limit_cell(after)
    return new if old == new else f"{old} → {new}"


_ABSENT = object()


def _limit_cell(value: object) -> str:
    return "?" if value is None else str(value)


def _quota_cell(change: QuotaChange, name: str) -> str:
    before = _ABSENT if change.before is None else getattr(change.before, name)
    after = _ABSENT if change.after is None else getattr(change.after, name)
    if name == "borrowing_limit":
        before = "unlimited" if before is None else before
        after = "unlimited" if after is None else after
    elif name == "lending_limit":
        before = "unset" if before is None else before
        after = "unset" if after is None else after
    return _arrow(before, after)


QUOTA_LEGEND = (
    "Counts in the pool's unit (GPUs, MIG instances or time-slicing replicas), before → after; "
    "a nominal in replicas or MIG instances is also given in physical GPUs, in brackets. "
    "guaranteed = nominal - lendingLimit (all of nominal when unset); maximum = nominal + "
    "borrowingLimit, capped by the pool; reachable = what Kueue can admit for the team on an "
    "empty cluster, given what the cohort lends. *affected*: the team's own quota is unchanged; "
    "another team's quota or the pool moved its figures."
)


def _nominal_cell(change: QuotaChange) -> str:
    """The nominal before → after, and where a unit is not a whole GPU (a time-slicing or MPS
    replica, a MIG instance) the same in physical GPUs: `2 → 4 (0.5 → 1 GPUs)`."""
    cell = _quota_cell(change, "nominal")
    sides = [side for side in (change.before, change.after) if side is not None]
    if all(side.gpu_share == 1 for side in sides):
        return cell
    physical = [
        "-" if side is None else gpus_text(_times(side.nominal, side.gpu_share))
        for side in (change.before, change.after)
    ]
    shown = physical[1] if physical[0] == physical[1] else " → ".join(physical)
    return f"{cell} ({shown} GPUs)"


def _times(units: int, share: Fraction | None) -> Fraction | None:
    return None if share is None else units * share


def _quota_lines(findings: Sequence[Finding]) -> list[str]:
    rows = []
    for f in findings:
        assert f.quota is not None
        team = _text(f.team or "") + (" *(affected)*" if f.code == "gpu-affected" else "")
        pool = _text(f.quota.pool) + (f" {_code(f.quota.profile)}" if f.quota.profile else "")
        rows.append(
            [
                team,
                pool,
                _code(f.quota.resource) if f.quota.resource else "?",
                _nominal_cell(f.quota),
                *(_quota_cell(f.quota, n) for n in (*OWN[1:], *DERIVED)),
                _BADGE[f.risk],
            ]
        )
    header = (
        "team",
        "pool",
        "resource",
        "nominal",
        "borrowing limit",
        "lending limit",
        "guaranteed",
        "maximum",
        "reachable",
        "risk",
    )
    align = (False, False, False, True, True, True, True, True, True, False)
    return ["#### GPU quota", "", *_table(header, align, rows), "", QUOTA_LEGEND, ""]


def _pool_total_lines(totals: Sequence[PoolTotals]) -> list[str]:
    rows = []
    for t in totals:
        cells = []
        for name in ("capacity", "nominal", "guaranteed", "lendable"):
            before = _ABSENT if t.before is None else getattr(t.before, name)
            after = _ABSENT if t.after is None else getattr(t.after, name)
            cells.append(_arrow(before, after))
        before_free = _ABSENT if t.before is None else t.before.capacity - t.before.nominal
        after_free = _ABSENT if t.after is None else t.after.capacity - t.after.nominal
        cells.append(_arrow(before_free, after_free))
        rows.append([_text(t.pool), _code(t.resource), *cells])
    header = ("pool", "resource", "capacity", "nominal", "guaranteed", "lendable", "free")
    align = (False, False, True, True, True, True, True)
    return ["Pool totals:", "", *_table(header, align, rows), ""]


def _finding_lines(findings: Sequence[Finding], *, located: bool = False) -> list[str]:
    """A table of findings; `located`: with the line of the head's file each is about."""
    rows = [[_BADGE[f.risk], _text(f.title), _text(f.summary)] for f in findings]
    header: tuple[str, ...] = ("risk", "change", "what")
    if located:
        header += ("line",)
        for row, f in zip(rows, findings, strict=True):
            row.append(_code(f.at) if f.at else "-")
    lines = [*_table(header, (False,) * len(header), rows), ""]
    for f in findings:
        if f.details:
            label = DETAILS_LABELS.get(f.code, "what changed")
            lines += _details(
                f"{f.subject}: {label} ({len(f.details)})",
                [f"- {_text(d)}" for d in f.details],
            )
    return lines


def _object_lines(findings: Sequence[Finding]) -> list[str]:
    rows = []
    files: list[str] = []
    for f in findings:
        assert f.objects is not None
        o = f.objects
        rows.append(
            [
                _code(o.layer),
                str(len(o.added)),
                str(len(o.changed)),
                str(len(o.deleted)),
                _BADGE[f.risk],
            ]
        )
        files += [f"- deleted {_code(p)}" for p in o.deleted]
        files += [f"- changed {_code(p)}" for p in o.changed]
        files += [f"- added {_code(p)}" for p in o.added]
    header = ("layer", "added", "changed", "deleted", "risk")
    lines = ["#### Rendered objects", ""]
    lines += _table(header, (False, True, True, True, False), rows)
    lines.append("")
    lines += _details(f"{plural(len(files), 'file')}", files)
    return lines


def _cluster_title(heading: ClusterHeading | None, name: str) -> str:
    if heading is None:
        return f"### {_code(name)}"
    status = {"added": " · new", "removed": " · removed"}.get(heading.status, "")
    return f"### {_code(name)} ({_text(heading.environment)}, {_text(heading.scheduler)}){status}"


def _wait_lines(report: DiffReport, waits: SimulatedWaits) -> list[str]:
    """`--trace`: the teams' waits and the pools' use, base → head, each team's risk."""
    lines = ["### Simulated waits", ""]
    comparison = waits.comparison
    if comparison is None:
        return [*lines, _text(waits.note or "not simulated"), ""]
    lines += [
        f"{_code(comparison.trace)} ({plural(comparison.workloads, 'workload')}) replayed on "
        "both revisions with Kueue's admission (`gpuplane simulate`). High: a team's p90 wait "
        f"grows by {_text(bound_text(waits.bound))} (`simulate.p90WaitGrowth` at the base), or "
        "workloads the base admits are never admitted.",
        "",
    ]
    risks = {f.team: _BADGE[f.risk] for f in report.findings if f.code == WAIT_CODE}
    (team_heading, team_header, team_rows), pools = tables(comparison)
    rows = [[*row, risks.get(row[0], "-")] for row in team_rows]
    lines += markdown_tables([(team_heading, (*team_header, "risk"), rows), pools], "####")
    lines += [f"- {_text(line)}" for line in absent_lines(comparison)]
    found = [f for f in report.findings if f.code == WAIT_CODE and f.details]
    for f in found:
        lines += _details(f"{f.subject}: what changed ({len(f.details)})",
                          [f"- {_text(d)}" for d in f.details])  # fmt: skip
    return lines


def _full_markdown(report: DiffReport) -> list[str]:
    lines = [MARKER]
    if not report.findings:
        lines += [
            f"**No changes**: the {_text(report.head.label)} renders the same platform as "
            f"{_side_text(report.base)}.",
            "",
        ]
        if report.waits is not None:
            lines += _wait_lines(report, report.waits)
        return lines
    lines += [_verdict(report), ""]
    lines.append(
        f"`gpuplane diff`: the {_text(report.head.label)} against {_side_text(report.base)}, "
        "grouped by cluster and team."
    )
    lines.append("")
    if not report.base.valid:
        lines += [
            f"> ⚠️ The base does not validate ({plural(report.base.errors, 'error')}): files "
            "that fail there count as added, and rendered objects are not compared.",
            "",
        ]
    rows = []
    for risk in RISKS:
        kinds: dict[str, int] = {}
        for f in report.findings:
            if f.risk is risk:
                kinds[f.title] = kinds.get(f.title, 0) + 1
        what = ", ".join(
            f"{title} x{n}" if n > 1 else title
            for title, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        rows.append([_BADGE[risk], str(report.count(risk)), _text(what) or "-"])
    lines += _table(("risk", "changes", "what"), (False, True, False), rows)
    lines.append("")
    if report.waits is not None:
        lines += _wait_lines(report, report.waits)
    headings = {c.name: c for c in report.clusters}
    groups: dict[str | None, list[Finding]] = {}
    for f in report.findings:
        if f.code != WAIT_CODE:  # in the section of their own
            groups.setdefault(f.cluster, []).append(f)
    if None in groups:
        lines += ["### Platform-wide", "", *_finding_lines(groups.pop(None))]
    for cluster in sorted(c for c in groups if c is not None):
        found = groups[cluster]
        lines += [_cluster_title(headings.get(cluster), cluster), ""]
        own = [f for f in found if f.team is None and f.code != "objects"]
        if own:
            lines += _finding_lines(own)
        quota = [f for f in found if f.code in _QUOTA_CODES]
        if quota:
            lines += _quota_lines(sorted(quota, key=lambda f: (f.team or "", f.subject)))
        totals = [t for t in report.pools if t.cluster == cluster]
        if totals:
            lines += _pool_total_lines(totals)
        teams = sorted({f.team for f in found if f.team is not None and f.code not in _QUOTA_CODES})
        for team in teams:
            lines += [f"#### Team {_code(team)}", ""]
            lines += _finding_lines(
                [f for f in found if f.team == team and f.code not in _QUOTA_CODES], located=True
            )
        objects = [f for f in found if f.code == "objects"]
        if objects:
            lines += _object_lines(objects)
    if not report.objects_compared:
        lines += ["_Rendered objects were not compared: the base does not render._", ""]
    return lines


def diff_markdown(report: DiffReport, *, max_chars: int = MAX_CHARS) -> str:
    """GitHub-flavoured Markdown for one sticky pull-request comment, at most `max_chars` long.

    The first line is a hidden marker (MARKER) for the CI job that updates the comment. When the
    report is longer, it is cut at a line boundary outside any table header, every `<details>`
    left open is closed, and a note says how many lines were left out.
    """
    text = "\n".join(_full_markdown(report)).rstrip("\n") + "\n"
    if len(text) <= max_chars:
        return text
    return _truncate(text.rstrip("\n").split("\n"), max_chars, report.base.label)


def _truncate(lines: list[str], max_chars: int, ref: str) -> str:
    depth = 0
    depths = [0]  # open <details> after lines[:k]
    for line in lines:
        if line.startswith("<details>"):
            depth += 1
        elif line == "</details>":
            depth -= 1
        depths.append(depth)
    keep = 2  # the marker and the verdict, always
    used = len(lines[0]) + 1 + len(lines[1]) + 1
    best = keep
    for k in range(keep, len(lines) + 1):
        if k > keep:
            used += len(lines[k - 1]) + 1
        omitted = len(lines) - k
        note = _note(omitted, ref)
        closing = len("\n</details>\n") * depths[k]
        if used + closing + len(note) + 2 > max_chars:
            break
        if _cuttable(lines, k):
            best = k
    kept = lines[:best]
    while kept and kept[-1] == "":
        kept.pop()
    out = kept + ["", "</details>"] * depths[best]
    text = "\n".join(out) + "\n\n" + _note(len(lines) - best, ref) + "\n"
    return text


def _cuttable(lines: Sequence[str], k: int) -> bool:
    """Whether the Markdown may end after lines[:k]: never between a table's header and its
    delimiter row, never after a table without rows, a heading or a line introducing a block."""
    if k == len(lines):
        return True
    if lines[k].startswith("|-"):
        return False
    previous = next((line for line in reversed(lines[:k]) if line), "")
    return not (previous.startswith(("#", "|-", "<details>")) or previous.endswith(":"))


def _note(omitted: int, ref: str) -> str:
    return (
        f"**… {plural(omitted, 'more line')} truncated**; run `gpuplane diff --base "
        f"{ref if '`' not in ref else 'REF'}` locally for the full report."
    )
