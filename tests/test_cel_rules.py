"""The CRDs' `x-kubernetes-validations` rules, evaluated as the API server evaluates them.

Each upstream CRD's rule classes are broken by an object written from the rule's own text, and
the expected message is read from the CRD file (never from gpuplane's output); defaults are
applied first; a rule gpuplane cannot evaluate is reported, never passed; the example platform
renders with no rule broken.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.findings.diagnostics import Location, Severity
from renderer.model.view import ClusterView
from renderer.output.cel import compile_rules, is_ip
from renderer.output.cel_report import UncheckedRules
from renderer.output.defaults import apply_defaults
from renderer.output.manifest import Manifest
from renderer.output.validation import Checked, OutputValidator
from renderer.pipeline import load_platform, render_cluster, render_platform
from tests.conftest import INPUT_FOLDERS, REPO, SHARED_CRDS

K8S = "1.33"


def _rules(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        yield from node.get("x-kubernetes-validations") or ()
        for value in node.values():
            yield from _rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from _rules(value)


def crd_message(operator: str, file: str, rule_part: str) -> str:
    """The message of the rule of an upstream CRD whose text contains `rule_part`."""
    path = SHARED_CRDS / operator / file
    if not path.is_file():
        pytest.skip("../shared/crds is not beside this checkout")
    document = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    found = {r["message"] for r in _rules(document["spec"]["versions"]) if rule_part in r["rule"]}
    assert len(found) == 1, (rule_part, found)
    return found.pop()


def check(
    validator: OutputValidator, obj: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> Checked:
    checked = validator.check(obj, K8S, old_of=lambda: old)
    assert not checked.problems, checked.problems  # the rules run on a schema-valid object
    return checked


def messages(checked: Checked) -> list[str]:
    return [v.message for v in checked.cel]


def flavor(spec: Mapping[str, Any], name: str = "a100") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": dict(spec),
    }


# --- Kueue ------------------------------------------------------------------------------------


def test_resource_flavor_topology_needs_node_labels(validator: OutputValidator) -> None:
    message = crd_message(
        "kueue", "kueue.x-k8s.io_resourceflavors.yaml", "self.nodeLabels.size() >= 1"
    )
    checked = check(validator, flavor({"topologyName": "t", "nodeLabels": {}}))
    assert messages(checked) == [f'spec: Invalid value: "object": {message}']
    # without nodeLabels the rule errors, as cel-go words it, and the object is refused all the same
    checked = check(validator, flavor({"topologyName": "t"}))
    assert messages(checked) == [
        f'spec: Invalid value: "object": no such key: nodeLabels evaluating rule: {message}'
    ]
    assert not check(validator, flavor({"topologyName": "t", "nodeLabels": {"a": "b"}})).cel


@pytest.mark.parametrize(
    ("toleration", "rule_part"),
    [
        ({"operator": "Equal", "value": "x"}, "!has(x.key) ? x.operator == 'Exists'"),
        (
            {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5},
            "x.effect == 'NoExecute'",
        ),
        ({"key": "k", "operator": "In"}, "x.operator in ['Equal', 'Exists']"),
        ({"key": "k", "operator": "Exists", "value": "v"}, "? !has(x.value) : true"),
        ({"key": "k", "effect": "Sometimes"}, "!has(x.effect) || x.effect in"),
    ],
)
def test_resource_flavor_tolerations(
    validator: OutputValidator, toleration: dict[str, Any], rule_part: str
) -> None:
    message = crd_message("kueue", "kueue.x-k8s.io_resourceflavors.yaml", rule_part)
    checked = check(validator, flavor({"tolerations": [toleration]}))
    assert f'spec.tolerations: Invalid value: "array": {message}' in messages(checked)


def test_resource_flavor_taint_effect(validator: OutputValidator) -> None:
    message = crd_message("kueue", "kueue.x-k8s.io_resourceflavors.yaml", "self.all(x, x.effect in")
    checked = check(validator, flavor({"nodeTaints": [{"key": "k", "effect": "Never"}]}))
    assert messages(checked) == [f'spec.nodeTaints: Invalid value: "array": {message}']


def topology(levels: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "t"},
        "spec": {"levels": [{"nodeLabel": label} for label in levels]},
    }


def test_topology_levels(validator: OutputValidator) -> None:
    hostname = crd_message("kueue", "kueue.x-k8s.io_topologies.yaml", "self[size(self) - 1]")
    unique = crd_message("kueue", "kueue.x-k8s.io_topologies.yaml", "size(self.filter(j, j == i))")
    checked = check(validator, topology(["kubernetes.io/hostname", "rack"]))
    assert messages(checked) == [f'spec.levels: Invalid value: "array": {hostname}']
    checked = check(validator, topology(["rack", "rack", "kubernetes.io/hostname"]))
    assert messages(checked) == [f'spec.levels: Invalid value: "array": {unique}']
    assert not check(validator, topology(["block", "rack", "kubernetes.io/hostname"])).cel


def cluster_queue(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": dict(spec),
    }


def group(resources: list[dict[str, Any]], covered: list[str]) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": [{"name": "f", "resources": resources}]}


def test_cluster_queue_rules(validator: OutputValidator) -> None:
    borrowing = crd_message("kueue", "kueue.x-k8s.io_clusterqueues.yaml", "!has(r.borrowingLimit)")
    covered = crd_message(
        "kueue", "kueue.x-k8s.io_clusterqueues.yaml", "size(x.resources) == size(self.covered"
    )
    gpu = {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 2}
    checked = check(
        validator, cluster_queue({"resourceGroups": [group([gpu], ["nvidia.com/gpu"])]})
    )
    assert messages(checked) == [f'spec: Invalid value: "object": {borrowing}']
    assert not check(
        validator,
        cluster_queue({"cohortName": "c", "resourceGroups": [group([gpu], ["nvidia.com/gpu"])]}),
    ).cel
    two = ["nvidia.com/gpu", "cpu"]
    checked = check(
        validator, cluster_queue({"cohortName": "c", "resourceGroups": [group([gpu], two)]})
    )
    assert messages(checked) == [f'spec.resourceGroups[0]: Invalid value: "object": {covered}']


def test_defaults_are_applied_before_the_rules(validator: OutputValidator) -> None:
    """reclaimWithinCohort defaults to Never and whenCanBorrow to MayStopSearch: the rules that
    read them fail with their message, not with a missing key."""
    preemption = crd_message(
        "kueue", "kueue.x-k8s.io_clusterqueues.yaml", "self.reclaimWithinCohort == 'Never'"
    )
    fungibility = crd_message("kueue", "kueue.x-k8s.io_clusterqueues.yaml", "!has(self.preference)")
    checked = check(
        validator,
        cluster_queue(
            {
                "preemption": {"borrowWithinCohort": {"policy": "LowerPriority"}},
                "flavorFungibility": {"preference": "BorrowingOverPreemption"},
            }
        ),
    )
    assert sorted(messages(checked)) == sorted(
        [
            f'spec.flavorFungibility: Invalid value: "object": {fungibility}',
            f'spec.preemption: Invalid value: "object": {preemption}',
        ]
    )


def test_apply_defaults_as_the_api_server() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "default": "x"},
                    "n": {"type": "string", "default": "d"},
                    "keep": {"type": "string", "nullable": True, "default": "d"},
                    "inner": {
                        "type": "object",
                        "default": {},
                        "properties": {"b": {"type": "integer", "default": 3}},
                    },
                    "absent": {
                        "type": "object",
                        "properties": {"c": {"type": "integer", "default": 1}},
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"d": {"type": "boolean", "default": True}},
                        },
                    },
                    "map": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"e": {"type": "string", "default": "m"}},
                        },
                    },
                },
            }
        },
    }
    obj: dict[str, Any] = {
        "spec": {"a": "set", "n": None, "keep": None, "items": [{}, {"d": False}], "map": {"k": {}}}
    }
    before = json.dumps(obj, sort_keys=True)
    assert apply_defaults(obj, schema) == {
        "spec": {
            "a": "set",
            "n": "d",  # null in a non-nullable field is defaulted
            "keep": None,  # a nullable null is kept
            "inner": {"b": 3},  # the default, then defaulted inside
            "items": [{"d": True}, {"d": False}],
            "map": {"k": {"e": "m"}},
            # "absent" stays absent: a default never creates its parent
        }
    }
    assert json.dumps(obj, sort_keys=True) == before


def _walked_defaults(value: Any, schema: Any) -> None:
    """The defaulting algorithm as written first (apiextensions-apiserver `Default`, read
    property by property at every mapping): the reference `apply_defaults` keeps to, now that it
    looks each schema node's defaults up once."""
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        for key, prop in properties.items():
            if (
                isinstance(prop, Mapping)
                and "default" in prop
                and (key not in value or (value[key] is None and prop.get("nullable") is not True))
            ):
                value[key] = copy.deepcopy(prop["default"])
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if isinstance(item, dict | list):
                _walked_defaults(item, properties.get(key, extra))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _walked_defaults(item, schema.get("items"))


def test_defaults_as_walked_on_every_template_and_object_of_the_example(
    validator: OutputValidator,
) -> None:
    """Every custom object and workload template the example renders, defaulted from its CRD's
    schema, is what the walk of every property gives (JobSet, RayJob, TrainJob, Kueue's, the
    GPU Operator's: schemas with defaults deep in pod templates, maps and lists)."""
    platform = load_platform(REPO).platform
    bodies = [
        output.body
        for name in sorted(platform.clusters)
        for output in render_cluster(ClusterView.of(platform, platform.clusters[name]))
        if "apiVersion" in output.body
    ]
    compared = 0
    for body in bodies:
        group, _, version = str(body["apiVersion"]).rpartition("/")
        crd = validator._find_explicit(group, str(body["kind"])) if group else None
        if crd is None or version not in crd.schemas:
            continue
        schema = crd.schemas[version]
        expected = copy.deepcopy(body)
        _walked_defaults(expected, schema)
        assert apply_defaults(body, schema) == expected
        compared += 1
    assert compared >= 100


_DEFAULTED = {
    "type": "object",
    "properties": {
        "a": {"type": "string", "default": "x"},
        "n": {"type": "string", "nullable": True, "default": "d"},
        "o": {"type": "object", "default": {"z": None}, "properties": {"z": {"default": 1}}},
        "plain": {"type": "object", "properties": {"q": {"type": "string"}}},
        "list": {"type": "array", "items": {"properties": {"d": {"default": True}}}},
    },
    "additionalProperties": {"properties": {"e": {"default": "m"}}, "items": {"default": 0}},
}

_OBJECTS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "n", "o", "z", "d", "e", "list", "x"]), inner),
    ),
    max_leaves=20,
)


@settings(max_examples=300, derandomize=True)
@given(st.dictionaries(st.sampled_from(["a", "n", "o", "plain", "list", "k", "m"]), _OBJECTS))
def test_defaults_as_walked_on_random_objects(obj: dict[str, Any]) -> None:
    expected = copy.deepcopy(obj)
    _walked_defaults(expected, _DEFAULTED)
    assert apply_defaults(obj, _DEFAULTED) == expected


def test_local_queue_cluster_queue_is_immutable(validator: OutputValidator) -> None:
    message = crd_message("kueue", "kueue.x-k8s.io_localqueues.yaml", "self == oldSelf")
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "team"},
        "spec": {"clusterQueue": "b"},
    }
    old = {**queue, "spec": {"clusterQueue": "a"}}
    checked = check(validator, queue, old)
    assert [(v.message, v.transition) for v in checked.cel] == [
        (f'spec.clusterQueue: Invalid value: "string": {message}', True)
    ]
    assert not check(validator, queue, queue).cel
    assert not check(validator, queue, None).cel  # a transition rule cannot fail on create


# --- JobSet, KubeRay, Kubeflow Trainer, GPU Operator, Argo Workflows ---------------------------


def test_jobset_startup_policy_and_depends_on(validator: OutputValidator) -> None:
    message = crd_message(
        "jobset", "jobset.x-k8s.io_jobsets.yaml", "startupPolicyOrder == 'InOrder'"
    )
    job = {
        "template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team"},
        "spec": {
            "startupPolicy": {"startupPolicyOrder": "InOrder"},
            "replicatedJobs": [
                {"name": "a", **job},
                {"name": "b", "dependsOn": [{"name": "a", "status": "Ready"}], **job},
            ],
        },
    }
    assert messages(check(validator, jobset)) == [f'spec: Invalid value: "object": {message}']


def test_rayjob_deletion_strategy(validator: OutputValidator) -> None:
    message = crd_message(
        "kuberay", "ray.io_rayjobs.yaml", "((has(self.onSuccess) && has(self.onFailure))"
    )
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "team"},
        "spec": {
            "entrypoint": "python x.py",
            "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}},
        },
    }
    checked = check(validator, rayjob)
    assert f'spec.deletionStrategy: Invalid value: "object": {message}' in messages(checked)


def test_trainjob_root_rule_on_the_name(validator: OutputValidator) -> None:
    message = crd_message(
        "kubeflow-trainer", "trainer.kubeflow.org_trainjobs.yaml", "self.metadata.name.matches"
    )
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "1-llama", "namespace": "team"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    }
    # a rule on the root has the nil field path, as the API server prints it
    assert f'<nil>: Invalid value: "object": {message}' in messages(check(validator, trainjob))


def test_nvidia_driver_default_without_node_selector(validator: OutputValidator) -> None:
    message = crd_message(
        "gpu-operator", "nvidia.com_nvidiadrivers.yaml", "!has(self.nodeSelector)"
    )
    driver = {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": "d"},
        "spec": {"default": True, "nodeSelector": {"pool": "h100"}},
    }
    assert f'spec: Invalid value: "object": {message}' in messages(check(validator, driver))


def test_argo_workflow_template_types(validator: OutputValidator) -> None:
    message = crd_message(
        "argo-workflows", "argoproj.io_workflows.yaml", "self.all(t, (has(t.container)"
    )
    workflow = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"name": "w", "namespace": "team"},
        "spec": {
            "entrypoint": "main",
            "templates": [
                {
                    "name": "main",
                    "container": {"image": "i"},
                    "script": {"image": "i", "source": "x"},
                }
            ],
        },
    }
    assert messages(check(validator, workflow)) == [
        f'spec.templates: Invalid value: "array": {message}'
    ]


# --- rule options and rules gpuplane cannot evaluate -------------------------------------------


def widget_crd(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A made-up namespaced CRD, widgets.example.com/v1 Widget, whose `spec` has this schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "properties": {"spec": dict(spec)}}
                    },
                }
            ],
        },
    }


def write_crd(folder: Path, rules: list[dict[str, Any]]) -> Path:
    crd = widget_crd(
        {
            "type": "object",
            "x-kubernetes-validations": rules,
            "properties": {
                "size": {"type": "integer"},
                "max": {"type": "integer", "default": 4},
                "memory": {"type": "string"},
            },
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "widget.yaml"
    path.write_text(yaml.safe_dump(crd))
    return path


def widget(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": dict(spec),
    }


def test_message_expression_field_path_and_reason(tmp_path: Path) -> None:
    validator = OutputValidator(
        [
            write_crd(
                tmp_path,
                [
                    {
                        "rule": "self.size <= self.max",
                        "messageExpression": "'size ' + string(self.size) + ' is over ' + string(self.max)",
                        "fieldPath": ".size",
                    },
                    {
                        "rule": "self.size > 0",
                        "reason": "FieldValueForbidden",
                        "message": "too small",
                    },
                    {"rule": "has(self.memory)", "reason": "FieldValueRequired"},
                    {"rule": "self.size != 9", "messageExpression": "''", "message": "not nine"},
                ],
            )
        ]
    )
    assert messages(validator.check(widget({"size": 5}), K8S)) == [
        'spec.size: Invalid value: "object": size 5 is over 4',  # max defaulted to 4
        "spec: Required value: failed rule: has(self.memory)",
    ]
    assert messages(validator.check(widget({"size": -1, "memory": "1Gi"}), K8S)) == [
        "spec: Forbidden: too small"
    ]
    # an empty messageExpression falls back to the message
    assert messages(validator.check(widget({"size": 9, "max": 10, "memory": "1"}), K8S)) == [
        'spec: Invalid value: "object": not nine'
    ]


def test_a_rule_gpuplane_cannot_evaluate_is_reported(tmp_path: Path) -> None:
    rules = [
        {"rule": "quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "small"},
        {"rule": "!has(oldSelf.size) || self.size >= oldSelf.size", "optionalOldSelf": True},
        {"rule": "self.size > 0"},
    ]
    validator = OutputValidator([write_crd(tmp_path, rules)])
    checked = validator.check(widget({"size": -1, "memory": "2Gi"}), K8S)
    assert [(u.rule, u.path) for u in checked.cel_unchecked] == [
        (rules[0]["rule"], "spec"),
        (rules[1]["rule"], "spec"),
    ]
    assert "quantity" in checked.cel_unchecked[0].why
    assert "optionalOldSelf" in checked.cel_unchecked[1].why
    # the evaluable rule still runs
    assert messages(checked) == ['spec: Invalid value: "object": failed rule: self.size > 0']

    summary = UncheckedRules()
    for name in ("a", "b"):
        body = {**widget({"size": 1}), "metadata": {"name": name, "namespace": "n"}}
        manifest = Manifest("templates", body, Location(f"teams/{name}.yaml"))
        summary.add(manifest, validator.check(body, K8S))
    found = list(summary.diagnostics())
    assert len(found) == 1  # once per CRD, not per object
    assert found[0].rule == "output-cel-unchecked" and found[0].severity is Severity.WARNING
    assert "widgets.example.com" in found[0].message and rules[0]["rule"] in found[0].message


def test_every_upstream_rule_compiles_or_says_why() -> None:
    """Every rule of the shared CRDs is evaluable: none needs a library gpuplane lacks."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    total = 0
    for path in sorted(SHARED_CRDS.rglob("*.yaml")):
        for document in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            for version in document["spec"]["versions"]:
                schema = version["schema"]["openAPIV3Schema"]
                compiled = compile_rules(schema)
                assert compiled.unchecked == (), (path.name, compiled.unchecked)
                total += sum(1 for _ in _rules(schema))
    assert total > 200


# --- the example platform -----------------------------------------------------------------------


def test_the_example_platform_breaks_no_rule(tmp_path: Path, validator: OutputValidator) -> None:
    root = tmp_path / "repo"
    for folder in INPUT_FOLDERS:
        shutil.copytree(REPO / folder, root / folder)
    shutil.copy(REPO / "gpuplane.yaml", root / "gpuplane.yaml")
    rendered = render_platform(root, validator)
    rules = {d.rule for d in rendered.diagnostics}
    assert not rules & {"output-cel", "output-cel-unchecked", "output-schema"}, [
        d.message for d in rendered.diagnostics
    ]
    assert rendered.manifests  # it rendered, so the rules ran


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # k8s.io/apiserver/pkg/cel/library/ip.go parseIPAddr: netip.ParseAddr, then no zone and
        # no IPv4-mapped IPv6
        ("192.168.0.1", True),
        ("2001:db8::68", True),
        ("::1", True),
        ("example.com", False),
        ("192.168.0.01", False),  # netip: IPv4 field has octet with leading zero
        ("1.2.3", False),
        ("fe80::1%eth0", False),  # a zone
        ("::ffff:192.168.0.1", False),  # IPv4-mapped IPv6
        ("", False),
    ],
)
def test_is_ip_reads_addresses_as_kubernetes_does(text: str, expected: bool) -> None:
    assert is_ip(text) is expected


def test_a_rule_with_is_ip_is_evaluated(tmp_path: Path) -> None:
    """A rule like the Gateway API TLSRoute's on `spec.hostnames`, on a widget's string."""
    rules = [{"rule": "!has(self.memory) || !isIP(self.memory)", "message": "no IPs"}]
    validator = OutputValidator([write_crd(tmp_path, rules)])
    assert messages(validator.check(widget({"size": 1, "memory": "a.example.com"}), K8S)) == []
    refused = validator.check(widget({"size": 1, "memory": "10.0.0.1"}), K8S)
    assert messages(refused) == ['spec: Invalid value: "object": no IPs']
