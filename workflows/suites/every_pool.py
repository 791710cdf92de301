"""The Workflows that run every pool's acceptance at once through `templateRef`: the PostSync
hook Argo CD runs after each sync, and the weekly CronWorkflow.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hera.workflows import DAG, CronWorkflow, Parameter, Task, Workflow
from hera.workflows.models import TemplateRef

from renderer.model.platform import Cluster
from renderer.output.manifest import labels as common_labels
from workflows.suites.placement import NamespaceRun, Target, reserved
from workflows.suites.program import input_ref
from workflows.suites.settings import (
    CRON_SCHEDULE,
    DEADLINE_SECONDS,
    HISTORY_LIMIT,
    HOOK_WINDOW_SECONDS,
    NAMESPACE,
    SERVICE_ACCOUNT,
    WINDOW_SECONDS,
)
from workflows.suites.workflow_templates import (
    acceptance_name,
    clean_up,
    exit_template,
    params,
    pod_security,
    suite_inputs,
    window_name,
)

HOOK_NAME = "acceptance-postsync"
CRON_NAME = "acceptance-weekly"
HOOK_ANNOTATIONS = {
    "argocd.argoproj.io/hook": "PostSync",
    "argocd.argoproj.io/hook-delete-policy": "BeforeHookCreation",
}


PER_POOL = ("production-image",)
"""The templates' parameters whose default is the pool's own: the run takes one per pool,
`<parameter>-<pool>` (`argo submit --from cronwf/acceptance-weekly -p
production-image-h100-train=…` tries another image on one pool)."""


def _pool_parameter(name: str, target: Target) -> str:
    return f"{name}-{target.name}"


PER_TASK = ("image-namespace",)
"""The templates' parameters each task sets itself: empty on the pool's own run, the namespace
on a run in a namespace's own production image (`NamespaceRun`)."""


def _run_parameters(targets: Sequence[Target], window: int) -> list[tuple[str, str]]:
    """Every parameter any pool's template takes (their defaults agree on a cluster), and each
    pool's own (PER_POOL)."""
    found: dict[str, str] = {}
    for target in targets:
        for name, value in target.parameters:
            if name not in PER_POOL and name not in PER_TASK:
                found.setdefault(name, value)
    found["window-seconds"] = str(window)
    for target in targets:
        for name, value in target.parameters:
            if name in PER_POOL:
                found[_pool_parameter(name, target)] = value
    return list(found.items())


def _task_arguments(target: Target, run: NamespaceRun | None = None) -> dict[str, str]:
    """A pool's template's arguments: the run's parameters, and on a namespace's run its image
    and name (written as they are: an image reference and a DNS label hold no `{{`)."""
    found = {
        name: input_ref(_pool_parameter(name, target) if name in PER_POOL else name)
        for name in suite_inputs(target)
        if name not in PER_TASK
    }
    found["image-namespace"] = run.namespace if run is not None else ""
    if run is not None:
        found["production-image"] = run.image
    return found


def namespace_task(run: NamespaceRun) -> str:
    """The task of a namespace's run (Argo allows 128 characters: two DNS labels and `--`)."""
    return f"{run.pool}--{run.namespace}"


def _runs_every_pool(targets: Sequence[Target], runs: Sequence[NamespaceRun] = ()) -> None:
    """The templates of a Workflow that runs every pool's acceptance at once (the pools are
    separate hardware and separate quotas), then cleans up after each, however it ended. Each
    namespace run follows its pool's own run, however that ended (they share the pool's GPUs)."""
    names = [name for name, _ in _run_parameters(targets, 0)]
    by_name = {target.name: target for target in targets}
    with DAG(name="acceptance", inputs=params(*names)):
        for target in targets:
            Task(
                name=target.name,
                template_ref=TemplateRef(name=_template_name(target), template="acceptance"),
                arguments=_task_arguments(target),
            )
        for run in runs:
            target = by_name[run.pool]
            Task(
                name=namespace_task(run),
                template_ref=TemplateRef(name=_template_name(target), template="acceptance"),
                arguments=_task_arguments(target, run),
                depends=f"{target.name}.Succeeded || {target.name}.Failed || {target.name}.Errored",
            )
    with DAG(name="cleanup"):
        for target in targets:
            Task(
                name=target.name,
                template_ref=TemplateRef(
                    name=_template_name(target), template=exit_template(target)
                ),
            )


def _template_name(target: Target) -> str:
    return window_name(target.name) if target.reserved else acceptance_name(target.name)


def _run_spec(
    targets: Sequence[Target], window: int, deadline: int = DEADLINE_SECONDS
) -> dict[str, Any]:
    return {
        "entrypoint": "acceptance",
        "on_exit": "cleanup",
        "service_account_name": SERVICE_ACCOUNT,
        "security_context": pod_security(),
        "active_deadline_seconds": deadline,
        "arguments": [Parameter(name=n, value=v) for n, v in _run_parameters(targets, window)],
        **clean_up(),
    }


def postsync_hook(cluster: Cluster, targets: Sequence[Target]) -> Workflow:
    """The Workflow Argo CD creates after every sync of the cluster's workflows Application,
    deleting the previous run first (a fixed name: the writer names files after it)."""
    with Workflow(
        name=HOOK_NAME,
        namespace=NAMESPACE,
        labels=common_labels(cluster=cluster.name, suite="acceptance"),
        annotations={
            **HOOK_ANNOTATIONS,
            "workflows.argoproj.io/description": (
                f"Acceptance of every pool of cluster {cluster.name} after each sync, with a "
                f"{HOOK_WINDOW_SECONDS}-second training window."
            ),
        },
        **_run_spec(targets, HOOK_WINDOW_SECONDS),
    ) as wf:
        _runs_every_pool(targets)
    return wf


def cron_workflow(
    cluster: Cluster, targets: Sequence[Target], runs: Sequence[NamespaceRun] = ()
) -> CronWorkflow:
    """The periodic run: every pool's acceptance with the full window, one run at a time, then
    on each pool its run in each team namespace's own production image (`runs`: reported, their
    results labelled with the namespace and published apart, never the pool's evidence). With
    an acceptance window (Kueue clusters) it runs at the window's schedule, each pool's
    `acceptance-window-<pool>` (the whole pool, reserved; a namespace's run follows the pool's
    in the same reservation, with what is left of the window) and stops before the window
    ends, keeping time for the exit handler to release the pools."""
    window = targets[0].window if targets else None
    schedule, deadline = CRON_SCHEDULE, DEADLINE_SECONDS
    if window is not None:
        targets = [reserved(t) for t in targets]
        schedule, deadline = window.schedule, targets[0].deadline_seconds
    with CronWorkflow(
        name=CRON_NAME,
        namespace=NAMESPACE,
        labels=common_labels(cluster=cluster.name, suite="acceptance"),
        annotations={
            "workflows.argoproj.io/description": (
                f"Weekly acceptance of every pool of cluster {cluster.name}."
            )
        },
        schedules=[schedule],
        timezone="UTC",
        concurrency_policy="Forbid",
        starting_deadline_seconds=3600,
        successful_jobs_history_limit=HISTORY_LIMIT,
        failed_jobs_history_limit=HISTORY_LIMIT,
        **_run_spec(targets, WINDOW_SECONDS, deadline),
    ) as cron:
        _runs_every_pool(targets, runs)
    return cron
