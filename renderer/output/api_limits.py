"""What the API server (and the controllers that act on an object) refuse that no schema says:
the total size of an object's annotations, of a ConfigMap's data and of the object itself, the
names of kinds that end up in a label or a DNS name, and the labels and annotations of the pod
templates an object carries (docs/api-limits.md).

kubernetes-validate's schemas and the CRDs' `openAPIV3Schema` leave all of these to the server's
Go validation, so a rendered object could pass every schema and still fail its sync. Every
object is checked here, whatever kind it is and whether a schema for it was found; the input
checks (`renderer.inputs.limits`, `renderer.policy.limits`) refuse what would lead here first,
so a finding of this module is a gpuplane bug or a limit the input checks do not know yet.
"""

from __future__ import annotations

import functools
import json
import marshal
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from renderer.output.schema_messages import Found, show

TOTAL_ANNOTATION_BYTES = 256 * (1 << 10)
"""apimachinery `pkg/api/validation/objectmeta.go` `TotalAnnotationSizeLimitB`: the keys and
values of one object's annotations together, counted in bytes (`len` of Go strings)."""

DATA_BYTES = 1 << 20
"""`pkg/apis/core/validation` `ValidateConfigMap` and `ValidateSecret`: the values of `data` and
`binaryData` together may not exceed `core.MaxSecretSize`, 1 MiB."""

OBJECT_BYTES = 3 << 19
"""etcd's default `--max-request-bytes` (`embed.DefaultMaxRequestBytes`, 1.5 MiB): the API
server cannot store a larger object. Counted on the object's compact JSON."""

JSON_PER_MARSHAL_BYTE = 8
"""More bytes of compact JSON than one byte of marshal's (version 2) encoding of the same value
ever becomes. The most is 7: a mapping entry `{False: False}` is two bytes in marshal (`FF`) and
fourteen in JSON (`"false":false,`). A control character is one byte in marshal and six in JSON
(`\\u0001`); a string key gains its quotes, colon and comma beside marshal's two bytes of type and
length; an int is five bytes (`i` and four) and at most eleven characters, a larger one two bytes
per 15 bits and fewer digits than that; a float nine bytes and at most 24 characters; a UTF-8
string is the same bytes in both (`ensure_ascii=False`)."""


LABEL_VALUE_MAX = 63
"""apimachinery `pkg/util/validation/validation.go` `LabelValueMaxLength`, and `DNS1123LabelMaxLength`."""

_Path = tuple[str | int, ...]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True, slots=True)
class NameRule:
    """A kind whose name is held to more than the DNS subdomain every name is checked against."""

    limit: int
    why: str
    dns1035: bool = False
    """It must also start with a letter (RFC 1035), as a Service's name must."""


NAME_RULES: Mapping[tuple[str, str], NameRule] = {
    ("", "Namespace"): NameRule(
        63, "a namespace name is a DNS-1123 label (apimachinery `ValidateNamespaceName`)"
    ),
    ("", "Service"): NameRule(
        63,
        "a Service name is its DNS name, an RFC 1035 label (`ValidateServiceName`)",
        dns1035=True,
    ),
    ("batch", "Job"): NameRule(
        63, "the Job controller labels the Job's pods with its name (batch.kubernetes.io/job-name)"
    ),
    ("batch", "CronJob"): NameRule(
        52, "the CronJob controller names its Jobs <name>-<11-digit time> (`validateCronJob`)"
    ),
    ("argoproj.io", "Workflow"): NameRule(
        63, "Argo Workflows refuses longer names (workflow/validate `maxCharsInObjectName`)"
    ),
    ("argoproj.io", "WorkflowTemplate"): NameRule(
        63, "Argo Workflows refuses longer names (workflow/validate `maxCharsInObjectName`)"
    ),
    ("argoproj.io", "CronWorkflow"): NameRule(
        52, "Argo Workflows names each run <name>-<10-digit time> (`maxCharsInCronWorkflowName`)"
    ),
    ("kueue.x-k8s.io", "LocalQueue"): NameRule(
        63, "workloads name their LocalQueue in the label kueue.x-k8s.io/queue-name"
    ),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): NameRule(
        63, "workloads name their priority in the label kueue.x-k8s.io/priority-class"
    ),
    ("kueue.x-k8s.io", "ClusterQueue"): NameRule(
        63,
        "Kueue labels the pods it admits with it (kueue.x-k8s.io/cluster-queue-name) only when "
        "it is a label value (`pkg/constants` ClusterQueueLabel)",
    ),
    ("ray.io", "RayJob"): NameRule(
        47,
        "KubeRay refuses longer names: the RayCluster it creates adds 6 characters "
        "(`MaxRayJobNameLength`)",
        dns1035=True,
    ),
    ("ray.io", "RayCluster"): NameRule(
        53, "KubeRay refuses longer names (`MaxRayClusterNameLength`)", dns1035=True
    ),
}
"""Kinds gpuplane renders (or may) whose name ends up in a label value, a DNS label or a name
built from it; by (API group, kind)."""


def annotation_bytes(annotations: Mapping[str, Any]) -> int:
    """The size the API server counts: the UTF-8 bytes of every key and string value."""
    return sum(
        len(key.encode()) + (len(value.encode()) if isinstance(value, str) else 0)
        for key, value in annotations.items()
        if isinstance(key, str)
    )


def _name_problems(obj: Mapping[str, Any], name: str) -> Iterator[Found]:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    group = api_version.rpartition("/")[0]
    rule = NAME_RULES.get((group, kind))
    if rule is None or len(name) > 253 or not _SUBDOMAIN.match(name):
        return  # not a DNS subdomain either: `_metadata_problems` reports that, once
    shape = _DNS_1035_LABEL if rule.dns1035 else (_DNS_LABEL if rule.limit <= 63 else _SUBDOMAIN)
    if len(name) > rule.limit or not shape.match(name):
        what = "an RFC 1035 label" if rule.dns1035 else "a DNS-1123 label"
        yield (
            ("metadata", "name"),
            f"{show(name)} is {len(name)} characters: a {kind} name must be {what} of at most "
            f"{rule.limit}, as {rule.why}",
        )


def _meta_problems(meta: Mapping[str, Any], at: _Path) -> Iterator[Found]:
    """The annotations' total size; for a nested pod template's metadata also its labels and
    annotation keys (`_metadata_problems` checks an object's own)."""
    annotations = meta.get("annotations")
    if isinstance(annotations, Mapping):
        size = annotation_bytes(annotations)
        if size > TOTAL_ANNOTATION_BYTES:
            yield (
                (*at, "annotations"),
                f"the annotations are {size} bytes together, more than the "
                f"{TOTAL_ANNOTATION_BYTES} (256 KiB) Kubernetes allows on one object",
            )
    if at == ("metadata",):
        return
    labels = meta.get("labels")
    for key, value in labels.items() if isinstance(labels, Mapping) else ():
        if isinstance(value, str) and _bad_label_value(value):
            yield (
                (*at, "labels", key),
                f"invalid label value {show(value)}: at most 63 characters of [A-Za-z0-9-_.], "
                "starting and ending with a letter or digit",
            )
    for section in ("labels", "annotations"):
        entries = meta.get(section)
        for key in entries if isinstance(entries, Mapping) else ():
            if isinstance(key, str) and _bad_key(key):
                yield (*at, section, key), f"invalid {section[:-1]} key {show(key)}"


@functools.lru_cache(maxsize=1 << 16)
def _bad_label_value(value: str) -> bool:
    """Whether a label value is not one (kept per value: a platform repeats a few hundred)."""
    return len(value) > LABEL_VALUE_MAX or not _LABEL_VALUE.match(value)


@functools.lru_cache(maxsize=1 << 16)
def _bad_key(key: str) -> bool:
    """Whether a label or annotation key's name part is not a qualified name."""
    name = key.rpartition("/")[2]
    return len(name) > 63 or not _QUALIFIED_NAME.match(name)


_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types of a value that is neither a mapping nor a list: told from the type alone, before the
`Mapping` check, which is a call into Python for every value (a rendered object holds tens of
thousands). A subclass of one of them is checked the long way."""


def _is_mapping(value: object) -> bool:
    kind = type(value)
    return kind is dict or (kind is not list and kind not in _LEAVES and isinstance(value, Mapping))


def _is_container(value: object) -> bool:
    kind = type(value)
    return (
        kind is dict or kind is list or (kind not in _LEAVES and isinstance(value, Mapping | list))
    )


def _metadata_blocks(
    obj: Mapping[str, Any], encoded: bytes | None = None
) -> Iterator[tuple[Mapping[str, Any], _Path]]:
    """Every `metadata` mapping in an object, in the order of its document: its own and those
    of the templates it carries. `encoded`, the object's marshal bytes (version 2: every key is
    written out whole, as `_METADATA_KEY`), bounds how many keys `metadata` the object has (a
    string value `metadata` only counts one more): one that is its own is found from them
    alone, and the walk stops once it has met as many as the bytes hold, before the pod specs
    that follow the last template's metadata. The walk keeps where each node sits as a link
    to its parent (`_Link`) and makes a path only for a block it yields."""
    bound = encoded.count(_METADATA_KEY) if encoded is not None else -1
    if bound != -1 and bound <= ("metadata" in obj):
        own = obj.get("metadata")
        if isinstance(own, Mapping):
            yield own, ("metadata",)
        return
    left = bound  # keys `metadata` not met yet; -1 (unknown) never reaches 0
    stack: list[tuple[Any, _Link]] = [(obj, None)]
    while stack and left:
        node, link = stack.pop()
        below: list[tuple[Any, _Link]] = []
        if _is_mapping(node):
            for key, value in node.items():
                if key == "metadata":
                    left -= 1
                kind = type(value)
                if kind in _LEAVES:
                    continue
                if kind is dict or kind is list or isinstance(value, Mapping | list):
                    child = (link, key)
                    if key == "metadata" and _is_mapping(value):
                        yield value, _linked_path(child)
                    below.append((value, child))
        else:
            below = [(v, (link, i)) for i, v in enumerate(node) if _is_container(v)]
        stack.extend(reversed(below))  # the first child is walked first


_METADATA_KEY = b"u" + struct.pack("<I", len("metadata")) + b"metadata"
"""A str `metadata` as marshal's version 2 writes it: `u`, its length in four bytes
(little-endian) and its UTF-8."""


_Link = tuple[Any, str | int] | None
"""Where a node sits: (its parent's link, its key); None for the object itself."""


def _linked_path(link: _Link) -> _Path:
    keys: list[str | int] = []
    while link is not None:
        link, key = link
        keys.append(key)
    return tuple(reversed(keys))


def _size_problems(obj: Mapping[str, Any], encoded: bytes | None = None) -> Iterator[Found]:
    """A ConfigMap's or Secret's data over 1 MiB; any object over what etcd stores."""
    if obj.get("kind") in ("ConfigMap", "Secret") and obj.get("apiVersion") == "v1":
        size = 0
        for section in ("data", "binaryData", "stringData"):
            entries = obj.get(section)
            for value in entries.values() if isinstance(entries, Mapping) else ():
                if isinstance(value, str):
                    size += len(value.encode()) if section != "binaryData" else len(value) * 3 // 4
        if size > DATA_BYTES:
            yield (
                ("data",),
                f"the data is {size} bytes, more than the {DATA_BYTES} (1 MiB) a "
                f"{obj['kind']} may hold",
            )
    if encoded is not None and len(encoded) * JSON_PER_MARSHAL_BYTE <= OBJECT_BYTES:
        return  # surely under the limit as JSON (`JSON_PER_MARSHAL_BYTE`)
    try:
        whole = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())
    except (TypeError, ValueError):  # not JSON: the schema check says what is wrong
        return
    if whole > OBJECT_BYTES:
        yield (
            (),
            f"the object is {whole} bytes, more than the {OBJECT_BYTES} (1.5 MiB) etcd stores by "
            "default: the API server would refuse it",
        )


def marshalled(obj: Mapping[str, Any]) -> bytes | None:
    """The object in marshal's version 2 (C, several times faster than `json.dumps`; no
    back-references, so every value is written out where it sits), or None when marshal cannot
    write it (a subclass, an enum): then every check takes the long way. Made once per object
    and handed to each check that reads it (`ObjectCheck`)."""
    try:
        return marshal.dumps(obj, 2)  # type: ignore[arg-type]  # any value: ValueError
    except ValueError:
        return None


_UNMADE: Any = object()
"""`encoded` not given: made here."""


def object_problems(obj: Mapping[str, Any], encoded: bytes | None = _UNMADE) -> list[Found]:
    """What the API server, or the controller acting on the object, would refuse that no schema
    says: see the module's docstring. `encoded`: the object's `marshalled` bytes, when made."""
    if encoded is _UNMADE:
        encoded = marshalled(obj)
    found: list[Found] = list(_size_problems(obj, encoded))
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if isinstance(name, str):
        found.extend(_name_problems(obj, name))
    for block, at in _metadata_blocks(obj, encoded):
        found.extend(_meta_problems(block, at))
    return found


ObjectCheck = Callable[[Mapping[str, Any], bytes | None], Iterable[Found]]
"""A further check of every rendered object (`OutputValidator.with_checks`): the quantity
ranges, which need the model's quantity arithmetic (`renderer.model.limits`). It is given the
object and its `marshalled` bytes (None: marshal cannot write it)."""
