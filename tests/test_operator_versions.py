"""Rule `operator-version-incompatible`: each pinned operator release against its cluster's
Kubernetes and against the Kueue release that manages its kinds.

The ranges expected here are the projects' own words, read at the tags the data module cites
(renderer/model/operator_support.py): JobSet v0.12.0's README ("one of the last 3 Kubernetes
minor versions", cut on 2026-05-08, when 1.36 was the newest minor: 1.34 to 1.36), the Network
Operator docs for 26.4 (">=1.31 and <=1.35"), Kueue v0.19.2's README ("Requires Kubernetes 1.29
or newer") and its "Run RayServices" / "Run TrainJobs" / "Run AppWrappers" pages (KubeRay v1.3.0,
Trainer v2.0.0, AppWrapper v1.1.1). The last tests read those files in the fetched upstream
mirrors and compare every row with them; they skip where the mirrors are not beside the
checkout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from renderer.model.operator_support import (
    INTEGRATION_SUPPORT,
    KUBERNETES_SUPPORT,
    UNSTATED,
    KubernetesSupport,
    kubernetes_minor,
    kubernetes_support,
    parse_release,
)
from renderer.model.operators import BY_ADDON
from tests.conftest import REPO

RULE = "operator-version-incompatible"


# --- editing a copy of the example platform --------------------------------------------------


def _cluster(platform: Path, name: str) -> Path:
    return platform / "clusters" / f"{name}.yaml"


def set_kubernetes(platform: Path, cluster: str, version: str) -> None:
    path = _cluster(platform, cluster)
    text, count = re.subn(
        r'^(  kubernetesVersion: )"[0-9.]+"', rf'\g<1>"{version}"', path.read_text(), flags=re.M
    )
    assert count == 1, f"{path}: one kubernetesVersion expected"
    path.write_text(text)


def set_addon(platform: Path, cluster: str, addon: str, version: str | None) -> None:
    """Pin the add-on at `version` (declaring it if the file does not), or, with None, drop its
    version line (the add-on stays declared)."""
    path = _cluster(platform, cluster)
    text = path.read_text()
    pattern = re.compile(rf"^(    {addon}:\n      version: )(\S+)(.*\n)", re.M)
    if pattern.search(text) is None:
        assert version is not None
        addons = "  addons:\n"
        assert text.count(addons) == 1
        text = text.replace(addons, f"{addons}    {addon}:\n      version: {version}\n")
    elif version is None:
        text = pattern.sub(rf"    {addon}: {{}}\n", text)
    else:
        text = pattern.sub(rf"\g<1>{version}\g<3>", text)
    path.write_text(text)


def position(platform: Path, cluster: str, addon: str) -> tuple[int, int]:
    """(line, column) of the value of `spec.addons.<addon>.version` in the cluster file."""
    lines = _cluster(platform, cluster).read_text().splitlines()
    start = lines.index(f"    {addon}:")
    line = lines[start + 1]
    assert line.startswith("      version: ")
    return start + 2, len("      version: ") + 1


def kubernetes_line(platform: Path, cluster: str) -> int:
    lines = _cluster(platform, cluster).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if line.startswith("  kubernetesVersion:"))


Validate = Callable[[Path], list[dict[str, Any]]]


@pytest.fixture
def findings(gpuplane: Callable[..., Any]) -> Validate:
    """The rule's findings when the platform is validated."""

    def run(platform: Path) -> list[dict[str, Any]]:
        result = gpuplane("-C", str(platform), "validate", "--format", "json")
        report = json.loads(result.output)
        return [d for d in report["findings"] if d["rule"] == RULE]

    return run


def on(found: list[dict[str, Any]], file: str) -> list[dict[str, Any]]:
    return [d for d in found if d["file"] == file]


def about(found: list[dict[str, Any]], line: int) -> list[dict[str, Any]]:
    return [d for d in found if d["line"] == line]


PROD = "clusters/prod-east.yaml"


def _pinned(hint: str, addon: str) -> str:
    match = re.match(rf"pin spec\.addons\.{addon}\.version to (\S+)", hint)
    assert match, hint
    return match.group(1)


# --- versions as cluster files write them ----------------------------------------------------


@pytest.mark.parametrize(
    ("written", "release"),
    [
        ("v0.19.2", "0.19.2"),
        ("0.12.0", "0.12.0"),
        ("26.4.1", "26.4.1"),
        ("2.0.4", "2.0.4"),
        ("v1.2.1", "1.2.1"),
        ("4.5.2-4.8.1", "4.5.2"),  # the DCGM exporter's tag: DCGM 4.5.2, exporter 4.8.1
        ("26.4.1-rc.1", "26.4.1rc1"),
        ("v1.0.0-devel", "1.0.0"),
    ],
)
def test_versions_are_read_as_cluster_files_write_them(written: str, release: str) -> None:
    assert parse_release(written) == Version(release)


def test_a_pre_release_belongs_to_its_line() -> None:
    row = kubernetes_support("networkOperator", "26.4.0-rc.1")
    assert row is not None and row.releases.pin == "26.4.1"
    assert kubernetes_support("networkOperator", "26.5.0") is None  # no statement: no check
    assert kubernetes_minor("1.33") == Version("1.33")
    assert kubernetes_minor("1.33.4") == Version("1.33")


def test_every_addon_has_a_statement_or_says_why_not() -> None:
    from renderer.model.names import DCGM_EXPORTER_ADDON

    every = {*BY_ADDON, DCGM_EXPORTER_ADDON}
    assert set(KUBERNETES_SUPPORT) | set(UNSTATED) == every
    assert not set(KUBERNETES_SUPPORT) & set(UNSTATED)
    for addon, rows in KUBERNETES_SUPPORT.items():
        if addon in BY_ADDON:  # gpuplane's own release is one a statement covers
            assert kubernetes_support(addon, BY_ADDON[addon].release) in rows, addon


# --- against the cluster's Kubernetes --------------------------------------------------------


def test_jobset_0_12_on_kubernetes_1_33_is_refused_and_the_hint_fixes_it(
    platform: Path, findings: Validate
) -> None:
    set_kubernetes(platform, "prod-east", "1.33")
    set_addon(platform, "prod-east", "jobset", "0.12.0")
    line, col = position(platform, "prod-east", "jobset")
    (finding,) = about(on(findings(platform), PROD), line)
    assert finding["level"] == "error"
    assert finding["column"] == col
    assert finding["message"].startswith("JobSet 0.12.0 supports Kubernetes 1.34 or newer")
    assert "kubernetes-sigs/jobset@v0.12.0:README.md" in finding["message"]
    assert finding["message"].endswith("but cluster 'prod-east' runs Kubernetes 1.33")
    (note,) = finding["notes"]
    assert (note["line"], note["message"]) == (
        kubernetes_line(platform, "prod-east"),
        "the cluster's Kubernetes version",
    )
    # JobSet v0.11.x was cut while 1.35 was the newest minor: 1.33 is one of its last 3
    assert _pinned(finding["hint"], "jobset") == "0.11.1"
    set_addon(platform, "prod-east", "jobset", "0.11.1")
    assert about(on(findings(platform), PROD), line) == []


def test_jobset_0_12_on_kubernetes_1_34_passes(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.34")
    set_addon(platform, "prod-east", "jobset", "0.12.0")
    line, _ = position(platform, "prod-east", "jobset")
    assert about(on(findings(platform), PROD), line) == []


def test_a_stated_maximum_is_a_warning_and_a_minimum_an_error(
    platform: Path, findings: Validate
) -> None:
    # the Network Operator's 26.4 platform support: Kubernetes >=1.31 and <=1.35
    set_kubernetes(platform, "prod-east", "1.30")
    set_addon(platform, "prod-east", "networkOperator", "26.4.1")
    line, _ = position(platform, "prod-east", "networkOperator")
    (below,) = about(on(findings(platform), PROD), line)
    assert below["level"] == "error"
    set_kubernetes(platform, "prod-east", "1.36")
    (finding,) = about(on(findings(platform), PROD), line)
    assert finding["level"] == "warning"  # newer than tested, not refused
    assert finding["message"].startswith(
        "NVIDIA Network Operator 26.4.1 supports Kubernetes 1.31 to 1.35"
    )
    assert finding["message"].endswith("runs Kubernetes 1.36: newer than the project has tested")
    # no release with a statement reaches 1.36: the hint moves the cluster instead
    assert "change spec.kubernetesVersion to one it supports (1.31 to 1.35)" in finding["hint"]
    set_kubernetes(platform, "prod-east", "1.35")
    assert about(on(findings(platform), PROD), line) == []


def test_kueue_below_its_minimum_kubernetes(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "staging-west", "1.28")  # Kueue v0.19.2: 1.29 or newer
    found = on(findings(platform), "clusters/staging-west.yaml")
    line, _ = position(platform, "staging-west", "kueue")
    (finding,) = about(found, line)
    assert finding["message"].startswith("Kueue v0.19.2 supports Kubernetes 1.29 or newer")
    assert '"Requires Kubernetes 1.29 or newer"' in finding["message"]
    set_kubernetes(platform, "staging-west", "1.29")
    assert about(on(findings(platform), "clusters/staging-west.yaml"), line) == []


def test_unpinned_and_unknown_releases_are_not_checked(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.33")
    set_addon(platform, "prod-east", "jobset", None)  # addon-version-unpinned's to report
    set_addon(platform, "prod-east", "lws", "0.5.0")  # no statement covers LWS 0.5
    assert [d for d in on(findings(platform), PROD) if "JobSet" in d["message"]] == []
    assert [d for d in on(findings(platform), PROD) if "LeaderWorkerSet" in d["message"]] == []


def test_an_addon_whose_project_states_nothing_is_not_checked(
    platform: Path, findings: Validate
) -> None:
    set_kubernetes(platform, "prod-east", "1.29")
    set_addon(platform, "prod-east", "appwrapper", "v1.2.1")
    assert [d for d in findings(platform) if "AppWrapper" in d["message"]] == []


# --- against the cluster's Kueue -------------------------------------------------------------


def test_kuberay_below_kueues_rayservice_minimum(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.34")
    set_addon(platform, "prod-east", "kuberay", "1.2.0")  # RayJob's 1.1.0 is met, not 1.3.0
    line, col = position(platform, "prod-east", "kuberay")
    (finding,) = about(on(findings(platform), PROD), line)
    assert finding["column"] == col
    message = finding["message"]
    assert message.startswith("Kueue v0.19.2 supports KubeRay 1.3.0 or newer for ray.io/rayservice")
    assert "site/content/en/docs/tasks/run/rayservices.md" in message
    assert "ray.io/rayjob" not in message
    assert message.endswith("but cluster 'prod-east' pins KubeRay 1.2.0")
    (note,) = finding["notes"]
    assert (note["line"], note["message"]) == (
        position(platform, "prod-east", "kueue")[0],
        "the cluster's Kueue release",
    )
    pin = _pinned(finding["hint"], "kuberay")
    assert pin == BY_ADDON["kuberay"].release
    set_addon(platform, "prod-east", "kuberay", pin)
    assert about(on(findings(platform), PROD), line) == []


def test_every_ray_integration_refusing_is_one_finding(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.34")
    set_addon(platform, "prod-east", "kuberay", "1.0.0")
    line, _ = position(platform, "prod-east", "kuberay")
    (finding,) = about(on(findings(platform), PROD), line)
    for framework in ("ray.io/rayjob", "ray.io/raycluster", "ray.io/rayservice"):
        assert framework in finding["message"]


def test_trainer_and_appwrapper_below_kueues_minimum(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.34")
    set_addon(platform, "prod-east", "trainer", "1.9.0")  # Kueue: Trainer v2.0.0 at least
    set_addon(platform, "prod-east", "appwrapper", "v1.1.0")  # Kueue: AppWrapper v1.1.1
    found = on(findings(platform), PROD)
    (trainer,) = about(found, position(platform, "prod-east", "trainer")[0])
    assert "Kubeflow Trainer 2.0.0 or newer for trainer.kubeflow.org/trainjob" in trainer["message"]
    (appwrapper,) = about(found, position(platform, "prod-east", "appwrapper")[0])
    assert (
        "AppWrapper v1.1.1 or newer for workload.codeflare.dev/appwrapper" in appwrapper["message"]
    )
    set_addon(platform, "prod-east", "trainer", _pinned(trainer["hint"], "trainer"))
    set_addon(platform, "prod-east", "appwrapper", _pinned(appwrapper["hint"], "appwrapper"))
    assert [d for d in on(findings(platform), PROD) if "Kueue" in d["message"]] == []


def test_no_kueue_pin_no_integration_check(platform: Path, findings: Validate) -> None:
    set_kubernetes(platform, "prod-east", "1.34")
    set_addon(platform, "prod-east", "kuberay", "1.0.0")
    set_addon(platform, "prod-east", "kueue", None)
    assert [d for d in on(findings(platform), PROD) if "KubeRay" in d["message"]] == []


def test_the_rule_explains_itself(gpuplane: Callable[..., Any]) -> None:
    result = gpuplane("explain", RULE)
    assert result.exit_code == 0
    assert "To satisfy it:" in result.output


# --- every row against the file it cites (the fetched upstream mirrors) ----------------------

MIRRORS = Path(os.environ.get("GPUPLANE_MIRRORS", REPO.parent / ".mirror"))
"""Where `fetch` leaves the upstream repositories: <owner>+<name>/repo, a bare git directory."""


def upstream(repo: str, ref: str, path: str) -> str:
    git_dir = MIRRORS / repo.replace("/", "+") / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"no mirror of {repo} beside this checkout ({git_dir})")
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{ref}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"the mirror of {repo} lacks {ref}:{path}")
    return done.stdout


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _minors(text: str) -> list[str]:
    return re.findall(r"1\.\d+", text)


ROWS = [(addon, row) for addon, rows in KUBERNETES_SUPPORT.items() for row in rows]


@pytest.mark.parametrize(("addon", "row"), ROWS, ids=[f"{a}-{r.releases.since}" for a, r in ROWS])
def test_each_kubernetes_range_is_the_projects_own(addon: str, row: KubernetesSupport) -> None:
    source = row.source
    text = upstream(source.repo, source.ref, source.path)
    assert _spaced(source.says) in _spaced(text), f"{source}: {source.says!r} not found"
    if addon == "jobset":
        return  # "the last 3": test_jobset_ranges_are_the_last_three_minors_of_the_day
    if addon == "gpuOperator":  # every OS row of the page, widest
        spans = re.findall(r"(1\.\d+)---(1\.\d+)", text)
        assert row.minimum == min((a for a, _ in spans), key=Version)
        assert row.maximum == max((b for _, b in spans), key=Version)
        return
    if addon == "volcano":
        assert (row.minimum, row.maximum) == _volcano_ticks(text, row)
        return
    if addon == "envoyGateway":  # the matrix row's "Kubernetes version" column lists each minor
        cells = [cell.strip() for cell in source.says.strip("|").split("|")]
        assert cells[0] == "v" + ".".join(row.releases.since.split(".")[:2])
        listed = _minors(cells[4])
        assert (row.minimum, row.maximum) == (listed[0], listed[-1])
        return
    stated = _minors(source.says)
    assert stated[0] == row.minimum
    assert row.maximum == (stated[1] if len(stated) > 1 else None)


def _volcano_ticks(readme: str, row: KubernetesSupport) -> tuple[str, str]:
    lines = readme.splitlines()
    start = lines.index("## Kubernetes compatibility")
    header = [c.strip() for c in lines[start + 1].split("|")]
    label = "Volcano v" + ".".join(row.releases.since.split(".")[:2])
    cells = next(
        [c.strip() for c in line.split("|")] for line in lines[start:] if f"| {label} " in line
    )
    ticked = [h.removeprefix("Kubernetes ") for h, c in zip(header, cells, strict=True) if c == "✓"]
    return min(ticked, key=Version), max(ticked, key=Version)


def test_jobset_ranges_are_the_last_three_minors_of_the_day() -> None:
    """Each JobSet row's minimum is two minors below the newest Kubernetes minor released
    (k8s.io/api v0.X.0 tagged) before the JobSet tag."""
    api = MIRRORS / "kubernetes+api" / "repo"
    jobset = MIRRORS / "kubernetes-sigs+jobset" / "repo"
    if not (api.is_dir() and jobset.is_dir()):
        pytest.skip("no mirrors of kubernetes/api and kubernetes-sigs/jobset")

    def tagged(git_dir: Path, tag: str) -> int:
        out = subprocess.run(
            ["git", "--git-dir", str(git_dir), "log", "-1", "--format=%ct", tag],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(out.stdout)

    minors = {m: tagged(api, f"v0.{m}.0") for m in range(30, 37)}
    for row in KUBERNETES_SUPPORT["jobset"]:
        day = tagged(jobset, row.source.ref)
        newest = max(m for m, when in minors.items() if when <= day)
        assert row.minimum == f"1.{newest - 2}", row.source
        assert row.maximum is None


@pytest.mark.parametrize(
    "row",
    INTEGRATION_SUPPORT,
    ids=[f"{r.kueue.since}-{r.framework}" for r in INTEGRATION_SUPPORT],
)
def test_each_kueue_requirement_is_kueues_own(row: Any) -> None:
    text = upstream(row.source.repo, row.source.ref, row.source.path)
    assert _spaced(row.source.says) in _spaced(text)
    # the operator's release is the last version the sentence names
    named = re.findall(r"v(\d+\.\d+\.\d+)", row.source.says)
    assert named[-1] == row.minimum.lstrip("v")
    assert row.maximum is None
