"""Secrets only by reference: no secret value written literally into a workload or a ConfigMap,
and, where the cluster declares a secret store, no Secret written by anyone but the store and no
ExternalSecret that reads from any store but its namespace's own.

Design: docs/secrets-and-cleanup.md#the-four-secret-policies-and-where-the-line-is-drawn
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.policy_parts import (
    CONTROLLER_MANAGER,
    KUBEFLOW_JOBS,
    POD,
    TRAINJOB,
    all_containers,
    cel_list,
    cel_string,
    controlled_by,
    every_pod_spec,
    pod_specs_variable,
    pod_template_kinds,
    policy_pair,
    resource_rules,
    spec_changed_condition,
    team_namespaces,
    validating_policy,
    workload_controller,
)
from renderer.layers.security.secrets import STORE_NAME
from renderer.model.names import EXTERNAL_SECRETS_NAMESPACE
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest

ENV_POLICY = "gpuplane-secret-env"
CONFIGMAP_POLICY = "gpuplane-secret-configmaps"
STORE_POLICY = "gpuplane-secrets-from-store"
EXTERNAL_SECRET_POLICY = "gpuplane-external-secrets"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"

SECRET_WORDS = (
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
)
"""Words that make a variable or ConfigMap key name a secret."""

DESCRIPTOR_WORDS = (
    "FILE",
    "PATH",
    "DIR",
    "NAME",
    "URL",
    "URI",
    "ENDPOINT",
    "HOST",
    "PORT",
    "TYPE",
    "MODE",
    "METHOD",
    "PROVIDER",
)
"""A name's last word that says the value points at or describes a secret, not holds it."""

SECRET_NAME = "(?i)(^|_)(" + "|".join(SECRET_WORDS) + ")(_|$)"
DESCRIPTOR_NAME = "(?i)_(" + "|".join(DESCRIPTOR_WORDS) + ")$"
FLAG_VALUE = "(?i)^(true|false|yes|no|on|off|0|1)?$"
FILE_PATH_VALUE = "^/[A-Za-z0-9._/-]*$"
"""An absolute path of plain characters: names a file (a mounted Secret), holds no secret."""
MAX_PATH = 4096
MAX_FLAG = 5
"""The longest flag (`false`): a longer value is no flag, and the expression need not scan it."""

VALUE_SHAPES = (
    "(^|[^A-Z0-9])(AKIA|ASIA)[A-Z0-9]{16}([^A-Z0-9]|$)",  # AWS access key id
    "gh[pousr]_[A-Za-z0-9]{36}",  # GitHub tokens
    "github_pat_[A-Za-z0-9_]{22,}",  # GitHub fine-grained token
    "glpat-[A-Za-z0-9_-]{20}",  # GitLab personal access token
    "xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack tokens
    "hf_[A-Za-z0-9]{30,}",  # Hugging Face tokens
    "-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY-----",  # PEM and OpenSSH private keys
)
"""RE2 patterns of key and token shapes that are never anything else."""

MAX_SCANNED = 8192
"""Values longer than this are not scanned for `VALUE_SHAPES` (an RSA-4096 private key is about
3.3 kB): the API server prices `matches` by the length of the text."""

SECRET_CONTROLLERS = (
    CONTROLLER_MANAGER,
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:kube-system:legacy-service-account-token-cleaner",
    "system:serviceaccount:kube-system:namespace-controller",
)
"""Kubernetes' own writers of Secrets in any namespace: the controller manager (its own
identity, or its controllers' service accounts with `--use-service-account-credentials`):
owner references, finalizers, the legacy token cleaner's label."""

SSH_AUTH = "kubernetes.io/ssh-auth"
SSH_KEY_OWNERS = (TRAINJOB, *(kind for kind in KUBEFLOW_JOBS if kind.kind == "MPIJob"))
"""The jobs whose controllers write an SSH key Secret of their own into the job's namespace: the
Kubeflow Trainer's MPI runtime (`<trainjob>-mpi-ssh-auth`) and the MPI operator v2
(`<mpijob>-ssh`), type `kubernetes.io/ssh-auth`, controlled by the job. The controller makes
the key pair itself: nothing in it comes from what the team wrote."""


def secret_named(name: str) -> str:
    """CEL: the name `name` (an expression) says it holds a secret."""
    return (
        f"({name}.matches({cel_string(SECRET_NAME)}) && "
        f"!{name}.matches({cel_string(DESCRIPTOR_NAME)}))"
    )


def is_flag(value: str) -> str:
    """CEL: the string `value` is empty or a boolean-like flag."""
    return f"(size({value}) <= {MAX_FLAG} && {value}.matches({cel_string(FLAG_VALUE)}))"


def is_file_path(value: str) -> str:
    """CEL: the string `value` is an absolute file path (`GOOGLE_APPLICATION_CREDENTIALS`)."""
    return f"(size({value}) <= {MAX_PATH} && {value}.matches({cel_string(FILE_PATH_VALUE)}))"


def has_secret_shape(value: str) -> str:
    """CEL: the string `value` (short enough to scan) has a key or token's shape."""
    shapes = "|".join(VALUE_SHAPES)
    return f"(size({value}) <= {MAX_SCANNED} && {value}.matches({cel_string(shapes)}))"


def env_by_reference(var: str = "e") -> str:
    """CEL over one env entry `var`: a secret-named variable has no literal value (but a flag
    or a file path) and, if it has a `valueFrom`, it is a `secretKeyRef`."""
    value = var + ".value"
    return (
        f"!{secret_named(var + '.name')} || "
        f"((!has({value}) || {is_flag(value)} || {is_file_path(value)}) && "
        f"(!has({var}.valueFrom) || has({var}.valueFrom.secretKeyRef)))"
    )


def env_no_secret_shape(var: str = "e") -> str:
    """CEL over one env entry `var`: its literal value has no key or token shape."""
    return f"!has({var}.value) || !{has_secret_shape(var + '.value')}"


def _env_lists(check: str) -> str:
    """CEL: `check` (over `e`) holds for every env entry of every container of every pod spec."""
    return every_pod_spec(all_containers("s", f"!has(c.env) || c.env.all(e, {check})"))


def _trainjob_env(check: str) -> str:
    """CEL: `check` holds for a TrainJob's trainer and initializer env (true for other kinds)."""
    owners = (
        "object.spec.trainer",
        "object.spec.initializer.dataset",
        "object.spec.initializer.model",
    )
    lists = ", ".join(
        f"{_has_path(owner)} && has({owner}.env) ? {owner}.env : []" for owner in owners
    )
    return f"!({TRAINJOB.condition}) || [{lists}].all(l, l.all(e, {check}))"


def _has_path(path: str) -> str:
    """CEL: every field of `object.a.b.c` down to the last one is set."""
    parts = path.split(".")
    return " && ".join(f"has({'.'.join(parts[: i + 1])})" for i in range(2, len(parts)))


_ENV_MESSAGE = (
    "an environment variable whose name says it holds a secret (PASSWORD, SECRET, TOKEN, "
    "API_KEY, PRIVATE_KEY, ACCESS_KEY, CREDENTIALS, AUTH, ...) must take its value from a Secret: "
    "replace `value` with `valueFrom.secretKeyRef` (or mount the Secret and pass its path in a "
    "`*_FILE` variable)"
)
_SHAPE_MESSAGE = (
    "an environment variable's value looks like a key or token (an AWS, GitHub, GitLab, Slack "
    "or Hugging Face token, or a private key): put it in a Secret and use "
    "`valueFrom.secretKeyRef` instead of `value`"
)


def _env_policy(view: ClusterView) -> list[Manifest]:
    kinds = pod_template_kinds(view)
    by_reference, no_shape = env_by_reference(), env_no_secret_shape()
    validations = [
        {"expression": _env_lists(by_reference), "message": _ENV_MESSAGE, "reason": "Forbidden"},
        {"expression": _env_lists(no_shape), "message": _SHAPE_MESSAGE, "reason": "Forbidden"},
        {
            "expression": _trainjob_env(f"({by_reference}) && ({no_shape})"),
            "message": "a TrainJob's trainer and initializer env follow the same rule: "
            + _ENV_MESSAGE,
            "reason": "Forbidden",
        },
    ]
    policy = validating_policy(
        ENV_POLICY,
        resource_rules((*kinds, TRAINJOB), extra={POD.group: ("pods/ephemeralcontainers",)}),
        validations,
        variables=[pod_specs_variable(kinds)],
        match_conditions=[spec_changed_condition()],
    )
    return policy_pair(policy, team_namespaces(view), view.cluster.origin.location)


def _configmap_policy(view: ClusterView) -> list[Manifest]:
    data = "object.data"
    validations = [
        {
            "expression": f"!has({data}) || {data}.all(k, !{secret_named('k')} || "
            f"{is_flag(data + '[k]')})",
            "message": "a ConfigMap key whose name says it holds a secret (PASSWORD, TOKEN, "
            "API_KEY, ...) is not allowed in team namespaces: put the value in a Secret and "
            "read it with `envFrom.secretRef` or `valueFrom.secretKeyRef`",
            "reason": "Forbidden",
        },
        {
            "expression": "!has(object.binaryData) || "
            f"object.binaryData.all(k, !{secret_named('k')})",
            "message": "a ConfigMap binaryData key whose name says it holds a secret is not "
            "allowed in team namespaces: put the value in a Secret",
            "reason": "Forbidden",
        },
    ]
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["configmaps"],
        }
    ]
    policy = validating_policy(CONFIGMAP_POLICY, rules, validations)
    return policy_pair(policy, team_namespaces(view), view.cluster.origin.location)


def secret_writer() -> str:
    """CEL: the request comes from the External Secrets Operator or Kubernetes' controllers."""
    eso = f"system:serviceaccount:{EXTERNAL_SECRETS_NAMESPACE}:"
    return (
        f"request.userInfo.username.startsWith({cel_string(eso)}) || "
        f"request.userInfo.username in {cel_list(SECRET_CONTROLLERS)}"
    )


def controller_ssh_key(view: ClusterView) -> str:
    """CEL: the Secret is an SSH key a workload controller (`admission.workload_controller`:
    not a team's service account, Argo CD or Argo Workflows) writes for an MPI job it runs."""
    return (
        f"({workload_controller(view)}) && has(object.type) && "
        f"object.type == {cel_string(SSH_AUTH)} && {controlled_by(SSH_KEY_OWNERS)}"
    )


def _store_policy(view: ClusterView) -> list[Manifest]:
    store = view.cluster.secret_store
    if store is None:
        return []
    message = (
        f"Secrets in team namespaces on cluster {view.cluster.name} come from the secret store: "
        f"write an ExternalSecret with secretStoreRef {{name: {STORE_NAME}, kind: SecretStore}} "
        "and keep the value in the store under the team's path (image pull secrets too: "
        "target.template.type kubernetes.io/dockerconfigjson)"
    )
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["secrets"],
        }
    ]
    policy = validating_policy(
        STORE_POLICY,
        rules,
        [
            {
                "expression": f"{secret_writer()} || {controller_ssh_key(view)}",
                "message": message,
                "reason": "Forbidden",
            }
        ],
    )
    return policy_pair(policy, team_namespaces(view), store.origin.location)


def own_store(ref: str) -> str:
    """CEL: the store reference `ref` names the namespace's own SecretStore."""
    return (
        f"(has({ref}.name) && {ref}.name == {cel_string(STORE_NAME)} && "
        f"(!has({ref}.kind) || {ref}.kind == 'SecretStore'))"
    )


def _sources(check: str) -> str:
    """CEL: `check` (over `d`, one `data` or `dataFrom` entry) holds for every entry of both."""
    return " && ".join(
        f"(!has(object.spec.{field}) || object.spec.{field}.all(d, {check}))"
        for field in ("data", "dataFrom")
    )


def _spec(check: str) -> str:
    """CEL: `check` holds for the ExternalSecret's spec (a spec left out holds every check)."""
    return f"!has(object.spec) || ({check})"


def _external_secret_policy(view: ClusterView) -> list[Manifest]:
    store = view.cluster.secret_store
    if store is None:
        return []
    ref = f"{{kind: SecretStore, name: {STORE_NAME}}}"
    template = "object.spec.target.template"
    validations = [
        {
            "expression": _spec(
                "(!has(object.spec.secretStoreRef) || "
                f"{own_store('object.spec.secretStoreRef')}) && "
                + _sources(
                    f"!has(d.sourceRef) || !has(d.sourceRef.storeRef) || "
                    f"{own_store('d.sourceRef.storeRef')}"
                )
            ),
            "message": f"an ExternalSecret in a team namespace on cluster {view.cluster.name} "
            f"reads only from the namespace's own store: set secretStoreRef (and any "
            f"sourceRef.storeRef in data or dataFrom) to {ref}, not a ClusterSecretStore or "
            "another namespace's store",
            "reason": "Forbidden",
        },
        {
            "expression": _spec(_sources("!has(d.sourceRef) || !has(d.sourceRef.generatorRef)")),
            "message": "an ExternalSecret in a team namespace takes no generator: remove "
            "sourceRef.generatorRef from data and dataFrom and keep the value in the store "
            f"under the team's path, read through {ref}",
            "reason": "Forbidden",
        },
        {
            "expression": _spec("!has(object.spec.target) || !has(object.spec.target.manifest)"),
            "message": "an ExternalSecret in a team namespace writes a Secret, nothing else: "
            "remove spec.target.manifest",
            "reason": "Forbidden",
        },
        {
            "expression": _spec(
                f"!has(object.spec.target) || !has({template}) || !has({template}.type) || "
                f"{template}.type != {cel_string(SERVICE_ACCOUNT_TOKEN)}"
            ),
            "message": f"an ExternalSecret may not make a {SERVICE_ACCOUNT_TOKEN} Secret (a "
            "token that never expires for a ServiceAccount of the namespace): use another "
            "target.template.type, or a projected token in the pod",
            "reason": "Forbidden",
        },
    ]
    rules = [
        {
            "apiGroups": ["external-secrets.io"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["externalsecrets"],
        }
    ]
    policy = validating_policy(
        EXTERNAL_SECRET_POLICY, rules, validations, match_conditions=[spec_changed_condition()]
    )
    return policy_pair(policy, team_namespaces(view), store.origin.location)


def render(view: ClusterView) -> Iterator[Manifest]:
    yield from _env_policy(view)
    yield from _configmap_policy(view)
    yield from _store_policy(view)
    yield from _external_secret_policy(view)
