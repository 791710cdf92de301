"""`gpuplane new KIND NAME`: a starting file that fails at each blank until filled, then validates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from renderer.commands.new import KINDS, MARK, scaffold
from renderer.inputs.schema import schema_for
from tests.conftest import REPO, copy_inputs

LISTED = re.compile(r"^  (?P<file>\S+):(?P<line>\d+): (?P<field>\S+): (?P<what>.+)$")


def new(gpuplane, root: Path, kind: str, name: str) -> dict[str, int]:
    """Run `gpuplane new` and return the blanks it says to fill: field path -> line."""
    result = gpuplane("-C", str(root), "new", kind, name)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"wrote {KINDS[kind]}/{name}.yaml; fill in the ")
    assert "gpuplane validate" in lines[-1]
    listed = [m for line in lines if (m := LISTED.match(line))]
    assert listed and all(m["file"] == f"{KINDS[kind]}/{name}.yaml" for m in listed)
    return {m["field"]: int(m["line"]) for m in listed}


def fill(path: Path, blanks: dict[str, int], values: dict[str, str]) -> None:
    """Write each value on its blank's line, as an author would."""
    assert set(values) == set(blanks), "fill every blank the command listed, and only those"
    lines = path.read_text().splitlines(keepends=True)
    for field, number in blanks.items():
        line = lines[number - 1]
        assert f"# {MARK}: " in line
        key = line.split(":", 1)[0]
        lines[number - 1] = f"{key}: {values[field]}\n"
    path.write_text("".join(lines))


def findings(gpuplane, root: Path) -> list[dict[str, object]]:
    report = json.loads(gpuplane("-C", str(root), "validate", "--format", "json").output)
    diagnostics: list[dict[str, object]] = report["findings"]
    return diagnostics


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return copy_inputs(REPO, tmp_path / "repo")


TEAM = {
    "spec.description": "Ranking models for the storefront",
    "spec.owners": "[ranking-leads]",
    "spec.codeowners": '["@example/ranking"]',
    "spec.costCenter": "CC-1077",
    "spec.contact": '"#ranking-infra"',
    "spec.queue": "prod",
    "spec.namespaces[0].cluster": "prod-east",
    "spec.gpus[0].pool": "h100-train",
    "spec.gpus[0].nominal": "0",
    "spec.images": "[registry.example.com/ranking/]",
}


def test_a_filled_team_validates_with_no_findings(repo: Path, gpuplane) -> None:
    blanks = new(gpuplane, repo, "team", "ranking")
    fill(repo / "teams/ranking.yaml", blanks, TEAM)
    assert findings(gpuplane, repo) == []


def test_the_suggested_images_and_egress_lie_within_the_allowlists(repo: Path, gpuplane) -> None:
    """A new team file names what gpuplane.yaml allows; its `images` blank suggests a prefix
    within it, and its commented-out `egress` example, switched on, validates
    (image-prefix-not-allowed, egress-not-allowed)."""
    blanks = new(gpuplane, repo, "team", "ranking")
    path = repo / "teams/ranking.yaml"
    text = path.read_text()
    # gpuplane.yaml's first allowed registry path, the team's folder under it
    suggested = re.search(r"images: +# REPLACE-ME: .*for example \[(\S+)\]$", text, re.M)
    assert suggested is not None and suggested[1] == "registry.example.com/ranking/"
    fill(path, blanks, {**TEAM, "spec.images": f"[{suggested[1]}]"})
    text = path.read_text()
    assert "gpuplane.yaml allows prefixes within: registry.example.com/, ghcr.io/example/," in text
    assert "gpuplane.yaml allows egress within: 10.20.0.0/16 TCP 443, 8443;" in text
    start = text.index("  # egress:")
    end = text.index("\n", text.index("  #     description: what lives there"))
    switched = "\n".join(
        line.replace("  # ", "  ", 1) if line.startswith(("  # egress:", "  #  ")) else line
        for line in text[start:end].splitlines()
    )
    path.write_text(text[:start] + switched + text[end:])
    assert "  egress:\n    - cidr: 10.20.0.0/16" in path.read_text()
    assert findings(gpuplane, repo) == []


def test_an_unfilled_file_fails_at_each_blank_and_nowhere_else(repo: Path, gpuplane) -> None:
    for kind in sorted(KINDS):
        blanks = new(gpuplane, repo, kind, f"fresh-{kind}")
        path = f"{KINDS[kind]}/fresh-{kind}.yaml"
        found = [d for d in findings(gpuplane, repo) if d["file"] == path]
        assert {d["line"] for d in found} == set(blanks.values()), (kind, found)
        assert all(d["level"] == "error" for d in found)
        for field, line in blanks.items():  # each names the field that is still empty
            assert any(d["line"] == line and field in str(d["message"]) for d in found), field
        (repo / path).unlink()


def test_a_half_filled_team_still_fails(repo: Path, gpuplane) -> None:
    """Free text and IdP group names accept any word: an empty blank is what keeps them failing."""
    blanks = new(gpuplane, repo, "team", "ranking")
    left = {"spec.owners", "spec.contact"}
    fill(
        repo / "teams/ranking.yaml",
        {f: n for f, n in blanks.items() if f not in left},
        {f: v for f, v in TEAM.items() if f not in left},
    )
    found = findings(gpuplane, repo)
    assert {(d["line"], d["rule"]) for d in found} == {
        (blanks["spec.owners"], "schema-wrong-type"),
        (blanks["spec.contact"], "schema-wrong-type"),
    }


def test_a_filled_pool_and_its_queue_validate(repo: Path, gpuplane) -> None:
    pool = new(gpuplane, repo, "pool", "h100-spare")
    fill(
        repo / "pools/h100-spare.yaml",
        pool,
        {
            "spec.description": "Spare H100 nodes for overflow training",
            "spec.cluster": "prod-east",
            "spec.accelerator": "h100-80gb",
            "spec.gpusPerNode": "8",
            "spec.nodes": "{min: 1, max: 2}",
            "spec.workload": "distributed-training",
            "spec.sharing": "full-gpu",
            "spec.host.cpus": "224",
            "spec.host.memory": "2Ti",
            "spec.cost.gpuHour": "2.85",
            "spec.acceptance": "{allReduceBusBandwidthGBps: 350, checkpointWriteGBps: 4, restoreSeconds: 300}",
        },
    )
    # a pool no queue lists is a warning, as the file's header says
    assert [d["rule"] for d in findings(gpuplane, repo)] == ["pool-unused"]
    queue = new(gpuplane, repo, "queue", "overflow")
    fill(
        repo / "queues/overflow.yaml",
        queue,
        {
            "spec.description": "Overflow training on spare nodes",
            "spec.cluster": "prod-east",
            "spec.pools": "[h100-spare]",
        },
    )
    assert findings(gpuplane, repo) == []


def test_a_filled_cluster_validates(repo: Path, gpuplane) -> None:
    blanks = new(gpuplane, repo, "cluster", "dev-north")
    fill(
        repo / "clusters/dev-north.yaml",
        blanks,
        {
            "spec.description": "Development cluster for platform changes",
            "spec.kubernetesVersion": '"1.34"',
            "spec.environment": "production",
            "spec.provider": "on-prem",
            "spec.argocd.destination": "https://dev-north.example.com:6443",
            "spec.identity.groupPrefix": '"oidc:"',
            "spec.platformOwners": "[platform-admins]",
            "spec.addons.gpuOperator.version": "v26.7.0",
            "spec.addons.kueue.version": "v0.19.2",
            "spec.addons.argoWorkflows.version": "2.0.4",
            "spec.addons.dcgmExporter.version": "4.5.2-4.8.1",
            "spec.addons.prometheusStack.version": "79.6.1",
            "spec.addons.opencost.version": "2.5.17",
            "spec.storage.sharedClass": "shared-fs",
            "spec.storage.scratchClass": "local-nvme",
            "spec.storage.objectStore": "s3://dev-north-ml",
        },
    )
    assert findings(gpuplane, repo) == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_is_there_with_its_description(kind: str) -> None:
    made = scaffold(kind, "example", REPO)
    lines = made.text.splitlines()
    assert lines[0] == f"# yaml-language-server: $schema=../schemas/{kind}.schema.json"
    spec = schema_for(kind.capitalize()).raw["properties"]["spec"]["properties"]
    for field, prop in spec.items():
        at = [i for i, line in enumerate(lines) if re.match(rf"^  #? ?{field}:", line)]
        assert at, f"{kind}: spec.{field} is missing"
        words = " ".join(str(prop["description"]).split()).split()[:4]
        comment = " ".join(line.strip("# ") for line in lines[max(0, at[0] - 6) : at[0]])
        assert " ".join(words) in comment, f"{kind}: spec.{field} is not described above it"
    assert all(
        len(line) <= 100 for line in lines if line.lstrip().startswith("# ") and MARK not in line
    )


def test_refuses_to_overwrite(repo: Path, gpuplane) -> None:
    before = (repo / "teams/vision.yaml").read_bytes()
    result = gpuplane("-C", str(repo), "new", "team", "vision")
    assert result.exit_code == 2
    assert "teams/vision.yaml exists already" in result.output
    assert (repo / "teams/vision.yaml").read_bytes() == before


@pytest.mark.parametrize("name", ["Vision", "vision_ml", "-vision", "a" * 64, "../x", "a/b", ""])
def test_refuses_a_name_that_is_not_a_dns_label(repo: Path, gpuplane, name: str) -> None:
    before = sorted(p.name for p in (repo / "teams").iterdir())
    result = gpuplane("-C", str(repo), "new", "team", "--", name)
    assert result.exit_code == 2
    assert "DNS-1123" in result.output
    assert sorted(p.name for p in (repo / "teams").iterdir()) == before


def test_unknown_kind_is_a_usage_error(repo: Path, gpuplane) -> None:
    assert gpuplane("-C", str(repo), "new", "namespace", "x").exit_code == 2


def test_new_in_an_empty_repository_creates_the_folder(tmp_path: Path, gpuplane) -> None:
    result = gpuplane("-C", str(tmp_path), "new", "queue", "first")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "queues/first.yaml").is_file()
    assert "none yet: `gpuplane new cluster NAME`" in result.output


def test_the_commented_endpoint_serves_once_uncommented(repo: Path, gpuplane) -> None:
    """The scaffold's inference namespace and endpoint, uncommented as its comment says, with
    quota on an inference pool that has room (the example's l4-serve is fully promised, so on
    prod-east's l40s-infer) and the domain, validate with no finding: every rule an endpoint
    meets (pool, quota at the maximum, host, SLO bucket, operators) is satisfied by the
    scaffold's suggestions."""
    blanks = new(gpuplane, repo, "team", "ranking")
    path = repo / "teams/ranking.yaml"
    text = path.read_text()
    assert re.search(r"^    #       pool: \S+$", text, re.M), "the scaffold suggests a pool"
    assert re.search(r"^    #   cluster: \S+$", text, re.M), "and its cluster"
    # replicas {min: 2, max: 4} at their maximum with the surge: (4 + 1) x 1 slices
    fill(path, blanks, {**TEAM, "spec.gpus[0].pool": "l40s-infer", "spec.gpus[0].nominal": "5"})
    lines = path.read_text().splitlines(keepends=True)
    start = next(
        i for i, line in enumerate(lines) if line.startswith("    # - name: ranking-serve")
    )
    end = next(i for i, line in enumerate(lines) if "#       autoscaling:" in line)
    for i in range(start, end + 1):
        if lines[i].startswith("    # "):
            lines[i] = "    " + lines[i][len("    # ") :]
    text = "".join(lines).replace("  # domains: [", "  domains: [")
    text = re.sub(r"(?m)^(      cluster: )\S+$", r"\1prod-east", text)
    text = re.sub(r"(?m)^(          pool: )\S+$", r"\1l40s-infer", text)
    path.write_text(text)
    assert "endpoints:" in text and "\n  domains: [ranking.example.com]" in text
    assert findings(gpuplane, repo) == []
