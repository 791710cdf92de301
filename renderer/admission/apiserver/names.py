"""What the API server refuses before any controller acts on a workload: the object's own name,
and the Workload Kueue's reconciler creates for it. Every kind's answer goes through here, so
no reader has a rule of its own.

Both refusals are the API server's `StatusError` of reason `Invalid`, worded as
k8s.io/apimachinery writes it: `pkg/api/errors` `NewInvalid` (`<Kind>.<group> "<name>" is
invalid: <errors>`, one error as it is, several as `[e1, e2]`), `pkg/util/validation/field`
`Error.Error` (`<field>: <type>: <value>: <detail>`, a string value quoted as Go's `%q`)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

MAX_POD_SETS = 18
"""Kueue v0.19.2 `apis/kueue/v1beta2/workload_types.go` `WorkloadSpec.PodSets`
(`+kubebuilder:validation:MaxItems=18`; `pkg/controller/jobframework/constants.go`
`MaxPodSets`)."""

WORKLOAD_KIND = "Workload.kueue.x-k8s.io"

DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')"
)
"""apimachinery `pkg/util/validation/validation.go`: `dns1123SubdomainErrorMsg` through
`RegexError(msg, dns1123SubdomainFmt, "example.com")`."""


def go_quote(value: str) -> str:
    """`value` as Go's `%q` writes it (`strconv.Quote`): `"` and `\\` escaped, the usual
    control escapes, other unprintable characters as `\\xNN`, `\\uNNNN` or `\\UNNNNNNNN`."""
    out = ['"']
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    named["\v"] = "\\v"
    for char in value:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in named:
            out.append(named[char])
        elif char == " " or (unicodedata.category(char)[0] not in "CZ"):
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out) + '"'


def is_dns_subdomain(value: str, prefix: bool = False) -> list[str]:
    """apimachinery `pkg/api/validation/generic.go` `NameIsDNSSubdomain`: the problems of
    `value` as an RFC 1123 subdomain (`validation.IsDNS1123Subdomain`), none when it is one. A
    `prefix` (a generateName) goes through `maskTrailingDash` first, which (as written
    upstream) replaces its last two characters by `a` when it ends in `-`."""
    if prefix and len(value) > 1 and value.endswith("-"):
        value = value[:-2] + "a"
    errors = []
    if len(value.encode()) > DNS1123_SUBDOMAIN_MAX:  # Go's len counts bytes
        errors.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN.fullmatch(value):  # Go anchors `^...$` at the very ends of the text
        errors.append(SUBDOMAIN_MESSAGE)
    return errors


def qualified_kind(api_version: str, kind: str) -> str:
    """`schema.GroupKind.String()`: `Kind.group`, or the kind alone in the core group."""
    group = api_version.rpartition("/")[0]
    return f"{kind}.{group}" if group else kind


def invalid(qualified: str, name: str, errors: Sequence[str]) -> str:
    """`errors.NewInvalid`'s message for field errors already written out."""
    unique = list(dict.fromkeys(errors))
    listed = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    return f"{qualified} {go_quote(name)} is invalid: {listed}"


def name_refusal(data: Any) -> str | None:
    """The API server's answer to creating `data` when its metadata.name or generateName is no
    RFC 1123 subdomain, else None. apimachinery `pkg/api/validation/objectmeta.go`
    `ValidateObjectMetaAccessor` with `NameIsDNSSubdomain`, the name rule of every kind fit
    reads (`pkg/apis/batch/validation` `ValidateJob`, `ValidatePodCreate`, the apps kinds', and
    apiextensions-apiserver's for custom resources: JobSet, RayJob, TrainJob, ...). A
    generateName is checked as a prefix; the name generated from it (the prefix and five random
    characters) is not known, so its own error, which follows, is not quoted. A missing name
    is left to the readers (fit shows it as `(unnamed)`)."""
    if not isinstance(data, dict):
        return None
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return None
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    name, generate = metadata.get("name"), metadata.get("generateName")
    errors = []
    if isinstance(generate, str) and generate:
        for message in is_dns_subdomain(generate, prefix=True):
            errors.append(f"metadata.generateName: Invalid value: {go_quote(generate)}: {message}")
    if isinstance(name, str) and name:
        for message in is_dns_subdomain(name):
            errors.append(f"metadata.name: Invalid value: {go_quote(name)}: {message}")
    if not errors:
        return None
    shown = name if isinstance(name, str) and name else ""
    return invalid(qualified_kind(api_version, kind), shown, errors)


def workload_name(kind: str, name: str) -> str:
    """The Workload's name as Kueue's job reconciler makes it (`jobframework`
    `GetWorkloadNameForOwnerWithGVK`): `<kind>-<name>` in lower case kind, cut to 247
    characters, then `-` and five hex digits of a hash of the object's UID, which is not known
    before the object exists (written `<hash>`)."""
    return f"{(kind.lower() + '-' + name)[: DNS1123_SUBDOMAIN_MAX - 6]}-<hash>"


def too_many_pod_sets(kind: str, name: str, count: int) -> str | None:
    """The API server's answer to the Workload of `count` pod sets Kueue's reconciler creates
    for the object, when that is more than a Workload holds, else None. Only the RayCluster,
    RayJob, RayService and pod-group webhooks compare with `MaxPodSets` before the object is
    created; for every other kind (a JobSet's replicatedJobs, a TrainJob's runtime jobs, the
    Kubeflow jobs' replica types) the object is created, suspended by Kueue, and the Workload
    create is refused (the CRD's `maxItems`, apiextensions-apiserver's `field.TooMany`): the
    job stays suspended, never admitted."""
    if count <= MAX_POD_SETS:
        return None
    error = f"spec.podSets: Too many: {count}: must have at most {MAX_POD_SETS} items"
    return invalid(WORKLOAD_KIND, workload_name(kind, name), [error])


__all__ = [
    "MAX_POD_SETS",
    "go_quote",
    "invalid",
    "is_dns_subdomain",
    "name_refusal",
    "qualified_kind",
    "too_many_pod_sets",
    "workload_name",
]
