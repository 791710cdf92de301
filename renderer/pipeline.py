"""The pipeline, one way: load, schema, model, policy, layers, validate output. Returns data only.

`validate` stops after policy; `render` goes on to build every cluster's objects and check each
against the real Kubernetes and CRD schemas. Neither writes: `renderer.output.writer` does, and only the
CLI decides whether to call it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from renderer.findings.diagnostics import (
    Diagnostic,
    Location,
    Severity,
    SourceMap,
    has_errors,
    sort_diagnostics,
)
from renderer.findings.rules import document_rule
from renderer.inputs import blanks
from renderer.inputs.schema import KIND_FOLDERS, REPOSITORY_FILE, check_document
from renderer.inputs.source import LoadResult, load_bytes, read_input
from renderer.layers import (
    gpu,
    observability,
    queueing,
    security,
    serving,
    tenancy,
    training,
    workload_templates,
)
from renderer.layers.gitops import argocd
from renderer.layers.gpu import operator as gpu_operator
from renderer.layers.readme import cluster_readme
from renderer.layers.workload_templates.workloads import LAYER as TEMPLATES_LAYER
from renderer.model import platform as model
from renderer.model.evidence import (
    EVIDENCE_BROKEN,
    EVIDENCE_FOLDER,
    BaseSizes,
    Evidence,
    evidence_from,
)
from renderer.model.limits import rendered_quantity_problems
from renderer.model.names import GPU_OPERATOR_ADDON, OPERATOR_TITLES, schema_operator
from renderer.model.operators import serving_problem
from renderer.model.topology import with_topology_peers
from renderer.model.view import ClusterView
from renderer.output.cel_report import UncheckedRules, cel_diagnostics, unreadable_diagnostics
from renderer.output.coverage import UncheckedObject, coverage_findings
from renderer.output.crds import CrdLoadError
from renderer.output.identity import clashes_across, identity_clashes
from renderer.output.kubernetes_schemas import UnsupportedKubernetesVersion
from renderer.output.manifest import Manifest, Output, Values
from renderer.output.reuse import CheckMemo, body_key
from renderer.output.served import unserved
from renderer.output.transitions import CommittedTree
from renderer.output.validation import Checked, OutputValidator, Pin
from renderer.policy.check import check_policy

Layer = Callable[[ClusterView], Iterator[Output]]


def import_layers() -> None:
    """Import what the layers import on first use (Hera, for the workflows layer), so that
    worker processes forked afterwards start with it."""
    from renderer.layers import workflows

    workflows.import_hera()


def render_workflows(view: ClusterView) -> Iterator[Output]:
    """The workflows layer, imported on first use: it builds on Hera, whose models take about a
    second to import, and `validate`, `plan` and `fit` never render."""
    from renderer.layers import workflows

    yield from workflows.render(view)


LAYERS: tuple[tuple[str, Layer], ...] = (
    ("security", security.render),
    ("tenancy", tenancy.render),
    ("queueing", queueing.render),
    ("gpu", gpu.render),
    (training.LAYER, training.render),
    (observability.LAYER, observability.render),
    (serving.LAYER, serving.render),
    ("templates", workload_templates.render),
    ("workflows", render_workflows),
)
"""The layers that render from the cluster's view alone, in the order Argo CD applies them."""

APPLY_ORDER = (
    "security",
    "tenancy",
    "queueing",
    "gpu",
    training.LAYER,
    observability.LAYER,
    serving.LAYER,
    argocd.LAYER,
    "templates",
    "workflows",
)
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
would be ignored silently, so a change a reviewer approved would never take effect.

To satisfy it: rename a `.yml` (or otherwise named) file to `<name>.yaml`, move folders and
files that are not inputs out of the four folders, and replace a symbolic link by a copy of
the file it points at. `README.md` and `.gitkeep` may stay.""",
)
document_rule(
    "output-schema",
    "output",
    """A rendered object or workload template does not validate against its schema.

Every object gpuplane applies and every workload template it hands to teams
(`rendered/<cluster>/templates/`, which teams submit themselves) is checked. Built-in kinds are
checked in strict mode against the Kubernetes OpenAPI schemas of the cluster's
`kubernetesVersion` (kubernetes-validate's); custom kinds against the CRDs of the release of the
operator the cluster pins (docs/schema-store.md). An object that the API server or the operator
would reject is a bug in the input or in gpuplane: the message names the object, the field and
the problem.

To satisfy it: change the input the finding points at, in the field the message names (a
rendered field takes its value from the input field of the same meaning, e.g. a quota's
`nominal`). If the input is right and the object still fails, it is a gpuplane bug: report it
with the message. Custom kinds are checked against their operator's CRDs for the release the
cluster pins (`gpuplane schemas list` shows those gpuplane has).""",
)
document_rule(
    "output-conflict",
    "output",
    """Two rendered objects would be written to the same file.

This happens when names built from two inputs collide, e.g. PriorityClass `<queue>-<priority>`
for queue `a` with priority `b-c` and queue `a-b` with priority `c`.

To satisfy it: rename one of the two inputs the finding and its note point at (a queue, a
priority, a team, a pool) so that the names built from them differ, e.g. priority `b-c` to
`bc`.""",
)
document_rule(
    "kubernetes-version-unsupported",
    "output",
    """The cluster's kubernetesVersion has no bundled Kubernetes schemas to validate against.

gpuplane validates every built-in object against the OpenAPI schemas of the cluster's version,
from kubernetes-validate; the message names the versions it has.

To satisfy it: set `spec.kubernetesVersion` of the cluster file to the cluster's minor version,
quoted and within the range the message names, e.g. `kubernetesVersion: "1.33"`. For a cluster
newer than the range, upgrade gpuplane (and with it kubernetes-validate).""",
)

document_rule(
    "crd-load",
    "output",
    """A CRD source cannot be read: a file given with `--crds` or $GPUPLANE_CRDS, or an entry of
`schemas:` in gpuplane.yaml that is missing or outside the repository.

gpuplane reads CustomResourceDefinitions from folders, multi-document files and `kind: List`
files (what `kubectl get crd -o yaml` prints); the message names the file and what is wrong.

To satisfy it: fix or remove the file the message names, or pass another: a folder or file of
YAML documents of `kind: CustomResourceDefinition`, e.g. `kubectl get crd -o yaml > crds.yaml`
then `--crds crds.yaml` (several paths in $GPUPLANE_CRDS are separated by `:`). In gpuplane.yaml,
list paths relative to the repository that exist, or import the CRDs into the schema store with
`gpuplane schemas import` and drop the entry.""",
)

document_rule(
    "no-inputs",
    "load",
    """There is nothing to validate: no clusters, pools, teams or queues.

Usually gpuplane was started in the wrong folder, and a CI job that validated nothing would
otherwise pass.

To satisfy it: run gpuplane at the root of a gpuplane repository (the folder that holds
`clusters/`, `pools/`, `teams/` and `queues/`), or point at it: `gpuplane -C DIR validate`. A new
repository starts with `gpuplane new cluster NAME`.""",
)

IGNORED_FILES = frozenset({"README.md", ".gitkeep"})


@dataclass(frozen=True, slots=True)
class Loaded:
    platform: model.Platform
    files: int
    diagnostics: list[Diagnostic]
    digests: Mapping[str, bytes] = field(default_factory=dict)
    """The SHA-256 of each input file read, by its name in reports (the render index's keys)."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """Every cluster's manifests; `diagnostics` holds input and output problems alike."""

    platform: model.Platform
    manifests: Mapping[str, tuple[Manifest, ...]]
    values: Mapping[str, tuple[Values, ...]]
    readmes: Mapping[str, str]
    files: int
    diagnostics: list[Diagnostic]


@dataclass(frozen=True, slots=True)
class SharedOutcomes:
    """Clusters rendered once for two folders (`gpuplane diff`'s base and head): a cluster's
    outcome is a function of its key (`key_of`: the slice's files, the schemas), so one
    folder's outcome stands for the other's when the keys are the same."""

    key_of: Callable[[Path, Loaded], Mapping[str, bytes]]
    outcomes: dict[bytes, ClusterOutcome] = field(default_factory=dict)
    memo_of: Callable[[Path, Loaded, str], CheckMemo | None] | None = None
    """The checks a cluster of a folder may start from (the render index's), or None."""
    _keys: dict[Path, tuple[model.Platform, Mapping[str, bytes]]] = field(default_factory=dict)

    def keys(self, root: Path, loaded: Loaded) -> Mapping[str, bytes]:
        """`key_of` the folder's platform, worked out once for that platform (`diff` asks
        before it renders, and the render asks again)."""
        kept = self._keys.get(root)
        if kept is None or kept[0] is not loaded.platform:
            kept = self._keys[root] = (loaded.platform, self.key_of(root, loaded))
        return kept[1]


InputCache = MutableMapping[tuple[str, bytes], bytes]
"""(file, SHA-256 of its bytes) -> the file loaded and its schema problems, pickled when they
were made (so that nothing done to the data later reaches the cache): what loading those bytes
under that name gives, whatever run asks. The render index keeps one between runs."""


def _listed(root: Path) -> Iterator[tuple[Path, str, str, bool]]:
    """(path, name in reports, folder, loadable) of every entry of the four input folders
    that is not ignored, then of the repository settings where they are; an entry that is not
    loadable is a stray (`_stray`)."""
    for folder in KIND_FOLDERS:
        directory = root / folder
        if not directory.is_dir():
            continue
        for name, loadable in _entries(directory):
            yield directory / name, f"{folder}/{name}", folder, loadable
    yield from _evidence_listed(root)
    settings = root / REPOSITORY_FILE
    if settings.is_symlink() or settings.is_file():
        yield settings, REPOSITORY_FILE, ".", not settings.is_symlink()


def _entries(directory: Path) -> list[tuple[str, bool]]:
    """The names in `directory` that are not ignored, sorted, each with whether it is a
    loadable input: a regular file (not a symbolic link) named `.yaml`. Told from the folder's
    listing (`os.scandir`'s entry types): `Path.is_symlink` and `is_file` asked the system
    twice for each of thousands of team files."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name in IGNORED_FILES or entry.name.startswith("."):
                continue
            try:
                regular = not entry.is_symlink() and entry.is_file()
            except OSError:
                regular = False
            found.append((entry.name, regular and entry.name.endswith(".yaml")))
    return sorted(found)


def _evidence_listed(root: Path) -> Iterator[tuple[Path, str, str, bool]]:
    """`_listed`'s entries of acceptance/: a folder per cluster, a .yaml file per pool in it;
    anything else there (a file beside the cluster folders, a folder in one) is a stray."""
    top = root / EVIDENCE_FOLDER
    if top.is_symlink() or not top.is_dir():
        return
    for cluster in sorted(top.iterdir()):
        if cluster.name in IGNORED_FILES or cluster.name.startswith("."):
            continue
        folder = f"{EVIDENCE_FOLDER}/{cluster.name}"
        if cluster.is_symlink() or not cluster.is_dir():
            yield cluster, folder, EVIDENCE_FOLDER, False
            continue
        for entry in sorted(cluster.iterdir()):
            if entry.name in IGNORED_FILES or entry.name.startswith("."):
                continue
            loadable = not entry.is_symlink() and entry.is_file() and entry.suffix == ".yaml"
            yield entry, f"{folder}/{entry.name}", folder, loadable


def input_files(root: Path) -> list[tuple[Path, str, str]]:
    """(path, name in reports, folder) of every file `load_platform` loads ("." for the
    repository settings), in the order it loads them."""
    return [(path, display, folder) for path, display, folder, ok in _listed(root) if ok]


def input_key(display: str, raw: bytes) -> tuple[str, bytes]:
    """An input file's key in an `InputCache`."""
    return (display, hashlib.sha256(raw).digest())


def load_checked(
    entry: Path, display: str, folder: str, inputs: InputCache | None
) -> tuple[LoadResult, tuple[Diagnostic, ...], bytes | None]:
    """One input file loaded and schema-checked, and the SHA-256 of its bytes (None: not
    read); from `inputs` when it holds these bytes."""
    raw = read_input(entry, display)
    if isinstance(raw, LoadResult):
        return raw, (), None
    key = input_key(display, raw)
    if inputs is not None and key in inputs:
        kept: tuple[LoadResult, tuple[Diagnostic, ...]] = pickle.loads(inputs[key])
        return *kept, key[1]
    result = load_bytes(raw, display)
    problems = tuple(check_document(result.document, folder)) if result.document else ()
    if inputs is not None:
        inputs[key] = pickle.dumps((result, problems), protocol=pickle.HIGHEST_PROTOCOL)
    return result, problems, key[1]


def load_platform(
    root: Path,
    *,
    changed: model.Changes | None = None,
    inputs: InputCache | None = None,
    policy: bool = True,
    base_sizes: BaseSizes | None = None,
) -> Loaded:
    """Load, schema-check and model every input file, then run the policy rules (`policy`:
    False leaves them to the caller, `check_policy`).

    `changed`: the input files (relative to `root`) the change being checked adds or edits,
    each with its changed lines (None: the whole file), as
    `renderer.inputs.changes.changed_lines` finds them; None when unknown. The policy places a
    finding several files share on the entry the change touched. Nothing here runs git: the
    caller decides. `inputs`: files loaded before, by their bytes (`InputCache`); what this
    run loads is added to it. `base_sizes`: each pool's size at the change's base, as
    `renderer.inputs.changes.base_sizes` finds it, for the capacity gate (None: not asked).
    The evidence files under acceptance/ are loaded and schema-checked beside the objects.
    """
    diagnostics: list[Diagnostic] = []
    objects: dict[str, dict[str, Any]] = {kind: {} for kind in KIND_FOLDERS.values()}
    broken: set[tuple[str, str]] = set()
    documents: dict[str, tuple[Any, SourceMap]] = {}
    evidence: dict[tuple[str, str], Evidence] = {}
    digests: dict[str, bytes] = {}
    repository = None
    count = 0
    for entry, display, folder, loadable in _listed(root):
        if not loadable:
            diagnostics.append(_stray(entry, display, folder))
            continue
        count += 1
        result, problems, digest = load_checked(entry, display, folder, inputs)
        if digest is not None:
            digests[display] = digest
        diagnostics.extend(result.diagnostics)
        kind = KIND_FOLDERS.get(folder)
        if folder.startswith(f"{EVIDENCE_FOLDER}/"):
            diagnostics.extend(problems)
            place = (folder.removeprefix(f"{EVIDENCE_FOLDER}/"), entry.stem)
            _add_evidence(evidence, broken, result, problems, place)
            continue
        if result.document is None:
            if kind is not None:
                broken.add((kind, entry.stem))
            continue
        documents[display] = (result.document.data, result.document.source)
        diagnostics.extend(problems)
        if kind is None:  # the repository settings
            if not problems:
                repository = model.repository_from(result.document.data, result.document.source)
        elif problems:
            broken.add((kind, entry.stem))
        else:
            objects[kind][entry.stem] = model.BUILDERS[kind](
                result.document.data, result.document.source
            )
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
        pools=MappingProxyType(with_topology_peers(objects["Pool"], objects["Queue"])),
        teams=objects["Team"],
        queues=objects["Queue"],
        broken=frozenset(broken),
        repository=repository,
        changed=MappingProxyType(dict(changed or {})),
        documents=MappingProxyType(documents),
        evidence=MappingProxyType(evidence),
        base_sizes=base_sizes,
    )
    # an empty value `gpuplane new` left: the hint names the repository's choices
    diagnostics = blanks.suggest(diagnostics, documents, platform)
    if policy:
        diagnostics.extend(check_policy(platform))
    return Loaded(platform, count, sort_diagnostics(diagnostics), MappingProxyType(digests))


def _add_evidence(
    evidence: dict[tuple[str, str], Evidence],
    broken: set[tuple[str, str]],
    result: LoadResult,
    problems: Sequence[Diagnostic],
    place: tuple[str, str],
) -> None:
    """One evidence file, at `place` (its cluster folder, its file's stem), into `evidence`,
    or into `broken` when it has errors."""
    if result.document is None or problems:
        broken.add((EVIDENCE_BROKEN, "/".join(place)))
        return
    evidence[place] = evidence_from(result.document.data, result.document.source, place[0])


def with_policy(loaded: Loaded) -> Loaded:
    """`loaded` (by `load_platform` with `policy=False`) with the policy's findings, as
    `load_platform` would have given them."""
    found = check_policy(loaded.platform)
    return replace(loaded, diagnostics=sort_diagnostics([*loaded.diagnostics, *found]))


def _stray(entry: Path, display: str, folder: str) -> Diagnostic:
    if folder == EVIDENCE_FOLDER and not entry.is_symlink():
        message, hint = (
            "acceptance/ holds one folder per cluster, each with one file per pool",
            f"move it to {EVIDENCE_FOLDER}/<cluster>/<pool>.yaml",
        )
    elif entry.is_symlink():
        message, hint = "symbolic links are not followed", "copy the file into the repository"
    elif entry.is_dir():
        message, hint = "folders are not read here", "move its files up one level"
    else:
        message, hint = (
            "only .yaml files are read",
            f"rename it to {entry.stem}.yaml, or move it out",
        )
    return Diagnostic("stray-file", message, Location(display), hint=hint)


def render_platform(
    root: Path,
    validator: OutputValidator,
    *,
    changed: model.Changes | None = None,
    on_cluster: Callable[[str], None] | None = None,
    previous: CommittedTree | None = None,
    shared: SharedOutcomes | None = None,
    loaded: Loaded | None = None,
) -> Rendered:
    """Validate, render every layer of every cluster, and validate each object produced.

    `on_cluster` is told each cluster's name before it is rendered (the CLI's progress display).
    `previous`: the objects committed in `rendered/` that these would replace, for the CRDs'
    transition rules (`renderer.output.transitions.committed_tree`); None checks no transition.
    `shared`: outcomes by cluster key, from a render of another folder (without `previous`): a
    cluster whose key it holds is taken from it, and each one rendered here is added.
    `loaded`: `root` already loaded, with `changed` (then `changed` is not read); load it
    with `load_platform` to start from files loaded before (`InputCache`).
    """
    if loaded is None:
        loaded = load_platform(root, changed=changed)
    if has_errors(loaded.diagnostics):
        return Rendered(loaded.platform, {}, {}, {}, loaded.files, loaded.diagnostics)
    diagnostics = list(loaded.diagnostics)
    validator, missing = prepare(root, loaded.platform, validator)
    if missing:
        return Rendered(loaded.platform, {}, {}, {}, loaded.files, [*diagnostics, *missing])
    outcomes = []
    keys = shared.keys(root, loaded) if shared is not None and previous is None else {}
    for name in sorted(loaded.platform.clusters):
        if on_cluster is not None:
            on_cluster(name)
        key = keys.get(name)
        outcome = shared.outcomes.get(key) if shared is not None and key is not None else None
        if outcome is None:
            memo = None
            if shared is not None and shared.memo_of is not None and previous is None:
                memo = shared.memo_of(root, loaded, name)
            outcome = check_cluster(loaded.platform, name, validator, previous, memo)
            if shared is not None and key is not None:
                shared.outcomes[key] = outcome
        outcomes.append(outcome)
    return rendered_from(loaded, outcomes, validator)


def rendered_from(
    loaded: Loaded, outcomes: Sequence[ClusterOutcome], validator: OutputValidator
) -> Rendered:
    """The platform rendered: every cluster's outcome (in name order), with the findings of
    the inputs and those that span clusters (`merge_findings`)."""
    diagnostics = [*loaded.diagnostics, *merge_findings(outcomes, validator)]
    return Rendered(
        loaded.platform,
        {o.name: o.manifests for o in outcomes},
        {o.name: o.values for o in outcomes},
        {o.name: o.readme for o in outcomes},
        loaded.files,
        sort_diagnostics(diagnostics),
    )


@dataclass(slots=True)
class ClusterOutcome:
    """One cluster rendered and checked on its own: what `render` gathers from each cluster,
    in this process or in a worker (`renderer.commands.render`), before the findings that span
    clusters (`merge_findings`)."""

    name: str
    manifests: tuple[Manifest, ...]
    values: tuple[Values, ...]
    readme: str
    diagnostics: list[Diagnostic]
    unchecked: list[UncheckedObject]
    rules: UncheckedRules
    shared: tuple[Manifest, ...]
    """The objects every cluster's own land in Argo CD's (the gitops layer), for the clashes
    between clusters."""
    keys: tuple[bytes | None, ...] = ()
    """Each manifest's `body_key`, in order, when checked with a `CheckMemo`."""
    value_keys: tuple[bytes | None, ...] = ()
    """Each values file's `body_key`, in order, when checked with a `CheckMemo`."""


def check_cluster(
    platform: model.Platform,
    name: str,
    validator: OutputValidator,
    previous: CommittedTree | None = None,
    memo: CheckMemo | None = None,
    *,
    readme: bool = True,
) -> ClusterOutcome:
    """Render every layer of one cluster and validate each object produced. With a `memo`, an
    object whose body it holds a check of is not validated again. `readme`: False leaves the
    cluster README to the caller (`cluster_readme_of`), empty here."""
    cluster = platform.clusters[name]
    view = ClusterView.of(platform, cluster)
    outputs = render_cluster(view)
    manifests = tuple(o for o in outputs if isinstance(o, Manifest))
    unchecked: list[UncheckedObject] = []
    rules = UncheckedRules()
    keys = tuple(body_key(m.body) for m in manifests) if memo is not None else ()
    checks = _ObjectChecks(cluster, validator, previous, memo, keys)
    diagnostics = _check_output(manifests, checks, unchecked, rules)
    values = tuple(o for o in outputs if isinstance(o, Values))
    value_keys = tuple(body_key(v.body) for v in values) if memo is not None else ()
    diagnostics.extend(_check_templates(values, value_keys, checks, unchecked, rules))
    diagnostics.extend(_check_implied_cluster_policy(view, validator, unchecked))
    diagnostics.extend(
        unserved(
            cluster.name,
            cluster.origin.key("spec", "addons"),
            _served_objects(outputs),
            functools.partial(serving_problem, cluster),
        )
    )
    return ClusterOutcome(
        name,
        manifests,
        values,
        cluster_readme(view) if readme else "",
        diagnostics,
        unchecked,
        rules,
        tuple(m for m in manifests if m.layer == argocd.LAYER),
        keys,
        value_keys,
    )


def cluster_readme_of(platform: model.Platform, name: str) -> str:
    """The README of one cluster, as `check_cluster` writes it."""
    return cluster_readme(ClusterView.of(platform, platform.clusters[name]))


def _served_objects(outputs: Sequence[Output]) -> Iterator[tuple[str, Any, Location]]:
    """Every object a cluster gets or hands to its teams: the manifests, and the workload
    templates (values files with an apiVersion: chart values have none)."""
    for output in outputs:
        if isinstance(output, Manifest):
            yield f"rendered {output.kind} '{output.name}'", output.body, output.source
        elif output.layer == TEMPLATES_LAYER and "apiVersion" in output.body:
            yield f"template {output.path}", output.body, output.source


def merge_findings(
    outcomes: Sequence[ClusterOutcome], validator: OutputValidator
) -> list[Diagnostic]:
    """Every cluster's findings, in cluster name order, and those that span clusters: Argo CD's
    objects that two clusters both render, the kinds no schema checked, the CEL rules not
    evaluated (each reported once, on the first object that had one)."""
    ordered = sorted(outcomes, key=lambda o: o.name)
    found = [d for o in ordered for d in o.diagnostics]
    found.extend(
        clashes_across({o.name: o.shared for o in ordered}, argocd.LAYER, "Argo CD's cluster")
    )
    found.extend(
        coverage_findings(
            [u for o in ordered for u in o.unchecked], strict=validator.strict_schemas
        )
    )
    rules = UncheckedRules()
    for outcome in ordered:
        rules.merge(outcome.rules)
    found.extend(rules.diagnostics())
    return found


def prepare(
    root: Path, platform: model.Platform, validator: OutputValidator
) -> tuple[OutputValidator, list[Diagnostic]]:
    """The output validator with the CRDs the repository's settings list, and why a listed
    source cannot be used (then nothing is rendered)."""
    sources, missing = repository_schemas(root, platform.repository)
    try:
        validator = validator.for_repository(root, sources).with_checks(rendered_quantity_problems)
    except CrdLoadError as err:
        missing.append(_crd_load(err))
    return validator, missing


def _crd_load(err: CrdLoadError) -> Diagnostic:
    """A CRD source that cannot be read, reported on the file the message begins with (relative
    to the working folder where it is below it, so that annotations find it)."""
    message = str(err)
    path, sep, rest = message.partition(": ")
    shown = path
    with contextlib.suppress(OSError, ValueError):
        shown = str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    return Diagnostic("crd-load", rest if sep else message, Location(shown))


def repository_schemas(
    root: Path, repository: model.Repository | None
) -> tuple[list[Path], list[Diagnostic]]:
    """The CRD folders and files gpuplane.yaml lists, each inside the repository."""
    if repository is None:
        return [], []
    paths: list[Path] = []
    problems: list[Diagnostic] = []
    for index, entry in enumerate(repository.schemas):
        path = root / entry
        where = repository.origin.at("spec", "schemas", index)
        try:
            top = root.resolve()
            inside = path.resolve().is_relative_to(top) and (
                not path.is_dir() or all(f.resolve().is_relative_to(top) for f in path.rglob("*"))
            )
        except OSError:
            inside = False
        if not inside or not path.exists():
            problems.append(
                Diagnostic(
                    "crd-load",
                    f"schemas[{index}] {entry!r} is not a file or folder inside the repository "
                    "(or links out of it)",
                    where,
                    hint="list CRD folders or files relative to the repository, or import them "
                    "into the store with `gpuplane schemas import`",
                )
            )
        else:
            paths.append(path)
    return paths, problems


def schema_pins(cluster: model.Cluster) -> Callable[[str, str], Pin]:
    """Which operator release the cluster runs for a custom kind, and the line pinning it."""

    def pin_of(group: str, kind: str) -> Pin:
        operator = schema_operator(group, kind)
        addon = cluster.addons.get(operator)
        title = OPERATOR_TITLES.get(operator, operator)
        if addon is None or not addon.version:
            return Pin(operator, title)
        return Pin(operator, title, addon.version, addon.origin.at("version"))

    return pin_of


def _check_implied_cluster_policy(
    view: ClusterView, validator: OutputValidator, unchecked: list[UncheckedObject]
) -> list[Diagnostic]:
    """The GPU Operator turns its chart values into a ClusterPolicy on the cluster; gpuplane
    writes only the values, so it checks the ClusterPolicy they imply against the CRD too."""
    implied = gpu_operator.implied_cluster_policy(view)
    if implied is None:
        return []
    at = view.cluster.addons[GPU_OPERATOR_ADDON].origin.location
    try:
        checked = validator.check(
            implied, view.cluster.kubernetes_version, schema_pins(view.cluster)
        )
    except CrdLoadError as err:
        return [_crd_load(err)]  # sort_diagnostics drops the repeat of a manifest's
    except UnsupportedKubernetesVersion:
        return []  # reported for the cluster's manifests already
    if checked.unchecked is not None:
        unchecked.append(UncheckedObject(view.cluster.name, checked.unchecked, at))
    found = checked.problems
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


@dataclass(frozen=True, slots=True)
class _ObjectChecks:
    """How each object one cluster renders is checked: against its schema by `validator`,
    against the transition rules of the committed object it replaces (`previous`, None for no
    transition), and with a `memo` not again for a body it holds a check of (`keys`: each
    object's `body_key`, in order)."""

    cluster: model.Cluster
    validator: OutputValidator
    previous: CommittedTree | None = None
    memo: CheckMemo | None = None
    keys: Sequence[bytes | None] = ()

    def check(
        self, position: int, manifest: Manifest, pin_of: Callable[[str, str], Pin]
    ) -> Checked:
        """The check of the cluster's `position`th object."""
        cluster = self.cluster
        if self.memo is not None:
            return self.memo.check(
                self.validator,
                self.keys[position],
                manifest,
                cluster.name,
                cluster.kubernetes_version,
                pin_of,
                self.previous,
            )
        return self.validator.check(
            manifest.body,
            cluster.kubernetes_version,
            pin_of,
            old_of(self.previous, cluster.name, manifest),
        )


def _check_output(
    manifests: tuple[Manifest, ...],
    checks: _ObjectChecks,
    unchecked: list[UncheckedObject],
    rules: UncheckedRules | None = None,
) -> list[Diagnostic]:
    cluster, previous = checks.cluster, checks.previous
    problems: list[Diagnostic] = []
    pin_of = schema_pins(cluster)
    origin = previous.origin if previous is not None else ""
    seen: dict[str, Manifest] = {}
    for position, manifest in enumerate(manifests):
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
            checked = checks.check(position, manifest, pin_of)
        except CrdLoadError as err:
            return [_crd_load(err)]
        except UnsupportedKubernetesVersion as err:
            return [
                Diagnostic(
                    "kubernetes-version-unsupported",
                    str(err),
                    cluster.origin.at("spec", "kubernetesVersion"),
                    severity=Severity.ERROR,
                )
            ]
        if checked.unchecked is not None:
            unchecked.append(UncheckedObject(cluster.name, checked.unchecked, manifest.source))
        for problem in checked.problems:
            where = f" at {problem.path}" if problem.path else ""
            problems.append(
                Diagnostic(
                    "output-schema",
                    f"rendered {manifest.kind} '{manifest.name}' ({cluster.name}/{manifest.path}){where}: {problem.message}",
                    manifest.source,
                )
            )
        problems.extend(cel_diagnostics(cluster.name, manifest, checked, origin))
        if previous is not None:
            problems.extend(unreadable_diagnostics(cluster.name, manifest, checked, previous))
        if rules is not None:
            rules.add(manifest, checked)
    problems.extend(identity_clashes(manifests, f"cluster '{cluster.name}'"))
    return problems


def _check_templates(
    values: tuple[Values, ...],
    keys: Sequence[bytes | None],
    checks: _ObjectChecks,
    unchecked: list[UncheckedObject],
    rules: UncheckedRules,
) -> list[Diagnostic]:
    """Every object of the workload templates (`rendered/<cluster>/templates/`), checked against
    the Kubernetes schemas and the pinned CRDs as the applied objects are, with the same
    findings on the template's source (the team's namespace entry). A template is created by
    the team, never replaced by a sync, so no transition rule applies, and it clashes with no
    applied object (nothing applies it). `keys`: each values file's `body_key`, when checked
    with a memo."""
    cluster = checks.cluster
    pin_of = schema_pins(cluster)
    problems: list[Diagnostic] = []
    for position, item in enumerate(values):
        if item.layer != TEMPLATES_LAYER:
            continue
        manifest = Manifest(item.layer, item.body, item.source)
        try:
            if checks.memo is not None:
                checked = checks.memo.check(
                    checks.validator,
                    keys[position],
                    manifest,
                    cluster.name,
                    cluster.kubernetes_version,
                    pin_of,
                    None,
                )
            else:
                checked = checks.validator.check(item.body, cluster.kubernetes_version, pin_of)
        except (CrdLoadError, UnsupportedKubernetesVersion):
            return []  # reported on the cluster's manifests already
        if checked.unchecked is not None:
            unchecked.append(UncheckedObject(cluster.name, checked.unchecked, item.source))
        what = f"template {manifest.kind} '{manifest.name}' ({cluster.name}/{item.path})"
        for problem in checked.problems:
            where = f" at {problem.path}" if problem.path else ""
            problems.append(
                Diagnostic("output-schema", f"{what}{where}: {problem.message}", item.source)
            )
        problems.extend(
            Diagnostic(
                "output-cel",
                f"{what} breaks a rule of CRD {checked.crd}: {violation.message}",
                item.source,
            )
            for violation in checked.cel
        )
        rules.add(manifest, checked)
    return problems


def old_of(
    previous: CommittedTree | None, cluster: str, manifest: Manifest
) -> Callable[[], Mapping[str, Any] | None] | None:
    """How to find the committed object `manifest` replaces, asked only for a CRD with
    transition rules."""
    if previous is None:
        return None
    return lambda: previous.old_self(cluster, manifest)
