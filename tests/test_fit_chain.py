"""fit's admission chain, one hand-written job per step it can refuse at
(tests/fit_chain/expected.yaml says what each step must answer, from upstream source and the
rendered objects' own text), and the fix each refusal names, applied: with it the step passes.

Also the chain's mechanics: the order of the steps, a refusal that does not end the answer
(Kueue's answer for the job as if changed stays), and the text and JSON forms of both."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.admission import chain
from renderer.admission.apiserver.gate import Outcome, Refusal, Request, Step
from renderer.cli import main
from tests.conftest import APPWRAPPER, REPO, copy_inputs, submits

CASES = REPO / "tests" / "fit_chain"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((CASES / "expected.yaml").read_text())


def _edit(obj: Any, edit: list[Any]) -> None:
    path, *value = edit
    *parents, last = path
    node = obj
    for key in parents:
        node = node[key]
    if value:
        node[last] = value[0]
    elif isinstance(node, list):
        del node[last]
    else:
        node.pop(last)


def _job(case: dict[str, Any], extra: list[Any] = ()) -> list[dict[str, Any]]:
    source = CASES / (case.get("file") or case["base"])
    documents = [d for d in yaml.safe_load_all(source.read_text()) if d]
    for edit in [*case.get("edits", []), *extra]:
        _edit(documents[0], edit)
    return documents


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example platform, team vision submitting AppWrappers in vision-train: prod-east
    declares AppWrapper (expected.yaml's header says why)."""
    target = copy_inputs(REPO, tmp_path_factory.mktemp("platform"))
    return submits(target, "vision-train", ("AppWrapper",), APPWRAPPER)


def fit_json(
    root: Path, tmp_path: Path, documents: list[dict[str, Any]], name: str
) -> dict[str, Any]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    result = CliRunner().invoke(main, ["-C", str(root), "fit", str(path), "--format", "json"])
    answer = json.loads(result.stdout)
    first = documents[0]
    identity = {"kind": first["kind"], "name": first["metadata"]["name"]}
    mine = [w for w in answer["workloads"] if {k: w["workload"][k] for k in identity} == identity]
    others = [w for w in answer["workloads"] if w not in mine]
    assert all(not _refusals(w) for w in others), others  # the case trips one object only
    workload = mine[0] if mine else {"chain": [], "verdict": answer["verdict"]}
    workload["exit"] = result.exit_code
    return dict(workload)


def _refusals(workload: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(step["step"], r) for step in workload["chain"] for r in step["refusals"]]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_step_refuses_as_upstream_words_it(name: str, root: Path, tmp_path: Path) -> None:
    case = EXPECTED[name]
    workload = fit_json(root, tmp_path, _job(case), name)
    refusals = _refusals(workload)
    if "step" not in case:  # the job that meets every step
        assert refusals == [] and workload["verdict"] == case["verdict"], workload["chain"]
        assert workload["exit"] == 0
        return
    assert [step for step, _ in refusals] == [case["step"]], refusals
    (_, refusal), *_ = refusals
    assert case["message"] in refusal["message"], refusal["message"]
    if "source" in case:
        assert refusal["source"] == case["source"]
    assert refusal["atPods"] == case.get("atPods", False)
    assert refusal["fix"].strip()
    assert (workload["verdict"], workload["exit"]) == ("never", 1)
    if "kueue" in case:
        assert workload["kueueVerdict"] == case["kueue"]


@pytest.mark.parametrize("name", sorted(n for n, c in EXPECTED.items() if "fixed" in c))
def test_the_fix_a_refusal_names_makes_its_step_pass(name: str, root: Path, tmp_path: Path) -> None:
    case = EXPECTED[name]
    workload = fit_json(root, tmp_path, _job(case, case["fixed"]), f"{name}-fixed")
    assert _refusals(workload) == [], workload["chain"]
    assert workload["verdict"] == workload.get("kueueVerdict", workload["verdict"])
    assert workload["exit"] == 0


# --- the mechanics -------------------------------------------------------------------------------


def _refusing(step: Step, fixed: dict[str, Any] | None) -> chain.Gate:
    def gate(request: Request) -> Outcome:
        refusal = Refusal(f"test {step.value}", f"refused at {step.value}", "change it")
        return Outcome(step, "refused", (refusal,), ("changed",), fixed)

    return gate


def _recording(seen: list[Any]) -> chain.Gate:
    def gate(request: Request) -> Outcome:
        seen.append(copy.deepcopy(dict(request.obj)))
        return Outcome(Step.POLICIES, "passed")

    return gate


def test_a_refusing_step_hands_on_the_object_as_if_changed() -> None:
    seen: list[Any] = []
    gates = [
        (Step.RBAC, _refusing(Step.RBAC, {"kind": "Job", "changed": True})),
        (Step.POLICIES, _recording(seen)),
    ]
    cluster = chain.RenderedCluster("c", "1.33")
    run = chain.run({"kind": "Job"}, "ns", cluster, chain.UserInfo("u"), gates)
    assert run.refused and seen == [{"kind": "Job", "changed": True}]
    assert run.obj == {"kind": "Job", "changed": True}
    assert [o.step for o in run.outcomes] == [Step.RBAC, Step.POLICIES]


def test_the_gates_run_in_the_api_servers_order() -> None:
    steps = [step for step, _ in chain.gates()]
    assert steps == [s for s in chain.ORDER if s in steps]
    assert steps[:3] == [Step.DISCOVERY, Step.RBAC, Step.DECODE]
    assert steps.index(Step.MUTATE) < steps.index(Step.POD_SECURITY) < steps.index(Step.POLICIES)


def test_a_refusal_does_not_end_the_answer_in_text(tmp_path: Path) -> None:
    documents = _job(EXPECTED["policy-ttl"])
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    result = CliRunner().invoke(main, ["-C", str(REPO), "fit", str(path)])
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first.endswith(
        "never: refused before Kueue (admission-policies); as if changed, "
        "Kueue: fits: admitted within team vision's nominal quota (Cohort "
        "vision) on h100-train"
    ), first
    assert "  admission-policies: refused by ValidatingAdmissionPolicy 'gpuplane-ttl-jobs'" in (
        result.stdout
    )
    assert "    fix: set spec.ttlSecondsAfterFinished: 86400" in result.stdout
    assert "pod sets:" in result.stdout and "-> h100-train" in result.stdout
