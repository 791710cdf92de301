"""No privileged containers, host namespaces, hostPath volumes, host ports or added capabilities
beyond the Pod Security level of each namespace's purpose.

Pod Security Admission already enforces `baseline` or `restricted` through the namespace's
`pod-security.kubernetes.io/enforce` label (the tenancy layer sets it). That label is one
field of one object: whoever can relabel the namespace switches the check off. These policies
are a second lock, bound by the namespace's name (`admission` module docstring), that a
relabel does not undo; they hold the host-facing part of the Pod Security Standards, the part
that turns a pod into root on a GPU node:

- `securityContext.privileged` and Windows `hostProcess`, on any container or the pod;
- `hostNetwork`, `hostPID`, `hostIPC`;
- `hostPath` volumes (the device nodes and the driver's files are under /dev and /run);
- `hostPort` other than 0 on any container port;
- `capabilities.add` beyond the level's list: baseline's is the Pod Security Standards' fixed
  list (`BASELINE_CAPABILITIES`), restricted allows only `NET_BIND_SERVICE`.

One policy per level, bound to the namespaces whose level it is (`podSecurity` of the namespace,
or the purpose's default from `DEFAULT_POD_SECURITY`).
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.layers.security.policy_parts import (
    POD,
    all_containers,
    cel_list,
    every_pod_spec,
    pod_specs_variable,
    pod_template_kinds,
    policy_pair,
    resource_rules,
    spec_changed_condition,
    validating_policy,
)
from renderer.model.choices import PodSecurityLevel
from renderer.model.names import BASELINE_CAPABILITIES, DEFAULT_POD_SECURITY
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest

RESTRICTED_CAPABILITIES = ("NET_BIND_SERVICE",)
"""The restricted level drops ALL and may add back only this one."""

LEVEL_CAPABILITIES: dict[PodSecurityLevel, tuple[str, ...]] = {
    "baseline": BASELINE_CAPABILITIES,
    "restricted": RESTRICTED_CAPABILITIES,
}


def policy_name(level: str) -> str:
    return f"gpuplane-host-{level}"


def _flag(path: str, field: str) -> str:
    """CEL: the boolean `path.field` is set and true."""
    return f"(has({path}.{field}) && {path}.{field})"


def _security_flag(owner: str, field: str) -> str:
    return f"(has({owner}.securityContext) && {_flag(owner + '.securityContext', field)})"


def _host_process(owner: str) -> str:
    context = f"{owner}.securityContext"
    return (
        f"(has({context}) && has({context}.windowsOptions) && "
        f"{_flag(context + '.windowsOptions', 'hostProcess')})"
    )


def validations(level: PodSecurityLevel) -> list[dict[str, str]]:
    """The level's checks, each with a message saying what to remove."""
    allowed = cel_list(LEVEL_CAPABILITIES[level])
    caps = "c.securityContext.capabilities"
    checks = [
        (
            all_containers("s", f"!{_security_flag('c', 'privileged')} && !{_host_process('c')}")
            + f" && !{_host_process('s')}",
            "privileged containers and Windows host-process pods are not allowed in team "
            "namespaces: remove securityContext.privileged (and windowsOptions.hostProcess)",
        ),
        (
            "!"
            + _flag("s", "hostNetwork")
            + " && !"
            + _flag("s", "hostPID")
            + " && !"
            + _flag("s", "hostIPC"),
            "pods in team namespaces may not share the node's network, process or IPC "
            "namespace: remove hostNetwork, hostPID and hostIPC from the pod spec",
        ),
        (
            "!has(s.volumes) || s.volumes.all(v, !has(v.hostPath))",
            "hostPath volumes are not allowed in team namespaces: use a PersistentVolumeClaim, "
            "an emptyDir or a ConfigMap instead",
        ),
        (
            all_containers(
                "s", "!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)"
            ),
            "host ports are not allowed in team namespaces: remove hostPort from the container "
            "ports and reach the pod through a Service",
        ),
        (
            all_containers(
                "s",
                f"!(has(c.securityContext) && has({caps}) && has({caps}.add)) || "
                f"{caps}.add.all(cap, cap in {allowed})",
            ),
            f"namespaces at Pod Security level {level} allow adding only these capabilities: "
            f"{', '.join(LEVEL_CAPABILITIES[level])}: remove the others from "
            "securityContext.capabilities.add",
        ),
    ]
    return [
        {"expression": every_pod_spec(expression), "message": message, "reason": "Forbidden"}
        for expression, message in checks
    ]


def render(view: ClusterView) -> Iterator[Manifest]:
    kinds = pod_template_kinds(view)
    by_level: dict[PodSecurityLevel, list[str]] = {level: [] for level in LEVEL_CAPABILITIES}
    for tenant in view.tenants:
        for ns in tenant.namespaces:
            level = ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]
            by_level.setdefault(level, []).append(ns.name)
    for level, namespaces in by_level.items():
        if level not in LEVEL_CAPABILITIES:
            continue  # `privileged` is no level a team namespace can have (the schema)
        policy = validating_policy(
            policy_name(level),
            resource_rules(kinds, extra={POD.group: ("pods/ephemeralcontainers",)}),
            validations(level),
            variables=[pod_specs_variable(kinds)],
            match_conditions=[spec_changed_condition()],
        )
        yield from policy_pair(policy, namespaces, view.cluster.origin.location)
