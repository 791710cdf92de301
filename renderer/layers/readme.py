"""The generated `rendered/<cluster>/README.md`: for each team, which pools it can use, what a pod
gets there (whole GPU, MIG slice or time-shared GPU), the resource name to request, and its quota.

The guide's step 3 asks that teams be told this; a Markdown page next to the manifests is where a
team lead looks. Text for people, so it is a Jinja2 template (data in, Markdown out).
"""

from __future__ import annotations

from typing import Any

import jinja2

from renderer.model import catalog
from renderer.model.admission import CPU, MEMORY, cluster_queues
from renderer.model.capacity import SHARING_MODES, how_to_request, pool_offers
from renderer.model.names import DEFAULT_POD_SECURITY
from renderer.model.view import ClusterView
from renderer.output.text import environment, markdown_cell


def _template() -> jinja2.Template:
    env = environment()
    env.filters["cell"] = markdown_cell
    return env.get_template("cluster-readme.md.j2")


def _gets(sharing: str, replicas: int) -> str:
    mode = SHARING_MODES[sharing]
    return f"{mode} ({replicas} per GPU)" if sharing in ("time-slicing", "mps") else mode


def cluster_readme(view: ClusterView) -> str:
    pools: list[dict[str, Any]] = []
    for pool in view.pools:
        accelerator = catalog.accelerator(pool.accelerator)
        offers = pool_offers(pool)
        nodes = (
            f"{pool.nodes.min}"
            if pool.nodes.min == pool.nodes.max
            else f"{pool.nodes.min}-{pool.nodes.max}"
        )
        pools.append(
            {
                "name": pool.name,
                "product": accelerator.product if accelerator else pool.accelerator,
                "memory_gb": accelerator.memory_gb if accelerator else "?",
                "nodes": nodes,
                "gpus_per_node": pool.gpus_per_node,
                "workload": pool.workload,
                "sharing": _gets(pool.sharing, pool.replicas),
                "resources": [how_to_request(o) for o in offers],
                "capacity": ", ".join(f"{o.guaranteed} {o.unit}s" for o in offers),
            }
        )
    fabrics = [
        {
            "pool": pool.name,
            "fabric": pool.fabric,
            "resource": pool.rdma.resource,
            "per_node": pool.rdma.per_node,
        }
        for pool in view.pools
        if pool.rdma is not None
    ]
    # where each namespace's `default` LocalQueue sends jobs that name no queue (Kueue only)
    local_queues: dict[str, str] = {}
    if view.cluster.scheduler == "kueue":
        local_queues = {
            ns.name: plan.name for plan in cluster_queues(view) for ns in plan.namespaces
        }
    plans = {ns.name: plan for plan in cluster_queues(view) for ns in plan.namespaces}
    teams = []
    for tenant in view.tenants:
        team = tenant.team
        rows = []
        for ns in tenant.namespaces:
            level = ns.pod_security or DEFAULT_POD_SECURITY[ns.purpose]
            plan = plans.get(ns.name)
            flavors = plan.flavors if plan is not None else ()
            for flavor in flavors:
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
                            "nominal": "borrows only"
                            if flavor.borrow_only
                            else int(flavor.resources[resource].nominal),
                            "maximum": flavor.maximum(resource),
                        }
                    )
            if not flavors:
                rows.append(
                    {
                        "namespace": ns.name,
                        "purpose": ns.purpose,
                        "pod_security": level,
                        "pool": "-",
                        "gets": "no GPUs",
                        "resource": "-",
                        "nominal": 0,
                        "maximum": 0,
                    }
                )
        teams.append(
            {
                "name": team.name,
                "description": team.description,
                "cost_center": team.cost_center,
                "contact": team.contact,
                "queue": team.queue,
                "priority": team.priority,
                "rows": rows,
                "local_queues": [
                    {"namespace": ns.name, "cluster_queue": local_queues[ns.name]}
                    for ns in tenant.namespaces
                    if ns.name in local_queues
                ],
            }
        )
    text = _template().render(cluster=view.cluster, pools=pools, fabrics=fabrics, teams=teams)
    return text.rstrip("\n") + "\n"
