"""The torch probes run inside each pool's production image (issue 32, item 3).

Checked on the rendered example as Argo and the cluster would see it: every torch probe Job runs
the template's `production-image` (the pool file's `spec.productionImage`, read here with
PyYAML), with an init container from the suite image that copies the probe package into an
emptyDir the probe container imports it from; Pod Security `restricted` still admits the pods
(the engine's evaluator of the upstream checks, on the rendered Jobs namespace); preflight says
what an image lacks in one line, which reaches every result of the step; the probe package
imports nothing beyond the standard library and torch; export records the digest the kubelet
ran; and a production image outside the allowlists is refused on its line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

from renderer.admission.apiserver import pod_security
from renderer.admission.apiserver.gate import Request, UserInfo
from renderer.admission.apiserver.podsecurity import api
from renderer.admission.rendered import rendered_cluster
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.conftest import REPO
from tests.red_team.harness import Attempt, errors, refused_on
from workflows.probes import preflight
from workflows.suites import placement, scripts, settings, workflow_templates
from workflows.suites.program import acceptance_steps

pytestmark = pytest.mark.slow

TORCH_PROBES = {"training", "allreduce", "checkpoint", "nodes"}
"""The subcommands of `python -m workflows.probes` that import torch (their modules do)."""
SUITE_IMAGE = "{{inputs.parameters.image}}"
PRODUCTION_IMAGE = "{{inputs.parameters.production-image}}"
JOBS_NAMESPACE = "gpuplane-acceptance-jobs"
DIGEST = "sha256:" + "4e" * 32


def rendered_templates() -> list[tuple[str, dict[str, Any]]]:
    """Every rendered WorkflowTemplate of the example, as the file on disk holds it."""
    found = []
    for path in sorted((REPO / "rendered").glob("*/workflows/*/workflowtemplate-*.yaml")):
        found.append((path.parent.parent.parent.name, yaml.safe_load(path.read_text())))
    assert len(found) >= 10
    return found


def job_pods(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each `<step>-job` template's Job, by step, its `{{…}}` left as Argo has them."""
    found = {}
    for tmpl in body["spec"]["templates"]:
        if tmpl["name"].endswith("-job") and tmpl["resource"]["action"] == "create":
            job = yaml.safe_load(tmpl["resource"]["manifest"])
            found[tmpl["name"].removesuffix("-job")] = job
    return found


def plan_of(container: dict[str, Any]) -> dict[str, Any]:
    plan: dict[str, Any] = json.loads(container["args"][0])
    return plan


def subcommands(plan: dict[str, Any]) -> set[str]:
    found = set()
    for _, command, _ in plan["run"] + plan.get("after", []):
        found.add(command[command.index("workflows.probes") + 1])
    return found


def pool_file(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load((REPO / "pools" / f"{name}.yaml").read_text())["spec"]
    return spec


# --- the rendered Jobs --------------------------------------------------------------------------


def test_every_torch_probe_job_runs_the_pools_production_image() -> None:
    torch_jobs = other_jobs = 0
    for _, body in rendered_templates():
        pool = body["metadata"]["labels"]["gpuplane.dev/pool"]
        defaults = {p["name"]: p.get("value") for p in body["spec"]["arguments"]["parameters"]}
        assert defaults["production-image"] == pool_file(pool)["productionImage"]
        for step, job in job_pods(body).items():
            pod = job["spec"]["template"]["spec"]
            (probe,) = [c for c in pod["containers"] if c["name"] == "probe"]
            plan = plan_of(probe)
            env = {e["name"]: e.get("value") for e in probe["env"]}
            if not subcommands(plan) <= TORCH_PROBES:
                # staging, storage, inference: boto3 and an HTTP client, in the suite image
                assert probe["image"] == SUITE_IMAGE, (pool, step)
                assert "preflight" not in plan and "PYTHONPATH" not in env
                assert all(c["name"] != "probe-package" for c in pod.get("initContainers", []))
                other_jobs += 1
                continue
            assert probe["image"] == PRODUCTION_IMAGE, (pool, step)
            assert probe["command"][:2] == ["python3", "-c"]
            assert env["GPUPLANE_IMAGE"] == PRODUCTION_IMAGE
            (init,) = [c for c in pod["initContainers"] if c["name"] == "probe-package"]
            assert init["image"] == SUITE_IMAGE
            copy = env["PYTHONPATH"]
            assert init["command"] == ["cp", "-R", "/opt/gpuplane-probes/workflows", f"{copy}/"]
            (volume,) = [v for v in pod["volumes"] if v["name"] == "probe-package"]
            assert volume == {"name": "probe-package", "emptyDir": {}}
            assert {"name": "probe-package", "mountPath": copy} in init["volumeMounts"]
            assert {"name": "probe-package", "mountPath": copy, "readOnly": True} in probe[
                "volumeMounts"
            ]
            # the image is checked before any probe, torchrun too where a probe needs it
            command = plan["preflight"]
            assert command[:5] == ["python3", "-m", "workflows.probes", "preflight", "--expect-gpu"]
            launched = any(c[0] == "torchrun" for _, c, _ in plan["run"] + plan.get("after", []))
            assert ("--torchrun" in command) == launched, (pool, step, plan)
            for _, run, _ in plan["run"] + plan.get("after", []):
                assert run[0] in ("python3", "torchrun"), run
            torch_jobs += 1
    assert torch_jobs >= 20 and other_jobs >= 10


def test_the_production_image_jobs_still_meet_restricted_pod_security() -> None:
    """The Jobs namespace enforces `restricted` (read from the rendered Namespace), and the pods
    of every production-image Job pass it as the API server would evaluate them."""
    platform = load_platform(REPO).platform
    checked = 0
    for cluster_name in sorted(platform.clusters):
        # the admission layers' objects, and the Jobs namespace the workflows layer rendered
        folder = REPO / "rendered" / cluster_name / "workflows" / JOBS_NAMESPACE
        namespace = yaml.safe_load((folder / f"namespace-{JOBS_NAMESPACE}.yaml").read_text())
        cluster = rendered_cluster(platform, platform.clusters[cluster_name])
        cluster = dataclasses.replace(cluster, objects=(*cluster.objects, namespace))
        assert namespace["metadata"]["labels"][api.ENFORCE_LEVEL_LABEL] == "restricted"
        for view_cluster, body in rendered_templates():
            if view_cluster != cluster_name:
                continue
            for step, job in job_pods(body).items():
                if not job["spec"]["template"]["spec"].get("initContainers"):
                    continue
                job["metadata"]["name"] = f"{step}-job"
                outcome = pod_security.gate(Request(job, JOBS_NAMESPACE, USER, cluster))
                assert outcome.status == "passed" and not outcome.notes, (step, outcome)
                checked += 1
        # the same Job without the init container's securityContext is refused: the check bites
        sample = next(
            j
            for _, b in rendered_templates()
            for j in job_pods(b).values()
            if j["spec"]["template"]["spec"].get("initContainers")
        )
        del sample["spec"]["template"]["spec"]["initContainers"][-1]["securityContext"]
        sample["metadata"]["name"] = "broken"
        refused = pod_security.gate(Request(sample, JOBS_NAMESPACE, USER, cluster))
        assert refused.refused and "probe-package" in refused.refusals[0].message
    assert checked >= 10


USER = UserInfo(
    username="system:serviceaccount:gpuplane-acceptance:gpuplane-acceptance",
    groups=("system:serviceaccounts", "system:authenticated"),
)


def test_a_pool_without_a_production_image_keeps_the_suite_image_and_says_so() -> None:
    platform: Platform = load_platform(REPO).platform
    target = next(
        t
        for name in sorted(platform.clusters)
        for t in placement.targets(_view(platform, name))
        if t.name == "h100-train"
    )
    bare = dataclasses.replace(target, pool=dataclasses.replace(target.pool, production_image=None))
    assert dict(bare.parameters)["production-image"] == settings.SUITE_IMAGE
    body = workflow_templates.acceptance_template(bare).to_dict()
    (report,) = [t for t in body["spec"]["templates"] if t["name"] == "report-judge"]
    container = report["container"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert "declares no productionImage" in env["IMAGE_NOTE"]
    # the shell prints the note and runs the report with the arguments Argo appends
    done = subprocess.run(
        [
            *container["command"][:4],
            sys.executable,
            "-c",
            "import sys; print(sys.argv[1:])",
            *container["args"][:2],
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [env["IMAGE_NOTE"], "['--pool', 'h100-train']"]
    declared = workflow_templates.acceptance_template(target).to_dict()
    (report,) = [t for t in declared["spec"]["templates"] if t["name"] == "report-judge"]
    assert report["container"]["command"][0] == "gpuplane" and "env" not in report["container"]
    assert [s.name for s in acceptance_steps(bare)] == [s.name for s in acceptance_steps(target)]


def _view(platform: Platform, name: str) -> Any:
    from renderer.model.view import ClusterView

    return ClusterView.of(platform, platform.clusters[name])


def test_the_weekly_run_passes_each_pool_its_own_production_image() -> None:
    for path in sorted((REPO / "rendered").glob("*/workflows/*/cronworkflow-*.yaml")):
        cron = yaml.safe_load(path.read_text())
        spec = cron["spec"]["workflowSpec"]
        defaults = {p["name"]: p["value"] for p in spec["arguments"]["parameters"]}
        assert "production-image" not in defaults
        (dag,) = [t for t in spec["templates"] if t["name"] == "acceptance"]
        for task in dag["dag"]["tasks"]:
            pool = task["name"]
            if "--" in pool:
                continue  # a namespace's own image: below
            arguments = {p["name"]: p["value"] for p in task["arguments"]["parameters"]}
            own = f"production-image-{pool}"
            assert arguments["production-image"] == "{{inputs.parameters." + own + "}}"
            assert defaults[own] == pool_file(pool)["productionImage"]


# --- preflight ----------------------------------------------------------------------------------


def copy_package(folder: Path) -> Path:
    """The probe package as the Containerfile lays it out at PROBE_PACKAGE (workflows/__init__.py
    and workflows/probes/, nothing else of the repository)."""
    (folder / "workflows").mkdir(parents=True)
    shutil.copy(REPO / "workflows" / "__init__.py", folder / "workflows" / "__init__.py")
    shutil.copytree(
        REPO / "workflows" / "probes",
        folder / "workflows" / "probes",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return folder


def stdlib_paths() -> list[str]:
    """This interpreter's own library folders (its zip, stdlib, lib-dynload), no site-packages."""
    base = (sys.base_prefix, sys.base_exec_prefix)
    return [p for p in sys.path if p.startswith(base) and "site-packages" not in p]


def isolated(code: str, *paths: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`code` run by `python -S -I` (no site-packages, no PYTHONPATH) with only `paths` and the
    standard library on sys.path."""
    prelude = f"import sys; sys.path[:] = {json.dumps([*paths, *stdlib_paths()])}\n"
    return subprocess.run(
        [sys.executable, "-S", "-I", "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_preflight_names_the_image_and_a_missing_torch_in_one_line(tmp_path: Path) -> None:
    copy = copy_package(tmp_path / "copy")
    code = (
        "import os, runpy; os.environ['GPUPLANE_IMAGE'] = 'registry.example.com/base/app:1'\n"
        "sys.argv = ['x', 'preflight']\n"
        "runpy.run_module('workflows.probes', run_name='__main__')\n"
    )
    done = isolated(code, str(copy), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout == (
        "preflight: image registry.example.com/base/app:1 cannot run the probes: "
        "no importable torch (No module named 'torch')\n"
    )


def test_preflight_on_this_machine_says_what_a_gpu_run_would_lack(tmp_path: Path) -> None:
    import torch

    done = subprocess.run(
        [sys.executable, "-m", "workflows.probes", "preflight", "--expect-gpu", "--image", "x:1"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": ""},
        timeout=300,
    )
    assert done.returncode == 1
    (line,) = done.stdout.splitlines()
    assert line.startswith("preflight: image x:1 cannot run the probes: ")
    if torch.version.cuda is None:
        assert f"torch {torch.__version__} is a CPU-only build (no CUDA)" in line
    else:
        assert "no CUDA device visible" in line
    assert "no NCCL in torch.distributed" in line or torch.distributed.is_nccl_available()
    # without --expect-gpu the same image passes, and its facts are written
    out = tmp_path / "facts.json"
    done = subprocess.run(
        [sys.executable, "-m", "workflows.probes", "preflight", "--out", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "GPUPLANE_IMAGE": "x:1"},
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    facts = json.loads(out.read_text())
    assert facts["image"] == "x:1" and facts["torch"] == torch.__version__
    assert facts["python"] == ".".join(map(str, sys.version_info[:3]))
    assert facts["driver"] == preflight.driver_version()


def test_preflight_refuses_a_python_older_than_the_packages_floor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 8, 18, "final", 0))
    facts, missing = preflight.check(expect_gpu=True, torchrun=True)
    assert missing == ["python 3.8.18 is older than 3.11"]
    assert facts["python"] == "3.8.18"


def test_the_python_floor_is_the_packages_requires_python() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floor = re.fullmatch(r">=\s*(\d+)\.(\d+)", project["requires-python"])
    assert floor is not None
    assert (int(floor.group(1)), int(floor.group(2))) == preflight.MIN_PYTHON


@pytest.mark.parametrize(
    ("text", "version"),
    [
        # NVIDIA's documented forms (proprietary and open kernel modules, x86_64 and aarch64)
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 2025\n"
            "GCC version:  gcc version 12.2.0 (GCC)\n",
            "570.124.06",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  555.42.06  Release Build  "
            "(abuild@host)  Thu Jul 11 12:00:00 UTC 2024\n",
            "555.42.06",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  540.4.0  Release Build\n",
            "540.4.0",
        ),
        (
            "NVRM version: NVIDIA UNIX x86 Kernel Module  169.12  Thu Feb 14 17:53:07 PST 2008\n",
            "169.12",
        ),
        ("GCC version:  gcc version 12.2.0 (GCC)\n", "none"),
    ],
)
def test_the_driver_label_reads_the_nvrm_line(tmp_path: Path, text: str, version: str) -> None:
    path = tmp_path / "version"
    path.write_text(text)
    assert preflight.driver_version(str(path)) == version


def test_no_driver_file_is_none(tmp_path: Path) -> None:
    assert preflight.driver_version(str(tmp_path / "absent")) == "none"


def test_a_failed_preflight_is_the_error_of_every_result_the_step_owes(tmp_path: Path) -> None:
    """Runner then export, as a step runs them: the preflight line reaches each result."""
    line = "preflight: image registry.example.com/base/app:1 cannot run the probes: no torchrun"
    fake = [sys.executable, "-c", f"print({line!r}); raise SystemExit(1)"]
    never = [sys.executable, "-c", "open('ran', 'w')"]
    plan = {
        "preflight": fake,
        "run": [["checkpoint-write", never, False]],
        "after": [["checkpoint", never, True]],
    }
    state = tmp_path / "state"
    done = subprocess.run(
        [sys.executable, "-c", scripts.RUNNER, json.dumps(plan)],
        env={**os.environ, "STATE": str(state), "INTERRUPT_WAIT_SECONDS": "0"},
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1 and not (tmp_path / "ran").exists()
    assert line in done.stdout.splitlines()
    steps = [{"step": "checkpoint", "results": [["checkpoint", "checkpoint"]]}]
    out = export(tmp_path, steps, CHECKPOINT_LOG=done.stdout)
    result = json.loads((out / "checkpoint.json").read_text())
    assert result["ok"] is False and result["error"] == line


# --- the image the kubelet ran ------------------------------------------------------------------


def export(tmp_path: Path, steps: list[dict[str, Any]], **env: str) -> Path:
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-c", scripts.EXPORT],
        env={
            **os.environ,
            "OUT": str(out),
            "CLUSTER": "prod-east",
            "POOL": "h100-train",
            "STEPS": json.dumps(steps),
            "RESULTS": "acceptance-h100-train",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize(
    "image_id",
    [
        # the kubelet's imageID as Docker (dockershim, cri-dockerd) and containerd report it
        f"docker-pullable://registry.example.com/base/pytorch-train@{DIGEST}",
        f"registry.example.com/base/pytorch-train@{DIGEST}",
        DIGEST,
    ],
)
def test_export_records_the_digest_the_kubelet_ran(tmp_path: Path, image_id: str) -> None:
    result = {"schemaVersion": 1, "probe": "training", "ok": True, "environment": {"image": "a"}}
    log = f"{settings.RESULT_PREFIX} training {json.dumps(result)}\n"
    steps = [{"step": "train", "results": [["training", "training"]]}]
    reference = "registry.example.com/base/pytorch-train:2026.11"
    out = export(tmp_path, steps, TRAIN_LOG=log, TRAIN_IMAGE=f"{reference} {image_id}\n")
    labels = json.loads((out / "training.json").read_text())["environment"]
    assert labels[settings.IMAGE_DIGEST_LABEL] == DIGEST
    assert labels["image"] == reference


@pytest.mark.parametrize(
    "image_text",
    [
        "",
        "registry.example.com/base/pytorch-train:2026.11 ",  # the container never started
        f"x:1 docker-pullable://x@sha256:{'4E' * 32}",  # not a lowercase hex digest
        f"x:1 sha256:{'4e' * 31}",
        f"x:1 {DIGEST}$(reboot)",
        f"x:1 {DIGEST} extra",
    ],
)
def test_export_records_no_digest_it_cannot_read(tmp_path: Path, image_text: str) -> None:
    steps = [{"step": "train", "results": [["training", "training"]]}]
    out = export(tmp_path, steps, TRAIN_LOG="", TRAIN_IMAGE=image_text)
    labels = json.loads((out / "training.json").read_text())["environment"]
    assert settings.IMAGE_DIGEST_LABEL not in labels and "image" not in labels


def test_each_step_reads_the_image_its_probe_container_ran() -> None:
    for _, body in rendered_templates():
        (image,) = [t for t in body["spec"]["templates"] if t["name"] == "image"]
        args = image["container"]["args"]
        assert args[:2] == ["get", "pod"]
        assert args[-1] == "--output=jsonpath=" + workflow_templates.IMAGE_JSONPATH
        (logs,) = [t for t in body["spec"]["templates"] if t["name"] == "logs"]
        selector = [a for a in logs["container"]["args"] if a.startswith("--selector=")]
        assert selector == [a for a in args if a.startswith("--selector=")]
        assert '?(@.name=="probe")].imageID' in workflow_templates.IMAGE_JSONPATH


# --- the probe package imports only the standard library and torch ------------------------------


def torch_only(folder: Path) -> Path:
    """A folder holding torch and the distributions torch itself requires (no extras), as
    links: what an image with torch installed has at least, and nothing else (no numpy)."""
    folder.mkdir()
    todo, seen = ["torch"], set()
    while todo:
        name = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        dist = metadata.distribution(name)
        for file in dist.files or ():
            top = file.parts[0]
            source = Path(str(dist.locate_file(top)))
            if top.endswith((".dist-info", ".pth")) or top == ".." or not source.exists():
                continue
            if not (folder / top).exists():
                (folder / top).symlink_to(source)
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    assert "numpy" not in seen
    return folder


@pytest.fixture(scope="module")
def only_torch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return torch_only(tmp_path_factory.mktemp("deps") / "site")


def test_every_probe_module_imports_with_only_the_stdlib_and_torch(
    tmp_path: Path, only_torch: Path
) -> None:
    copy = copy_package(tmp_path / "copy")
    modules = sorted(
        f"workflows.probes.{p.stem}"
        for p in (copy / "workflows" / "probes").glob("*.py")
        if p.stem != "__init__"
    )
    assert "workflows.probes.preflight" in modules and len(modules) >= 12
    code = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n"
    )
    done = isolated(code, str(copy), str(only_torch), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_isolation_catches_a_module_that_needs_more(tmp_path: Path, only_torch: Path) -> None:
    """The same check fails on a probe module importing numpy, which this environment has."""
    metadata.distribution("numpy")  # installed here: only the isolation keeps it out
    copy = copy_package(tmp_path / "copy")
    (copy / "workflows" / "probes" / "extra.py").write_text("import numpy\n")
    done = isolated("import workflows.probes.extra", str(copy), str(only_torch), cwd=tmp_path)
    assert done.returncode == 1 and "No module named 'numpy'" in done.stderr


# --- policy -------------------------------------------------------------------------------------


@pytest.fixture
def attempt(tmp_path: Path) -> Attempt:
    return Attempt.on_example(tmp_path / "repo")


def test_a_production_image_outside_the_allowlists_is_refused_on_its_line(
    attempt: Attempt,
) -> None:
    old = "productionImage: registry.example.com/base/pytorch-train:2026.11"
    attempt.edit("pools/h100-train.yaml", old, "productionImage: quay.io/someone/torch:1.0")
    found = refused_on(attempt.findings(), "pools/h100-train.yaml", "production-image-not-allowed")
    text = attempt.path("pools/h100-train.yaml").read_text().splitlines()
    assert text[found.at.line - 1].strip() == "productionImage: quay.io/someone/torch:1.0"
    assert "quay.io/someone/torch:1.0" in found.message
    assert found.hint is not None and "registry.example.com/" in found.hint
    # the hint, applied: an image under an allowed registry path
    attempt.edit(
        "pools/h100-train.yaml",
        "quay.io/someone/torch:1.0",
        "docker.io/library/python:3.12",  # the runtime's docker.io/library/ is allowed
    )
    assert not errors(attempt.findings(), "production-image-not-allowed")


def test_a_namespace_image_must_be_its_teams_as_well(attempt: Attempt) -> None:
    entry = "{name: search-train, cluster: staging-west, purpose: training"
    now = "registry.example.com/llm/trainer:1"  # allowed by gpuplane.yaml, not by team search
    attempt.edit("teams/search.yaml", entry, f'{entry}, productionImage: "{now}"')
    found = refused_on(attempt.findings(), "teams/search.yaml", "production-image-not-allowed")
    assert "spec.images" in found.message and now in found.message
    line = attempt.path("teams/search.yaml").read_text().splitlines()[found.at.line - 1]
    assert now in line
    fixed = "registry.example.com/search/trainer:1"
    attempt.edit("teams/search.yaml", now, fixed)
    assert not errors(attempt.findings(), "production-image-not-allowed")
    attempt.edit("teams/search.yaml", fixed, "ghcr.io/other/trainer:1")
    found = refused_on(attempt.findings(), "teams/search.yaml", "production-image-not-allowed")
    assert "allowlists" in found.message


# --- a team namespace's own production image ------------------------------------------------------


def namespace_images() -> dict[str, tuple[str, str, set[str]]]:
    """namespace -> (cluster, image, pools its team has quota on), from the team files."""
    found = {}
    for path in sorted((REPO / "teams").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())["spec"]
        pools = {quota["pool"] for quota in spec.get("gpus", [])}
        for ns in spec["namespaces"]:
            if "productionImage" in ns:
                found[ns["name"]] = (ns["cluster"], ns["productionImage"], pools)
    assert found, "the example names a namespace production image"
    return found


def test_the_weekly_run_also_runs_each_namespace_image_after_its_pools_own() -> None:
    images = namespace_images()
    for path in sorted((REPO / "rendered").glob("*/workflows/*/cronworkflow-*.yaml")):
        cluster = path.parts[-4]
        spec = yaml.safe_load(path.read_text())["spec"]["workflowSpec"]
        (dag,) = [t for t in spec["templates"] if t["name"] == "acceptance"]
        tasks = {t["name"]: t for t in dag["dag"]["tasks"]}
        suites = {n for n in tasks if "--" not in n}
        wanted = {
            f"{pool}--{ns}"
            for ns, (home, _, pools) in images.items()
            if home == cluster
            for pool in pools & suites
        }
        assert {n for n in tasks if "--" in n} == wanted
        for name, task in tasks.items():
            arguments = {p["name"]: p["value"] for p in task["arguments"]["parameters"]}
            if name in suites:
                assert arguments["image-namespace"] == "" and "depends" not in task
                continue
            pool, ns = name.split("--")
            assert arguments["image-namespace"] == ns
            assert arguments["production-image"] == images[ns][1]
            # the pool's own template: in a window, the reserved one, whose Jobs tolerate the
            # run's taint on the pool's nodes
            assert task["templateRef"] == tasks[pool]["templateRef"]
            # after the pool's own run, however it ended: they would compete for its GPUs
            assert task["depends"] == f"{pool}.Succeeded || {pool}.Failed || {pool}.Errored"
        hook = yaml.safe_load((path.parent / "workflow-acceptance-postsync.yaml").read_text())
        (hook_dag,) = [t for t in hook["spec"]["templates"] if t["name"] == "acceptance"]
        assert all("--" not in t["name"] for t in hook_dag["dag"]["tasks"])


def test_a_namespace_run_reads_only_its_own_pods_and_publishes_apart() -> None:
    for _, body in rendered_templates():
        templates = {t["name"]: t for t in body["spec"]["templates"]}
        for step, job in job_pods(body).items():
            labels = job["spec"]["template"]["metadata"]["labels"]
            assert labels[settings.IMAGE_NAMESPACE_LABEL] == "{{inputs.parameters.image-namespace}}"
            for tool in ("logs", "image", "drop"):
                (selector,) = [
                    a for a in templates[tool]["container"]["args"] if a.startswith("--selector=")
                ]
                wanted = {f"{k}={v}" for k, v in labels.items()}
                wanted = {w.replace(f"={step}", "={{inputs.parameters.step}}") for w in wanted}
                assert wanted <= set(selector.removeprefix("--selector=").split(",")), tool
        publish = yaml.safe_load(templates["publish"]["resource"]["manifest"])
        assert publish["metadata"]["name"] == "{{inputs.parameters.results-name}}"


def test_export_labels_a_namespace_run_and_names_its_configmap_apart(tmp_path: Path) -> None:
    steps = [{"step": "train", "results": [["training", "training"]]}]
    pool = export(tmp_path / "pool", steps, RESULTS="acceptance-h100-train", IMAGE_NAMESPACE="")
    assert (pool / "results-name").read_text() == "acceptance-h100-train"
    labels = json.loads((pool / "training.json").read_text())["environment"]
    assert settings.IMAGE_NAMESPACE_LABEL not in labels
    ns = export(
        tmp_path / "ns", steps, RESULTS="acceptance-h100-train", IMAGE_NAMESPACE="llm-train"
    )
    assert (ns / "results-name").read_text() == "acceptance-h100-train-llm-train"
    labels = json.loads((ns / "training.json").read_text())["environment"]
    assert labels[settings.IMAGE_NAMESPACE_LABEL] == "llm-train"
