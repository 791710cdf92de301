"""The acceptance suite image: its Containerfile, build context, sample, CI workflow and smoke test,
read as files and checked against what the rendered templates expect (no container engine here),
and the sample generator run for real: the staging probe stages what it writes."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import torch
from packaging.requirements import Requirement
from ruamel.yaml import YAML

from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO, github_workflow_errors, load_yaml_12, only_job_steps, tree
from workflows.probes import sample
from workflows.probes.models import ModelConfig
from workflows.probes.staging import run_staging
from workflows.suites import placement, program, settings
from workflows.suites.jobs import job_manifest

CONTAINERFILE = REPO / "images" / "acceptance" / "Containerfile"
SMOKE_TEST = REPO / "images" / "acceptance" / "smoke-test.sh"
DOCKERIGNORE = REPO / ".dockerignore"
WORKFLOW = REPO / ".github" / "workflows" / "acceptance-image.yml"
PROBES_CLI = (sys.executable, "-m", "workflows.probes")
SMALL = 64 * 1024
"""data/ bytes for the tests' samples: a few hundred sequences in one shard."""


# --- reading the Containerfile ------------------------------------------------------------------


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, rest = whole.partition(" ")
        found.append((keyword.upper(), rest.strip()))
    return found


@pytest.fixture(scope="module")
def containerfile() -> list[tuple[str, str]]:
    return instructions(CONTAINERFILE.read_text())


def args_defaults(steps: list[tuple[str, str]]) -> dict[str, str]:
    found = {}
    for keyword, rest in steps:
        if keyword == "ARG" and "=" in rest:
            name, _, value = rest.partition("=")
            found[name] = value
    return found


def expand(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: values[m[1]], text)


def stages(steps: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for step in steps:
        if step[0] == "FROM":
            found.append([])
        if found:
            found[-1].append(step)
    return found


def runs(steps: list[tuple[str, str]]) -> str:
    return "\n".join(rest for keyword, rest in steps if keyword == "RUN")


def pyproject() -> dict[str, Any]:
    import tomllib

    with (REPO / "pyproject.toml").open("rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)
    return data


def extra_pin(extra: str, name: str) -> str:
    """The exact version an optional extra of pyproject.toml pins `name` to."""
    for text in pyproject()["project"]["optional-dependencies"][extra]:
        requirement = Requirement(text)
        if requirement.name == name:
            (spec,) = requirement.specifier
            assert spec.operator == "==", text
            return spec.version
    raise AssertionError(f"the {extra} extra has no {name}")


def test_copy_sources_exist_and_are_in_the_build_context(
    containerfile: list[tuple[str, str]],
) -> None:
    copies = [rest for keyword, rest in containerfile if keyword == "COPY"]
    local = [c for c in copies if not c.startswith("--from=")]
    assert local, "the Containerfile copies this repository"
    rules = dockerignore_rules()
    for copy in local:
        *sources, _ = shlex.split(copy)
        for source in sources:
            assert (REPO / source).exists(), source
            assert not ignored(rules, source), f"{source} is left out of the build context"


def test_the_base_image_is_pinned_and_nothing_is_latest(
    containerfile: list[tuple[str, str]],
) -> None:
    text = CONTAINERFILE.read_text()
    assert not re.search(r"latest", text, re.IGNORECASE)
    base = args_defaults(containerfile)["PYTHON_IMAGE"]
    match = re.fullmatch(r"[\w.-]+(?:/[\w.-]+)*:(?P<tag>[\w.-]+)(?:@sha256:[0-9a-f]{64})?", base)
    assert match, base
    assert re.match(r"3\.\d+\.\d+-", match["tag"]), f"{base}: a full Python version, not 3.11"
    python = pyproject()["project"]["requires-python"]
    assert re.fullmatch(r">=3\.(\d+)", python)
    assert int(match["tag"].split(".")[1]) >= int(python.split(".")[1])
    froms = [rest for keyword, rest in containerfile if keyword == "FROM"]
    assert froms and all(f.split()[0] == "${PYTHON_IMAGE}" for f in froms)
    # Debian packages by version too
    for package in re.findall(r"apt-get install[^&]*", runs(containerfile)):
        for word in package.split()[2:]:
            assert word.startswith("-") or "=" in word, word


def test_torch_is_the_probes_pin_in_a_cuda_build_the_pools_drivers_run(
    containerfile: list[tuple[str, str]],
) -> None:
    values = args_defaults(containerfile)
    script = expand(runs(containerfile), values)
    (wanted,) = re.findall(r'"torch==([^"]+)"', script)
    version, _, variant = wanted.partition("+")
    assert version == extra_pin("probes", "torch")
    assert re.fullmatch(r"cu\d{3}", variant), wanted
    assert f'--index-url "https://download.pytorch.org/whl/{variant}"' in script
    # the build fails if pip replaced the CUDA build with PyPI's
    assert re.search(r"torch\.__version__ == want", script) and f'"{wanted}"' in script
    cuda = (int(variant[2:-1]), int(variant[-1]))
    declared = set()
    for path in sorted((REPO / "pools").glob("*.yaml")):
        pool = YAML(typ="safe", pure=True).load(path.read_text())
        declared.add(tuple(int(p) for p in str(pool["spec"]["image"]["cuda"]).split(".")))
    assert declared, "the pools declare the CUDA version their driver supports"
    for pool_cuda in declared:
        # a CUDA build runs on a driver of the same major version that supports its minor
        assert cuda[0] == pool_cuda[0] and cuda <= pool_cuda, (variant, pool_cuda)


def test_the_project_is_installed_with_its_probes_and_s3_extras(
    containerfile: list[tuple[str, str]],
) -> None:
    script = runs(containerfile)
    (install,) = re.findall(r"pip install (\"\.\[[^\]]*\]\")", script)
    extras = set(install.strip('"')[2:-1].split(","))
    assert {"probes", "s3"} <= extras
    assert "-e " not in script and "--editable" not in script
    assert extra_pin("s3", "boto3")
    for pinned in re.findall(r"boto3==([\w.]+)", CONTAINERFILE.read_text()):
        assert pinned == extra_pin("s3", "boto3")


@pytest.fixture(scope="module")
def suite_jobs() -> list[list[dict[str, Any]]]:
    """The Jobs of every acceptance and benchmark suite of the example platform, per suite."""
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    platform = loaded.platform
    found = []
    for name in sorted(platform.clusters):
        for target in placement.targets(ClusterView.of(platform, platform.clusters[name])):
            for steps in (program.acceptance_steps(target), program.benchmark_steps(target)):
                found.append([job_manifest(target, step) for step in steps])
    assert found
    return found


@pytest.fixture(scope="module")
def job_manifests(suite_jobs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [job for jobs in suite_jobs for job in jobs]


def test_the_image_user_is_the_one_the_jobs_run_as(
    containerfile: list[tuple[str, str]], job_manifests: list[dict[str, Any]]
) -> None:
    contexts = {
        json.dumps(j["spec"]["template"]["spec"]["securityContext"], sort_keys=True)
        for j in job_manifests
    }
    (context,) = map(json.loads, contexts)
    assert context["runAsNonRoot"] is True
    runtime = stages(containerfile)[-1]
    (user,) = [rest for keyword, rest in runtime if keyword == "USER"]
    assert user == f"{context['runAsUser']}:{context['runAsGroup']}"
    script = runs(runtime)
    assert f"groupadd --gid {context['runAsGroup']} " in script
    assert f"useradd --uid {context['runAsUser']} --gid {context['runAsGroup']} " in script
    assert context["fsGroup"] == context["runAsGroup"]


def test_the_sample_lies_where_the_dataset_fallback_points(
    containerfile: list[tuple[str, str]],
) -> None:
    url = urlsplit(settings.DATASET_FALLBACK)
    assert url.scheme == "file"
    build, runtime = stages(containerfile)[0], stages(containerfile)[-1]
    assert f"python -m workflows.probes sample --dest {url.path}" in runs(build)
    assert ("COPY", f"--from=build {url.path} {url.path}") in runtime


def test_the_probe_package_lies_where_the_init_containers_copy_it_from(
    containerfile: list[tuple[str, str]], job_manifests: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The build stage's RUN, run here on this checkout (its WORKDIR holds the same `workflows/`),
    lays out exactly `workflows/__init__.py` and `workflows/probes/*.py` at PROBE_PACKAGE; the
    runtime stage copies that folder; every init container of the Jobs copies from it."""
    build, runtime = stages(containerfile)[0], stages(containerfile)[-1]
    (script,) = [rest for key, rest in build if key == "RUN" and settings.PROBE_PACKAGE in rest]
    root = tmp_path / "image"
    done = subprocess.run(
        ["sh", "-ec", script.replace(settings.PROBE_PACKAGE, f"{root}{settings.PROBE_PACKAGE}")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    laid = root / settings.PROBE_PACKAGE.lstrip("/")
    found = sorted(str(p.relative_to(laid)) for p in laid.rglob("*") if p.is_file())
    probes = sorted(p.name for p in (REPO / "workflows" / "probes").glob("*.py"))
    wanted = ["workflows/__init__.py", *(f"workflows/probes/{name}" for name in probes)]
    assert found == wanted
    assert ("COPY", f"--from=build {settings.PROBE_PACKAGE} {settings.PROBE_PACKAGE}") in runtime
    copies = [
        c["command"]
        for job in job_manifests
        for c in job["spec"]["template"]["spec"].get("initContainers", [])
        if c["name"] == "probe-package"
    ]
    assert copies and all(
        c == ["cp", "-R", f"{settings.PROBE_PACKAGE}/workflows", f"{settings.PROBE_COPY}/"]
        for c in copies
    )


@pytest.mark.slow
def test_the_inference_server_serves_the_staged_sample_model(
    suite_jobs: list[list[dict[str, Any]]],
) -> None:
    """Step 2 stages `dataset` into a folder; the server's `--model` is that folder's model/."""
    checked = 0
    for jobs in suite_jobs:
        pods = [job["spec"]["template"]["spec"] for job in jobs]
        served = [
            pod for pod in pods if any(c["name"] == "server" for c in pod.get("initContainers", []))
        ]
        if not served:
            continue
        staged = set()
        for pod in pods:
            plan = json.loads(pod["containers"][0]["args"][0])
            for key, command, _ in plan["run"]:
                if key == "staging":
                    staged.add(command[command.index("--dest") + 1])
        (dest,) = staged
        for pod in served:
            (server,) = [c for c in pod["initContainers"] if c["name"] == "server"]
            assert server["args"][server["args"].index("--model") + 1] == (
                f"{dest}/{sample.MODEL_DIR}"
            )
            checked += 1
    assert checked, "the example platform has an inference pool"


# --- the build context --------------------------------------------------------------------------


def dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    """(excludes, pattern) per line of .dockerignore, as Docker reads them (later lines win)."""
    rules = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        rules.append((not negated, re.compile(regex)))
    return rules


def ignored(rules: list[tuple[bool, re.Pattern[str]]], path: str) -> bool:
    """Whether Docker leaves `path` out: the last rule that matches it or a folder above it."""
    parts = path.strip("/").split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for excludes, pattern in rules:
        if any(pattern.fullmatch(p) for p in prefixes):
            excluded = excludes
    return excluded


@pytest.mark.parametrize(
    ("path", "left_out"),
    [
        (".venv/bin/python", True),
        (".git/HEAD", True),
        ("rendered/prod-east/README.md", True),
        ("tests/cases/render/minimal/expected/x.yaml", True),
        ("bench/out/clusters/a.yaml", True),
        (".pytest_cache/v/cache", True),
        (".mypy_cache/3.11/x.json", True),
        (".hypothesis/examples/x", True),
        ("gpuplane.egg-info/PKG-INFO", True),
        ("renderer/__pycache__/cli.cpython-311.pyc", True),
        ("workflows/probes/__pycache__/sample.cpython-311.pyc", True),
        ("pyproject.toml", False),
        ("README.md", False),
        ("renderer/cli/render.py", False),
        ("renderer/templates/summary.md.j2", False),
        ("workflows/probes/sample.py", False),
        ("schemas/results/result.schema.json", False),
    ],
)
def test_the_build_context_is_only_what_the_image_installs(path: str, left_out: bool) -> None:
    assert ignored(dockerignore_rules(), path) is left_out


# --- the sample ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample written by the command the image build runs."""
    dest = tmp_path_factory.mktemp("sample") / "gpuplane-acceptance"
    done = subprocess.run(
        [*PROBES_CLI, "sample", "--dest", str(dest), "--data-bytes", str(SMALL)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert f"under {dest}" in done.stdout
    return dest


def test_the_sample_is_data_and_model_and_readable_by_every_uid(written: Path) -> None:
    assert sorted(p.name for p in written.iterdir()) == [sample.DATA_DIR, sample.MODEL_DIR]
    for path in [written, *written.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        # the Jobs run as 1000, the Workflow's own pods as 65532: others must read
        assert mode == (0o755 if path.is_dir() else 0o644), (path, oct(mode))


def test_the_sample_is_the_same_bytes_every_time(written: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    sample.write_sample(again, data_bytes=SMALL)
    assert tree(again) == tree(written)
    other = tmp_path / "bigger"
    sample.write_sample(other, data_bytes=2 * SMALL)
    assert tree(other)["model/model.safetensors"] == tree(written)["model/model.safetensors"]
    assert tree(other)["data/meta.json"] != tree(written)["data/meta.json"]


def test_sample_refuses_a_folder_that_is_not_empty(written: Path) -> None:
    done = subprocess.run(
        [*PROBES_CLI, "sample", "--dest", str(written)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "is not an empty folder" in done.stderr


def test_the_staging_probe_stages_the_sample_from_a_file_url(written: Path, tmp_path: Path) -> None:
    """What step 2 runs on a cluster without an object store, with the image's sample."""
    dest = tmp_path / "workspace" / "data"
    out = tmp_path / "staging.json"
    options = ["--dest", str(dest), "--out", str(out), "--cluster", "c", "--pool", "p"]
    done = subprocess.run(
        [*PROBES_CLI, "staging", "--source", written.as_uri(), *options],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["ok"] is True and result["error"] is None
    copied = tree(dest)
    assert copied == tree(written)
    assert result["metrics"]["files"] == len(copied)
    assert result["metrics"]["bytes"] == sum(map(len, copied.values()))
    direct = run_staging(source=written.as_uri())
    assert direct["ok"] and direct["metrics"]["files"] == len(copied)


def test_the_data_follows_the_training_probes_rule(written: Path) -> None:
    """The shards hold the sequences the training probe trains on (models.synthetic_batches)."""
    meta = json.loads((written / "data" / "meta.json").read_text())
    config = ModelConfig()
    assert meta["vocab"] == config.vocab and meta["tokensPerSequence"] == config.seq_len + 1
    assert meta["dtype"] == "uint16-le"
    sequences = 0
    for shard in meta["shards"]:
        raw = (written / "data" / shard["file"]).read_bytes()
        tokens = torch.tensor(struct.unpack(f"<{len(raw) // 2}H", raw)).reshape(
            -1, meta["tokensPerSequence"]
        )
        assert len(tokens) == shard["sequences"]
        assert torch.equal(tokens[:, 1:], (tokens[:, :-1] * 3 + 7) % config.vocab)
        assert int(tokens.max()) < config.vocab
        assert len(set(tokens[:, 0].tolist())) > 1, "sequences start at different tokens"
        sequences += len(tokens)
    assert sequences == meta["sequences"] == SMALL // (2 * meta["tokensPerSequence"])


def read_safetensors(path: Path) -> tuple[dict[str, Any], bytes]:
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + size]), raw[8 + size :]


def test_the_model_is_a_complete_llama_checkpoint(written: Path) -> None:
    """Every tensor a LlamaForCausalLM of config.json has, in float16, back to back; a tokenizer
    with exactly the config's vocabulary; what vLLM reads from a model folder."""
    model = written / sample.MODEL_DIR
    config = json.loads((model / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert config["hidden_size"] == config["num_attention_heads"] * config["head_dim"]
    assert config["head_dim"] in (64, 128)
    header, body = read_safetensors(model / "model.safetensors")
    assert header.pop("__metadata__") == {"format": "pt"}
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    kv = config["num_key_value_heads"] * config["head_dim"]
    expected = {
        "model.embed_tokens.weight": [vocab, hidden],
        "lm_head.weight": [vocab, hidden],
        "model.norm.weight": [hidden],
    }
    for n in range(config["num_hidden_layers"]):
        at = f"model.layers.{n}."
        expected |= {
            at + "self_attn.q_proj.weight": [hidden, hidden],
            at + "self_attn.k_proj.weight": [kv, hidden],
            at + "self_attn.v_proj.weight": [kv, hidden],
            at + "self_attn.o_proj.weight": [hidden, hidden],
            at + "mlp.gate_proj.weight": [config["intermediate_size"], hidden],
            at + "mlp.up_proj.weight": [config["intermediate_size"], hidden],
            at + "mlp.down_proj.weight": [hidden, config["intermediate_size"]],
            at + "input_layernorm.weight": [hidden],
            at + "post_attention_layernorm.weight": [hidden],
        }
    assert {name: t["shape"] for name, t in header.items()} == expected
    end = 0
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"]):
        assert entry["dtype"] == "F16"
        begin, stop = entry["data_offsets"]
        assert begin == end and stop - begin == 2 * torch.Size(entry["shape"]).numel(), name
        values = torch.frombuffer(bytearray(body[begin:stop]), dtype=torch.float16)
        assert torch.isfinite(values).all()
        if name.endswith("norm.weight"):
            assert bool((values == 1).all())
        else:
            std = float(values.float().std())
            assert 0.015 < std < 0.025 and float(values.abs().max()) < 0.04, (name, std)
        end = stop
    assert end == len(body)
    tokenizer = json.loads((model / "tokenizer.json").read_text())
    ids = sorted(
        [*tokenizer["model"]["vocab"].values(), *(t["id"] for t in tokenizer["added_tokens"])]
    )
    assert ids == list(range(vocab))
    special = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
    assert special == {"<s>": config["bos_token_id"], "</s>": config["eos_token_id"]}
    tokenizer_config = json.loads((model / "tokenizer_config.json").read_text())
    assert tokenizer_config["model_max_length"] == config["max_position_embeddings"]
    assert "chat_template" in tokenizer_config  # /v1/chat/completions needs one


def test_the_tokenizer_maps_each_byte_to_its_own_id() -> None:
    symbols = sample.byte_symbols()
    assert len(set(symbols)) == 256
    assert symbols[ord("A")] == "A" and symbols[ord(" ")] == "\u0120"  # GPT-2's byte alphabet


@pytest.mark.slow
def test_the_model_loads_and_generates_with_transformers(written: Path) -> None:
    """The model and tokenizer load as Hugging Face's own classes (what vLLM builds on) and
    generate tokens."""
    import transformers

    model_dir = str(written / sample.MODEL_DIR)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer("Write one sentence about GPUs.")["input_ids"]
    assert ids[0] == sample.VOCAB and ids[1:] == list(b"Write one sentence about GPUs.")
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir)
    output = model.generate(
        torch.tensor([ids]),
        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
        max_new_tokens=4,
        do_sample=False,
        pad_token_id=sample.VOCAB + 1,
    )
    assert output.shape[1] > len(ids)


# --- the CI workflow ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workflow() -> Any:
    return load_yaml_12(WORKFLOW)


@pytest.fixture(scope="module")
def steps(workflow: Any) -> list[dict[str, Any]]:
    return only_job_steps(workflow)


def step_named(steps: list[dict[str, Any]], text: str) -> dict[str, Any]:
    found = [s for s in steps if text in s.get("name", "")]
    assert len(found) == 1, f"one step is named {text!r}"
    return found[0]


def test_workflow_is_valid_for_github_actions(workflow: Any) -> None:
    """Against SchemaStore's workflow schema, as check-jsonschema ships it (no network)."""
    assert not github_workflow_errors(workflow)


def test_workflow_runs_when_the_image_inputs_change(
    workflow: Any, containerfile: list[tuple[str, str]]
) -> None:
    pull, push = workflow["on"]["pull_request"], workflow["on"]["push"]
    assert push["branches"] == ["main"]
    assert pull["paths"] == push["paths"]
    patterns = [
        re.compile(re.escape(p).replace(r"\*\*", ".*").replace(r"\*", "[^/]*"))
        for p in pull["paths"]
    ]
    inputs = [
        str(CONTAINERFILE.relative_to(REPO)),
        ".dockerignore",
        str(WORKFLOW.relative_to(REPO)),
    ]
    for keyword, rest in containerfile:
        if keyword == "COPY" and not rest.startswith("--from="):
            *sources, _ = shlex.split(rest)
            inputs += [f"{s}/x.py" if (REPO / s).is_dir() else s for s in sources]
    for path in inputs:
        assert any(p.fullmatch(path) for p in patterns), path
    assert not any(p.fullmatch("docs/kueue.md") for p in patterns)


def test_workflow_permissions_are_read_only(workflow: Any) -> None:
    assert workflow["permissions"] == {"contents": "read"}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read"}
    assert "latest" not in job["runs-on"]


def test_workflow_actions_are_pinned(steps: list[dict[str, Any]]) -> None:
    used = [s["uses"] for s in steps if "uses" in s]
    assert {u.split("@")[0] for u in used} >= {
        "actions/checkout",
        "docker/setup-buildx-action",
        "docker/build-push-action",
        "docker/login-action",
    }
    for action in used:
        assert re.fullmatch(r"[\w.-]+/[\w./-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", action), action


def test_no_expression_is_pasted_into_a_script(steps: list[dict[str, Any]]) -> None:
    for step in steps:
        assert "${{" not in step.get("run", ""), step.get("name")


def test_the_registry_comes_from_settings_and_pushes_only_from_main(
    workflow: Any, steps: list[dict[str, Any]]
) -> None:
    (job,) = workflow["jobs"].values()
    assert job["env"]["REGISTRY"] == "${{ vars.ACCEPTANCE_IMAGE_REGISTRY }}"
    assert job["env"]["PUBLISH"] == (
        "${{ github.event_name != 'pull_request' && github.ref == 'refs/heads/main' }}"
    )
    text = WORKFLOW.read_text()
    assert "registry.example.com" not in "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("#")
    )
    login = next(s for s in steps if s.get("uses", "").startswith("docker/login-action@"))
    assert login["with"]["password"] == "${{ secrets.ACCEPTANCE_IMAGE_PASSWORD }}"
    pushing = [s for s in steps if s.get("with", {}).get("push") is True]
    assert pushing and all(s["if"] == "env.PUBLISH == 'true'" for s in [*pushing, login])
    build = step_named(steps, "Build")
    assert build["with"]["push"] is False and build["with"]["load"] is True
    for step in (build, *pushing):
        assert step["with"]["file"] == str(CONTAINERFILE.relative_to(REPO))
        assert step["with"]["context"] == "."
    order = [steps.index(s) for s in (build, step_named(steps, "Smoke test"), *pushing)]
    assert order == sorted(order), "pushed only after the smoke test passed"


def _bash(script: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a step's script in a folder holding this repository's pyproject.toml, with python3
    being this interpreter and `docker` a stub that prints its arguments and exits $STUB_EXIT."""
    (tmp_path / "pyproject.toml").write_bytes((REPO / "pyproject.toml").read_bytes())
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        (bin_dir / "python3").symlink_to(sys.executable)
    stub = bin_dir / "docker"
    stub.write_text('#!/bin/sh\necho "${STUB_SAYS:-}"\nexit "${STUB_EXIT:-0}"\n')
    stub.chmod(0o755)
    return subprocess.run(
        ["bash", "-e", "-c", script],
        env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def test_the_pushed_tag_is_the_one_suite_image_names(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    """With the registry set to SUITE_IMAGE's prefix, the version tag main pushes is SUITE_IMAGE."""
    repository, _, tag = settings.SUITE_IMAGE.rpartition(":")
    prefix, _, name = repository.rpartition("/")
    script = step_named(steps, "Image name and tags")["run"]
    out = tmp_path / "out"
    env = {"REGISTRY": prefix, "PUBLISH": "true", "GITHUB_SHA": "a" * 40, "GITHUB_OUTPUT": str(out)}
    done = _bash(script, env, tmp_path)
    assert done.returncode == 0, done.stderr
    found = outputs(out)
    assert f"{found['image']}:{found['version']}" == settings.SUITE_IMAGE
    assert found["version"] == tag and found["image"].endswith(f"/{name}")
    assert found["sha"] == "a" * 40
    assert found["registry"] == prefix.split("/")[0]


def test_main_without_a_registry_fails_and_pull_requests_build_locally(
    steps: list[dict[str, Any]], tmp_path: Path
) -> None:
    script = step_named(steps, "Image name and tags")["run"]
    out = tmp_path / "out"
    env = {"PUBLISH": "true", "GITHUB_SHA": "b" * 40, "GITHUB_OUTPUT": str(out)}
    refused = _bash(script, env, tmp_path)
    assert refused.returncode == 1 and "ACCEPTANCE_IMAGE_REGISTRY" in refused.stdout
    local = _bash(script, {**env, "PUBLISH": "false"}, tmp_path)
    assert local.returncode == 0, local.stderr
    assert outputs(out)["image"] == "gpuplane-acceptance"


def test_a_version_tag_is_never_moved(steps: list[dict[str, Any]], tmp_path: Path) -> None:
    step = step_named(steps, "Tags to push")
    assert step["if"] == "env.PUBLISH == 'true'"
    script = step["run"]
    image, version, sha = "registry.example.com/base/gpuplane-acceptance", "v0.1.0", "c" * 40
    env = {"IMAGE": image, "VERSION": version, "SHA": sha}
    out = tmp_path / "out"
    absent = _bash(
        script,
        {**env, "GITHUB_OUTPUT": str(out), "STUB_EXIT": "1", "STUB_SAYS": "ERROR: not found"},
        tmp_path,
    )
    assert absent.returncode == 0, absent.stderr
    assert outputs(out)["tags"] == f"{image}:{sha},{image}:{version}"
    out.unlink()
    present = _bash(script, {**env, "GITHUB_OUTPUT": str(out)}, tmp_path)
    assert present.returncode == 0 and "::warning::" in present.stdout
    assert outputs(out)["tags"] == f"{image}:{sha}"
    out.unlink()
    unknown = _bash(
        script,
        {**env, "GITHUB_OUTPUT": str(out), "STUB_EXIT": "1", "STUB_SAYS": "unauthorized"},
        tmp_path,
    )
    assert unknown.returncode == 1 and not out.exists()


def test_the_smoke_test_runs_the_suites_commands_as_the_jobs_do(
    job_manifests: list[dict[str, Any]],
) -> None:
    text = SMOKE_TEST.read_text()
    assert os.access(SMOKE_TEST, os.X_OK)
    context = job_manifests[0]["spec"]["template"]["spec"]["securityContext"]
    assert f"--user {context['runAsUser']}:{context['runAsGroup']}" in text
    assert f"--source {settings.DATASET_FALLBACK} " in text
    assert "torchrun --standalone" in text
    assert f"gpuplane -C {settings.PLATFORM_DIR} acceptance report" in text
    assert f":{settings.PLATFORM_DIR}:ro" in text
    # the torch steps' init container and the production image's python3 on the copy
    assert f"cp -R {settings.PROBE_PACKAGE}/workflows {settings.PROBE_COPY}/" in text
    assert f"--env PYTHONPATH={settings.PROBE_COPY}" in text
    assert "python3 -m workflows.probes preflight" in text
    done = subprocess.run(["bash", "-n", str(SMOKE_TEST)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
