"""What to write in each value `gpuplane new` leaves empty: one table for `new` and `validate`.

`gpuplane new` writes a blank (an empty value marked `# REPLACE-ME: ...`) for every value the
author must choose, and `validate` reports each blank still empty as `schema-wrong-type` ("must
be a string, got an empty value"). Both say the same thing about a blank, from this table: what
the field takes (the repository's queues, clusters and pools where it names one, the schema's
values where it is an enumeration) and an example value that, written there, is what the
schema asks for. `validate`'s hint is `write KEY: EXAMPLE (WHAT)`: applied as written, it
leaves no error on that field.

The choices come from the repository (`Names`): the files of each input folder, each queue's
cluster and pools, gpuplane.yaml's allowed registries. The schema check of one file is kept by
its bytes (`pipeline.InputCache`), so `suggest` rewrites the hints after every file is loaded,
when the names are known, rather than inside `schema.check_document`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from renderer.findings.diagnostics import Diagnostic, PathKey, SourceMap
from renderer.inputs.schema import KIND_FOLDERS, schema_for
from renderer.model import catalog
from renderer.model.images import parse_prefix
from renderer.model.platform import Platform


@dataclass(frozen=True, slots=True)
class Names:
    """What the repository holds that a blank may name, each list in name order."""

    queues: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    pools: tuple[str, ...] = ()
    queue_cluster: Mapping[str, str] = field(default_factory=dict)
    queue_pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    pool_cluster: Mapping[str, str] = field(default_factory=dict)
    mig_pools: frozenset[str] = frozenset()
    """Pools whose quota needs a `profile` too: a blank suggests another pool first."""
    registries: tuple[str, ...] = ()
    """gpuplane.yaml's `spec.allowlists.images` entries that read as registry paths."""
    valid: frozenset[str] = frozenset()
    """The queues, clusters and pools whose files validate: the ones an example names."""

    def of(self, folder: str) -> tuple[str, ...]:
        return {"queues": self.queues, "clusters": self.clusters, "pools": self.pools}[folder]

    def example(self, names: Sequence[str], otherwise: str) -> str:
        """The first of `names` whose file validates, else the first, else `otherwise`."""
        return next((n for n in names if n in self.valid), names[0] if names else otherwise)


def names_of(platform: Platform) -> Names:
    """The names a platform holds: each folder's objects, the broken ones too (a file that does
    not validate yet still names its object), and what the valid queues and pools say."""

    def every(kind: str, valid: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted({*valid, *(name for k, name in platform.broken if k == kind)}))

    allowed = platform.repository.allowed_images if platform.repository is not None else ()
    return Names(
        queues=every("Queue", platform.queues),
        clusters=every("Cluster", platform.clusters),
        pools=every("Pool", platform.pools),
        queue_cluster={name: q.cluster for name, q in platform.queues.items()},
        queue_pools={name: tuple(q.pools) for name, q in platform.queues.items()},
        pool_cluster={name: p.cluster for name, p in platform.pools.items()},
        mig_pools=frozenset(name for name, p in platform.pools.items() if p.sharing == "mig"),
        registries=tuple(
            text for text in allowed if text.endswith("/") and parse_prefix(text) is not None
        ),
        valid=frozenset({*platform.queues, *platform.clusters, *platform.pools}),
    )


@dataclass(frozen=True, slots=True)
class Blank:
    """What a blank takes, and a value to write there."""

    what: str
    example: str

    @property
    def sentence(self) -> str:
        """As `gpuplane new` writes it after `REPLACE-ME:` and lists it."""
        return f"{self.what}; for example {self.example}"

    def hint(self, key: str) -> str:
        """As `validate` says it of the blank still empty at `key`."""
        return f"write {key}: {self.example} ({self.what})"


@dataclass(frozen=True, slots=True)
class _Asked:
    """What a suggestion reads: the repository's names, the object's name, its `spec` as far
    as it is filled in (empty for `gpuplane new`)."""

    names: Names
    name: str
    spec: Mapping[str, Any]

    def choices(self, folder: str, among: Sequence[str] | None = None) -> str:
        """`one of a, b`, `a (the only one)`, or how to make the first one."""
        names = tuple(among) if among is not None else self.names.of(folder)
        kind = KIND_FOLDERS[folder].lower()
        if not names:
            return f"the name of a {kind} in {folder}/ (none yet: `gpuplane new {kind} NAME`)"
        return f"one of {', '.join(names)}" if len(names) > 1 else f"{names[0]} (the only one)"

    def team_queue(self) -> str | None:
        """The team's queue as filled in, else the first queue (the one a blank suggests)."""
        queue = self.spec.get("queue")
        if isinstance(queue, str) and queue in self.names.queue_cluster:
            return queue
        return next((q for q in self.names.queues if q in self.names.queue_cluster), None)

    def cluster(self) -> str | None:
        """The object's cluster as filled in, else the first cluster."""
        cluster = self.spec.get("cluster")
        if isinstance(cluster, str) and cluster in self.names.clusters:
            return cluster
        return self.names.example(self.names.clusters, "") or None


def _one_of(kind: str, path: str) -> tuple[str, ...]:
    """The values the schema allows at `spec.<path>` of `kind`."""
    schema = schema_for(kind).raw
    node: Mapping[str, Any] = schema["properties"]["spec"]
    for part in path.split("."):
        node = node["properties"][part]
    return tuple(str(v) for v in node["enum"])


def _enum(kind: str, path: str, first: str | None = None) -> Callable[[_Asked], Blank]:
    def blank(_: _Asked) -> Blank:
        values = _one_of(kind, path)
        return Blank(f"one of {', '.join(values)}", first or values[0])

    return blank


def _fixed(what: str, example: str) -> Callable[[_Asked], Blank]:
    return lambda asked: Blank(what, example.replace("{name}", asked.name))


def _team_cluster(asked: _Asked) -> Blank:
    queue = asked.team_queue()
    cluster = asked.names.queue_cluster.get(queue) if queue else None
    example = cluster or asked.names.example(asked.names.clusters, "CLUSTER")
    where = f", {cluster} for {queue}" if cluster else ""
    return Blank(f"the cluster of the team's queue{where}; {asked.choices('clusters')}", example)


def _team_pool(asked: _Asked) -> Blank:
    queue = asked.team_queue()
    pools = asked.names.queue_pools.get(queue, ()) if queue else asked.names.pools
    # a MIG pool's quota also needs a profile: suggest a pool that needs nothing more
    ordered = sorted(pools, key=lambda p: (p in asked.names.mig_pools, p))
    of_queue = f" {queue}" if queue else ""
    return Blank(
        f"a pool of the team's queue{of_queue}: {asked.choices('pools', pools)}",
        asked.names.example(ordered, "POOL"),
    )


def _team_images(asked: _Asked) -> Blank:
    registries = asked.names.registries
    if not registries:
        return Blank(
            "a list of registry prefixes, once gpuplane.yaml's spec.allowlists.images allows them",
            f"[registry.example.com/{asked.name}/]",
        )
    return Blank(
        f"a list of registry prefixes within those gpuplane.yaml allows: {', '.join(registries)}",
        f"[{registries[0]}{asked.name}/]",
    )


def _first(folder: str) -> Callable[[_Asked], Blank]:
    def blank(asked: _Asked) -> Blank:
        names = asked.names.of(folder)
        return Blank(asked.choices(folder), asked.names.example(names, folder[:-1].upper()))

    return blank


def _queue_pools(asked: _Asked) -> Blank:
    cluster = asked.cluster()
    pools = [p for p in asked.names.pools if asked.names.pool_cluster.get(p) == cluster]
    where = f" {cluster}" if cluster else ""
    return Blank(
        f"a list of pools on the queue's cluster{where}",
        f"[{', '.join(pools[:2]) or 'h100-train'}]",
    )


def _accelerator(_: _Asked) -> Blank:
    keys = sorted(catalog.CATALOG)
    return Blank(f"one of {', '.join(keys)}", "h100-80gb" if "h100-80gb" in keys else keys[0])


def _version(example: str) -> Callable[[_Asked], Blank]:
    return _fixed("the add-on's version, which docs/operators.md lists", example)


BLANKS: Mapping[str, Mapping[str, Callable[[_Asked], Blank]]] = {
    "Team": {
        "spec.description": _fixed("what the team does, in a sentence", "Models of team {name}"),
        "spec.owners": _fixed("a list of IdP groups", "[{name}-leads]"),
        "spec.codeowners": _fixed("a list of GitHub teams or users", '["@your-org/{name}"]'),
        "spec.costCenter": _fixed("the finance cost center", "CC-1042"),
        "spec.contact": _fixed("a chat channel or an e-mail address", '"#{name}"'),
        "spec.queue": _first("queues"),
        "spec.namespaces[].cluster": _team_cluster,
        "spec.gpus[].pool": _team_pool,
        "spec.gpus[].nominal": _fixed("a whole number, 0 or more, in the pool's units", "0"),
        "spec.images": _team_images,
    },
    "Pool": {
        "spec.description": _fixed("what the pool is for, in a sentence", "GPU nodes of {name}"),
        "spec.cluster": _first("clusters"),
        "spec.accelerator": _accelerator,
        "spec.gpusPerNode": _fixed("a whole number, 1-16", "8"),
        "spec.nodes": _fixed("a whole number, or {min: 2, max: 8} for an autoscaled pool", "2"),
        "spec.workload": _enum("Pool", "workload"),
        "spec.sharing": _enum("Pool", "sharing", "full-gpu"),
        "spec.host.cpus": _fixed("a whole number", "224"),
        "spec.host.memory": _fixed("a quantity", "2Ti"),
        "spec.cost.gpuHour": _fixed("a number, the price of one GPU hour", "2.85"),
        "spec.acceptance": _fixed(
            "the thresholds the workload needs, listed below per workload",
            "{allReduceBusBandwidthGBps: 350, checkpointWriteGBps: 4, restoreSeconds: 300}",
        ),
    },
    "Queue": {
        "spec.description": _fixed("what this queue policy is for, in a sentence", "Queue {name}"),
        "spec.cluster": _first("clusters"),
        "spec.pools": _queue_pools,
    },
    "Cluster": {
        "spec.description": _fixed("what this cluster is for, in a sentence", "Cluster {name}"),
        "spec.kubernetesVersion": _fixed("a quoted minor version", '"1.33"'),
        "spec.environment": _enum("Cluster", "environment"),
        "spec.provider": _enum("Cluster", "provider"),
        "spec.argocd.destination": _fixed(
            "an https:// URL; https://kubernetes.default.svc where Argo CD runs in this cluster",
            "https://kubernetes.default.svc",
        ),
        "spec.identity.groupPrefix": _fixed(
            'the API server\'s --oidc-groups-prefix, quoted; "" for none', '"oidc:"'
        ),
        "spec.platformOwners": _fixed("a list of IdP groups", "[platform-admins]"),
        "spec.addons.gpuOperator.version": _version("v26.7.0"),
        "spec.addons.kueue.version": _version("v0.19.2"),
        "spec.addons.argoWorkflows.version": _version("2.0.4"),
        "spec.addons.dcgmExporter.version": _version("4.5.2-4.8.1"),
        "spec.addons.prometheusStack.version": _version("79.6.1"),
        "spec.addons.opencost.version": _version("2.5.17"),
        "spec.storage.sharedClass": _fixed("a StorageClass name", "shared-fs"),
        "spec.storage.scratchClass": _fixed("a StorageClass name", "local-nvme"),
        "spec.storage.objectStore": _fixed("a bucket URL", "s3://{name}-ml"),
    },
}
"""Per kind, per field (`[]` for any list index), what its blank takes."""


def blank(kind: str, field_path: str, names: Names, name: str, spec: Mapping[str, Any]) -> Blank:
    """The blank of `kind`'s field at `field_path` (`spec.gpus[].pool`), for the object `name`
    whose `spec` is filled in as far as given. KeyError: no blank there."""
    return BLANKS[kind][field_path](_Asked(names, name, spec))


def _pattern(path: PathKey) -> str:
    return "".join(
        "[]" if isinstance(part, int) else (f".{part}" if i else str(part))
        for i, part in enumerate(path)
    )


def _empty_values(data: Any, path: PathKey = ()) -> Iterator[PathKey]:
    """The path of every empty (null) value in a document."""
    if data is None:
        yield path
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from _empty_values(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _empty_values(value, (*path, index))


def suggest(
    diagnostics: Sequence[Diagnostic],
    documents: Mapping[str, tuple[Any, SourceMap]],
    platform: Platform,
) -> list[Diagnostic]:
    """The findings, each empty-value `schema-wrong-type` at a blank of `BLANKS` with the
    blank's hint (`Blank.hint`): what `gpuplane new` asked there, and a value to write. The
    platform's names (`names_of`) are read only when some value is of the wrong type."""
    if not any(d.rule == "schema-wrong-type" for d in diagnostics):
        return list(diagnostics)
    names = names_of(platform)
    hints: dict[tuple[str, int, int], str] = {}
    for display, (data, source) in documents.items():
        kind = KIND_FOLDERS.get(display.split("/", 1)[0])
        if kind is None or not isinstance(data, Mapping):
            continue
        found = data.get("spec")
        spec: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        meta = data.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        name = name if isinstance(name, str) else display.rsplit("/", 1)[-1].removesuffix(".yaml")
        for path in _empty_values(data):
            suggestion = BLANKS[kind].get(_pattern(path))
            if suggestion is None:
                continue
            at = source.locate(path)
            key = str(path[-1])
            hints[(at.file, at.line, at.col)] = suggestion(_Asked(names, name, spec)).hint(key)
    return [
        dataclasses.replace(d, hint=hints[place])
        if d.rule == "schema-wrong-type" and (place := (d.at.file, d.at.line, d.at.col)) in hints
        else d
        for d in diagnostics
    ]
