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

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_FMT = f"({_LABEL_KEY_FMT})?"
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
LABEL_MAX = 63
_LABEL_KEY_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    f"alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    f"validation is '{_LABEL_KEY_FMT}')"
)
_LABEL_VALUE_MESSAGE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"
)
"""apimachinery `IsQualifiedName` (v0.35 on: `pkg/api/validate/content` `IsLabelKey`) and
`IsValidLabelValue`: `RegexError` writes each example as `'x', ` and joins them with ` or `."""
TOTAL_ANNOTATION_SIZE = 256 * 1024
"""apimachinery `pkg/api/validation/objectmeta.go` `TotalAnnotationSizeLimitB`: the bytes of
all annotation keys and values together."""


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


def is_dns_subdomain(value: str, *, prefix: bool = False) -> list[str]:
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


def is_label_key(value: str, minor: str | None = None) -> list[str]:
    """apimachinery `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of
    at most 63 characters. More than one `/` is worded `a qualified name ...` up to Kubernetes
    1.34 and `a valid label key ...` from 1.35 (`content.IsLabelKey`); `minor` None: the
    latter."""
    parts = value.split("/")
    if len(parts) > 2:
        old = minor is not None and _minor_number(minor) < 35
        what = "a qualified name" if old else "a valid label key"
        return [
            f"{what} {_LABEL_KEY_MESSAGE} with an optional DNS subdomain prefix and '/' (e.g. "
            "'example.com/MyName')"
        ]
    errors = []
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + m for m in is_dns_subdomain(parts[0]))
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > LABEL_MAX:
        errors.append(f"name part must be no more than {LABEL_MAX} characters")
    if not _LABEL_KEY.fullmatch(name):
        errors.append("name part " + _LABEL_KEY_MESSAGE)
    return errors


def _minor_number(minor: str) -> int:
    found = re.fullmatch(r"1\.(\d+)(\..*)?", minor)
    return int(found[1]) if found else 99


def is_label_value(value: str) -> list[str]:
    """apimachinery `IsValidLabelValue` (v0.35 on: `content.IsLabelValue`)."""
    errors = []
    if len(value.encode()) > LABEL_MAX:
        errors.append(f"must be no more than {LABEL_MAX} characters")
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(_LABEL_VALUE_MESSAGE)
    return errors


def metadata_errors(metadata: dict[str, Any], minor: str | None = None) -> list[str]:
    """The field errors of `ValidateObjectMetaAccessor` (apimachinery
    `pkg/api/validation/objectmeta.go`, v0.33 to v0.36) on create that a job file decides, in
    its order: generateName, then name (`name or generateName is required` when neither is
    given: with a generateName the registry makes the name before validating), the labels
    (`ValidateLabels`: each key a qualified name, each value a label value) and the
    annotations (`ValidateAnnotations`: each key, lower-cased, a qualified name; all keys and
    values at most 256 KiB together). Go visits a map in random order; fit by key. A field of
    another type is decoding's to refuse, not this."""
    name, generate = metadata.get("name"), metadata.get("generateName")
    errors = []
    if isinstance(generate, str) and generate:
        for message in is_dns_subdomain(generate, prefix=True):
            errors.append(f"metadata.generateName: Invalid value: {go_quote(generate)}: {message}")
    if isinstance(name, str) and name:
        for message in is_dns_subdomain(name):
            errors.append(f"metadata.name: Invalid value: {go_quote(name)}: {message}")
    elif name in (None, "") and generate in (None, ""):
        errors.append("metadata.name: Required value: name or generateName is required")
    labels = metadata.get("labels")
    for key, value in sorted(labels.items()) if isinstance(labels, dict) else ():
        if not isinstance(key, str) or not isinstance(value, str):
            continue
        for message in is_label_key(key, minor):
            errors.append(f"metadata.labels: Invalid value: {go_quote(key)}: {message}")
        for message in is_label_value(value):
            errors.append(f"metadata.labels: Invalid value: {go_quote(value)}: {message}")
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        texts = {k: v for k, v in annotations.items() if isinstance(k, str) and isinstance(v, str)}
        for key in sorted(texts):
            for message in is_label_key(key.lower(), minor):
                errors.append(f"metadata.annotations: Invalid value: {go_quote(key)}: {message}")
        size = sum(len(k.encode()) + len(v.encode()) for k, v in texts.items())
        if size > TOTAL_ANNOTATION_SIZE:
            errors.append(
                f"metadata.annotations: Too long: may not be more than {TOTAL_ANNOTATION_SIZE} bytes"
            )
    return errors


def name_refusal(data: Any, minor: str | None = None) -> str | None:
    """The API server's answer to creating `data` when its metadata is invalid
    (`metadata_errors`), else None: `ValidateObjectMetaAccessor` with `NameIsDNSSubdomain` is
    the metadata rule of every kind fit reads (`pkg/apis/batch/validation` `ValidateJob`,
    `ValidatePodCreate`, the apps kinds', and apiextensions-apiserver's for custom resources:
    JobSet, RayJob, TrainJob, ...). A generateName is checked as a prefix; the name generated
    from it (the prefix and five random characters) is not known, so its own error, which
    follows, is not quoted. `minor`: the cluster's Kubernetes minor version."""
    if not isinstance(data, dict):
        return None
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return None
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    errors = metadata_errors(metadata, minor)
    if not errors:
        return None
    name = metadata.get("name")
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
    "is_label_key",
    "is_label_value",
    "metadata_errors",
    "name_refusal",
    "qualified_kind",
    "too_many_pod_sets",
    "workload_name",
]
