"""Tests for renderer.output.validation: bundled built-in schemas and operator CRD schemas."""

from __future__ import annotations

import copy
import importlib.resources
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.output.crds import CrdLoadError
from renderer.output.kubernetes_schemas import UnsupportedKubernetesVersion
from renderer.output.validation import OutputValidator, SchemaProblem

# The upstream CRDs live beside the checkout (../shared/crds); they are never copied in here.
CRDS = Path(__file__).resolve().parents[2] / "shared" / "crds"
KUEUE = CRDS / "kueue"
needs_crds = pytest.mark.skipif(
    not (KUEUE / "kueue.x-k8s.io_clusterqueues.yaml").is_file(),
    reason=f"upstream CRDs not found at {CRDS} (the shared/ folder beside the checkout)",
)

K8S = "1.33"


def messages(problems: list[SchemaProblem]) -> list[str]:
    return [f"{p.path}: {p.message}" for p in problems]


@pytest.fixture(scope="module")
def builtin() -> OutputValidator:
    return OutputValidator()


@pytest.fixture(scope="module")
def kueue() -> OutputValidator:
    if not KUEUE.is_dir():
        pytest.skip(f"upstream CRDs not found at {CRDS}")
    return OutputValidator([KUEUE])


# ------------------------------------------------------------------------------------------
# Built-in kinds

NAMESPACE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Namespace",
    "metadata": {
        "name": "team-a",
        "labels": {"app.kubernetes.io/managed-by": "gpuplane", "kueue.x-k8s.io/team": "a"},
        "annotations": {"gpuplane.io/owner": "Team A <team-a@example.com>"},
    },
}

VALID_BUILTINS: list[dict[str, Any]] = [
    NAMESPACE,
    {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpu-quota", "namespace": "team-a"},
        "spec": {
            "hard": {
                "requests.nvidia.com/gpu": "8",
                "limits.nvidia.com/gpu": 8,
                "requests.cpu": "64",
                "requests.memory": "512Gi",
            },
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                ]
            },
        },
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "team-a-edit", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "team-a"},
            {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"},
        ],
    },
    {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": "team-a"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [
                {
                    "from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}],
                    "ports": [{"protocol": "TCP", "port": 8080}, {"port": "metrics"}],
                }
            ],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "team-a"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "1", "memory": "2Gi"},
                    "defaultRequest": {"cpu": "500m", "memory": "1Gi"},
                    "max": {"nvidia.com/gpu": 8},
                }
            ]
        },
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "gpu-high"},
        "value": 100000,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "High priority GPU training",
    },
]


@pytest.mark.parametrize("obj", VALID_BUILTINS, ids=lambda o: o["kind"])
def test_valid_builtins_pass(builtin: OutputValidator, obj: dict[str, Any]) -> None:
    assert builtin.validate(obj, K8S) == []


def test_unknown_field_in_builtin_fails(builtin: OutputValidator) -> None:
    obj = copy.deepcopy(NAMESPACE)
    obj["spec"] = {"finalizers": ["kubernetes"], "fooBar": True}
    obj["extra"] = 1
    assert builtin.validate(obj, K8S) == [
        SchemaProblem("", "unknown field 'extra'"),
        SchemaProblem("spec", "unknown field 'fooBar'"),
    ]


def test_wrong_type_is_reported_with_its_path(builtin: OutputValidator) -> None:
    priority = copy.deepcopy(VALID_BUILTINS[5])
    priority["value"] = "high"
    assert builtin.validate(priority, K8S) == [
        SchemaProblem("value", "'high' is not of type 'integer'")
    ]

    policy = copy.deepcopy(VALID_BUILTINS[3])
    policy["spec"]["ingress"][0]["ports"][0]["port"] = True
    policy["spec"]["policyTypes"] = "Ingress"
    problems = builtin.validate(policy, K8S)
    assert problems == [
        SchemaProblem("spec.ingress[0].ports[0].port", "true is not of type 'string' or 'integer'"),
        SchemaProblem("spec.policyTypes", "'Ingress' is not of type 'array'"),
    ]


def test_null_in_a_builtin_union_is_unset(builtin: OutputValidator) -> None:
    policy = copy.deepcopy(VALID_BUILTINS[3])
    policy["spec"]["ingress"][0]["ports"][0]["port"] = None
    assert builtin.validate(policy, K8S) == []


def test_keys_that_are_not_identifiers_are_quoted_in_paths(builtin: OutputValidator) -> None:
    quota = copy.deepcopy(VALID_BUILTINS[1])
    quota["spec"]["hard"]["requests.nvidia.com/gpu"] = [8]
    assert messages(builtin.validate(quota, K8S)) == [
        "spec.hard[\"requests.nvidia.com/gpu\"]: an array is not of type 'string' or 'number'"
    ]


def test_metadata_names_and_labels_are_checked(builtin: OutputValidator) -> None:
    obj = copy.deepcopy(NAMESPACE)
    obj["metadata"]["name"] = "Team_A"
    obj["metadata"]["labels"] = {"ok": "yes", "bad key!": "v", "team": "not valid!"}
    problems = builtin.validate(obj, K8S)
    assert [p.path for p in problems] == [
        'metadata.labels["bad key!"]',
        "metadata.labels.team",
        "metadata.name",
    ]
    assert "not a valid name" in problems[2].message

    nameless = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
    assert builtin.validate(nameless, K8S) == [
        SchemaProblem("metadata", "missing required field 'name'")
    ]


def test_problems_are_sorted_and_deduplicated(builtin: OutputValidator) -> None:
    obj = copy.deepcopy(VALID_BUILTINS[2])
    obj["subjects"] = [{"kind": 1}, {"kind": 2}, {"zzz": 1}]
    obj["aaa"] = 1
    obj["subjects"].extend({"kind": "User"} for _ in range(9))  # subjects[3] .. subjects[11]
    problems = builtin.validate(obj, K8S)
    assert len(problems) == len(set(problems))
    # By path (indexes in numeric order, a parent before its children), then message.
    paths = [p.path for p in problems]
    assert paths[0] == ""
    assert paths.index("subjects[2]") < paths.index("subjects[10]")
    assert problems[1:3] == [
        SchemaProblem("subjects[0]", "missing required field 'name'"),
        SchemaProblem("subjects[0].kind", "1 is not of type 'string'"),
    ]
    assert SchemaProblem("subjects[0]", "missing required field 'name'") in problems
    assert SchemaProblem("subjects[2]", "unknown field 'zzz'") in problems


# ------------------------------------------------------------------------------------------
# Kubernetes versions

SCHEMA_ROOT = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"


def test_device_class_v1_exists_from_1_34_only(builtin: OutputValidator) -> None:
    # Confirm against the bundled data first, so the assertion below means what it says.
    assert not (SCHEMA_ROOT / "v1.33.0-local-strict" / "deviceclass-resource-v1.json").is_file()
    assert (SCHEMA_ROOT / "v1.34.0-local-strict" / "deviceclass-resource-v1.json").is_file()
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]},
    }
    assert builtin.validate(device_class, "1.34") == []
    assert builtin.validate(device_class, "1.33") == [
        SchemaProblem("", "no schema for resource.k8s.io/v1 DeviceClass in Kubernetes 1.33")
    ]
    # The v1beta1 form existed in 1.33.
    assert builtin.validate({**device_class, "apiVersion": "resource.k8s.io/v1beta1"}, "1.33") == []


def test_version_selection_uses_numeric_order() -> None:
    from renderer.output.kubernetes_schemas import schema_dir_for

    assert schema_dir_for("1.33") == ("v1.33.0-local-strict", "1.33")
    assert schema_dir_for("v1.33.4") == ("v1.33.0-local-strict", "1.33")
    assert schema_dir_for("1.33.2-eks-1a2b3c") == ("v1.33.0-local-strict", "1.33")
    assert schema_dir_for("1.30") == ("v1.30.0-local-strict", "1.30")


@pytest.mark.parametrize("version", ["1.12", "1.9", "1.99", "2.0", "banana", ""])
def test_unsupported_versions_raise(builtin: OutputValidator, version: str) -> None:
    with pytest.raises(UnsupportedKubernetesVersion, match=r"1\.25 to 1\.\d\d"):
        builtin.validate(NAMESPACE, version)
    assert issubclass(UnsupportedKubernetesVersion, ValueError)


# ------------------------------------------------------------------------------------------
# Malformed objects and unknown kinds


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"kind": "Namespace", "metadata": {"name": "a"}}, [("", "missing required field")]),
        ({"apiVersion": "v1", "metadata": {"name": "a"}}, [("", "missing required field 'kind'")]),
        ({"apiVersion": 1, "kind": "Namespace"}, [("apiVersion", "not a non-empty string")]),
        ({"apiVersion": "v1", "kind": ""}, [("kind", "not a non-empty string")]),
        ({"apiVersion": "a/b/c", "kind": "X"}, [("apiVersion", "is not 'group/version'")]),
        ({"apiVersion": "/v1", "kind": "X"}, [("apiVersion", "is not 'group/version'")]),
    ],
)
def test_missing_or_invalid_api_version_or_kind_is_a_problem(
    builtin: OutputValidator, obj: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    problems = builtin.validate(obj, K8S)
    assert [(p.path, m) for p, (_, m) in zip(problems, expected, strict=True)] == [
        (path, m) for path, m in expected
    ]
    for problem, (_, fragment) in zip(problems, expected, strict=True):
        assert fragment in problem.message


def test_a_non_mapping_is_a_problem(builtin: OutputValidator) -> None:
    assert builtin.validate([1, 2], K8S) == [SchemaProblem("", "an array is not an object")]  # type: ignore[arg-type]


def test_unknown_kind_is_a_problem(builtin: OutputValidator) -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert builtin.validate(widget, K8S) == [
        SchemaProblem(
            "", "no schema for example.com/v1 Widget: pass the operator's CRDs with --crds"
        )
    ]
    # "batch.volcano.sh" is not the built-in "batch" group.
    volcano = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"}}
    assert "--crds" in builtin.validate(volcano, K8S)[0].message
    # A built-in group with a kind it does not have.
    ghost = {"apiVersion": "apps/v1", "kind": "Ghost", "metadata": {"name": "g"}}
    assert builtin.validate(ghost, K8S) == [
        SchemaProblem("", "no schema for apps/v1 Ghost in Kubernetes 1.33")
    ]


def test_kind_is_matched_exactly(builtin: OutputValidator) -> None:
    lower = {"apiVersion": "v1", "kind": "namespace", "metadata": {"name": "a"}}
    assert builtin.validate(lower, K8S) == [
        SchemaProblem("", "no schema for v1 namespace in Kubernetes 1.33")
    ]


# ------------------------------------------------------------------------------------------
# CRDs (Kueue v0.19.2)

RESOURCE_FLAVOR: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "h100-80gb", "labels": {"gpuplane.io/pool": "h100"}},
    "spec": {
        "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ],
    },
}

CLUSTER_QUEUE: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ClusterQueue",
    "metadata": {"name": "team-a"},
    "spec": {
        "cohortName": "research",
        "namespaceSelector": {
            "matchLabels": {"gpuplane.io/team": "a"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}],
        },
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100-80gb",
                        "resources": [
                            {"name": "cpu", "nominalQuota": 64, "borrowingLimit": "32"},
                            {"name": "memory", "nominalQuota": "512Gi", "lendingLimit": "128Gi"},
                            {
                                "name": "nvidia.com/gpu",
                                "nominalQuota": "16",
                                "borrowingLimit": 8,
                                "lendingLimit": 4,
                            },
                        ],
                    },
                    {
                        "name": "a100-40gb",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "32"},
                            {"name": "memory", "nominalQuota": "256Gi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": 16},
                        ],
                    },
                ],
            }
        ],
        "preemption": {
            "reclaimWithinCohort": "Any",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
            "withinClusterQueue": "LowerPriority",
        },
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "stopPolicy": "None",
    },
}


def _quota(obj: dict[str, Any], flavor: int = 0, resource: int = 2) -> dict[str, Any]:
    quota: dict[str, Any] = obj["spec"]["resourceGroups"][0]["flavors"][flavor]["resources"][
        resource
    ]
    return quota


@needs_crds
def test_valid_resource_flavor_and_cluster_queue_pass(kueue: OutputValidator) -> None:
    assert kueue.validate(RESOURCE_FLAVOR, K8S) == []
    assert kueue.validate(CLUSTER_QUEUE, K8S) == []


@needs_crds
def test_unknown_field_in_cluster_queue_spec_fails(kueue: OutputValidator) -> None:
    obj = copy.deepcopy(CLUSTER_QUEUE)
    obj["spec"]["fooBar"] = 1
    obj["spec"]["resourceGroups"][0]["flavors"][1]["weight"] = 2
    assert kueue.validate(obj, K8S) == [
        SchemaProblem("spec", "unknown field 'fooBar'"),
        SchemaProblem("spec.resourceGroups[0].flavors[1]", "unknown field 'weight'"),
    ]


@needs_crds
def test_cluster_queue_errors_are_precise(kueue: OutputValidator) -> None:
    obj = copy.deepcopy(CLUSTER_QUEUE)
    obj["spec"]["queueingStrategy"] = "LIFO"
    obj["spec"]["resourceGroups"][0]["flavors"][1]["name"] = "h100-80gb"  # duplicate map key
    del obj["spec"]["resourceGroups"][0]["coveredResources"]
    _quota(obj, 0, 0)["nominalQuota"] = "lots"
    assert kueue.validate(obj, K8S) == [
        SchemaProblem(
            "spec.queueingStrategy", "'LIFO' is not one of 'StrictFIFO', 'BestEffortFIFO'"
        ),
        SchemaProblem("spec.resourceGroups[0]", "missing required field 'coveredResources'"),
        SchemaProblem(
            "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
            "'lots' is not a valid quantity (such as '16', '500m', '64Gi')",
        ),
        SchemaProblem("spec.resourceGroups[0].flavors[1]", "duplicate entry with name='h100-80gb'"),
    ]


@needs_crds
@pytest.mark.parametrize("value", ["16", 16, "500m", "64Gi", "1e3", 0])
def test_int_or_string_quantities_accept_both_forms(kueue: OutputValidator, value: object) -> None:
    obj = copy.deepcopy(CLUSTER_QUEUE)
    _quota(obj)["nominalQuota"] = value
    _quota(obj)["borrowingLimit"] = value
    assert kueue.validate(obj, K8S) == []


@needs_crds
@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.5, "1.5 is not of type 'integer' or 'string'"),
        (None, "null is not of type 'integer' or 'string'"),
        (True, "true is not of type 'integer' or 'string'"),
        ("16 GPUs", "'16 GPUs' is not a valid quantity (such as '16', '500m', '64Gi')"),
    ],
)
def test_bad_quantities_fail(kueue: OutputValidator, value: object, message: str) -> None:
    obj = copy.deepcopy(CLUSTER_QUEUE)
    _quota(obj)["nominalQuota"] = value
    assert kueue.validate(obj, K8S) == [
        SchemaProblem("spec.resourceGroups[0].flavors[0].resources[2].nominalQuota", message)
    ]


@needs_crds
def test_served_versions(kueue: OutputValidator) -> None:
    # v1beta1 is still served (deprecated) by Kueue v0.19.2; its ClusterQueue says "cohort".
    v1beta1 = copy.deepcopy(CLUSTER_QUEUE)
    v1beta1["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    v1beta1["spec"]["cohort"] = v1beta1["spec"].pop("cohortName")
    assert kueue.validate(v1beta1, K8S) == []
    # ... and the schema really is the v1beta1 one.
    assert kueue.validate({**CLUSTER_QUEUE, "apiVersion": "kueue.x-k8s.io/v1beta1"}, K8S) == [
        SchemaProblem("spec", "unknown field 'cohortName'")
    ]

    invented = {**CLUSTER_QUEUE, "apiVersion": "kueue.x-k8s.io/v1alpha9"}
    (problem,) = kueue.validate(invented, K8S)
    assert problem.path == "apiVersion"
    assert "not served" in problem.message
    assert "served versions: v1beta1, v1beta2" in problem.message


@needs_crds
def test_custom_resource_metadata_is_checked(kueue: OutputValidator) -> None:
    obj = copy.deepcopy(RESOURCE_FLAVOR)
    obj["metadata"] = {"labels": {"a": 1}, "annotations": "x", "colour": "red"}
    assert kueue.validate(obj, K8S) == [
        SchemaProblem("metadata", "missing required field 'name'"),
        SchemaProblem("metadata", "unknown field 'colour'"),
        SchemaProblem("metadata.annotations", "'x' is not of type 'object'"),
        SchemaProblem("metadata.labels.a", "1 is not of type 'string'"),
    ]
    obj["metadata"] = {"name": "x" * 254}
    (problem,) = kueue.validate(obj, K8S)
    assert problem.path == "metadata.name"
    assert "at most 253" in problem.message
    del obj["metadata"]
    assert kueue.validate(obj, K8S) == [SchemaProblem("", "missing required field 'metadata'")]


@needs_crds
def test_known_kinds_and_scope(kueue: OutputValidator) -> None:
    kinds = kueue.known_kinds()
    for version in ("v1beta1", "v1beta2"):
        assert (f"kueue.x-k8s.io/{version}", "ClusterQueue") in kinds
        assert (f"kueue.x-k8s.io/{version}", "LocalQueue") in kinds
    assert kueue.is_namespaced("kueue.x-k8s.io/v1beta2", "LocalQueue") is True
    assert kueue.is_namespaced("kueue.x-k8s.io/v1beta2", "ClusterQueue") is False
    assert kueue.is_namespaced("v1", "Namespace") is None
    assert kueue.is_namespaced("example.com/v1", "Widget") is None
    assert OutputValidator().known_kinds() == set()


@needs_crds
def test_folder_loads_everything_in_index() -> None:
    index = json.loads((CRDS / "index.json").read_text())
    validator = OutputValidator([CRDS])
    expected = {(f"{e['group']}/{v}", e["kind"]) for e in index for v in e["versions"]}
    assert validator.known_kinds() == expected
    for entry in index:
        namespaced = validator.is_namespaced(
            f"{entry['group']}/{entry['versions'][0]}", entry["kind"]
        )
        assert namespaced is (entry["scope"] == "Namespaced")
    # Every served version of every shipped CRD compiles and validates without raising
    # (Go-only regex syntax, exotic keywords, ...).
    for api_version, kind in sorted(expected):
        problems = validator.validate(
            {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}, K8S
        )
        assert all(isinstance(p, SchemaProblem) for p in problems)


@needs_crds
def test_kind_list_file_with_several_documents_loads(tmp_path: Path) -> None:
    # The form `kubectl get crd -o yaml` prints, plus other documents that must be ignored.
    items = [
        yaml.load((KUEUE / name).read_text(), Loader=yaml.CSafeLoader)
        for name in ("kueue.x-k8s.io_clusterqueues.yaml", "kueue.x-k8s.io_resourceflavors.yaml")
    ]
    dump = tmp_path / "crds.yaml"
    dump.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
        + "---\n"
        + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        + "---\n"
    )
    validator = OutputValidator([dump])
    assert validator.known_kinds() == {
        (f"kueue.x-k8s.io/{v}", k)
        for v in ("v1beta1", "v1beta2")
        for k in ("ClusterQueue", "ResourceFlavor")
    }
    assert validator.validate(CLUSTER_QUEUE, K8S) == []
    assert validator.validate(RESOURCE_FLAVOR, K8S) == []

    as_json = tmp_path / "crds.json"
    as_json.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items[:1]}))
    assert len(OutputValidator([as_json]).known_kinds()) == 2


@needs_crds
def test_same_crd_twice_is_fine_but_conflicting_copies_are_not(tmp_path: Path) -> None:
    assert OutputValidator([KUEUE, KUEUE / "kueue.x-k8s.io_cohorts.yaml"]).known_kinds()
    changed = yaml.load((KUEUE / "kueue.x-k8s.io_cohorts.yaml").read_text(), yaml.CSafeLoader)
    changed["spec"]["versions"][0]["served"] = False
    other = tmp_path / "cohorts-old.yaml"
    other.write_text(yaml.safe_dump(changed))
    with pytest.raises(CrdLoadError, match=r"cohorts-old\.yaml"):
        OutputValidator([KUEUE, other]).known_kinds()


# ------------------------------------------------------------------------------------------
# CRD loading errors and schema conversion (synthetic CRDs)


def _crd(schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    entry = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    entry.update(version)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [entry],
        },
    }


WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "note": {"type": "string", "nullable": True},
                "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "partly": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "integer"}},
                },
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {
                        "spec": {"type": "object", "properties": {"x": {"type": "string"}}}
                    },
                },
                "code": {"type": "string", "pattern": "^(?i)[a-z]+$"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "choice": {
                    "type": "object",
                    "properties": {"one": {"type": "string"}, "two": {"type": "string"}},
                    "oneOf": [{"required": ["one"]}, {"required": ["two"]}],
                },
            },
        }
    },
}


def _widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "team-a"},
        "spec": {"size": 1, **spec},
    }


@pytest.fixture()
def widgets(tmp_path: Path) -> OutputValidator:
    path = tmp_path / "widgets.yaml"
    path.write_text(yaml.safe_dump(_crd(WIDGET_SCHEMA)))
    return OutputValidator([tmp_path])


def test_openapi_extensions_are_honoured(widgets: OutputValidator) -> None:
    ok = _widget(
        size="2",
        note=None,
        mode=None,
        free={"anything": {"goes": [1, 2]}},
        partly={"known": 1, "other": "kept"},
        template={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"x": "y"},
        },
        code="ABC",
        tags=["a", "b"],
        choice={"one": "1"},
    )
    assert widgets.validate(ok, K8S) == []
    assert widgets.is_namespaced("example.com/v1", "Widget") is True

    bad = _widget(
        size=2.5,
        mode="c",
        partly={"known": "x"},
        template={"spec": {"x": "y", "z": 1}, "status": {}},
        code="abc1",
        tags=["a", "a"],
        choice={"one": "1", "two": "2"},
    )
    assert messages(widgets.validate(bad, K8S)) == [
        "spec.choice: an object does not match exactly one of the allowed forms",
        "spec.code: 'abc1' does not match the pattern '(?i)^[a-z]+$'",
        "spec.mode: 'c' is not one of 'a', 'b'",
        "spec.partly.known: 'x' is not of type 'integer'",
        "spec.size: 2.5 is not of type 'integer' or 'string'",
        "spec.tags[1]: duplicate entry 'a'",
        "spec.template: unknown field 'status'",
        "spec.template.spec: unknown field 'z'",
    ]
    assert widgets.validate(_widget(choice={}), K8S) == [
        SchemaProblem("spec.choice", "missing required field 'one'")
    ]
    missing = _widget()
    del missing["spec"]["size"]
    assert widgets.validate(missing, K8S) == [
        SchemaProblem("spec", "missing required field 'size'")
    ]


def test_broken_yaml_raises_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken-crd.yaml"
    broken.write_text("apiVersion: apiextensions.k8s.io/v1\nkind: [unclosed\n")
    with pytest.raises(CrdLoadError, match=r"broken-crd\.yaml"):
        OutputValidator([broken]).load_all()
    with pytest.raises(CrdLoadError, match=r"broken-crd\.yaml"):
        OutputValidator([tmp_path]).known_kinds()


def test_crd_without_schema_raises_naming_the_file(tmp_path: Path) -> None:
    crd = _crd(WIDGET_SCHEMA)
    del crd["spec"]["versions"][0]["schema"]
    path = tmp_path / "no-schema.yaml"
    path.write_text(yaml.safe_dump(crd))
    with pytest.raises(CrdLoadError, match=r"no-schema\.yaml.*openAPIV3Schema"):
        OutputValidator([path]).load_all()


def test_other_crd_load_errors(tmp_path: Path) -> None:
    with pytest.raises(CrdLoadError, match="does-not-exist"):
        OutputValidator([tmp_path / "does-not-exist"])
    old = _crd(WIDGET_SCHEMA)
    old["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    (tmp_path / "old.yaml").write_text(yaml.safe_dump(old))
    with pytest.raises(CrdLoadError, match=r"old\.yaml.*v1beta1"):
        OutputValidator([tmp_path / "old.yaml"]).load_all()


def test_non_crd_documents_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "notes.yaml").write_text("just: a map\n---\n- a list\n---\n")
    (tmp_path / "README.md").write_text("not: read\n: [")
    assert OutputValidator([tmp_path]).known_kinds() == set()


def test_unserved_version_is_rejected(tmp_path: Path) -> None:
    crd = _crd(WIDGET_SCHEMA)
    crd["spec"]["versions"].append({**crd["spec"]["versions"][0], "name": "v2", "served": False})
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(crd))
    validator = OutputValidator([tmp_path])
    assert validator.known_kinds() == {("example.com/v1", "Widget")}
    (problem,) = validator.validate({**_widget(), "apiVersion": "example.com/v2"}, K8S)
    assert problem.path == "apiVersion"
    assert problem.message.endswith("served versions: v1")


# ------------------------------------------------------------------------------------------
# Throughput sanity (not a timed assertion: it just exercises the caches)


def test_many_namespaces() -> None:
    validator = OutputValidator()
    for i in range(2000):
        obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"team-{i}"}}
        assert validator.validate(obj, K8S) == []


# --- the compiled check ----------------------------------------------------------------------------


MUTATIONS: list[Any] = [7, -1, "x", "A" * 300, None, [1], {"a": 1}, True, 1.5, [], {}]


def test_the_compiled_check_agrees_with_jsonschema_on_every_builtin_kind() -> None:
    """jsonschema-rs decides whether a built-in object is valid, and only a refused object goes
    through jsonschema for the problems' words: so the two must agree, object by object. Every
    built-in kind the example renders, and every field of it replaced in turn by values of the
    wrong type, range or length, or given an unknown key."""
    from renderer.model.view import ClusterView
    from renderer.output.kubernetes_schemas import KNOWN_BUILTIN_GROUPS, schema_dir_for
    from renderer.output.manifest import Manifest
    from renderer.output.validation import _split_api_version
    from renderer.pipeline import load_platform, render_cluster
    from tests.conftest import REPO, json_paths

    platform = load_platform(REPO).platform
    validator = OutputValidator()
    kinds: dict[tuple[str, str, str], tuple[Any, Any]] = {}
    for name in sorted(platform.clusters):
        version = platform.clusters[name].kubernetes_version
        schema_dir, _ = schema_dir_for(version)
        for output in render_cluster(ClusterView.of(platform, platform.clusters[name])):
            if not isinstance(output, Manifest):
                continue
            parts = _split_api_version(output.body["apiVersion"])
            assert parts is not None
            if parts[0] not in KNOWN_BUILTIN_GROUPS:
                continue
            compiled = validator._builtin_validator(schema_dir, *parts, output.body["kind"])
            assert compiled is not None
            kinds.setdefault(
                (schema_dir, output.body["apiVersion"], output.body["kind"]),
                (output.body, compiled),
            )
    assert len(kinds) > 15
    checked = refused = 0
    for (_, _, kind), (body, compiled) in sorted(kinds.items()):
        for index, path in enumerate(json_paths(body)[1:]):  # every field, not the body
            for mutation in (MUTATIONS[index % len(MUTATIONS)], "unknown"):
                changed = copy.deepcopy(body)
                target = changed
                for key in path[:-1]:
                    target = target[key]
                if mutation == "unknown":
                    if not isinstance(target[path[-1]], dict):
                        continue
                    target[path[-1]]["zzUnknownField"] = 1
                else:
                    target[path[-1]] = copy.deepcopy(mutation)
                valid = not any(True for _ in compiled.validator.iter_errors(changed))
                assert compiled.fast.is_valid(changed) == valid, (kind, path, mutation)
                checked += 1
                refused += not valid
    print(f"{len(kinds)} kinds, {checked} changes, {refused} refused")
    assert refused > checked / 3  # most changes break something: the test sees both verdicts


def test_a_kind_too_long_for_a_file_name_has_no_schema() -> None:
    obj = {"apiVersion": "v1", "kind": "A" * 300, "metadata": {"name": "x"}}
    (problem,) = OutputValidator().validate(obj, K8S)
    assert problem.message.startswith("no schema for v1 AAA")
