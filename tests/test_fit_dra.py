"""`gpuplane fit` on jobs that claim devices through DRA, as Kueue v0.19.2 answers them.

Kueue's Workload controller (`pkg/controller/core/workload_controller.go` `Reconcile`, feature
gate `KueueDRAIntegration`, beta and on by default since v0.18 in `pkg/features/
kube_features.go`) refuses a Workload with a standalone ResourceClaim, reads each
ResourceClaimTemplate a pod set names and counts its devices as the logical resource the
Configuration's `deviceClassMappings` maps its DeviceClass to (`pkg/dra/claims.go`
`GetResourceRequestsForResourceClaimTemplates`), per pod (`pkg/workload/workload.go`
`totalRequestsFromPodSets`). The messages below are those functions' `field.Error`s as
apimachinery v0.36 prints them (`Error`, `ErrorBody`), with controller-runtime v0.24's cache
not-found error (`pkg/cache/internal/cache_reader.go`: the kind stands in for the resource).

The platform is tests/cases/render/dra (pool `train`, DRA, 8 H100 per node; team ml's
namespace ml-train gets the claim templates `train`, one device, and `train-node`, eight), at
Kubernetes 1.36 so that the priority is set by the MutatingAdmissionPolicy.

The tests are about Kueue's DRA step, so they check Kueue's answer (`kueueVerdict`) and which
steps before it refuse the job (docs/fit.md, "The chain"). The job carries team ml's labels and
a TTL, but team ml declares no image registries (the case's teams/ml.yaml), so its image policy
`gpuplane-images-ml` refuses every job there; and a ResourceClaimTemplate of the job file is
refused at RBAC (renderer/layers/tenancy.py grants team members no ResourceClaimTemplates):
without it Kueue would find no template, so fit says so, and answers for Kueue as if an
administrator had created it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from renderer.cli import main
from tests.compliance import TTL_SECONDS
from tests.conftest import copy_inputs

CASE = Path(__file__).parent / "cases" / "render" / "dra"
IMAGES = "ValidatingAdmissionPolicy 'gpuplane-images-ml'"
"""Team ml declares no image registries: its image policy refuses every image."""
RBAC_TOO = ("RBAC", IMAGES)
"""What refuses a job file that holds its own ResourceClaimTemplate."""
LOGICAL = "train.dra.gpuplane.dev/gpu"
"""The quota resource the rendered `deviceClassMappings` maps class train.dra.gpuplane.dev to
(renderer.layers.queueing.kueue.device_class_mappings; ClusterQueue ml-training covers it)."""


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("dra")
    copy_inputs(CASE, target)
    cluster = target / "clusters" / "lab.yaml"
    text = cluster.read_text(encoding="utf-8")
    changed, count = re.subn(r'(kubernetesVersion:\s*)"1\.34"', r'\g<1>"1.36"', text)
    assert count == 1
    cluster.write_text(changed, encoding="utf-8")
    return target


def job(claims: list[dict[str, Any]], parallelism: int = 1) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "claims",
            "labels": {"gpuplane.dev/team": "ml", "gpuplane.dev/cost-center": "CC-1"},
        },
        "spec": {
            "ttlSecondsAfterFinished": TTL_SECONDS,
            "parallelism": parallelism,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "resourceClaims": claims,
                }
            },
        },
    }


def template(
    name: str, request: dict[str, Any], api_version: str = "resource.k8s.io/v1"
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", **request}]}}},
    }


def fit(
    platform: Path,
    tmp_path: Path,
    *documents: dict[str, Any],
    refused_by: tuple[str, ...] = (IMAGES,),
) -> dict[str, Any]:
    """fit's answer for the job file's one workload, which only `refused_by` refuses before
    Kueue."""
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    args = ["-C", str(platform), "fit", str(path), "--namespace", "ml-train", "--format", "json"]
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    answer = json.loads(result.stdout)
    (tmp_path / "answer.json").write_text(result.stdout)
    # a file's object that is no workload and that the chain refuses (a ResourceClaimTemplate
    # the Job does not claim: members may not create one) gets an answer of its own
    (workload,) = [
        w for w in answer["workloads"] if w["workload"]["kind"] != "ResourceClaimTemplate"
    ]
    assert isinstance(workload, dict)
    sources = [r["source"] for step in workload["chain"] for r in step["refusals"]]
    assert sources == list(refused_by), workload["summary"]
    assert workload["verdict"] == "never"  # refused before Kueue, whatever Kueue says
    return workload


def test_a_rendered_template_is_counted_per_pod_as_its_mapped_resource(
    platform: Path, tmp_path: Path
) -> None:
    answer = fit(
        platform, tmp_path, job([{"name": "gpu", "resourceClaimTemplateName": "train"}], 2)
    )
    assert answer["kueueVerdict"] == "fits", answer
    (pod_set,) = answer["podSets"]
    assert pod_set["count"] == 2
    assert pod_set["flavor"] == "train"
    assert pod_set["perPod"][LOGICAL] == 1


def test_the_whole_node_template_counts_the_node_s_eight_devices(
    platform: Path, tmp_path: Path
) -> None:
    claims = [{"name": "gpus", "resourceClaimTemplateName": "train-node"}]
    answer = fit(platform, tmp_path, job(claims))
    assert answer["kueueVerdict"] == "fits", answer
    assert answer["podSets"][0]["perPod"][LOGICAL] == 8


def test_a_template_of_the_file_counts_its_devices(platform: Path, tmp_path: Path) -> None:
    """Two requests of the mapped class, one defaulting to count 1 (SetDefaults_ExactDeviceRequest)
    and one of 2: countDevicesPerClass adds them, 3 devices per pod."""
    own = template("two", {"exactly": {"deviceClassName": "train.dra.gpuplane.dev", "count": 2}})
    own["spec"]["spec"]["devices"]["requests"].append(
        {"name": "one", "exactly": {"deviceClassName": "train.dra.gpuplane.dev"}}
    )
    claims = [{"name": "g", "resourceClaimTemplateName": "two"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    assert answer["kueueVerdict"] == "fits", answer
    assert answer["podSets"][0]["perPod"][LOGICAL] == 3


def test_a_standalone_claim_is_refused_as_kueue_refuses_it(platform: Path, tmp_path: Path) -> None:
    claims = [
        {"name": "own", "resourceClaimTemplateName": "train"},
        {"name": "shared", "resourceClaimName": "shared-gpu"},
    ]
    answer = fit(platform, tmp_path, job(claims))
    assert answer["kueueVerdict"] == "never"
    assert answer["messageFrom"] == "Kueue"
    assert (
        answer["message"] == "KueueDRAIntegration feature does not support use of resource claims"
    )
    assert any("train, train-node" in r for r in answer["reasons"]), answer["reasons"]


def test_a_template_that_does_not_exist_is_refused(platform: Path, tmp_path: Path) -> None:
    claims = [
        {"name": "a", "resourceClaimTemplateName": "train"},
        {"name": "b", "resourceClaimTemplateName": "h100"},
    ]
    answer = fit(platform, tmp_path, job(claims))
    assert answer["kueueVerdict"] == "never"
    assert answer["message"] == (
        "spec.podSets[0].template.spec.resourceClaims[1]: Internal error: failed to get claim "
        "spec for ResourceClaimTemplate h100 in podset main: "
        'ResourceClaimTemplate.resource.k8s.io "h100" not found'
    )


def test_an_unmapped_device_class_is_refused(platform: Path, tmp_path: Path) -> None:
    """The NVIDIA driver's own class: gpuplane maps only its pools' classes."""
    own = template("nvidia", {"exactly": {"deviceClassName": "gpu.nvidia.com"}})
    claims = [{"name": "g", "resourceClaimTemplateName": "nvidia"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    assert answer["kueueVerdict"] == "never"
    assert answer["message"] == (
        "spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: "
        '"DeviceClass gpu.nvidia.com is not mapped in DRA configuration for podset main"'
    )


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (
            {"exactly": {"deviceClassName": "train.dra.gpuplane.dev", "allocationMode": "All"}},
            '.devices.requests[0].exactly.allocationMode: Invalid value: "All": '
            "ResourceClaimTemplate odd: AllocationMode 'All' is not supported",
        ),
        (
            {"firstAvailable": [{"name": "a", "deviceClassName": "train.dra.gpuplane.dev"}]},
            ".devices.requests[0]: Invalid value: null: ResourceClaimTemplate odd: "
            "FirstAvailable device selection is not supported",
        ),
        (
            {"exactly": {"deviceClassName": "train.dra.gpuplane.dev", "adminAccess": True}},
            ".devices.requests[0].exactly.adminAccess: Invalid value: null: "
            "ResourceClaimTemplate odd: AdminAccess is not supported",
        ),
    ],
    ids=["all", "first-available", "admin-access"],
)
def test_requests_kueue_cannot_count_are_refused(
    platform: Path, tmp_path: Path, request_: dict[str, Any], message: str
) -> None:
    own = template("odd", request_)
    claims = [{"name": "g", "resourceClaimTemplateName": "odd"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    assert answer["kueueVerdict"] == "never"
    assert answer["message"] == "spec.podSets[0].template.spec.resourceClaims[0]" + message


def test_a_v1beta1_template_is_read_as_the_api_server_converts_it(
    platform: Path, tmp_path: Path
) -> None:
    own = template(
        "old", {"deviceClassName": "train.dra.gpuplane.dev", "count": 2}, "resource.k8s.io/v1beta1"
    )
    claims = [{"name": "g", "resourceClaimTemplateName": "old"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    assert answer["kueueVerdict"] == "fits", answer
    assert answer["podSets"][0]["perPod"][LOGICAL] == 2


@pytest.mark.parametrize(
    "odd",
    [
        {"spec": 5},
        {"spec": {"spec": {"devices": {"requests": ["x", None, {"name": "a", "exactly": 3}]}}}},
        {"spec": {"spec": {"devices": {"requests": [{"exactly": {"allocationMode": 7}}]}}}},
    ],
    ids=["spec-not-a-mapping", "requests-of-odd-shape", "mode-not-a-string"],
)
def test_an_odd_template_gets_an_answer_not_a_traceback(
    platform: Path, tmp_path: Path, odd: dict[str, Any]
) -> None:
    own = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate"}
    own.update(metadata={"name": "odd"}, **odd)
    claims = [{"name": "g", "resourceClaimTemplateName": "odd"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    assert answer["kueueVerdict"] in {"fits", "never"}, answer


def test_a_template_of_the_file_is_refused_at_rbac_and_said_why(
    platform: Path, tmp_path: Path
) -> None:
    """`kubectl apply -f` creates the file's objects one by one as the team member: the
    ResourceClaimTemplate is forbidden (the team ClusterRoles grant no resource.k8s.io
    resource), the Job is created, and Kueue would find no template. The refusal is the API
    server's Forbidden for the template (k8s.io/apiserver `responsewriters.ForbiddenStatusError`
    with the RBAC authorizer's reason), its fix says what the Job loses and names the templates
    gpuplane renders instead; fit goes on as if an administrator had created it."""
    own = template("two", {"exactly": {"deviceClassName": "train.dra.gpuplane.dev", "count": 2}})
    claims = [{"name": "g", "resourceClaimTemplateName": "two"}]
    answer = fit(platform, tmp_path, own, job(claims), refused_by=RBAC_TOO)
    (rbac,) = [step for step in answer["chain"] if step["step"] == "rbac"]
    (refusal,) = rbac["refusals"]
    assert refusal["message"] == (
        'resourceclaimtemplates.resource.k8s.io is forbidden: User "ml-member" cannot create '
        'resource "resourceclaimtemplates" in API group "resource.k8s.io" in the namespace '
        '"ml-train"'
    )
    assert refusal["fix"].startswith(
        "pod set main claims devices from ResourceClaimTemplate two of this file, which the API "
        "server then does not create: Kueue finds no such template and never admits the Job."
    )
    assert refusal["fix"].endswith(
        "or claim one of the templates gpuplane renders in namespace ml-train: train, train-node"
    )
    assert rbac["changes"] == ["an administrator creates ResourceClaimTemplate two of the file"]
    assert answer["summary"].startswith("2 refusals before Kueue (rbac, admission-policies)")
    assert answer["podSets"][0]["perPod"][LOGICAL] == 2  # counted as if it existed


def test_a_template_of_the_file_the_job_does_not_read_is_not_its_refusal(
    platform: Path, tmp_path: Path
) -> None:
    """A template of the file that the Job does not claim, or one named like a template
    gpuplane renders there (Argo CD keeps the rendered one, which Kueue reads), does not stop
    the Job: only the image policy refuses it."""
    unused = template("spare", {"exactly": {"deviceClassName": "train.dra.gpuplane.dev"}})
    shadowed = template("train", {"exactly": {"deviceClassName": "train.dra.gpuplane.dev"}})
    shadowed["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 5
    claims = [{"name": "gpu", "resourceClaimTemplateName": "train"}]
    answer = fit(platform, tmp_path, unused, shadowed, job(claims))
    assert answer["kueueVerdict"] == "fits", answer
    refused = json.loads((tmp_path / "answer.json").read_text())["workloads"]
    templates = {
        w["workload"]["name"] for w in refused if w["workload"]["kind"] == "ResourceClaimTemplate"
    }
    assert templates == {"spare", "train"}  # each refused at RBAC when kubectl creates it
    assert answer["podSets"][0]["perPod"][LOGICAL] == 1  # the rendered template's one device
