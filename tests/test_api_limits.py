"""Kubernetes' own limits, checked against the upstream figures: quantity ranges
(renderer/model/quantity.py), the input checks that hold them (renderer/inputs/limits.py,
renderer/policy/limits.py) and the output check that backs them up (renderer/output/api_limits.py,
renderer/model/limits.py). docs/api-limits.md says where each figure comes from.
"""

from __future__ import annotations

import dataclasses
import json
import marshal
import re
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renderer.findings.diagnostics import Severity
from renderer.inputs import schema as input_schema
from renderer.inputs.source import load_bytes
from renderer.model.limits import rendered_quantity_problems
from renderer.model.quantity import COUNT_MAX, INT64_MAX, parse, range_problem
from renderer.model.view import ClusterView
from renderer.output import api_limits
from renderer.output.api_limits import TOTAL_ANNOTATION_BYTES, object_problems
from renderer.output.manifest import Manifest, Values
from renderer.output.validation import OutputValidator
from renderer.pipeline import load_platform, render_cluster, render_platform
from renderer.policy.limits import NAME_MAX, SUITE_TEMPLATES, WINDOW_TEMPLATE
from renderer.policy.reach import cluster_hosts
from tests.conftest import REPO, SHARED_CRDS, copy_inputs, edit_once
from tests.red_team.diffing import cli, commit_base
from tests.red_team.harness import Attempt

# --- quantities: what Kubernetes and Kueue count -----------------------------------------------


@pytest.mark.parametrize(
    ("value", "unit", "kind"),
    [
        # the largest int64 (apimachinery quantity.go: Value/MilliValue "could overflow an
        # int64"; Kueue v0.19.2 pkg/resources ResourceValue clamps to it)
        ("9223372036854775807", "bytes", None),
        ("9223372036854775808", "bytes", "over"),
        # ParseQuantity caps a binary amount at 2^63-1 ("The max is just a simple cap"):
        # 8Ei is 2^63 and would silently mean one byte less
        ("7Ei", "bytes", None),
        ("8Ei", "bytes", "over"),
        # CPU is counted in millicores (MilliValue; the scheduler's MilliCPU int64)
        ("9223372036854775807m", "cpu", None),
        ("9223372036854775.807", "cpu", None),
        ("9223372036854775808m", "cpu", "over"),
        ("10E", "cpu", "over"),
        ("1e24", "cpu", "over"),
        # MilliValue rounds up: anything finer than 1m would be read as more
        ("1m", "cpu", None),
        ("1e-3", "cpu", None),
        ("1.5m", "cpu", "finer"),
        ("0.0000000001m", "cpu", "finer"),
        # pkg/api/pod/warnings.go: "fractional byte value ... is invalid, must be an integer"
        ("1m", "bytes", "fraction"),
        ("0.5", "bytes", "fraction"),
        ("1k", "bytes", None),
        # ValidateResourceQuantityValue: an integer resource must be whole, which it tells by
        # MilliValue() % 1000, meaningful up to COUNT_MAX
        ("1.5", "count", "whole"),
        (str(COUNT_MAX), "count", None),
        (str(COUNT_MAX + 1), "count", "over"),
        # ValidateNonnegativeQuantity
        ("-1", "cpu", "negative"),
        ("-0", "bytes", None),
        ("NaN", "cpu", "format"),
        ("1 Gi", "bytes", "format"),
    ],
)
def test_range_problem_follows_kubernetes(value: str, unit: Any, kind: str | None) -> None:
    problem = range_problem(value, unit)
    assert (problem.kind if problem else None) == kind, problem


def test_a_kept_parse_is_the_one_of_the_same_value_and_type() -> None:
    """`parse` keeps its answers: `1.0` (a float) reads as Decimal 1.0 and `1` as Decimal 1,
    equal values that print apart, and a value that is no quantity raises every time."""
    assert str(parse(1.0)) == "1.0" and str(parse(1)) == "1" and str(parse("1")) == "1"
    for _ in range(2):
        with pytest.raises(ValueError):
            parse("1x")


def test_a_value_multiplied_into_one_request_is_held_to_its_share() -> None:
    most = INT64_MAX // 16
    assert range_problem(f"{most}m", "cpu", 16) is None
    over = range_problem(f"{most + 1}m", "cpu", 16)
    assert over is not None and over.most == f"{most}m"


# --- the input schemas: integers are integers, quantities in range ------------------------------


def _check(file: str, old: str, new: str) -> list[Any]:
    raw = (REPO / file).read_text()
    assert raw.count(old) == 1, old
    document = load_bytes(raw.replace(old, new).encode(), file).document
    assert document is not None
    return input_schema.check_document(document, file.split("/")[0])


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize(
    ("file", "old", "new", "rule"),
    [
        ("pools/h100-train.yaml", "gpusPerNode: 8", "gpusPerNode: 8.0", "schema-wrong-type"),
        ("pools/h100-train.yaml", "nodes: 4", "nodes: 1e30", "schema-wrong-type"),
        ("queues/prod.yaml", "value: 1000", "value: 1000.0", "schema-wrong-type"),
        ("teams/llm.yaml", 'cpu: "2"', 'cpu: "10E"', "quantity-out-of-range"),
        ("teams/llm.yaml", "memory: 8Gi", "memory: 1m", "quantity-out-of-range"),
        ("pools/h100-train.yaml", "memory: 2Ti", "memory: 8Ei", "quantity-out-of-range"),
        ("clusters/prod-east.yaml", "storage: 10Ti", 'storage: "1e24"', "schema-invalid-value"),
    ],
)
def test_both_schema_checks_refuse(
    file: str, old: str, new: str, rule: str, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jsonschema-rs (the fast verdict) and jsonschema (the findings) refuse alike."""
    if not fast:
        slow = {
            kind: dataclasses.replace(input_schema.schema_for(kind), fast=None)
            for kind in ("Team", "Pool", "Queue", "Cluster")
        }
        monkeypatch.setattr(input_schema, "schema_for", slow.__getitem__)
    found = _check(file, old, new)
    assert [d.rule for d in found] == [rule], found


def test_a_decimal_where_an_integer_belongs_is_worded_for_its_author() -> None:
    (found,) = _check("pools/h100-train.yaml", "gpusPerNode: 8", "gpusPerNode: 8.0")
    assert found.message == "spec.gpusPerNode must be an integer, got number 8.0"
    assert found.hint == "write 8, without the decimal point: YAML reads 8.0 as a decimal number"
    (found,) = _check("pools/h100-train.yaml", "nodes: 4", "nodes: 1e30")
    assert "without a decimal point or exponent: YAML reads 1e30" in str(found.hint)


def test_applying_the_hint_fixes_an_amount_out_of_range() -> None:
    (found,) = _check("teams/llm.yaml", 'cpu: "2"', 'cpu: "10E"')
    most = str(found.hint).rsplit(" ", 1)[1]
    assert most == f"{INT64_MAX // 16}m"
    assert _check("teams/llm.yaml", 'cpu: "2"', f'cpu: "{most}"') == []


# --- the output check: what no schema carries ----------------------------------------------------


def _namespace(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "ns", "annotations": annotations},
    }


def test_the_annotation_limit_is_counted_in_bytes_over_keys_and_values() -> None:
    """objectmeta.go ValidateAnnotationsSize: len(k) + len(v) over all entries, > 256 KiB."""
    key = "gpuplane.dev/contact"
    at_limit = _namespace({key: "x" * (TOTAL_ANNOTATION_BYTES - len(key))})
    assert object_problems(at_limit) == []
    over = _namespace({key: "x" * (TOTAL_ANNOTATION_BYTES - len(key) + 1)})
    assert [path for path, _ in object_problems(over)] == [("metadata", "annotations")]
    # 70,000 four-byte characters: 280,000 bytes
    wide = _namespace({key: "\U0001f4de" * 70_000})
    (problem,) = object_problems(wide)
    assert f"are {70_000 * 4 + len(key)} bytes together" in problem[1]


def test_data_and_objects_are_held_to_what_the_api_server_stores() -> None:
    """ValidateConfigMap: data and binaryData together at most 1 MiB (core.MaxSecretSize);
    any object at most etcd's default request size, 1.5 MiB."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert object_problems({**config, "data": {"a": "x" * (1 << 20)}}) == []
    ((path, message),) = object_problems({**config, "data": {"a": "x" * (1 << 20), "b": "y"}})
    assert path == ("data",) and "1048577 bytes" in message
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"validations": [{"expression": "x" * (3 << 19)}]},
    }
    ((path, message),) = object_problems(policy)
    assert path == () and "more than the 1572864 (1.5 MiB) etcd stores" in message


@pytest.mark.parametrize(
    ("api_version", "kind", "name", "refused"),
    [
        ("v1", "Service", "acceptance-" + "p" * 52, False),
        ("v1", "Service", "acceptance-" + "p" * 53, True),
        ("v1", "Service", "1st", True),  # RFC 1035: starts with a letter
        ("batch/v1", "Job", "j" * 63, False),
        ("batch/v1", "Job", "j" * 64, True),
        ("argoproj.io/v1alpha1", "WorkflowTemplate", "w" * 64, True),
        ("argoproj.io/v1alpha1", "CronWorkflow", "c" * 53, True),
        ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass", "p" * 64, True),
        ("kueue.x-k8s.io/v1beta2", "ClusterQueue", "q" * 63, False),
        ("ray.io/v1", "RayJob", "r" * 48, True),
        ("v1", "ConfigMap", "c" * 253, False),  # a plain DNS subdomain: 253
    ],
)
def test_kinds_whose_names_end_up_in_labels(
    api_version: str, kind: str, name: str, refused: bool
) -> None:
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
    assert bool(object_problems(body)) == refused


def test_a_pod_templates_labels_are_checked_too() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job"},
        "spec": {"template": {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q" * 64}}}},
    }
    ((path, _),) = object_problems(job)
    assert path == ("spec", "template", "metadata", "labels", "kueue.x-k8s.io/queue-name")


def test_rendered_amounts_are_checked_wherever_they_sit() -> None:
    quota = {
        "kind": "ClusterQueue",
        "spec": {
            "resourceGroups": [
                {"flavors": [{"resources": [{"name": "cpu", "nominalQuota": "18014398509481986"}]}]}
            ]
        },
    }
    ((path, message),) = rendered_quantity_problems(quota)
    assert path[-1] == "nominalQuota" and message.startswith("cpu '18014398509481986' is more")
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1.5"}}}]}}
    ((_, message),) = rendered_quantity_problems(pod)
    assert "is not a whole number" in message


class _Label(str):
    """A string of a subclass: the walks tell plain values by their exact type and must still
    see through a subclass of one (and a mapping that is not a dict) as before."""


def test_the_walks_see_mappings_that_are_not_dicts_and_subclassed_values() -> None:
    template = MappingProxyType({"metadata": {"labels": {_Label("bad key!"): "v"}}})
    job = {"kind": "Job", "metadata": {"name": "job"}, "spec": {"template": template}}
    ((path, _),) = object_problems(job)
    assert path == ("spec", "template", "metadata", "labels", "bad key!")
    limits = MappingProxyType({"nvidia.com/gpu": _Label("1.5")})
    pod = {"spec": {"containers": [MappingProxyType({"resources": {"limits": limits}})]}}
    ((path, message),) = rendered_quantity_problems(pod)
    assert path == ("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu")
    assert "is not a whole number" in message
    assert rendered_quantity_problems({"spec": (limits,)}) == []  # a tuple is no list: not walked


def test_the_output_check_runs_on_a_kind_no_schema_checks() -> None:
    """A custom kind without its CRD is not schema-checked, but its limits still are."""
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "q" * 64, "namespace": "ns"},
    }
    checked = OutputValidator([]).check(body, "1.33")
    assert checked.unchecked is not None
    assert [p.path for p in checked.problems] == ["metadata.name"]


def _without_caps(kind: str) -> input_schema.Schema:
    """The kind's input schema with every maxLength taken out: as if the input check were
    missing, so that only the output check is left to refuse."""
    schema = input_schema.schema_for(kind)
    raw = json.loads(json.dumps(schema.raw).replace('"maxLength"', '"x-no-max-length"'))
    return input_schema.Schema(kind, type(schema.validator)(raw), raw, None)


def test_render_refuses_an_oversized_annotation_the_input_check_let_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    edit_once(
        root / "teams/llm.yaml", "contact: llm-infra@example.com", "contact: " + "x" * 270_000
    )
    kinds = ("Team", "Pool", "Queue", "Cluster", "Repository")
    monkeypatch.setattr(
        input_schema, "schema_for", {k: _without_caps(k) for k in kinds}.__getitem__
    )
    rendered = render_platform(root, OutputValidator([]))
    refused = [d for d in rendered.diagnostics if d.severity is Severity.ERROR]
    assert refused and all(d.at.file == "teams/llm.yaml" for d in refused), refused
    assert {d.rule for d in refused} == {"output-schema"}
    for finding in refused:  # the contact, the description and the GPU-sharing note
        size = int(re.findall(r"the annotations are (\d+) bytes together", finding.message)[0])
        assert size > 270_000 and "more than the 262144 (256 KiB)" in finding.message
    assert len(refused) == 3  # llm's three namespaces


# --- derived names: the policy's figures are the layers' --------------------------------------


def test_the_suite_template_names_are_the_ones_the_suites_render() -> None:
    from workflows.suites.workflow_templates import acceptance_name, benchmark_name

    assert {acceptance_name("p"), benchmark_name("p")} == {f"{p}p" for p in SUITE_TEMPLATES}
    from renderer.model.names import window_cluster_queue_name
    from workflows.suites.workflow_templates import window_name

    assert window_name("p") == f"{WINDOW_TEMPLATE}p"
    assert len(window_cluster_queue_name("p")) <= len(window_name("p"))


def _renamed(root: Path, old: str, new: str) -> None:
    """Rename an input name everywhere it is written, as a whole word, and its file."""
    for path in [*root.rglob("*.yaml")]:
        text = path.read_text()
        changed = re.sub(rf"(?<![-\w]){re.escape(old)}(?![-\w])", new, text)
        if changed != text:
            path.write_text(changed)
        if path.stem == old:
            path.rename(path.with_name(f"{new}.yaml"))


def _longest_names(root: Path, extra: int) -> None:
    """Each name gpuplane builds on made as long as the limits allow, plus `extra`; the cluster
    name, which nothing holds to less than its own 63, at 63 (Applications `<cluster>-<layer>`
    and AppProjects `team-<team>-<cluster>` are DNS subdomains, at most 253)."""
    _renamed(root, "prod-east", "prod-east-" + "c" * 53)
    # acceptance-window-<pool>: prod-east has an acceptance window
    _renamed(root, "h100-train", "h100-train-" + "p" * (45 - 11 + extra))
    _renamed(root, "prod", "prod-" + "q" * (52 - 5 + extra))  # <queue>-acceptance
    _renamed(root, "vision", "vision-" + "v" * (53 - 7 + extra))  # <team>-notebooks
    for ns in ("train", "serve", "notebooks"):
        _renamed(root, f"vision-{ns}", "vision-" + "v" * (53 - 7 + extra) + f"-{ns[0]}")


def test_names_at_the_limit_render_objects_kubernetes_takes(tmp_path: Path) -> None:
    if not SHARED_CRDS.is_dir():
        pytest.skip("../shared/crds is not beside this checkout")
    root = copy_inputs(REPO, tmp_path / "repo")
    _longest_names(root, 0)
    # the longest priority name queue `prod-qqq...` (52 characters) leaves room for
    edit_once(root / f"queues/prod-{'q' * 47}.yaml", "- name: preemptible", "- name: " + "r" * 10)
    rendered = render_platform(root, OutputValidator([SHARED_CRDS]))
    assert not [d for d in rendered.diagnostics if d.severity is Severity.ERROR]
    lengths = {m.name: len(m.name) for ms in rendered.manifests.values() for m in ms}
    assert max(lengths.values()) >= NAME_MAX  # the limits were reached, not only approached
    assert any(name.startswith(f"prod-east-{'c' * 53}-") for name in lengths)  # Applications


def test_one_character_more_is_refused_at_validate(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    _longest_names(root, 1)
    found = [d for d in load_platform(root).diagnostics if d.rule == "derived-name-too-long"]
    kinds = {d.message.split(" name ")[0] for d in found}
    # the queue's priorities too: `<queue>-production` was exactly 63 characters
    assert kinds == {"ClusterQueue", "LocalQueue", "WorkflowTemplate", "WorkloadPriorityClass"}


# --- the largest amounts the inputs take render what Kubernetes counts ------------------------


def _every_output(root: Path) -> list[Manifest | Values]:
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity is Severity.ERROR], loaded.diagnostics
    platform = loaded.platform
    return [
        o for c in platform.clusters.values() for o in render_cluster(ClusterView.of(platform, c))
    ]


def _largest_amounts(team: Path) -> None:
    """The schema's bounds; a CPU or memory cap at most what the cluster's pools hold (rule
    cap-exceeds-cluster), storage and the container defaults at the schema's."""
    hosts = cluster_hosts(load_platform(team.parent.parent).platform, "prod-east")
    cpu = min(Decimal(INT64_MAX) / 1000, hosts["cpu"])
    memory = min(Decimal(INT64_MAX), hosts["memory"])
    edit_once(team, '    cpu: "1024"', f'    cpu: "{int(cpu * 1000)}m"')
    edit_once(team, "    memory: 8Ti", f'    memory: "{int(memory)}"')
    edit_once(team, "    storage: 100Ti", f'    storage: "{INT64_MAX}"')
    edit_once(team, '    cpu: "2"', f'    cpu: "{INT64_MAX // 16}m"')
    edit_once(team, "    memory: 8Gi", f'    memory: "{INT64_MAX // 16}"')


def test_the_largest_amounts_a_team_may_write_render_within_range(tmp_path: Path) -> None:
    """The schema's bounds, multiplied as the layers multiply them (the templates request a
    container default once per GPU of a pod): every object and template stays countable."""
    root = copy_inputs(REPO, tmp_path / "repo")
    _largest_amounts(root / "teams/llm.yaml")
    checks: list[Callable[[Any], Any]] = [object_problems, rendered_quantity_problems]
    for output in _every_output(root):
        for check in checks:
            assert not list(check(output.body)), (output.path, check(output.body))
    shutil.rmtree(root)


@pytest.mark.slow
def test_the_largest_amounts_plan_and_diff(tmp_path: Path) -> None:
    """`plan` and `diff` (every format) read the largest amounts as they are, no traceback."""
    attempt = Attempt.on_example(tmp_path / "repo")
    commit_base(attempt)
    _largest_amounts(attempt.path("teams/llm.yaml"))
    for command in (
        ("plan",),
        ("plan", "--team", "llm"),
        *(("diff", "--base", "HEAD", "--format", form) for form in ("text", "markdown", "json")),
    ):
        code, output = cli(attempt, *command)
        assert code == 0 and "Traceback" not in output, (command, output)
    _, text = cli(attempt, "diff", "--base", "HEAD", "--format", "text")
    assert "llm" in text


# --- the walks' shortcuts give what the long way gives ------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["metadata", "a metadata b", "\x00", "\u2028", '"\\', "é", "\U0001f4de"]),
    st.text(max_size=6),
)
_KEYS = st.one_of(
    st.sampled_from(["metadata", "labels", "annotations", "name", "spec", "template"]),
    st.text(max_size=4),
    st.booleans(),
    st.none(),
    st.integers(min_value=-(2**40), max_value=2**40),
)
_TREES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=400, derandomize=True)
@given(st.dictionaries(_KEYS, _TREES, max_size=5))
def test_the_size_and_metadata_shortcuts_agree_with_the_long_way(obj: dict[Any, Any]) -> None:
    """`object_problems` tells a small object and one whose only `metadata` is its own from its
    marshal bytes (`api_limits.marshalled`); on any JSON-like tree (keys JSON turns into
    strings, control characters, big ints, floats, the word in a string value) both answers are
    the ones the walk and `json.dumps` give."""
    encoded = api_limits.marshalled(obj)
    assert encoded is not None
    assert list(api_limits._metadata_blocks(obj, encoded)) == list(
        api_limits._metadata_blocks(obj, None)
    )
    try:
        whole = len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())
    except (TypeError, ValueError):  # keys JSON cannot write (or a lone surrogate)
        return
    assert whole <= len(encoded) * api_limits.JSON_PER_MARSHAL_BYTE


def test_json_grows_most_on_a_mapping_of_false_to_false() -> None:
    """Where JSON grows most for a byte of marshal: an entry `False: False` is two bytes in
    marshal and fourteen in JSON (`"false":false,`), under `JSON_PER_MARSHAL_BYTE`; a list of
    such mappings, with each mapping's own bytes, grows about 4.25 times."""
    many = [{False: False}] * 1000
    ratio = len(json.dumps(many, separators=(",", ":"))) / len(marshal.dumps(many, 2))
    assert 3.3 < ratio < api_limits.JSON_PER_MARSHAL_BYTE
    single = {False: False}
    entry = len(json.dumps(single, separators=(",", ":"))) - 2 + 1  # less braces, plus a comma
    assert entry == 14 and len(marshal.dumps(single, 2)) - 2 == 2  # less `{` and `0`


_AMOUNT_TREES = st.recursive(
    st.one_of(st.sampled_from(["1", "1.5", "-1", "2Ki", "0.5m", "x", "limits"]), st.integers()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(
                ["requests", "limits", "hard", "sizeLimit", "name", "nominalQuota", "cpu", "a"]
            ),
            inner,
            max_size=4,
        ),
    ),
    max_leaves=25,
)


@settings(max_examples=400, derandomize=True)
@given(st.dictionaries(st.sampled_from(["spec", "limits", "data", "name"]), _AMOUNT_TREES))
def test_the_amount_walk_is_left_out_only_where_it_finds_nothing(obj: dict[str, Any]) -> None:
    """An object whose marshal bytes hold no key the walk reads is not walked; a mapping that is
    not a dict (marshal cannot write it) always is: both give the same findings."""
    assert rendered_quantity_problems(obj) == rendered_quantity_problems(MappingProxyType(obj))
