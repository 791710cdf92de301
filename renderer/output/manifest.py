"""A rendered Kubernetes object, with the layer that made it and the input file it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from renderer.findings.diagnostics import Location

MANAGED_BY = {"app.kubernetes.io/managed-by": "gpuplane"}


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object to write: `rendered/<cluster>/<layer>/[<namespace>/]<kind>-<name>.yaml`."""

    layer: str
    body: Mapping[str, Any]
    source: Location

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.body["metadata"].get("namespace")
        return str(namespace) if namespace is not None else None

    @property
    def folder(self) -> str:
        """Namespaced objects, and a Namespace itself, live in the namespace's own folder."""
        if self.kind == "Namespace":
            return f"{self.layer}/{self.name}"
        if self.namespace is not None:
            return f"{self.layer}/{self.namespace}"
        return self.layer

    @property
    def filename(self) -> str:
        return f"{self.kind.lower()}-{self.name}.yaml"

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.filename}"


@dataclass(frozen=True, slots=True)
class Values:
    """A file the platform consumes but never applies: Helm values for an add-on chart the
    GitOps layer installs (`rendered/<cluster>/values/<chart>.yaml`), or a node pool's bootstrap
    for its provisioner (`folder="nodes"`). Written beside the layers, in folders no layer or
    namespace can be named, and listed by no kustomization."""

    layer: str
    chart: str
    body: Mapping[str, Any]
    source: Location
    folder: str = "values"
    comment: str = ""
    """Written as `#` lines under the file's header: what to do with a file nobody applies."""

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.chart}.yaml"


Output = Manifest | Values
"""What a layer yields."""


def labels(**values: str | None) -> dict[str, str]:
    """The common labels: managed-by, plus gpuplane.dev/<key> for each value given."""
    result = dict(MANAGED_BY)
    for key, value in values.items():
        if value is not None:
            label = _LABEL_KEYS.get(key)
            if label is None:
                label = _LABEL_KEYS[key] = f"gpuplane.dev/{key.replace('_', '-')}"
            result[label] = value
    return result


_LABEL_KEYS: dict[str, str] = {}
"""Each keyword of `labels` as its label key (keywords are the code's, a handful)."""


def metadata(name: str, namespace: str | None = None, **label_values: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels(**label_values)
    return meta
