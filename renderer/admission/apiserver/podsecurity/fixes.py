"""What to change so a Pod Security check passes: gpuplane's own, one fixer per check ID of
`registry.DEFAULT_CHECKS`. A fixer says what to change, naming the field and the containers,
and, where the change is mechanical (a field set or removed), makes it on the pod it is given,
so admission can go on as if the user had made it. Replacing a volume is not mechanical: the
fixer says what to do and leaves the pod as it is.

Each fixer reads the pod as the check does (`checks.py`) and changes only what that check
forbids; `tests/test_pod_security.py` checks that a mended pod passes the check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

from renderer.admission.apiserver.podsecurity.api import Version, v1
from renderer.admission.apiserver.podsecurity.baseline import (
    APPARMOR_ANNOTATION_PREFIX,
    CAPABILITIES_ALLOWED_1_0,
    LIFECYCLE_HANDLERS,
    PROBES,
    SECCOMP_CONTAINER_ANNOTATION_PREFIX,
    SECCOMP_POD_ANNOTATION,
    SECCOMP_VALID_TYPES,
    SELINUX_TYPES_1_0,
    SELINUX_TYPES_1_31,
    SYSCTLS_1_0,
    SYSCTLS_1_27,
    SYSCTLS_1_29,
    SYSCTLS_1_32,
    apparmor_annotation_allowed,
    seccomp_annotation_valid,
)
from renderer.admission.apiserver.podsecurity.checks import (
    CONTAINER_LISTS,
    field_of,
    integer,
    join_quote,
    mapping,
    pluralize,
    strings,
    text,
)
from renderer.admission.apiserver.podsecurity.restricted import (
    ALLOWED_VOLUME_SOURCES,
    RESTRICTED_VOLUME_SOURCES,
)

Dict = MutableMapping[str, Any]


@dataclass(frozen=True)
class Mend:
    """What a fixer says to change, and whether it changed the pod accordingly."""

    says: tuple[str, ...]
    mechanical: bool


@dataclass
class _Pod:
    """The pod being mended: its metadata and spec (mutable copies), and the policy version
    whose check failed (the sysctls and SELinux types allowed depend on it)."""

    meta: Dict
    spec: Dict
    version: Version


_ROLE = {"initContainers": "init container", "containers": "container"}
_ROLE["ephemeralContainers"] = "ephemeral container"


def _containers(pod: _Pod) -> Iterator[tuple[str, Dict]]:
    """(who, container) for every container that is a mapping, in `visitContainers`' order."""
    for key in CONTAINER_LISTS:
        items = pod.spec.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, MutableMapping):
                yield f'{_ROLE[key]} "{text(item.get("name"))}"', item


def _child(holder: Dict, key: str) -> Dict:
    """`holder[key]` as a mapping, created (or replaced, if not a mapping) when needed."""
    value = holder.get(key)
    if not isinstance(value, MutableMapping):
        value = holder[key] = {}
    return value


def _on(targets: list[str]) -> str:
    """`container "a", container "b", the pod` as `containers "a", "b", the pod`: the names of
    each kind of container together, in the order met."""
    groups: dict[str, list[str]] = {}
    for target in targets:
        role, quote, name = target.partition(' "')
        groups.setdefault(role if quote else target, []).append(name[:-1] if quote else "")
    parts = []
    for role, names in groups.items():
        if names == [""]:
            parts.append(role)
        else:
            parts.append(f"{pluralize(role, role + 's', len(names))} {join_quote(names)}")
    return ", ".join(parts)


def _set_everywhere(pod: _Pod, bad: Callable[[Any], bool], field: str, value: Any) -> list[str]:
    """Sets `securityContext.<field>` to `value` on every container whose value is `bad`."""
    changed = []
    for who, container in _containers(pod):
        if bad(field_of(container, "securityContext", field)):
            _child(container, "securityContext")[field] = value
            changed.append(who)
    return changed


def _remove_everywhere(pod: _Pod, bad: Callable[[Any], bool], *path: str) -> list[str]:
    """Removes `securityContext.<path>` from the pod and every container where it is `bad`;
    "the pod" stands for the pod's own securityContext."""
    changed = []
    holders = [("the pod", pod.spec), *_containers(pod)]
    for who, holder in holders:
        parent: Any = field_of(holder, "securityContext", *path[:-1])
        if isinstance(parent, MutableMapping) and bad(parent.get(path[-1])):
            del parent[path[-1]]
            changed.append(who)
    return changed


# --- the restricted checks --------------------------------------------------------------------


def _allow_privilege_escalation(pod: _Pod) -> Mend:
    changed = _set_everywhere(pod, lambda v: v is not False, "allowPrivilegeEscalation", False)
    return Mend((f"set securityContext.allowPrivilegeEscalation: false on {_on(changed)}",), True)


def _capabilities_restricted(pod: _Pod) -> Mend:
    says = []
    dropped, removed = [], []
    for who, container in _containers(pod):
        capabilities = _child(_child(container, "securityContext"), "capabilities")
        drop = strings(capabilities.get("drop"))
        if "ALL" not in drop:
            capabilities["drop"] = [*drop, "ALL"]
            dropped.append(who)
        add = strings(capabilities.get("add"))
        extra = [c for c in add if c != "NET_BIND_SERVICE"]
        if extra:
            capabilities["add"] = [c for c in add if c == "NET_BIND_SERVICE"]
            removed.append(f"{join_quote(extra)} from {who}")
    if dropped:
        says.append(f'set securityContext.capabilities.drop: ["ALL"] on {_on(dropped)}')
    if removed:
        says.append(
            f"remove {'; '.join(removed)} in securityContext.capabilities.add "
            "(restricted allows adding only NET_BIND_SERVICE)"
        )
    return Mend(tuple(says), True)


def _run_as_non_root(pod: _Pod) -> Mend:
    context = _child(pod.spec, "securityContext")
    pod_was_true = context.get("runAsNonRoot") is True
    context["runAsNonRoot"] = True
    explicit = _set_everywhere(pod, lambda v: v is False, "runAsNonRoot", True)
    where = [] if pod_was_true else ["the pod (spec.securityContext)"]
    return Mend(
        (
            f"set securityContext.runAsNonRoot: true on {_on(where + explicit)}; the image must "
            "then run as a non-root user (set securityContext.runAsUser to a non-zero UID if "
            "its USER is root or unset)",
        ),
        True,
    )


def _run_as_user(pod: _Pod) -> Mend:
    changed = _remove_everywhere(pod, lambda v: integer(v) == 0, "runAsUser")
    return Mend(
        (
            f"remove runAsUser: 0 (or set a non-zero UID) from the securityContext of {_on(changed)}",
        ),
        True,
    )


def _seccomp_restricted(pod: _Pod) -> Mend:
    changed = _seccomp_types(pod)
    context = _child(pod.spec, "securityContext")
    if mapping(context.get("seccompProfile")) is None:
        context["seccompProfile"] = {"type": "RuntimeDefault"}
        changed.insert(0, "the pod (spec.securityContext)")
    return Mend(
        (f"set securityContext.seccompProfile.type: RuntimeDefault on {_on(changed)}",), True
    )


def _seccomp_types(pod: _Pod) -> list[str]:
    """Sets RuntimeDefault where a seccompProfile has another type than the two allowed."""
    changed = []
    for who, holder in [("the pod (spec.securityContext)", pod.spec), *_containers(pod)]:
        profile = field_of(holder, "securityContext", "seccompProfile")
        if isinstance(profile, MutableMapping) and profile.get("type") not in SECCOMP_VALID_TYPES:
            profile.clear()
            profile["type"] = "RuntimeDefault"
            changed.append(who)
    return changed


def _restricted_volumes(pod: _Pod) -> Mend:
    bad = []
    for volume in pod.spec.get("volumes") or []:
        if not isinstance(volume, MutableMapping):
            continue
        if any(mapping(volume.get(key)) is not None for key in ALLOWED_VOLUME_SOURCES):
            continue
        kind = next((k for k in RESTRICTED_VOLUME_SOURCES if volume.get(k) is not None), "")
        bad.append(f'"{text(volume.get("name"))}"' + (f" ({kind})" if kind else ""))
    return Mend(
        (
            f"replace {pluralize('volume', 'volumes', len(bad))} {', '.join(bad)} with one of the "
            "sources restricted allows: "
            f"{', '.join(ALLOWED_VOLUME_SOURCES)} (a share or disk through a PersistentVolume "
            "and a persistentVolumeClaim)",
        ),
        False,
    )


# --- the baseline checks ----------------------------------------------------------------------


def _app_armor(pod: _Pod) -> Mend:
    says = []
    changed = []
    for who, holder in [("the pod (spec.securityContext)", pod.spec), *_containers(pod)]:
        profile = field_of(holder, "securityContext", "appArmorProfile")
        if isinstance(profile, MutableMapping) and profile.get("type") not in (
            "RuntimeDefault",
            "Localhost",
        ):
            profile.clear()
            profile["type"] = "RuntimeDefault"
            changed.append(who)
    if changed:
        says.append(f"set securityContext.appArmorProfile.type: RuntimeDefault on {_on(changed)}")
    says += _drop_annotations(
        pod,
        lambda k, v: (
            k.startswith(APPARMOR_ANNOTATION_PREFIX) and not apparmor_annotation_allowed(v)
        ),
    )
    return Mend(tuple(says), True)


def _drop_annotations(pod: _Pod, bad: Callable[[str, str], bool]) -> list[str]:
    annotations = pod.meta.get("annotations")
    if not isinstance(annotations, MutableMapping):
        return []
    keys = sorted(k for k, v in annotations.items() if isinstance(v, str) and bad(str(k), v))
    for key in keys:
        del annotations[key]
    if not keys:
        return []
    return [
        f"remove the pod {pluralize('annotation', 'annotations', len(keys))} {join_quote(keys)}"
    ]


def _capabilities_baseline(pod: _Pod) -> Mend:
    removed = []
    for who, container in _containers(pod):
        capabilities = field_of(container, "securityContext", "capabilities")
        if not isinstance(capabilities, MutableMapping):
            continue
        add = strings(capabilities.get("add"))
        extra = [c for c in add if c not in CAPABILITIES_ALLOWED_1_0]
        if extra:
            capabilities["add"] = [c for c in add if c in CAPABILITIES_ALLOWED_1_0]
            removed.append(f"{join_quote(extra)} from {who}")
    return Mend(
        (
            f"remove {'; '.join(removed)} in securityContext.capabilities.add (baseline allows "
            "only the container runtime's default capabilities)",
        ),
        True,
    )


def _host_namespaces(pod: _Pod) -> Mend:
    used = [key for key in ("hostNetwork", "hostPID", "hostIPC") if pod.spec.get(key) is True]
    for key in used:
        del pod.spec[key]
    return Mend((f"remove {', '.join(k + ': true' for k in used)} from the pod spec",), True)


def _host_path_volumes(pod: _Pod) -> Mend:
    names = [
        text(v.get("name"))
        for v in pod.spec.get("volumes") or []
        if isinstance(v, MutableMapping) and mapping(v.get("hostPath")) is not None
    ]
    return Mend(
        (
            f"replace the hostPath {pluralize('volume', 'volumes', len(names))} "
            f"{join_quote(names)} with a persistentVolumeClaim, "
            "configMap, secret, emptyDir or csi volume",
        ),
        False,
    )


def _host_ports(pod: _Pod) -> Mend:
    changed = []
    for who, container in _containers(pod):
        ports = container.get("ports")
        bad = [
            p
            for p in (ports if isinstance(ports, list) else [])
            if isinstance(p, MutableMapping) and integer(p.get("hostPort"))
        ]
        for port in bad:
            del port["hostPort"]
        if bad:
            changed.append(who)
    return Mend((f"remove hostPort from the ports of {_on(changed)}",), True)


def _host_probes(pod: _Pod) -> Mend:
    changed = []
    for who, container in _containers(pod):
        lifecycle = container.get("lifecycle")
        handlers = [container.get(p) for p in PROBES]
        if isinstance(lifecycle, MutableMapping):
            handlers += [lifecycle.get(h) for h in LIFECYCLE_HANDLERS]
        found = False
        for handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                target = field_of(handler, action) if isinstance(handler, MutableMapping) else None
                if isinstance(target, MutableMapping) and text(target.get("host")):
                    del target["host"]
                    found = True
        if found:
            changed.append(who)
    return Mend(
        (
            f"remove host from the probes and lifecycle handlers of {_on(changed)} (they then "
            "reach the pod's own IP)",
        ),
        True,
    )


def _privileged(pod: _Pod) -> Mend:
    changed = _remove_everywhere(pod, lambda v: v is True, "privileged")
    return Mend((f"remove securityContext.privileged: true from {_on(changed)}",), True)


def _proc_mount(pod: _Pod) -> Mend:
    changed = _remove_everywhere(pod, lambda v: isinstance(v, str) and v != "Default", "procMount")
    return Mend(
        (f"remove securityContext.procMount (the Default /proc mask) from {_on(changed)}",), True
    )


def _se_linux(pod: _Pod) -> Mend:
    allowed = SELINUX_TYPES_1_0 if pod.version.older(v1(31)) else SELINUX_TYPES_1_31
    changed = []
    for who, holder in [("the pod (spec.securityContext)", pod.spec), *_containers(pod)]:
        options = field_of(holder, "securityContext", "seLinuxOptions")
        if not isinstance(options, MutableMapping):
            continue
        bad = [k for k in ("user", "role") if text(options.get(k))]
        if text(options.get("type")) not in allowed:
            bad.append("type")
        for key in bad:
            del options[key]
        if bad:
            changed.append(f"{'/'.join(bad)} of {who}")
    return Mend((f"remove securityContext.seLinuxOptions {'; '.join(changed)}",), True)


def _seccomp_baseline(pod: _Pod) -> Mend:
    says = []
    changed = _seccomp_types(pod)
    if changed:
        says.append(f"set securityContext.seccompProfile.type: RuntimeDefault on {_on(changed)}")
    if pod.version.older(v1(19)):
        says += _drop_annotations(
            pod,
            lambda k, v: (
                (k == SECCOMP_POD_ANNOTATION or k.startswith(SECCOMP_CONTAINER_ANNOTATION_PREFIX))
                and not seccomp_annotation_valid(v)
            ),
        )
    return Mend(tuple(says), True)


def _sysctls(pod: _Pod) -> Mend:
    allowed = SYSCTLS_1_0
    for since, names in ((27, SYSCTLS_1_27), (29, SYSCTLS_1_29), (32, SYSCTLS_1_32)):
        if not pod.version.older(v1(since)):
            allowed = names
    context = _child(pod.spec, "securityContext")
    entries = context.get("sysctls")
    entries = entries if isinstance(entries, list) else []
    keep = [e for e in entries if isinstance(e, MutableMapping) and text(e.get("name")) in allowed]
    removed = [
        text(e.get("name")) for e in entries if isinstance(e, MutableMapping) and e not in keep
    ]
    context["sysctls"] = keep
    return Mend(
        (
            f"remove {pluralize('sysctl', 'sysctls', len(removed))} {', '.join(removed)} from "
            "spec.securityContext.sysctls (baseline allows only "
            f"{', '.join(sorted(allowed))})",
        ),
        True,
    )


def _windows_host_process(pod: _Pod) -> Mend:
    changed = _remove_everywhere(pod, lambda v: v is True, "windowsOptions", "hostProcess")
    return Mend(
        (f"remove securityContext.windowsOptions.hostProcess: true from {_on(changed)}",), True
    )


FIXERS: dict[str, Callable[[_Pod], Mend]] = {
    "allowPrivilegeEscalation": _allow_privilege_escalation,
    "appArmorProfile": _app_armor,
    "capabilities_baseline": _capabilities_baseline,
    "capabilities_restricted": _capabilities_restricted,
    "hostNamespaces": _host_namespaces,
    "hostPathVolumes": _host_path_volumes,
    "hostPorts": _host_ports,
    "hostProbesAndHostLifecycle": _host_probes,
    "privileged": _privileged,
    "procMount": _proc_mount,
    "procMount_restricted": _proc_mount,
    "restrictedVolumes": _restricted_volumes,
    "runAsNonRoot": _run_as_non_root,
    "runAsUser": _run_as_user,
    "seLinuxOptions": _se_linux,
    "seccompProfile_baseline": _seccomp_baseline,
    "seccompProfile_restricted": _seccomp_restricted,
    "sysctls": _sysctls,
    "windowsHostProcess": _windows_host_process,
}


def mend(check: str, meta: Dict, spec: Dict, version: Version) -> Mend:
    """What to change for `check` to pass on the pod (`meta`, `spec`), at policy `version`;
    `meta` and `spec` are changed in place where the change is mechanical."""
    fixer = FIXERS.get(check)
    if fixer is None:
        return Mend((f"change the pod so Pod Security's check {check} passes",), False)
    return fixer(_Pod(meta, spec, version))
