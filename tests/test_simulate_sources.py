"""`gpuplane simulate --from alibaba-gpu-2023|philly-vc`: public traces mapped onto the example
platform's teams (docs/simulate.md#traces-from-public-clusters).

The samples under tests/cases/traces/ are written here in the upstream layouts (never copied
rows); every expectation is worked by hand from the upstream column meanings and the rule. The
example's targets: the six training namespaces, weighted by their team's nominal
nvidia.com/gpu quota on the pools their training ClusterQueue reaches (teams/*.yaml):
llm-eval-train 4 (h200-tune), llm-train 16, recsys-train 4, search-train 8, speech-train 4,
vision-train 8 (h100-train); sum 44.

Smooth weighted round-robin by hand over those, in that order (credits after adding weights,
then the winner gives back 44):
  1st identity: [4,16,4,8,4,8]      -> llm-train       (16)
  2nd:          [8,-12,8,16,8,16]   -> search-train    (16, first of the tie with vision)
  3rd:          [12,4,12,-20,12,24] -> vision-train    (24)
  4th:          [16,20,16,-12,16,-12] -> llm-train     (20)
  5th:          [20,-8,20,-4,20,-4] -> llm-eval-train  (20, first of a three-way tie)
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer import pipeline
from renderer.inputs.trace_sources.alibaba import read_alibaba
from renderer.inputs.trace_sources.common import Target, assign, targets
from renderer.inputs.trace_sources.philly import _shape, read_philly
from tests.conftest import REPO

CASES = REPO / "tests" / "cases" / "traces"
TRACES = REPO.parent / "shared" / "reference" / "traces"
ALIBABA = TRACES / "alibaba-gpu-v2023" / "openb_pod_list_default.csv"
PHILLY = TRACES / "gavel-philly" / "seed0"
WEIGHTS = {
    "llm-eval-train": 4,
    "llm-train": 16,
    "recsys-train": 4,
    "search-train": 8,
    "speech-train": 4,
    "vision-train": 8,
}


@pytest.fixture(scope="module")
def example_targets() -> tuple[Target, ...]:
    loaded = pipeline.load_platform(REPO)
    assert loaded.platform is not None
    return targets(loaded.platform)


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch, platform: Path) -> Path:
    monkeypatch.chdir(platform)
    return platform


def test_the_targets_are_the_training_namespaces_by_whole_gpu_quota(
    example_targets: tuple[Target, ...],
) -> None:
    assert {t.namespace: t.weight for t in example_targets} == WEIGHTS
    assert [t.namespace for t in example_targets] == sorted(WEIGHTS)
    by_name = {t.namespace: t for t in example_targets}
    # the lowest-valued class of each queue (queues/*.yaml: preemptible, value 10)
    assert by_name["llm-train"].low_priority == "prod-preemptible"
    assert by_name["search-train"].low_priority == "staging-preemptible"


def test_weighted_round_robin_deals_the_first_identities_as_worked_by_hand(
    example_targets: tuple[Target, ...],
) -> None:
    chosen = assign(["e", "c", "a", "d", "b"], example_targets)
    assert [chosen[i].namespace for i in "abcde"] == [
        "llm-train",
        "search-train",
        "vision-train",
        "llm-train",
        "llm-eval-train",
    ]


def test_every_run_of_the_weight_sum_gives_each_target_its_weight(
    example_targets: tuple[Target, ...],
) -> None:
    names = [f"id-{i:04d}" for i in range(3 * 44)]
    chosen = assign(names, example_targets)
    for start in (0, 44, 88):
        window = Counter(chosen[n].namespace for n in names[start : start + 44])
        assert window == WEIGHTS


def test_alibaba_sample_rows_are_mapped_as_the_readme_columns_say(
    example_targets: tuple[Target, ...],
) -> None:
    mapped = read_alibaba(CASES / "alibaba" / "pods.csv", "pods.csv", example_targets)
    assert mapped.findings == ()
    rows = {r.values["name"]: dict(r.values) for r in mapped.rows}
    # pod-a: creation 0, scheduled 0, deleted 3600; one whole GPU; LS
    assert rows["pod-a"] == {
        "submit_s": 0, "namespace": "llm-train", "name": "pod-a", "pods": 1, "gpus_per_pod": 1,
        "cpu_per_pod": "8000m", "memory_per_pod": "32768Mi", "duration_s": 3600, "priority": "",
    }  # fmt: skip
    # pod-b: 500 milli-GPU shares a GPU: one whole GPU; ran 1000 - 100 = 900 s; BE: the
    # staging queue's lowest class (search-train is on staging-west)
    assert rows["pod-b"]["namespace"] == "search-train"
    assert (rows["pod-b"]["gpus_per_pod"], rows["pod-b"]["duration_s"]) == (1, 900)
    assert rows["pod-b"]["priority"] == "staging-preemptible"
    assert rows["pod-b"]["submit_s"] == 60
    # pod-c: 8 GPUs for 7320 - 120 = 7200 s
    assert (rows["pod-c"]["namespace"], rows["pod-c"]["gpus_per_pod"]) == ("vision-train", 8)
    assert rows["pod-c"]["duration_s"] == 7200
    # pod-d: CPU only, 500 - 210 = 290 s
    assert (rows["pod-d"]["gpus_per_pod"], rows["pod-d"]["duration_s"]) == (0, 290)
    assert (rows["pod-d"]["cpu_per_pod"], rows["pod-d"]["memory_per_pod"]) == ("2000m", "4096Mi")
    # pod-e is Pending, never scheduled: not replayed, a warning at its empty scheduled_time
    # ("pod-e,6000,12288,1,250,,LS,Pending,300,900," is 43 characters)
    assert "pod-e" not in rows
    (warning,) = mapped.skipped
    assert (warning.rule, warning.severity, str(warning.at)) == (
        "trace-source-skipped",
        "warning",
        "pods.csv:6:44",
    )
    assert (mapped.source_rows, mapped.rounded) == (5, 1)
    assert [(a.source, a.namespace, a.workloads, a.gpus) for a in mapped.mapping] == [
        ("pod-a", "llm-train", 1, 1),
        ("pod-b", "search-train", 1, 1),
        ("pod-c", "vision-train", 1, 8),
        ("pod-d", "llm-train", 1, 0),
    ]


def test_a_pod_named_in_capitals_keeps_its_identity(
    example_targets: tuple[Target, ...], tmp_path: Path
) -> None:
    """A row's workload name is the pod's in lower case, as Kubernetes names are; the mapping
    still names the pod as written (it used to fail with a KeyError on `pod-a`)."""
    text = (CASES / "alibaba" / "pods.csv").read_text().replace("pod-a", "Pod-A")
    (tmp_path / "pods.csv").write_text(text)
    mapped = read_alibaba(tmp_path / "pods.csv", "pods.csv", example_targets)
    assert mapped.findings == ()
    assert "pod-a" in {r.values["name"] for r in mapped.rows}
    assert "Pod-A" in {a.source for a in mapped.mapping}


def test_philly_sample_steps_become_seconds_by_v100_throughput(
    example_targets: tuple[Target, ...],
) -> None:
    mapped = read_philly(CASES / "philly" / "seed0", "seed0", example_targets)
    assert mapped.findings == ()
    rows = {r.values["name"]: dict(r.values) for r in mapped.rows}
    # abc123 (first VC by name) -> llm-train; def456 -> search-train
    # ResNet-18 bs 32 on 1 V100: 10 steps/s, 36000 steps = 3600 s; on 2: 16 steps/s, 8000 = 500 s
    assert rows["abc123-1"] == {
        "submit_s": 0, "namespace": "llm-train", "name": "abc123-1", "pods": 1, "gpus_per_pod": 1,
        "cpu_per_pod": "0", "memory_per_pod": "0", "duration_s": 3600, "priority": "",
    }  # fmt: skip
    assert (rows["abc123-2"]["submit_s"], rows["abc123-2"]["gpus_per_pod"]) == (60, 2)
    assert rows["abc123-2"]["duration_s"] == 500
    # A3C on 1 V100: 4 steps/s, 1000 steps = 250 s (the k80 entry of 1 step/s is not used)
    assert [rows[n]["duration_s"] for n in ("def456-1", "def456-2")] == [250, 250]
    assert [rows[n]["submit_s"] for n in ("def456-1", "def456-2")] == [0, 30]
    assert {rows[n]["namespace"] for n in ("def456-1", "def456-2")} == {"search-train"}
    # abc123 line 3: A3C on 16 GPUs has no v100 entry; its scale_factor cell starts at column
    # 4 + 55 + 12 + 2 + 4 + 11 + 1 = 89
    (warning,) = mapped.skipped
    assert (warning.rule, str(warning.at)) == ("trace-source-skipped", "seed0/abc123.trace:3:89")
    assert mapped.source_rows == 5
    assert [(a.source, a.namespace, a.workloads, a.gpus) for a in mapped.mapping] == [
        ("abc123", "llm-train", 2, 3),
        ("def456", "search-train", 2, 2),
    ]


@pytest.mark.parametrize(
    ("gpus", "shape"),
    [(1, (1, 1)), (7, (1, 7)), (8, (1, 8)), (12, (3, 4)), (16, (2, 8)), (20, (5, 4)),
     (24, (3, 8)), (64, (8, 8))],
)  # fmt: skip
def test_philly_jobs_are_cut_into_node_sized_pods(gpus: int, shape: tuple[int, int]) -> None:
    assert _shape(gpus) == shape


def test_samples_simulate_end_to_end_with_the_mapping(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    # every job fits its team's nominal quota on an idle platform: admitted at once
    result = gpuplane(
        "simulate", "--from", "alibaba-gpu-2023", str(CASES / "alibaba" / "pods.csv"),
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    teams = {t["name"]: t for t in data["teams"]}
    assert {n: t["workloads"] for n, t in teams.items()} == {"llm": 2, "search": 1, "vision": 1}
    assert all(t["wait"]["max"] == 0 and t["completed"] == t["workloads"] for t in teams.values())
    mapping = data["mapping"]
    assert (mapping["rows"], mapping["replayed"], mapping["skipped"]) == (5, 4, 1)
    assert [(m["source"], m["namespace"]) for m in mapping["mapping"]] == [
        ("pod-a", "llm-train"),
        ("pod-b", "search-train"),
        ("pod-c", "vision-train"),
        ("pod-d", "llm-train"),
    ]
    assert [f["rule"] for f in data["findings"]] == ["trace-source-skipped"]
    text = gpuplane("simulate", "--from", "philly-vc", str(CASES / "philly" / "seed0"))
    assert text.exit_code == 0, text.output
    assert "llm-train (team llm, weight 16): 1 virtual cluster, 2 workloads, 3 GPUs: abc123" in (
        text.output
    )
    assert "not replayed: 1 x job of 16 GPUs with no measured throughput" in text.output


def test_bad_rows_are_every_finding_at_its_cell(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    bad = CASES / "alibaba" / "bad.csv"
    result = gpuplane("simulate", "--from", "alibaba-gpu-2023", str(bad))
    assert result.exit_code == 1
    # columns counted by hand from the start of each line
    assert f"{bad}:2:18: error[trace-source-row] num_gpu 'two'" in result.output
    assert f"{bad}:3:20: error[trace-source-row] gpu_milli 1500 with num_gpu 1" in result.output
    assert f"{bad}:4:43: error[trace-source-row] deletion_time 100 is before" in result.output
    assert f"{bad}:5:1: error[trace-source-row] 7 cells, the header has 11" in result.output
    assert "Traceback" not in result.output
    philly = CASES / "philly" / "bad" / "bad001.trace"
    result = gpuplane("simulate", "--from", "philly-vc", str(philly))
    assert result.exit_code == 1
    assert f"{philly}:1:1: error[trace-source-row] 6 tab-separated fields" in result.output
    assert f"{philly}:2:43: error[trace-source-row] scale_factor 'x'" in result.output


def test_a_file_of_another_form_is_a_header_finding(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    trace = in_repo / "trace.csv"
    trace.write_text("submit_s,namespace\n0,llm-train\n", encoding="utf-8")
    result = gpuplane("simulate", "--from", "alibaba-gpu-2023", "trace.csv")
    assert result.exit_code == 1
    assert "trace.csv:1:1: error[trace-header] not an Alibaba pod list" in result.output


def test_the_cli_choices_are_the_sources() -> None:
    from renderer.cli.simulate import TRACE_SOURCES
    from renderer.inputs.trace_sources.common import SOURCES

    assert TRACE_SOURCES == SOURCES


# The real, unmodified files from ../shared/reference/traces (SOURCES.md gives their counts).


def _real(path: Path) -> Path:
    if not path.exists():
        pytest.skip("../shared/reference/traces is not beside this checkout")
    return path


def test_the_whole_alibaba_pod_list_is_mapped_or_reported(
    example_targets: tuple[Target, ...],
) -> None:
    path = _real(ALIBABA)
    mapped = read_alibaba(path, "pods.csv", example_targets)
    assert mapped.findings == ()
    # SOURCES.md 1.2: 8,152 pods; scheduled_time empty for exactly the 897 Pending pods, so
    # 7,255 are replayed
    assert (mapped.source_rows, len(mapped.skipped), len(mapped.rows)) == (8152, 897, 7255)
    with path.open(encoding="utf-8", newline="") as stream:
        upstream = [r for r in csv.DictReader(stream) if r["scheduled_time"]]
    # GPUs asked: num_gpu of every scheduled pod (a sharing pod asks one whole GPU)
    assert sum(a.gpus for a in mapped.mapping) == sum(int(r["num_gpu"]) for r in upstream)
    sharing = [r for r in upstream if r["num_gpu"] == "1" and int(r["gpu_milli"]) < 1000]
    assert mapped.rounded == len(sharing)
    # each namespace holds its weight of every 44 pods (8,152 = 185 x 44 + 12)
    chosen = assign([f"openb-pod-{i:04d}" for i in range(8152)], example_targets)
    counts = Counter(t.namespace for t in chosen.values())
    for namespace, weight in WEIGHTS.items():
        assert 185 * weight <= counts[namespace] <= 186 * weight


@pytest.mark.slow
def test_the_alibaba_trace_simulates_on_the_example(
    in_repo: Path, gpuplane: Callable[..., Any]
) -> None:
    result = gpuplane(
        "simulate", "--from", "alibaba-gpu-2023", str(_real(ALIBABA)), "--limit", "400",
        "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    mapping = data["mapping"]
    assert (mapping["rows"], mapping["replayed"], mapping["skipped"]) == (8152, 400, 897)
    assert sum(t["workloads"] for t in data["teams"]) == 400
    assert sum(m["workloads"] for m in mapping["mapping"]) == 400
    assert Counter(f["rule"] for f in data["findings"]) == {"trace-source-skipped": 897}


def _expected_philly(folder: Path) -> tuple[int, int, dict[str, int]]:
    """Rows, rows without a v100 throughput, and GPUs asked per VC, read here from the files."""
    table = json.loads((folder.parent / "simulation_throughputs.json").read_text())["v100"]
    rows = missing = 0
    gpus: dict[str, int] = {}
    for file in sorted(folder.glob("*.trace")):
        for line in file.read_text(encoding="utf-8").splitlines():
            fields = line.split("\t")
            rows += 1
            if f"('{fields[0]}', {int(fields[6])})" in table:
                gpus[file.stem] = gpus.get(file.stem, 0) + int(fields[6])
            else:
                missing += 1
    return rows, missing, gpus


def test_the_philly_traces_are_mapped_or_reported(example_targets: tuple[Target, ...]) -> None:
    folder = _real(PHILLY)
    mapped = read_philly(folder, "seed0", example_targets)
    assert mapped.findings == ()
    rows, missing, gpus = _expected_philly(folder)
    # SOURCES.md 2.3: 15,264 jobs in 15 files; 361 ask 7, 12, 16, 20, 24, 32 or 64 GPUs,
    # which the throughputs file has no entry for
    assert rows == mapped.source_rows == 15264
    assert len(mapped.skipped) == missing >= 361
    assert len(mapped.rows) == rows - missing
    assert {a.source: a.gpus for a in mapped.mapping} == gpus
    # SOURCES.md 2.3: ed69ec's 951 jobs each ask one GPU
    ed69ec = next(a for a in mapped.mapping if a.source == "ed69ec")
    assert (ed69ec.workloads, ed69ec.gpus) == (951, 951)
    # 15 VCs over weights summing 44: dealt in order, llm-train gets the 1st, 4th, 7th ...
    assert len({a.source for a in mapped.mapping}) == 15
    assert math.isclose(sum(WEIGHTS.values()), 44)


@pytest.mark.slow
def test_a_philly_vc_simulates_on_the_example(in_repo: Path, gpuplane: Callable[..., Any]) -> None:
    path = _real(PHILLY / "ed69ec.trace")
    result = gpuplane("simulate", "--from", "philly-vc", str(path), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # one VC: the first deal goes to llm-train (weight 16)
    assert [(m["source"], m["namespace"]) for m in data["mapping"]["mapping"]] == [
        ("ed69ec", "llm-train")
    ]
    (llm,) = data["teams"]
    assert (llm["name"], llm["workloads"]) == ("llm", 951)
    assert llm["completed"] + llm["never"] == 951
