"""The API server's own first steps: discovery (served versions), decoding, RBAC.

Expectations come from upstream: kubectl's and the API server's words from their source
(cli-runtime `pkg/resource/mapper.go`, apiserver `pkg/endpoints/handlers/rest.go`,
`responsewriters/errors.go`, sigs.k8s.io/json, Go's encoding/json), the served versions from
Kubernetes' deprecation guide and release notes, the RBAC matching cases from Kubernetes'
`plugin/pkg/auth/authorizer/rbac/rbac_test.go`, and the RBAC expectations on the example from
reading the ClusterRole gpuplane renders (rendered/prod-east/tenancy/clusterrole-*.yaml).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from renderer.admission.apiserver import decode, discovery, rbac
from renderer.admission.apiserver.builtin_api import builtin_api
from renderer.admission.apiserver.gate import RenderedCluster, Request, UserInfo
from renderer.admission.apiserver.gojson import Walker, go_float_text
from renderer.admission.apiserver.gonames import FIELD_TYPES
from renderer.admission.apiserver.resources import known_kinds
from renderer.admission.apiserver.resources import resource_for as resource_of
from renderer.admission.rendered import rendered_cluster
from renderer.pipeline import load_platform
from tests.conftest import REPO, SHARED_CRDS

WORKLOADS_2 = REPO.parent / "shared" / "reference" / "workloads-2" / "kubernetes-website"
VERSIONS = ("1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36")
NOBODY = UserInfo("alice", ("system:authenticated",))


@pytest.fixture(scope="module")
def prod_east() -> RenderedCluster:
    platform = load_platform(REPO).platform
    return rendered_cluster(platform, platform.clusters["prod-east"])


def _request(obj: dict[str, Any], version: str = "1.33", namespace: str = "ns") -> Request:
    return Request(obj, namespace, NOBODY, RenderedCluster("test", version))


def _shared(name: str) -> dict[str, Any]:
    path = WORKLOADS_2 / name
    if not path.is_file():
        pytest.skip("../shared/reference/workloads-2 is not beside this checkout")
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


# -- the two upstream manifests the API server refuses ----------------------------------------


def test_batch_v1beta1_cronjob_is_not_served_and_goes_on_as_batch_v1() -> None:
    """workloads-2/kubernetes-website/cronjob.yaml (apiVersion batch/v1beta1, removed in 1.25:
    the deprecation guide). kubectl's words: cli-runtime `infoForData` and apimachinery
    `NoKindMatchError` for the one version searched."""
    cronjob = _shared("cronjob.yaml")
    outcome = discovery.gate(_request(cronjob), source="cronjob.yaml")
    assert outcome.refused
    assert [r.message for r in outcome.refusals] == [
        'resource mapping not found for name: "hello" namespace: "" from "cronjob.yaml": '
        'no matches for kind "CronJob" in version "batch/v1beta1"\n'
        "ensure CRDs are installed first"
    ]
    assert "apiVersion: batch/v1" in outcome.refusals[0].fix
    assert outcome.obj is not None and outcome.obj["apiVersion"] == "batch/v1"
    assert outcome.obj["spec"] == cronjob["spec"]
    handed_on = decode.gate(_request(dict(outcome.obj)))
    assert handed_on.status == "passed"


def test_node_affinity_written_as_a_list_is_refused_by_decoding() -> None:
    """workloads-2/kubernetes-website/pod-with-node-affinity.yaml writes
    `requiredDuringSchedulingIgnoredDuringExecution` (a `*v1.NodeSelector` in k8s.io/api
    core/v1 `NodeAffinity`) as a list. `transformDecodeError` wraps Go's `UnmarshalTypeError`;
    the struct is the one whose field it is, the field path has no indices."""
    pod = _shared("pod-with-node-affinity.yaml")
    assert discovery.gate(_request(pod), source="pod-with-node-affinity.yaml").status == "passed"
    outcome = decode.gate(_request(pod))
    assert outcome.refused
    assert [r.message for r in outcome.refusals] == [
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array into Go '
        "struct field NodeAffinity.spec.affinity.nodeAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution of type v1.NodeSelector"
    ]
    assert "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution" in (
        outcome.refusals[0].fix
    )


def test_the_corpora_meet_only_the_two_refusals_their_sources_name() -> None:
    """Both folders of ../shared/reference: SOURCES.md of workloads-2 names the only two files
    the API server cannot take (cronjob.yaml: batch/v1beta1; pod-with-node-affinity.yaml: a
    list for an object); every other object passes discovery and decoding at 1.33."""
    root = REPO.parent / "shared" / "reference"
    if not (root / "workloads-2").is_dir():
        pytest.skip("../shared/reference is not beside this checkout")
    refused: dict[str, list[str]] = {}
    for folder in ("workloads", "workloads-2"):
        for path in sorted((root / folder).rglob("*.yaml")):
            for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if not isinstance(document, dict) or not isinstance(document.get("kind"), str):
                    continue
                items = document.get("items") if document["kind"] == "List" else [document]
                for obj in items if isinstance(items, list) else ():
                    request = _request(obj)
                    for gate in (discovery.gate, decode.gate):
                        if gate(request).refused:
                            key = str(path.relative_to(root))
                            refused.setdefault(key, []).append(gate.__module__.rsplit(".")[-1])
    assert refused == {
        "workloads-2/kubernetes-website/cronjob.yaml": ["discovery"],
        "workloads-2/kubernetes-website/pod-with-node-affinity.yaml": ["decode"],
    }


# -- served versions, 1.30 to 1.36 --------------------------------------------------------------

# (group, version, kind) -> the minors that serve it by default. From the deprecation guide's
# removed-API table, the release notes of each graduation (ServiceCIDR GA 1.33, DRA
# resource.k8s.io/v1 and VolumeAttributesClass GA 1.34, MutatingAdmissionPolicy GA 1.36), and
# KEP-3136 (a beta API is off unless --runtime-config turns it on).
SERVED: list[tuple[tuple[str, str, str], tuple[str, ...]]] = [
    (("batch", "v1beta1", "CronJob"), ()),
    (("batch", "v1", "CronJob"), VERSIONS),
    (("batch", "v1", "Job"), VERSIONS),
    (("policy", "v1beta1", "PodDisruptionBudget"), ()),
    (("policy", "v1beta1", "PodSecurityPolicy"), ()),
    (("policy", "v1", "PodDisruptionBudget"), VERSIONS),
    (("autoscaling", "v2beta2", "HorizontalPodAutoscaler"), ()),
    (("autoscaling", "v2beta1", "HorizontalPodAutoscaler"), ()),
    (("autoscaling", "v2", "HorizontalPodAutoscaler"), VERSIONS),
    (("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema"), ()),
    (("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema"), ("1.30", "1.31")),
    (("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"), VERSIONS),
    (("storage.k8s.io", "v1beta1", "CSIStorageCapacity"), ()),
    (("storage.k8s.io", "v1", "VolumeAttributesClass"), ("1.34", "1.35", "1.36")),
    (("extensions", "v1beta1", "Ingress"), ()),
    (("extensions", "v1beta1", "Deployment"), ()),
    (("apps", "v1beta2", "Deployment"), ()),
    (("networking.k8s.io", "v1", "Ingress"), VERSIONS),
    (("networking.k8s.io", "v1", "ServiceCIDR"), ("1.33", "1.34", "1.35", "1.36")),
    (("resource.k8s.io", "v1alpha3", "ResourceClaim"), ()),
    (("resource.k8s.io", "v1beta1", "ResourceClaim"), ()),
    (("resource.k8s.io", "v1beta2", "ResourceClaimTemplate"), ()),
    (("resource.k8s.io", "v1", "ResourceClaimTemplate"), ("1.34", "1.35", "1.36")),
    (("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"), VERSIONS),
    (("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy"), ()),
    (("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy"), ()),
    (("admissionregistration.k8s.io", "v1", "MutatingAdmissionPolicy"), ("1.36",)),
    (("", "v1", "Pod"), VERSIONS),
    (("", "v1", "CronJob"), ()),
]


@pytest.mark.parametrize(("gvk", "minors"), SERVED, ids=["/".join(c[0]) for c in SERVED])
def test_served_versions_by_release(gvk: tuple[str, str, str], minors: tuple[str, ...]) -> None:
    for minor in VERSIONS:
        api = builtin_api(minor)
        assert api is not None
        assert api.served(*gvk) == (minor in minors), (gvk, minor)


@pytest.mark.parametrize("minor", VERSIONS)
def test_discovery_refuses_what_the_release_does_not_serve(minor: str) -> None:
    group, version, kind = "resource.k8s.io", "v1beta1", "ResourceClaimTemplate"
    obj = {"apiVersion": f"{group}/{version}", "kind": kind, "metadata": {"name": "gpu"}}
    outcome = discovery.gate(_request(obj, minor), source="claim.yaml")
    assert outcome.refused
    if minor in ("1.34", "1.35", "1.36"):
        # resource.k8s.io/v1 serves it; v1beta1's devices list is not v1's: nothing to change
        assert "use apiVersion: resource.k8s.io/v1" in outcome.refusals[0].fix
    elif minor in ("1.32", "1.33"):  # the beta exists, off by default
        assert "does not serve resource.k8s.io/v1beta1 by default" in outcome.refusals[0].fix
        assert "--runtime-config" in outcome.refusals[0].fix
    else:  # before 1.32 DRA was alpha only: v1alpha2 (1.30), then v1alpha3 (1.31)
        alpha = {"1.30": "v1alpha2", "1.31": "v1alpha3"}[minor]
        assert f"only at resource.k8s.io/{alpha}," in outcome.refusals[0].fix


@pytest.mark.parametrize(
    ("api_version", "kind", "served_as", "minor"),
    [
        # deprecation guide: "Migrate manifests ... to use the <version> API version"
        ("batch/v1beta1", "CronJob", "batch/v1", "1.30"),
        ("policy/v1beta1", "PodDisruptionBudget", "policy/v1", "1.33"),
        ("autoscaling/v2beta2", "HorizontalPodAutoscaler", "autoscaling/v2", "1.36"),
        (
            "flowcontrol.apiserver.k8s.io/v1beta3",
            "FlowSchema",
            "flowcontrol.apiserver.k8s.io/v1",
            "1.32",
        ),
        ("extensions/v1beta1", "Deployment", "apps/v1", "1.31"),
        ("extensions/v1beta1", "Ingress", "networking.k8s.io/v1", "1.35"),
        ("apps/v1beta2", "StatefulSet", "apps/v1", "1.34"),
    ],
)
def test_the_fix_is_the_version_the_guide_names(
    api_version: str, kind: str, served_as: str, minor: str
) -> None:
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "n"}}
    outcome = discovery.gate(_request(obj, minor))
    assert outcome.refused
    assert outcome.refusals[0].message == (
        f'resource mapping not found for name: "x" namespace: "n" from "STDIN": no matches '
        f'for kind "{kind}" in version "{api_version}"\nensure CRDs are installed first'
    )
    assert f"use apiVersion: {served_as}," in outcome.refusals[0].fix
    assert outcome.obj is not None and outcome.obj["apiVersion"] == served_as


def test_an_object_that_reads_otherwise_at_the_served_version_is_not_handed_on() -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu"},
        "spec": {"spec": {"devices": {"requests": [{"name": "g", "deviceClassName": "gpu"}]}}},
    }
    outcome = discovery.gate(_request(claim, "1.34"))
    assert outcome.refused and outcome.obj is None
    # resource.k8s.io/v1 DeviceRequest moved deviceClassName under `exactly`
    assert "spec.spec.devices.requests[0].deviceClassName" in outcome.refusals[0].fix


def test_a_misspelt_builtin_kind_is_refused_with_the_close_name() -> None:
    outcome = discovery.gate(_request({"apiVersion": "batch/v1", "kind": "Jobs"}))
    assert outcome.refused
    assert outcome.refusals[0].fix == "did you mean kind: Job?"


def test_metadata_kubectl_cannot_decode_is_refused_before_discovery() -> None:
    """cli-runtime `metadataValidatingDecoder`: a boolean label value."""
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": True}}}
    outcome = discovery.gate(_request(obj), source="pod.yaml")
    assert [r.message for r in outcome.refusals] == [
        'unable to decode "pod.yaml": json: cannot unmarshal bool into Go struct field '
        "ObjectMeta.metadata.labels of type string"
    ]


# -- custom kinds -------------------------------------------------------------------------------


def test_a_crd_version_the_operator_does_not_serve_is_refused() -> None:
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha1", "kind": "JobSet", "metadata": {"name": "j"}}
    outcome = discovery.gate(_request(obj), source="js.yaml")
    assert outcome.refused
    assert outcome.refusals[0].message.startswith('resource mapping not found for name: "j"')
    assert "use apiVersion: jobset.x-k8s.io/v1alpha2" in outcome.refusals[0].fix
    ray = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"}}
    assert discovery.gate(_request(ray)).status == "passed"


def test_an_unknown_custom_kind_is_a_note_not_a_refusal() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    outcome = discovery.gate(_request(obj))
    assert outcome.status == "passed" and not outcome.refusals
    assert "does not know its CRD" in outcome.notes[0]
    assert decode.gate(_request(obj)).status == "skipped"


def test_resource_names_match_the_upstream_crds() -> None:
    index_file = SHARED_CRDS / "index.json"
    if not index_file.is_file():
        pytest.skip("../shared/crds is not beside this checkout")
    index = {(e["group"], e["kind"]): e for e in json.loads(index_file.read_text())}
    checked = 0
    for group, kind in known_kinds():
        if (group, kind) in index:
            resource = resource_of(group, kind)
            assert resource is not None
            assert resource.resource == index[(group, kind)]["plural"]
            assert resource.namespaced == (index[(group, kind)]["scope"] == "Namespaced")
            checked += 1
    assert checked >= 12


# -- decoding -----------------------------------------------------------------------------------


def _job(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def _container(**fields: Any) -> dict[str, Any]:
    return {"template": {"spec": {"containers": [{"name": "c", "image": "i", **fields}]}}}


DECODING = [
    # Go's UnmarshalTypeError: Value "number" for a number into a string, the struct being
    # the one whose field it is (EnvVar), no index in the field path
    (
        _container(env=[{"name": "N", "value": 9}]),
        "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers"
        ".env.value of type string",
    ),
    # a mapping where a list is expected: the slice type, as reflect writes it
    (
        _container(ports={"containerPort": 80}),
        "json: cannot unmarshal object into Go struct field Container.spec.template.spec."
        "containers.ports of type []v1.ContainerPort",
    ),
    # a fraction into an int32: Value "number <text>"
    (
        {"parallelism": 1.5, **_container()},
        "json: cannot unmarshal number 1.5 into Go struct field JobSpec.spec.parallelism of "
        "type int32",
    ),
    # a named string type (k8s.io/api core/v1 `RestartPolicy`)
    (
        {"template": {"spec": {"restartPolicy": 5, "containers": []}}},
        "json: cannot unmarshal number into Go struct field PodSpec.spec.template.spec."
        "restartPolicy of type v1.RestartPolicy",
    ),
    # a named map type (`ResourceList`)
    (
        _container(resources={"limits": ["cpu"]}),
        "json: cannot unmarshal array into Go struct field ResourceRequirements.spec.template."
        "spec.containers.resources.limits of type v1.ResourceList",
    ),
    # resource.Quantity's UnmarshalJSON: ParseQuantity's ErrFormatWrong, no field context
    (
        _container(resources={"limits": {"memory": "1GB"}}),
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
    # ... and it wins over a type error met before it (it stops decoding)
    (
        {"parallelism": "2", **_container(resources={"limits": {"memory": "1Gii"}})},
        "unable to parse quantity's suffix",
    ),
    # intstr.IntOrString's UnmarshalJSON decodes a non-string as an int32
    (
        _container(livenessProbe={"httpGet": {"port": 8.5}}),
        "json: cannot unmarshal number 8.5 into Go struct field HTTPGetAction.spec.template."
        "spec.containers.livenessProbe.httpGet.port of type int32",
    ),
]


@pytest.mark.parametrize(("spec", "error"), DECODING)
def test_decoding_errors_are_the_api_servers(spec: dict[str, Any], error: str) -> None:
    outcome = decode.gate(_request(_job(spec)))
    assert [r.message for r in outcome.refusals] == [
        f'Job in version "v1" cannot be handled as a Job: {error}'
    ]


def test_a_float_whole_number_decodes_as_an_integer() -> None:
    """kubectl sends YAML's `3.0` as JSON `3` (Go's float encoding), which an int32 takes."""
    assert go_float_text(3.0) == "3"
    assert decode.gate(_request(_job({"parallelism": 3.0, **_container()}))).status == "passed"


def test_unknown_fields_are_strict_decoding_errors_in_the_decoders_order() -> None:
    """kubectl sends every object's keys sorted; sigs.k8s.io/json reports unknown fields as it
    meets them, map keys and indices in the path, and only when nothing else failed."""
    job = _job({"zeta": 1, "alpha": 2, **_container(imagePullPolicyy="Always")})
    job["metadata"]["Labels"] = {}
    outcome = decode.gate(_request(job))
    assert [r.message for r in outcome.refusals] == [
        'Job in version "v1" cannot be handled as a Job: strict decoding error: '
        'unknown field "metadata.Labels", unknown field "spec.alpha", unknown field '
        '"spec.template.spec.containers[0].imagePullPolicyy", unknown field "spec.zeta"'
    ]
    assert outcome.obj is not None
    assert "zeta" not in outcome.obj["spec"] and "Labels" not in outcome.obj["metadata"]
    assert "imagePullPolicyy" not in outcome.obj["spec"]["template"]["spec"]["containers"][0]
    assert "zeta" in job["spec"]  # the request's object is left as it was


@pytest.mark.parametrize("minor", VERSIONS)
def test_a_field_is_unknown_before_the_release_that_adds_it(minor: str) -> None:
    """Pod-level `spec.resources` (KEP-2837) arrived in v1.32, as alpha: the Go type has the
    field from then on, whatever the feature gate, so strict decoding knows it."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"resources": {"limits": {"cpu": "1"}}, "containers": [{"name": "c"}]},
    }
    outcome = decode.gate(_request(pod, minor))
    if minor in ("1.30", "1.31"):
        assert [r.message for r in outcome.refusals] == [
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "spec.resources"'
        ]
    else:
        assert outcome.status == "passed"


def test_a_type_error_hides_the_unknown_fields() -> None:
    job = _job({"bogus": 1, "parallelism": "2", **_container()})
    outcome = decode.gate(_request(job))
    assert "strict decoding error" not in outcome.refusals[0].message
    assert "JobSpec.spec.parallelism of type int32" in outcome.refusals[0].message


def test_custom_resources_are_not_decoded_offline() -> None:
    obj = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"}, "spec": 1}
    outcome = decode.gate(_request(obj))
    assert outcome.status == "skipped" and "CRD" in outcome.notes[0]


def test_every_named_go_type_is_a_field_of_its_definition() -> None:
    api = builtin_api("1.36")
    assert api is not None
    for definition, fields in FIELD_TYPES.items():
        properties = api.definitions[definition].get("properties", {})
        assert set(fields) <= set(properties), definition


def test_every_served_builtin_kind_decodes_an_empty_object() -> None:
    """No definition the walker cannot read: every served kind of every release decodes its
    own minimal object."""
    for minor in VERSIONS:
        api = builtin_api(minor)
        assert api is not None
        for (group, version, kind), name in api.kinds.items():
            if not api.served(group, version, kind):
                continue
            api_version = f"{group}/{version}" if group else version
            walker = Walker(api.definitions)
            body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
            decoded = walker.decode(body, walker.definition_shape(name))
            assert decoded.error is None and not decoded.unknown, (minor, kind)


# -- RBAC: Kubernetes' RuleAllows cases (rbac_test.go TestRuleMatches), as data -----------------


def _rule(verbs: str, groups: str = "", resources: str = "", urls: str = "") -> dict[str, Any]:
    rule: dict[str, Any] = {"verbs": verbs.split(",")}
    if groups or resources:
        rule["apiGroups"] = groups.split(",")
        rule["resources"] = resources.split(",")
    if urls:
        rule["nonResourceURLs"] = urls.split(",")
    return rule


def _res(verb: str, group: str, resource: str, sub: str = "") -> rbac.Attributes:
    return rbac.Attributes(NOBODY, verb, group=group, resource=resource, subresource=sub)


def _url(verb: str, path: str) -> rbac.Attributes:
    return rbac.Attributes(NOBODY, verb, resource_request=False, path=path)


_GRID = [
    (v, g, r)
    for v in ("verb1", "verb2")
    for r in ("resource1", "resource2")
    for g in ("group1", "group2")
]
RULE_MATCHES: list[tuple[str, dict[str, Any], list[tuple[rbac.Attributes, bool]]]] = [
    (
        "star verb, exact match other",
        _rule("*", "group1", "resource1"),
        [(_res(v, g, r), g == "group1" and r == "resource1") for v, g, r in _GRID],
    ),
    (
        "star group, exact match other",
        _rule("verb1", "*", "resource1"),
        [(_res(v, g, r), v == "verb1" and r == "resource1") for v, g, r in _GRID],
    ),
    (
        "star resource, exact match other",
        _rule("verb1", "group1", "*"),
        [(_res(v, g, r), v == "verb1" and g == "group1") for v, g, r in _GRID],
    ),
    (
        "tuple expansion",
        _rule("verb1,verb2", "group1,group2", "resource1,resource2"),
        [(_res(v, g, r), True) for v, g, r in _GRID],
    ),
    (
        "subresource expansion",
        _rule("*", "*", "resource1/subresource1"),
        [(_res(v, "group1", "resource1", "subresource1"), True) for v in ("verb1", "verb2")]
        + [
            (_res(v, g, r, s), False)
            for v in ("verb1", "verb2")
            for g, r, s in (
                ("group2", "resource1", "subresource2"),
                ("group1", "resource2", "subresource1"),
                ("group2", "resource2", "subresource1"),
            )
        ],
    ),
    (
        "star nonresource, exact match other",
        _rule("verb1", urls="*"),
        [
            (_url(v, p), v == "verb1")
            for v in ("verb1", "verb2")
            for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")
        ],
    ),
    (
        "star nonresource subpath",
        _rule("verb1", urls="/foo/*"),
        [
            (_url("verb1", p), p.startswith("/foo/"))
            for p in (
                "/foo",
                "/foo/bar",
                "/foo/baz",
                "/foo/bar/one",
                "/foo/baz/one",
                "/notfoo",
                "/notfoo/bar",
                "/notfoo/baz",
                "/notfoo/bar/one",
                "/notfoo/baz/one",
            )
        ],
    ),
    (
        "star verb, exact nonresource",
        _rule("*", urls="/foo,/foo/bar/one"),
        [
            (_url(v, p), p in ("/foo", "/foo/bar/one"))
            for v in ("verb1", "verb2")
            for p in ("/foo", "/foo/bar", "/foo/baz", "/foo/bar/one", "/foo/baz/one")
        ],
    ),
]


@pytest.mark.parametrize(("name", "rule", "cases"), RULE_MATCHES, ids=[c[0] for c in RULE_MATCHES])
def test_rule_allows_as_kubernetes(
    name: str, rule: dict[str, Any], cases: list[tuple[rbac.Attributes, bool]]
) -> None:
    for attributes, expected in cases:
        assert rbac.rule_allows(attributes, rule) == expected, (name, attributes)


def test_rule_with_resource_names_never_allows_a_create() -> None:
    """`ResourceNameMatches`: a create has no name yet."""
    rule = {**_rule("create", "batch", "jobs"), "resourceNames": ["j"]}
    assert not rbac.rule_allows(_res("create", "batch", "jobs"), rule)
    named = rbac.Attributes(NOBODY, "get", group="batch", resource="jobs", name="j")
    assert rbac.rule_allows(named, {**rule, "verbs": ["get"]})


# TestAuthorizer (rbac_test.go): roles, bindings, requests that pass and that fail.
def _binding(
    kind: str, role_kind: str, role: str, subjects: str, namespace: str = ""
) -> dict[str, Any]:
    meta = {"name": f"{role}-{namespace or 'cluster'}"}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [
            {"kind": s.split(":", 1)[0], "name": s.split(":", 1)[1]} for s in subjects.split()
        ],
    }


def _cluster_role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": list(rules),
    }


def _attrs(user: str, groups: str, verb: str, resource: str, sub: str, ns: str) -> rbac.Attributes:
    info = UserInfo(user, tuple(groups.split(",")))
    return rbac.Attributes(info, verb, resource=resource, subresource=sub, namespace=ns)


AUTHORIZER: list[tuple[list[dict[str, Any]], list[rbac.Attributes], list[rbac.Attributes]]] = [
    (
        [
            _cluster_role("admin", _rule("*", "*", "*", "*")),
            _binding("RoleBinding", "ClusterRole", "admin", "User:admin Group:admins", "ns1"),
        ],
        [
            _attrs("admin", "", "get", "Pods", "", "ns1"),
            _attrs("admin", "", "watch", "Pods", "", "ns1"),
            _attrs("admin", "group1", "watch", "Foobar", "", "ns1"),
            _attrs("joe", "admins", "watch", "Foobar", "", "ns1"),
            _attrs("joe", "group1,admins", "watch", "Foobar", "", "ns1"),
        ],
        [
            _attrs("admin", "", "GET", "Pods", "", "ns2"),
            _attrs("admin", "", "GET", "Nodes", "", ""),
            _attrs("admin", "admins", "GET", "Pods", "", "ns2"),
            _attrs("admin", "admins", "GET", "Nodes", "", ""),
        ],
    ),
    (
        [
            _cluster_role("admin", _rule("*", "*", "pods", "*")),
            _binding("RoleBinding", "ClusterRole", "admin", "User:admin Group:admins", "ns1"),
        ],
        [_attrs("admin", "", "get", "pods", "", "ns1")],
        [_attrs("admin", "", "get", "pods", "status", "ns1")],
    ),
    (
        [
            _cluster_role(
                "admin", _rule("*", "*", "pods/status", "*"), _rule("*", "*", "*/scale", "*")
            ),
            _binding("RoleBinding", "ClusterRole", "admin", "User:admin Group:admins", "ns1"),
        ],
        [
            _attrs("admin", "", "get", "pods", "status", "ns1"),
            _attrs("admin", "", "get", "pods", "scale", "ns1"),
            _attrs("admin", "", "get", "deployments", "scale", "ns1"),
            _attrs("admin", "", "get", "anything", "scale", "ns1"),
        ],
        [_attrs("admin", "", "get", "pods", "", "ns1")],
    ),
]


@pytest.mark.parametrize(("objects", "allowed", "denied"), AUTHORIZER)
def test_authorizer_as_kubernetes(
    objects: list[dict[str, Any]], allowed: list[rbac.Attributes], denied: list[rbac.Attributes]
) -> None:
    cluster = RenderedCluster("test", "1.33", tuple(objects))
    for attributes in allowed:
        assert rbac.authorize(cluster, attributes).allowed, attributes
    for attributes in denied:
        assert not rbac.authorize(cluster, attributes).allowed, attributes


def test_non_resource_urls_through_cluster_role_bindings() -> None:
    """TestAuthorizer's non-resource case: ClusterRoleBindings to users and groups."""
    cluster = RenderedCluster(
        "test",
        "1.33",
        (
            _cluster_role("getter", _rule("get", urls="/apis")),
            _cluster_role("prefix", _rule("get", urls="/apis/*")),
            _binding("ClusterRoleBinding", "ClusterRole", "getter", "User:foo Group:bar"),
            _binding("ClusterRoleBinding", "ClusterRole", "prefix", "User:prefixed"),
        ),
    )

    def allowed(user: str, groups: tuple[str, ...], verb: str, path: str) -> bool:
        attributes = rbac.Attributes(
            UserInfo(user, groups), verb, resource_request=False, path=path
        )
        return rbac.authorize(cluster, attributes).allowed

    assert allowed("foo", (), "get", "/apis") and allowed("", ("bar",), "get", "/apis")
    assert not allowed("foo", (), "watch", "/apis") and not allowed("foo", (), "get", "/api/v1")
    assert allowed("prefixed", (), "get", "/apis/v1/foobar")
    assert not allowed("prefixed", (), "get", "/api/v1")


def test_a_missing_role_is_the_reason_in_the_forbidden_message() -> None:
    cluster = RenderedCluster(
        "test", "1.33", (_binding("RoleBinding", "ClusterRole", "gone", "Group:g", "ns"),)
    )
    request = Request(_job({}), "ns", UserInfo("u", ("g",)), cluster)
    outcome = rbac.gate(request)
    assert outcome.refusals[0].message == (
        'jobs.batch is forbidden: User "u" cannot create resource "jobs" in API group "batch" '
        'in the namespace "ns": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
    )


def test_aggregated_cluster_roles_hold_the_rules_they_select() -> None:
    aggregated = {
        **_cluster_role("team"),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "team"}}]},
    }
    part = {**_cluster_role("jobs", _rule("create", "batch", "jobs"))}
    part["metadata"] = {"name": "jobs", "labels": {"agg": "team"}}
    other = _cluster_role("pods", _rule("create", "", "pods"))
    cluster = RenderedCluster(
        "test",
        "1.33",
        (aggregated, part, other, _binding("RoleBinding", "ClusterRole", "team", "Group:g", "ns")),
    )
    user = UserInfo("u", ("g",))
    job = rbac.Attributes(user, "create", group="batch", resource="jobs", namespace="ns")
    pod = rbac.Attributes(user, "create", resource="pods", namespace="ns")
    assert rbac.authorize(cluster, job).allowed
    assert not rbac.authorize(cluster, pod).allowed


# -- RBAC on the rendered example ---------------------------------------------------------------

# From reading rendered/prod-east/tenancy/clusterrole-gpuplane-team-member.yaml: which kinds the
# member role lets a team member create in the team's namespace (operators' kinds only where
# clusters/prod-east.yaml declares the operator: jobset, kuberay, trainer, lws).
MEMBER_CREATES = [
    ("batch/v1", "Job", True),
    ("batch/v1", "CronJob", True),
    ("v1", "Pod", True),
    ("apps/v1", "Deployment", True),
    ("jobset.x-k8s.io/v1alpha2", "JobSet", True),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob", True),
    ("kubeflow.org/v1", "PyTorchJob", False),  # no add-on installs the training operator
    ("ray.io/v1", "RayJob", True),
    ("ray.io/v1", "RayCronJob", False),  # KubeRay runs no controller for it (feature gate off)
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", True),
    ("v1", "PodTemplate", False),  # get, list, watch only
    ("v1", "ResourceQuota", False),  # get, list, watch only
    ("networking.k8s.io/v1", "NetworkPolicy", False),  # get, list, watch only
    ("rbac.authorization.k8s.io/v1", "RoleBinding", False),  # get, list, watch only
    ("resource.k8s.io/v1", "ResourceClaimTemplate", False),  # resource.k8s.io not listed
    ("workload.codeflare.dev/v1beta2", "AppWrapper", False),  # prod-east declares no appwrapper
    ("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", False),  # only trainjobs listed
]


@pytest.mark.parametrize(("api_version", "kind", "allowed"), MEMBER_CREATES)
def test_what_a_team_member_may_create(
    prod_east: RenderedCluster, api_version: str, kind: str, allowed: bool
) -> None:
    user = rbac.member_of(prod_east, "vision-train")
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    outcome = rbac.gate(Request(obj, "vision-train", user, prod_east))
    assert outcome.status == ("passed" if allowed else "refused")


def test_member_of_reads_the_groups_of_the_rendered_binding(prod_east: RenderedCluster) -> None:
    binding = prod_east.named("RoleBinding", "gpuplane-team-member", "vision-train")
    assert binding is not None
    groups = tuple(s["name"] for s in binding["subjects"] if s["kind"] == "Group")
    user = rbac.member_of(prod_east, "vision-train")
    assert user.groups == (*groups, "system:authenticated")
    assert user.username == "vision-member"


def test_a_member_may_not_create_a_cluster_role(prod_east: RenderedCluster) -> None:
    user = rbac.member_of(prod_east, "vision-train")
    obj = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {}}
    outcome = rbac.gate(Request(obj, "vision-train", user, prod_east))
    assert [r.message for r in outcome.refusals] == [
        'clusterroles.rbac.authorization.k8s.io is forbidden: User "vision-member" cannot '
        'create resource "clusterroles" in API group "rbac.authorization.k8s.io" at the '
        "cluster scope"
    ]


def test_a_member_may_not_create_a_resource_quota(prod_east: RenderedCluster) -> None:
    user = rbac.member_of(prod_east, "vision-train")
    obj = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}}
    outcome = rbac.gate(Request(obj, "vision-train", user, prod_east))
    assert [r.message for r in outcome.refusals] == [
        'resourcequotas is forbidden: User "vision-member" cannot create resource '
        '"resourcequotas" in API group "" in the namespace "vision-train"'
    ]
    assert "platform team" in outcome.refusals[0].fix


def test_another_teams_namespace_is_refused(prod_east: RenderedCluster) -> None:
    user = rbac.member_of(prod_east, "vision-train")
    outcome = rbac.gate(Request(_job({}), "llm-train", user, prod_east))
    assert [r.message for r in outcome.refusals] == [
        'jobs.batch is forbidden: User "vision-member" cannot create resource "jobs" in API '
        'group "batch" in the namespace "llm-train"'
    ]
    binding = prod_east.named("RoleBinding", "gpuplane-team-member", "llm-train")
    assert binding is not None
    for subject in binding["subjects"]:  # whom to ask: the namespace's own members
        assert f'{subject["kind"]} "{subject["name"]}"' in outcome.refusals[0].fix
    assert 'team "llm"' in outcome.refusals[0].fix
    own = rbac.member_of(prod_east, "llm-train")
    assert rbac.gate(Request(_job({}), "llm-train", own, prod_east)).status == "passed"


def test_forbidden_message_escapes_html_as_the_api_server() -> None:
    """responsewriters `sanitizer`: `&`, `<`, `>` in the message become entities."""
    attributes = rbac.Attributes(UserInfo("<a&b>"), "create", resource="pods", namespace="n")
    assert rbac.forbidden_message(attributes, "pods") == (
        'pods is forbidden: User "&lt;a&amp;b&gt;" cannot create resource "pods" in API group '
        '"" in the namespace "n"'
    )


def test_every_kind_fit_reads_has_a_resource() -> None:
    from renderer.admission.workloads.readers import FILE_READERS, READERS

    for group, kind in (*READERS, *FILE_READERS):
        assert resource_of(group, kind) is not None, (group, kind)


def test_gates_never_raise_on_odd_objects(prod_east: RenderedCluster) -> None:
    user = rbac.member_of(prod_east, "vision-train")
    odd: list[Any] = [
        {},
        {"apiVersion": 5, "kind": []},
        {"apiVersion": "v1", "kind": "Pod", "metadata": []},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5}, "spec": "x"},
        {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [None, 3, {"env": {}}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {1: 2, None: 3, 2.5: [{}]}},
    ]
    for obj in odd:
        request = Request(obj, "vision-train", user, prod_east)
        for gate in (discovery.gate, decode.gate, rbac.gate):
            assert gate(request).step is not None
