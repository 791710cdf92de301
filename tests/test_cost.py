"""`gpuplane cost`: the guide's effective cost worked out by hand and compared with every figure
the command prints (text, Markdown, JSON), and the findings of the arithmetic.

The worked example (tests/cost/worked.csv) on the rates of tests/cost/platform.py:

| team   | pool       | r    | A   | U   | F  |
|--------|------------|------|-----|-----|----|
| vision | h100-train | 2.85 | 100 | 60  | 10 |
| vision | a100-mig   | 1.60 | 14  | 7   | 0  |   (MIG: 98 1g.10gb slice-hours = 14 GPU-hours)
| llm    | h100-train | 2.85 | 200 | 150 | 20 |
| llm    | l40s-infer | 0.95 | 50  | 20  | 5  |

vision: 4 completed training runs, network 10, storage 20, operations 5; llm: 0 units,
network 30; platform-wide support 364, shared by allocated GPU-hours (114 and 250 of 364).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.cost.model import UNITS_PLURAL
from renderer.findings.rules import explain
from renderer.model.metrics import ACCEPTED_UNITS
from tests.conftest import REPO, Result
from tests.cost.platform import RATES, cost_platform

Run = Callable[..., Result]
WORKED = REPO / "tests" / "cost" / "worked.csv"

H100, MIG, L40S = RATES["h100-train"], RATES["a100-mig"], RATES["l40s-infer"]
ROWS = {  # (team, pool): (rate, allocated, used, failed)
    ("vision", "h100-train"): (H100, 100, 60, 10),
    ("vision", "a100-mig"): (MIG, 14, 7, 0),
    ("llm", "h100-train"): (H100, 200, 150, 20),
    ("llm", "l40s-infer"): (L40S, 50, 20, 5),
}
SUPPORT = 364.0
OWN = {"vision": {"network": 10.0, "storage": 20.0, "operations": 5.0}, "llm": {"network": 30.0}}
UNITS = {"vision": 4.0, "llm": 0.0}


def expected_team(team: str) -> dict[str, Any]:
    """The guide's formula by hand: compute U·r, idle (A-U-F)·r, failed F·r, the own money
    terms, and the platform-wide support by the team's share of allocated GPU-hours."""
    mine = [v for (t, _), v in ROWS.items() if t == team]
    allocated_all = sum(a for _, a, _, _ in ROWS.values())
    allocated = sum(a for _, a, _, _ in mine)
    terms = {
        "compute": sum(r * u for r, _, u, _ in mine),
        "idle": sum(r * (a - u - f) for r, a, u, f in mine),
        "failed_runs": sum(r * f for r, _, _, f in mine),
        "network": OWN[team].get("network", 0.0),
        "storage": OWN[team].get("storage", 0.0),
        "support": SUPPORT * allocated / allocated_all,
        "operations": OWN[team].get("operations", 0.0),
    }
    gpu = terms["compute"] + terms["idle"] + terms["failed_runs"]
    total = sum(terms.values())
    return {
        "terms": terms,
        "total": total,
        "gpu": gpu,
        "idle_share": terms["idle"] / gpu,
        "failed_share": terms["failed_runs"] / gpu,
        "per_unit": total / UNITS[team] if UNITS[team] else None,
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return cost_platform(tmp_path / "repo")


def cost(gpuplane: Run, root: Path, *args: str) -> Result:
    return gpuplane("-C", str(root), "cost", *args)


def test_the_hand_arithmetic_is_what_it_says() -> None:
    """The premises, spelt out once in numbers, so a slip in `expected_team` shows here."""
    vision, llm = expected_team("vision"), expected_team("llm")
    assert vision["terms"]["compute"] == pytest.approx(60 * 2.85 + 7 * 1.60)  # 182.2
    assert vision["terms"]["idle"] == pytest.approx(30 * 2.85 + 7 * 1.60)  # 96.7
    assert vision["terms"]["support"] == pytest.approx(114.0)
    assert vision["total"] == pytest.approx(182.2 + 96.7 + 28.5 + 10 + 20 + 114 + 5)  # 456.4
    assert vision["per_unit"] == pytest.approx(456.4 / 4)
    assert llm["terms"]["compute"] == pytest.approx(150 * 2.85 + 20 * 0.95)  # 446.5
    assert llm["terms"]["support"] == pytest.approx(250.0)
    assert llm["gpu"] == pytest.approx(200 * 2.85 + 50 * 0.95)  # compute + idle + failed = A·r
    assert llm["per_unit"] is None


def test_json_gives_every_figure_of_the_formula(gpuplane: Run, root: Path) -> None:
    done = cost(gpuplane, root, str(WORKED), "--format", "json", "--window", "30d")
    assert done.exit_code == 0, done.output
    body = json.loads(done.output)
    assert body["currency"] == "USD"
    assert body["window"] == "30d"
    assert body["platformWide"]["terms"]["support"] == SUPPORT
    teams = {t["team"]: t for t in body["teams"]}
    assert sorted(teams) == ["llm", "vision"]
    for name, got in teams.items():
        want = expected_team(name)
        assert got["terms"] == pytest.approx(want["terms"])
        assert got["total"] == pytest.approx(want["total"])
        assert got["idleShare"] == pytest.approx(want["idle_share"])
        assert got["failedRunShare"] == pytest.approx(want["failed_share"])
        assert got["allocatedGpuHours"] == sum(
            a for (t, _), (_, a, _, _) in ROWS.items() if t == name
        )
        assert got["dominant"] == max(want["terms"], key=want["terms"].__getitem__)
    assert teams["vision"]["costPerUnit"] == pytest.approx(expected_team("vision")["per_unit"])
    assert teams["vision"]["unit"] == {"kind": "completed-training-runs", "per": 1, "accepted": 4}
    assert teams["llm"]["costPerUnit"] is None  # zero units: no division, no inf
    assert teams["llm"]["sharedPart"]["support"] == pytest.approx(250.0)
    pools = {p["pool"]: p for p in body["pools"]}
    assert sorted(pools) == sorted(RATES)
    for name, got in pools.items():
        rows = [v for (_, p), v in ROWS.items() if p == name]
        assert got["gpuHour"] == RATES[name]
        assert got["allocatedGpuHours"] == sum(a for _, a, _, _ in rows)
        assert got["compute"] == pytest.approx(sum(r * u for r, _, u, _ in rows))
        assert got["idle"] == pytest.approx(sum(r * (a - u - f) for r, a, u, f in rows))
        assert got["failed_runs"] == pytest.approx(sum(r * f for r, _, _, f in rows))
    lines = {(x["team"], x["pool"]): x for x in body["teamPools"]}
    assert set(lines) == set(ROWS)
    for key, (r, a, u, f) in ROWS.items():
        assert lines[key]["compute"] == pytest.approx(u * r)
        assert lines[key]["idle"] == pytest.approx((a - u - f) * r)
        assert lines[key]["failed_runs"] == pytest.approx(f * r)


def test_text_prints_each_figure_as_worked_out(gpuplane: Run, root: Path) -> None:
    done = cost(gpuplane, root, str(WORKED), "--window", "30d")
    assert done.exit_code == 0, done.output
    text = done.output
    assert "Effective cost in USD, window 30d" in text
    vision, llm = expected_team("vision"), expected_team("llm")
    vision_row = next(line for line in text.splitlines() if line.strip().startswith("vision  "))
    assert f"{vision['total']:,.2f}" in vision_row  # 456.40
    assert f"USD {vision['per_unit']:,.2f} per completed training run" in vision_row  # 114.10
    assert f"{vision['idle_share'] * 100:.1f}%" in vision_row  # 31.5%
    assert f"{vision['failed_share'] * 100:.1f}%" in vision_row  # 9.3%
    assert vision_row.rstrip().endswith("compute")
    llm_row = next(line for line in text.splitlines() if line.strip().startswith("llm  "))
    assert "no accepted units" in llm_row
    assert f"{llm['total']:,.2f}" in llm_row  # 897.50
    assert not re.search(r"\b(inf|nan)\b", text, re.I)
    assert "shared among teams by their share of allocated GPU-hours" in text
    assert f"support {SUPPORT:,.2f}" in text
    for (team, pool), (r, a, u, f) in ROWS.items():
        line = next(
            x for x in text.splitlines() if x.split()[:2] == [team, pool]
        )  # the team x pool table
        figures = [
            f"{a:,.2f}",
            f"{u:,.2f}",
            f"{f:,.2f}",
            f"{u * r:,.2f}",
            f"{(a - u - f) * r:,.2f}",
        ]
        assert line.split()[2:7] == figures, line
        assert line.split()[7] == f"{f * r:,.2f}"
    pool_line = next(x for x in text.splitlines() if x.split()[:1] == ["a100-mig"])
    assert pool_line.split()[2:4] == ["1.60", "14.00"]


def test_markdown_has_the_same_tables(gpuplane: Run, root: Path) -> None:
    done = cost(gpuplane, root, str(WORKED), "--format", "markdown", "--window", "30d")
    assert done.exit_code == 0, done.output
    vision = expected_team("vision")
    row = next(x for x in done.output.splitlines() if x.startswith("| vision | "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{vision['total']:,.2f}"
    assert cells[2] == f"USD {vision['per_unit']:,.2f} per completed training run"
    assert done.output.count("\n### ") == 4


def test_a_cost_per_million_requests(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    usage = tmp_path / "llm.csv"
    usage.write_text(
        "team,pool,allocated_gpu_hours,used_gpu_hours,accepted_units\n"
        "llm,l40s-infer,40,30,\n"
        "llm,,,,2500000\n",
        encoding="utf-8",
    )
    done = cost(gpuplane, root, str(usage))
    assert done.exit_code == 0, done.output
    total = 40 * L40S  # compute 30·r + idle 10·r
    per_million = total / (2_500_000 / 1_000_000)  # 15.20
    assert f"USD {per_million:,.2f} per 1,000,000 requests served" in done.output


def test_a_team_with_terms_only_and_money_that_dominates(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text(
        "team,pool,allocated_gpu_hours,used_gpu_hours,accepted_units,storage\n"
        "vision,h100-train,10,10,,\n"
        "vision,,,,2,100\n"
        "speech,,,,3,12\n",
        encoding="utf-8",
    )
    body = json.loads(cost(gpuplane, root, str(usage), "--format", "json").output)
    teams = {t["team"]: t for t in body["teams"]}
    assert teams["vision"]["dominant"] == "storage"  # 100 > compute 28.5
    assert teams["vision"]["costPerUnit"] == pytest.approx((10 * H100 + 100) / 2)
    assert teams["speech"]["total"] == 12  # no GPU-hours: no shares, no GPU cost
    assert teams["speech"]["idleShare"] is None
    assert teams["speech"]["costPerUnit"] == pytest.approx(4.0)


def test_every_unit_kind_has_its_plural() -> None:
    assert set(UNITS_PLURAL) == set(ACCEPTED_UNITS)
    for kind, one in ACCEPTED_UNITS.items():
        assert (
            UNITS_PLURAL[kind]
            .replace("runs", "run")
            .replace("outputs", "output")
            .replace("requests", "request")
            == one
        )


# --- findings of the arithmetic -------------------------------------------------------------


def findings(gpuplane: Run, root: Path, path: Path, *args: str) -> list[str]:
    done = cost(gpuplane, root, str(path), *args)
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    return [x for x in done.output.splitlines() if ": error[" in x]


def test_used_and_failed_above_allocated_is_a_finding(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text(
        "team,pool,allocated_gpu_hours,used_gpu_hours,failed_gpu_hours\nvision,h100-train,10,8,3\n",
        encoding="utf-8",
    )
    assert findings(gpuplane, root, usage) == [
        f"{usage}:2:1: error[cost-hours] row: team 'vision' on pool 'h100-train': used 8 + "
        "failed 3 GPU-hours exceed the 10 allocated"
    ]


def test_unknown_team_and_pool_name_the_line(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text(
        "team,pool,allocated_gpu_hours,used_gpu_hours\n"
        "vison,h100-train,10,8\n"
        "vision,h100-trian,10,8\n",
        encoding="utf-8",
    )
    got = findings(gpuplane, root, usage)
    assert got == [
        f"{usage}:2:1: error[cost-unknown-name] row: the platform declares no team 'vison'",
        f"{usage}:3:1: error[cost-unknown-name] row: the platform declares no pool 'h100-trian'",
    ]
    done = cost(gpuplane, root, str(usage))
    assert "hint: did you mean 'vision'?" in done.output


def test_two_currencies_are_a_finding(gpuplane: Run, tmp_path: Path) -> None:
    """One cluster has one currency (policy `cost-currency`); two clusters may differ, and a
    usage export across both cannot add them up."""
    root = cost_platform(tmp_path / "repo", currency={"l4-serve": "EUR", "h200-tune": "EUR"})
    usage = tmp_path / "u.csv"
    usage.write_text(
        "team,pool,allocated_gpu_hours,used_gpu_hours\n"
        "vision,h100-train,10,5\n"
        "search,l4-serve,10,5\n",
        encoding="utf-8",
    )
    got = findings(gpuplane, root, usage)
    assert len(got) == 1
    assert (
        "error[cost-mixed-currency] pool 'h100-train' is priced in USD and pool 'l4-serve' in EUR"
        in got[0]
    )
    assert got[0].startswith("pools/l4-serve.yaml:")


def test_nothing_is_written_when_there_are_findings(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text("team,pool,allocated_gpu_hours,used_gpu_hours\nvision,h100-train,1,2\n")
    chart = tmp_path / "chart.svg"
    assert findings(gpuplane, root, usage, "--chart", str(chart))
    assert not chart.exists()


def test_platform_wide_money_with_no_gpu_hours_cannot_be_shared(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text("team,support\nvision,1\n*,100\n", encoding="utf-8")
    assert findings(gpuplane, root, usage) == [
        f"{usage}:3:1: error[cost-unshared] no team allocated a GPU-hour: nothing to share by"
    ]


def test_json_findings_are_json(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    usage = tmp_path / "u.csv"
    usage.write_text("team,pool,allocated_gpu_hours,used_gpu_hours\nnope,h100-train,1,1\n")
    done = cost(gpuplane, root, str(usage), "--format", "json")
    assert done.exit_code == 1
    assert [d["rule"] for d in json.loads(done.output)["findings"]] == ["cost-unknown-name"]


def test_usage_errors_exit_2(gpuplane: Run, root: Path) -> None:
    assert cost(gpuplane, root).exit_code == 2
    assert cost(gpuplane, root, str(WORKED), "--chart", "x.pdf").exit_code == 2
    assert cost(gpuplane, root, "--query", "thirty days").exit_code == 2
    assert cost(gpuplane, root, "--query", "30d", str(WORKED)).exit_code == 2


def test_every_cost_rule_explains_how_to_satisfy_it() -> None:
    import renderer.commands.cost.rules  # noqa: F401

    for rule in (
        "cost-unreadable",
        "cost-csv-header",
        "cost-csv-row",
        "cost-number",
        "cost-duplicate",
        "cost-json",
        "cost-unknown-name",
        "cost-wrong-cluster",
        "cost-hours",
        "cost-mixed-currency",
        "cost-unshared",
        "cost-empty",
    ):
        doc = explain(rule)
        assert doc is not None and doc.fix, rule
