"""Output validation checks every workload template as it checks the applied objects.

A template is a `Values` file (never applied, listed by no kustomization), but a team submits it:
a Job, JobSet, RayJob, TrainJob or Deployment the API server or its operator would refuse must be
an `output-schema` (or `output-cel`) finding of `render`, on the team's namespace entry, like a
rendered object's. Each test breaks one template the way a renderer bug would and reads the
finding; the bodies are checked against the schemas the cluster would use (Kubernetes' OpenAPI
at its version, the CRDs of ../shared/crds).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from renderer.findings.diagnostics import Diagnostic, Severity
from renderer.layers.workload_templates import workloads
from renderer.output.reuse import CheckMemo
from renderer.output.validation import OutputValidator
from renderer.pipeline import check_cluster, load_platform, render_platform
from tests.conftest import REPO

Body = dict[str, Any]


@pytest.fixture(scope="module")
def platform() -> Any:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity is Severity.ERROR]
    return loaded.platform


def _breaking(monkeypatch: pytest.MonkeyPatch, kind: str, breaks: Callable[[Body], None]) -> None:
    """Make the templates layer break every template of `kind` with `breaks`."""
    render = workloads.render

    def broken(view: Any) -> Iterator[Any]:
        for item in render(view):
            if item.body.get("kind") == kind:
                body = copy.deepcopy(dict(item.body))
                breaks(body)
                item = type(item)(item.layer, item.chart, body, item.source, item.folder)
            yield item

    monkeypatch.setattr(workloads, "render", broken)  # the layer calls it by name


def _template_findings(found: list[Diagnostic], kind: str) -> list[Diagnostic]:
    return [d for d in found if d.message.startswith(f"template {kind} ")]


def test_the_example_templates_pass(platform: Any, validator: OutputValidator) -> None:
    outcome = check_cluster(platform, "prod-east", validator)
    assert outcome.diagnostics == []
    kinds = {v.body["kind"] for v in outcome.values if v.layer == workloads.LAYER}
    assert {"Job", "JobSet", "RayJob", "TrainJob", "Deployment", "PersistentVolumeClaim"} <= kinds


@pytest.mark.parametrize(
    ("kind", "breaks", "field"),
    [
        ("Job", lambda b: b["spec"].update(parallelism="one"), "spec.parallelism"),
        ("Deployment", lambda b: b["spec"].update(replica=1), "spec"),
        ("PersistentVolumeClaim", lambda b: b["spec"].update(accessModes="RWX"), "spec"),
        ("JobSet", lambda b: b["spec"].update(suspended=True), "spec"),
        ("RayJob", lambda b: b["spec"].update(entrypoint=["python"]), "spec.entrypoint"),
        ("TrainJob", lambda b: b["spec"]["trainer"].update(numNodes="2"), "spec.trainer"),
    ],
)
def test_a_broken_template_is_an_output_schema_finding_on_its_namespace(
    platform: Any,
    validator: OutputValidator,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    breaks: Callable[[Body], None],
    field: str,
) -> None:
    _breaking(monkeypatch, kind, breaks)
    outcome = check_cluster(platform, "prod-east", validator)
    found = _template_findings(outcome.diagnostics, kind)
    templates = [v for v in outcome.values if v.body.get("kind") == kind]
    assert templates and len(found) >= len(templates), outcome.diagnostics
    for item in templates:
        (finding,) = [d for d in found if f"(prod-east/{item.path})" in d.message]
        assert finding.rule == "output-schema"
        assert finding.severity is Severity.ERROR
        assert f" at {field}" in finding.message, finding.message
        assert finding.at == item.source  # the namespace's entry in the team file
        namespace = item.body["metadata"]["namespace"]
        teams = [t for t in platform.teams.values() for ns in t.namespaces if ns.name == namespace]
        assert finding.at.file == teams[0].origin.file
    # the applied objects are not touched: no other finding
    assert {d.rule for d in outcome.diagnostics} == {"output-schema"}
    assert not [d for d in outcome.diagnostics if not d.message.startswith("template ")]


def test_a_crd_rule_a_template_breaks_is_an_output_cel_finding(
    platform: Any, validator: OutputValidator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TrainJob's CRD allows only two managers (`x-kubernetes-validations` on spec.managedBy)."""
    _breaking(monkeypatch, "TrainJob", lambda b: b["spec"].update(managedBy="example.com/x"))
    outcome = check_cluster(platform, "prod-east", validator)
    found = _template_findings(outcome.diagnostics, "TrainJob")
    assert found and {d.rule for d in found} == {"output-cel"}
    assert all("trainjobs.trainer.kubeflow.org" in d.message for d in found)
    assert all("ManagedBy must be" in d.message for d in found)


@pytest.mark.slow
def test_a_template_kind_no_crd_checks_is_reported_as_unchecked(platform: Any) -> None:
    """Without CRDs the JobSet, RayJob and TrainJob templates are unchecked, as an applied
    custom object would be: a warning, an error with --strict-schemas."""
    for strict in (False, True):
        rendered = render_platform(REPO, OutputValidator(strict_schemas=strict))
        unchecked = [d for d in rendered.diagnostics if d.rule == "schema-unchecked"]
        text = " ".join(d.message for d in unchecked)
        for kind in ("JobSet", "RayJob", "TrainJob"):
            assert kind in text, (kind, text)
        wanted = Severity.ERROR if strict else Severity.WARNING
        assert unchecked and all(d.severity is wanted for d in unchecked)


def test_a_memo_reuses_a_template_check_and_a_change_is_checked_again(
    platform: Any, validator: OutputValidator, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = CheckMemo({})
    first = check_cluster(platform, "prod-east", validator, memo=memo)
    assert first.diagnostics == []
    kept = dict(memo.now)
    again = CheckMemo(kept)
    assert check_cluster(platform, "prod-east", validator, memo=again).diagnostics == []
    _breaking(monkeypatch, "Job", lambda b: b["spec"].update(parallelism="one"))
    broken = check_cluster(platform, "prod-east", validator, memo=CheckMemo(kept))
    assert _template_findings(broken.diagnostics, "Job")


def test_templates_stay_out_of_every_kustomization_and_application(
    validator: OutputValidator,
) -> None:
    rendered = render_platform(REPO, validator)
    for cluster in rendered.manifests:
        assert not [m for m in rendered.manifests[cluster] if m.layer == workloads.LAYER]
        folders = {m.layer for m in rendered.manifests[cluster]}
        assert workloads.LAYER not in folders
        apps = [m for m in rendered.manifests[cluster] if m.kind == "Application"]
        assert apps
        for app in apps:
            source = app.body["spec"].get("source", {})
            assert not str(source.get("path", "")).endswith(f"/{workloads.LAYER}")
