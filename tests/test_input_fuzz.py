"""Property: every numeric and quantity field of every input kind, whatever a file writes there,
ends in findings or in objects Kubernetes takes, never in a traceback (issue 27's "two
tracebacks": `defaults.cpu` of 10^24 passed `validate` and crashed `render` and `diff`).

For each field of the example platform's files that holds a number or a quantity, Hypothesis
writes hostile values into a copy: huge and negative integers, integers written as decimals
(`8.0`, `1e30`), NaN and infinities, strings where numbers belong, and quantities with every
suffix and exponent. Then:

- `validate` (load, schema, policy) returns findings and raises nothing;
- when it finds no error, every cluster renders, every object passes the API limits that no
  schema carries (`renderer.output.api_limits`, `renderer.model.limits`: what `validate` lets
  through, the API server and Kueue take), and `plan` is built.

Derandomized, with no example database, and a few examples per field: the same cases run on
every machine in a few seconds per field. `diff` is run on the brief's own fields at the edges
of their range in tests/red_team/test_limits.py (a diff renders both sides).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from renderer.commands.plan import build_plan
from renderer.findings.diagnostics import Severity
from renderer.inputs.limits import QUANTITY
from renderer.inputs.schema import SCHEMA_DIR
from renderer.model.limits import rendered_quantity_problems
from renderer.model.quantity import COUNT_MAX, INT64_MAX
from renderer.model.view import ClusterView
from renderer.output.api_limits import object_problems
from renderer.output.manifest import Manifest
from renderer.pipeline import import_layers, load_platform, render_cluster
from tests.conftest import REPO, copy_inputs

pytestmark = pytest.mark.slow

FILES = {
    "Team": ("teams/llm.yaml",),
    "Pool": (
        *("pools/h100-train.yaml", "pools/a100-mig.yaml"),
        *("pools/l40s-infer.yaml", "pools/h200-tune.yaml"),
    ),
    "Queue": ("queues/prod.yaml", "queues/staging.yaml"),
    "Cluster": ("clusters/prod-east.yaml",),
    "Repository": ("gpuplane.yaml",),
}
"""The example files fuzzed, per kind: together they hold every numeric field the example
sets (MIG layouts, time-slicing replicas, a node range, both queues' oversubscription and wait
budget)."""

_Path = tuple[str | int, ...]


def _yaml() -> YAML:
    yaml = YAML()
    yaml.width = 4096
    return yaml


def _schema_quantities(node: Any, defs: dict[str, Any], at: _Path) -> Iterator[_Path]:
    """The data paths (`*` for any list index) of the fields a schema marks as quantities."""
    if not isinstance(node, dict):
        return
    if QUANTITY in node:
        yield at
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and QUANTITY not in node:
        yield from _schema_quantities(defs[ref.removeprefix("#/$defs/")], defs, at)
    for key, sub in node.get("properties", {}).items():
        yield from _schema_quantities(sub, defs, (*at, key))
    if isinstance(node.get("items"), dict):
        yield from _schema_quantities(node["items"], defs, (*at, "*"))


def _quantity_paths(kind: str) -> set[_Path]:
    schema = json.loads((SCHEMA_DIR / f"{kind.lower()}.schema.json").read_text())
    return set(_schema_quantities(schema, schema.get("$defs", {}), ()))


def _matches(path: _Path, pattern: _Path) -> bool:
    return len(path) == len(pattern) and all(
        p == q or (q == "*" and isinstance(p, int)) for p, q in zip(path, pattern, strict=True)
    )


def _leaves(value: Any, at: _Path = ()) -> Iterator[tuple[_Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*at, index))
    else:
        yield at, value


def _fields() -> list[tuple[str, str, _Path, str]]:
    """(kind, file, path, "number" | "quantity") for each numeric or quantity field of the
    fuzzed files; a field is taken from the first file (and list entry) of its kind that has it."""
    found: list[tuple[str, str, _Path, str]] = []
    for kind, files in FILES.items():
        quantities = _quantity_paths(kind)
        seen: set[_Path] = set()
        for file in files:
            data = _yaml().load((REPO / file).read_text())
            for path, value in _leaves(data):
                shape = tuple("*" if isinstance(p, int) else p for p in path)
                if shape in seen:
                    continue
                if any(_matches(path, q) for q in quantities):
                    found.append((kind, file, path, "quantity"))
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    found.append((kind, file, path, "number"))
                else:
                    continue
                seen.add(shape)
    return found


FIELDS = _fields()

EDGES = [0, 1, -1, 2**31, 2**53 + 1, COUNT_MAX, COUNT_MAX + 1, INT64_MAX, INT64_MAX + 1, 10**24]
numbers = st.one_of(
    st.sampled_from(EDGES),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([8.0, 1e30, 1e-300, 1e300, 0.5, -0.0, math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["8", "1e24", "NaN", ".inf", "", True, None]),
)
"""What a hostile file writes where a number belongs."""

_SUFFIXES = ["", "m", "n", "u", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
_EXPONENTS = ["e3", "E-3", "e24", "e-12", "e18", "e2147483648", "E"]
quantities = st.one_of(
    st.sampled_from(
        [
            *("1e24", "10E", "9223372036854775808", "0.0000000001m", "NaN", "Infinity", "-1"),
            *("-0", "8Ei", "7Ei", "0.5", "1m", " 5 ", "5 Gi", "", "1_000", "0x10"),
            "\uff11",  # a full-width digit one: Python's int() reads it, Go's ParseQuantity not
        ]
    ),
    st.builds(
        lambda sign, digits, fraction, suffix: f"{sign}{digits}{fraction}{suffix}",
        st.sampled_from(["", "", "+", "-"]),
        st.from_regex(r"\A[0-9]{1,24}\Z"),
        st.sampled_from(["", "", ".5", ".000000000001", "."]),
        st.sampled_from(_SUFFIXES + _EXPONENTS),
    ),
    st.sampled_from(EDGES),
    st.sampled_from([1e24, 8.0, math.nan]),
)
"""What a hostile file writes where a quantity belongs."""


def _set(data: Any, path: _Path, value: Any) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import_layers()
    return copy_inputs(REPO, tmp_path_factory.mktemp("fuzz") / "repo")


def _outcome(root: Path, inputs: dict[bytes, bytes]) -> str:
    """'refused' or 'rendered'; raises whatever a stage raises, and fails the test when an
    accepted platform renders an object the API limits refuse."""
    loaded = load_platform(root, inputs=inputs)  # type: ignore[arg-type]
    if any(d.severity is Severity.ERROR for d in loaded.diagnostics):
        return "refused"
    platform = loaded.platform
    for cluster in platform.clusters.values():
        for output in render_cluster(ClusterView.of(platform, cluster)):
            if isinstance(output, Manifest):
                found = [*object_problems(output.body), *rendered_quantity_problems(output.body)]
                assert not found, (output.kind, output.name, found)
    build_plan(platform)
    return "rendered"


def test_the_fields_cover_every_kind_and_the_brief() -> None:
    """The fuzz reaches what the issue names, and a field added to a kind joins by itself."""
    named = {(kind, path) for kind, _, path, _ in FIELDS}
    for wanted in (
        ("Team", ("spec", "defaults", "cpu")),
        ("Team", ("spec", "defaults", "memory")),
        ("Team", ("spec", "resources", "storage")),
        ("Team", ("spec", "gpus", 0, "nominal")),
        ("Pool", ("spec", "host", "memory")),
        ("Pool", ("spec", "mig", "layout", "1g.10gb")),
        ("Queue", ("spec", "oversubscription")),
        ("Cluster", ("spec", "teamDefaults", "resources", "cpu")),
    ):
        assert wanted in named, wanted
    assert {kind for kind, *_ in FIELDS} == {"Team", "Pool", "Queue", "Cluster", "Repository"}
    # gpuplane.yaml's one numeric field, the allowlists' egress ports, joined through FILES
    assert [f[2] for f in FIELDS if f[0] == "Repository"] == [
        ("spec", "allowlists", "egress", 0, "ports", 0)
    ]


@pytest.mark.parametrize(
    ("kind", "file", "path", "shape"),
    FIELDS,
    ids=[f"{f[1]}:{'.'.join(map(str, f[2]))}" for f in FIELDS],
)
def test_any_value_ends_in_findings_or_a_valid_render(
    example: Path, kind: str, file: str, path: _Path, shape: str
) -> None:
    original = (example / file).read_text()
    inputs: dict[bytes, bytes] = {}
    outcomes: list[str] = []

    @settings(
        max_examples=10,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(value=quantities if shape == "quantity" else numbers)
    def attempt(value: Any) -> None:
        data = _yaml().load(original)
        _set(data, path, value)
        target = example / file
        with target.open("w") as handle:
            _yaml().dump(data, handle)
        try:
            outcomes.append(_outcome(example, inputs))
        finally:
            target.write_text(original)

    attempt()
    assert "refused" in outcomes, "no hostile value was refused: the strategy is too tame"
