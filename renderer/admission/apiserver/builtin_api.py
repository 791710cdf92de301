"""The built-in API of a Kubernetes version: which group, version and kind the API server serves
by default, and the OpenAPI definition of each, read from the schemas kubernetes-validate bundles
(`renderer/output/kubernetes_schemas.py` picks the folder for a cluster's version).

Two upstream facts decide what is served, and neither needs the cluster:
- The kinds that exist at a version: kubernetes-validate's `_definitions.json` is Kubernetes'
  own OpenAPI document of that release (`api/openapi-spec`, generated with every API turned
  on), each top-level kind carrying its `x-kubernetes-group-version-kind`. A version the API
  server no longer serves at all (batch/v1beta1 CronJob since 1.25, policy/v1beta1 since 1.25,
  autoscaling/v2beta2 since 1.26, flowcontrol v1beta2 since 1.29 and v1beta3 since 1.32: the
  removed-API table of https://kubernetes.io/docs/reference/using-api/deprecation-guide/,
  `APILifecycleRemoved` in k8s.io/api's `zz_generated.prerelease-lifecycle.go`) is not in it.
- Which of them the API server turns on without `--runtime-config`: kube-apiserver
  `pkg/controlplane/instance.go` `DefaultAPIResourceConfigSource` enables the stable group
  versions, disables every beta and alpha one (KEP-3136, beta APIs off by default since 1.24),
  and keeps on only `legacyBetaEnabledByDefaultResources`: in 1.29 to 1.31 the
  flowcontrol.apiserver.k8s.io/v1beta3 FlowSchemas and PriorityLevelConfigurations, removed in
  1.32 and the list empty since. So resource.k8s.io/v1beta1 and v1beta2 (DRA beta, 1.32 and
  1.33) and admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicy (1.34, 1.35) are off
  by default; resource.k8s.io/v1 (1.34) and admissionregistration.k8s.io/v1
  MutatingAdmissionPolicy (1.36) are on.

gpuplane assumes the default `--runtime-config`: a cluster that turns a beta API on serves more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from renderer.output.kubernetes_schemas import (
    KNOWN_BUILTIN_GROUPS,
    UnsupportedKubernetesVersion,
    schema_dir_for,
    schema_root,
)

LEGACY_BETA_ON: Mapping[tuple[str, str, str], str] = {
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema"): "1.31",
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration"): "1.31",
}
"""Prerelease kinds the API server serves by default, and the last minor that does:
`legacyBetaEnabledByDefaultResources` (kube-apiserver `pkg/controlplane/instance.go`, v1.29 to
v1.31; empty since v1.32, when flowcontrol v1beta3 was removed)."""

MIN_MINOR = "1.29"
"""The oldest release whose default --runtime-config `LEGACY_BETA_ON` describes."""

_STABLE = re.compile(r"^v[1-9][0-9]*$")
_KUBE_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")
_REF = "#/$defs/"


@dataclass(frozen=True)
class BuiltinApi:
    """What the API server of one Kubernetes minor serves by default."""

    minor: str
    """`1.33`: the cluster's version, as asked."""
    definitions: Mapping[str, Mapping[str, Any]]
    """OpenAPI definitions by name (`io.k8s.api.core.v1.Pod`)."""
    kinds: Mapping[tuple[str, str, str], str]
    """(group, version, kind) of every top-level kind of the release -> its definition name,
    served by default or not."""

    def served(self, group: str, version: str, kind: str) -> bool:
        """Whether the API server serves `kind` at `group/version` without --runtime-config."""
        if (group, version, kind) not in self.kinds:
            return False
        if _STABLE.match(version):
            return True
        last = LEGACY_BETA_ON.get((group, version, kind))
        return last is not None and _minor_key(self.minor) <= _minor_key(last)

    def groups(self) -> frozenset[str]:
        """Every built-in API group: those of the release's kinds (served by default or not),
        and those the API server served once (`extensions`, whose kinds all moved)."""
        return frozenset(group for group, _, _ in self.kinds) | KNOWN_BUILTIN_GROUPS

    def served_versions(self, group: str, kind: str) -> tuple[str, ...]:
        """The versions of `group` serving `kind` by default, the API server's preferred one
        first (apimachinery `version.CompareKubeAwareVersionStrings`: GA, then beta, then
        alpha, higher numbers first)."""
        versions = {v for g, v, k in self.kinds if g == group and k == kind}
        served = [v for v in versions if self.served(group, v, kind)]
        return tuple(sorted(served, key=kube_version_key))

    def groups_serving(self, kind: str) -> tuple[str, ...]:
        """The groups that serve `kind` at some version by default, by name."""
        return tuple(sorted({g for g, v, k in self.kinds if k == kind and self.served(g, v, k)}))

    def kinds_of(self, group: str, version: str) -> tuple[str, ...]:
        """The kinds `group/version` serves by default, by name."""
        return tuple(
            sorted(
                k for g, v, k in self.kinds if g == group and v == version and self.served(g, v, k)
            )
        )

    def definition_of(self, group: str, version: str, kind: str) -> str | None:
        return self.kinds.get((group, version, kind))


def kube_version_key(version: str) -> tuple[int, int, int, str]:
    """Sort key putting the version the API server prefers first: v2 before v1 before v1beta2
    before v1beta1 before v1alpha1, and versions that are none of these last, by name."""
    m = _KUBE_VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    level = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (level, -int(m.group(1)), -int(m.group(3) or 0), version)


def _minor_key(minor: str) -> tuple[int, ...]:
    return tuple(int(part) for part in minor.split(".")[:2])


def definition_name(ref: str) -> str:
    """`#/$defs/io.k8s.api.core.v1.Pod` -> `io.k8s.api.core.v1.Pod`."""
    return ref[len(_REF) :] if ref.startswith(_REF) else ref


def _top_level_kinds(definitions: Mapping[str, Any]) -> dict[tuple[str, str, str], str]:
    """(group, version, kind) -> definition, for the definitions that are a kind of objects:
    one group-version-kind, named like the definition (DeleteOptions and WatchEvent list every
    group and are no kind to create), with ObjectMeta as metadata (no List, no discovery
    document such as APIGroup or Status)."""
    kinds: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions.items():
        gvks = schema.get("x-kubernetes-group-version-kind")
        if not isinstance(gvks, list) or len(gvks) != 1 or not isinstance(gvks[0], dict):
            continue
        gvk = gvks[0]
        kind = str(gvk.get("kind", ""))
        if kind != name.rsplit(".", 1)[-1]:
            continue
        metadata = (schema.get("properties") or {}).get("metadata")
        ref = metadata.get("$ref") if isinstance(metadata, dict) else None
        if not isinstance(ref, str) or not ref.endswith(".meta.v1.ObjectMeta"):
            continue
        kinds[(str(gvk.get("group", "")), str(gvk.get("version", "")), kind)] = name
    return kinds


@cache
def _load(
    schema_dir: str,
) -> tuple[Mapping[str, Mapping[str, Any]], Mapping[tuple[str, str, str], str]]:
    data = json.loads((schema_root() / schema_dir / "_definitions.json").read_bytes())
    definitions = data.get("$defs") or data.get("definitions") or {}
    return definitions, _top_level_kinds(definitions)


def builtin_api(kubernetes_version: str) -> BuiltinApi | None:
    """The built-in API of the cluster's Kubernetes version; None for a version the bundled
    schemas do not cover or older than `MIN_MINOR` (then nothing built-in can be checked)."""
    try:
        schema_dir, minor = schema_dir_for(kubernetes_version)
    except UnsupportedKubernetesVersion:
        return None
    if _minor_key(minor) < _minor_key(MIN_MINOR):
        return None
    definitions, kinds = _load(schema_dir)
    return BuiltinApi(minor, definitions, kinds)


__all__ = [
    "LEGACY_BETA_ON",
    "MIN_MINOR",
    "BuiltinApi",
    "builtin_api",
    "definition_name",
    "kube_version_key",
]
