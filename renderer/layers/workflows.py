"""Workflows: the acceptance and benchmark suites of one cluster, compiled from their Hera
definitions (`workflows/suites/`) into `rendered/<cluster>/workflows/`.

- the namespace `gpuplane-acceptance`, where the Workflows run, with the ServiceAccount they run
  as and what Argo's executor needs there (its task results, the results ConfigMaps);
- the namespace `gpuplane-acceptance-jobs`, where the Workflows' probe Jobs run: a Role letting
  that ServiceAccount create and watch the Jobs, read their logs, delete their pods and the run's
  workspace claim; on Kueue clusters a LocalQueue per cohort pointing at the platform's
  ClusterQueue of that cohort (the queueing layer renders it: nominal quota 0, it borrows what
  the teams leave idle); the headless Service that gives rank 0 of a multi-node Job its DNS
  name; the ResourceClaimTemplates of DRA pools. No team group is bound in either namespace, so
  no team can touch a probe, its log or its results;
- per pool a team has quota on: WorkflowTemplates `acceptance-<pool>` and `benchmark-<pool>`;
- a PostSync hook Workflow and a CronWorkflow, running every pool's acceptance by `templateRef`;
- when the cluster installs Argo Workflows itself (`addons.argoWorkflows`), the chart's values.

Every Argo object is checked with `workflows.suites.references.check_references` before it is
yielded: a dangling template, task or parameter reference is a gpuplane bug, so rendering stops
with it.
See docs/acceptance-suites.md.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from renderer.findings.diagnostics import Location
from renderer.layers.gitops import argo_workflows
from renderer.layers.gpu import dra
from renderer.model.content import content_digest
from renderer.model.names import COST_CENTER_LABEL, SUITE_COST_CENTER
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata
from workflows.suites import placement, references
from workflows.suites.program import headless_service, needs_service
from workflows.suites.settings import JOBS_NAMESPACE, NAMESPACE, POOL_LABEL, SERVICE_ACCOUNT

LAYER = "workflows"
KUEUE_API = "kueue.x-k8s.io/v1beta2"

ARGO_EXECUTOR_RULES: tuple[Mapping[str, Any], ...] = (
    {
        "apiGroups": ["argoproj.io"],
        "resources": ["workflowtaskresults"],
        "verbs": ["create", "patch"],
    },
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "create", "patch"]},
)
"""In the suite namespace: what Argo's executor writes (each step's outputs) and the results
ConfigMaps that step 6 applies."""

JOB_RULES: tuple[Mapping[str, Any], ...] = (
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["create", "get", "list", "watch", "delete"],
    },
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims"],
        "verbs": ["create", "get", "list", "delete"],
    },
)
"""In the Jobs' namespace: submit the suite's Jobs and the run's workspace claim, wait for them,
read their logs, delete a pod (step 5) and clean up. The ServiceAccount has no right in any team
namespace."""

WINDOW_RULES: tuple[Mapping[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
)
"""Cluster-wide, only where the cluster declares an acceptance window: taint and untaint the
pool's nodes (read, then patch), find the pods on them (list, by `spec.nodeName`), and evict
them through the Eviction API, which honours PodDisruptionBudgets. No delete, no update, no
wildcard (docs/acceptance-window.md)."""
WINDOW_ROLE = "gpuplane-acceptance-window"


class DanglingReference(RuntimeError):
    """A compiled suite refers to a template, task or parameter that does not exist."""


def render(view: ClusterView) -> Iterator[Output]:
    """The suites of one cluster; nothing when no pool has a team queue to run them through."""
    yield from argo_workflows.values(view.cluster, LAYER, NAMESPACE)
    targets = placement.targets(view)
    if not targets:
        return
    cluster = view.cluster
    at = cluster.origin.location
    yield from _suite_namespace(view)
    yield from _jobs_namespace(view, targets)
    yield from _window_access(view, targets)
    templates: dict[str, dict[str, Any]] = {}
    outputs: list[Manifest] = []
    for target in targets:
        kinds = ["acceptance", "benchmark"] + (["window"] if target.window else [])
        for what in kinds:
            body = compiled(what, target)
            templates[body["metadata"]["name"]] = body
            outputs.append(Manifest(LAYER, body, target.pool.origin.location))
    outputs.append(Manifest(LAYER, compiled("postsync", cluster, targets), at))
    runs = placement.namespace_runs(view, targets)
    outputs.append(Manifest(LAYER, compiled("cron", cluster, targets, runs), at))
    problems = [
        message
        for manifest in outputs
        for message in references.check_references(manifest.body, templates)
    ]
    if problems:
        raise DanglingReference(
            f"the suites of cluster {cluster.name} have dangling references:\n"
            + "\n".join(f"  {p}" for p in problems)
        )
    yield from outputs


COMPILED: dict[bytes, bytes] = {}
"""Each suite object Hera compiled, as pickled data, by the digest of what it was built from
(`content_digest` of its kind and inputs). `gpuplane render` fills it from the render index and
keeps what this render used; Hera is imported, and builds, only for what is not in it."""

COMPILED_AT_MOST = 4096

USED: dict[bytes, bytes] = {}
"""The entries of `COMPILED` this process built or read, for the index."""


def compiled(what: str, *inputs: Any) -> dict[str, Any]:
    """The suite object `what` built from `inputs` by Hera, as data (`references.to_data`): from
    `COMPILED` when the same inputs built it before, a fresh copy either way."""
    key = content_digest(what, *inputs)
    found = COMPILED.get(key) if key is not None else None
    if found is None:
        found = pickle.dumps(references.to_data(_build(what, *inputs)), pickle.HIGHEST_PROTOCOL)
        if key is not None:
            if len(COMPILED) >= COMPILED_AT_MOST:  # a long-lived process (the tests) starts over
                COMPILED.clear()
            COMPILED[key] = found
    if key is not None:
        USED[key] = found
    body: dict[str, Any] = pickle.loads(found)
    return body


def import_hera() -> None:
    """Import what `_build` imports, ahead (for worker processes to fork with it)."""
    from workflows.suites import every_pool, workflow_templates  # noqa: F401


def _build(what: str, *inputs: Any) -> Any:
    """The Hera object; Hera (a second to import) only now."""
    from workflows.suites.every_pool import cron_workflow, postsync_hook
    from workflows.suites.workflow_templates import (
        acceptance_template,
        benchmark_template,
        window_template,
    )

    builders: dict[str, Callable[..., Any]] = {
        "acceptance": acceptance_template,
        "benchmark": benchmark_template,
        "window": window_template,
        "postsync": postsync_hook,
        "cron": cron_workflow,
    }
    return builders[what](*inputs)


def _suite_namespace(view: ClusterView) -> Iterator[Manifest]:
    cluster = view.cluster
    at = cluster.origin.location
    version = f"v{cluster.kubernetes_version}"
    meta = metadata(NAMESPACE, cluster=cluster.name, suite="acceptance")
    # baseline: Argo's executor containers are not all `restricted`; audited and warned
    meta["labels"].update(
        {
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": version,
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/audit-version": version,
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": version,
        }
    )
    yield Manifest(LAYER, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, at)
    yield Manifest(
        LAYER,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(SERVICE_ACCOUNT, NAMESPACE, cluster=cluster.name),
        },
        at,
    )
    yield from _role_and_binding(NAMESPACE, ARGO_EXECUTOR_RULES, cluster.name, at)


def _role_and_binding(
    namespace: str,
    rules: tuple[Mapping[str, Any], ...],
    cluster: str,
    at: Location,
    **labels: str,
) -> Iterator[Manifest]:
    name = SERVICE_ACCOUNT
    yield Manifest(
        LAYER,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": metadata(name, namespace, cluster=cluster, **labels),
            "rules": copy.deepcopy([dict(r) for r in rules]),
        },
        at,
    )
    yield Manifest(
        LAYER,
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": metadata(name, namespace, cluster=cluster, **labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": SERVICE_ACCOUNT,
                    "namespace": NAMESPACE,
                }
            ],
        },
        at,
    )


def _window_access(view: ClusterView, targets: tuple[placement.Target, ...]) -> Iterator[Manifest]:
    """The ClusterRole `gpuplane-acceptance-window` (WINDOW_RULES) bound to the suite's
    ServiceAccount alone, where the suite reserves pools in a window."""
    if not any(t.window is not None for t in targets):
        return
    cluster = view.cluster
    at = cluster.origin.location
    api = "rbac.authorization.k8s.io/v1"
    yield Manifest(
        LAYER,
        {
            "apiVersion": api,
            "kind": "ClusterRole",
            "metadata": metadata(WINDOW_ROLE, cluster=cluster.name),
            "rules": copy.deepcopy([dict(r) for r in WINDOW_RULES]),
        },
        at,
    )
    yield Manifest(
        LAYER,
        {
            "apiVersion": api,
            "kind": "ClusterRoleBinding",
            "metadata": metadata(WINDOW_ROLE, cluster=cluster.name),
            "roleRef": {"apiGroup": api.split("/")[0], "kind": "ClusterRole", "name": WINDOW_ROLE},
            "subjects": [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
            ],
        },
        at,
    )


def _jobs_namespace(view: ClusterView, targets: tuple[placement.Target, ...]) -> Iterator[Manifest]:
    """The probe Jobs' namespace, the suite's rights there, the LocalQueues, headless Services
    and DRA claim templates its Jobs name."""
    cluster = view.cluster
    at = cluster.origin.location
    version = f"v{cluster.kubernetes_version}"
    meta = metadata(JOBS_NAMESPACE, cluster=cluster.name, suite="acceptance")
    meta["labels"].update(
        {
            # Kueue's managedJobsNamespaceSelector: its reconciler ignores Jobs elsewhere
            COST_CENTER_LABEL: SUITE_COST_CENTER,
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/enforce-version": version,
        }
    )
    yield Manifest(LAYER, {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}, at)
    yield from _role_and_binding(JOBS_NAMESPACE, JOB_RULES, cluster.name, at)
    if cluster.scheduler == "kueue":
        queues: dict[str, placement.Target] = {}
        for target in targets:
            queues.setdefault(target.local_queue, target)
        for name, target in sorted(queues.items()):
            yield Manifest(
                LAYER,
                {
                    "apiVersion": KUEUE_API,
                    "kind": "LocalQueue",
                    "metadata": metadata(name, JOBS_NAMESPACE, queue=target.queue.name),
                    "spec": {"clusterQueue": target.cluster_queue},
                },
                target.queue.origin.location,
            )
    for target in targets:
        if target.window is not None:
            name = placement.reserved(target).local_queue
            yield Manifest(
                LAYER,
                {
                    "apiVersion": KUEUE_API,
                    "kind": "LocalQueue",
                    "metadata": metadata(name, JOBS_NAMESPACE, pool=target.name),
                    "spec": {"clusterQueue": placement.reserved(target).cluster_queue},
                },
                target.pool.origin.location,
            )
    for target in targets:
        if needs_service(target):
            yield Manifest(
                LAYER,
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": metadata(
                        headless_service(target), JOBS_NAMESPACE, pool=target.name
                    ),
                    "spec": {
                        "clusterIP": "None",
                        "publishNotReadyAddresses": True,
                        "selector": {POOL_LABEL: target.name},
                    },
                },
                target.pool.origin.location,
            )
    dra_pools = {p.name for p in dra.dra_pools(view)}
    for target in targets:
        pool = target.pool
        if not target.dra or pool.name not in dra_pools:
            continue
        common = {"pool": pool.name, "cost_center": SUITE_COST_CENTER}
        counts = [(pool.name, 1)]
        if pool.sharing != "mig" and pool.gpus_per_node > 1:
            counts.append((f"{pool.name}{dra.NODE_SUFFIX}", pool.gpus_per_node))
        for name, count in counts:
            # the gpu layer's template, in this layer: synced with the namespace it lives in
            made = dra.claim_template(pool, name, JOBS_NAMESPACE, count, common)
            yield dataclasses.replace(made, layer=LAYER)
