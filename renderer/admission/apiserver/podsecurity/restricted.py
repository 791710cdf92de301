"""The restricted checks of k8s.io/pod-security-admission v0.36.2 (`policy/check_<id>.go`,
function named in each docstring), registered in `RESTRICTED_CHECKS` with their minimum versions
and the baseline checks each replaces (`OverrideCheckIDs`)."""

from __future__ import annotations

from renderer.admission.apiserver.podsecurity.api import Level, v1
from renderer.admission.apiserver.podsecurity.baseline import SECCOMP_VALID_TYPES, proc_mount_1_0
from renderer.admission.apiserver.podsecurity.checks import (
    ALLOWED,
    Check,
    CheckResult,
    Meta,
    Pod,
    VersionedCheck,
    container_name,
    containers,
    entries,
    field_of,
    forbidden,
    go_sorted,
    integer,
    is_windows,
    join_quote,
    mapping,
    pluralize,
    relax_for_user_namespace,
    setters,
    strings,
    text,
)

# --- check_allowPrivilegeEscalation.go --------------------------------------------------------


def allow_privilege_escalation_1_8(meta: Meta, spec: Pod) -> CheckResult:
    """`allowPrivilegeEscalation_1_8`: every container must set it to false."""
    bad = [
        container_name(c)
        for c in containers(spec)
        if field_of(c, "securityContext", "allowPrivilegeEscalation") is not False
    ]
    if not bad:
        return ALLOWED
    return forbidden(
        "allowPrivilegeEscalation != false",
        f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} "
        "must set securityContext.allowPrivilegeEscalation=false",
    )


def allow_privilege_escalation_1_25(meta: Meta, spec: Pod) -> CheckResult:
    """`allowPrivilegeEscalation_1_25`: Windows pods (`spec.os.name: windows`) are exempt."""
    return ALLOWED if is_windows(spec) else allow_privilege_escalation_1_8(meta, spec)


# --- check_capabilities_restricted.go ---------------------------------------------------------


def capabilities_restricted_1_22(meta: Meta, spec: Pod) -> CheckResult:
    """`capabilitiesRestricted_1_22`: drop ALL, add nothing but NET_BIND_SERVICE."""
    missing_drop_all = []
    adding = []
    added: set[str] = set()
    for container in containers(spec):
        capabilities = mapping(field_of(container, "securityContext", "capabilities"))
        if capabilities is None:
            missing_drop_all.append(container_name(container))
            continue
        if "ALL" not in strings(capabilities.get("drop")):
            missing_drop_all.append(container_name(container))
        extra = [c for c in strings(capabilities.get("add")) if c != "NET_BIND_SERVICE"]
        added.update(extra)
        if extra:
            adding.append(container_name(container))
    details = []
    if missing_drop_all:
        details.append(
            f"{pluralize('container', 'containers', len(missing_drop_all))} "
            f'{join_quote(missing_drop_all)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{pluralize('container', 'containers', len(adding))} {join_quote(adding)} "
            f"must not include {join_quote(go_sorted(added))} in securityContext.capabilities.add"
        )
    return forbidden("unrestricted capabilities", "; ".join(details)) if details else ALLOWED


def capabilities_restricted_1_25(meta: Meta, spec: Pod) -> CheckResult:
    """`capabilitiesRestricted_1_25`: Windows pods are exempt."""
    return ALLOWED if is_windows(spec) else capabilities_restricted_1_22(meta, spec)


# --- check_restrictedVolumes.go ---------------------------------------------------------------

ALLOWED_VOLUME_SOURCES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
RESTRICTED_VOLUME_SOURCES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
)
"""In the order `restrictedVolumes_1_0` tests them; the first found names the volume's type."""


def restricted_volumes_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`restrictedVolumes_1_0`: only the inline volume sources of `ALLOWED_VOLUME_SOURCES`
    (`image` since the v1.33 code, ca569ec, without a new policy version); a volume with none of
    the known sources is `unknown` (the API server's defaulting gives a source-less volume an
    emptyDir before admission, `SetDefaults_Volume`)."""
    bad = []
    types: set[str] = set()
    for volume in entries(spec.get("volumes")):
        if any(mapping(volume.get(key)) is not None for key in ALLOWED_VOLUME_SOURCES):
            continue
        bad.append(text(volume.get("name")))
        found = [key for key in RESTRICTED_VOLUME_SOURCES if mapping(volume.get(key)) is not None]
        types.add(found[0] if found else "unknown")
    if not bad:
        return ALLOWED
    return forbidden(
        "restricted volume types",
        f"{pluralize('volume', 'volumes', len(bad))} {join_quote(bad)} "
        f"{pluralize('uses', 'use', len(bad))} "
        f"{pluralize('restricted volume type', 'restricted volume types', len(types))} "
        f"{join_quote(go_sorted(types))}",
    )


# --- check_runAsNonRoot.go, check_runAsUser.go ------------------------------------------------


def run_as_non_root_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`runAsNonRoot1_0`: runAsNonRoot true on the pod, or on every container that does not
    inherit it; false anywhere is named first."""
    pod_value = field_of(spec, "securityContext", "runAsNonRoot")
    pod_true = pod_value is True
    explicit_false = []
    implicit = []
    for container in containers(spec):
        value = field_of(container, "securityContext", "runAsNonRoot")
        if isinstance(value, bool):
            if not value:
                explicit_false.append(container_name(container))
        elif not pod_true:
            implicit.append(container_name(container))
    found = setters(pod_bad=pod_value is False, containers=explicit_false)
    if found:
        return forbidden(
            "runAsNonRoot != true",
            f"{' and '.join(found)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return forbidden(
            "runAsNonRoot != true",
            f"pod or {pluralize('container', 'containers', len(implicit))} "
            f"{join_quote(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return ALLOWED


def run_as_non_root_1_35(meta: Meta, spec: Pod) -> CheckResult:
    """`runAsNonRoot1_35`: pods in a user namespace (`hostUsers: false`) are exempt."""
    return ALLOWED if relax_for_user_namespace(spec) else run_as_non_root_1_0(meta, spec)


def run_as_user_1_23(meta: Meta, spec: Pod) -> CheckResult:
    """`runAsUser1_23`: runAsUser 0 on the pod or a container."""
    bad = [
        container_name(c)
        for c in containers(spec)
        if integer(field_of(c, "securityContext", "runAsUser")) == 0
    ]
    pod_bad = integer(field_of(spec, "securityContext", "runAsUser")) == 0
    found = setters(pod_bad=pod_bad, containers=bad)
    if not found:
        return ALLOWED
    return forbidden("runAsUser=0", f"{' and '.join(found)} must not set runAsUser=0")


def run_as_user_1_35(meta: Meta, spec: Pod) -> CheckResult:
    """`runAsUser1_35`: pods in a user namespace are exempt."""
    return ALLOWED if relax_for_user_namespace(spec) else run_as_user_1_23(meta, spec)


# --- check_seccompProfile_restricted.go -------------------------------------------------------


def seccomp_profile_restricted_1_19(meta: Meta, spec: Pod) -> CheckResult:
    """`seccompProfileRestricted_1_19`: RuntimeDefault or Localhost on the pod, or on every
    container that does not inherit it; a wrong type anywhere is named first."""
    bad_values: set[str] = set()
    profile = mapping(field_of(spec, "securityContext", "seccompProfile"))
    pod_bad = profile is not None and profile.get("type") not in SECCOMP_VALID_TYPES
    pod_set = profile is not None and not pod_bad
    if profile is not None and pod_bad:
        bad_values.add(text(profile.get("type")))
    explicit = []
    implicit = []
    for container in containers(spec):
        profile = mapping(field_of(container, "securityContext", "seccompProfile"))
        if profile is not None:
            if profile.get("type") not in SECCOMP_VALID_TYPES:
                explicit.append(container_name(container))
                bad_values.add(text(profile.get("type")))
        elif not pod_set:
            implicit.append(container_name(container))
    found = setters(pod_bad=pod_bad, containers=explicit)
    if found:
        return forbidden(
            "seccompProfile",
            f"{' and '.join(found)} must not set securityContext.seccompProfile.type to "
            f"{join_quote(go_sorted(bad_values))}",
        )
    if implicit:
        return forbidden(
            "seccompProfile",
            f"pod or {pluralize('container', 'containers', len(implicit))} "
            f"{join_quote(implicit)} must set securityContext.seccompProfile.type to "
            '"RuntimeDefault" or "Localhost"',
        )
    return ALLOWED


def seccomp_profile_restricted_1_25(meta: Meta, spec: Pod) -> CheckResult:
    """`seccompProfileRestricted_1_25`: Windows pods are exempt."""
    return ALLOWED if is_windows(spec) else seccomp_profile_restricted_1_19(meta, spec)


def _check(check_id: str, *versions: VersionedCheck) -> Check:
    return Check(check_id, Level.RESTRICTED, versions)


RESTRICTED_CHECKS: tuple[Check, ...] = (
    _check(
        "allowPrivilegeEscalation",
        VersionedCheck(v1(8), allow_privilege_escalation_1_8),
        VersionedCheck(v1(25), allow_privilege_escalation_1_25),
    ),
    _check(
        "capabilities_restricted",
        VersionedCheck(v1(22), capabilities_restricted_1_22, ("capabilities_baseline",)),
        VersionedCheck(v1(25), capabilities_restricted_1_25, ("capabilities_baseline",)),
    ),
    _check("procMount_restricted", VersionedCheck(v1(35), proc_mount_1_0, ("procMount",))),
    _check(
        "restrictedVolumes", VersionedCheck(v1(0), restricted_volumes_1_0, ("hostPathVolumes",))
    ),
    _check(
        "runAsNonRoot",
        VersionedCheck(v1(0), run_as_non_root_1_0),
        VersionedCheck(v1(35), run_as_non_root_1_35),
    ),
    _check(
        "runAsUser",
        VersionedCheck(v1(23), run_as_user_1_23),
        VersionedCheck(v1(35), run_as_user_1_35),
    ),
    _check(
        "seccompProfile_restricted",
        VersionedCheck(v1(19), seccomp_profile_restricted_1_19, ("seccompProfile_baseline",)),
        VersionedCheck(v1(25), seccomp_profile_restricted_1_25, ("seccompProfile_baseline",)),
    ),
)
"""Each `Check<Name>()` of the restricted level, with its `MinimumVersion`s and overrides."""
