"""`gpuplane fit` (and `--usage`) as a CI tool facing hostile files: YAML bombs, tags, bad
encodings, Lists of Lists, wrong-typed and huge snapshots, values carrying terminal escapes and
GitHub workflow commands, and the exit codes and bytes a pipeline relies on.

What holds is asserted plainly; what breaks is `xfail(strict=True)` with the upstream behaviour it
contradicts in its docstring (kubectl's cli-runtime, the API server's validation, Kueue v0.19.2's
source in `git -C /work/.mirror/kubernetes-sigs+kueue/repo show v0.19.2:<path>`). The expected
values come from those sources, never from fit's output. None of these tests needs ../shared:
they build their own job files from the example platform's teams (teams/llm.yaml: namespaces
llm-train and llm-serve on prod-east, priority class prod-standard; teams/llm-eval.yaml:
llm-eval-train on staging-west, staging-release-candidate).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from renderer.admission.answer.result import ERROR, FITS, NEVER, FileFit
from renderer.admission.answer.text import file_json, file_text
from renderer.admission.apiserver.metadata import go_quote
from renderer.cli import main
from renderer.commands.fit import check_file
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.conftest import REPO

PRIORITY = "prod-standard"
CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)
"""Characters that must never reach a terminal or CI log raw (tab and newline are the output's own)."""

EVIL = (
    "x\x1b]0;retitled\x07\x1b[31mred\x1b[0m ::error file=a.py,line=1::forged "
    "##[group]folded \u202eesrever <script>alert(1)</script> [link](https://e.example) `code` |"
)
"""A value carrying an OSC retitle, SGR colour, a workflow command (inline), the legacy `##[`
form, a bidi override, HTML and Markdown: every output form must print it inert."""


@pytest.fixture(scope="module")
def platform() -> Platform:
    loaded = load_platform(REPO)
    assert not [d for d in loaded.diagnostics if d.severity.value == "error"], loaded.diagnostics
    return loaded.platform


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def put(text: str | bytes, name: str = "job.yaml") -> Path:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return put


COMPLIANT: dict[str, tuple[str, str, int]] = {
    "llm-train": ("llm", "CC-1050", 172_800),
    "llm-serve": ("llm", "CC-1050", 172_800),
    "llm-eval-train": ("llm-eval", "CC-1050", 259_200),
}
"""What the platform's admission policies ask of a Job in each namespace the tests use
(teams/llm.yaml, teams/llm-eval.yaml): the common labels gpuplane.dev/team and
gpuplane.dev/cost-center of the namespace's team, and a TTL within its `retention.finishedJobs`
(48h, 72h). A namespace no team owns gets the llm team's, which no policy there asks for."""

SECURITY_CONTEXT = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}
"""Pod Security's `restricted` profile (what llm-serve enforces): so that what these tests
check is fit facing hostile input, not the chain refusing a Job the platform does not allow."""


def job(
    name: str = "train",
    namespace: str | None = "llm-train",
    *,
    parallelism: Any = None,
    cpu: Any = '"1"',
    priority: str = PRIORITY,
) -> str:
    """A Job of one CPU pod with its priority label, compliant with the platform's admission
    policies (block YAML, `{{`-free values only)."""
    team, cost_center, ttl = COMPLIANT.get(namespace or "llm-train", COMPLIANT["llm-train"])
    ns = f"\n  namespace: {namespace}" if namespace is not None else ""
    par = f"\n  parallelism: {parallelism}" if parallelism is not None else ""
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}{ns}
  labels:
    kueue.x-k8s.io/priority-class: {priority}
    gpuplane.dev/team: {team}
    gpuplane.dev/cost-center: {cost_center}
spec:{par}
  ttlSecondsAfterFinished: {ttl}
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: registry.example.com/llm/train:1
          securityContext: {json.dumps(SECURITY_CONTEXT)}
          resources:
            requests: {{cpu: {cpu}, memory: 1Gi}}
            limits: {{memory: 1Gi}}
"""


def job_object(name: str = "train", namespace: str = "llm-train") -> dict[str, Any]:
    """The same Job as data, for values YAML's block style cannot carry."""
    team, cost_center, ttl = COMPLIANT.get(namespace, COMPLIANT["llm-train"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kueue.x-k8s.io/priority-class": PRIORITY,
                "gpuplane.dev/team": team,
                "gpuplane.dev/cost-center": cost_center,
            },
        },
        "spec": {
            "ttlSecondsAfterFinished": ttl,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": "registry.example.com/llm/train:1",
                            "securityContext": json.loads(json.dumps(SECURITY_CONTEXT)),
                            "resources": {
                                "requests": {"cpu": "1", "memory": "1Gi"},
                                "limits": {"memory": "1Gi"},
                            },
                        }
                    ],
                }
            },
        },
    }


SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: llm-train
spec:
  ports: [{port: 80}]
"""


def answer(platform: Platform, path: Path, **options: Any) -> FileFit:
    """fit's answer, after checking that both output forms build without raising."""
    result = check_file(platform, path, **options)
    assert file_text(result).endswith("\n")
    json.dumps(file_json(result))
    return result


def cli(*args: str) -> tuple[int, str]:
    """`gpuplane -C REPO fit ARGS`, in-process; a traceback fails the test."""
    result = CliRunner().invoke(main, ["-C", str(REPO), "fit", *args], catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"fit raised {result.exception!r}\n{result.output}")
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def cli_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """fit in a process of its own: a crash of the interpreter must not take pytest with it."""
    return subprocess.run(
        [sys.executable, "-m", "renderer", "-C", str(REPO), "fit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=REPO,
        check=False,
    )


def reasons_of(result: FileFit) -> str:
    return " ".join(result.worst.reasons)


def assert_inert(text: str) -> None:
    """No raw control, format or line-separator character, no line a GitHub runner obeys."""
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line


# --- YAML bombs, depth, size -----------------------------------------------------------------


def test_a_billion_laughs_document_after_the_job_is_refused_before_expanding(
    platform: Platform, write: Callable[..., Path]
) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    result = answer(platform, write(job() + "---\n" + "\n".join(lines) + "\n"))
    assert result.verdict == ERROR and not result.admissible
    assert "aliases expand this document" in reasons_of(result)


def test_documents_each_under_the_limit_are_capped_together(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """50 documents of ~9,200 nodes each (aliases expanded): each passes the per-document cap,
    together they pass the file's 100,000 (docs/fit.md)."""
    doc = "a0: &a0 [" + ", ".join(["x"] * 90) + "]\nb: [" + ", ".join(["*a0"] * 100) + "]\n"
    result = answer(platform, write(job() + "---\n" + "---\n".join([doc] * 50)))
    assert result.verdict == ERROR
    assert "more than 100,000 nodes together" in reasons_of(result)


@pytest.mark.parametrize("count", [201, 100_000])
def test_too_many_documents_are_refused(
    platform: Platform, write: Callable[..., Path], count: int
) -> None:
    result = answer(platform, write(job() + "---\n{}\n" * min(count, 300) + "---\n" * count))
    assert result.verdict == ERROR
    assert "more than 200 YAML documents" in reasons_of(result)


@pytest.mark.parametrize(
    "nested",
    ["[" * 500 + "]" * 500, "{a: " * 500 + "1" + "}" * 500, "- " * 500 + "x"],
    ids=["flow-sequence", "flow-mapping", "block-sequence"],
)
def test_nesting_past_64_levels_is_refused(
    platform: Platform, write: Callable[..., Path], nested: str
) -> None:
    result = answer(platform, write(job() + "---\n" + nested + "\n"))
    assert result.verdict == ERROR
    assert "nesting deeper than 64 levels" in reasons_of(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    "nested",
    ["[" * 50_000 + "]" * 50_000, "[{a: " * 20_000 + "1" + "}]" * 20_000, "- " * 50_000 + "x"],
    ids=["flow-sequence", "flow-mixed", "block-sequence"],
)
def test_very_deep_nesting_is_refused_not_a_segfault(tmp_path: Path, nested: str) -> None:
    """A 100 KB file of 50,000 nested `[` (or `- ` on one line, or `[{a: `): well under the
    1 MiB limit. `load_stream` composes the whole node graph with ruamel's C parser
    (`YAML(typ="safe", pure=False).compose_all`) and only then lets `_Builder.check` count the
    depth; the composer recurses once per level and the process dies with SIGSEGV (exit 139, no
    output) from about 30,000 levels. `load_file` (every gpuplane input: teams/, pools/, ...)
    shares `_compose` and dies the same way. Expected: the loader's own answer,
    `nesting deeper than 64 levels`, exit 1. (A pre-pass over `YAML().parse(text)` events,
    which libyaml produces with an explicit state stack, can stop at level 65 before composing.)"""
    path = tmp_path / "deep.yaml"
    path.write_text(nested + "\n")
    done = cli_process(str(path))
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert "nesting deeper than 64 levels" in done.stdout


def test_a_huge_scalar_within_the_size_limit_is_read_and_printed_inert(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """240 KB of clear-screen escapes in one annotation value: within fit's 1 MiB file and the
    API server's 256 KiB of annotations (see the test of metadata below for 400 KB)."""
    big = "\x1b[2J" * 60_000
    text = job().replace(
        "  labels:\n",
        f'  annotations:\n    note: "{big.encode("unicode_escape").decode()}"\n  labels:\n',
    )
    result = answer(platform, write(text))
    assert result.verdict == FITS
    assert_inert(file_text(result))


def test_a_file_over_one_mebibyte_is_refused_before_reading(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(platform, write(job() + "#" * (1024 * 1024) + "\n"))
    assert result.verdict == ERROR
    assert "the limit is 1,048,576" in reasons_of(result)


def test_a_large_alias_free_document_is_not_called_an_alias_bomb(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """kubectl reads a ConfigMap of 4,000 keys (~8,000 scalar nodes, plus the Job: ~12,000,
    no anchor, no alias) like any other; docs/fit.md caps a file at 100,000 nodes in all. fit
    applies `load_file`'s per-document MAX_EXPANDED_NODES (10,000) and says `aliases expand this
    document beyond 10,000 nodes`: a false reason, in a file with no alias at all. Expected:
    the Job is read (or, if a per-document cap is kept, a reason that does not name aliases)."""
    data = {f"k{i}": "v" for i in range(6_000)}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": data}
    result = answer(platform, write(job() + "---\n" + json.dumps(config) + "\n"))
    assert "alias" not in reasons_of(result)
    assert result.verdict == FITS


# --- tags, encodings, line ends ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "shown"),
    [
        ("!!python/object/apply:os.system ['echo pwned']\n", "!!python/object/apply:os.system"),
        ("--- !!binary aGVsbG8=\n", "!!binary"),
        ("kind: !custom Job\n", "!custom"),
        ("--- !!set {a, b}\n", "!!set"),
    ],
)
def test_tags_are_refused_and_never_built(
    platform: Platform, write: Callable[..., Path], document: str, shown: str
) -> None:
    result = answer(platform, write(job() + "---\n" + document))
    assert result.verdict == ERROR
    assert f"YAML tag '{shown}' is not allowed" in reasons_of(result)


@pytest.mark.parametrize(
    ("encode", "expected"),
    [
        (lambda t: t.replace("train\n", "caf\xe9\n", 1).encode("latin-1"), "0xe9 is not valid"),
        (lambda t: t.encode("utf-16"), "0xff is not valid"),
        (lambda t: t.replace("train\n", "tr\x00ain\n", 1).encode(), "#x0000"),
    ],
    ids=["latin-1", "utf-16", "nul"],
)
def test_bytes_that_are_not_utf8_text_are_an_error(
    platform: Platform,
    write: Callable[..., Path],
    encode: Callable[[str], bytes],
    expected: str,
) -> None:
    result = answer(platform, write(encode(job())))
    assert result.verdict == ERROR and not result.admissible
    assert expected in reasons_of(result)


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: b"\xef\xbb\xbf" + t.encode(),
        lambda t: t.replace("\n", "\r\n").encode(),
        lambda t: b"\xef\xbb\xbf" + t.replace("\n", "\r\n").encode(),
    ],
    ids=["bom", "crlf", "bom-crlf"],
)
def test_a_bom_and_crlf_line_ends_read_as_the_plain_file(
    platform: Platform, write: Callable[..., Path], encode: Callable[[str], bytes]
) -> None:
    """kubectl (sigs.k8s.io/yaml, go-yaml) reads both; fit must give the same answer."""
    text = job() + "---\n" + SERVICE
    plain = file_json(answer(platform, write(text, "plain.yaml")))
    other = file_json(answer(platform, write(encode(text), "other.yaml")))
    assert plain["verdict"] == FITS
    for body in (plain, other):
        body.pop("file")
        for workload in body["workloads"]:
            workload.pop("file")
    assert other == plain


# --- Lists, empty and non-object documents ----------------------------------------------------


def test_a_list_of_lists_is_flattened_with_its_null_items_skipped(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """kubectl's FlattenListVisitor (k8s.io/cli-runtime pkg/resource/visitor.go) replaces a List
    by its items, recursively."""
    inner = {"apiVersion": "v1", "kind": "List", "items": [job_object("deepest")]}
    middle = {"apiVersion": "v1", "kind": "List", "items": [job_object("inner"), None, inner]}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    outer = {"apiVersion": "v1", "kind": "List", "items": [middle, config]}
    result = answer(platform, write(json.dumps(outer)))
    assert [(w.kind, w.name) for w in result.workloads] == [("Job", "inner"), ("Job", "deepest")]
    assert [(i.kind, i.name, i.why) for i in result.ignored] == [
        ("ConfigMap", "c", "not a workload")
    ]
    assert result.admissible


@pytest.mark.parametrize(
    "text",
    ["apiVersion: v1\nkind: List\nitems: []\n", "# a comment\n---\n# another\n", "---\n---\n"],
    ids=["empty-list", "comments", "empty-documents"],
)
def test_a_file_with_no_object_is_an_error(
    platform: Platform, write: Callable[..., Path], text: str
) -> None:
    result = answer(platform, write(text))
    assert result.verdict == ERROR and not result.admissible
    code, _ = cli(str(write(text, "cli.yaml")))
    assert code == 1


def test_an_empty_trailing_document_is_no_object(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(platform, write(job() + "---\n# trailing comment\n---\n"))
    assert [w.name for w in result.workloads] == ["train"] and result.ignored == ()


# --- wrong-typed fields ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("parallelism", "-3", "must not be negative"),
        ("parallelism", "1.5", "must be an integer"),
        ("parallelism", '"3"', "must be an integer"),
        ("parallelism", "true", "not a boolean"),
        ("cpu", '"-1"', "must be greater than or equal to 0"),  # ValidateNonnegativeQuantity
        ("cpu", '"1e999"', "not a quantity fit counts"),
        ("cpu", '"1Kb"', "not a Kubernetes quantity"),
        ("cpu", "[1]", "cpu"),
    ],
)
def test_wrong_typed_counts_and_quantities_are_an_error_not_a_traceback(
    platform: Platform, write: Callable[..., Path], field: str, value: str, expected: str
) -> None:
    text = job(parallelism=value) if field == "parallelism" else job(cpu=value)
    result = answer(platform, write(text))
    assert result.verdict == ERROR and not result.admissible
    assert expected in reasons_of(result)


def with_value(obj: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A copy of `obj` with `value` at `path` (list items by index; the mappings on the way
    made where absent)."""
    changed = json.loads(json.dumps(obj))
    here: Any = changed
    for key in path[:-1]:
        here = here[key] if isinstance(key, int) else here.setdefault(key, {})
    here[path[-1]] = value
    return changed


def pod_object() -> dict[str, Any]:
    job = job_object("one")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": job["metadata"],
        "spec": job["spec"]["template"]["spec"],
    }


def deployment_object() -> dict[str, Any]:
    pod = pod_object()
    spec = {**pod["spec"], "restartPolicy": "Always"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {**pod["metadata"], "name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec},
        },
    }


@pytest.mark.parametrize(
    ("path", "value", "go_type", "verdict"),
    [
        (("metadata", "labels"), ["x"], "array into Go struct field ObjectMeta.metadata.labels", ERROR),
        (("metadata", "labels"), "x", "string into Go struct field ObjectMeta.metadata.labels", ERROR),
        (("metadata", "ownerReferences"), 5, "number into Go struct field ObjectMeta.metadata.ownerReferences", NEVER),
        (("spec", "template", "spec", "volumes"), 5, "number into Go struct field PodSpec.spec.template.spec.volumes", NEVER),
        (("spec", "template", "spec", "containers", 0, "securityContext", "runAsUser"), 2**70, f"number {2**70} into Go struct field SecurityContext.spec.template.spec.containers.securityContext.runAsUser of type int64", NEVER),
    ],
    ids=["labels-list", "labels-string", "owner-references-number", "volumes-number", "run-as-user-2-to-the-70"],
)  # fmt: skip
def test_a_wrong_typed_field_meets_every_gate_without_a_traceback(
    platform: Platform,
    write: Callable[..., Path],
    path: tuple[str | int, ...],
    value: Any,
    go_type: str,
    verdict: str,
) -> None:
    """The API server's decoder refuses each (`json: cannot unmarshal <type> into Go struct
    field ...`); the chain's gates after it (Kueue's defaulting webhooks, Pod Security's
    volume defaulting, the admission policies' CEL) still see the object and must answer, not
    raise, and not refuse in words of gpuplane's CEL engine that no API server says (it
    converted 2^70 with an error quoting the whole pod spec, in every policy). Where Kueue's
    reader cannot read the object either, the answer stays `error`."""
    result = answer(platform, write(json.dumps(with_value(job_object(), path, value))))
    (job,) = result.workloads
    messages = [r.message for o in job.chain for r in o.refusals]
    assert any(
        f"cannot be handled as a Job: json: cannot unmarshal {go_type}" in m for m in messages
    )
    assert not any("out of range" in m or "Iteration budget" in m for m in messages), messages
    assert result.verdict == verdict


@pytest.mark.parametrize(
    ("make", "path"),
    [
        (job_object, ("metadata", "annotations")),
        (pod_object, ("spec", "schedulingGates")),
        (deployment_object, ("spec", "template", "metadata", "annotations")),
        (deployment_object, ("spec", "template", "metadata", "labels")),
    ],
    ids=["job-annotations", "pod-scheduling-gates", "template-annotations", "template-labels"],
)
def test_a_null_field_is_an_absent_one(
    platform: Platform,
    write: Callable[..., Path],
    make: Callable[[], dict[str, Any]],
    path: tuple[str, ...],
) -> None:
    """Go's decoder leaves a nil map or slice for `null` (encoding/json: "unmarshals a JSON
    null into a map, slice or pointer by setting it to nil"), so the API server reads each as
    absent; Kueue's webhooks then add the gate, annotation or labels as to any other. A
    Deployment whose template has no labels is refused by the API server (its selector matches
    no template label), and fit's answer for it is the same with `null`."""
    original = make()
    plain = file_json(answer(platform, write(json.dumps(original), "plain.json")))
    nulled = file_json(
        answer(platform, write(json.dumps(with_value(original, path, None)), "null.json"))
    )
    without = json.loads(json.dumps(original))
    here = without
    for key in path[:-1]:
        here = here[key]
    here.pop(path[-1], None)
    absent = file_json(answer(platform, write(json.dumps(without), "absent.json")))
    for body in (plain, nulled, absent):
        body.pop("file")
        for workload in body["workloads"]:
            workload.pop("file")
    assert nulled == absent
    if path[-1] != "labels":
        assert nulled == plain and plain["verdict"] == FITS


def test_a_wrong_typed_pod_template_label_map_is_an_error_not_a_traceback(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """Pod Security reads a RayCluster's pod templates with Kueue's reader; a head template
    whose `metadata.labels` is a string escaped the reader's own error handling."""
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": job_object("ray")["metadata"],
        "spec": {
            "headGroupSpec": {
                "template": {"metadata": {"labels": "x"}, "spec": pod_object()["spec"]}
            }
        },
    }
    result = answer(platform, write(json.dumps(ray)))
    assert result.verdict == ERROR
    assert "spec.headGroupSpec.template.metadata.labels must be a mapping" in reasons_of(result)


@pytest.mark.slow
def test_more_list_items_than_the_cel_engine_iterates_is_no_refusal(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """gpuplane's CEL engine (cel-cpp) stops one evaluation after 10,000 comprehension
    iterations (`Iteration budget exceeded`); the API server's cel-go has no such limit, only a
    cost budget (k8s.io/apiserver pkg/apis/cel/config.go `PerCallLimit`, 1,000,000) that fit
    does not model. The secret-env policy iterates every env entry: 10,000 of them are no
    reason to refuse the Job, and no API server words; fit says it could not evaluate it."""
    obj = job_object()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": f"E{i}", "value": "v"} for i in range(10_000)]
    result = answer(platform, write(json.dumps(obj)))
    (job,) = result.workloads
    assert not any("Iteration budget" in r.message for o in job.chain for r in o.refusals)
    assert result.verdict == FITS
    notes = [n for o in job.chain for n in o.notes]
    assert any("gpuplane-secret-env" in n and "10,000 iterations" in n for n in notes), notes


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan"])
def test_infinite_and_nan_numbers_are_refused(
    platform: Platform, write: Callable[..., Path], value: str
) -> None:
    result = answer(platform, write(job(cpu=value)))
    assert result.verdict == ERROR
    assert "is not a finite number" in reasons_of(result)


@pytest.mark.parametrize("cpu", ['"500e-3"', '"1e0"', '".5"', '"+1"', '"1."', '"500000u"'])
def test_every_form_of_kubernetes_quantity_is_read(
    platform: Platform, write: Callable[..., Path], cpu: str
) -> None:
    """k8s.io/apimachinery pkg/api/resource/quantity.go, the Quantity serialization format:
    `<quantity> ::= <signedNumber><suffix>`, `<number> ::= <digits> | <digits>.<digits> |
    <digits>. | .<digits>`, `<signedNumber> ::= <number> | <sign><number>`, `<suffix> ::=
    <binarySI> | <decimalExponent> | <decimalSI>`, `<decimalExponent> ::= "e" <signedNumber> |
    "E" <signedNumber>`; `ParseQuantity` also takes the `n` and `u` suffixes
    (suffix.go `decimalSuffixes`). Every value here is one core or half a core, which the API
    server stores and Kueue counts; fit answers `error: not a Kubernetes quantity`."""
    result = answer(platform, write(job(cpu=cpu)))
    assert result.verdict == FITS, reasons_of(result)


def test_a_jobset_of_more_pod_sets_than_a_workload_holds_is_never_admitted(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """Kueue v0.19.2 apis/kueue/v1beta2/workload_types.go `WorkloadSpec.PodSets`: "There must be
    at least one element and at most 18" (`+kubebuilder:validation:MaxItems=18`;
    pkg/controller/jobframework/constants.go `MaxPodSets = 18`). The JobSet integration makes one
    pod set per replicatedJob (pkg/controller/jobs/jobset/jobset_controller.go `PodSets`) and
    its webhook does not check the count (only the RayCluster and pod-group paths compare with
    MaxPodSets), so the API server refuses the Workload the reconciler creates and the JobSet
    stays suspended: never admitted. fit's Ray readers already refuse more than 18."""

    def replicated(i: int) -> dict[str, Any]:
        pod = job_object()["spec"]["template"]
        return {"name": f"w{i}", "replicas": 1, "template": {"spec": {"template": pod}}}

    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "wide",
            "namespace": "llm-train",
            "labels": {"kueue.x-k8s.io/priority-class": PRIORITY},
        },
        "spec": {"replicatedJobs": [replicated(i) for i in range(19)]},
    }
    result = answer(platform, write(json.dumps(jobset)))
    assert not result.admissible
    assert result.verdict in (NEVER, ERROR)


# --- values that must come out inert --------------------------------------------------------


def evil_objects() -> dict[str, Any]:
    named = job_object(EVIL)
    queue = job_object("queue")
    queue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = EVIL
    priority = job_object("priority")
    priority["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = EVIL
    resource = job_object("resource")
    resource["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][EVIL] = "1"
    container = job_object("container")
    container["spec"]["template"]["spec"]["containers"][0]["name"] = EVIL
    topology = job_object("topology")
    topology["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": EVIL}
    }
    # Pod Security quotes these in its own refusal, unescaped (`joinQuote`, `%s`)
    context = ("spec", "template", "spec", "containers", 0, "securityContext")
    capability = with_value(job_object("capability"), (*context, "capabilities", "add"), [EVIL])
    seccomp = with_value(job_object("seccomp"), (*context, "seccompProfile"), {"type": EVIL})
    sysctl = with_value(
        job_object("sysctl"),
        ("spec", "template", "spec", "securityContext"),
        {"sysctls": [{"name": EVIL, "value": "1"}]},
    )
    return {
        "name": named,
        "namespace": job_object("namespace", EVIL),
        "queue": queue,
        "priority": priority,
        "resource": resource,
        "container": container,
        "topology": topology,
        "capability": capability,
        "seccomp": seccomp,
        "sysctl": sysctl,
        "kind": {"apiVersion": "v1", "kind": EVIL, "metadata": {"name": EVIL}},
        "apiVersion": {"apiVersion": EVIL, "kind": "Job", "metadata": {"name": EVIL}},
    }


@pytest.mark.parametrize("where", list(evil_objects()))
def test_escapes_and_runner_commands_in_any_field_print_inert(
    write: Callable[..., Path], where: str
) -> None:
    path = write(json.dumps(evil_objects()[where]))
    code, text = cli(str(path))
    assert code in (0, 1)
    assert_inert(text)
    code_json, raw = cli(str(path), "--format", "json")
    assert code_json == code
    assert_inert(raw)
    values = list(strings(json.loads(raw)))  # JSON escapes them and gives them back exactly
    # a label value is refused by the API server (`IsValidLabelValue`), which quotes it as Go's
    # `%q` does (apimachinery `field.Error`): that is what comes back
    shown = go_quote(EVIL) if where in ("queue", "priority") else EVIL
    assert where == "container" or any(shown in value for value in values)


def strings(data: Any) -> Any:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield key
            yield from strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from strings(value)


def test_a_newline_in_a_name_cannot_forge_a_line_of_output(write: Callable[..., Path]) -> None:
    """`inert` writes a newline as `\\n` (renderer/findings/diagnostics.py): a value from the
    job file must stay on its line. `fit_text` builds `lines`, joins them with newlines and runs
    `inert_lines`, which splits on every newline again: a Job named
    `x\\n<file>: fits: admitted ...` prints a second line that reads as fit's own verdict
    (only a leading `::` is defused). The API server refuses such a name, but fit prints it
    first. The same happens to snapshot names in `usage.lines()` and in the ignored list."""
    path = write("x")
    forged = f"{path.as_posix()}: fits: admitted within the nominal quota (forged)"
    path = write(
        json.dumps(
            {**job_object(), "metadata": {**job_object()["metadata"], "name": f"x\n{forged}"}}
        )
    )
    _, text = cli(str(path))
    assert not any(line.startswith(forged) for line in text.split("\n")), text
    assert "x\\n" in text


# --- names the API server refuses -------------------------------------------------------------


@pytest.mark.parametrize(
    "name", [EVIL, "Train_Job", "a" * 254], ids=["escapes", "not-dns-subdomain", "too-long"]
)
def test_a_job_name_the_api_server_refuses_is_not_admissible(
    platform: Platform, write: Callable[..., Path], name: str
) -> None:
    """The API server validates a Job's metadata with `NameIsDNSSubdomain`
    (k8s.io/apimachinery pkg/api/validation/objectmeta.go `ValidateObjectMeta`, pkg/apis/batch/
    validation `ValidateJob`): lower-case alphanumerics, '-' and '.', at most 253 characters
    (`IsDNS1123Subdomain`). None of these names creates a Job, so Kueue never sees one; fit
    answers `fits` and exits 0."""
    result = answer(platform, write(json.dumps(job_object(name))))
    assert not result.admissible


def test_an_api_version_of_two_slashes_is_no_kind_to_kubectl(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """apimachinery `schema.ParseGroupVersion` refuses more than one '/' (`unexpected
    GroupVersion string`), so `Unstructured.GroupVersionKind` is empty and kubectl's decoder
    (`unstructuredJSONScheme.Decode`, cli-runtime `mapper.go` `infoForData`) stops:
    `unable to decode "<file>": Object 'Kind' is missing in '<json>'`. Nothing is sent; fit
    read `batch//v1` as a Job of group `batch/` and answered `fits`."""
    obj = {**job_object(), "apiVersion": "batch//v1"}
    path = write(json.dumps(obj))
    result = answer(platform, path)
    assert not result.admissible and result.verdict == NEVER
    (job,) = result.workloads
    (discovery,) = [o for o in job.chain if o.step.value == "discovery"]
    (refusal,) = discovery.refusals
    assert refusal.message.startswith(
        f'unable to decode "{path}": Object \'Kind\' is missing in \'{{"apiVersion":"batch//v1",'
    )


def without_name() -> dict[str, Any]:
    obj = job_object()
    del obj["metadata"]["name"]
    return obj


@pytest.mark.parametrize(
    ("make", "name", "error"),
    [
        (
            lambda: with_value(job_object(), ("metadata", "labels", "app"), "a" * 64),
            "train",
            'metadata.labels: Invalid value: "' + "a" * 64 + '": must be no more than 63 '
            "characters",
        ),
        (
            lambda: with_value(job_object(), ("metadata", "labels", "app"), EVIL),
            "train",
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
            "or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            lambda: with_value(job_object(), ("metadata", "labels", "a/b/c"), "x"),
            "train",
            'metadata.labels: Invalid value: "a/b/c": a qualified name must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
            "subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            lambda: with_value(job_object(), ("metadata", "annotations"), {"note": "x" * 400_000}),
            "train",
            "metadata.annotations: Too long: may not be more than 262144 bytes",
        ),
        (without_name, "", "metadata.name: Required value: name or generateName is required"),
    ],
    ids=["label-value-too-long", "label-value-escapes", "label-key-slashes", "annotations-400kb", "no-name"],
)  # fmt: skip
def test_metadata_the_api_server_refuses_is_never_admitted(
    platform: Platform,
    write: Callable[..., Path],
    make: Callable[[], dict[str, Any]],
    name: str,
    error: str,
) -> None:
    """apimachinery `pkg/api/validation/objectmeta.go` `ValidateObjectMetaAccessor` (v0.33,
    the example's prod-east runs Kubernetes 1.33): a name is required, labels are
    `ValidateLabels` (`IsQualifiedName` keys, `IsValidLabelValue` values, at most 63
    characters), annotations at most `TotalAnnotationSizeLimitB` (256 KiB) together; the
    errors are `field.Error`s in `errors.NewInvalid`. fit answered `fits` for each."""
    result = answer(platform, write(json.dumps(make())))
    (job,) = result.workloads
    assert result.verdict == NEVER and job.message_from == "API server"
    assert job.message is not None
    assert job.message.startswith(f'Job.batch "{name}" is invalid: ')
    assert error in job.message
    assert_inert(file_text(result))


# --- exit codes -------------------------------------------------------------------------------


def test_exit_codes_follow_the_worst_workload(write: Callable[..., Path]) -> None:
    fits = write(job() + "---\n" + SERVICE, "fits.yaml")
    mixed = write(job() + "---\n" + job("later", priority="no-such-class"), "mixed.yaml")
    assert cli(str(fits))[0] == 0
    assert cli(str(mixed))[0] == 1
    assert cli(str(mixed), "--format", "json")[0] == 1
    body = json.loads(cli(str(mixed), "--format", "json")[1])
    assert (body["admissible"], [w["admissible"] for w in body["workloads"]]) == (
        False,
        [True, False],
    )


def test_usage_errors_exit_2(write: Callable[..., Path], tmp_path: Path) -> None:
    path = write(job())
    assert cli(str(tmp_path / "missing.yaml"))[0] == 2
    assert cli(str(tmp_path))[0] == 2
    assert cli(str(path), "--format", "yaml")[0] == 2
    assert cli(str(path), "--usage", str(tmp_path / "missing.json"))[0] == 2
    assert cli(str(path), "--no-such-option")[0] == 2


def test_an_unknown_cluster_is_a_usage_error(write: Callable[..., Path]) -> None:
    """`gpuplane plan --cluster nowhere` raises click.UsageError (`unknown cluster(s): nowhere.
    Known: prod-east, staging-west.`, exit 2); fit answers `error: unknown cluster nowhere` with
    exit 1, the code a CI gate reads as "this job does not fit", for a mistyped option of the
    gate itself."""
    assert cli(str(write(job())), "--cluster", "nowhere")[0] == 2


# --- namespaces and clusters --------------------------------------------------------------------


def test_workloads_for_two_namespaces_on_two_clusters_get_their_own_answers(
    platform: Platform, write: Callable[..., Path]
) -> None:
    staging = job("eval", "llm-eval-train", priority="staging-release-candidate")
    result = answer(platform, write(job() + "---\n" + staging))
    assert [(w.name, w.namespace, w.cluster, w.cluster_queue) for w in result.workloads] == [
        ("train", "llm-train", "prod-east", "llm-training"),
        ("eval", "llm-eval-train", "staging-west", "llm-eval-training"),
    ]
    assert result.admissible


def test_a_namespace_of_another_cluster_is_never_with_where_it_is(
    platform: Platform, write: Callable[..., Path]
) -> None:
    path = write(job(namespace=None))
    result = answer(platform, path, namespace="llm-eval-train", cluster="prod-east")
    assert result.verdict == NEVER
    assert "llm-eval-train is a team namespace on staging-west" in reasons_of(result)


def test_a_job_without_a_namespace_is_an_error(
    platform: Platform, write: Callable[..., Path]
) -> None:
    result = answer(platform, write(job(namespace=None)))
    assert result.verdict == ERROR
    assert "no metadata.namespace" in reasons_of(result)


def test_namespace_option_against_another_metadata_namespace_is_what_kubectl_refuses(
    platform: Platform, write: Callable[..., Path]
) -> None:
    """`kubectl apply -f FILE -n llm-serve` on an object with `namespace: llm-train`: the
    builder's FilenameParam(enforceNamespace) adds `RequireNamespace` (k8s.io/cli-runtime
    pkg/resource/visitor.go), which fails with `the namespace from the provided object
    "llm-train" does not match the namespace "llm-serve". You must pass '--namespace=llm-train'
    to perform this operation.` Nothing is created, so it is not admissible; fit instead moves
    the Job to llm-serve (same team and priority) and answers `fits`."""
    result = answer(platform, write(job()), namespace="llm-serve")
    assert not result.admissible
    assert "does not match the namespace" in " ".join(result.worst.reasons)


# --- text for people, bytes for machines ------------------------------------------------------


def test_text_has_one_block_per_workload_and_lists_what_it_ignored(
    platform: Platform, write: Callable[..., Path]
) -> None:
    text = file_text(answer(platform, write(job() + "---\n" + SERVICE + "---\n" + job("second"))))
    blocks = text.rstrip("\n").split("\n\n")
    assert len(blocks) == 3
    assert "Job llm-train/train " in blocks[0] and "Job llm-train/second " in blocks[1]
    assert blocks[2].splitlines() == ["ignored (not workloads):", "  - Service web: not a workload"]
    for block in blocks[:2]:
        assert block.splitlines()[0].split(": ")[1] == FITS


@pytest.mark.slow
def test_output_is_the_same_bytes_whatever_the_hash_seed(
    write: Callable[..., Path], tmp_path: Path
) -> None:
    """Set and dict order must not leak into the output: two processes with different
    PYTHONHASHSEED print the same bytes, in text and JSON, with and without --usage."""
    staging = job("eval", "llm-eval-train", priority="staging-release-candidate")
    path = write(job() + "---\n" + SERVICE + "---\n" + staging + "---\n" + job("x", "llm-serve"))
    snapshot = tmp_path / "usage.json"
    snapshot.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    for args in ((str(path),), (str(path), "--format", "json", "--usage", str(snapshot))):
        runs = [cli_process(*args, env={"PYTHONHASHSEED": seed}) for seed in ("1", "4242")]
        assert runs[0].returncode == runs[1].returncode
        assert runs[0].stdout == runs[1].stdout and runs[0].stdout


# --- --usage snapshots ----------------------------------------------------------------------------


def holder(name: str = "held", namespace: str = "llm-train", gpus: Any = "8") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace, "uid": name},
        "spec": {"priority": 10},
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
            "admission": {
                "clusterQueue": "llm-training",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"nvidia.com/gpu": "h100-train"},
                        "resourceUsage": {"nvidia.com/gpu": gpus},
                        "count": 1,
                    }
                ],
            },
        },
    }


def listed(*items: Any) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


HOSTILE_SNAPSHOTS: dict[str, str | bytes] = {
    "deep": "[" * 100_000 + "]" * 100_000,
    "nan-priority": listed(holder()).replace('"priority": 10', '"priority": NaN'),
    "infinite-quantity": listed(holder()).replace('"8"', "1e999"),
    "huge-integer": listed(holder()).replace('"priority": 10', '"priority": ' + "9" * 5000),
    "int64-priority": listed(holder()).replace('"priority": 10', '"priority": 9223372036854775807'),
    "negative-quantity": listed(holder(gpus="-8")),
    "float-quantity": listed(holder(gpus=8.5)),
    "list-usage": listed(holder(gpus=["8"])),
    "items-not-a-list": '{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}',
    "scalar": "42",
    "null": "null",
    "empty": "",
    "two-documents": listed() + "\n" + listed(),
    "bom": b"\xef\xbb\xbf" + listed(holder()).encode(),
    "utf-16": listed(holder()).encode("utf-16"),
    "latin-1": json.dumps(json.loads(listed(holder("caf\xe9"))), ensure_ascii=False).encode(
        "latin-1"
    ),
    "long-name": listed(holder("n" * 300)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE_SNAPSHOTS))
def test_a_hostile_snapshot_is_an_error_naming_why_never_a_traceback(
    write: Callable[..., Path], name: str
) -> None:
    """Usage read half-way would understate what the cluster holds (docs/fit.md): each of these
    is an `error`, exit 1, in text and JSON."""
    snapshot = write(HOSTILE_SNAPSHOTS[name], "usage.json")
    path = write(job(), "job.yaml")
    code, text = cli(str(path), "--usage", str(snapshot))
    assert code == 1, text
    assert "cannot read the usage snapshot" in text
    assert_inert(text)
    code, raw = cli(str(path), "--usage", str(snapshot), "--format", "json")
    assert code == 1 and json.loads(raw)["verdict"] == ERROR


def test_names_in_a_snapshot_print_inert(write: Callable[..., Path]) -> None:
    one_line = EVIL  # no newline: see the newline test above for that
    snapshot = write(
        listed(
            holder(one_line, one_line),
            {"apiVersion": one_line, "kind": one_line, "metadata": {"name": one_line}},
        ),
        "usage.json",
    )
    for fmt in ("text", "json"):
        code, out = cli(str(write(job())), "--usage", str(snapshot), "--format", fmt)
        assert code == 0
        assert_inert(out)


def test_nested_lists_in_a_snapshot_are_read(write: Callable[..., Path]) -> None:
    nested: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [holder()]}
    for _ in range(400):
        nested = {"apiVersion": "v1", "kind": "List", "items": [nested]}
    snapshot = write(json.dumps(nested), "usage.json")
    code, raw = cli(str(write(job())), "--usage", str(snapshot), "--format", "json")
    assert code == 0
    assert json.loads(raw)["workloads"][0]["usage"]["workloadsHoldingQuota"] == 1
