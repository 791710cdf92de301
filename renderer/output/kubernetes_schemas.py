"""The Kubernetes built-in schemas: which strict folder of kubernetes-validate's data files serves a
cluster's version, and which file in it holds a kind. They change when kubernetes-validate ships
new Kubernetes versions, and with nothing else.
"""

from __future__ import annotations

import importlib.resources
import re
from functools import cache
from typing import Any

from packaging.version import Version


class UnsupportedKubernetesVersion(ValueError):
    """The cluster's Kubernetes version is outside what the bundled schemas cover."""


# --------------------------------------------------------------------------------------------
# Built-in schemas (kubernetes-validate's data files)

_SCHEMA_ROOT = "kubernetes-json-schema"
_DIR_RE = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")
_K8S_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:[.+-].*)?$")
DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

# Groups served by kube-apiserver itself. Any other group ending in ".k8s.io" is also looked up
# among the bundled schemas, but may well be a custom resource (Gateway API, snapshots, ...).
KNOWN_BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "apps",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "extensions",
        "flowcontrol.apiserver.k8s.io",
        "internal.apiserver.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "storagemigration.k8s.io",
    }
)


CUSTOM_K8S_GROUPS = frozenset(
    {
        "gateway.networking.k8s.io",
        "inference.networking.k8s.io",
        "snapshot.storage.k8s.io",
        "policy.networking.k8s.io",
    }
)
"""Groups under `k8s.io` that Kubernetes SIGs serve as CRDs, never kube-apiserver: the Gateway API
(the serving layer's Gateway and HTTPRoutes), its Inference Extension, volume snapshots, and
AdminNetworkPolicy. Checked against their CRDs like any custom kind."""


def is_builtin_group(group: str) -> bool:
    if group in CUSTOM_K8S_GROUPS:
        return False
    return group in KNOWN_BUILTIN_GROUPS or group.endswith(".k8s.io")


def schema_root() -> Any:
    return importlib.resources.files("kubernetes_validate") / _SCHEMA_ROOT


@cache
def _bundled_versions() -> tuple[tuple[Version, str], ...]:
    """(major.minor, strict schema folder name) for every bundled version, oldest first."""
    found = []
    for entry in schema_root().iterdir():
        m = _DIR_RE.match(entry.name)
        if m:
            found.append((Version(f"{m[1]}.{m[2]}"), entry.name))
    if not found:  # pragma: no cover - broken installation
        raise UnsupportedKubernetesVersion("kubernetes-validate bundles no strict schemas")
    return tuple(sorted(found))


@cache
def schema_dir_for(kubernetes_version: str) -> tuple[str, str]:
    """The strict schema folder to use for a cluster version, and the "x.y" it stands for."""
    versions = _bundled_versions()
    supported = f"{versions[0][0]} to {versions[-1][0]}"
    m = _K8S_VERSION_RE.match(kubernetes_version.strip())
    if not m:
        raise UnsupportedKubernetesVersion(
            f"cannot read Kubernetes version {kubernetes_version!r}: expected 'major.minor' "
            f"such as '1.33' (supported: {supported})"
        )
    wanted = Version(f"{m[1]}.{m[2]}")
    if wanted < versions[0][0] or wanted > versions[-1][0]:
        raise UnsupportedKubernetesVersion(
            f"Kubernetes {wanted} is not supported: the bundled schemas cover {supported}"
        )
    chosen = [(v, d) for v, d in versions if v <= wanted][-1]
    return chosen[1], str(wanted)


def schema_file_name(group: str, version: str, kind: str) -> str:
    """``rolebinding-rbac-v1.json`` for rbac.authorization.k8s.io/v1 RoleBinding."""
    prefix = group.split(".", 1)[0]
    if prefix:
        return f"{kind.lower()}-{prefix}-{version}.json"
    return f"{kind.lower()}-{version}.json"
