"""The pipeline, one way: load, schema, model, policy, layers, validate output. Returns data only.

`validate` stops after policy; `render` goes on to build every cluster's objects and check each
against the real Kubernetes and CRD schemas. Neither writes: `renderer.output.writer` does, and only the
CLI decides whether to call it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from renderer.findings.diagnostics import (
    Diagnostic,
    Location,
    Severity,
    has_errors,
    sort_diagnostics,
)
from renderer.findings.rules import document_rule
from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE, check_document
from renderer.inputs.source import load_file
from renderer.layers import gpu, queueing, templates, tenancy, workflows
from renderer.layers.gitops import argocd
from renderer.layers.gpu import operator as gpu_operator
from renderer.layers.readme import cluster_readme
from renderer.model import platform as model
from renderer.model.names import GPU_OPERATOR_ADDON
from renderer.model.view import ClusterView
from renderer.output.crds import CrdLoadError
from renderer.output.kubernetes_schemas import UnsupportedKubernetesVersion
from renderer.output.manifest import Manifest, Output, Values
from renderer.output.validation import OutputValidator
from renderer.policy.check import check_policy

Layer = Callable[[ClusterView], Iterator[Output]]

LAYERS: tuple[tuple[str, Layer], ...] = (
    ("tenancy", tenancy.render),
    ("queueing", queueing.render),
    ("gpu", gpu.render),
    ("templates", templates.render),
    ("workflows", workflows.render),
)
"""The layers that render from the cluster's view alone, in the order Argo CD applies them."""

APPLY_ORDER = ("tenancy", "queueing", "gpu", argocd.LAYER, "templates", "workflows")
"""Every layer in apply order: gitops syncs after the GPU layer and points Argo CD at the folders
the others wrote, so it is rendered after them."""


def render_cluster(view: ClusterView) -> list[Output]:
    """Every layer's objects and values for one cluster, in apply order."""
    by_layer = {name: list(render(view)) for name, render in LAYERS}
    folders: list[str] = []
    for outputs in by_layer.values():
        for output in outputs:
            if isinstance(output, Manifest) and output.layer not in folders:
                folders.append(output.layer)
    by_layer[argocd.LAYER] = list(argocd.render(view, folders))
    return [output for name in APPLY_ORDER for output in by_layer[name]]


document_rule(
    "stray-file",
    "load",
    """Input folders hold only `<name>.yaml` files.

A `.yml` file, a symbolic link or any other file in `clusters/`, `pools/`, `teams/` or `queues/`
would be ignored silently, so a change a reviewer approved would never take effect. Rename it to
`.yaml`, move it out, or (for a link) copy the file in.""",
)
document_rule(
    "output-schema",
    "output",
    """A rendered object does not validate against its schema.

Built-in kinds are checked in strict mode against the Kubernetes OpenAPI schemas of the cluster's
`kubernetesVersion` (kubernetes-validate's); custom kinds against the CRDs of the pinned operators
(`--crds`). An object that the API server or the operator would reject is a bug in the input or
in gpuplane: the message names the object, the field and the problem.""",
)
document_rule(
    "output-conflict",
    "output",
    """Two rendered objects would be written to the same file.

This happens when names built from two inputs collide, e.g. PriorityClass `<queue>-<priority>`
for queue `a` with priority `b-c` and queue `a-b` with priority `c`. Rename one of them.""",
)
document_rule(
    "kubernetes-version-unsupported",
    "output",
    """The cluster's kubernetesVersion has no bundled Kubernetes schemas to validate against.

gpuplane validates every built-in object against the OpenAPI schemas of the cluster's version,
from kubernetes-validate; the message names the versions it has.""",
)

document_rule(
    "crd-load",
    "output",
    """A CRD file given with `--crds` (or $GPUPLANE_CRDS) cannot be read.

gpuplane reads CustomResourceDefinitions from folders, multi-document files and `kind: List`
files (what `kubectl get crd -o yaml` prints); the message names the file and what is wrong.""",
)

document_rule(
    "no-inputs",
    "load",
    """There is nothing to validate: no clusters, pools, teams or queues.

Usually gpuplane was started in the wrong folder (use `-C DIR`), and a CI job that validated
nothing would otherwise pass.""",
)

IGNORED_FILES = frozenset({"README.md", ".gitkeep"})


@dataclass(frozen=True, slots=True)
class Loaded:
    platform: model.Platform
    files: int
    diagnostics: list[Diagnostic]


@dataclass(frozen=True, slots=True)
class Rendered:
    """Every cluster's manifests; `diagnostics` holds input and output problems alike."""

    platform: model.Platform
    manifests: Mapping[str, tuple[Manifest, ...]]
    values: Mapping[str, tuple[Values, ...]]
    readmes: Mapping[str, str]
    files: int
    diagnostics: list[Diagnostic]


def load_platform(root: Path) -> Loaded:
    """Load, schema-check and model every input file, then run the policy rules."""
    diagnostics: list[Diagnostic] = []
    objects: dict[str, dict[str, Any]] = {kind: {} for kind in KIND_FOLDERS.values()}
    broken: set[tuple[str, str]] = set()
    count = 0
    for folder, kind in KIND_FOLDERS.items():
        directory = root / folder
        if not directory.is_dir():
            continue
        for entry in sorted(directory.iterdir()):
            display = f"{folder}/{entry.name}"
            if entry.name in IGNORED_FILES or entry.name.startswith("."):
                continue
            if entry.is_symlink() or not entry.is_file() or entry.suffix != ".yaml":
                diagnostics.append(_stray(entry, display))
                continue
            count += 1
            result = load_file(entry, display)
            diagnostics.extend(result.diagnostics)
            if result.document is None:
                broken.add((kind, entry.stem))
                continue
            problems = check_document(result.document, folder)
            diagnostics.extend(problems)
            if problems:
                broken.add((kind, entry.stem))
                continue
            objects[kind][entry.stem] = model.BUILDERS[kind](
                result.document.data, result.document.source
            )
    repository = None
    settings = root / REPOSITORY_FILE
    if settings.is_file() and not settings.is_symlink():
        count += 1
        result = load_file(settings, REPOSITORY_FILE)
        diagnostics.extend(result.diagnostics)
        if result.document is not None:
            problems = check_document(result.document, ".")
            diagnostics.extend(problems)
            if not problems:
                repository = model.repository_from(result.document.data, result.document.source)
    elif settings.is_symlink():
        diagnostics.append(_stray(settings, REPOSITORY_FILE))
    if count == 0:
        diagnostics.append(
            Diagnostic(
                "no-inputs",
                f"no input files in {', '.join(f'{f}/' for f in KIND_FOLDERS)}",
                Location("."),
                hint="run gpuplane in a gpuplane repository, or point at one with -C DIR",
            )
        )
    platform = model.Platform(
        clusters=objects["Cluster"],
        pools=objects["Pool"],
        teams=objects["Team"],
        queues=objects["Queue"],
        broken=frozenset(broken),
        repository=repository,
    )
    diagnostics.extend(check_policy(platform))
    return Loaded(platform, count, sort_diagnostics(diagnostics))


def _stray(entry: Path, display: str) -> Diagnostic:
    if entry.is_symlink():
        message, hint = "symbolic links are not followed", "copy the file into the repository"
    elif entry.is_dir():
        message, hint = "folders are not read here", "move its files up one level"
    else:
        message, hint = (
            "only .yaml files are read",
            f"rename it to {entry.stem}.yaml, or move it out",
        )
    return Diagnostic("stray-file", message, Location(display), hint=hint)


def render_platform(root: Path, validator: OutputValidator) -> Rendered:
    """Validate, render every layer of every cluster, and validate each object produced."""
    loaded = load_platform(root)
    if has_errors(loaded.diagnostics):
        return Rendered(loaded.platform, {}, {}, {}, loaded.files, loaded.diagnostics)
    diagnostics = list(loaded.diagnostics)
    rendered: dict[str, tuple[Manifest, ...]] = {}
    values: dict[str, tuple[Values, ...]] = {}
    readmes: dict[str, str] = {}
    for name in sorted(loaded.platform.clusters):
        cluster = loaded.platform.clusters[name]
        view = ClusterView.of(loaded.platform, cluster)
        outputs = render_cluster(view)
        manifests = tuple(o for o in outputs if isinstance(o, Manifest))
        values[name] = tuple(o for o in outputs if isinstance(o, Values))
        diagnostics.extend(_check_output(cluster, manifests, validator))
        diagnostics.extend(_check_implied_cluster_policy(view, validator))
        rendered[name] = manifests
        readmes[name] = cluster_readme(view)
    return Rendered(
        loaded.platform, rendered, values, readmes, loaded.files, sort_diagnostics(diagnostics)
    )


def _check_implied_cluster_policy(
    view: ClusterView, validator: OutputValidator
) -> list[Diagnostic]:
    """The GPU Operator turns its chart values into a ClusterPolicy on the cluster; gpuplane
    writes only the values, so it checks the ClusterPolicy they imply against the CRD too."""
    implied = gpu_operator.implied_cluster_policy(view)
    if implied is None:
        return []
    at = view.cluster.addons[GPU_OPERATOR_ADDON].origin.location
    try:
        found = validator.validate(implied, view.cluster.kubernetes_version)
    except (CrdLoadError, UnsupportedKubernetesVersion):
        return []  # reported for the cluster's manifests already
    return [
        Diagnostic(
            "output-schema",
            f"the ClusterPolicy implied by values/gpu-operator.yaml ({view.cluster.name})"
            + (f" at {problem.path}" if problem.path else "")
            + f": {problem.message}",
            at,
        )
        for problem in found
    ]


def _check_output(
    cluster: model.Cluster, manifests: tuple[Manifest, ...], validator: OutputValidator
) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    seen: dict[str, Manifest] = {}
    for manifest in manifests:
        earlier = seen.setdefault(manifest.path, manifest)
        if earlier is not manifest:
            problems.append(
                Diagnostic(
                    "output-conflict",
                    f"{manifest.kind} '{manifest.name}' on cluster '{cluster.name}' collides with "
                    f"one rendered from {earlier.source.file} ({manifest.path})",
                    manifest.source,
                    notes=(("the other object comes from here", earlier.source),),
                )
            )
        try:
            found = validator.validate(manifest.body, cluster.kubernetes_version)
        except CrdLoadError as err:
            return [Diagnostic("crd-load", str(err), Location(str(err).split(":")[0]))]
        except UnsupportedKubernetesVersion as err:
            return [
                Diagnostic(
                    "kubernetes-version-unsupported",
                    str(err),
                    cluster.origin.at("spec", "kubernetesVersion"),
                    severity=Severity.ERROR,
                )
            ]
        for problem in found:
            where = f" at {problem.path}" if problem.path else ""
            problems.append(
                Diagnostic(
                    "output-schema",
                    f"rendered {manifest.kind} '{manifest.name}' ({cluster.name}/{manifest.path}){where}: {problem.message}",
                    manifest.source,
                )
            )
    return problems
