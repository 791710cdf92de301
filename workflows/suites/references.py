"""The built Hera objects as Argo's YAML has them, and the check that nothing in them dangles:
Hera builds templates whose references dangle without a word, so `check_references` checks every
template and templateRef name, DAG dependency and `{{…}}` reference, and the workflows layer
refuses to render anything it finds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the data checks need no Hera: only `to_data` reads a Hera object
    from hera.workflows import Workflow

# --- from Hera to data ------------------------------------------------------------------------


def to_data(obj: Workflow) -> dict[str, Any]:
    """The object as Argo's YAML has it: Hera's dict, with `name` first in every mapping and the
    top level in kubectl's order (apiVersion, kind, metadata, spec)."""
    built = _name_first(obj.to_dict())
    meta = built["metadata"]
    ordered_meta = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if k in meta}
    ordered_meta.update({k: v for k, v in meta.items() if k not in ordered_meta})
    return {
        "apiVersion": built["apiVersion"],
        "kind": built["kind"],
        "metadata": ordered_meta,
        **{k: v for k, v in built.items() if k not in ("apiVersion", "kind", "metadata")},
    }


def _name_first(value: Any) -> Any:
    if isinstance(value, dict):
        items = {k: _name_first(v) for k, v in value.items()}
        if "name" in items:
            return {"name": items["name"], **{k: v for k, v in items.items() if k != "name"}}
        return items
    if isinstance(value, list):
        return [_name_first(v) for v in value]
    return value


# --- reference checks -------------------------------------------------------------------------

WORKFLOW_GLOBALS = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "serviceAccountName",
        "mainEntrypoint",
        "creationTimestamp",
        "priority",
        "duration",
        "scheduledTime",
        "status",
        "failures",
        "annotations",
        "labels",
    }
)
"""`{{workflow.<x>}}` variables Argo defines itself (besides `workflow.parameters.<p>`)."""

TASK_RESULTS = frozenset(
    {
        "Succeeded",
        "Failed",
        "Errored",
        "Skipped",
        "Omitted",
        "Daemoned",
        "AnySucceeded",
        "AllFailed",
    }
)
EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
DEPENDS_TOKEN = re.compile(r"[A-Za-z0-9_.-]+")


def check_references(
    workflow: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """Every dangling reference of a Workflow, WorkflowTemplate or CronWorkflow (as data), one
    message each; empty when there is none.

    Checked: the entrypoint and onExit name templates, and the entrypoint's inputs get a value
    from the workflow's arguments; every task's (and step's) `template` names a template of the
    same object, every `templateRef` a template of a WorkflowTemplate in `templates` (by name);
    `dependencies` and `depends` name tasks of the same DAG, with known task results, and form no
    cycle; every argument names an input of the template it calls, and every input without a
    default gets one; every `{{inputs.parameters.x}}`, `{{inputs.artifacts.x}}`,
    `{{tasks.t.outputs.…}}` (t an ancestor of the task in the same DAG, whose template declares
    that output), `{{steps.s.outputs.…}}` (s in an earlier group), `{{workflow.parameters.x}}`
    and `{{workflow.<variable>}}` exists. Anything else between `{{` and `}}` is reported too: Argo
    would substitute it, or fail on it.
    """
    known = templates or {}
    kind = workflow.get("kind", "Workflow")
    spec = workflow.get("spec", {})
    if kind == "CronWorkflow":
        spec = spec.get("workflowSpec", {})
    meta = workflow.get("metadata", {})
    where = f"{kind} {meta.get('name') or meta.get('generateName') or '?'}"
    problems: list[str] = []
    listed: list[Mapping[str, Any]] = spec.get("templates", [])
    own = {t.get("name", ""): t for t in listed}
    if len(own) != len(listed):
        problems.append(f"{where}: two templates share a name")
    arguments = {p["name"] for p in spec.get("arguments", {}).get("parameters", [])}
    entrypoint = spec.get("entrypoint")
    if "workflowTemplateRef" in spec:
        ref = spec["workflowTemplateRef"].get("name")
        if ref not in known:
            problems.append(f"{where}: workflowTemplateRef names {ref!r}, no WorkflowTemplate")
        else:
            arguments |= {
                p["name"]
                for p in known[ref].get("spec", {}).get("arguments", {}).get("parameters", [])
            }
    elif entrypoint is None and kind in ("WorkflowTemplate", "ClusterWorkflowTemplate"):
        pass  # a library of templates, used by templateRef only
    elif entrypoint not in own:
        problems.append(f"{where}: entrypoint {entrypoint!r} is not a template")
    elif kind in ("Workflow", "CronWorkflow"):
        # a WorkflowTemplate's entrypoint may take its inputs from `argo submit -p`
        for parameter in own[entrypoint].get("inputs", {}).get("parameters", []):
            if parameter["name"] not in arguments and not _has_value(parameter):
                problems.append(
                    f"{where}: entrypoint input {parameter['name']!r} gets no value: "
                    "no workflow argument names it"
                )
    on_exit = spec.get("onExit")
    if on_exit is not None and on_exit not in own:
        problems.append(f"{where}: onExit {on_exit!r} is not a template")
    rest = {k: v for k, v in spec.items() if k != "templates"}
    problems.extend(_strings_problems(where, rest, _Scope(arguments=arguments)))
    for template in listed:
        problems.extend(_template_problems(where, template, own, known, arguments))
    return problems


@dataclass(frozen=True, slots=True)
class _Scope:
    """What a `{{…}}` may name where it appears."""

    arguments: set[str]
    inputs: frozenset[str] = frozenset()
    artifacts: frozenset[str] = frozenset()
    tasks: Mapping[str, Mapping[str, Any] | str] | None = None
    steps: Mapping[str, Mapping[str, Any] | str] | None = None
    item: bool = False
    itself: Mapping[str, Any] | None = None
    """In the template's own `metrics`: the template, whose outputs and METRIC_VARIABLES they
    may read once it has run."""


TEMPLATE_VARIABLES = frozenset({"pod.name", "retries", "node.name", "inputs.parameters"})
"""Template-level variables Argo defines, besides inputs and outputs."""

METRIC_VARIABLES = frozenset(
    {"status", "duration", "exitCode", "resourcesDuration.cpu", "resourcesDuration.memory"}
)
"""What a template's custom metrics may read besides its inputs and outputs (Argo's
docs/variables.md, "Metrics")."""


def _has_value(parameter: Mapping[str, Any]) -> bool:
    return any(k in parameter for k in ("value", "default", "valueFrom"))


def _template_problems(
    where: str,
    template: Mapping[str, Any],
    own: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]],
    arguments: set[str],
) -> list[str]:
    at = f"{where}, template {template.get('name')}"
    problems: list[str] = []
    inputs = template.get("inputs", {})
    scope = _Scope(
        arguments=arguments,
        inputs=frozenset(p["name"] for p in inputs.get("parameters", [])),
        artifacts=frozenset(a["name"] for a in inputs.get("artifacts", [])),
    )
    tasks: list[Mapping[str, Any]] = template.get("dag", {}).get("tasks", [])
    by_name = {t.get("name", ""): t for t in tasks}
    if len(by_name) != len(tasks):
        problems.append(f"{at}: two tasks share a name")
    if any("depends" in t for t in tasks):
        # Argo's validator (and the v4 CRDs' CEL rule) refuses the pair
        for task in tasks:
            if "continueOn" in task:
                problems.append(
                    f"{at}, task {task.get('name')}: continueOn in a DAG that uses depends; "
                    "use '<task>.Failed' in depends instead"
                )
    for task in tasks:
        deps, found = _dependencies(task)
        for message in found:
            problems.append(f"{at}, task {task.get('name')}: {message}")
        for dep in sorted(deps - set(by_name)):
            problems.append(
                f"{at}, task {task.get('name')}: depends on {dep!r}, no task of this DAG"
            )
    called = {name: _called(task, own, known) for name, task in by_name.items()}
    for name, task in by_name.items():
        ancestors = _ancestors(name, by_name)
        if name in ancestors:
            problems.append(f"{at}, task {name}: its dependencies form a cycle")
        visible = {t: called[t] for t in ancestors if t in called}
        problems.extend(
            _invocation_problems(f"{at}, task {name}", task, called[name], scope, tasks=visible)
        )
    groups: list[list[Mapping[str, Any]]] = template.get("steps", [])
    earlier: dict[str, Mapping[str, Any] | str] = {}
    for group in groups:
        current = {step.get("name", ""): _called(step, own, known) for step in group}
        for step in group:
            name = step.get("name", "")
            problems.extend(
                _invocation_problems(
                    f"{at}, step {name}", step, current[name], scope, steps=dict(earlier)
                )
            )
        earlier.update(current)
    # the template's own fields: its outputs may read any of its tasks or steps
    rest = {k: v for k, v in template.items() if k not in ("name", "dag", "steps", "metrics")}
    if "metrics" in template:
        problems.extend(
            _strings_problems(
                f"{at}, metrics",
                template["metrics"],
                _Scope(
                    arguments=arguments,
                    inputs=scope.inputs,
                    artifacts=scope.artifacts,
                    itself=template,
                ),
            )
        )
    problems.extend(
        _strings_problems(
            at,
            rest,
            _Scope(
                arguments=arguments,
                inputs=scope.inputs,
                artifacts=scope.artifacts,
                tasks=called,
                steps=earlier,
            ),
        )
    )
    return problems


def _ancestors(name: str, by_name: Mapping[str, Mapping[str, Any]]) -> set[str]:
    seen: set[str] = set()
    stack = list(_dependencies(by_name[name])[0])
    while stack:
        dep = stack.pop()
        if dep in seen or dep not in by_name:
            continue
        seen.add(dep)
        stack.extend(_dependencies(by_name[dep])[0])
    return seen


def _invocation_problems(
    at: str,
    node: Mapping[str, Any],
    called: Mapping[str, Any] | str,
    scope: _Scope,
    *,
    tasks: Mapping[str, Mapping[str, Any] | str] | None = None,
    steps: Mapping[str, Mapping[str, Any] | str] | None = None,
) -> list[str]:
    """A DAG task or a step: the template it calls, its arguments, its references."""
    problems = (
        [f"{at}: {called}"] if isinstance(called, str) else _argument_problems(at, node, called)
    )
    body = {k: v for k, v in node.items() if k not in ("name", "dependencies", "depends")}
    item = any(k in node for k in ("withItems", "withParam", "withSequence"))
    inner = _Scope(
        arguments=scope.arguments,
        inputs=scope.inputs,
        artifacts=scope.artifacts,
        tasks=tasks,
        steps=steps,
        item=item,
    )
    problems.extend(_strings_problems(at, body, inner))
    return problems


def _dependencies(task: Mapping[str, Any]) -> tuple[set[str], list[str]]:
    names = set(task.get("dependencies", []))
    problems = []
    depends = task.get("depends")
    if depends:
        text = depends.replace("&&", " ").replace("||", " ").replace("!", " ")
        text = text.replace("(", " ").replace(")", " ")
        for token in DEPENDS_TOKEN.findall(text):
            head, _, result = token.partition(".")
            if result and result not in TASK_RESULTS:
                problems.append(f"depends on {token!r}: {result!r} is not a task result")
            names.add(head)
    return names, problems


def _called(
    task: Mapping[str, Any],
    own: Mapping[str, Mapping[str, Any]],
    known: Mapping[str, Mapping[str, Any]],
) -> Mapping[str, Any] | str:
    """The template a task runs, or why it cannot be found."""
    if "template" in task:
        found = own.get(task["template"])
        return found if found is not None else f"template {task['template']!r} does not exist"
    ref = task.get("templateRef")
    if ref is not None:
        target = known.get(ref.get("name", ""))
        if target is None:
            return f"templateRef names WorkflowTemplate {ref.get('name')!r}, which is not among those checked with it"
        candidates: list[Mapping[str, Any]] = target.get("spec", {}).get("templates", [])
        for candidate in candidates:
            if candidate.get("name") == ref.get("template"):
                return candidate
        return f"templateRef names template {ref.get('template')!r}, not in WorkflowTemplate {ref.get('name')!r}"
    inline: Mapping[str, Any] | None = task.get("inline")
    return inline if inline is not None else "names no template"


def _argument_problems(at: str, task: Mapping[str, Any], called: Mapping[str, Any]) -> list[str]:
    problems = []
    wanted = {p["name"]: p for p in called.get("inputs", {}).get("parameters", [])}
    given = {p["name"] for p in task.get("arguments", {}).get("parameters", [])}
    for name in sorted(given - set(wanted)):
        problems.append(
            f"{at}: passes parameter {name!r}, which template {called.get('name')} has no input for"
        )
    for name in sorted(set(wanted) - given):
        if not _has_value(wanted[name]):
            problems.append(
                f"{at}: leaves input {name!r} of template {called.get('name')} without a value"
            )
    return problems


def _declared_outputs(template: Mapping[str, Any]) -> tuple[set[str], set[str], bool]:
    outputs = template.get("outputs", {})
    parameters = {p["name"] for p in outputs.get("parameters", [])}
    artifacts = {a["name"] for a in outputs.get("artifacts", [])}
    has_result = any(k in template for k in ("container", "script", "containerSet"))
    return parameters, artifacts, has_result


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _strings_problems(at: str, value: Any, scope: _Scope) -> list[str]:
    problems = []
    for text in _strings(value):
        for match in EXPRESSION.finditer(text):
            expression = match.group(1).strip()
            message = _reference_problem(expression, scope)
            if message is not None:
                problems.append(f"{at}: {{{{{expression}}}}} {message}")
    return problems


def _reference_problem(expression: str, scope: _Scope) -> str | None:
    if expression.startswith("="):
        return "is an expression, which this check cannot follow"
    if expression in TEMPLATE_VARIABLES:
        return None
    parts = expression.split(".")
    head = parts[0]
    if scope.itself is not None and (expression in METRIC_VARIABLES or head == "outputs"):
        return None if expression in METRIC_VARIABLES else _output_problem(parts, scope.itself)
    if head == "item":
        return None if scope.item else "is used by a task or step with no withItems or withParam"
    if parts[:2] == ["inputs", "parameters"] and len(parts) == 3:
        return None if parts[2] in scope.inputs else "names no input parameter of this template"
    if parts[:2] == ["inputs", "artifacts"] and len(parts) >= 3:
        return None if parts[2] in scope.artifacts else "names no input artifact of this template"
    if parts[:2] == ["workflow", "parameters"] and len(parts) == 3:
        return None if parts[2] in scope.arguments else "names no workflow parameter"
    if head == "workflow" and len(parts) == 2:
        return None if parts[1] in WORKFLOW_GLOBALS else "is not an Argo workflow variable"
    if head in ("tasks", "steps") and len(parts) >= 3:
        visible = scope.tasks if head == "tasks" else scope.steps
        if visible is None or parts[1] not in visible:
            where = "task this one depends on" if head == "tasks" else "step of an earlier group"
            return f"names no {where} (in the same template)"
        return _output_problem(parts[2:], visible[parts[1]])
    return "is not a reference this check knows"


def _output_problem(parts: list[str], called: Mapping[str, Any] | str) -> str | None:
    if isinstance(called, str):
        return None  # reported with the task itself
    if parts in (["status"], ["startedAt"], ["finishedAt"], ["id"], ["ip"], ["exitCode"]):
        return None
    parameters, artifacts, has_result = _declared_outputs(called)
    if parts == ["outputs", "result"]:
        return None if has_result else "reads the result of a template that runs no container"
    if parts == ["outputs", "parameters"]:  # all of them, as JSON (for withParam)
        return None if parameters else "reads the output parameters of a template that has none"
    if parts[:2] == ["outputs", "parameters"] and len(parts) == 3:
        return None if parts[2] in parameters else "names no output parameter of its template"
    if parts[:2] == ["outputs", "artifacts"] and len(parts) == 3:
        return None if parts[2] in artifacts else "names no output artifact of its template"
    return "is not an output Argo knows"
