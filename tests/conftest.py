"""Shared fixtures: the example platform copied to a temporary folder, the CLI, the CRDs."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft7Validator
from ruamel.yaml import YAML

from renderer.cli import main
from renderer.output.validation import OutputValidator

REPO = Path(__file__).resolve().parents[1]
SHARED_CRDS = REPO.parent / "shared" / "crds"
INPUT_FOLDERS = ("clusters", "pools", "teams", "queues")


SLOW_MODULE = re.compile(r"^pytestmark = .*\bpytest\.mark\.slow\b", re.MULTILINE)
"""A test module slow as a whole (docs/testing.md): `pytestmark = pytest.mark.slow` at its top."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m "not slow"` (`make test`) a module slow as a whole is not even imported: its
    imports (PyTorch, transformers, hypothesis) cost seconds of every run's collection."""
    if config.getoption("markexpr") != "not slow" or collection_path.suffix != ".py":
        return None
    if collection_path.name.startswith("test_") and SLOW_MODULE.search(collection_path.read_text()):
        return True
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="Rewrite golden files from the current output (refused in CI; review the diff).",
    )


@pytest.fixture(scope="session", autouse=True)
def render_index_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The render index keeps one file per repository path; the tests render hundreds of
    temporary repositories, whose indexes belong in a temporary folder, not in the user's
    cache. A test that is about the cache sets GPUPLANE_CACHE_DIR itself."""
    if "GPUPLANE_CACHE_DIR" in os.environ:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GPUPLANE_CACHE_DIR", str(tmp_path_factory.mktemp("gpuplane-cache")))
        yield


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    wanted = bool(request.config.getoption("--update-golden"))
    if wanted and os.environ.get("CI"):
        pytest.fail("--update-golden is refused in CI: golden files are reviewed by people")
    return wanted


@pytest.fixture
def crds() -> Path:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    return SHARED_CRDS


@pytest.fixture(scope="session")
def validator() -> OutputValidator:
    """The output validator with the upstream CRDs, built once for every test that needs it."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    return OutputValidator([SHARED_CRDS])


@dataclass
class Result:
    exit_code: int
    output: str


@pytest.fixture
def platform(tmp_path: Path) -> Path:
    """A copy of the built-in example platform (inputs and rendered/) in a fresh folder."""
    root = tmp_path / "repo"
    root.mkdir()
    for folder in (*INPUT_FOLDERS, "rendered"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, root / folder)
    if (REPO / "gpuplane.yaml").is_file():
        shutil.copy(REPO / "gpuplane.yaml", root / "gpuplane.yaml")
    if (REPO / ".github" / "CODEOWNERS").is_file():  # render output, like rendered/
        (root / ".github").mkdir()
        shutil.copy(REPO / ".github" / "CODEOWNERS", root / ".github" / "CODEOWNERS")
    return root


@pytest.fixture
def gpuplane() -> Callable[..., Result]:
    """Run the CLI in-process, as a user would, and return its exit code and output."""

    def run(*args: str) -> Result:
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return Result(result.exit_code, result.output)

    return run


def git(root: Path, *args: str) -> str:
    """Run git in `root` as a test's author, and return what it prints."""
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def git_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """git that reads no system or user configuration, so the machine's settings cannot leak
    in, with fixed dates (commit ids repeat); and no $GPUPLANE_CRDS from the caller."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        patch.setenv("HOME", str(home))
        patch.setenv("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        patch.setenv("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
        patch.delenv("GPUPLANE_CRDS", raising=False)
        yield


def commit_all(root: Path, message: str) -> Path:
    """Make `root` a git repository on branch main with everything in it committed once."""
    git(root, "-c", "init.defaultBranch=main", "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return root


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    """The example platform's inputs committed once per module: the base of a pull request (a
    module whose base differs defines its own)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("committed") / "repo")
    return commit_all(root, "the example platform")


@pytest.fixture
def repo(committed: Path, tmp_path: Path, git_env: None) -> Path:
    """A copy of the `committed` repository whose working tree a test may change, as a pull
    request would."""
    target = tmp_path / "repo"
    shutil.copytree(committed, target, symlinks=True)
    return target


def edit_once(path: Path, old: str, new: str) -> None:
    """Replace a piece of text that must be in the file exactly once."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} in {path}"
    path.write_text(text.replace(old, new))


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` by relative path, for byte-exact comparisons."""
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def json_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of `value` itself and of everything in it (keys and list indexes), parents
    before their children, in the value's own order: the places a test can mutate."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += json_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += json_paths(item, (*path, index))
    return found


def copy_inputs(source: Path, target: Path) -> Path:
    """Copy a platform's inputs (its four folders and gpuplane.yaml, not its rendered/ or
    expected/ tree) to `target`."""
    target.mkdir(parents=True, exist_ok=True)
    for folder in INPUT_FOLDERS:
        if (source / folder).is_dir():
            shutil.copytree(source / folder, target / folder)
    if (source / "gpuplane.yaml").is_file():
        shutil.copy(source / "gpuplane.yaml", target / "gpuplane.yaml")
    return target


def committed_example(target: Path, *render_args: str) -> Path:
    """The example platform's inputs in a new git repository at `target`, rendered with the
    upstream CRDs (`render_args` added) and committed; skips the test without ../shared/crds."""
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    root = copy_inputs(REPO, target)
    git(root, "-c", "init.defaultBranch=main", "init", "-q")
    done = CliRunner().invoke(
        main, ["-C", str(root), "render", "--crds", str(SHARED_CRDS), *render_args]
    )
    assert done.exit_code == 0, done.output  # no commit yet: every object is created
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the example platform, rendered")
    return root


def example_at_kubernetes(target: Path, version: str) -> Path:
    """A copy of the example platform's inputs with every cluster on this Kubernetes version
    (1.36 serves MutatingAdmissionPolicy: the team's priority is set, not required)."""
    copy_inputs(REPO, target)
    pattern = re.compile(r'^(\s*kubernetesVersion:\s*)"?[0-9.]+"?', re.M)
    for cluster in sorted((target / "clusters").glob("*.yaml")):
        text = cluster.read_text(encoding="utf-8")
        changed, count = pattern.subn(rf'\g<1>"{version}"', text)
        assert count == 1, f"{cluster.name}: one kubernetesVersion expected"
        cluster.write_text(changed, encoding="utf-8")
    return target


KUBEFLOW_V1_KINDS = ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob")
"""The Kubeflow Training Operator v1's job kinds beside its MPIJob v1 (kubeflow/trainer v1.9.4
manifests/base/crds: one CRD each, served at kubeflow.org/v1)."""
TRAINING_OPERATOR = {"trainingOperator": "v1.9.4"}
"""The training operator v1's latest release tag (kubeflow/trainer, formerly training-operator)."""
MPI_OPERATOR = {"mpiOperator": "v0.8.0"}
"""The MPI Operator's latest release tag (kubeflow/mpi-operator), serving MPIJob v2beta1."""
APPWRAPPER = {"appwrapper": "v1.2.1"}
"""project-codeflare/appwrapper's release, serving AppWrapper v1beta2."""


def _merged(listed: str | None, kinds: tuple[str, ...]) -> str:
    both = [k.strip() for k in (listed or "").split(",") if k.strip()]
    both += [k for k in kinds if k not in both]
    return f"kinds: [{', '.join(both)}]"


def _list_kinds_inline(team: Path, namespace: str, kinds: tuple[str, ...]) -> str:
    """`kinds` added to a namespace written on one line (`- {name: ..., cluster: ...}`); its
    cluster."""
    (line,) = [x for x in team.read_text().splitlines() if f"{{name: {namespace}," in x]
    cluster = re.search(r"cluster: ([\w-]+)", line)
    assert cluster is not None and line.rstrip().endswith("}"), line
    listed = re.search(r"kinds: \[([^\]]*)\]", line)
    if listed is None:
        changed = f"{line.rstrip()[:-1]}, {_merged(None, kinds)}}}"
    else:
        changed = line.replace(listed.group(0), _merged(listed.group(1), kinds))
    edit_once(team, line, changed)
    return cluster.group(1)


def _list_kinds_in_block(team: Path, namespace: str, kinds: tuple[str, ...]) -> str:
    """`kinds` added to a namespace written as a block (`- name: ...` then its keys indented
    below it); its cluster."""
    lines = team.read_text().splitlines(keepends=True)
    start = lines.index(f"    - name: {namespace}\n")
    end = start + 1
    while end < len(lines) and lines[end].startswith("      "):
        end += 1
    block = lines[start:end]
    (cluster,) = [x.split(":", 1)[1].strip() for x in block if x.startswith("      cluster:")]
    listed = [i for i, x in enumerate(block) if x.startswith("      kinds: [")]
    if listed:
        at = start + listed[0]
        found = re.search(r"kinds: \[([^\]]*)\]", lines[at])
        assert found is not None
        lines[at] = lines[at].replace(found.group(0), _merged(found.group(1), kinds))
    else:
        lines.insert(start + 1, f"      {_merged(None, kinds)}\n")
    team.write_text("".join(lines))
    return cluster


def submits(root: Path, namespace: str, kinds: tuple[str, ...], addons: dict[str, str]) -> Path:
    """The platform at `root` with team namespace `namespace` listing `kinds` (its team file's
    `kinds`) and its cluster declaring `addons` (key: release tag) under `spec.addons`: what a
    platform team writes for a team that submits those kinds (rule operator-missing's hint;
    an add-on the cluster declares already stays as it is). Edits the files as text, so their
    comments and order stay as written."""
    (team,) = [
        p
        for p in sorted((root / "teams").glob("*.yaml"))
        if f"name: {namespace}," in p.read_text() or f"- name: {namespace}\n" in p.read_text()
    ]
    text = team.read_text()
    if f"{{name: {namespace}," in text:
        cluster = _list_kinds_inline(team, namespace, kinds)
    else:
        cluster = _list_kinds_in_block(team, namespace, kinds)
    path = root / "clusters" / f"{cluster}.yaml"
    there = path.read_text()
    declared = "".join(
        f"    {key}: {{version: {tag}}}\n"
        for key, tag in addons.items()
        if not re.search(rf"^    {key}:", there, re.M)
    )
    edit_once(path, "  addons:\n", f"  addons:\n{declared}")
    return root


def golden_diff(expected: dict[str, bytes], actual: dict[str, bytes]) -> str:
    """Files missing, extra and differing, then the first differing file's lines (Kapitan's way)."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    differing = sorted(p for p in expected if p in actual and expected[p] != actual[p])
    report = [f"missing: {missing}", f"extra: {extra}", f"differing: {differing}"]
    if differing:
        first = differing[0]
        report += list(
            difflib.unified_diff(
                expected[first].decode().splitlines(),
                actual[first].decode().splitlines(),
                f"expected/{first}",
                f"actual/{first}",
                lineterm="",
            )
        )[:40]
    return "\n".join(report)


def kubectl_with_kustomize_v5() -> bool:
    """Whether `kubectl kustomize` is here and new enough (Debian's kubectl 1.20 has kustomize v2)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return False
    out = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
    match = re.search(r"Kustomize Version: v(\d+)", out)
    return bool(match and int(match.group(1)) >= 5)


def object_files(folder: Path) -> list[Path]:
    """The rendered Kubernetes objects under a folder: not the kustomizations, and not the files
    written beside them that are never applied (Helm values, node bootstraps: no `kind`; the API
    server's audit policy, a file for its flags)."""
    import yaml

    return [
        p
        for p in sorted(folder.rglob("*.yaml"))
        if p.name != "kustomization.yaml"
        and "templates" not in p.relative_to(folder).parts  # team templates: nothing applies them
        and "api-server" not in p.relative_to(folder).parts
        and "kind" in (yaml.safe_load(p.read_text()) or {})
    ]


GOLDEN_PATTERNS = "golden.yaml"
"""Beside a render case's `expected/`: the glob patterns of the rendered paths the case pins."""


def glob_match(pattern: str, path: str) -> bool:
    """Whether a rendered path (`lab/queueing/cohort-ml.yaml`) matches a golden pattern: `*`,
    `?` and `[...]` match within one folder or file name, a `**` part matches any number of
    folders (none too), and a last `**` everything under its folder."""
    return _parts_match(tuple(pattern.split("/")), tuple(path.split("/")))


def _parts_match(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**" and not rest:
        return bool(path)
    if head == "**":
        return any(_parts_match(rest, path[skip:]) for skip in range(len(path) + 1))
    return bool(path) and fnmatchcase(path[0], head) and _parts_match(rest, path[1:])


def golden_patterns(case: Path) -> tuple[str, ...]:
    """The patterns a render case's `golden.yaml` lists under `pins`."""
    import yaml

    body = yaml.safe_load((case / GOLDEN_PATTERNS).read_text())
    patterns = body["pins"]
    assert patterns and all(isinstance(p, str) for p in patterns), f"{case}/{GOLDEN_PATTERNS}"
    return tuple(patterns)


def pinned(actual: dict[str, bytes], patterns: tuple[str, ...]) -> dict[str, bytes]:
    """The part of a rendered tree the patterns pin. A pattern that matches no rendered path
    fails the test: a golden that pins nothing cannot fail."""
    idle = [p for p in patterns if not any(glob_match(p, path) for path in actual)]
    assert not idle, f"golden patterns that match no path: {idle}"
    return {
        path: body for path, body in actual.items() if any(glob_match(p, path) for p in patterns)
    }


def render_inputs(case: Path, target: Path, crds: Path) -> Path:
    """Render a platform's inputs, copied to `target`, with the CLI as a user would (render
    validates every object it writes, and must succeed); returns the `rendered/` folder."""
    root = copy_inputs(case, target)
    result = CliRunner().invoke(main, ["-C", str(root), "render", "--crds", str(crds)])
    assert result.exit_code == 0, result.output
    return root / "rendered"


def render_case(case: Path, tmp_path: Path, crds: Path, *, update_golden: bool) -> dict[str, bytes]:
    """Render a golden case's inputs into a temporary folder and compare the part its
    `golden.yaml` pins with its reviewed `expected/`: the same paths, every byte.
    `--update-golden` rewrites `expected/` to that part (stale files go). The rest of the tree is
    rendered and validated, not pinned. Returns the whole rendered tree for further checks."""
    actual = tree(render_inputs(case, tmp_path / "repo", crds))
    wanted = pinned(actual, golden_patterns(case))
    if update_golden:
        shutil.rmtree(case / "expected", ignore_errors=True)
        for path, body in wanted.items():
            (case / "expected" / path).parent.mkdir(parents=True, exist_ok=True)
            (case / "expected" / path).write_bytes(body)
    expected = tree(case / "expected")
    assert wanted == expected, golden_diff(expected, wanted)
    return actual


def render_clean(root: Path, warnings: tuple[str, ...] = ()) -> Any:
    """Render a platform with the real CRDs; no findings but the warnings (by rule id) expected."""
    from renderer.pipeline import render_platform

    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    rendered = render_platform(root, OutputValidator([SHARED_CRDS]))
    found = [(d.rule, d.severity.value) for d in rendered.diagnostics]
    assert found == [(rule, "warning") for rule in warnings], "\n".join(
        map(str, rendered.diagnostics)
    )
    return rendered


def load_yaml_12(path: Path) -> Any:
    """A YAML file as GitHub Actions reads it: YAML 1.2, where `on` stays a string."""
    return YAML(typ="safe", pure=True).load(path.read_text())


def only_job_steps(workflow: Any) -> list[dict[str, Any]]:
    """The steps of a GitHub Actions workflow that has one job."""
    (job,) = workflow["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def github_workflow_errors(workflow: Any) -> list[str]:
    """What SchemaStore's workflow schema, as check-jsonschema ships it, says (no network)."""
    schema = json.loads(
        files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("github-workflows.json")
        .read_text()
    )
    errors = Draft7Validator(schema).iter_errors(json.loads(json.dumps(workflow)))
    return [f"{list(e.absolute_path)}: {e.message}" for e in errors]


REQUIRE_TOOLS = "GPUPLANE_REQUIRE_TOOLS"
"""Set by `.ci/run`, which installs Debian's promtool, Chromium and Tesseract: there a missing
tool fails the test instead of skipping it, so a broken install step cannot pass as green."""


@dataclass(frozen=True)
class Tool:
    """A program some tests drive: the Debian package that brings it, and what skips without it.
    README.md names each with its install command (tests/test_tools_named.py)."""

    package: str
    skips: str


TOOLS = {
    "promtool": Tool("prometheus", "the rendered alert and recording rules' checks and unit tests"),
    "chromium": Tool("chromium", "opening the SVG pictures in a browser"),
    "tesseract": Tool("tesseract-ocr", "reading the pictures' screenshots"),
    "node": Tool("nodejs", "Mermaid's parser on the cluster READMEs' diagrams"),
    "npm": Tool("npm", "installing Mermaid's parser into tests/mermaid"),
    "kubectl": Tool("kubectl", "`kubectl kustomize` builds of rendered/ (needs kustomize v5)"),
}
"""Every program a test skips without: `require_tool` takes no other, and `make test` installs
the rest itself (network-config-analyzer in build/nca, Mermaid's parser where npm is here)."""


def require_tool(name: str, package: str) -> str:
    """The path of an external program a test drives, or a skip naming the Debian package that
    brings it (a failure where `GPUPLANE_REQUIRE_TOOLS=1`)."""
    assert TOOLS[name].package == package, f"{name} is in TOOLS with another package"
    path = shutil.which(name)
    if path is not None:
        return path
    message = f"{name} is not installed (Debian package {package})"
    if os.environ.get(REQUIRE_TOOLS) == "1":
        pytest.fail(message)
    pytest.skip(message)


def screenshot(chromium: str, svg: Path, shot: Path, size: str, *flags: str) -> Path:
    """Headless Chromium's screenshot `shot` of the SVG file at `size` (`width,height` in CSS
    pixels), with `flags` added (`--hide-scrollbars`; `--force-device-scale-factor=2`, twice the
    pixels, for Tesseract to read 12px text); its profile beside the screenshot."""
    subprocess.run(
        [
            chromium,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            *flags,
            f"--user-data-dir={shot.parent / 'profile'}",
            f"--screenshot={shot}",
            f"--window-size={size}",
            svg.as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return shot


def ocr(tesseract: str, image: Path, *options: str) -> str:
    """What Tesseract reads in the image (`--psm 11`: sparse text, labels scattered over a
    chart)."""
    return subprocess.run(
        [tesseract, str(image), "-", *options],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout


# The projects' own names for the add-ons of a cluster file (what the README and the diagram
# call them), written from each project's documentation, not from gpuplane's table.
ADDON_TITLES = {
    "gpuOperator": "NVIDIA GPU Operator",
    "dcgmExporter": "DCGM exporter",
    "kueue": "Kueue",
    "argoWorkflows": "Argo Workflows",
    "prometheusStack": "kube-prometheus-stack",
    "externalSecrets": "External Secrets Operator",
    "jobset": "JobSet",
    "kuberay": "KubeRay",
    "trainer": "Kubeflow Trainer",
    "lws": "LeaderWorkerSet",
    "networkOperator": "NVIDIA Network Operator",
    "opencost": "OpenCost",
    "keda": "KEDA",
    "envoyGateway": "Envoy Gateway",
}
