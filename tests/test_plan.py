"""`gpuplane plan`: capacity, quotas and ceilings per pool and per team, in three formats.

Every expected number is derived here from the input files (nodes x GPUs per node, the teams'
quota entries read from teams/*.yaml), never pasted from the plan's own output; where a test
writes a number down, the comment beside it computes it from the files by hand.
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
    ClusterPlan,
    PlanReport,
    PlanWarning,
    PoolRow,
    TeamRow,
    build_plan,
    plan_json,
)
from renderer.commands.plan_forms import plan_markdown, plan_tables
from renderer.findings.diagnostics import has_errors
from renderer.model.capacity import gpus_text
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


def test_each_quota_names_the_team_cohort_and_the_cluster_queues_drawing_on_it() -> None:
    """A team's quota on a pool is held by the team's Cohort; every ClusterQueue of the team
    whose purpose the pool serves draws on it (notebook slices: the notebooks and the training
    queue; an inference pool: the inference queue; a training pool: the training queue)."""
    report = _plan(REPO)
    for team, spec in _teams(REPO).items():
        purposes = {ns["purpose"] for ns in spec["namespaces"]}
        for entry in spec.get("gpus", []):
            pool = _spec(REPO, "pools", entry["pool"])
            resource = (
                f"nvidia.com/mig-{entry['profile']}" if "profile" in entry else "nvidia.com/gpu"
            )
            row = _team(report, team, entry["pool"], resource)
            assert row.cohort == team
            if pool["workload"] == "notebooks":
                expected = {f"{team}-{p}" for p in ("notebooks", "training") if p in purposes}
            elif pool["workload"] == "online-inference":
                expected = {f"{team}-inference"}
            else:
                expected = {f"{team}-training"}
            assert set(row.cluster_queues) == expected, (team, entry["pool"])


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
    head = {"schemaVersion": 2, "command": "plan", "findings": []}
    assert list(body)[:3] == list(head) and {k: body[k] for k in head} == head
    fields = {k: v for k, v in body.items() if k not in head}
    assert list(json.dumps(fields, sort_keys=True)) == list(json.dumps(fields))
    assert set(fields) == {"focus", "clusters", "legend"}
    assert body["focus"] == {"teams": [], "pools": [], "imageRegistries": {}}
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
    assert team["cohort"] == "vision"
    assert team["clusterQueues"] == ["vision-training"]


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
    # pools, teams and ClusterQueues per cluster, and its endpoints at their maximum (both
    # example clusters declare endpoints: teams/llm.yaml, recsys.yaml, llm-eval.yaml)
    assert len(tables) == 4 * len(list((REPO / "clusters").glob("*.yaml")))
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
    assert "a \\| b &lt;script&gt;" in line
    header = next(line for line in text.splitlines() if line.startswith("| pool |"))
    assert _columns(line) == _columns(header)


def test_text_through_the_cli(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan")
    assert result.exit_code == 0
    # not a terminal: the CLI lays the tables out for 100 columns
    assert max(len(line) for line in result.output.splitlines()) <= 100
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
    # at no width limit: pools, teams, ClusterQueues and endpoints, one table each per cluster
    assert sum(isinstance(r, Table) for r in out) == 4 * len(_plan(REPO).clusters)


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
    assert "prod-east" in result.output  # nothing is close: the known clusters are listed


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


# --- plan --team / --pool: "how many GPUs can team X get, and where" -------------------------


def _json(gpuplane, *args: str) -> dict[str, Any]:
    result = gpuplane("-C", str(REPO), "plan", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.output)
    return body


def _figures(row: dict[str, Any]) -> tuple[int, int, int | None, int, int, int]:
    return (
        row["guaranteed"],
        row["nominal"],
        row["borrowingLimit"],
        row["borrowable"],
        row["reachable"],
        row["maximum"],
    )


def test_a_team_sees_what_it_can_get_on_each_pool_and_where_it_submits(gpuplane) -> None:
    body = _json(gpuplane, "--team", "llm")
    # teams/llm.yaml's spec.images, in its order: what `plan --team` says the team may run
    assert body["focus"] == {
        "teams": ["llm"],
        "pools": [],
        "imageRegistries": {
            "llm": [
                "registry.example.com/llm/",
                "registry.example.com/base/",
                "registry.example.com/mirror/nvcr.io/nvidia/",
            ]
        },
    }
    # teams/llm.yaml: every namespace is on prod-east, so staging-west is left out
    (prod,) = body["clusters"]
    assert prod["name"] == "prod-east"
    assert {t["team"] for t in prod["teams"]} == {"llm"}
    rows = {(t["pool"], t["resource"]): t for t in prod["teams"]}
    # (guaranteed, nominal, borrowingLimit, borrowable, reachable, maximum), by hand:
    # h100-train: {nominal 16, borrowingLimit 16, lendingLimit 8}: guaranteed 16 - 8 = 8. The
    #   cohort's other teams lend recsys 2 + speech 2 + vision 4 = 8 (their lendingLimits), under
    #   the borrowing limit 16: borrowable 8, reachable 16 + 8 = 24. maximum: 16 + 16 = 32, and
    #   the pool has 4 nodes x 8 = 32.
    assert _figures(rows["h100-train", "nvidia.com/gpu"]) == (8, 16, 16, 8, 24, 32)
    # l40s-infer: {32, 32, 16}: guaranteed 16; others lend recsys 12 + speech 8 + vision 8 = 28
    #   < 32: borrowable 28, reachable 60; maximum 32 + 32 = 64 of 6 x 4 x 4 replicas = 96.
    assert _figures(rows["l40s-infer", "nvidia.com/gpu"]) == (16, 32, 32, 28, 60, 64)
    # a100-mig 2g.20gb: {nominal 8, lendingLimit 4}, no borrowingLimit: guaranteed 4; recsys
    #   lends 4: borrowable 4, reachable 12; unlimited: maximum = the profile's whole pool,
    #   1 per GPU x 8 GPUs x 2 nodes = 16.
    assert _figures(rows["a100-mig", "nvidia.com/mig-2g.20gb"]) == (4, 8, None, 4, 12, 16)
    # 3g.40gb: {8, lendingLimit 4}: guaranteed 4; only vision lends, 2: reachable 10; max 16.
    assert _figures(rows["a100-mig", "nvidia.com/mig-3g.40gb"]) == (4, 8, None, 2, 10, 16)
    assert set(rows) == {
        ("h100-train", "nvidia.com/gpu"),
        ("l40s-infer", "nvidia.com/gpu"),
        ("a100-mig", "nvidia.com/mig-2g.20gb"),
        ("a100-mig", "nvidia.com/mig-3g.40gb"),
    }
    # the pools it uses are shown for context (their totals), and no other pool
    assert {(p["pool"], p["resource"]) for p in prod["pools"]} == set(rows)
    # where: each namespace's `default` LocalQueue feeds the ClusterQueue of its purpose; the
    # notebook pool is the notebooks queue's own and shared with the training one, all drawing
    # on the team's Cohort
    queues = {q["clusterQueue"]: q for q in prod["clusterQueues"]}
    assert {q["teamCohort"] for q in queues.values()} == {"llm"}
    assert {n: (q["namespaces"], q["pools"], q["sharedPools"]) for n, q in queues.items()} == {
        "llm-training": (["llm-train"], ["h100-train"], ["a100-mig"]),
        "llm-inference": (["llm-serve"], ["l40s-infer"], []),
        "llm-notebooks": (["llm-notebooks"], ["a100-mig"], []),
    }
    assert {q["localQueue"] for q in queues.values()} == {"default"}
    assert {q["cohort"] for q in queues.values()} == {"prod"}
    for row in prod["teams"]:
        assert row["borrowable"] == row["reachable"] - row["nominal"]


def test_a_pool_shows_who_holds_quota_and_what_is_free_and_lendable(gpuplane) -> None:
    body = _json(gpuplane, "--pool", "h200-tune")
    (staging,) = body["clusters"]
    (pool,) = staging["pools"]
    # pools/h200-tune.yaml: 8 GPUs per node, 1 to 4 nodes; queue staging, oversubscription 1.5
    assert pool["capacity"] == {"atMinNodes": 8, "atMaxNodes": 32}
    # teams: llm-eval {nominal 4, lendingLimit 2}, search {nominal 8, lendingLimit 4}
    assert (pool["nominal"], pool["guaranteed"], pool["lendable"]) == (12, 6, 6)
    # free = 8 - 12; headroom = int(8 x 1.5) - 12
    assert (pool["free"], pool["headroom"]) == (-4, 0)
    assert pool["teams"] == ["llm-eval", "search"]
    held = {t["team"]: (t["nominal"], t["guaranteed"], t["lendable"]) for t in staging["teams"]}
    assert held == {"llm-eval": (4, 2, 2), "search": (8, 4, 4)}
    # who can submit there: the training ClusterQueues of both teams (h200-tune is a fine-tuning
    # pool), not their inference ones
    assert sorted(q["clusterQueue"] for q in staging["clusterQueues"]) == [
        "llm-eval-training",
        "search-training",
    ]


def test_team_and_pool_together_narrow_to_that_team_on_that_pool(gpuplane) -> None:
    body = _json(gpuplane, "--team", "vision", "--pool", "a100-mig")
    (prod,) = body["clusters"]
    # teams/vision.yaml on a100-mig: 1g.10gb {12, borrowingLimit 8, lendingLimit 6} and
    # 3g.40gb {4, lendingLimit 2}
    rows = {t["resource"]: (t["nominal"], t["guaranteed"], t["maximum"]) for t in prod["teams"]}
    # maximum of 1g.10gb: 12 + 8 = 20 (the profile has 2 x 8 x 2 = 32); 3g.40gb: unlimited, so
    # the profile's 1 x 8 x 2 = 16
    assert rows == {"nvidia.com/mig-1g.10gb": (12, 6, 20), "nvidia.com/mig-3g.40gb": (4, 2, 16)}
    # every profile of the pool asked about is shown, with its totals
    assert sorted(p["resource"] for p in prod["pools"]) == [
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-3g.40gb",
    ]
    assert sorted(q["clusterQueue"] for q in prod["clusterQueues"]) == [
        "vision-notebooks",  # holds the quota
        "vision-training",  # may borrow there
    ]


def test_repeated_names_show_each_of_them(gpuplane) -> None:
    body = _json(gpuplane, "--team", "search", "--team", "llm")
    assert body["focus"]["teams"] == ["llm", "search"]
    teams = {c["name"]: {t["team"] for t in c["teams"]} for c in body["clusters"]}
    assert teams == {"prod-east": {"llm"}, "staging-west": {"search"}}
    body = _json(gpuplane, "--pool", "l4-serve", "--pool", "h100-train")
    pools = {c["name"]: {p["pool"] for p in c["pools"]} for c in body["clusters"]}
    assert pools == {"prod-east": {"h100-train"}, "staging-west": {"l4-serve"}}


def test_a_team_without_anything_on_the_clusters_asked_is_told_so(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--team", "llm", "--cluster", "staging-west")
    assert result.exit_code == 0
    assert "plan for team llm" in result.output
    assert "nothing: no quota or namespace of team llm" in result.output
    assert _json(gpuplane, "--team", "llm", "--cluster", "staging-west")["clusters"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--team", "visoin"], "unknown team(s): visoin. Did you mean 'vision'?"),
        (["--team", "llm", "--team", "speach"], "unknown team(s): speach. Did you mean 'speech'?"),
        (["--pool", "h100"], "unknown pool(s): h100. Did you mean 'h100-train'?"),
        (["--pool", "zzz"], "unknown pool(s): zzz. Known: a100-mig, h100-train,"),
    ],
)
def test_an_unknown_team_or_pool_is_a_usage_error_with_a_hint(
    gpuplane, args: list[str], message: str
) -> None:
    for fmt in ("text", "json", "markdown"):
        result = gpuplane("-C", str(REPO), "plan", "--format", fmt, *args)
        assert result.exit_code == 2
        assert message in result.output


def test_build_plan_refuses_unknown_names() -> None:
    platform = load_platform(REPO).platform
    with pytest.raises(ValueError, match="unknown team"):
        build_plan(platform, teams=["nobody"])
    with pytest.raises(ValueError, match="unknown pool"):
        build_plan(platform, pools=["nowhere"])


def test_the_focused_text_answers_the_question(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--team", "llm")
    assert result.exit_code == 0
    text = result.output
    assert text.startswith("plan for team llm\n")
    assert "cluster prod-east" in text and "staging-west" not in text
    # one team: no team column; its namespaces, each with the ClusterQueue it feeds
    for namespace, queue in (
        ("llm-train", "llm-training"),
        ("llm-serve", "llm-inference"),
        ("llm-notebooks", "llm-notebooks"),
    ):
        assert re.search(rf"^{namespace} +{queue} ", text, re.MULTILINE), namespace
    assert "vision" not in text and "recsys" not in text
    # h100-train: guaranteed 8, nominal 16 (16 whole GPUs), lendable 8, borrowing limit 16,
    # borrowable 8, reachable 24, maximum 32 (computed in the JSON test above)
    assert re.search(r"^h100-train +nvidia\.com/gpu +8 +16 +16 +8 +16 +8 +24 +32$", text, re.M)
    # l40s-infer (4 time-slicing replicas per GPU): nominal 32 replicas is 8 GPUs
    assert re.search(r"^l40s-infer +nvidia\.com/gpu +16 +32 +8 ", text, re.M)
    pool = gpuplane("-C", str(REPO), "plan", "--pool", "h100-train").output
    assert pool.startswith("plan for pool h100-train\n")
    # the four teams holding quota on it, each with its nominal (llm 16, recsys 4, speech 4,
    # vision 8), and their training queues
    for team, nominal in (("llm", 16), ("recsys", 4), ("speech", 4), ("vision", 8)):
        assert re.search(rf"^{team} +nvidia\.com/gpu +\d+ +{nominal} ", pool, re.M), team
        assert f"{team}-training" in pool
    assert "l40s-infer " not in pool


def test_the_focused_markdown_says_what_it_is_about(gpuplane) -> None:
    result = gpuplane("-C", str(REPO), "plan", "--format", "markdown", "--team", "search")
    assert result.exit_code == 0
    text = result.output
    assert text.startswith("# GPU capacity plan for team search\n")
    assert "## staging-west" in text and "## prod-east" not in text
    assert re.search(r"^\| search \| search-train \| `default` \| search-training \|", text, re.M)
    assert "llm-eval" not in text


# --- fitting a terminal -----------------------------------------------------------------------


def _rendered(report: PlanReport, width: int | None, console_width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=console_width, soft_wrap=width is None, color_system=None)
    with console.capture() as captured:
        for renderable in plan_tables(report, width):
            console.print(renderable)
    return captured.get().splitlines()


@pytest.mark.parametrize(
    "focus",
    [{}, {"teams": ["llm"]}, {"pools": ["a100-mig"]}, {"teams": ["vision"], "pools": ["a100-mig"]}],
)
def test_every_line_fits_100_columns_and_nothing_is_cut(focus: dict[str, list[str]]) -> None:
    report = build_plan(load_platform(REPO).platform, **focus)
    lines = _rendered(report, 100, 100)
    assert max(len(line) for line in lines) <= 100
    text = "\n".join(lines)
    assert "…" not in text  # rich's ellipsis: a cut cell
    # every figure of every row is there, unbroken (each row's numbers in order on one line)
    for cluster in report.clusters:
        # the nominal in GPUs where some row is not whole GPUs (a time-slice, a MIG instance)
        shared = any(team.gpu_share != 1 for team in cluster.teams)
        for team in cluster.teams:
            figures = [
                team.guaranteed,
                team.nominal,
                *([re.escape(gpus_text(team.physical_nominal))] if shared else []),
                team.lendable,
                "unlimited" if team.borrowing_limit is None else team.borrowing_limit,
                team.borrowable,
                team.reachable,
                team.maximum,
            ]
            pattern = r"^\S.* " + r" +".join(str(f) for f in figures) + r"( +!)?$"
            assert re.search(pattern, text, re.M), (team.team, team.pool, team.resource)
        for queue in cluster.queues:
            for namespace in queue.namespaces:
                assert re.search(rf"\b{namespace} +{queue.name} ", text), namespace


@pytest.mark.parametrize("width", [40, 60, 80])
def test_narrower_terminals_split_tables_without_cutting(width: int) -> None:
    report = _plan(REPO)
    lines = _rendered(report, width, width)
    assert max(len(line) for line in lines) <= width
    text = "\n".join(lines)
    assert "…" not in text
    assert "(continued)" in text  # columns went to a second block, the row names repeated
    for name in (p.stem for p in (REPO / "pools").glob("*.yaml")):
        assert name in text


def test_wide_prints_each_row_on_one_line(gpuplane) -> None:
    narrow = gpuplane("-C", str(REPO), "plan").output.splitlines()
    wide = gpuplane("-C", str(REPO), "plan", "--wide").output.splitlines()
    assert max(len(line) for line in wide) > 100 >= max(len(line) for line in narrow)
    # at 100 columns a MIG resource name is broken after its `/`; --wide keeps it whole, with
    # the row's figures on the same line (recsys on 1g.10gb: guaranteed 8 - 4 = 4, nominal 8)
    assert not any("nvidia.com/mig-1g.10gb" in line for line in narrow)
    assert re.search(r"^recsys +a100-mig +nvidia\.com/mig-1g\.10gb +4 +8 ", "\n".join(wide), re.M)
    # full headers and every warning code in its row
    assert any("reachable" in line and "maximum" in line for line in wide)
    assert re.search(r"^h200-tune .* oversubscribed$", "\n".join(wide), re.M)
    assert not any("(continued)" in line for line in wide)
