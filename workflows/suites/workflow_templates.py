"""The Hera WorkflowTemplates `acceptance-<pool>` and `benchmark-<pool>`: each step's Job
template and DAG, the kubectl steps, export, report and clean-up, wired into the suite's DAG.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from hera.workflows import (
    DAG,
    Container,
    Env,
    Gauge,
    GitArtifact,
    Label,
    Parameter,
    RawArtifact,
    Resource,
    Suspend,
    Task,
    WorkflowTemplate,
)
from hera.workflows.models import (
    Capabilities,
    IntOrString,
    PodGC,
    PodSecurityContext,
    Quantity,
    ResourceRequirements,
    RetryStrategy,
    SeccompProfile,
    SecurityContext,
    TTLStrategy,
    ValueFrom,
)

from renderer.model.metrics import CLUSTER, POOL
from renderer.model.names import NODE_LOSS_TAINT_KEY, WINDOW_TAINT_KEY
from renderer.model.nodes import POOL_LABEL as NODE_POOL_LABEL
from renderer.output.canonical import dump
from renderer.output.manifest import metadata
from workflows.suites.jobs import (
    job_manifest,
    result_labels,
    step_labels,
    workspace_manifest,
)
from workflows.suites.placement import Target, reserved
from workflows.suites.program import (
    Step,
    acceptance_steps,
    benchmark_steps,
    dns_label,
    input_ref,
    ref,
    step_deadline_seconds,
    task_output,
)
from workflows.suites.scripts import EXPORT, WINDOW
from workflows.suites.settings import (
    EXPORT_DIR,
    INDEX_LABEL,
    JOB_NAME_LABEL,
    LOG_TAIL,
    NAMESPACE,
    PLATFORM_DIR,
    POD_GC_DELAY,
    POOL_LABEL,
    RELEASE_SECONDS,
    RESERVE_SECONDS,
    RUN,
    RUN_LABEL,
    SERVICE_ACCOUNT,
    SUITE_GAUGES,
    SUITE_IMAGE,
    WORKFLOW_SUCCESS_TTL_SECONDS,
    WORKFLOW_TTL_SECONDS,
    SuiteGauge,
)

STEP_PARTS = ("log", "created", "started", "finished", "image")
"""What each step's DAG outputs: its Job's log, the Job's timestamps, and the image its probe
container ran (`IMAGE_JSONPATH`)."""
IMAGE_JSONPATH = (
    '{range .items[*]}{.spec.containers[?(@.name=="probe")].image}{" "}'
    '{.status.containerStatuses[?(@.name=="probe")].imageID}{"\\n"}{end}'
)
"""kubectl's `-o jsonpath` for the pods of a step: per pod one line, the probe container's image
reference and the kubelet's `imageID` (`docker-pullable://<repo>@sha256:…`, or `<repo>@sha256:…`
from containerd), which export turns into the results' `gpuplane.dev/image-digest`."""


def params(*names: str) -> list[Parameter]:
    return [Parameter(name=n) for n in names]


def _tool_resources() -> ResourceRequirements:
    return ResourceRequirements(
        requests={"cpu": Quantity("100m"), "memory": Quantity("128Mi")},
        limits={"memory": Quantity("512Mi")},
    )


def _container_security() -> SecurityContext:
    return SecurityContext(
        allow_privilege_escalation=False, capabilities=Capabilities(drop=["ALL"])
    )


def clean_up() -> dict[str, Any]:
    """What Argo deletes after a run, on every Workflow, CronWorkflow and WorkflowTemplate (a
    Workflow submitted from a template takes its spec): a successful run's pods once the
    Workflow succeeded (after POD_GC_DELAY), the Workflow itself a day after it succeeded; a
    failed run is kept, with its pods and their logs, for WORKFLOW_TTL_SECONDS. The results
    outlive both, in the results ConfigMaps."""
    return {
        "ttl_strategy": TTLStrategy(
            seconds_after_completion=WORKFLOW_TTL_SECONDS,
            seconds_after_success=WORKFLOW_SUCCESS_TTL_SECONDS,
            seconds_after_failure=WORKFLOW_TTL_SECONDS,
        ),
        "pod_gc": PodGC(strategy="OnWorkflowSuccess", delete_delay_duration=POD_GC_DELAY),
    }


def pod_security() -> PodSecurityContext:
    return PodSecurityContext(
        run_as_non_root=True,
        run_as_user=65532,
        run_as_group=65532,
        seccomp_profile=SeccompProfile(type="RuntimeDefault"),
    )


def _kubectl(
    target: Target,
    name: str,
    args: list[str],
    inputs: Sequence[str] = (),
    *,
    retried: bool = True,
) -> Container:
    """A step that is one kubectl command, retried (the API server may blink) unless running it
    twice would do something else the second time."""
    return Container(
        name=name,
        image=target.kubectl_image,
        command=["kubectl"],
        args=args,
        inputs=params(*inputs),
        resources=_tool_resources(),
        security_context=_container_security(),
        retry_strategy=RetryStrategy(limit=IntOrString(2)) if retried else None,
    )


STEP_TOOL_INPUTS = ("step", "image-namespace")
"""What the kubectl steps that find a step's pods or Jobs by label take."""

JOB_OUTPUTS = (
    ("job", "{.metadata.name}"),
    ("created", "{.metadata.creationTimestamp}"),
    ("started", "{.status.startTime}"),
)


def suite_inputs(target: Target, step: Step | None = None) -> list[str]:
    names = [name for name, _ in target.parameters]
    if step is not None and step.workspace:
        names.append("workspace")
    return names


def _job_template(target: Target, step: Step) -> Resource:
    """Create the step's Job; done when every pod succeeded (step 5: when its pod is Ready)."""
    outputs = list(JOB_OUTPUTS)
    if step.after:
        success, failure = "status.ready > 0", "status.failed > 1"
    else:
        # completionTime is written after the last pod succeeded: read it only once it is there
        success = f"status.succeeded > {step.shape.pods - 1},status.completionTime"
        failure = "status.failed > 0"
        outputs.append(("finished", "{.status.completionTime}"))
    return Resource(
        name=f"{step.name}-job",
        action="create",
        manifest=dump(job_manifest(target, step)),
        success_condition=success,
        failure_condition=failure,
        active_deadline_seconds=step_deadline_seconds(target),
        inputs=params(*suite_inputs(target, step)),
        outputs=[Parameter(name=n, value_from=ValueFrom(json_path=p)) for n, p in outputs],
    )


def staged_by(steps: Sequence[Step]) -> dict[str, str]:
    """Each server step, and the staging step before it whose weights it serves."""
    found: dict[str, str] = {}
    staged: str | None = None
    for step in steps:
        if step.server and staged is not None:
            found[step.name] = staged
        if any(p.probe == "staging" for p in step.probes):
            staged = step.name
    return found


def _ended(task: str) -> str:
    """A `depends` term true once `task` has finished, however it finished."""
    return f"{task}.Succeeded || {task}.Failed || {task}.Errored"


def _step_templates(target: Target, step: Step, *, gated: bool = False) -> None:
    """The Job template of a step, and the DAG that runs it (step 5: deletes its pod and waits
    for the replacement) and reads its log; the DAG outputs STEP_PARTS.

    A Job that fails does not stop the suite: the log is read whatever the Job did (a failed
    probe prints its result before it exits), and the DAG's only leaf, `done`, runs once the log
    task ended in any way, so the DAG succeeds with what it could read (an empty part where a
    task had nothing) and the next steps, export and report run; the report names every step
    that failed and fails the Workflow. Argo refuses `continueOn` in a DAG that uses `depends`,
    so the results in the `depends` expressions say it all.

    A `gated` step (a server step) takes the staging step's `finished` as input `staged` and
    creates no Job when it is empty: a server without weights would never answer. The step's
    task itself always runs (Argo v4.0.x waits forever on the outputs of a skipped task)."""
    job = _job_template(target, step)
    inputs = suite_inputs(target, step)
    finished_from = "restore" if step.after else "job"

    def part(name: str, value: str) -> Parameter:
        return Parameter(name=name, value_from=ValueFrom(parameter=value, default=""))

    with DAG(
        name=step.name,
        inputs=params(*inputs, *(["staged"] if gated else [])),
        outputs=[
            part("log", ref("tasks.logs.outputs.result")),
            *(part(n, task_output("job", n)) for n in ("created", "started")),
            part("finished", task_output(finished_from, "finished")),
            part("image", ref("tasks.image.outputs.result")),
        ],
    ):
        Task(
            name="job",
            template=job.name,
            arguments={n: input_ref(n) for n in inputs},
            when=f"'{input_ref('staged')}' != ''" if gated else None,
        )
        read_after = _ended("job")
        if step.after:
            Task(
                name="interrupt",
                template="interrupt" if step.interruption == "pod" else "lose-node",
                arguments={"job": task_output("job", "job")},
                depends="job.Succeeded",
            )
            Task(
                name="restore",
                template="await-job",
                arguments={"job": task_output("job", "job")},
                depends="interrupt.Succeeded",
            )
            read_after = " || ".join(
                (
                    "job.Failed",
                    "job.Errored",
                    "interrupt.Failed",
                    "interrupt.Errored",
                    _ended("restore"),
                )
            )
        # by labels known before the Job exists: a Job that failed records no outputs, not
        # even its name
        tool_arguments = {"step": step.name, "image-namespace": input_ref("image-namespace")}
        Task(name="logs", template="logs", arguments=tool_arguments, depends=read_after)
        Task(name="image", template="image", arguments=tool_arguments, depends=read_after)
        # a Job that did not finish (failed, past its deadline, still queued) must not run on
        # beside the next steps: deleted once its log is read
        unfinished = ["job.Failed", "job.Errored"]
        if step.after:
            unfinished += ["interrupt.Failed", "interrupt.Errored"]
            unfinished += ["restore.Failed", "restore.Errored"]
        Task(
            name="drop",
            template="drop",
            arguments=tool_arguments,
            depends=f"({' || '.join(unfinished)}) && ({_ended('logs')})",
        )
        Task(
            name="done",
            template="done",
            depends=(
                f"({_ended('logs')} || logs.Omitted) && ({_ended('image')} || image.Omitted)"
                f" && ({_ended('drop')} || drop.Omitted)"
            ),
        )


def _selector(labels: Mapping[str, str]) -> str:
    """kubectl's `--selector` for objects carrying `labels` (built from `step_labels`, so it
    matches what the Jobs and their pods are labelled with)."""
    return "--selector=" + ",".join(f"{key}={value}" for key, value in labels.items())


def _common_templates(target: Target, kind: str, steps: Sequence[Step]) -> None:
    """The workspace, the kubectl steps, export (label, then publish) and the clean-up."""
    _workspace_and_logs(target)
    if any(s.after and s.interruption == "pod" for s in steps):
        _interruption_templates(target)
    elif any(s.after for s in steps):
        _await_job(target)
    if any(s.interruption == "node" for s in steps):
        _window_tool(target, "lose-node", ["job"])
    _export_templates(target, kind, steps)
    _cleanup_templates(target)


def _workspace_and_logs(target: Target) -> None:
    """The workspace, reading a step's log, and the step's end."""
    ns = target.namespace
    Resource(
        name="workspace",
        action="create",
        manifest=dump(workspace_manifest(target)),
        outputs=[Parameter(name="name", value_from=ValueFrom(json_path="{.metadata.name}"))],
    )
    _kubectl(
        target,
        "logs",
        [
            "logs",
            f"--namespace={ns}",
            _selector({**step_labels(target, input_ref("step")), INDEX_LABEL: "0"}),
            "--container=probe",
            f"--tail={LOG_TAIL}",
        ],
        STEP_TOOL_INPUTS,
    )
    _kubectl(
        target,
        "image",
        [
            "get",
            "pod",
            f"--namespace={ns}",
            _selector({**step_labels(target, input_ref("step")), INDEX_LABEL: "0"}),
            f"--output=jsonpath={IMAGE_JSONPATH}",
        ],
        STEP_TOOL_INPUTS,
    )
    Suspend(name="done", duration="0")  # no pod, no wait: the step's DAG has ended


def _interruption_templates(target: Target) -> None:
    """Deleting a step's pod mid-run, and waiting for its Job to finish after the restart."""
    ns = target.namespace
    _kubectl(
        target,
        "interrupt",
        [
            "delete",
            "pod",
            f"--namespace={ns}",
            f"--selector={JOB_NAME_LABEL}={input_ref('job')}",
            "--wait=true",
        ],
        ["job"],
        # a second try would find the replacement pod and delete that one too
        retried=False,
    )
    _await_job(target)


def _await_job(target: Target) -> None:
    """Waiting for a Job whose pod was interrupted to finish in its replacement pod."""
    ns = target.namespace
    Resource(
        name="await-job",
        action="get",
        manifest=dump(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": input_ref("job"), "namespace": ns},
            }
        ),
        success_condition="status.succeeded > 0,status.completionTime",
        failure_condition="status.failed > 1",
        active_deadline_seconds=step_deadline_seconds(target),
        inputs=params("job"),
        outputs=[
            Parameter(name="finished", value_from=ValueFrom(json_path="{.status.completionTime}"))
        ],
    )


WindowAction = Literal["reserve", "lose-node", "release"]


def _window_tool(target: Target, action: WindowAction, inputs: Sequence[str] = ()) -> None:
    """A node step of the window run (scripts.WINDOW), in the platform's suite image whatever
    the run's `image` (the exit handler has no parameters): `reserve` takes the pool (a taint,
    then evictions, waiting up to RESERVE_SECONDS), `lose-node` takes the node of a Job away
    (not retried: a second try would take the replacement's node too), `release` gives every
    node back (retried: it changes nothing the second time)."""
    env = {
        "ACTION": action,
        "SELECTOR": f"{NODE_POOL_LABEL}={target.name}",
        "TAINT_KEY": WINDOW_TAINT_KEY,
        "NODE_LOSS_KEY": NODE_LOSS_TAINT_KEY,
        "RUN": RUN,
        "WAIT_SECONDS": str(
            RESERVE_SECONDS if action == "reserve" else step_deadline_seconds(target)
        ),
        "JOBS_NAMESPACE": target.namespace,
    }
    if "job" in inputs:
        env["JOB"] = input_ref("job")
    deadline = {"reserve": RESERVE_SECONDS, "release": RELEASE_SECONDS // 2}
    Container(
        name=action,
        image=SUITE_IMAGE,
        command=["python", "-c", WINDOW],
        env=[Env(name=k, value=v) for k, v in env.items()],
        inputs=params(*inputs),
        resources=_tool_resources(),
        security_context=_container_security(),
        active_deadline_seconds=deadline.get(action, step_deadline_seconds(target)) + 60,
        retry_strategy=None if action == "lose-node" else RetryStrategy(limit=IntOrString(2)),
    )


def _export_templates(target: Target, kind: str, steps: Sequence[Step]) -> None:
    """Export: label the steps' results and set the suite's gauges, then publish them."""
    keys = [k for s in steps for k in s.keys]
    probes = {p.probe for s in steps for p in s.results}
    gauges = [g for g in SUITE_GAUGES if g.probe in probes]
    step_inputs = [f"{s.name}-{part}" for s in steps for part in STEP_PARTS]
    Container(
        name="label",
        image=input_ref("image"),
        command=["python", "-c", EXPORT],
        inputs=params("image", "image-namespace", *step_inputs),
        env=[
            Env(name="OUT", value=EXPORT_DIR),
            Env(name="CLUSTER", value=target.cluster.name),
            Env(name="POOL", value=target.name),
            Env(name="RESULTS", value=results_configmap_name(kind, target.name)),
            Env(name="IMAGE_NAMESPACE", value=input_ref("image-namespace")),
            Env(
                name="STEPS",
                value=json.dumps(
                    [
                        {"step": s.name, "results": [[p.key, p.probe] for p in s.results]}
                        for s in steps
                    ]
                ),
            ),
            *(
                Env(name=f"{s.name.upper()}_{part.upper()}", value=input_ref(f"{s.name}-{part}"))
                for s in steps
                for part in STEP_PARTS
            ),
        ],
        outputs=[
            Parameter(name="results-name", value_from=ValueFrom(path=f"{EXPORT_DIR}/results-name")),
            *(Parameter(name=k, value_from=ValueFrom(path=f"{EXPORT_DIR}/{k}.json")) for k in keys),
            *(
                Parameter(
                    name=g.parameter,
                    value_from=ValueFrom(path=f"{EXPORT_DIR}/{g.parameter}", default=""),
                )
                for g in gauges
            ),
        ],
        metrics=[_gauge_metric(target, kind, g) for g in gauges] or None,
        resources=_tool_resources(),
        security_context=_container_security(),
    )
    Resource(
        name="publish",
        action="apply",
        manifest=_results_configmap(target, keys),
        inputs=params("results-name", *keys),
    )
    with DAG(
        name="export",
        inputs=params("image", "image-namespace", *step_inputs),
        outputs=[
            Parameter(name=k, value_from=ValueFrom(parameter=task_output("label", k))) for k in keys
        ],
    ):
        Task(
            name="label",
            template="label",
            arguments={n: input_ref(n) for n in ("image", "image-namespace", *step_inputs)},
        )
        Task(
            name="publish",
            template="publish",
            arguments={n: task_output("label", n) for n in ("results-name", *keys)},
            depends="label",
        )


def _cleanup_templates(target: Target) -> None:
    """Deleting a step's unfinished Job, and every Job and claim of the run at its end."""
    ns = target.namespace
    _kubectl(
        target,
        "drop",
        [
            "delete",
            "job",
            f"--namespace={ns}",
            _selector(step_labels(target, input_ref("step"))),
            "--ignore-not-found",
            "--wait=false",
        ],
        STEP_TOOL_INPUTS,
    )
    _kubectl(
        target,
        "cleanup",
        [
            "delete",
            "job,persistentvolumeclaim",
            f"--namespace={ns}",
            _selector({RUN_LABEL: RUN, POOL_LABEL: target.name}),
            "--ignore-not-found",
            "--wait=false",
        ],
    )


def _gauge_metric(target: Target, kind: str, gauge: SuiteGauge) -> Gauge:
    """The custom metric of one figure, set once the export step succeeded and found it (a probe
    that measured nothing leaves the last run's value standing rather than a wrong one)."""
    figure = f"{{{{outputs.parameters.{gauge.parameter}}}}}"
    return Gauge(
        name=gauge.metric,
        help=gauge.help,
        labels=[
            Label(key=CLUSTER, value=target.cluster.name),
            Label(key=POOL, value=target.name),
            Label(key="suite", value=kind),
        ],
        when=f"{{{{status}}}} == Succeeded && '{figure}' != ''",
        realtime=False,
        value=figure,
    )


def results_configmap_name(kind: str, pool: str) -> str:
    return dns_label(f"{kind}-{pool}", 253)


def _results_configmap(target: Target, keys: Sequence[str]) -> str:
    """The ConfigMap `<kind>-<pool>` in the suite namespace (`<kind>-<pool>-<namespace>` for a
    run in a namespace's own image, whose results never stand in for the pool's): the latest
    run's results, one key each (a JSON line, which Argo puts into the literal block), labelled
    like the results."""
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": input_ref("results-name"),
            "namespace": NAMESPACE,
            "labels": result_labels(target),
            "annotations": {"gpuplane.dev/workflow": ref("workflow.name")},
        },
        "data": {f"{k}.json": input_ref(k) + "\n" for k in keys},
    }
    return dump(body)


EVIDENCE_DIR = "/tmp/evidence"
EVIDENCE_MANIFEST = "/tmp/evidence-configmap.json"
"""Where the report step's record writes the evidence files, and the ConfigMap it applies."""


def _report(target: Target, keys: Sequence[str]) -> None:
    """Step 7, a DAG of three: `record` writes the evidence file of the pool
    (`gpuplane acceptance record`, docs/acceptance-evidence.md) and its ConfigMap
    `acceptance-evidence-<pool>`, which `evidence` applies, whatever the verdict (a failing
    file is evidence too); then `judge` runs `gpuplane acceptance report` on the same results,
    against the pool's thresholds in the repository at the revision Argo CD syncs (cloned by
    Argo's git artifact), with the cost of useful work beside each figure, and fails the step
    when the pool does not pass. The evidence is applied before the report judges, so a
    failing report cannot keep it from the cluster; both judge the same files alike."""
    artifacts: list[Any] = [
        RawArtifact(name=k, path=f"/results/{k}.json", data=input_ref(k)) for k in keys
    ]
    repository = target.repository
    if repository is not None:
        artifacts.append(
            GitArtifact(
                name="platform",
                path=PLATFORM_DIR,
                repo=repository.repo_url,
                revision=repository.target_revision,
                depth=1,
            )
        )
    results = [f"/results/{k}.json" for k in keys]
    command = ["gpuplane", "-C", PLATFORM_DIR, "acceptance", "report"]
    env: list[Env] = []
    if target.pool.production_image is None:
        # said first in the report's output: these figures are the suite image's, not the team's
        env.append(Env(name="IMAGE_NOTE", value=suite_image_note(target)))
        command = ["sh", "-c", 'printf "%s\\n" "$IMAGE_NOTE" && exec "$@"', "report", *command]
    Container(
        name="report-record",
        image=input_ref("image"),
        command=["gpuplane", "-C", PLATFORM_DIR, "acceptance", "record"],
        args=[
            *("--pool", target.name, "--run", ref("workflow.name"), "--out", EVIDENCE_DIR),
            *("--configmap", EVIDENCE_MANIFEST, "--namespace", NAMESPACE, "--exit-zero"),
            "--image-namespace=" + input_ref("image-namespace"),
            *results,
        ],
        inputs=[*params("image", "image-namespace", *keys), *artifacts],
        outputs=[Parameter(name="manifest", value_from=ValueFrom(path=EVIDENCE_MANIFEST))],
        resources=_tool_resources(),
        security_context=_container_security(),
    )
    Resource(
        name="report-evidence",
        action="apply",
        manifest=input_ref("manifest"),
        inputs=params("manifest"),
    )
    Container(
        name="report-judge",
        image=input_ref("image"),
        command=command,
        args=["--pool", target.name, *results],
        env=env or None,
        inputs=[*params("image", *keys), *artifacts],
        resources=_tool_resources(),
        security_context=_container_security(),
    )
    arguments = {n: input_ref(n) for n in ("image", *keys)}
    recording = {**arguments, "image-namespace": input_ref("image-namespace")}
    with DAG(name="report", inputs=params("image", "image-namespace", *keys)):
        Task(name="record", template="report-record", arguments=recording)
        Task(
            name="evidence",
            template="report-evidence",
            arguments={"manifest": task_output("record", "manifest")},
            depends="record",
        )
        Task(name="judge", template="report-judge", arguments=arguments, depends="evidence")


def suite_image_note(target: Target) -> str:
    """What the report step of a pool without `productionImage` says before its report."""
    return (
        f"pool {target.name} declares no productionImage: its torch probes ran in the suite "
        "image, not the image its teams run (set spec.productionImage in the pool file)"
    )


def _main_dag(target: Target, name: str, steps: Sequence[Step], *, report: bool) -> None:
    """The entrypoint: the workspace, each step's DAG after the one before, export, report."""
    inputs = suite_inputs(target)
    with DAG(name=name, inputs=params(*inputs)):
        if target.reserved:
            # nothing runs before the pool is the run's: a failed reserve skips every step
            Task(name="reserve", template="reserve")
        Task(
            name="workspace",
            template="workspace",
            depends="reserve" if target.reserved else None,
        )
        previous = "workspace"
        gates = staged_by(steps)
        for step in steps:
            arguments = {n: input_ref(n) for n in inputs}
            if step.workspace:
                arguments["workspace"] = task_output("workspace", "name")
            if step.name in gates:
                arguments["staged"] = task_output(gates[step.name], "finished")
            Task(name=step.name, template=step.name, arguments=arguments, depends=previous)
            previous = step.name
        export_args = {"image": input_ref("image"), "image-namespace": input_ref("image-namespace")}
        for step in steps:
            for part in STEP_PARTS:
                export_args[f"{step.name}-{part}"] = task_output(step.name, part)
        Task(name="export", template="export", arguments=export_args, depends=previous)
        if report:
            keys = [k for s in steps for k in s.judged]
            Task(
                name="report",
                template="report",
                arguments={
                    "image": input_ref("image"),
                    "image-namespace": input_ref("image-namespace"),
                    **{k: task_output("export", k) for k in keys},
                },
                depends="export",
            )


def _template(target: Target, name: str, suite: str, description: str) -> WorkflowTemplate:
    meta = metadata(name, NAMESPACE, pool=target.name, suite=suite)
    return WorkflowTemplate(
        name=name,
        namespace=NAMESPACE,
        labels=meta["labels"],
        annotations={"workflows.argoproj.io/description": description},
        entrypoint=suite,
        on_exit=exit_template(target),
        service_account_name=SERVICE_ACCOUNT,
        security_context=pod_security(),
        active_deadline_seconds=target.deadline_seconds,
        arguments=[Parameter(name=n, value=v) for n, v in target.parameters],
        **clean_up(),
    )


def acceptance_template(target: Target) -> WorkflowTemplate:
    """`acceptance-<pool>`: the guide's seven steps as a DAG, each waiting for the one before."""
    steps = acceptance_steps(target)
    description = (
        f"Acceptance of pool {target.name}: the guide's seven steps, submitted through "
        f"LocalQueue {target.local_queue} of namespace {target.namespace} "
        f"(ClusterQueue {target.cluster_queue}, borrowing idle quota of cohort "
        f"{target.queue.name})."
    )
    gates = staged_by(steps)
    with _template(target, acceptance_name(target.name), "acceptance", description) as wt:
        for step in steps:
            _step_templates(target, step, gated=step.name in gates)
        _common_templates(target, "acceptance", steps)
        _report(target, [k for s in steps for k in s.judged])
        _main_dag(target, "acceptance", steps, report=True)
    return wt


def exit_template(target: Target) -> str:
    """What a run of the template runs on exit, however it ended (Argo runs an exit handler
    past the Workflow's deadline too): the clean-up, and in the window the release."""
    return "exit" if target.reserved else "cleanup"


def window_template(target: Target) -> WorkflowTemplate:
    """`acceptance-window-<pool>`: in the cluster's acceptance window, `reserve` takes the whole
    pool (taint, evictions), then the guide's steps and the node, data path and node-loss steps
    run on every node of it, admitted by the pool's window ClusterQueue; the exit handler
    releases the pool whatever happened (docs/acceptance-window.md)."""
    whole = reserved(target)
    steps = acceptance_steps(whole)
    description = (
        f"Acceptance of the whole pool {target.name} in the cluster's acceptance window: its "
        f"nodes tainted for the run, its Jobs admitted by ClusterQueue {whole.cluster_queue}."
    )
    gates = staged_by(steps)
    with _template(whole, window_name(target.name), "acceptance", description) as wt:
        _window_tool(whole, "reserve")
        _window_tool(whole, "release")
        for step in steps:
            _step_templates(whole, step, gated=step.name in gates)
        _common_templates(whole, "acceptance", steps)
        with DAG(name="exit"):
            Task(name="cleanup", template="cleanup")
            Task(name="release", template="release")
        _report(whole, [k for s in steps for k in s.judged])
        _main_dag(whole, "acceptance", steps, report=True)
    return wt


def window_name(pool: str) -> str:
    return f"acceptance-window-{pool}"


def benchmark_template(target: Target) -> WorkflowTemplate:
    """`benchmark-<pool>`: the benchmarks one after the other (they would compete for the same
    GPUs and file system otherwise), their results exported like acceptance's."""
    steps = benchmark_steps(target)
    description = (
        f"Benchmarks of pool {target.name} ({', '.join(s.name for s in steps)}), submitted "
        f"through LocalQueue {target.local_queue} of namespace {target.namespace}."
    )
    gates = staged_by(steps)
    with _template(target, benchmark_name(target.name), "benchmarks", description) as wt:
        for step in steps:
            _step_templates(target, step, gated=step.name in gates)
        _common_templates(target, "benchmark", steps)
        _main_dag(target, "benchmarks", steps, report=False)
    return wt


def acceptance_name(pool: str) -> str:
    return f"acceptance-{pool}"


def benchmark_name(pool: str) -> str:
    return f"benchmark-{pool}"
