"""The generated `rendered/<cluster>/README.md`: for each team, which pools it can use, what a pod
gets there (whole GPU, MIG slice or time-shared GPU), the resource name to request, and its quota;
for the platform team, every add-on the cluster declares, its version, how it is installed and
why it is there (`renderer.layers.addon_notes`).

The guide's step 3 asks that teams be told this; a Markdown page next to the manifests is where a
team lead looks. Text for people, so it is a Jinja2 template (data in, Markdown out).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jinja2

from renderer.layers.addon_notes import UNPINNED, AddonNote, addon_notes
from renderer.layers.platform_drawing import queue_drawings
from renderer.model import catalog
from renderer.model.capacity import SHARING_MODES, how_to_request, pool_offers
from renderer.model.choices import TIME_SHARED, Sharing
from renderer.model.integrations import KUEUE_INTEGRATIONS, enabled_frameworks
from renderer.model.names import (
    DEFAULT_FINISHED_JOBS,
    DEFAULT_POD_SECURITY,
    PRIORITY_LABEL,
    QUEUE_LABEL,
)
from renderer.model.platform import Namespace, Pool
from renderer.model.queue_plans import (
    CPU,
    MEMORY,
    ClusterQueuePlan,
    Cohort,
    cluster_queues,
    cohorts,
    limits_of,
    potential_available,
)
from renderer.model.security import admission_policies_served, priority_enforcement
from renderer.model.topology import spans_nodes, topology_aware
from renderer.model.view import ClusterView, Tenant
from renderer.model.words import plural
from renderer.output import markdown_escape
from renderer.output.drawing import mermaid_columns
from renderer.output.jinja_env import environment
from renderer.output.manifest import Values, labels


def _template() -> jinja2.Template:
    env = environment()
    env.filters["cell"] = markdown_escape.cell
    env.filters["code"] = markdown_escape.code
    env.filters["cell_code"] = _cell_code
    return env.get_template("cluster-readme.md.j2")


def _cell_code(value: object) -> str:
    return markdown_escape.code(value, table=True)


def _gets(sharing: Sharing, replicas: int) -> str:
    mode = SHARING_MODES[sharing]
    return f"{mode} ({replicas} per GPU)" if sharing in TIME_SHARED else mode


def cluster_readme(view: ClusterView, templates: Iterable[Values] | None = None) -> str:
    """The cluster's README. `templates`: the workload templates the cluster's templates layer
    rendered, when the caller has them (else rendered again here, for their file names)."""
    text = _template().render(
        cluster=view.cluster,
        pools=[_pool_row(pool) for pool in view.pools],
        fabrics=_fabric_rows(view),
        topology=topology_notes(view),
        teams=_team_rows(view, templates),
        guardrails=guardrail_notes(view),
        integrations=integration_notes(view),
        diagrams=[mermaid_columns(d) for d in queue_drawings(view)],
        cluster_file=view.cluster.origin.file,
        addons=[_addon_row(note) for note in addon_notes(view)],
    )
    return text.rstrip("\n") + "\n"


def _addon_row(note: AddonNote) -> dict[str, str]:
    """What the README's add-on table says of one add-on; `version` and `installed` are
    Markdown already (names as code spans), the rest plain text for the `cell` filter."""
    return {
        "title": note.title,
        "addon": note.addon,
        "version": _cell_code(note.version) if note.version else UNPINNED,
        "installed": note.installed_as(_cell_code),
        "purpose": note.purpose,
        "why": note.why(),
    }


def _pool_row(pool: Pool) -> dict[str, Any]:
    """What the README's pool table says of one pool."""
    accelerator = catalog.accelerator(pool.accelerator)
    offers = pool_offers(pool)
    nodes = (
        f"{pool.nodes.min}"
        if pool.nodes.min == pool.nodes.max
        else f"{pool.nodes.min}-{pool.nodes.max}"
    )
    return {
        "name": pool.name,
        "product": accelerator.product if accelerator else pool.accelerator,
        "memory_gb": accelerator.memory_gb if accelerator else "?",
        "nodes": f"{nodes} x {plural(pool.gpus_per_node, 'GPU')}",
        "workload": pool.workload,
        "sharing": _gets(pool.sharing, pool.replicas),
        "resources": [how_to_request(o) for o in offers],
        "capacity": ", ".join(plural(o.guaranteed, o.unit) for o in offers),
    }


def _fabric_rows(view: ClusterView) -> list[dict[str, Any]]:
    """The pools with an RDMA fabric, and the resource a pod asks for to use it."""
    return [
        {
            "pool": pool.name,
            "fabric": pool.fabric,
            "resource": pool.rdma.resource,
            "per_node": pool.rdma.per_node,
        }
        for pool in view.pools
        if pool.rdma is not None
    ]


def _team_rows(view: ClusterView, templates: Iterable[Values] | None) -> list[dict[str, Any]]:
    """Per team, who it is and what each of its namespaces gets."""
    # where each namespace's `default` LocalQueue sends jobs that name no queue (Kueue only)
    local_queues: dict[str, str] = {}
    if view.cluster.scheduler == "kueue":
        local_queues = {
            ns.name: plan.name for plan in cluster_queues(view) for ns in plan.namespaces
        }
    plans = {ns.name: plan for plan in cluster_queues(view) for ns in plan.namespaces}
    by_cohort = cohorts(cluster_queues(view))
    templated = templated_namespaces(view, templates)
    teams = []
    for tenant in view.tenants:
        team = tenant.team
        rows = []
        for ns in tenant.namespaces:
            plan = plans.get(ns.name)
            rows.extend(
                _namespace_rows(ns, plan, by_cohort[plan.queue.name])
                if plan is not None
                else [_no_gpus_row(ns)]
            )
        teams.append(
            {
                "carry": job_requirements(view, tenant, templated),
                "name": team.name,
                "description": team.description,
                "cost_center": team.cost_center,
                "contact": team.contact,
                "queue": team.queue,
                "priority": team.priority,
                "images": team.images,
                "rows": rows,
                "local_queues": [
                    {"namespace": ns.name, "cluster_queue": local_queues[ns.name]}
                    for ns in tenant.namespaces
                    if ns.name in local_queues
                ],
            }
        )
    return teams


def _namespace_rows(ns: Namespace, plan: ClusterQueuePlan, cohort: Cohort) -> list[dict[str, Any]]:
    """One row per GPU resource the namespace's ClusterQueue offers it on each pool."""
    rows = []
    level = ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]
    for flavor in plan.flavors:
        pool = flavor.pool
        for resource in sorted(r for r in flavor.resources if r not in (CPU, MEMORY)):
            rows.append(
                {
                    "namespace": ns.name,
                    "purpose": ns.purpose,
                    "pod_security": level,
                    "pool": pool.name,
                    "gets": _gets(pool.sharing, pool.replicas),
                    "resource": (
                        f"claim from ResourceClaimTemplate {pool.name}"
                        if pool.exposure == "dra"
                        else resource
                    ),
                    "nominal": int(limits_of(plan.cohort, pool.name, resource).nominal),
                    "maximum": int(potential_available(plan, cohort, pool.name, resource)),
                }
            )
    return rows


def _no_gpus_row(ns: Namespace) -> dict[str, Any]:
    """The row of a namespace no ClusterQueue gives GPUs."""
    return {
        "namespace": ns.name,
        "purpose": ns.purpose,
        "pod_security": ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose],
        "pool": "-",
        "gets": "no GPUs",
        "resource": "-",
        "nominal": 0,
        "maximum": 0,
    }


def topology_notes(view: ClusterView) -> list[dict[str, str]]:
    """Per pool, whether Kueue places its pods itself (topology-aware scheduling) and why;
    empty off Kueue. See `renderer.model.topology`."""
    if view.cluster.scheduler != "kueue":
        return []
    rows = []
    spanning = [p.name for p in view.pools if spans_nodes(p)]
    for pool in view.pools:
        levels = ", ".join(pool.topology_levels) or "none"
        if spans_nodes(pool):
            why = f"levels {levels}: Kueue packs a gang into one domain of the level it asks for"
        elif topology_aware(pool):
            why = (
                f"levels {levels}: a ClusterQueue may list it beside {', '.join(spanning)}, and "
                "Kueue would refuse a topology-aware pool to every job that asks for no topology "
                "in a ClusterQueue whose pools are not all topology-aware"
            )
        else:
            why = f"levels {levels}: no domain above the node to pack a gang into"
        aware = "yes" if topology_aware(pool) else "no"
        rows.append({"pool": pool.name, "aware": aware, "why": why})
    return rows


def integration_notes(view: ClusterView) -> dict[str, list[str]] | None:
    """The kinds this cluster's Kueue admits as workloads, as the README lists them."""
    if view.cluster.scheduler != "kueue":
        return None
    enabled = set(enabled_frameworks(view.cluster))
    gang = []
    for integration in KUEUE_INTEGRATIONS:
        if integration.framework not in enabled or integration.kind in PER_REPLICA_KINDS:
            continue
        group = integration.group or "core"
        version = f" {'/'.join(integration.versions)}" if integration.versions else ""
        gang.append(f"`{integration.kind}` ({group}{version})")
    return {"gang": gang}


PER_REPLICA_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "LeaderWorkerSet"})
"""Kinds the README names in a sentence of their own (how Kueue splits them into workloads)."""


def guardrail_notes(view: ClusterView) -> list[str]:
    """What the security layer enforces on this cluster, in the words a team member needs
    (docs/security.md has the whole of it)."""
    from renderer.layers.security import audit_logging

    cluster = view.cluster
    notes = [
        "Team members act through the `gpuplane-team-owner`, `-member` and `-viewer` roles: they "
        "cannot change their namespace's quota, LimitRange, network policies, RBAC or LocalQueue."
    ]
    if not admission_policies_served(cluster):
        notes.append(
            f"Kubernetes {cluster.kubernetes_version} serves no ValidatingAdmissionPolicy v1 "
            "(1.30 and later): none of the admission policies below is rendered."
        )
        notes.append(audit_logging.readme_note(cluster.provider))
        return notes
    notes.append(
        "Admission policies refuse, in every team namespace: images outside the team's "
        "registries, privileged or host-level pods, GPUs outside the queue, workloads without "
        "the team and cost-center labels, and secret-named environment variables with literal "
        "values."
    )
    workloads = (
        "A workload of any kind Kueue manages (jobs, and Deployments, StatefulSets, "
        "LeaderWorkerSets, RayServices and pods of their own too)"
        if cluster.scheduler == "kueue"
        else "A Volcano Job"
    )
    if priority_enforcement(cluster) == "mutating":
        notes.append(
            f"{workloads} without a `kueue.x-k8s.io/priority-class` label gets its team's "
            "priority: a MutatingAdmissionPolicy sets the label."
        )
    else:
        label = (
            "`kueue.x-k8s.io/priority-class`"
            if cluster.scheduler == "kueue"
            else "`spec.priorityClassName`"
        )
        notes.append(
            f"{workloads} must carry a priority ({label}): Kubernetes "
            f"{cluster.kubernetes_version} serves no MutatingAdmissionPolicy (1.36 and later), "
            "so a ValidatingAdmissionPolicy refuses one without it and names the team's "
            "priority; `gpuplane fit` says the same."
        )
    if cluster.secret_store is not None:
        notes.append(
            "Secrets come by reference: each team namespace has the SecretStore `team-secrets`; "
            "write an ExternalSecret that names it."
        )
    notes.append(
        "Finished Jobs, JobSets and RayJobs are deleted after the team's "
        "`retention.finishedJobs` (an admission policy requires the TTL); checkpoints, logs and "
        "scratch volumes are not cleaned up by the cluster (docs/secrets-and-cleanup.md)."
    )
    notes.append(audit_logging.readme_note(cluster.provider))
    return notes


# --- what a team's jobs must carry ---------------------------------------------------------------


def templated_namespaces(
    view: ClusterView, templates: Iterable[Values] | None = None
) -> dict[str, list[str]]:
    """Per namespace, the workload templates rendered for it (`templates/<namespace>/<file>`),
    as the templates layer writes them: of `templates`, the values the cluster's templates layer
    rendered (any other values are left out), else of the layer rendered here."""
    from renderer.layers.workload_templates import workloads

    found: dict[str, list[str]] = {}
    rendered = workloads.render(view) if templates is None else templates
    for values in rendered:
        if values.layer != workloads.LAYER:
            continue
        found.setdefault(values.folder.removeprefix(f"{workloads.FOLDER}/"), []).append(
            f"{values.chart}.yaml"
        )
    return {ns: sorted(files) for ns, files in found.items()}


def job_requirements(
    view: ClusterView, tenant: Tenant, templated: Mapping[str, list[str]]
) -> dict[str, Any]:
    """What a job of this team must carry to be admitted, from the values the admission
    policies are rendered from: the common labels (`security.labels`), the queue and priority
    labels (`security.priority`), the image prefixes (`security.images`: the team's
    `spec.images`), the finished-job TTL (`security.cleanup`), and where its templates are."""
    from renderer.layers.security import cleanup, priority
    from renderer.layers.security import labels as common_labels

    team, cluster = tenant.team, view.cluster
    values = labels(team=team.name, cost_center=team.cost_center)
    pairs = [(key, values[key]) for key in common_labels.LABEL_KEYS]
    queue = next((q for q in view.queues if q.name == team.queue), None)
    kueue = cluster.scheduler == "kueue"
    if kueue:
        pairs.append((QUEUE_LABEL, "default"))
    chosen = priority.team_priority(team, queue) if queue is not None else None
    if kueue and queue is not None and chosen is not None:
        pairs.append((PRIORITY_LABEL, priority.class_name(queue, chosen)))
    ttl_kinds = [kind.name for kind in cleanup.KINDS if kind.name != "CronJob"]
    return {
        "enforced": admission_policies_served(cluster),
        "labels": pairs,
        "queue_set_by_kueue": kueue,
        "registries": list(team.images),
        "ttl_seconds": cleanup.finished_jobs_seconds(team),
        "ttl_field": cleanup.TTL,
        "ttl_kinds": ttl_kinds,
        "finished_jobs": str(team.retention.get("finishedJobs", DEFAULT_FINISHED_JOBS)),
        "templates": [
            {"namespace": ns.name, "files": templated[ns.name]}
            for ns in tenant.namespaces
            if ns.name in templated
        ],
    }
