"""Secrets only by reference, at admission: the security layer's `secret_refs` policies validate
against each cluster's Kubernetes schemas and, evaluated with cel-python as the API server would
(tests/admission_cel.py), refuse secret values written into workloads and ConfigMaps and, where
the cluster declares a secret store, Secrets not written by the External Secrets Operator, while
every workload the templates layer renders and Kueue's examples are admitted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from renderer.layers.security import secret_refs
from renderer.output.manifest import Manifest
from renderer.output.validation import OutputValidator
from renderer.pipeline import Rendered, schema_pins
from tests.admission_cel import compile_expression, evaluate, kueue_webhook
from tests.conftest import REPO, render_clean

KUEUE_EXAMPLES = REPO.parent / "shared" / "reference" / "kueue-examples"
ALICE = "oidc:alice@example.com"
# ESO's chart names its controller after the release (external-secrets) in its namespace
ESO_CONTROLLER = "system:serviceaccount:external-secrets:external-secrets"
ARGOCD_CONTROLLER = "system:serviceaccount:argocd:argocd-application-controller"
HF_TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
GITHUB_TOKEN = "ghp_" + "a1B2" * 9
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
POLICIES = (
    secret_refs.ENV_POLICY,
    secret_refs.CONFIGMAP_POLICY,
    secret_refs.STORE_POLICY,
    secret_refs.EXTERNAL_SECRET_POLICY,
)


@pytest.fixture(scope="module")
def example() -> Rendered:
    rendered: Rendered = render_clean(REPO)
    return rendered


def mine(rendered: Rendered, cluster: str) -> list[Manifest]:
    return [
        m
        for m in rendered.manifests[cluster]
        if m.layer == "security" and m.name in POLICIES and "AdmissionPolicy" in m.kind
    ]


def policy(rendered: Rendered, cluster: str, name: str) -> dict[str, Any]:
    for m in mine(rendered, cluster):
        if m.kind == "ValidatingAdmissionPolicy" and m.name == name:
            return dict(m.body)
    raise AssertionError(f"no policy {name} on {cluster}")


def bound(rendered: Rendered, cluster: str, name: str) -> list[str]:
    for m in mine(rendered, cluster):
        if m.kind == "ValidatingAdmissionPolicyBinding" and m.name == name:
            (expr,) = m.body["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
            assert expr["key"] == "kubernetes.io/metadata.name"
            return list(expr["values"])
    raise AssertionError(f"no binding {name} on {cluster}")


def pod(*env: dict[str, Any], where: str = "containers") -> dict[str, Any]:
    main = {"name": "main", "image": "registry.example.com/llm/train:1"}
    spec: dict[str, Any] = {"containers": [main]}
    spec.setdefault(where, []).append({"name": "side", "image": main["image"], "env": list(env)})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "llm-train"},
        "spec": spec,
    }


def var(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def secret(kind: str = "Opaque") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "llm-train"},
        "type": kind,
        "data": {"token": "aHVudGVyMg=="},
    }


def configmap(data: dict[str, str] | None = None, **binary: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "llm-train"},
    }
    if data is not None:
        body["data"] = data
    if binary:
        body["binaryData"] = binary
    return body


# --- objects and schemas -----------------------------------------------------------------------


def test_every_cluster_gets_the_env_and_configmap_policies_bound_to_every_team_namespace(
    example: Rendered,
) -> None:
    for cluster, manifests in example.manifests.items():
        team_namespaces = sorted(
            m.name
            for m in manifests
            if m.kind == "Namespace" and "gpuplane.dev/team" in m.body["metadata"]["labels"]
        )
        assert team_namespaces
        for name in (secret_refs.ENV_POLICY, secret_refs.CONFIGMAP_POLICY):
            assert bound(example, cluster, name) == team_namespaces
        for m in mine(example, cluster):
            assert m.path.startswith("security/")
            if m.kind == "ValidatingAdmissionPolicy":
                assert m.body["spec"]["failurePolicy"] == "Fail"
            else:
                assert m.body["spec"]["validationActions"] == ["Deny"]
                assert m.body["spec"]["policyName"] == m.name


def test_the_store_policy_only_where_the_cluster_declares_a_store(example: Rendered) -> None:
    clusters = example.platform.clusters
    assert clusters["prod-east"].secret_store is not None
    assert clusters["staging-west"].secret_store is None
    for name in (secret_refs.STORE_POLICY, secret_refs.EXTERNAL_SECRET_POLICY):
        assert bound(example, "prod-east", name) == bound(example, "prod-east", POLICIES[0])
        assert name not in {m.name for m in mine(example, "staging-west")}
    # where no store is declared, a team owner's Secret is admitted: there is no other way in
    for m in mine(example, "staging-west"):
        if m.kind == "ValidatingAdmissionPolicy":
            rules = m.body["spec"]["matchConstraints"]["resourceRules"]
            assert not [r for r in rules if "secrets" in r["resources"]]


def test_the_policies_validate_against_each_clusters_kubernetes_schemas(
    example: Rendered, validator: OutputValidator
) -> None:
    checked = 0
    for cluster, found in ((c, mine(example, c)) for c in example.manifests):
        target = example.platform.clusters[cluster]
        for m in found:
            result = validator.check(m.body, target.kubernetes_version, schema_pins(target))
            assert result.unchecked is None, m.path  # really checked against the schema
            assert result.problems == [], m.path
            checked += 1
    assert checked == 12  # 4 pairs on prod-east, 2 on staging-west
    assert not [d for d in example.diagnostics if "security/" in d.message]


def test_a_broken_policy_fails_the_schema(example: Rendered, validator: OutputValidator) -> None:
    body = copy.deepcopy(policy(example, "prod-east", secret_refs.ENV_POLICY))
    del body["spec"]["validations"][0]["expression"]  # required
    body["spec"]["matchConstraints"]["resourceRules"][0]["operations"] = "CREATE"  # a list
    target = example.platform.clusters["prod-east"]
    assert validator.check(body, target.kubernetes_version, schema_pins(target)).problems


def test_every_expression_compiles(example: Rendered) -> None:
    for cluster in example.manifests:
        for m in mine(example, cluster):
            if m.kind != "ValidatingAdmissionPolicy":
                continue
            spec = m.body["spec"]
            for item in (*spec.get("variables", []), *spec["validations"]):
                compile_expression(item["expression"])


# --- environment variables ------------------------------------------------------------------------

REFUSED_ENV = [
    var("HF_TOKEN", HF_TOKEN),
    var("HF_TOKEN", "not-a-real-shape"),
    var("db_password", "hunter2hunter2"),  # any case
    var("PG_PASSWD", "x"),
    var("WANDB_API_KEY", "0123456789abcdef"),
    var("OPENAI_APIKEY", "abc"),
    var("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    var("AWS_ACCESS_KEY_ID", "abc"),  # ID is not a descriptor: half of a credential
    var("SSH_PRIVATE_KEY", "abc"),
    var("GCP_CREDENTIALS", '{"type": "service_account"}'),
    var("GOOGLE_APPLICATION_CREDENTIALS", '{"type": "service_account"}'),  # JSON, not a path
    var("BASIC_AUTH", "alice:wonderland"),
    var("HF_HUB_DISABLE_TOKEN", "hunter2"),  # the word counts; only a flag value is exempt
    var("AUTH_TYPE_SECRET", "abc"),  # the last word decides, not any word
    {"name": "HF_TOKEN", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "t"}}},
    {"name": "HF_TOKEN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['t']"}}},
    # any name, if the value has a key's or a token's shape
    var("MODEL_SOURCE", HF_TOKEN),
    var("GIT_REMOTE", f"https://x:{GITHUB_TOKEN}@github.com/o/r"),
    var("AWS_ID", AWS_KEY),
    var("DEPLOY", PRIVATE_KEY),
    var("NOTE", "xoxb-1234567890-abcdefghij"),
    var("NOTE", "glpat-" + "a" * 20),
]

ADMITTED_ENV = [
    {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
    var("TOKENIZERS_PARALLELISM", "disabled"),  # TOKENIZERS is another word
    var("MAX_TOKENS", "4096"),
    var("OAUTH_CLIENT_ID", "gpuplane"),
    var("HF_HUB_DISABLE_TOKEN", "1"),  # a flag
    var("AUTH_ENABLED", "TRUE"),
    var("HF_TOKEN", ""),
    {"name": "HF_TOKEN"},
    var("TOKEN_FILE", "/var/run/secrets/hf/token"),
    var("POSTGRES_PASSWORD_FILE", "/run/secrets/postgres-password"),
    var("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json"),  # a mounted Secret
    var("TLS_SECRET_NAME", "llm-serve-tls"),
    var("AUTH_URL", "https://idp.example.com/oauth2/token"),
    var("VAULT_AUTH_PATH", "kubernetes-prod-east"),
    var("HF_HOME", "/data/hf"),
    var("NCCL_DEBUG", "INFO"),
    var("ARN", "arn:aws:iam::123456789012:role/AKIAIOSFODNN7EXAMPLEXX"),  # no key: 18 after AKIA
    var("DATA", "a" * (secret_refs.MAX_SCANNED + 1)),  # too long to scan: not refused
]


@pytest.mark.parametrize("entry", REFUSED_ENV, ids=lambda e: e["name"])
@pytest.mark.parametrize("where", ["containers", "initContainers", "ephemeralContainers"])
def test_a_secret_written_into_a_pods_env_is_refused(
    example: Rendered, entry: dict[str, Any], where: str
) -> None:
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    assert len(evaluate(body, pod(entry, where=where))) >= 1


@pytest.mark.parametrize("entry", ADMITTED_ENV, ids=lambda e: e["name"])
def test_ordinary_and_referenced_variables_are_admitted(
    example: Rendered, entry: dict[str, Any]
) -> None:
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    assert evaluate(body, pod(entry, var("OTHER", "x"))) == []


def test_the_message_says_what_to_use_instead(example: Rendered) -> None:
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    (message,) = evaluate(body, pod(var("HF_TOKEN", "abc")))
    assert "valueFrom.secretKeyRef" in message
    assert "abc" not in message


def _job(env: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "llm-train"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "m", "image": "i", "env": env}],
                }
            }
        },
    }


def test_workload_templates_are_checked_not_only_pods(example: Rendered) -> None:
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    leaked = [var("HF_TOKEN", HF_TOKEN)]
    assert evaluate(body, _job(leaked))
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "c"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": _job(leaked)["spec"]}},
    }
    assert evaluate(body, cron)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"template": _job(leaked)["spec"]["template"]},
    }
    assert evaluate(body, deployment)
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": _job(leaked)["spec"]}}]},
    }
    assert evaluate(body, jobset)
    for obj in (cron, deployment, jobset):
        clean = copy.deepcopy(obj)
        text = yaml.safe_dump(clean).replace(HF_TOKEN, "x").replace("HF_TOKEN", "HF_HOME")
        assert evaluate(body, yaml.safe_load(text)) == [], obj["kind"]


@pytest.mark.parametrize("owner", ["trainer", "dataset", "model"])
def test_a_trainjobs_env_is_checked(example: Rendered, owner: str) -> None:
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    env = [var("HF_TOKEN", HF_TOKEN)]
    spec: dict[str, Any] = {"runtimeRef": {"name": "torch-distributed"}}
    if owner == "trainer":
        spec["trainer"] = {"env": env}
    else:
        spec["initializer"] = {owner: {"env": env, "storageUri": "hf://x"}}
    trainjob = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "t"},
        "spec": spec,
    }
    assert evaluate(body, trainjob)
    env[0] = {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}
    assert evaluate(body, trainjob) == []
    assert evaluate(body, {**trainjob, "spec": {"runtimeRef": {"name": "x"}}}) == []


def test_a_platform_controller_gets_no_exemption(example: Rendered) -> None:
    """A Job's pods carry its template: a literal that reached them is refused there too (the
    Job itself was refused first), whoever creates them."""
    body = policy(example, "prod-east", secret_refs.ENV_POLICY)
    job_controller = "system:serviceaccount:kube-system:job-controller"
    assert evaluate(body, pod(var("HF_TOKEN", HF_TOKEN)), username=job_controller)
    # its only matchCondition skips updates that leave the spec alone, for anyone
    for condition in body["spec"].get("matchConditions", []):
        assert "userInfo" not in condition["expression"], condition


# --- the platform's own workloads and Kueue's examples are admitted -----------------------------


def _matches(body: dict[str, Any], obj: dict[str, Any]) -> bool:
    group = obj["apiVersion"].rpartition("/")[0]
    plural = obj["kind"].lower() + "s"
    return any(
        group in rule["apiGroups"] and plural in rule["resources"]
        for rule in body["spec"]["matchConstraints"]["resourceRules"]
    )


def test_the_templates_layers_workloads_pass(example: Rendered) -> None:
    checked: set[str] = set()
    for cluster in example.manifests:
        bodies = [
            policy(example, cluster, name)
            for name in (secret_refs.ENV_POLICY, secret_refs.CONFIGMAP_POLICY)
        ]
        for value in example.values[cluster]:
            workload = dict(value.body)
            ns = workload.get("metadata", {}).get("namespace")
            if value.layer != "templates" or not ns:
                continue
            obj = kueue_webhook(workload)
            for body in bodies:
                if ns in bound(example, cluster, body["metadata"]["name"]) and _matches(body, obj):
                    assert evaluate(body, obj) == [], (cluster, workload["metadata"]["name"])
                    checked.add(obj["kind"])
    assert {"Job", "JobSet", "RayJob", "Deployment"} <= checked


def _kueue_examples() -> list[dict[str, Any]]:
    found = []
    for folder in ("jobs", "pods-kueue", "serving-workloads", "pod-based-workloads", "dra"):
        for path in sorted((KUEUE_EXAMPLES / folder).glob("*.yaml")):
            with path.open() as handle:
                found += [d for d in yaml.safe_load_all(handle) if isinstance(d, dict)]
    return found


def test_kueues_examples_pass(example: Rendered) -> None:
    if not KUEUE_EXAMPLES.is_dir():
        pytest.skip("the Kueue examples are not beside this checkout")
    bodies = [
        policy(example, "prod-east", name)
        for name in (secret_refs.ENV_POLICY, secret_refs.CONFIGMAP_POLICY)
    ]
    kinds = set()
    for doc in _kueue_examples():
        for body in bodies:
            if _matches(body, doc):
                assert evaluate(body, doc) == [], (doc["kind"], doc["metadata"].get("name"))
                kinds.add(doc["kind"])
    assert {"Job", "JobSet", "Pod", "ConfigMap", "RayJob"} <= kinds


# --- ConfigMaps -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "admitted"),
    [
        ({"HF_TOKEN": HF_TOKEN}, False),
        ({"db_password": "hunter2"}, False),
        ({"WANDB_API_KEY": "abc", "HF_HOME": "/data"}, False),
        ({"TOKENIZERS_PARALLELISM": "disabled"}, True),
        ({"HF_HUB_DISABLE_TOKEN": "1"}, True),
        ({"TOKEN_FILE": "/var/run/secrets/t"}, True),
        ({"auth.conf": "[auth]\nmode = oidc\n"}, True),  # a file: the words are `_`-separated
        ({"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"}, True),
        ({}, True),
        (None, True),
    ],
)
def test_configmap_keys_that_hold_a_secret_are_refused(
    example: Rendered, data: dict[str, str] | None, admitted: bool
) -> None:
    body = policy(example, "prod-east", secret_refs.CONFIGMAP_POLICY)
    assert (evaluate(body, configmap(data)) == []) is admitted


def test_binary_data_keys_count_too(example: Rendered) -> None:
    body = policy(example, "prod-east", secret_refs.CONFIGMAP_POLICY)
    assert evaluate(body, configmap(None, SSH_PRIVATE_KEY="AAAA"))
    assert evaluate(body, configmap(None, **{"model.bin": "AAAA"})) == []


# --- Secrets only from the store ------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    [
        "Opaque",
        "kubernetes.io/dockerconfigjson",  # ESO templates pull secrets from the store
        "kubernetes.io/service-account-token",  # a token that never expires
        "kubernetes.io/tls",
        "kubernetes.io/basic-auth",
    ],
)
@pytest.mark.parametrize(
    "username",
    [
        ALICE,
        "system:serviceaccount:llm-train:default",  # a team's own service account
        ARGOCD_CONTROLLER,  # syncs the team's Applications: a Secret from git
        "system:serviceaccount:kube-system:argocd-manager",  # Argo CD's cluster credential
        "system:serviceaccount:external-secrets-x:external-secrets",  # not ESO's namespace
        "system:serviceaccount:kueue-system:kueue-controller-manager",  # platform, not a writer
    ],
)
def test_only_the_store_writes_secrets(example: Rendered, kind: str, username: str) -> None:
    body = policy(example, "prod-east", secret_refs.STORE_POLICY)
    for operation in ("CREATE", "UPDATE"):
        (message,) = evaluate(
            body, secret(kind), old=secret(kind), operation=operation, username=username
        )
        assert "ExternalSecret" in message and "team-secrets" in message


@pytest.mark.parametrize(
    "username",
    [
        ESO_CONTROLLER,
        "system:kube-controller-manager",
        "system:serviceaccount:kube-system:generic-garbage-collector",
    ],
)
def test_the_store_and_kubernetes_controllers_write_secrets(
    example: Rendered, username: str
) -> None:
    body = policy(example, "prod-east", secret_refs.STORE_POLICY)
    for kind in ("Opaque", "kubernetes.io/dockerconfigjson"):
        assert evaluate(body, secret(kind), username=username) == []


def test_the_store_policy_holds_for_creates_and_updates_not_deletes(example: Rendered) -> None:
    body = policy(example, "prod-east", secret_refs.STORE_POLICY)
    (rule,) = body["spec"]["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == [""] and rule["resources"] == ["secrets"]
    assert rule["operations"] == ["CREATE", "UPDATE"]
    assert bound(example, "prod-east", secret_refs.STORE_POLICY) == bound(
        example, "prod-east", secret_refs.ENV_POLICY
    )


def test_a_volcano_jobs_tasks_are_checked_and_the_policy_validates(
    validator: OutputValidator,
) -> None:
    rendered = render_clean(REPO / "tests/cases/render/volcano")
    (cluster,) = rendered.manifests
    target = rendered.platform.clusters[cluster]
    body = policy(rendered, cluster, secret_refs.ENV_POLICY)
    for m in mine(rendered, cluster):
        assert (
            validator.check(m.body, target.kubernetes_version, schema_pins(target)).problems == []
        )
    task = {
        "name": "w",
        "replicas": 1,
        "template": _job([var("HF_TOKEN", HF_TOKEN)])["spec"]["template"],
    }
    volcano_job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "v"},
        "spec": {"tasks": [task]},
    }
    assert evaluate(body, volcano_job)
    task["template"]["spec"]["containers"][0]["env"] = [var("HF_HOME", "/data")]
    assert evaluate(body, volcano_job) == []


# --- ExternalSecrets only against the namespace's own SecretStore --------------------------------
#
# Written from the ESO v1 CRD (../shared/crds/external-secrets, v2.9.0): every place it lets an
# ExternalSecret name a store or a generator, and every one of these objects is valid to that
# CRD, so only the policy stands between it and the operator.

OWN_STORE = {"name": "team-secrets", "kind": "SecretStore"}


def external_secret(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": "hf", "namespace": "llm-train"},
        "spec": {"refreshInterval": "1h", **spec},
    }


def _data(**source: Any) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {"secretKey": "token", "remoteRef": {"key": "hf", "property": "token"}}
    if source:
        entry["sourceRef"] = source
    return [entry]


ADMITTED_EXTERNAL_SECRETS: dict[str, dict[str, Any]] = {
    "one-key": external_secret(secretStoreRef=OWN_STORE, data=_data()),
    "kind-left-out": external_secret(secretStoreRef={"name": "team-secrets"}, data=_data()),
    "extract-all-keys": external_secret(
        secretStoreRef=OWN_STORE, dataFrom=[{"extract": {"key": "wandb"}}]
    ),
    "find-by-path": external_secret(
        secretStoreRef=OWN_STORE,
        dataFrom=[{"find": {"path": "llm", "name": {"regexp": "^hf-"}}}],
    ),
    "source-ref-to-own-store": external_secret(
        data=_data(storeRef={"name": "team-secrets"}),
        dataFrom=[{"extract": {"key": "wandb"}, "sourceRef": {"storeRef": OWN_STORE}}],
    ),
    "image-pull-secret": external_secret(
        secretStoreRef=OWN_STORE,
        target={
            "name": "registry",
            "creationPolicy": "Owner",
            "template": {
                "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": "{{ .config }}"},
            },
        },
        data=[{"secretKey": "config", "remoteRef": {"key": "registry"}}],
    ),
}

CLUSTER_STORE = {"name": "team-secrets", "kind": "ClusterSecretStore"}
REFUSED_EXTERNAL_SECRETS: dict[str, tuple[dict[str, Any], str]] = {
    "cluster-secret-store": (
        external_secret(secretStoreRef=CLUSTER_STORE, data=_data()),
        "own store",
    ),
    "another-namespaces-store-name": (
        external_secret(
            secretStoreRef={"name": "vault-admin", "kind": "SecretStore"}, data=_data()
        ),
        "own store",
    ),
    "store-ref-without-a-name": (
        external_secret(data=_data(storeRef={"kind": "SecretStore"})),
        "own store",
    ),
    "data-source-ref-to-a-cluster-store": (
        external_secret(secretStoreRef=OWN_STORE, data=_data(storeRef=CLUSTER_STORE)),
        "own store",
    ),
    "data-from-source-ref-to-a-cluster-store": (
        external_secret(
            secretStoreRef=OWN_STORE,
            dataFrom=[{"extract": {"key": "prod"}, "sourceRef": {"storeRef": CLUSTER_STORE}}],
        ),
        "own store",
    ),
    "data-generator": (
        external_secret(
            secretStoreRef=OWN_STORE,
            data=_data(
                generatorRef={
                    "apiVersion": "generators.external-secrets.io/v1alpha1",
                    "kind": "VaultDynamicSecret",
                    "name": "db",
                }
            ),
        ),
        "no generator",
    ),
    "data-from-cluster-generator": (
        external_secret(
            dataFrom=[
                {
                    "sourceRef": {
                        "generatorRef": {
                            "apiVersion": "generators.external-secrets.io/v1alpha1",
                            "kind": "ClusterGenerator",
                            "name": "ecr",
                        }
                    }
                }
            ]
        ),
        "no generator",
    ),
    "generic-target": (
        external_secret(
            secretStoreRef=OWN_STORE,
            target={"name": "cfg", "manifest": {"apiVersion": "v1", "kind": "ConfigMap"}},
            data=_data(),
        ),
        "target.manifest",
    ),
    "service-account-token": (
        external_secret(
            secretStoreRef=OWN_STORE,
            target={
                "name": "forever",
                "template": {
                    "type": "kubernetes.io/service-account-token",
                    "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}},
                },
            },
            data=_data(),
        ),
        "service-account-token",
    ),
}


def test_the_external_secrets_here_are_valid_to_the_eso_crd(
    example: Rendered, validator: OutputValidator
) -> None:
    target = example.platform.clusters["prod-east"]
    cases = [
        *ADMITTED_EXTERNAL_SECRETS.values(),
        *(o for o, _ in REFUSED_EXTERNAL_SECRETS.values()),
    ]
    for obj in cases:
        result = validator.check(obj, target.kubernetes_version, schema_pins(target))
        assert result.unchecked is None and result.problems == [], obj
    wrong = external_secret(secretStoreRef={"name": "team-secrets", "kind": "Vault"})
    assert validator.check(wrong, target.kubernetes_version, schema_pins(target)).problems


@pytest.mark.parametrize("case", sorted(ADMITTED_EXTERNAL_SECRETS))
def test_an_external_secret_from_the_namespaces_own_store_is_admitted(
    example: Rendered, case: str
) -> None:
    body = policy(example, "prod-east", secret_refs.EXTERNAL_SECRET_POLICY)
    obj = ADMITTED_EXTERNAL_SECRETS[case]
    for operation in ("CREATE", "UPDATE"):
        assert evaluate(body, obj, old=obj, operation=operation) == [], case


@pytest.mark.parametrize("username", [ALICE, ARGOCD_CONTROLLER, ESO_CONTROLLER])
@pytest.mark.parametrize("case", sorted(REFUSED_EXTERNAL_SECRETS))
def test_an_external_secret_that_reaches_past_the_namespaces_store_is_refused(
    example: Rendered, case: str, username: str
) -> None:
    body = policy(example, "prod-east", secret_refs.EXTERNAL_SECRET_POLICY)
    obj, says = REFUSED_EXTERNAL_SECRETS[case]
    for operation in ("CREATE", "UPDATE"):
        old = ADMITTED_EXTERNAL_SECRETS["one-key"]
        (message,) = evaluate(body, obj, old=old, operation=operation, username=username)
        assert says in message, (case, message)


def test_the_external_secret_policy_names_only_the_resource_and_the_store_name(
    example: Rendered,
) -> None:
    body = policy(example, "prod-east", secret_refs.EXTERNAL_SECRET_POLICY)
    (rule,) = body["spec"]["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == ["external-secrets.io"]
    assert rule["resources"] == ["externalsecrets"]  # not the status ESO writes
    assert rule["operations"] == ["CREATE", "UPDATE"]
    # nobody is exempt: the one matchCondition skips updates that leave the spec alone
    assert [c["name"] for c in body["spec"].get("matchConditions", [])] == ["spec-changed"]
    assert "userInfo" not in body["spec"]["matchConditions"][0]["expression"]
    store = next(
        m.body
        for m in example.manifests["prod-east"]
        if m.kind == "SecretStore" and m.body["metadata"]["namespace"] == "llm-train"
    )
    assert store["metadata"]["name"] == OWN_STORE["name"]  # the store the policy allows exists


# --- who writes Secrets and ExternalSecrets: the team roles agree with the policies ------------


def _team_role(rendered: Rendered, cluster: str, name: str) -> list[dict[str, Any]]:
    for m in rendered.manifests[cluster]:
        if m.kind == "ClusterRole" and m.name == name:
            return list(m.body["rules"])
    raise AssertionError(name)


@pytest.mark.parametrize("role", ["gpuplane-team-member", "gpuplane-team-owner"])
def test_teams_ask_for_secrets_with_external_secrets_where_the_store_holds(
    example: Rendered, role: str
) -> None:
    from tests.test_team_roles import allows

    store, no_store = (
        _team_role(example, "prod-east", role),
        _team_role(example, "staging-west", role),
    )
    for verb in ("create", "update", "patch", "delete"):
        assert allows(store, verb, "external-secrets.io", "externalsecrets")
        assert not allows(store, verb, "", "secrets")  # only the operator writes them there
        assert not allows(no_store, verb, "external-secrets.io", "externalsecrets")
        assert allows(no_store, verb, "", "secrets") is (role == "gpuplane-team-owner")
        for rules in (store, no_store):
            for resource in ("secretstores", "clustersecretstores", "pushsecrets"):
                assert not allows(rules, verb, "external-secrets.io", resource), resource
            for resource in ("passwords", "vaultdynamicsecrets", "clustergenerators"):
                assert not allows(rules, verb, "generators.external-secrets.io", resource)
    viewer = _team_role(example, "prod-east", "gpuplane-team-viewer")
    assert allows(viewer, "get", "external-secrets.io", "externalsecrets")
    assert not allows(viewer, "create", "external-secrets.io", "externalsecrets")


def test_the_team_appprojects_let_external_secrets_through_but_no_store_or_generator(
    example: Rendered,
) -> None:
    from tests.test_team_roles import _blacklisted

    projects = [
        m.body
        for m in example.manifests["prod-east"]
        if m.kind == "AppProject" and m.name.startswith("team-")
    ]
    assert projects
    for project in projects:
        blacklist = project["spec"]["namespaceResourceBlacklist"]
        assert not _blacklisted(blacklist, "external-secrets.io", "ExternalSecret")
        for kind in ("SecretStore", "PushSecret"):
            assert _blacklisted(blacklist, "external-secrets.io", kind)
        for kind in ("Password", "VaultDynamicSecret", "GeneratorState"):
            assert _blacklisted(blacklist, "generators.external-secrets.io", kind)
