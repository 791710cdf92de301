"""The forms of a base-against-head comparison (`gpuplane simulate TRACE --base REF`): text
tables, Markdown, and the JSON fields inside the one envelope; `gpuplane diff --trace` shows
the same tables and JSON (docs/simulate.md#base-against-head)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from renderer.commands.simulate.compare import Comparison, PoolSides, TeamSides, delta
from renderer.commands.simulate.forms import (
    Table,
    duration,
    markdown_tables,
    report_json,
    text_tables,
)
from renderer.commands.simulate.report import (
    PoolReport,
    SimReport,
    TeamReport,
    Waits,
)
from renderer.findings.diagnostics import inert
from renderer.output import markdown_escape

ABSENT = "absent"
"""A team with no workload of the trace on a side (its namespaces are not there)."""

TEAM_HEADER = ("team", "p50 wait", "p90 wait", "p99 wait", "max wait", "completed", "never",
               "preempted")  # fmt: skip
POOL_HEADER = ("pool", "cluster", "utilisation", "used GPU-h", "borrowed GPU-h", "idle GPU-h")


def signed_duration(seconds: float) -> str:
    sign = "-" if seconds < 0 else "+"
    return sign + duration(abs(seconds))


def _cell(before: Any, after: Any, show: Callable[[Any], str], change: str) -> str:
    """`before → after (change)`; the value alone where both sides show the same (so the eye
    finds what changed); `absent` for a side without the team or pool."""
    if before is None or after is None:
        return f"{ABSENT if before is None else show(before)} → {ABSENT if after is None else show(after)}"
    if show(before) == show(after):
        return show(after)
    return f"{show(before)} → {show(after)} ({change})"


def _wait(team: TeamSides, name: str) -> str:
    before = getattr(team.base.wait, name) if team.base else None
    after = getattr(team.head.wait, name) if team.head else None
    change = signed_duration(after - before) if before is not None and after is not None else ""
    return _cell(before, after, duration, change)


def _count(team: TeamSides, name: str) -> str:
    before = getattr(team.base, name) if team.base else None
    after = getattr(team.head, name) if team.head else None
    change = f"{after - before:+d}" if before is not None and after is not None else ""
    return _cell(before, after, str, change)


def team_rows(teams: Sequence[TeamSides]) -> list[list[str]]:
    return [
        [t.name, *(_wait(t, n) for n in ("p50", "p90", "p99", "max")),
         *(_count(t, n) for n in ("completed", "never", "preempted"))]
        for t in teams
    ]  # fmt: skip


def _pool(pool: PoolSides, name: str, show: Callable[[float], str], unit: str) -> str:
    before = getattr(pool.base, name) if pool.base else None
    after = getattr(pool.head, name) if pool.head else None
    change = ""
    if before is not None and after is not None:
        step = (after - before) * (100 if unit == " pt" else 1)
        change = f"{step:+,.1f}{unit}"
    return _cell(before, after, show, change)


def pool_rows(pools: Sequence[PoolSides]) -> list[list[str]]:
    def hours(value: float) -> str:
        return f"{value:,.1f}"

    return [
        [p.name, p.cluster, _pool(p, "utilisation", lambda v: f"{v:.1%}", " pt"),
         *(_pool(p, n, hours, "") for n in ("used_gpu_hours", "borrowed_gpu_hours",
                                            "idle_gpu_hours"))]
        for p in pools
    ]  # fmt: skip


def tables(comparison: Comparison) -> list[Table]:
    return [
        (
            "Per team (base → head; a value alone is the same on both)",
            TEAM_HEADER,
            team_rows(comparison.teams),
        ),
        (
            "Per pool (base → head; a value alone is the same on both)",
            POOL_HEADER,
            pool_rows(comparison.pools),
        ),
    ]


def base_text(comparison: Comparison) -> str:
    commit = f" ({comparison.base_commit[:12]})" if comparison.base_commit else ""
    return f"{comparison.base_label}{commit}"


def title(comparison: Comparison) -> str:
    return (
        f"simulate {comparison.trace}: {comparison.workloads} workloads, the working tree "
        f"against {base_text(comparison)}"
    )


def absent_lines(comparison: Comparison) -> list[str]:
    """What was replayed on one side only, and why."""
    out = []
    if comparison.only_base:
        out.append(
            "replayed at the base only (not a team namespace in the working tree): "
            + ", ".join(comparison.only_base)
        )
    if comparison.only_head:
        out.append(
            "replayed in the working tree only (not a team namespace at the base): "
            + ", ".join(comparison.only_head)
        )
    return out


def comparison_text(comparison: Comparison) -> str:
    out = [inert(title(comparison)), ""]
    out += text_tables(tables(comparison))
    out += [inert(line) for line in absent_lines(comparison)]
    return "\n".join(out).rstrip("\n") + "\n"


def comparison_markdown(comparison: Comparison) -> str:
    out = [f"## {markdown_escape.text(title(comparison))}", ""]
    out += markdown_tables(tables(comparison))
    out += [f"- {markdown_escape.text(line)}" for line in absent_lines(comparison)]
    return "\n".join(out).rstrip("\n") + "\n"


# --- JSON ---------------------------------------------------------------------------------------


def _one(team: TeamReport | None = None, pool: PoolReport | None = None) -> dict[str, Any]:
    """A team's or a pool's JSON as `simulate` writes it (`forms.report_json`)."""
    answer = SimReport("", 0, 0.0, (team,) if team else (), (pool,) if pool else (), ())
    data = report_json(answer)
    found: dict[str, Any] = data["teams"][0] if team else data["pools"][0]
    return found


def _round(value: float) -> float:
    return round(value, 6) + 0.0


def team_json(team: TeamSides) -> dict[str, Any]:
    change = delta(team)
    return {
        "name": team.name,
        "base": _one(team=team.base) if team.base else None,
        "head": _one(team=team.head) if team.head else None,
        "delta": None
        if change is None
        else {
            "wait": {n: _round(getattr(change, n)) for n in ("p50", "p90", "p99", "max")},
            "completed": change.completed,
            "never": change.never,
            "preempted": change.preempted,
            "preempting": change.preempting,
        },
    }


POOL_FIELDS = {
    "utilisation": "utilisation",
    "usedGpuHours": "used_gpu_hours",
    "borrowedGpuHours": "borrowed_gpu_hours",
    "idleGpuHours": "idle_gpu_hours",
}


def pool_json(pool: PoolSides) -> dict[str, Any]:
    both = pool.base is not None and pool.head is not None
    return {
        "name": pool.name,
        "cluster": pool.cluster,
        "base": _one(pool=pool.base) if pool.base else None,
        "head": _one(pool=pool.head) if pool.head else None,
        "delta": {
            key: _round(getattr(pool.head, name) - getattr(pool.base, name))
            for key, name in POOL_FIELDS.items()
        }
        if both
        else None,
    }


def comparison_json(comparison: Comparison) -> dict[str, Any]:
    """The documented shape (docs/simulate.md#base-against-head): each team's and pool's
    `base` and `head` as `simulate` writes them (null where absent) and `delta`, head minus
    base (null where a side is absent)."""
    return {
        "trace": comparison.trace,
        "workloads": comparison.workloads,
        "base": {"label": comparison.base_label, "commit": comparison.base_commit},
        "teams": [team_json(t) for t in comparison.teams],
        "pools": [pool_json(p) for p in comparison.pools],
        "onlyBase": list(comparison.only_base),
        "onlyHead": list(comparison.only_head),
    }


def _team_from(data: Mapping[str, Any] | None) -> TeamReport | None:
    if data is None:
        return None
    wait = data["wait"]
    return TeamReport(
        name=data["name"],
        workloads=data["workloads"],
        wait=Waits(wait["p50"], wait["p90"], wait["p99"], wait["max"], data["admissions"]),
        completed=data["completed"],
        never=data["never"],
        reasons=tuple((r["message"], r["workloads"]) for r in data["neverReasons"]),
        preempted=data["preempted"],
        preempting=data["preempting"],
    )


def _pool_from(data: Mapping[str, Any] | None) -> PoolReport | None:
    if data is None:
        return None
    return PoolReport(
        name=data["name"],
        cluster=data["cluster"],
        gpus=data["gpus"],
        utilisation=data["utilisation"],
        used_gpu_hours=data["usedGpuHours"],
        borrowed_gpu_hours=data["borrowedGpuHours"],
        idle_gpu_hours=data["idleGpuHours"],
        peak_gpus=data["peakGpus"],
    )


def comparison_from_json(data: Mapping[str, Any]) -> Comparison:
    """`comparison_json`'s data read back (a CI job renders `diff`'s Markdown from its JSON)."""
    return Comparison(
        trace=data["trace"],
        workloads=data["workloads"],
        base_label=data["base"]["label"],
        base_commit=data["base"]["commit"],
        teams=tuple(
            TeamSides(t["name"], _team_from(t["base"]), _team_from(t["head"]))
            for t in data["teams"]
        ),
        pools=tuple(
            PoolSides(p["name"], p["cluster"], _pool_from(p["base"]), _pool_from(p["head"]))
            for p in data["pools"]
        ),
        only_base=tuple(data["onlyBase"]),
        only_head=tuple(data["onlyHead"]),
    )
