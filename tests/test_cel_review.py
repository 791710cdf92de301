"""Review of the CEL and transition-rule evaluation against Kubernetes' own source.

Each expectation is read from upstream code, never from gpuplane's output:
- k8s.io/apiextensions-apiserver v0.33.0 `pkg/apiserver/schema/cel/validation.go`
  (`validateExpressions`, `validateMap`, `fieldErrorForReason`, `evalMessageExpression`,
  `ValidFieldPath`), `.../cel/compilation.go` (`UsesOldSelf` from the checked AST's references),
  `pkg/apiserver/schema/defaulting/algorithm.go` (`Default`) and `prunenulls.go`,
  `pkg/apiserver/customresource_handler.go` (`PruneNonNullableNullsWithoutDefaults` before
  defaulting), `pkg/registry/customresource/strategy.go` (`hasBlockingErr`);
- k8s.io/apiserver v0.33.0 `pkg/cel/common/values.go` (set and map lists compare unordered,
  `index out of bounds: N`), k8s.io/apimachinery v0.33.0 `pkg/util/validation/field`
  (`Error.ErrorBody`, `Duplicate`, `Path.String`), cel-go `common/types/err.go`
  (`division by zero`);
- Kueue v0.19.2 `pkg/controller/core/resourceflavor_controller.go` (the resource-in-use finalizer).

Confirmed problems are `xfail(strict=True)`; the rest is what held.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.findings.diagnostics import Location
from renderer.output.cel_report import UncheckedRules
from renderer.output.manifest import Manifest
from renderer.output.transitions import CommittedTree
from renderer.output.validation import Checked, OutputValidator
from tests.conftest import REPO, committed_example, edit_once, git
from tests.test_cel_rules import widget_crd

SHARED = REPO.parent / "shared"
CRDS = SHARED / "crds"
K8S = "1.33"
_COUNTER = itertools.count()


# --- synthetic CRDs ----------------------------------------------------------------------------


def widget_validator(tmp_path: Path, spec: Mapping[str, Any]) -> OutputValidator:
    """An output validator for one made-up CRD whose `spec` has the schema `spec`."""
    crd = widget_crd(spec)
    folder = tmp_path / f"crd{next(_COUNTER)}"
    folder.mkdir(parents=True)
    (folder / "widget.yaml").write_text(yaml.safe_dump(crd))
    return OutputValidator([folder / "widget.yaml"])


def widget(spec: Mapping[str, Any], name: str = "w") -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "n"},
        "spec": dict(spec),
    }


def run(
    validator: OutputValidator, spec: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> Checked:
    previous = widget(old) if old is not None else None
    return validator.check(widget(spec), K8S, old_of=lambda: previous)


def cel(checked: Checked) -> list[str]:
    return [v.message for v in checked.cel]


def problems(checked: Checked) -> list[str]:
    return [p.message for p in checked.problems]


def rule_on_spec(rule: Mapping[str, Any], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "x-kubernetes-validations": [dict(rule)]}


INT = {"type": "integer"}


# --- how a failing rule is worded --------------------------------------------------------------


@pytest.mark.xfail(
    strict=True,
    reason="reason FieldValueDuplicate is field.Duplicate(path, type): no detail is printed",
)
def test_duplicate_reason_prints_no_message(tmp_path: Path) -> None:
    """`fieldErrorForReason` returns `field.Duplicate(fldPath, value)` for FieldValueDuplicate,
    which carries no Detail (apimachinery `Duplicate`), so `ErrorBody` prints
    `Duplicate value: "object"` and nothing after it."""
    rule = {"rule": "self.a != 1", "reason": "FieldValueDuplicate", "message": "a repeats"}
    validator = widget_validator(tmp_path, rule_on_spec(rule, a=INT))
    assert cel(run(validator, {"a": 1})) == ['spec: Duplicate value: "object"']


@pytest.mark.xfail(
    strict=True, reason="messageExpression's string is used trimmed (evalMessageExpression)"
)
def test_message_expression_is_trimmed(tmp_path: Path) -> None:
    """`evalMessageExpression` returns `strings.TrimSpace(messageStr)`, and checks the trimmed
    string for line breaks: padding is dropped, and a trailing newline is no line break."""
    padded = {"rule": "self.a != 1", "messageExpression": "'  padded  '", "message": "m"}
    trailing = {"rule": "self.a != 2", "messageExpression": "'ends\\n'", "message": "m"}
    validator = widget_validator(
        tmp_path,
        {
            "type": "object",
            "properties": {"a": INT},
            "x-kubernetes-validations": [padded, trailing],
        },
    )
    assert cel(run(validator, {"a": 1})) == ['spec: Invalid value: "object": padded']
    assert cel(run(validator, {"a": 2})) == ['spec: Invalid value: "object": ends']


@pytest.mark.xfail(
    strict=True, reason="a bracketed fieldPath is normalised by ValidFieldPath before it is printed"
)
def test_bracketed_field_path_is_normalised(tmp_path: Path) -> None:
    """`ValidFieldPath` turns `['x']` into `Child(x)` under an object with properties and into
    `Key(x)` (printed `[x]`, no quotes) under a map; `NormalizedRuleFieldPath` is that path's
    String(), appended with `Child`."""
    on_map = {"rule": "false", "fieldPath": ".labels['a.b']", "message": "m"}
    on_object = {"rule": "false", "fieldPath": "['foo'].bar", "message": "m"}
    labels = {"type": "object", "additionalProperties": {"type": "string"}}
    foo = {"type": "object", "properties": {"bar": {"type": "string"}}}
    validator = widget_validator(tmp_path, rule_on_spec(on_map, labels=labels))
    assert cel(run(validator, {"labels": {"a.b": "x"}})) == [
        'spec.labels[a.b]: Invalid value: "object": m'
    ]
    validator = widget_validator(tmp_path, rule_on_spec(on_object, foo=foo))
    assert cel(run(validator, {"foo": {"bar": "x"}})) == [
        'spec.foo.bar: Invalid value: "object": m'
    ]


@pytest.mark.xfail(
    strict=True,
    reason="cel-go's runtime errors are worded 'index out of bounds: N' and 'division by zero'",
)
def test_runtime_errors_in_cel_go_words(tmp_path: Path) -> None:
    """A rule that errors fails as `<err> evaluating rule: <message or rule>`
    (`validateExpressions`); the errors are the API server's list type's
    `index out of bounds: %v` (apiserver `values.go`, `unstructuredList.Get`) and cel-go's
    `division by zero` (`common/types/err.go`, `errDivideByZero`)."""
    index = {"rule": "self.l[3] == 'a'", "message": "m"}
    divide = {"rule": "1 / self.a == 1"}
    validator = widget_validator(
        tmp_path,
        {
            "type": "object",
            "properties": {"l": {"type": "array", "items": {"type": "string"}}, "a": INT},
            "x-kubernetes-validations": [index, divide],
        },
    )
    assert cel(run(validator, {"l": ["a", "b", "c", "a"], "a": 0})) == [
        'spec: Invalid value: "object": division by zero evaluating rule: 1 / self.a == 1'
    ]
    assert cel(run(validator, {"l": ["a"], "a": 1})) == [
        'spec: Invalid value: "object": index out of bounds: 3 evaluating rule: m'
    ]


def test_rule_wording_that_held(tmp_path: Path) -> None:
    """`ruleMessageOrDefault`, Forbidden/Required (no value printed), a messageExpression that
    errors falls back to the message, `no such key` and `integer overflow` (cel-go's words)."""
    rules = [
        {"rule": "self.a != 1", "messageExpression": "string(self.missing)", "message": "fell"},
        {"rule": "self.a != 2", "reason": "FieldValueForbidden", "message": " no two "},
        {"rule": "self.a != 3", "reason": "FieldValueRequired"},
        {"rule": "self.b == 1"},
        {"rule": "self.a != 4 || self.a * 9223372036854775807 != 5"},
    ]
    spec = {"type": "object", "properties": {"a": INT, "b": INT}, "x-kubernetes-validations": rules}
    validator = widget_validator(tmp_path, spec)
    assert cel(run(validator, {"a": 1, "b": 1})) == ['spec: Invalid value: "object": fell']
    assert cel(run(validator, {"a": 2, "b": 1})) == ["spec: Forbidden: no two"]
    assert cel(run(validator, {"a": 3, "b": 1})) == [
        "spec: Required value: failed rule: self.a != 3"
    ]
    assert cel(run(validator, {"a": 0})) == [
        'spec: Invalid value: "object": no such key: b evaluating rule: self.b == 1'
    ]
    assert cel(run(validator, {"a": 4, "b": 1})) == [
        'spec: Invalid value: "object": integer overflow evaluating rule: '
        "self.a != 4 || self.a * 9223372036854775807 != 5"
    ]


# --- which rules run, and on what -------------------------------------------------------------


def test_oldself_in_a_string_is_no_transition_rule(tmp_path: Path) -> None:
    """compilation.go sets `UsesOldSelf` only for a reference to the identifier `oldSelf`
    (`ast.ReferenceMap`); a rule that merely contains the word runs on create like any other, so
    this one fails. gpuplane's regex makes it a transition rule and passes it silently."""
    rule = {"rule": "self.mode != 'oldSelf'", "message": "reserved mode"}
    validator = widget_validator(tmp_path, rule_on_spec(rule, mode={"type": "string"}))
    assert cel(run(validator, {"mode": "oldSelf"})) == [
        'spec: Invalid value: "object": reserved mode'
    ]


def test_a_null_old_value_has_no_old_self(tmp_path: Path) -> None:
    """`validateMap` passes `oldObj[k]` (nil for a null) and `validateExpressions` skips a
    transition rule when `oldObj == nil` ("evaluated only if there is a comparable existing
    value"), so `a: null` before and `a: x` now refuses nothing."""
    immutable = {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    validator = widget_validator(tmp_path, {"type": "object", "properties": {"a": immutable}})
    assert cel(run(validator, {"a": "x"}, old={"a": None})) == []


def test_reordered_set_and_map_lists_are_equal(tmp_path: Path) -> None:
    """`unstructuredSetList.Equal` and `unstructuredMapList.Equal` (apiserver `values.go`) look
    each element up by value or key, so `self == oldSelf` holds for a reordered list; JobSet's
    `replicatedJobs[].dependsOn` and TrainJob's runtime patches' `containers` are such rules."""
    item = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    frozen = [{"rule": "self == oldSelf", "message": "immutable"}]
    as_set = {
        "type": "array",
        "x-kubernetes-list-type": "set",
        "items": {"type": "string"},
        "x-kubernetes-validations": frozen,
    }
    as_map = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": item,
        "x-kubernetes-validations": frozen,
    }
    validator = widget_validator(
        tmp_path, {"type": "object", "properties": {"s": as_set, "m": as_map}}
    )
    new = {"s": ["a", "b"], "m": [{"name": "a"}, {"name": "b"}]}
    old = {"s": ["b", "a"], "m": [{"name": "b"}, {"name": "a"}]}
    assert cel(run(validator, new, old)) == []


def test_correlation_that_held(tmp_path: Path) -> None:
    """Map-list items correlate by key (reordering changes nothing, an edited item is refused at
    its new index), set and atomic lists' items have no old self, and a transition rule never
    runs on create (`validateArray`, `MakeMapList`, `validateExpressions`)."""
    frozen = {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    keyed = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "x": frozen},
        },
    }
    atomic = {"type": "array", "items": {"type": "object", "properties": {"x": frozen}}}
    as_set = {"type": "array", "x-kubernetes-list-type": "set", "items": frozen}
    validator = widget_validator(
        tmp_path,
        {"type": "object", "properties": {"m": keyed, "a": atomic, "s": as_set}},
    )
    old = {"m": [{"name": "a", "x": 1}, {"name": "b", "x": 2}], "a": [{"x": 4}], "s": [4]}
    reordered = {"m": [{"name": "b", "x": 2}, {"name": "a", "x": 1}], "a": [{"x": 5}], "s": [5]}
    assert cel(run(validator, reordered, old)) == []
    edited = {"m": [{"name": "b", "x": 3}, {"name": "a", "x": 1}]}
    assert cel(run(validator, edited, old)) == [
        'spec.m[0].x: Invalid value: "integer": failed rule: self == oldSelf'
    ]
    assert cel(run(validator, edited)) == []  # create


@pytest.mark.xfail(
    strict=True,
    reason="only type/required/enum/too-long/too-many errors block the rules (hasBlockingErr); "
    "gpuplane skips them on any schema problem",
)
def test_rules_still_run_beside_a_pattern_error(tmp_path: Path) -> None:
    """strategy.go runs the CEL validator unless `hasBlockingErr` finds a NotSupported,
    Required, TooLong, TooMany or TypeInvalid error; a `pattern` error is `Invalid`, so the API
    server reports the broken rule too."""
    rule = {"rule": "self.a.size() < 2", "message": "too long"}
    validator = widget_validator(
        tmp_path, rule_on_spec(rule, a={"type": "string", "pattern": "^x$"})
    )
    checked = run(validator, {"a": "yyy"})
    assert problems(checked)  # the pattern
    assert cel(checked) == ['spec: Invalid value: "object": too long']


def test_no_such_overload_on_int_or_string_refuses(tmp_path: Path) -> None:
    """int-or-string is typed dyn by the API server too, so a rule comparing a string with an
    int fails at run time there; `validateExpressions` reports it as `'<err>': call arguments
    did not match a supported operator, function or macro signature for rule: <rule>`."""
    rule = {"rule": "self.port > 1", "message": "port"}
    validator = widget_validator(
        tmp_path, rule_on_spec(rule, port={"x-kubernetes-int-or-string": True})
    )
    found = cel(run(validator, {"port": "http"}))
    assert len(found) == 1 and found[0].startswith('spec: Invalid value: "object": ')
    assert "call arguments did not match a supported operator" in found[0]
    assert found[0].endswith("for rule: port")


def test_every_unevaluated_rule_is_reported(tmp_path: Path) -> None:
    """Issue #13: "report any rule it cannot evaluate rather than passing it silently". Two
    objects of one CRD each meet a different rule at run time that gpuplane does not evaluate;
    both rules must be in the `output-cel-unchecked` warning. (A `format: date-time` string is a
    timestamp to the API server, a string to gpuplane: comparing it with a timestamp is the run
    time mismatch gpuplane cannot evaluate; an int-or-string one is the API server's refusal,
    `test_no_such_overload_on_int_or_string_refuses`.)"""
    since = "timestamp('2020-01-01T00:00:00Z')"
    rules = [
        {"rule": f"!has(self.a) || self.a > {since}"},
        {"rule": f"!has(self.b) || self.b > {since}"},
    ]
    when = {"type": "string", "format": "date-time"}
    validator = widget_validator(
        tmp_path,
        {"type": "object", "properties": {"a": when, "b": when}, "x-kubernetes-validations": rules},
    )
    summary = UncheckedRules()
    moment = "2024-05-01T00:00:00Z"
    for name, spec in (("one", {"a": moment}), ("two", {"b": moment})):
        body = widget(spec, name)
        summary.add(
            Manifest("templates", body, Location(f"teams/{name}.yaml")), validator.check(body, K8S)
        )
    text = " ".join(d.message for d in summary.diagnostics())
    assert rules[0]["rule"] in text and rules[1]["rule"] in text


# --- defaulting --------------------------------------------------------------------------------


@pytest.mark.xfail(
    strict=True, reason="Default() replaces a non-nullable null list item or map value"
)
def test_null_items_and_map_values_take_the_default(tmp_path: Path) -> None:
    """algorithm.go `Default`: for `[]interface{}`, `isNonNullableNull(x[i], s.Items)` sets the
    items' default; for additionalProperties the same. The object is then valid."""
    spec = {
        "type": "object",
        "properties": {
            "l": {"type": "array", "items": {"type": "string", "default": "d"}},
            "m": {"type": "object", "additionalProperties": {"type": "string", "default": "d"}},
        },
        "x-kubernetes-validations": [{"rule": "self.l == ['d'] && self.m == {'k': 'd'}"}],
    }
    checked = run(widget_validator(tmp_path, spec), {"l": [None], "m": {"k": None}})
    assert problems(checked) == [] and cel(checked) == []


@pytest.mark.xfail(
    strict=True, reason="a non-nullable null without a default is pruned before validation"
)
def test_a_null_without_default_is_pruned(tmp_path: Path) -> None:
    """customresource_handler.go calls `PruneNonNullableNullsWithoutDefaults` on every decoded
    object (prunenulls.go deletes the key), before defaulting and validation: `a: null` is as
    if `a` were absent, valid, and `!has(self.a)` holds."""
    rule = {"rule": "!has(self.a)", "message": "a is set"}
    checked = run(widget_validator(tmp_path, rule_on_spec(rule, a={"type": "string"})), {"a": None})
    assert problems(checked) == [] and cel(checked) == []


@pytest.mark.xfail(strict=True, reason="`default: null` is no default (Default.Object == nil)")
def test_a_null_default_sets_nothing(tmp_path: Path) -> None:
    """algorithm.go skips a property whose `prop.Default.Object == nil`; a nullable property
    with `default: null` stays absent."""
    rule = {"rule": "!has(self.a)", "message": "a is set"}
    prop = {"type": "string", "nullable": True, "default": None}
    assert cel(run(widget_validator(tmp_path, rule_on_spec(rule, a=prop)), {})) == []


def test_defaulting_that_held(tmp_path: Path) -> None:
    """Defaults fill absent properties of present objects, recurse into defaulted values and
    list items, never create an absent parent, keep a nullable null (algorithm.go)."""
    spec = {
        "type": "object",
        "properties": {
            "o": {"type": "object", "default": {}, "properties": {"x": {**INT, "default": 2}}},
            "l": {
                "type": "array",
                "items": {"type": "object", "properties": {"y": {**INT, "default": 3}}},
            },
            "absent": {"type": "object", "properties": {"z": {**INT, "default": 4}}},
            "n": {"type": "string", "nullable": True, "default": "d"},
        },
        "x-kubernetes-validations": [
            {"rule": "self.o.x == 2 && self.l.all(i, i.y == 3) && !has(self.absent)"},
            {"rule": "self.n == null"},
        ],
    }
    checked = run(widget_validator(tmp_path, spec), {"l": [{}, {}], "n": None})
    assert problems(checked) == [] and cel(checked) == []


# --- the old object: where it is found ----------------------------------------------------------

FLAVOR = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor"}


def _flavor_yaml(name: str, topology: str) -> str:
    return yaml.safe_dump(
        {**FLAVOR, "metadata": {"name": name}, "spec": {"topologyName": topology}}
    )


def _manifest(name: str) -> Manifest:
    body = {**FLAVOR, "metadata": {"name": name}, "spec": {}}
    return Manifest("queueing", body, Location(f"pools/{name}.yaml"))


def test_the_old_object_is_found_in_another_folder_and_not_in_a_broken_file() -> None:
    """An object a layer moved to another folder is still the same API object; a committed file
    that is not YAML gives no old object and does not crash."""
    tree = CommittedTree(
        {
            "prod-east/tenancy/resourceflavor-a.yaml": _flavor_yaml("a", "t1").encode(),
            "prod-east/queueing/resourceflavor-b.yaml": b"spec: [unclosed\n  : {",
            "staging-west/queueing/resourceflavor-c.yaml": _flavor_yaml("c", "t1").encode(),
        },
        "HEAD",
    )
    found = tree.find("prod-east", _manifest("a"))
    assert found is not None and found["spec"]["topologyName"] == "t1"
    assert tree.find("prod-east", _manifest("b")) is None
    assert tree.find("prod-east", _manifest("c")) is None  # another cluster


@pytest.mark.xfail(
    strict=True,
    reason="the old object is looked up by gpuplane's file name only; Argo CD applies every "
    "YAML file (and every document) of the folder",
)
def test_the_old_object_is_found_whatever_file_holds_it() -> None:
    """gpuplane's Applications sync a folder with `directory: recurse: true`, so Argo CD applies
    every `.yaml`/`.yml` file of it and every document in a file; the object on the cluster is
    the one with the same identity (group, kind, namespace, name), whichever file held it at the
    base (hand-written, or named by an older gpuplane)."""
    both = _flavor_yaml("a", "t1") + "---\n" + _flavor_yaml("b", "t2")
    tree = CommittedTree(
        {
            "prod-east/queueing/flavors.yaml": both.encode(),
            "prod-east/queueing/rf-c.yml": _flavor_yaml("c", "t3").encode(),
        },
        "HEAD",
    )
    for name, topology in (("a", "t1"), ("b", "t2"), ("c", "t3")):
        found = tree.find("prod-east", _manifest(name))
        assert found is not None and found["spec"]["topologyName"] == topology, name


# --- transition rules on a real git repository ------------------------------------------------

BLOCK_LEVEL = "      - topology.gpuplane.dev/block\n"


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory, git_env: None) -> Path:
    """The example platform rendered with the upstream CRDs and committed."""
    return committed_example(tmp_path_factory.mktemp("celreview") / "repo")


@pytest.fixture
def repo(committed: Path, tmp_path: Path, git_env: None) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(committed, target, symlinks=True)
    return target


def _render(gpuplane: Callable[..., Any], root: Path, *args: str) -> Any:
    return gpuplane("-C", str(root), "render", "--crds", str(CRDS), *args)


def _replace_everywhere(root: Path, old: str, new: str) -> None:
    for folder in ("clusters", "pools", "teams", "queues"):
        for path in (root / folder).glob("*.yaml"):
            text = path.read_text()
            if old in text:
                path.write_text(text.replace(old, new))


def test_the_way_out_for_a_resource_flavor_works(repo: Path, gpuplane: Callable[..., Any]) -> None:
    """Kueue v0.19.2 `ResourceFlavorReconciler.Reconcile`: a deleted flavor keeps the finalizer
    `kueue.x-k8s.io/resource-in-use` while `ClusterQueuesUsingFlavor` is not empty. gpuplane's
    ClusterQueues still list the flavor by the same name, so `Force=true,Replace=true` (delete,
    then create) never gets past the delete: the hint must say so for a ResourceFlavor."""
    edit_once(repo / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    result = _render(gpuplane, repo)
    assert result.exit_code == 1 and "output-immutable-field" in result.output, result.output
    assert "kueue.x-k8s.io/resource-in-use" in result.output


def test_a_new_name_is_a_way_out(repo: Path, gpuplane: Callable[..., Any]) -> None:
    """Renaming the pool gives a new ResourceFlavor (created: no old self) and deletes the old
    one: nothing is refused; a deleted object has no transition rule either."""
    edit_once(repo / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    (repo / "pools" / "h100-train.yaml").rename(repo / "pools" / "h100-big.yaml")
    _replace_everywhere(repo, "h100-train", "h100-big")
    result = _render(gpuplane, repo)
    assert result.exit_code == 0, result.output
    assert "output-immutable-field" not in result.output
    assert not (repo / "rendered/prod-east/queueing/resourceflavor-h100-train.yaml").exists()


@pytest.mark.xfail(
    strict=True,
    reason="a renamed cluster on the same Argo CD destination keeps its objects; gpuplane "
    "looks the old ones up by the cluster's name only",
)
def test_a_renamed_cluster_keeps_its_old_objects(repo: Path, gpuplane: Callable[..., Any]) -> None:
    """The objects live on the API server `spec.argocd.destination` names; renaming the cluster
    (same destination) makes new Applications that apply the same ResourceFlavor over the one
    already there (gpuplane's Applications have no resources finalizer, so the old ones delete
    nothing), and the API server evaluates the transition rules against it."""
    (repo / "clusters" / "prod-east.yaml").rename(repo / "clusters" / "prod-east-2.yaml")
    for folder in ("clusters", "pools", "teams", "queues"):
        for path in (repo / folder).glob("*.yaml"):
            text = path.read_text()
            new = text.replace("prod-east\n", "prod-east-2\n")
            for end in (",", "]", " ", ":"):
                new = new.replace(f"prod-east{end}", f"prod-east-2{end}")
            path.write_text(new)
    edit_once(repo / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    result = _render(gpuplane, repo)
    assert "cluster 'prod-east'" not in result.output, result.output  # the rename is complete
    assert result.exit_code == 1 and "output-immutable-field" in result.output, result.output


def test_an_unreadable_committed_object_is_reported(
    repo: Path, gpuplane: Callable[..., Any]
) -> None:
    """Issue #13 asks that a rule gpuplane cannot evaluate be reported, never passed silently.
    When the committed file of an object with transition rules is not YAML, its rules cannot be
    evaluated against it; the render must say so (naming the file)."""
    committed_file = repo / "rendered/prod-east/queueing/resourceflavor-h100-train.yaml"
    committed_file.write_text("apiVersion: [broken\n")
    git(repo, "commit", "-qam", "a broken file")
    edit_once(repo / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    result = _render(gpuplane, repo)
    assert "Traceback" not in result.output
    assert "resourceflavor-h100-train.yaml" in result.output, result.output


def test_bases_that_are_missing_or_not_rendered(
    repo: Path, gpuplane: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base that does not exist is a usage error for `validate --base` and `diff --base`; a
    base without rendered/ has no committed object (validate finds nothing) while `diff` falls
    back to the base's own render and marks the edit high risk (docs/cel.md's table)."""
    monkeypatch.setenv("GPUPLANE_CRDS", str(CRDS))
    for command in (("validate",), ("diff", "--crds", str(CRDS))):
        result = gpuplane("-C", str(repo), *command, "--base", "no-such-ref")
        assert result.exit_code == 2 and "no-such-ref" in result.output, result.output
    git(repo, "rm", "-rq", "--cached", "rendered")
    git(repo, "commit", "-qm", "rendered/ out of git")
    (repo / ".gitignore").write_text("rendered/\n")
    edit_once(repo / "pools" / "h100-train.yaml", BLOCK_LEVEL, "")
    validated = gpuplane("-C", str(repo), "validate", "--base", "HEAD")
    assert "output-immutable-field" not in validated.output, validated.output
    diffed = gpuplane(
        "-C", str(repo), "diff", "--base", "HEAD", "--crds", str(CRDS), "--format", "json"
    )
    assert diffed.exit_code == 0, diffed.output
    risks = {
        f["risk"] for f in json.loads(diffed.output)["changes"] if f["code"] == "immutable-field"
    }
    assert risks == {"high"}
    rendered = _render(gpuplane, repo)  # HEAD has no rendered/: a first render
    assert rendered.exit_code == 0 and "output-immutable-field" not in rendered.output
