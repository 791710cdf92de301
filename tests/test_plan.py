"""`gpuplane plan`: capacity, quotas and ceilings per pool and per team, in three formats.

Every expected number is derived here from the input files (nodes x GPUs per node, the teams'
quota entries read from teams/*.yaml), never pasted from the plan's own output.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.commands.plan import (
    VERSION,
    ClusterPlan,
    PlanReport,
    PlanWarning,
    PoolRow,
    TeamRow,
    build_plan,
    plan_json,
    plan_markdown,
    plan_tables,
)
from renderer.findings.diagnostics import has_errors
from renderer.pipeline import load_platform
from tests.conftest import REPO

# --- reading the inputs ---------------------------------------------------------------------


def _spec(root: Path, folder: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load((root / folder / f"{name}.yaml").read_text())
    return data["spec"]


def _teams(root: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: _spec(root, "teams", p.stem) for p in sorted((root / "teams").glob("*.yaml"))}


def _entries(root: Path, pool: str, profile: str | None = None) -> dict[str, dict[str, Any]]:
    """Each team's quota entry on the pool (on a MIG pool: on the profile), by team."""
    return {
        team: entry
        for team, spec in _teams(root).items()
        for entry in spec.get("gpus", [])
        if entry["pool"] == pool and entry.get("profile") == profile
    }


def _nodes(spec: dict[str, Any]) -> tuple[int, int]:
    nodes = spec["nodes"]
    return (nodes, nodes) if isinstance(nodes, int) else (nodes["min"], nodes["max"])


def _queue_of(root: Path, pool: str) -> tuple[str, float]:
    for path in sorted((root / "queues").glob("*.yaml")):
        spec = _spec(root, "queues", path.stem)
        if pool in spec["pools"]:
            return path.stem, float(spec.get("oversubscription", 1.0))
    raise AssertionError(f"no queue lists {pool}")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new))


# --- reading the plan -----------------------------------------------------------------------


def _plan(root: Path, clusters: list[str] | None = None) -> PlanReport:
    loaded = load_platform(root)
    assert not has_errors(loaded.diagnostics), loaded.diagnostics
    return build_plan(loaded.platform, clusters)


def _pool(report: PlanReport, pool: str, resource: str = "nvidia.com/gpu") -> PoolRow:
    (row,) = [
        r for c in report.clusters for r in c.pools if r.pool == pool and r.resource == resource
    ]
    return row


def _team(report: PlanReport, team: str, pool: str, resource: str = "nvidia.com/gpu") -> TeamRow:
    (row,) = [
        r
        for c in report.clusters
        for r in c.teams
        if r.team == team and r.pool == pool and r.resource == resource
    ]
    return row


def _kept(entry: dict[str, Any]) -> int:
    return int(entry["nominal"]) - int(entry.get("lendingLimit") or 0)


def _lent(entry: dict[str, Any]) -> int:
    return int(entry.get("lendingLimit", entry["nominal"]))


def _codes(row: PoolRow | TeamRow) -> list[str]:
    return [w.code for w in row.warnings]


# --- the example platform -------------------------------------------------------------------


def test_full_gpu_pool_sums_the_teams_quotas() -> None:
    report = _plan(REPO)
    spec = _spec(REPO, "pools", "h100-train")
    nodes, _ = _nodes(spec)
    capacity = nodes * spec["gpusPerNode"]
    entries = _entries(REPO, "h100-train")
    nominal = sum(e["nominal"] for e in entries.values())
    queue, limit = _queue_of(REPO, "h100-train")

    row = _pool(report, "h100-train")
    assert (row.capacity, row.capacity_max, row.unit) == (capacity, capacity, "GPU")
    assert (row.queue, row.limit, row.allowed) == (queue, limit, int(capacity * limit))
    assert row.nominal == nominal
    assert row.guaranteed == sum(_kept(e) for e in entries.values())
    assert row.lendable == sum(_lent(e) for e in entries.values())
    assert row.free == capacity - nominal
    assert row.used == round(nominal / capacity, 4)
    assert row.teams == tuple(sorted(entries))
    assert row.warnings == ()


def test_mig_pool_has_one_row_per_profile() -> None:
    report = _plan(REPO)
    spec = _spec(REPO, "pools", "a100-mig")
    nodes, _ = _nodes(spec)
    layout = spec["mig"]["layout"]
    rows = [r for c in report.clusters for r in c.pools if r.pool == "a100-mig"]
    assert [r.profile for r in rows] == sorted(layout)
    for profile, per_gpu in layout.items():
        row = _pool(report, "a100-mig", f"nvidia.com/mig-{profile}")
        entries = _entries(REPO, "a100-mig", profile)
        assert row.capacity == per_gpu * spec["gpusPerNode"] * nodes
        assert row.unit == f"MIG {profile} instance"
        assert row.nominal == sum(e["nominal"] for e in entries.values())
        assert row.guaranteed == sum(_kept(e) for e in entries.values())
        assert row.lendable == sum(_lent(e) for e in entries.values())
        assert row.teams == tuple(sorted(entries))


def test_time_slicing_counts_replicas() -> None:
    report = _plan(REPO)
    spec = _spec(REPO, "pools", "l40s-infer")
    nodes, _ = _nodes(spec)
    replicas = spec["timeSlicing"]["replicas"]
    entries = _entries(REPO, "l40s-infer")
    row = _pool(report, "l40s-infer")
    assert row.capacity == nodes * spec["gpusPerNode"] * replicas
    assert row.per_node == spec["gpusPerNode"] * replicas
    assert row.unit == "time-slicing replica"
    assert row.nominal == sum(e["nominal"] for e in entries.values())


def test_autoscaled_pool_shows_min_and_max_and_oversubscription() -> None:
    report = _plan(REPO)
    spec = _spec(REPO, "pools", "h200-tune")
    low, high = _nodes(spec)
    assert low < high
    per_node = spec["gpusPerNode"]
    entries = _entries(REPO, "h200-tune")
    nominal = sum(e["nominal"] for e in entries.values())
    _, limit = _queue_of(REPO, "h200-tune")

    row = _pool(report, "h200-tune")
    assert (row.nodes_min, row.nodes_max) == (low, high)
    assert (row.capacity, row.capacity_max) == (low * per_node, high * per_node)
    assert row.free == low * per_node - nominal  # negative: the queue allows oversubscription
    assert row.headroom == int(low * per_node * limit) - nominal
    assert row.used == round(nominal / (low * per_node), 4)
    assert nominal > low * per_node
    assert _codes(row) == ["oversubscribed"]
    # borrowing is sized against the pool's maximum size, not its minimum
    for team, entry in entries.items():
        expected = min(high * per_node, entry["nominal"] + entry["borrowingLimit"])
        assert _team(report, team, "h200-tune").maximum == expected


def test_borrowing_unlimited_reaches_the_pool_and_limited_stops_at_the_limit() -> None:
    report = _plan(REPO)
    spec = _spec(REPO, "pools", "a100-mig")
    nodes, _ = _nodes(spec)
    seen = {"limited": 0, "unlimited": 0}
    for profile, per_gpu in spec["mig"]["layout"].items():
        pool_max = per_gpu * spec["gpusPerNode"] * nodes
        for team, entry in _entries(REPO, "a100-mig", profile).items():
            row = _team(report, team, "a100-mig", f"nvidia.com/mig-{profile}")
            assert row.nominal == entry["nominal"]
            assert row.guaranteed == _kept(entry)
            assert row.lendable == _lent(entry)
            assert row.borrowing_limit == entry.get("borrowingLimit")
            if "borrowingLimit" in entry:
                seen["limited"] += 1
                assert row.maximum == min(pool_max, entry["nominal"] + entry["borrowingLimit"])
            else:
                seen["unlimited"] += 1
                assert row.maximum == pool_max
    assert seen["limited"] and seen["unlimited"]


def test_each_quota_names_the_cluster_queue_that_holds_it() -> None:
    report = _plan(REPO)
    for team, spec in _teams(REPO).items():
        purposes = {ns["purpose"] for ns in spec["namespaces"]}
        for entry in spec.get("gpus", []):
            pool = _spec(REPO, "pools", entry["pool"])
            resource = (
                f"nvidia.com/mig-{entry['profile']}" if "profile" in entry else "nvidia.com/gpu"
            )
            row = _team(report, team, entry["pool"], resource)
            if pool["workload"] == "notebooks":
                # notebook slices: held by the notebooks queue, borrowed by the training one
                holder = "notebooks" if "notebooks" in purposes else "training"
                assert row.cluster_queue == f"{team}-{holder}"
                if holder == "notebooks":
                    assert row.borrowing_queues == (f"{team}-training",)
            elif pool["workload"] == "online-inference":
                assert row.cluster_queue == f"{team}-inference"
            else:
                assert row.cluster_queue == f"{team}-training"


def test_clusters_are_sorted_and_filtered() -> None:
    every = _plan(REPO)
    clusters = sorted(p.stem for p in (REPO / "clusters").glob("*.yaml"))
    assert [c.name for c in every.clusters] == clusters
    for cluster in every.clusters:
        pools = [r.pool for r in cluster.pools]
        assert pools == sorted(pools)
        assert all(_spec(REPO, "pools", p)["cluster"] == cluster.name for p in pools)
    only = _plan(REPO, [clusters[-1]])
    assert [c.name for c in only.clusters] == [clusters[-1]]
    assert only.clusters[0] == every.clusters[-1]
    with pytest.raises(ValueError, match="nowhere"):
        build_plan(load_platform(REPO).platform, ["nowhere"])


def test_the_plan_is_immutable_data() -> None:
    report = _plan(REPO)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.clusters[0].pools[0].nominal = 0  # type: ignore[misc]


# --- edited platforms -----------------------------------------------------------------------


def test_guaranteed_is_the_figure_the_policy_checks(platform: Path, gpuplane) -> None:
    """Without a lendingLimit the whole nominal counts as guaranteed, as in rule
    guaranteed-exceeds-capacity: filling capacity exactly is valid, one more is not."""
    spec = _spec(platform, "pools", "h200-tune")
    low, _ = _nodes(spec)
    capacity = low * spec["gpusPerNode"]
    team = platform / "teams" / "llm-eval.yaml"
    entries = _entries(platform, "h200-tune")
    others = sum(_kept(e) for t, e in entries.items() if t != "llm-eval")
    mine = entries["llm-eval"]
    room = capacity - others
    assert room >= mine["nominal"]  # the edit below must make a boundary case
    old = (
        f"{{pool: h200-tune, nominal: {mine['nominal']}, borrowingLimit: "
        f"{mine['borrowingLimit']}, lendingLimit: {mine['lendingLimit']}}}"
    )
    _edit(team, old, f"{{pool: h200-tune, nominal: {room}, borrowingLimit: 4}}")
    report = _plan(platform)
    row = _pool(report, "h200-tune")
    assert row.guaranteed == capacity
    assert row.lendable == room + sum(_lent(e) for t, e in entries.items() if t != "llm-eval")
    mine_row = _team(report, "llm-eval", "h200-tune")
    assert (mine_row.guaranteed, mine_row.lendable, mine_row.lending_limit) == (room, room, None)
    assert _codes(mine_row) == ["lends-all"]

    _edit(
        team, f"nominal: {room}, borrowingLimit: 4}}", f"nominal: {room + 1}, borrowingLimit: 4}}"
    )
    result = gpuplane("-C", str(platform), "plan")
    assert result.exit_code == 1
    assert "error[guaranteed-exceeds-capacity]" in result.output


def test_borrowing_unlimited_on_an_autoscaled_pool_reaches_its_maximum(platform: Path) -> None:
    entry = _entries(platform, "h200-tune")["search"]
    _edit(
        platform / "teams" / "search.yaml",
        f"nominal: {entry['nominal']}, borrowingLimit: {entry['borrowingLimit']}, ",
        f"nominal: {entry['nominal']}, ",
    )
    spec = _spec(platform, "pools", "h200-tune")
    _, high = _nodes(spec)
    row = _team(_plan(platform), "search", "h200-tune")
    assert row.borrowing_limit is None
    assert row.maximum == high * spec["gpusPerNode"]


def test_underused_and_unquoted_pools_are_flagged(platform: Path) -> None:
    # more replicas per GPU: the same quotas now cover less than half of the pool
    l40s = _spec(platform, "pools", "l40s-infer")
    replicas = l40s["timeSlicing"]["replicas"] * 4
    _edit(
        platform / "pools" / "l40s-infer.yaml",
        f"replicas: {l40s['timeSlicing']['replicas']}\n",
        f"replicas: {replicas}\n",
    )
    # a second H100 pool in the queue that no team holds quota on
    spare = (platform / "pools" / "h100-train.yaml").read_text().replace("h100-train", "h100-spare")
    (platform / "pools" / "h100-spare.yaml").write_text(spare)
    queue, _ = _queue_of(platform, "h100-train")
    _edit(platform / "queues" / f"{queue}.yaml", "h100-train,", "h100-train, h100-spare,")

    report = _plan(platform)
    nodes, _ = _nodes(l40s)
    capacity = nodes * l40s["gpusPerNode"] * replicas
    nominal = sum(e["nominal"] for e in _entries(platform, "l40s-infer").values())
    assert nominal * 2 < capacity
    row = _pool(report, "l40s-infer")
    assert row.capacity == capacity
    assert _codes(row) == ["underused"]
    assert f"{round(100 * nominal / capacity)}%" in row.warnings[0].message
    spare_row = _pool(report, "h100-spare")
    assert (spare_row.nominal, spare_row.teams, _codes(spare_row)) == (0, (), ["no-quota"])
    assert spare_row.free == spare_row.capacity
    # shown inline in every format
    markdown = plan_markdown(report)
    assert re.search(r"^\| h100-spare \|.*no-quota", markdown, re.MULTILINE)
    assert re.search(r"^\| l40s-infer \|.*underused", markdown, re.MULTILINE)
    pools = next(c for c in plan_json(report)["clusters"] if c["name"] == l40s["cluster"])
    codes = {p["pool"]: [w["code"] for w in p["warnings"]] for p in pools["pools"]}
    assert codes["h100-spare"] == ["no-quota"] and codes["l40s-infer"] == ["underused"]


# --- formats, through the command line ------------------------------------------------------


def test_json_through_the_cli(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--format", "json")
    assert result.exit_code == 0
    body = json.loads(result.output)
    assert body["version"] == VERSION == 1
    assert result.output.strip() == json.dumps(body, indent=2, sort_keys=True)
    assert set(body) == {"version", "clusters", "legend"}
    assert {"guaranteed", "lendable", "free"} <= set(body["legend"])
    spec = _spec(REPO, "pools", "h100-train")
    nodes, _ = _nodes(spec)
    (prod,) = [c for c in body["clusters"] if c["name"] == spec["cluster"]]
    (pool,) = [p for p in prod["pools"] if p["pool"] == "h100-train"]
    assert pool["capacity"] == {
        "atMinNodes": nodes * spec["gpusPerNode"],
        "atMaxNodes": nodes * spec["gpusPerNode"],
    }
    assert isinstance(pool["nominal"], int) and isinstance(pool["oversubscription"]["used"], float)
    entry = _entries(REPO, "h100-train")["vision"]
    (team,) = [t for t in prod["teams"] if t["team"] == "vision" and t["pool"] == "h100-train"]
    assert team["nominal"] == entry["nominal"]
    assert team["lendingLimit"] == entry["lendingLimit"]
    assert team["borrowingLimit"] == entry["borrowingLimit"]
    assert team["clusterQueue"] == "vision-training"


def test_json_filtered_by_cluster(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--format", "json", "--cluster", "staging-west")
    assert result.exit_code == 0
    body = json.loads(result.output)
    assert [c["name"] for c in body["clusters"]] == ["staging-west"]
    pools = {p.stem for p in (REPO / "pools").glob("*.yaml")}
    staging = {p for p in pools if _spec(REPO, "pools", p)["cluster"] == "staging-west"}
    assert {p["pool"] for p in body["clusters"][0]["pools"]} == staging


def _columns(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_markdown_through_the_cli(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--format", "markdown")
    assert result.exit_code == 0
    text = result.output
    assert text.endswith("\n") and not text.endswith("\n\n")
    for cluster in (p.stem for p in (REPO / "clusters").glob("*.yaml")):
        assert f"\n## {cluster} (" in text
    # every table row has as many cells as its header
    tables = re.findall(r"((?:^\|.*\|\n)+)", text, re.MULTILINE)
    assert len(tables) == 2 * len(list((REPO / "clusters").glob("*.yaml")))
    for table in tables:
        lines = table.splitlines()
        assert re.fullmatch(r"\|(-{3}:?\|)+", lines[1])
        assert {_columns(line) for line in lines} == {_columns(lines[0])}
    spec = _spec(REPO, "pools", "h100-train")
    nodes, _ = _nodes(spec)
    entries = _entries(REPO, "h100-train")
    row = next(line for line in text.splitlines() if line.startswith("| h100-train |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == str(nodes * spec["gpusPerNode"])
    assert cells[6] == str(sum(e["nominal"] for e in entries.values()))
    assert "**guaranteed**" in text and "guaranteed-exceeds-capacity" in text


def test_markdown_escapes_pipes_in_free_text() -> None:
    row = PoolRow(
        pool="p",
        resource="nvidia.com/gpu",
        profile=None,
        unit="GPU",
        accelerator="h100-80gb",
        sharing="full-gpu",
        workload="distributed-training",
        nodes_min=1,
        nodes_max=1,
        per_node=8,
        capacity=8,
        capacity_max=8,
        queue="q",
        limit=1.0,
        allowed=8,
        nominal=0,
        guaranteed=0,
        lendable=0,
        teams=(),
        warnings=(PlanWarning("no-quota", "a | b <script>"),),
    )
    report = PlanReport((ClusterPlan("c", "staging", "kueue", (row,), ()),))
    text = plan_markdown(report)
    line = next(line for line in text.splitlines() if line.startswith("| p |"))
    assert "a \\| b &lt;script>" in line
    header = next(line for line in text.splitlines() if line.startswith("| pool |"))
    assert _columns(line) == _columns(header)


def test_text_through_the_cli(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan")
    assert result.exit_code == 0
    assert (
        max(len(line) for line in result.output.splitlines()) <= 200
    )  # the CLI prints at 200 columns
    for pool in (p.stem for p in (REPO / "pools").glob("*.yaml")):
        assert f" {pool} " in result.output
    assert "guaranteed = nominal - lendingLimit" in result.output
    assert "ClusterQueue" in result.output
    staging = gpuplane("-C", str(REPO), "plan", "--cluster", "staging-west")
    assert "cluster staging-west" in staging.output and "prod-east" not in staging.output
    # a warning: its code in the row, its sentence under the table
    assert "oversubscribed" in staging.output
    assert "! h200-tune nvidia.com/gpu: oversubscribed: " in staging.output


def test_tables_are_rich_renderables() -> None:
    from rich.table import Table
    from rich.text import Text

    out = plan_tables(_plan(REPO))
    assert all(isinstance(r, Table | Text) for r in out)
    assert sum(isinstance(r, Table) for r in out) == 2 * len(_plan(REPO).clusters)


def test_invalid_platform_exits_1_with_findings(platform: Path, gpuplane) -> None:
    _edit(platform / "teams" / "vision.yaml", "queue: prod\n", "queue: prd\n")
    for fmt in ("text", "markdown"):
        result = gpuplane("-C", str(platform), "plan", "--format", fmt)
        assert result.exit_code == 1
        assert "error[unknown-reference] queue 'prd' does not exist" in result.output
    result = gpuplane("-C", str(platform), "plan", "--format", "json")
    assert result.exit_code == 1
    assert json.loads(result.output)["summary"]["errors"] == 1


def test_unknown_cluster_is_a_usage_error(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--cluster", "nowhere")
    assert result.exit_code == 2
    assert "unknown cluster(s): nowhere" in result.output


def test_reachable_is_capped_by_what_the_cohort_lends() -> None:
    """Kueue can admit at most what a queue never lends plus all the cohort lends, capped by
    nominal + borrowing limit; derived here from the team files for h100-train (one purpose per
    team there, so each entry is one ClusterQueue's)."""
    report = build_plan(load_platform(REPO).platform)
    entries = _entries(REPO, "h100-train")
    lendable = {t: e.get("lendingLimit", e["nominal"]) for t, e in entries.items()}
    for team, entry in entries.items():
        kept = entry["nominal"] - entry["lendingLimit"] if "lendingLimit" in entry else 0
        expected = kept + sum(lendable.values())
        if "borrowingLimit" in entry:
            expected = min(expected, entry["nominal"] + entry["borrowingLimit"])
        row = _team(report, team, "h100-train")
        assert row.reachable == expected
        assert row.reachable <= row.maximum
    assert any(
        _team(report, t, "h100-train").reachable < _team(report, t, "h100-train").maximum
        for t in entries
    )
