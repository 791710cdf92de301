"""The baseline checks of k8s.io/pod-security-admission v0.36.2, one function per registered
version, worded as upstream words them (`policy/check_<id>.go`, function named in each
docstring). `BASELINE_CHECKS` registers them with their minimum versions, as each file's
`Check<Name>()` does. Baseline checks also run at the restricted level unless a restricted
check overrides them (`restricted.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from renderer.admission.apiserver.metadata import go_quote
from renderer.admission.apiserver.podsecurity.api import Level, v1
from renderer.admission.apiserver.podsecurity.checks import (
    ALLOWED,
    Check,
    CheckPod,
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
    join_quote,
    mapping,
    pluralize,
    relax_for_user_namespace,
    security_context,
    setters,
    string_map,
    strings,
    text,
)
from renderer.model.names import BASELINE_CAPABILITIES

# --- check_appArmorProfile.go -----------------------------------------------------------------

APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
"""k8s.io/api `core/v1/annotation_key_constants.go`
`DeprecatedAppArmorBetaContainerAnnotationKeyPrefix`."""


def apparmor_annotation_allowed(profile: str) -> bool:
    """`allowedAnnotationValue`: empty, `runtime/default` or `localhost/*`."""
    return profile == "" or profile == "runtime/default" or profile.startswith("localhost/")


def app_armor_profile_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`appArmorProfile_1_0`: AppArmor profile types other than RuntimeDefault and Localhost,
    on the pod or a container, and the beta annotations with other values."""
    bad_values: set[str] = set()
    pod_profile = mapping(field_of(spec, "securityContext", "appArmorProfile"))
    pod_bad = pod_profile is not None and not _profile_type_allowed(pod_profile)
    if pod_profile is not None and pod_bad:
        bad_values.add(text(pod_profile.get("type")))
    bad_containers = []
    for container in containers(spec):
        profile = mapping(field_of(container, "securityContext", "appArmorProfile"))
        if profile is not None and not _profile_type_allowed(profile):
            bad_containers.append(container_name(container))
            bad_values.add(text(profile.get("type")))
    found = setters(pod_bad=pod_bad, containers=bad_containers)
    annotations = [
        f"{key}={go_quote(value)}"
        for key, value in string_map(meta.get("annotations")).items()
        if key.startswith(APPARMOR_ANNOTATION_PREFIX) and not apparmor_annotation_allowed(value)
    ]
    values = go_sorted(bad_values)
    if annotations:
        values += sorted(annotations)
        found.append(pluralize("annotation", "annotations", len(annotations)))
    if not found:
        return ALLOWED
    return forbidden(
        pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
        f"{' and '.join(found)} must not set AppArmor profile type to {join_quote(values)}",
    )


def _profile_type_allowed(profile: Mapping[str, Any]) -> bool:
    """`allowedProfileType`: RuntimeDefault or Localhost."""
    return profile.get("type") in ("RuntimeDefault", "Localhost")


# --- check_capabilities_baseline.go -----------------------------------------------------------

CAPABILITIES_ALLOWED_1_0 = frozenset(BASELINE_CAPABILITIES)
"""`capabilities_allowed_1_0`."""


def capabilities_baseline_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`capabilitiesBaseline_1_0`: capabilities added beyond the default set."""
    bad_containers = []
    non_default: set[str] = set()
    for container in containers(spec):
        added = [c for c in _added(container) if c not in CAPABILITIES_ALLOWED_1_0]
        non_default.update(added)
        if added:
            bad_containers.append(container_name(container))
    if not bad_containers:
        return ALLOWED
    return forbidden(
        "non-default capabilities",
        f"{pluralize('container', 'containers', len(bad_containers))} "
        f"{join_quote(bad_containers)} must not include {join_quote(go_sorted(non_default))} "
        "in securityContext.capabilities.add",
    )


def _added(container: Mapping[str, Any]) -> list[str]:
    return strings(field_of(container, "securityContext", "capabilities", "add"))


# --- check_hostNamespaces.go, check_hostPathVolumes.go, check_hostPorts.go ---------------------


def host_namespaces_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`hostNamespaces_1_0`: hostNetwork, hostPID, hostIPC."""
    used = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    return forbidden("host namespaces", ", ".join(used)) if used else ALLOWED


def host_path_volumes_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`hostPathVolumes_1_0`."""
    names = [
        text(volume.get("name"))
        for volume in entries(spec.get("volumes"))
        if mapping(volume.get("hostPath")) is not None
    ]
    if not names:
        return ALLOWED
    return forbidden(
        "hostPath volumes", f"{pluralize('volume', 'volumes', len(names))} {join_quote(names)}"
    )


def host_ports_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`hostPorts_1_0`: any non-zero hostPort; the ports are a set of strings, so they sort as
    text (`10` before `9`)."""
    bad_containers = []
    ports: set[str] = set()
    for container in containers(spec):
        used = [
            str(port)
            for entry in entries(container.get("ports"))
            if (port := integer(entry.get("hostPort")))
        ]
        ports.update(used)
        if used:
            bad_containers.append(container_name(container))
    if not bad_containers:
        return ALLOWED
    return forbidden(
        "hostPort",
        f"{pluralize('container', 'containers', len(bad_containers))} "
        f"{join_quote(bad_containers)} {pluralize('uses', 'use', len(bad_containers))} "
        f"{pluralize('hostPort', 'hostPorts', len(ports))} {', '.join(go_sorted(ports))}",
    )


# --- check_hostProbesAndhostLifecycle.go ------------------------------------------------------

PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
LIFECYCLE_HANDLERS = ("postStart", "preStop")


def host_probes_and_host_lifecycle_1_34(meta: Meta, spec: Pod) -> CheckResult:
    """`hostProbesAndHostLifecycleV1Dot34`: a `host` on a probe's or lifecycle handler's
    httpGet or tcpSocket. Containers and hosts are sets: both lists come out sorted."""
    bad_containers: set[str] = set()
    hosts: set[str] = set()
    for container in containers(spec):
        handlers = [mapping(container.get(probe)) for probe in PROBES]
        lifecycle = mapping(container.get("lifecycle")) or {}
        handlers += [mapping(lifecycle.get(name)) for name in LIFECYCLE_HANDLERS]
        for handler in handlers:
            found = _handler_hosts(handler)
            if found:
                bad_containers.add(container_name(container))
                hosts.update(found)
    if not bad_containers:
        return ALLOWED
    return forbidden(
        "probe or lifecycle host",
        f"{pluralize('container', 'containers', len(bad_containers))} "
        f"{join_quote(go_sorted(bad_containers))} "
        f"{pluralize('uses', 'use', len(bad_containers))} "
        f"{pluralize('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
        f"{join_quote(go_sorted(hosts))}",
    )


def _handler_hosts(handler: Mapping[str, Any] | None) -> list[str]:
    """`getForbiddenHostProbes` / `getForbiddenHostLifecycle`: httpGet's host, then
    tcpSocket's, where set."""
    if handler is None:
        return []
    found = [text(field_of(handler, action, "host")) for action in ("httpGet", "tcpSocket")]
    return [host for host in found if host]


# --- check_privileged.go, check_procMount_baseline.go -----------------------------------------


def privileged_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`privileged_1_0`."""
    bad = [
        container_name(c)
        for c in containers(spec)
        if field_of(c, "securityContext", "privileged") is True
    ]
    if not bad:
        return ALLOWED
    return forbidden(
        "privileged",
        f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} "
        "must not set securityContext.privileged=true",
    )


def proc_mount_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`procMount_1_0`: a procMount other than `Default` (unconditionally)."""
    bad_containers = []
    types: set[str] = set()
    for container in containers(spec):
        proc_mount = field_of(container, "securityContext", "procMount")
        if isinstance(proc_mount, str) and proc_mount != "Default":
            bad_containers.append(container_name(container))
            types.add(proc_mount)
    if not bad_containers:
        return ALLOWED
    return forbidden(
        "procMount",
        f"{pluralize('container', 'containers', len(bad_containers))} "
        f"{join_quote(bad_containers)} must not set securityContext.procMount to "
        f"{join_quote(go_sorted(types))}",
    )


def proc_mount_1_35_baseline(meta: Meta, spec: Pod) -> CheckResult:
    """`procMount1_35baseline`: any procMount in a user namespace (`hostUsers: false`)."""
    return ALLOWED if relax_for_user_namespace(spec) else proc_mount_1_0(meta, spec)


# --- check_seLinuxOptions.go ------------------------------------------------------------------

SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_TYPES_1_31 = SELINUX_TYPES_1_0 | {"container_engine_t"}


def se_linux_options_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`seLinuxOptions1_0`."""
    return _se_linux_options(spec, SELINUX_TYPES_1_0)


def se_linux_options_1_31(meta: Meta, spec: Pod) -> CheckResult:
    """`seLinuxOptions1_31`: also `container_engine_t`."""
    return _se_linux_options(spec, SELINUX_TYPES_1_31)


def _se_linux_options(spec: Pod, allowed: frozenset[str]) -> CheckResult:
    """`seLinuxOptions`: a type outside `allowed`, or any user or role."""
    bad_types: set[str] = set()
    user_or_role: set[str] = set()

    def valid(options: Mapping[str, Any]) -> bool:
        kind = text(options.get("type"))
        if kind not in allowed:
            bad_types.add(kind)
        for field in ("user", "role"):
            if text(options.get(field)):
                user_or_role.add(field)
        return kind in allowed and not text(options.get("user")) and not text(options.get("role"))

    pod_options = mapping(field_of(spec, "securityContext", "seLinuxOptions"))
    pod_bad = pod_options is not None and not valid(pod_options)
    bad_containers = []
    for container in containers(spec):
        options = mapping(field_of(container, "securityContext", "seLinuxOptions"))
        if options is not None and not valid(options):
            bad_containers.append(container_name(container))
    found = setters(pod_bad=pod_bad, containers=bad_containers)
    if not found:
        return ALLOWED
    data = []
    if bad_types:
        types = go_sorted(bad_types)
        data.append(f"{pluralize('type', 'types', len(types))} {join_quote(types)}")
    data += [f"{field} may not be set" for field in ("user", "role") if field in user_or_role]
    return forbidden(
        "seLinuxOptions",
        f"{' and '.join(found)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}",
    )


# --- check_seccompProfile_baseline.go ---------------------------------------------------------

SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_VALID_TYPES = ("RuntimeDefault", "Localhost")
"""`validSeccomp`."""


def seccomp_annotation_valid(value: str) -> bool:
    """`validSeccompAnnotationValue`: runtime/default, docker/default, localhost/*."""
    return value in ("runtime/default", "docker/default") or value.startswith("localhost/")


def seccomp_profile_baseline_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`seccompProfileBaseline_1_0`: the alpha annotations (policy versions before 1.19)."""
    annotations = string_map(meta.get("annotations"))
    keys = [SECCOMP_POD_ANNOTATION] + [
        SECCOMP_CONTAINER_ANNOTATION_PREFIX + container_name(c) for c in containers(spec)
    ]
    bad = {
        f"{key}={go_quote(annotations[key])}"
        for key in keys
        if key in annotations and not seccomp_annotation_valid(annotations[key])
    }
    if not bad:
        return ALLOWED
    return forbidden(
        "seccompProfile",
        f"forbidden {pluralize('annotation', 'annotations', len(bad))} {', '.join(go_sorted(bad))}",
    )


def seccomp_profile_baseline_1_19(meta: Meta, spec: Pod) -> CheckResult:
    """`seccompProfileBaseline_1_19`: a seccompProfile type other than RuntimeDefault or
    Localhost, where one is set."""
    bad_values: set[str] = set()
    profile = mapping(field_of(spec, "securityContext", "seccompProfile"))
    pod_bad = profile is not None and profile.get("type") not in SECCOMP_VALID_TYPES
    if profile is not None and pod_bad:
        bad_values.add(text(profile.get("type")))
    bad_containers = []
    for container in containers(spec):
        profile = mapping(field_of(container, "securityContext", "seccompProfile"))
        if profile is not None and profile.get("type") not in SECCOMP_VALID_TYPES:
            bad_containers.append(container_name(container))
            bad_values.add(text(profile.get("type")))
    found = setters(pod_bad=pod_bad, containers=bad_containers)
    if not found:
        return ALLOWED
    return forbidden(
        "seccompProfile",
        f"{' and '.join(found)} must not set securityContext.seccompProfile.type to "
        f"{join_quote(go_sorted(bad_values))}",
    )


# --- check_sysctls.go, check_windowsHostProcess.go --------------------------------------------

SYSCTLS_1_0 = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    }
)
SYSCTLS_1_27 = SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_1_29 = SYSCTLS_1_27 | {
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
SYSCTLS_1_32 = SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls(allowed: frozenset[str]) -> CheckPod:
    def check(meta: Meta, spec: Pod) -> CheckResult:
        """`sysctls`: every sysctl outside the version's safe set, in the pod's order."""
        context = security_context(spec) or {}
        bad = [
            text(entry.get("name"))
            for entry in entries(context.get("sysctls"))
            if text(entry.get("name")) not in allowed
        ]
        return forbidden("forbidden sysctls", ", ".join(bad)) if bad else ALLOWED

    return check


sysctls_1_0 = _sysctls(SYSCTLS_1_0)
sysctls_1_27 = _sysctls(SYSCTLS_1_27)
sysctls_1_29 = _sysctls(SYSCTLS_1_29)
sysctls_1_32 = _sysctls(SYSCTLS_1_32)


def windows_host_process_1_0(meta: Meta, spec: Pod) -> CheckResult:
    """`windowsHostProcess_1_0`."""
    bad = [
        container_name(c)
        for c in containers(spec)
        if field_of(c, "securityContext", "windowsOptions", "hostProcess") is True
    ]
    pod_bad = field_of(spec, "securityContext", "windowsOptions", "hostProcess") is True
    found = setters(pod_bad=pod_bad, containers=bad)
    if not found:
        return ALLOWED
    return forbidden(
        "hostProcess",
        f"{' and '.join(found)} must not set securityContext.windowsOptions.hostProcess=true",
    )


def _check(check_id: str, *versions: VersionedCheck) -> Check:
    return Check(check_id, Level.BASELINE, versions)


BASELINE_CHECKS: tuple[Check, ...] = (
    _check("appArmorProfile", VersionedCheck(v1(0), app_armor_profile_1_0)),
    _check("capabilities_baseline", VersionedCheck(v1(0), capabilities_baseline_1_0)),
    _check("hostNamespaces", VersionedCheck(v1(0), host_namespaces_1_0)),
    _check("hostPathVolumes", VersionedCheck(v1(0), host_path_volumes_1_0)),
    _check("hostPorts", VersionedCheck(v1(0), host_ports_1_0)),
    _check(
        "hostProbesAndHostLifecycle",
        VersionedCheck(v1(34), host_probes_and_host_lifecycle_1_34),
    ),
    _check("privileged", VersionedCheck(v1(0), privileged_1_0)),
    _check(
        "procMount",
        VersionedCheck(v1(0), proc_mount_1_0),
        VersionedCheck(v1(35), proc_mount_1_35_baseline),
    ),
    _check(
        "seLinuxOptions",
        VersionedCheck(v1(0), se_linux_options_1_0),
        VersionedCheck(v1(31), se_linux_options_1_31),
    ),
    _check(
        "seccompProfile_baseline",
        VersionedCheck(v1(0), seccomp_profile_baseline_1_0),
        VersionedCheck(v1(19), seccomp_profile_baseline_1_19),
    ),
    _check(
        "sysctls",
        VersionedCheck(v1(0), sysctls_1_0),
        VersionedCheck(v1(27), sysctls_1_27),
        VersionedCheck(v1(29), sysctls_1_29),
        VersionedCheck(v1(32), sysctls_1_32),
    ),
    _check("windowsHostProcess", VersionedCheck(v1(0), windows_host_process_1_0)),
)
"""Each `Check<Name>()` of the baseline level, with its `MinimumVersion`s."""
