"""The audit log setting of a managed control plane (`api-server/audit-logging.yaml`): for every
provider the cluster schema lists, a file in the provider's own API spelling where the provider
has a setting, none where it has not, and valid against the provider's own API definitions as
their SDKs ship them on PyPI, never against gpuplane's output:

- EKS: botocore's service model of the EKS API (`botocore/data/eks/*/service-2.json`), the
  UpdateClusterConfig input shape, checked by botocore's own ParamValidator (what boto3 and the
  AWS CLI run before a request leaves), and the `LogType` enum of that model;
- GKE: `google.iam.v1.Policy` (grpc-google-iam-v1, the IAM protos), parsed with protobuf's own
  JSON parser, which refuses an unknown field or enum value as the API would;
- AKS: `DiagnosticSettingsResource` of azure-mgmt-monitor's `v2021_05_01_preview` models (the
  REST API version rendered), whose serializer drops any key the API does not know.

What each provider logs in each category is from its documentation, cited where it is used.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from renderer.layers.security import audit, audit_logging
from renderer.model.platform import Platform
from renderer.model.view import ClusterView
from renderer.output.manifest import Values
from renderer.output.writer import build_tree
from renderer.pipeline import load_platform
from tests.conftest import REPO, REQUIRE_TOOLS

PROVIDERS = tuple(
    json.loads((REPO / "schemas" / "cluster.schema.json").read_text())["properties"]["spec"][
        "properties"
    ]["provider"]["enum"]
)
WITH_A_SETTING = ("eks", "gke", "aks")
"""Providers that run the API server and let the customer say what of its audit log is kept."""


def upstream(module: str, package: str) -> ModuleType:
    """A provider SDK module the dev extras install (pyproject.toml), or a skip that names the
    package (a failure where `GPUPLANE_REQUIRE_TOOLS=1`, as in CI)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed (PyPI package {package}, in the dev extras)"
        if os.environ.get(REQUIRE_TOOLS) == "1":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="module")
def platform() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"]
    return loaded.platform


def view_as(platform: Platform, provider: str, name: str = "staging-west") -> ClusterView:
    """An example cluster as if its provider were `provider`."""
    cluster = dataclasses.replace(platform.clusters[name], provider=provider)
    clusters = {**platform.clusters, name: cluster}
    return ClusterView.of(dataclasses.replace(platform, clusters=clusters), cluster)


def setting(platform: Platform, provider: str) -> dict[str, Any]:
    (item,) = audit_logging.render(view_as(platform, provider))
    assert isinstance(item, Values)
    return dict(item.body)


# --- which provider gets what -----------------------------------------------------------------


def test_every_provider_of_the_schema_is_decided() -> None:
    """A setting, a note that the provider has none, or the self-managed Policy: no provider of
    the schema falls through to the README's fallback sentence."""
    assert set(audit_logging.PROVIDERS) == set(WITH_A_SETTING)
    assert set(PROVIDERS) == set(WITH_A_SETTING) | {"coreweave"} | audit.SELF_MANAGED
    fallback = audit_logging.readme_note("a-provider-nobody-knows")
    for provider in PROVIDERS:
        assert audit_logging.readme_note(provider) != fallback


@pytest.mark.parametrize("provider", PROVIDERS)
def test_one_file_per_cluster_where_the_provider_has_a_setting(
    platform: Platform, provider: str
) -> None:
    view = view_as(platform, provider)
    settings = list(audit_logging.render(view))
    policies = list(audit.render(view))
    if provider in audit.SELF_MANAGED:
        assert settings == [] and len(policies) == 1
        return
    assert policies == []  # a custom policy the provider never reads would be a paper control
    if provider not in WITH_A_SETTING:
        assert settings == []
        return
    (item,) = settings
    assert isinstance(item, Values)
    assert item.path == "api-server/audit-logging.yaml"
    assert item.layer == "security"
    assert item.source == view.cluster.origin.at("spec", "provider")
    body = dict(item.body)
    assert (body["cluster"], body["provider"]) == (view.cluster.name, provider)
    assert "Not applied to the cluster" in body["description"]
    assert set(body) == {"description", "cluster", "provider", provider}
    # the README points at the file
    assert "`api-server/audit-logging.yaml`" in audit_logging.readme_note(provider)


def test_the_file_is_written_beside_the_objects_and_nothing_applies_it(
    platform: Platform,
) -> None:
    view = ClusterView.of(platform, platform.clusters["staging-west"])
    assert view.cluster.provider == "eks"  # the example's managed cluster
    (item,) = audit_logging.render(view)
    assert isinstance(item, Values)
    files = build_tree({}, values={"staging-west": [item]})
    text = files["staging-west/api-server/audit-logging.yaml"].decode()
    assert yaml.safe_load(text) == json.loads(json.dumps(item.body))
    assert not any(p.endswith("kustomization.yaml") for p in files)


def test_the_example_eks_cluster_renders_it() -> None:
    text = (REPO / "rendered" / "staging-west" / "api-server" / "audit-logging.yaml").read_text()
    body = yaml.safe_load(text)
    assert body["provider"] == "eks"
    readme = (REPO / "rendered" / "staging-west" / "README.md").read_text()
    assert "`api-server/audit-logging.yaml`" in readme


# --- EKS: the EKS API, as botocore models it ---------------------------------------------------


def _eks_input(operation: str) -> Any:
    botocore_session = upstream("botocore.session", "botocore")
    model = botocore_session.get_session().get_service_model("eks")
    return model.operation_model(operation).input_shape


def _eks_problems(request: dict[str, Any]) -> list[str]:
    """What botocore refuses in an UpdateClusterConfig request, and log types outside the
    model's `LogType` enum (the ParamValidator does not check enums; the service does)."""
    validate = upstream("botocore.validate", "botocore")
    shape = _eks_input("UpdateClusterConfig")
    report = validate.ParamValidator().validate(request, shape)
    problems = [report.generate_report()] if report.has_errors() else []
    log_type = shape.members["logging"].members["clusterLogging"].member.members["types"].member
    for setup in request.get("logging", {}).get("clusterLogging", []):
        problems += [f"log type {t}" for t in setup.get("types", []) if t not in log_type.enum]
    return problems


def test_eks_request_is_valid_against_the_eks_api_model(platform: Platform) -> None:
    section = setting(platform, "eks")["eks"]
    # `name` is the EKS cluster's name, left to the operator (the description says so)
    request = {"name": "staging-west", **section["updateClusterConfig"]}
    assert _eks_problems(request) == []
    assert "add `name`" in section["description"]
    # CreateCluster takes the same `logging` shape, as the description says
    assert _eks_input("CreateCluster").members["logging"].name == "Logging"
    assert _eks_input("UpdateClusterConfig").members["logging"].name == "Logging"


def test_eks_turns_on_the_audit_log(platform: Platform) -> None:
    """The `audit` type is the API server's audit log ("Send control plane logs to CloudWatch
    Logs", EKS User Guide: "Kubernetes audit logs provide a record of the individual users,
    administrators, or system components that have affected your cluster"); `authenticator`
    names the IAM principal behind each Kubernetes user."""
    section = setting(platform, "eks")["eks"]
    (setup,) = section["updateClusterConfig"]["logging"]["clusterLogging"]
    assert setup["enabled"] is True
    assert {"audit", "authenticator"} <= set(setup["types"])


def test_the_eks_check_refuses_what_the_api_refuses() -> None:
    good = {"name": "c", "logging": {"clusterLogging": [{"types": ["audit"], "enabled": True}]}}
    assert _eks_problems(good) == []
    assert _eks_problems({"name": "c", "logging": {"clusterLogging": [{"types": ["audits"]}]}})
    assert _eks_problems({"name": "c", "logging": {"clusterLogging": [{"enabled": "yes"}]}})
    assert _eks_problems({"name": "c", "logging": {"clusterLoging": []}})
    assert _eks_problems({"logging": {"clusterLogging": []}})  # no name


# --- GKE: the IAM policy's auditConfigs --------------------------------------------------------


def _iam_policy(body: dict[str, Any]) -> dict[str, Any]:
    """`body` parsed as a google.iam.v1.Policy (unknown fields and enum values refused) and
    written back as the API's JSON."""
    policy_pb2 = upstream("google.iam.v1.policy_pb2", "grpc-google-iam-v1")
    json_format = upstream("google.protobuf.json_format", "protobuf")
    message = json_format.ParseDict(body, policy_pb2.Policy())
    return dict(json_format.MessageToDict(message))


def test_gke_audit_config_is_a_valid_iam_policy_fragment(platform: Platform) -> None:
    section = setting(platform, "gke")["gke"]
    policy = section["iamPolicy"]
    assert _iam_policy(policy) == policy  # every field and value known, nothing dropped
    assert "gcloud projects set-iam-policy" in section["description"]


def test_gke_turns_on_data_access_logs_of_the_kubernetes_engine_api(platform: Platform) -> None:
    """GKE "Audit policy": Admin Activity logs (writes of metadata and configuration) are
    always on; reads of data ("such as reading the logs for a Pod") are Data Access
    `DATA_READ`, writes of data `DATA_WRITE`, off unless the project's audit config enables them
    for the Kubernetes Engine API, container.googleapis.com."""
    (config,) = setting(platform, "gke")["gke"]["iamPolicy"]["auditConfigs"]
    assert config["service"] == "container.googleapis.com"
    types = {c["logType"] for c in config["auditLogConfigs"]}
    assert {"DATA_READ", "DATA_WRITE"} <= types
    assert not any(c.get("exemptedMembers") for c in config["auditLogConfigs"])


def test_the_gke_check_refuses_what_the_api_refuses() -> None:
    parse_error = upstream("google.protobuf.json_format", "protobuf").ParseError
    for broken in (
        {"auditConfigs": [{"service": "x", "auditLogConfigs": [{"logType": "DATA"}]}]},
        {"auditConfig": []},
        {"auditConfigs": [{"service": "x", "auditLogConfig": []}]},
    ):
        with pytest.raises(parse_error):
            _iam_policy(broken)


# --- AKS: the diagnostic setting ---------------------------------------------------------------


def _diagnostic_setting(properties: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`properties` through azure-mgmt-monitor's DiagnosticSettingsResource of the API version
    rendered: deserialized (a wrong type raises) and serialized again (a key the API does not
    know is dropped), and the attributes its models mark `required` that are missing."""
    models = upstream("azure.mgmt.monitor.v2021_05_01_preview.models", "azure-mgmt-monitor")
    resource = models.DiagnosticSettingsResource.from_dict({"properties": properties})
    return dict(resource.serialize()), _missing(resource)


def _missing(model: Any, path: str = "") -> list[str]:
    """The `required` attributes (the models' `_validation`) of `model` and the models in it
    that are None."""
    found = [
        f"{path}{attr}"
        for attr, rules in type(model)._validation.items()
        if rules.get("required") and getattr(model, attr) is None
    ]
    for attr in type(model)._attribute_map:
        value = getattr(model, attr)
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            if hasattr(type(item), "_validation"):
                found += _missing(item, f"{path}{attr}[{index}].")
    return found


def test_aks_diagnostic_setting_is_valid_against_the_monitor_api(platform: Platform) -> None:
    resource = setting(platform, "aks")["aks"]["diagnosticSetting"]
    assert resource["type"] == "Microsoft.Insights/diagnosticSettings"
    # the API version is the one whose models checked it
    assert resource["apiVersion"] == "2021-05-01-preview"
    upstream("azure.mgmt.monitor.v2021_05_01_preview.models", "azure-mgmt-monitor")
    properties = resource["properties"]
    assert _diagnostic_setting(properties) == ({"properties": properties}, [])
    assert set(resource) == {"type", "apiVersion", "name", "properties"}


AKS_LOG_CATEGORIES = {
    "cloud-controller-manager",
    "cluster-autoscaler",
    "guard",
    "kube-apiserver",
    "kube-audit",
    "kube-audit-admin",
    "kube-controller-manager",
    "kube-scheduler",
}
"""The control plane's resource log categories of Microsoft.ContainerService/managedClusters
(Azure Monitor, "Supported logs for Microsoft.ContainerService/managedClusters"; the CSI
drivers' categories left out). `kube-audit` (table AKSAudit): every audit event, get and list
included; `kube-audit-admin` (AKSAuditAdmin): the same without get and list."""


def test_aks_sends_the_whole_audit_log(platform: Platform) -> None:
    """Who read which secret is a `get`: only `kube-audit` has it."""
    properties = setting(platform, "aks")["aks"]["diagnosticSetting"]["properties"]
    categories = {log["category"] for log in properties["logs"] if log["enabled"]}
    assert categories <= AKS_LOG_CATEGORIES
    assert "kube-audit" in categories
    assert properties["logAnalyticsDestinationType"] == "Dedicated"  # the AKSAudit table


def test_the_aks_check_refuses_what_the_api_refuses() -> None:
    good = {"logs": [{"category": "kube-audit", "enabled": True}]}
    assert _diagnostic_setting(good) == ({"properties": good}, [])
    misspelled = {"log": [{"category": "kube-audit", "enabled": True}]}
    assert _diagnostic_setting(misspelled)[0] != {"properties": misspelled}
    unknown = {"logs": [{"category": "kube-audit", "enabled": True, "level": "all"}]}
    assert _diagnostic_setting(unknown)[0] != {"properties": unknown}
    assert _diagnostic_setting({"logs": [{"category": "kube-audit"}]})[1] == ["logs[0].enabled"]
    exceptions = upstream("azure.core.exceptions", "azure-core")
    with pytest.raises(exceptions.DeserializationError):
        _diagnostic_setting({"logs": [{"category": "kube-audit", "enabled": "sometimes"}]})


# --- CoreWeave: no setting to render ---------------------------------------------------------


def test_coreweave_gets_no_file_and_the_readme_says_where_the_log_is(platform: Platform) -> None:
    """CKS has no customer setting for its audit log: it is kept and shown on CoreWeave
    Grafana's Kubernetes Audit Logs dashboard, and Telemetry Relay's Audit Logs stream forwards
    it (docs.coreweave.com: observability/managed-grafana/cks/kubernetes-audit-logs,
    observability/telemetry-forwarding/relay)."""
    view = view_as(platform, "coreweave")
    assert list(audit_logging.render(view)) == list(audit.render(view)) == []
    note = audit_logging.readme_note("coreweave")
    for needle in ("Kubernetes Audit Logs", "Telemetry Relay", "telemetry-forwarding/relay"):
        assert needle in note


def test_docs_say_where_each_file_goes() -> None:
    text = (Path(REPO) / "docs" / "audit-policy.md").read_text()
    for needle in (
        "audit-logging.yaml",
        "update-cluster-config",
        "set-iam-policy",
        "diagnostic-settings create",
        "Telemetry Relay",
    ):
        assert needle in text, needle
