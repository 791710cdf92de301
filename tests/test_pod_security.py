"""The chain's Pod Security step (`renderer.admission.apiserver.pod_security`) against
k8s.io/pod-security-admission v0.36.2 (Kubernetes v1.36.2).

- `pod_security_cases.yaml` holds upstream's own test tables as data (`policy/check_*_test.go`,
  `api/helpers_test.go`): each check's reason and detail as upstream's tests expect them.
- Upstream's pass/fail fixtures (`test/testdata/<level>/<version>/{pass,fail}/*.yaml`, 4,241
  pods) are read from `../shared/reference/pod-security-admission/testdata` or `$PSA_TESTDATA`,
  where present; the repository holds none of them.
- The gate runs against the namespaces gpuplane renders for the example (`rendered_cluster`),
  and on every file of `../shared/reference/workloads*/` with a pod template, with a handful of
  expectations written by reading the manifests.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.admission.apiserver import pod_security
from renderer.admission.apiserver.gate import RenderedCluster, Request, Step, UserInfo
from renderer.admission.apiserver.podsecurity import api, fixes, registry
from renderer.admission.apiserver.podsecurity.checks import CheckPod
from renderer.admission.rendered import rendered_cluster
from renderer.pipeline import load_platform
from tests.conftest import example_at_kubernetes

REPO = Path(__file__).resolve().parents[1]
CASES = yaml.safe_load((REPO / "tests" / "pod_security_cases.yaml").read_text(encoding="utf-8"))
REFERENCE = REPO.parent / "shared" / "reference"
UPSTREAM_TESTDATA = Path(
    os.environ.get("PSA_TESTDATA", REFERENCE / "pod-security-admission" / "testdata")
)
"""pod-security-admission's `test/testdata` at v0.36.2 (`git archive v0.36.2 test/testdata`);
`PSA_TESTDATA` names another place for it."""
USER = UserInfo("alice", ("team-llm",))


# --- upstream's check tables ------------------------------------------------------------------


def check_function(check_id: str, version: str) -> CheckPod:
    """The function a check registers for `version` (the newest entry not newer than it)."""
    wanted = api.parse_version(version)[0]
    (check,) = [c for c in registry.DEFAULT_CHECKS if c.id == check_id]
    entries = [e for e in check.versions if not wanted.older(e.minimum)]
    return entries[-1].check_pod


def _case_id(case: Mapping[str, Any]) -> str:
    return f"{case['check']}@{case['version']}:{case['name']}"


@pytest.mark.parametrize("case", CASES["checks"], ids=_case_id)
def test_a_check_words_its_result_as_upstream(case: Mapping[str, Any]) -> None:
    pod = case["pod"]
    result = check_function(case["check"], case["version"])(
        pod.get("metadata") or {}, pod.get("spec") or {}
    )
    assert result.allowed == bool(case.get("allowed", False))
    assert (result.reason, result.detail) == (case.get("reason", ""), case.get("detail", ""))


@pytest.mark.parametrize("case", [c for c in CASES["checks"] if not c.get("allowed")], ids=_case_id)
def test_the_fix_of_a_check_makes_it_pass(case: Mapping[str, Any]) -> None:
    """The fix each refusal carries, applied: a mechanical fix makes the check pass; the
    others say what to do and leave the pod as it was."""
    meta = copy.deepcopy(case["pod"].get("metadata") or {})
    spec = copy.deepcopy(case["pod"].get("spec") or {})
    before = copy.deepcopy((meta, spec))
    done = fixes.mend(case["check"], meta, spec, api.parse_version(case["version"])[0])
    assert done.says and all(done.says)
    check = check_function(case["check"], case["version"])
    if done.mechanical:
        assert check(meta, spec).allowed, done.says
    else:
        assert (meta, spec) == before


@pytest.mark.parametrize("case", CASES["emulation"]["cases"], ids=str)
def test_the_emulated_version_caps_latest(case: Mapping[str, Any]) -> None:
    """`TestHostProbesAndHostLifecycleEmulation`: an API server emulating 1.33 does not run
    the probe-host check of 1.34, not even for `latest` or `v1.34`."""
    pod = CASES["emulation"]["pod"]
    emulation = api.parse_version(case["emulation"])[0] if case["emulation"] else None
    lv = api.LevelVersion(api.Level.BASELINE, api.parse_version(case["version"])[0])
    assert registry.evaluate(lv, {}, pod["spec"], emulation).allowed == case["allowed"]


def test_versions_parse_as_upstream() -> None:
    for text, expected in CASES["parse_version"]["valid"].items():
        assert api.parse_version(text) == (api.parse_version(expected)[0], None)
        assert str(api.parse_version(text)[0]) == expected
    for text in CASES["parse_version"]["invalid"]:
        version, error = api.parse_version(text)
        assert (version, error) == (api.LATEST, 'must be "latest" or "v1.x"')


@pytest.mark.parametrize("case", CASES["policy_to_evaluate"], ids=lambda c: c["desc"])
def test_namespace_labels_choose_the_policy_as_upstream(case: Mapping[str, Any]) -> None:
    labels = {"other-label": "foo-bar"}
    labels.update({api.LABEL_PREFIX + k: v for k, v in case["labels"].items()})
    policy, errors = api.policy_to_evaluate(labels)
    assert {
        "enforce": str(policy.enforce),
        "warn": str(policy.warn),
        "audit": str(policy.audit),
    } == case["expect"]
    assert bool(errors) == case.get("error", False)


def test_the_registered_checks_are_valid() -> None:
    """`TestValidChecks`: the registrations keep upstream's rules, and every override names
    a check that exists."""
    assert registry.validate_checks(registry.DEFAULT_CHECKS) == []
    ids = {c.id for c in registry.DEFAULT_CHECKS}
    overrides = {o for c in registry.DEFAULT_CHECKS for v in c.versions for o in v.overrides}
    assert overrides <= ids


def test_restricted_runs_baseline_checks_first_each_family_by_id() -> None:
    """`populate`: baseline IDs sorted, then restricted IDs sorted; a restricted check that
    overrides a baseline one (capabilities, volumes, seccomp, procMount) replaces it."""
    checks = [i for i, _ in registry.default_registry().restricted[api.v1(35)]]
    assert checks == [
        "appArmorProfile",
        "hostNamespaces",
        "hostPorts",
        "hostProbesAndHostLifecycle",
        "privileged",
        "seLinuxOptions",
        "sysctls",
        "windowsHostProcess",
        "allowPrivilegeEscalation",
        "capabilities_restricted",
        "procMount_restricted",
        "restrictedVolumes",
        "runAsNonRoot",
        "runAsUser",
        "seccompProfile_restricted",
    ]
    # before 1.19 seccomp was the baseline annotations check; before 1.22 capabilities too
    v18 = [i for i, _ in registry.default_registry().restricted[api.v1(18)]]
    assert "seccompProfile_baseline" in v18 and "capabilities_baseline" in v18


# --- upstream's pass/fail fixtures (beside the checkout) --------------------------------------

FIXTURE_SUBSTRING = {
    "apparmorprofile": "forbidden AppArmor profile",
    "capabilities_baseline": "capabilities",
    "capabilities_restricted": "unrestricted capabilities",
    "hostnamespaces": "host namespaces",
    "hostpathvolumes": "hostPath",
    "hostports": "hostPort",
    "hostprobesandhostlifecycle": "probe or lifecycle host",
    "procmount": "procMount",
    "procmount_restricted": "procMount",
    "restrictedvolumes": "restricted volume types",
    "selinuxoptions": "seLinuxOptions",
    "seccompprofile_baseline": "seccompProfile",
    "seccompprofile_restricted": "seccompProfile",
    "sysctls": "forbidden sysctl",
    "windowshostprocess": "hostProcess",
}
"""`test/fixtures_*.go` `expectErrorSubstring`; the other fixtures expect their check ID."""


@pytest.mark.skipif(
    not UPSTREAM_TESTDATA.is_dir(), reason="upstream testdata not beside the checkout"
)
def test_upstream_fixtures_pass_and_fail_as_upstream() -> None:
    """Every `pass` pod is admitted and every `fail` pod refused at its level and version,
    after the API server's defaulting (a source-less volume is an emptyDir); a refusal names
    what the fixture expects; where every fix is mechanical, the fixed pod is admitted."""
    wrong = []
    for path in sorted(UPSTREAM_TESTDATA.glob("*/v1.*/*/*.yaml")):
        level, version, outcome = path.parts[-4:-1]
        pod = yaml.safe_load(path.read_text(encoding="utf-8"))
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        lv = api.LevelVersion(api.Level(level), api.parse_version(version)[0])
        result = registry.evaluate(lv, meta, pod_security.defaulted(spec, is_pod=True))
        if result.allowed != (outcome == "pass"):
            wrong.append(f"{path}: {result.forbidden_detail()}")
        if outcome == "fail":
            check = re.sub(r"\d+$", "", path.stem)
            if FIXTURE_SUBSTRING.get(check, check).lower() not in result.forbidden_detail().lower():
                wrong.append(f"{path}: does not name {check}")
            if _fixed(lv, meta, spec, result) is False:
                wrong.append(f"{path}: still refused after its fixes")
    assert wrong == []


def _fixed(lv: api.LevelVersion, meta: Any, spec: Any, result: Any) -> bool | None:
    meta, spec = copy.deepcopy(meta), copy.deepcopy(spec)
    version = registry.effective_version(lv.version)
    done = [fixes.mend(c, meta, spec, version) for c in result.checks]
    if not all(d.mechanical for d in done):
        return None
    return registry.evaluate(lv, meta, pod_security.defaulted(spec, is_pod=True)).allowed


# --- the gate on the rendered example ---------------------------------------------------------


@cache
def _platform(root: Path = REPO) -> Any:
    return load_platform(root).platform


@cache
def example_cluster(name: str = "prod-east") -> RenderedCluster:
    platform = _platform()
    return rendered_cluster(platform, platform.clusters[name])


def namespace(cluster: RenderedCluster, name: str) -> Mapping[str, Any]:
    found = cluster.named("Namespace", name)
    assert found is not None, name
    return found


def labels_of(cluster: RenderedCluster, name: str) -> Mapping[str, str]:
    return namespace(cluster, name)["metadata"]["labels"]


def run(obj: Mapping[str, Any], ns: str, cluster: RenderedCluster | None = None) -> Any:
    return pod_security.gate(Request(obj, ns, USER, cluster or example_cluster()))


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "main", "image": "busybox"}])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def job(name: str = "train", **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "main", "image": "busybox"}])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": spec}},
    }


BARE_RESTRICTED = (
    'allowPrivilegeEscalation != false (container "main" must set '
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
    '"main" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
    'container "main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
    'container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)
"""A container with no securityContext at restricted: the four restricted checks it fails,
in registry order, each worded by its check (tables above)."""


def test_the_levels_are_read_from_the_rendered_namespaces() -> None:
    """Each rendered Namespace's own labels decide: a bare pod is refused exactly where the
    rendered enforce label says restricted, with the rendered enforce-version in the message."""
    cluster = example_cluster()
    namespaces = cluster.of_kind("Namespace", "")
    levels = set()
    for ns in namespaces:
        labels = ns["metadata"]["labels"]
        if api.ENFORCE_LEVEL_LABEL not in labels:
            continue
        name = ns["metadata"]["name"]
        enforce = f"{labels[api.ENFORCE_LEVEL_LABEL]}:{labels[api.ENFORCE_VERSION_LABEL]}"
        levels.add(labels[api.ENFORCE_LEVEL_LABEL])
        outcome = run(pod(), name)
        if labels[api.ENFORCE_LEVEL_LABEL] == "restricted":
            assert [r.message for r in outcome.refusals] == [
                f'pods "p" is forbidden: violates PodSecurity "{enforce}": {BARE_RESTRICTED}'
            ]
        else:
            assert outcome.status == "passed", name
    assert {"baseline", "restricted"} <= levels


def test_a_relabelled_namespace_changes_the_answer() -> None:
    """The gate has no level of its own: relabel the rendered llm-serve to privileged (and
    its warn to baseline) and the same pod passes, with baseline's warning if any."""
    cluster = example_cluster()
    objects = []
    for obj in cluster.objects:
        if obj.get("kind") == "Namespace" and obj["metadata"]["name"] == "llm-serve":
            obj = copy.deepcopy(obj)
            obj["metadata"]["labels"][api.ENFORCE_LEVEL_LABEL] = "privileged"
            obj["metadata"]["labels"][api.WARN_LEVEL_LABEL] = "baseline"
        objects.append(obj)
    relabelled = dataclasses.replace(cluster, objects=tuple(objects))
    outcome = run(pod(hostPID=True), "llm-serve", relabelled)
    assert outcome.status == "passed"
    assert outcome.notes == (
        'would violate PodSecurity "baseline:v1.33": host namespaces (hostPID=true)',
    )
    assert run(pod(hostPID=True), "llm-serve").refused


def test_a_pod_enforce_admits_gets_the_warn_level_warning() -> None:
    assert labels_of(example_cluster(), "llm-train")[api.ENFORCE_LEVEL_LABEL] == "baseline"
    outcome = run(pod(), "llm-train")
    assert (outcome.status, outcome.refusals) == ("passed", ())
    assert outcome.notes == (f'would violate PodSecurity "restricted:v1.33": {BARE_RESTRICTED}',)


def test_a_job_is_warned_about_and_its_pods_are_refused() -> None:
    """`ValidatePodController` only warns on the Job; the Job controller's pods
    (`<job>-<random>`) meet enforce."""
    outcome = run(job(), "llm-serve")
    assert outcome.notes == (f'would violate PodSecurity "restricted:v1.33": {BARE_RESTRICTED}',)
    (refusal,) = outcome.refusals
    assert refusal.at_pods
    assert refusal.source == 'PodSecurity "restricted:v1.33"'
    assert refusal.message == (
        f'pods "train-<random>" is forbidden: violates PodSecurity "restricted:v1.33": '
        f"{BARE_RESTRICTED}"
    )
    assert 'set securityContext.allowPrivilegeEscalation: false on container "main"' in refusal.fix
    assert "set securityContext.runAsNonRoot: true on the pod" in refusal.fix
    # the team's training and notebook namespaces enforce baseline, which admits these pods
    assert "or create it in namespace llm-notebooks (enforce baseline:v1.33) or llm-train" in (
        refusal.fix
    )


def test_the_fixed_job_passes_the_gate() -> None:
    """The chain goes on with the object the fix describes: run again, it passes, warning-free."""
    outcome = run(job(), "llm-serve")
    assert outcome.obj is not None and outcome.changes
    again = run(outcome.obj, "llm-serve")
    assert (again.status, again.notes) == ("passed", ())
    assert outcome.obj["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_a_volume_fix_is_said_not_made() -> None:
    spec = {"volumes": [{"name": "data", "hostPath": {"path": "/data"}}]}
    outcome = run(job(**spec), "llm-train")
    (refusal,) = outcome.refusals
    assert refusal.message == (
        'pods "train-<random>" is forbidden: violates PodSecurity "baseline:v1.33": '
        'hostPath volumes (volume "data")'
    )
    assert 'replace the hostPath volume "data"' in refusal.fix
    assert outcome.obj is None and outcome.changes == ()


def test_host_ports_are_defaulted_on_pods_not_on_templates() -> None:
    """`SetDefaults_Pod`: a hostNetwork pod's ports get hostPort = containerPort; a pod
    template's do not (since 1.28). The Deployment's warning has no hostPort, its pods' refusal has."""
    container = {"name": "c", "image": "busybox", "ports": [{"containerPort": 8080}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"hostNetwork": True, "containers": [container]}}},
    }
    outcome = run(deployment, "llm-train")
    (refusal,) = outcome.refusals
    assert refusal.message == (
        'pods "web-<pod-template-hash>-<random>" is forbidden: violates PodSecurity '
        '"baseline:v1.33": host namespaces (hostNetwork=true), hostPort (container "c" uses '
        "hostPort 8080)"
    )
    assert "hostPort" not in outcome.notes[0].split("), ")[0]
    assert outcome.notes[0].startswith(
        'would violate PodSecurity "restricted:v1.33": host namespaces (hostNetwork=true), '
        "allowPrivilegeEscalation"
    )


def test_a_kind_psa_does_not_extract_is_refused_at_its_pods_only() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {
            "replicatedJobs": [
                {"name": rj, "template": {"spec": {"template": job()["spec"]["template"]}}}
                for rj in ("driver", "workers")
            ]
        },
    }
    outcome = run(jobset, "llm-serve")
    assert outcome.notes == ()  # JobSet is not in DefaultPodSpecExtractor: no warning on create
    assert [(r.at_pods, r.message.split(" is forbidden")[0]) for r in outcome.refusals] == [
        (True, 'pods "<driver pod of JobSet js>"'),
        (True, 'pods "<workers pod of JobSet js>"'),
    ]
    assert run(outcome.obj, "llm-serve").status == "passed"


def test_pods_gpuplane_cannot_see_are_a_note() -> None:
    vcjob = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"}}
    outcome = run(vcjob, "llm-serve")
    assert outcome.status == "passed" and outcome.refusals == ()
    assert outcome.notes and "not checked here" in outcome.notes[0]


def test_a_pod_template_makes_no_pods() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t"},
        "template": {"spec": {"containers": [{"name": "main"}]}},
    }
    outcome = run(template, "llm-serve")
    assert outcome.status == "passed"
    assert outcome.notes[0].startswith('would violate PodSecurity "restricted:v1.33"')


def test_controller_pod_names() -> None:
    """`pkg/controller/*`: StatefulSet `<name>-<ordinal>`, Indexed Job `<job>-<index>-`,
    CronJob's Jobs `<cronjob>-<scheduled minute>`, ReplicaSet and DaemonSet `<name>-`, and a
    generateName cut to 58 characters (`SimpleNameGenerator`)."""
    template = {"spec": {"containers": [{"name": "main"}]}}

    def first_pod(kind: str, api_version: str, spec: dict[str, Any], name: str = "x") -> str:
        obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec}
        (found,), _ = pod_security.templates(obj)
        return found.pod_name

    assert first_pod("StatefulSet", "apps/v1", {"template": template}) == "x-0"
    assert (
        first_pod("StatefulSet", "apps/v1", {"template": template, "ordinals": {"start": 5}})
        == "x-5"
    )
    indexed = {"template": template, "completionMode": "Indexed"}
    assert first_pod("Job", "batch/v1", indexed) == "x-0-<random>"
    cron = {"jobTemplate": {"spec": {"template": template}}}
    assert first_pod("CronJob", "batch/v1", cron) == "x-<scheduled-minute>-<random>"
    assert first_pod("ReplicaSet", "apps/v1", {"template": template}) == "x-<random>"
    assert first_pod("DaemonSet", "apps/v1", {"template": template}) == "x-<random>"
    long = "a" * 60
    assert first_pod("Job", "batch/v1", {"template": template}, long) == "a" * 58 + "<random>"
    generated = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "w-"}}
    assert pod_security.templates(generated)[0][0].pod_name == "w-<random>"


def test_a_namespace_gpuplane_does_not_render_is_skipped() -> None:
    outcome = run(pod(), "kube-system")
    assert (outcome.step, outcome.status) == (Step.POD_SECURITY, "skipped")


def test_nothing_is_exempt() -> None:
    """gpuplane renders no PodSecurityConfiguration: no namespace, user or runtime class is
    exempt (`exemptNamespace`, `exemptUser`, `exemptRuntimeClass` find empty lists)."""
    kinds = {obj.get("kind") for obj in example_cluster().objects}
    assert not kinds & {"AdmissionConfiguration", "PodSecurityConfiguration"}
    assert run(pod(runtimeClassName="nvidia"), "llm-serve").refused


def test_odd_input_is_refused_or_passed_never_raised() -> None:
    odd: list[Any] = [
        {"apiVersion": "v1", "kind": "Pod"},
        {"apiVersion": "v1", "kind": "Pod", "spec": "nope"},
        pod(containers="nope", securityContext=5, volumes=[None, 3, {"name": 7}]),
        pod(containers=[None, 3, {"securityContext": {"capabilities": {"add": "ALL"}}}]),
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": []}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": None, "spec": None},
        {"apiVersion": "v1", "kind": "ReplicationController", "spec": {"template": None}},
    ]
    for obj in odd:
        for ns in ("llm-serve", "llm-train"):
            outcome = run(obj, ns)
            assert outcome.status in ("passed", "refused")


def test_the_cluster_version_caps_latest_and_newer_versions(tmp_path: Path) -> None:
    """On 1.33, `latest` and v1.36 evaluate v1.33's checks (no probe-host check, added at
    v1.34) but the message names what the namespace says; on 1.36 the check runs."""
    probe = {
        "name": "main",
        "image": "busybox",
        "livenessProbe": {"httpGet": {"host": "h", "port": 80}},
    }
    cluster = example_cluster()
    for version in ("latest", "v1.36"):
        objects = []
        for obj in cluster.objects:
            if obj.get("kind") == "Namespace" and obj["metadata"]["name"] == "llm-train":
                obj = copy.deepcopy(obj)
                obj["metadata"]["labels"][api.ENFORCE_VERSION_LABEL] = version
            objects.append(obj)
        relabelled = dataclasses.replace(cluster, objects=tuple(objects))
        assert run(pod(containers=[probe]), "llm-train", relabelled).status == "passed"
        refused = run(pod(containers=[probe], hostIPC=True), "llm-train", relabelled)
        assert (
            f'"baseline:{version}": host namespaces (hostIPC=true)' in refused.refusals[0].message
        )
    newer_root = example_at_kubernetes(tmp_path / "k136", "1.36")
    platform = load_platform(newer_root).platform
    newer = rendered_cluster(platform, platform.clusters["prod-east"])
    assert labels_of(newer, "llm-train")[api.ENFORCE_VERSION_LABEL] == "v1.36"
    (refusal,) = run(pod(containers=[probe]), "llm-train", newer).refusals
    assert refusal.message == (
        'pods "p" is forbidden: violates PodSecurity "baseline:v1.36": probe or lifecycle host '
        '(container "main" uses probe or lifecycle host "h")'
    )


# --- real manifests ---------------------------------------------------------------------------


def _documents() -> Iterator[tuple[str, Mapping[str, Any]]]:
    for path in sorted(REFERENCE.glob("workloads*/*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and pod_security.templates(document)[0]:
                yield str(path.relative_to(REFERENCE)), document


needs_reference = pytest.mark.skipif(
    not (REFERENCE / "workloads").is_dir(), reason="../shared/reference is not beside this checkout"
)
REFUSAL = re.compile(
    r'pods "[^"]*" is forbidden: violates PodSecurity "(restricted|baseline):v1\.33": \S'
)


@needs_reference
def test_every_reference_workload_meets_both_levels() -> None:
    """Each workload with a pod template, in a restricted and a baseline namespace: every
    refusal is worded as the API server words it, and the object the gate hands on (fixed
    where the fix is mechanical) passes, or is refused only for its volumes."""
    seen = 0
    for name, document in _documents():
        for ns in ("llm-serve", "llm-train"):
            outcome = run(document, ns)
            seen += 1
            for refusal in outcome.refusals:
                assert REFUSAL.match(refusal.message), (name, refusal.message)
                assert refusal.fix, name
            if outcome.obj is not None:
                again = run(outcome.obj, ns)
                left = " ".join(r.message for r in again.refusals)
                assert not again.refused or "volume" in left, (name, left)
    assert seen > 100


def _reference(path: str, kind: str) -> Mapping[str, Any]:
    for document in yaml.safe_load_all((REFERENCE / path).read_text(encoding="utf-8")):
        if isinstance(document, dict) and document.get("kind") == kind:
            return document
    raise AssertionError(f"{path} has no {kind}")


@needs_reference
def test_reference_nvidia_mps_verification_shares_the_host_pid_namespace() -> None:
    """workloads/nvidia/mps-verification.yaml: a Deployment whose template sets
    `hostPID: true` and one container `cuda-sample-vector-add` without a securityContext."""
    outcome = run(_reference("workloads/nvidia/mps-verification.yaml", "Deployment"), "llm-train")
    assert [r.message for r in outcome.refusals] == [
        'pods "mps-verification-<pod-template-hash>-<random>" is forbidden: violates '
        'PodSecurity "baseline:v1.33": host namespaces (hostPID=true)'
    ]
    c = '"cuda-sample-vector-add"'
    assert outcome.notes == (
        'would violate PodSecurity "restricted:v1.33": host namespaces (hostPID=true), '
        f"allowPrivilegeEscalation != false (container {c} must set "
        "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "
        f'{c} must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod '
        f"or container {c} must set securityContext.runAsNonRoot=true), seccompProfile (pod or "
        f'container {c} must set securityContext.seccompProfile.type to "RuntimeDefault" or '
        '"Localhost")',
    )


@needs_reference
def test_reference_rdma_pod_adds_ipc_lock() -> None:
    """workloads-2/nvidia/gpu-direct-rdma-demo-pod-1.yaml: Pod demo-pod-1, whose container
    `rdma-gpu-test-ctr` adds IPC_LOCK, a capability outside baseline's default set."""
    document = _reference("workloads-2/nvidia/gpu-direct-rdma-demo-pod-1.yaml", "Pod")
    (refusal,) = run(document, "llm-train").refusals
    assert not refusal.at_pods
    assert refusal.message == (
        'pods "demo-pod-1" is forbidden: violates PodSecurity "baseline:v1.33": non-default '
        'capabilities (container "rdma-gpu-test-ctr" must not include "IPC_LOCK" in '
        "securityContext.capabilities.add)"
    )


@needs_reference
def test_reference_gpu_operator_plugin_test_sets_only_privilege_escalation() -> None:
    """workloads/nvidia/gpu-operator-plugin-test.yaml: a Deployment whose container sets
    `allowPrivilegeEscalation: false` and nothing else: restricted's other three checks fail,
    baseline admits it."""
    document = _reference("workloads/nvidia/gpu-operator-plugin-test.yaml", "Deployment")
    c = '"nvidia-plugin-test-ctr"'
    (refusal,) = run(document, "llm-serve").refusals
    assert refusal.message == (
        'pods "nvidia-plugin-test-<pod-template-hash>-<random>" is forbidden: violates '
        f'PodSecurity "restricted:v1.33": unrestricted capabilities (container {c} must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container '
        f"{c} must set securityContext.runAsNonRoot=true), seccompProfile (pod or container {c} "
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    )
    assert run(document, "llm-train").status == "passed"


@needs_reference
def test_reference_indexed_job_and_statefulset_name_their_pods() -> None:
    """workloads-2/kubernetes-website/indexed-job.yaml (Indexed, init container `input`, then
    `worker`) and web.yaml (StatefulSet web, container nginx)."""
    indexed = _reference("workloads-2/kubernetes-website/indexed-job.yaml", "Job")
    (refusal,) = run(indexed, "llm-serve").refusals
    assert refusal.message.startswith(
        'pods "indexed-job-0-<random>" is forbidden: violates PodSecurity "restricted:v1.33": '
        'allowPrivilegeEscalation != false (containers "input", "worker" must set'
    )
    web = _reference("workloads-2/kubernetes-website/web.yaml", "StatefulSet")
    (refusal,) = run(web, "llm-serve").refusals
    assert refusal.message.startswith('pods "web-0" is forbidden: violates PodSecurity')
    assert run(web, "llm-train").status == "passed"


@needs_reference
def test_reference_init_containers_pod_is_refused_itself() -> None:
    """workloads/kubernetes-website/init-containers.yaml: Pod init-demo, container nginx and
    init container install: init containers are visited first."""
    document = _reference("workloads/kubernetes-website/init-containers.yaml", "Pod")
    (refusal,) = run(document, "llm-serve").refusals
    assert not refusal.at_pods
    assert refusal.message.startswith(
        'pods "init-demo" is forbidden: violates PodSecurity "restricted:v1.33": '
        'allowPrivilegeEscalation != false (containers "install", "nginx" must set'
    )


@needs_reference
def test_reference_jobset_is_refused_per_replicated_job() -> None:
    """workloads/jobset/paralleljobs.yaml: replicated jobs `workers` and `driver`, each one
    container `sleep` (busybox) without a securityContext."""
    document = _reference("workloads/jobset/paralleljobs.yaml", "JobSet")
    outcome = run(document, "llm-serve")
    bare = BARE_RESTRICTED.replace('"main"', '"sleep"')
    assert [r.message for r in outcome.refusals] == [
        f'pods "<workers pod of JobSet paralleljobs>" is forbidden: violates PodSecurity '
        f'"restricted:v1.33": {bare}',
        f'pods "<driver pod of JobSet paralleljobs>" is forbidden: violates PodSecurity '
        f'"restricted:v1.33": {bare}',
    ]
    assert all(r.at_pods for r in outcome.refusals) and outcome.notes == ()
    assert run(document, "llm-train").status == "passed"
