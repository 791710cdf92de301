"""`gpuplane fit` on topology-aware flavors, against Kueue v0.19.2's source.

The example platform's ClusterQueue `llm-training` (namespace llm-train, cluster prod-east) has
flavors h100-train (topology-aware: Topology `block-rack-hostname`, 4 nodes of 8 H100s) and
a100-mig (topology-aware too, on Topology `hostname`, because it shares the ClusterQueue with
h100-train: `renderer.model.topology.with_topology_peers`), so it is TAS-only;
`llm-eval-training` (llm-eval-train, staging-west on EKS) has only h200-tune (topology-aware:
EC2's network node layers, 1 to 4 nodes of 8 H200s). The `mixed` fixture turns a100-mig's
topology off, making `llm-training` the *mixed* ClusterQueue the platform no longer renders, to
check fit against Kueue there too. Each expectation below
is worked out from the Kueue function its docstring names, not from fit's output.

Every job here keeps the platform's admission policies and Pod Security (`tests.compliance`),
so that no step before Kueue refuses it and the answer checked is Kueue's own.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from renderer.admission.answer.result import FITS, NEVER, FitResult
from renderer.admission.answer.text import fit_json, fit_text
from renderer.commands.fit import check_fit
from renderer.model.platform import Platform
from renderer.pipeline import load_platform
from tests.compliance import comply
from tests.conftest import REPO, copy_inputs

KUEUE_SAMPLES = REPO.parent / "shared" / "reference" / "workloads" / "kueue"
GPU = "nvidia.com/gpu"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
SLICE = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Platform:
    """The example platform with both clusters on Kubernetes 1.36 (the mutating priority
    policy applies, so no job here is refused for a missing priority label)."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("platform"))
    for cluster in (root / "clusters").glob("*.yaml"):
        text = cluster.read_text(encoding="utf-8")
        cluster.write_text(
            re.sub(r'kubernetesVersion: "[0-9.]+"', 'kubernetesVersion: "1.36"', text),
            encoding="utf-8",
        )
    loaded = load_platform(root)
    assert not [d for d in loaded.diagnostics if d.severity == "error"]
    return loaded.platform


@pytest.fixture(scope="module")
def mixed(platform: Platform) -> Platform:
    """llm-training with a topology-aware h100-train beside an a100-mig that is not."""
    pools = dict(platform.pools)
    pools["a100-mig"] = dataclasses.replace(pools["a100-mig"], topology_peer=False)
    return dataclasses.replace(platform, pools=pools)


def job(
    name: str,
    *,
    namespace: str = "llm-train",
    pods: int = 1,
    gpus: int = 8,
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "registry.example.com/llm/train:1",
                "resources": {
                    "requests": {"cpu": "8", "memory": "64Gi", GPU: gpus},
                    "limits": {"cpu": "8", "memory": "64Gi", GPU: gpus},
                },
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": affinity}]
                }
            }
        }
    template: dict[str, Any] = {"spec": spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"parallelism": pods, "completions": pods, "template": template},
    }


def run(platform: Platform, tmp_path: Path, document: dict[str, Any]) -> FitResult:
    """fit's answer for the job, made to pass every step before Kueue (`comply`)."""
    comply(document, platform, document["metadata"]["namespace"])
    path = tmp_path / f"{document['metadata']['name']}.yaml"
    with path.open("w", encoding="utf-8") as out:
        YAML().dump(document, out)
    result = check_fit(platform, path)
    assert not [o for o in result.chain if o.refused], result.summary
    assert fit_text(result).endswith("\n")
    fit_json(result)
    return result


def flavor_of(result: FitResult) -> str | None:
    (pod_set,) = result.pod_sets
    return pod_set.flavor


# --- the flavor check: checkPodSetAndFlavorMatchForTAS ----------------------------------------


def test_a_pod_set_without_tas_cannot_use_the_tas_flavor_of_a_mixed_cluster_queue(
    mixed: Platform, tmp_path: Path
) -> None:
    """`checkPodSetAndFlavorMatchForTAS`: a pod set that does not ask for TAS, in a ClusterQueue
    that is not TAS-only (`isTASOnly`: a100-mig has no topologyName), is refused every flavor
    with `topologyName`: "Flavor %q supports only TopologyAwareScheduling". a100-mig then has
    no nvidia.com/gpu quota at all (16 > 0). Kueue sorts the reasons (`Status.Message`)."""
    result = run(mixed, tmp_path, job("plain", pods=2))
    assert result.verdict == NEVER
    assert result.message == (
        'couldn\'t assign flavors to pod set main: Flavor "h100-train" supports only '
        "TopologyAwareScheduling, insufficient quota for nvidia.com/gpu in flavor a100-mig, "
        "previously considered podsets requests (0) + current podset request (16) > maximum "
        "capacity (0)"
    )
    assert any("podset-preferred-topology" in n for n in result.notes)


def test_a_preferred_level_of_the_topology_fits(platform: Platform, tmp_path: Path) -> None:
    """The request names a level of block-rack-hostname (`HasLevel`); 2 pods of 8 GPUs fit the
    team's nominal 16 on h100-train and two of its four nodes."""
    document = job("preferred", pods=2, annotations={PREFERRED: "topology.gpuplane.dev/rack"})
    result = run(platform, tmp_path, document)
    assert result.verdict == FITS, result.message
    assert flavor_of(result) == "h100-train"
    assert any("preferred topology.gpuplane.dev/rack" in n for n in result.notes)


def test_unconstrained_topology_fits(platform: Platform, tmp_path: Path) -> None:
    """`podset-unconstrained-topology: "true"` asks for TAS (`IsExplicitlyRequestingTAS`)."""
    document = job("loose", pods=1, annotations={UNCONSTRAINED: "true"})
    assert flavor_of(run(platform, tmp_path, document)) == "h100-train"


def test_a_level_the_topology_lacks(mixed: Platform, tmp_path: Path) -> None:
    """`HasLevel` fails on h100-train ("Flavor %q does not contain the requested level"), and
    a100-mig has no Topology while the pod requests covered resources ("Flavor %q does not
    support TopologyAwareScheduling")."""
    document = job("rack", annotations={REQUIRED: "cloud.provider.com/topology-rack"})
    result = run(mixed, tmp_path, document)
    assert result.verdict == NEVER
    assert result.message == (
        'couldn\'t assign flavors to pod set main: Flavor "a100-mig" does not support '
        'TopologyAwareScheduling, Flavor "h100-train" does not contain the requested level'
    )


def test_a_tas_annotation_in_a_queue_without_tas_flavors(
    platform: Platform, tmp_path: Path
) -> None:
    """llm-inference has only l40s-infer, which names no Topology: a pod set that asks for TAS
    and requests covered resources is refused it ("Flavor %q does not support
    TopologyAwareScheduling"), so it is never admitted; without the annotation it fits."""
    annotations = {PREFERRED: "kubernetes.io/hostname"}
    asked = job("serve-tas", namespace="llm-serve", gpus=1, annotations=annotations)
    result = run(platform, tmp_path, asked)
    assert result.verdict == NEVER
    assert result.message == (
        'couldn\'t assign flavors to pod set main: Flavor "l40s-infer" does not support '
        "TopologyAwareScheduling"
    )
    assert any("not topology-aware" in n for n in result.notes)
    plain = run(platform, tmp_path, job("serve", namespace="llm-serve", gpus=1))
    assert flavor_of(plain) == "l40s-infer", plain.message


@pytest.mark.parametrize("sample", ["sample-jobset-tas-required", "sample-jobset-tas-sliced"])
def test_kueues_own_tas_samples(platform: Platform, tmp_path: Path, sample: str) -> None:
    """Kueue's samples name the level `cloud.provider.com/topology-rack` (required, or as the
    slice level): no flavor of llm-training offers it. Without their `queue-name: user-queue`
    label (no such LocalQueue here) they reach ClusterQueue llm-training through `default`."""
    source = KUEUE_SAMPLES / f"{sample}.yaml"
    if not source.is_file():
        pytest.skip("../shared is not there")
    yaml = YAML()
    document = yaml.load(source.read_text(encoding="utf-8"))
    del document["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    copy = tmp_path / source.name
    with copy.open("w", encoding="utf-8") as out:
        yaml.dump(document, out)
    result = check_fit(platform, copy, namespace="llm-train")
    # the samples carry none of the platform's labels nor a TTL: the policies refuse them too,
    # and Kueue, as if they were changed, finds no flavor
    assert (result.verdict, result.kueue_verdict) == (NEVER, NEVER)
    assert result.message == (
        'couldn\'t assign flavors to pod set workers: Flavor "a100-mig" does not contain the '
        'requested level, Flavor "h100-train" does not contain the requested level'
    )
    # the same file as shipped: its LocalQueue does not exist, whatever the topology
    shutil.copy(source, tmp_path / "as-shipped.yaml")
    shipped = check_fit(platform, tmp_path / "as-shipped.yaml", namespace="llm-train")
    assert (shipped.verdict, shipped.kueue_verdict) == (NEVER, NEVER)
    assert "LocalQueue user-queue doesn't exist" in (shipped.message or "")


# --- placement on the nodes: TASFlavorSnapshot.findTopologyAssignment ------------------------


def test_required_host_needs_all_pods_on_one_node(platform: Platform, tmp_path: Path) -> None:
    """Required `kubernetes.io/hostname`: one node holds 8 GPUs, so one pod of 8 per node; the
    biggest domain fits 1 of 2 pods (`findLevelWithFitDomains` → `notFitMessage`)."""
    document = job("host", pods=2, annotations={REQUIRED: "kubernetes.io/hostname"})
    result = run(platform, tmp_path, document)
    assert result.verdict == NEVER
    assert result.message == (
        "couldn't assign flavors to pod set main: "
        'topology "block-rack-hostname" allows to fit only 1 out of 2 pod(s)'
    )


def test_required_host_fits_when_one_node_holds_the_pods(
    platform: Platform, tmp_path: Path
) -> None:
    document = job("host-small", pods=2, gpus=4, annotations={REQUIRED: "kubernetes.io/hostname"})
    result = run(platform, tmp_path, document)
    assert result.verdict == FITS, result.message


def test_a_required_rack_assumes_the_rack_holds_the_pool(
    platform: Platform, tmp_path: Path
) -> None:
    """Pools declare no rack sizes: fit assumes one rack holds the pool and says so."""
    document = job("rack-ok", pods=2, annotations={REQUIRED: "topology.gpuplane.dev/rack"})
    result = run(platform, tmp_path, document)
    assert result.verdict == FITS, result.message
    assert any("declares no sizes of its topology.gpuplane.dev/rack" in n for n in result.notes)


def test_slices_of_a_host(platform: Platform, tmp_path: Path) -> None:
    """Slices of 4 pods on one host: 4 pods of 2 GPUs fit a node of 8; 4 pods of 4 GPUs do not
    (each node holds 2 of them, no slice of 4): "doesn't allow to fit any of 1 slice(s)"."""
    annotations = {
        PREFERRED: "topology.gpuplane.dev/block",
        SLICE: "kubernetes.io/hostname",
        SLICE_SIZE: "4",
    }
    small = run(platform, tmp_path, job("slices", pods=4, gpus=2, annotations=annotations))
    assert small.verdict == FITS, small.message
    big = run(platform, tmp_path, job("slices-big", pods=4, gpus=4, annotations=annotations))
    assert big.verdict == NEVER
    assert big.message == (
        "couldn't assign flavors to pod set main: "
        'topology "block-rack-hostname" doesn\'t allow to fit any of 1 slice(s)'
    )


def test_tas_filters_nodes_by_every_label_of_the_node_selector(
    platform: Platform, tmp_path: Path
) -> None:
    """The flavor check looks only at the flavor's own label keys (`flavorSelector`), so a GPU
    Feature Discovery label passes it; TAS then filters the real nodes by the whole
    nodeSelector (`FindFeasibleNodes`): an A100 product name matches no H100 node, and every
    node is excluded ("Total nodes: 4; excluded: nodeSelector: 4")."""
    annotations = {PREFERRED: "topology.gpuplane.dev/block"}
    wrong = job(
        "a100-product",
        annotations=annotations,
        node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
    )
    result = run(platform, tmp_path, wrong)
    assert result.verdict == NEVER
    assert result.message == (
        "couldn't assign flavors to pod set main: "
        'topology "block-rack-hostname" doesn\'t allow to fit any of 1 pod(s). '
        "Total nodes: 4; excluded: nodeSelector: 4"
    )
    right = job(
        "h100-product",
        annotations=annotations,
        node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    )
    assert run(platform, tmp_path, right).verdict == FITS


def test_tas_filters_nodes_by_required_affinity(platform: Platform, tmp_path: Path) -> None:
    """Required node affinity counts as `affinity` exclusions."""
    document = job(
        "affinity",
        annotations={PREFERRED: "topology.gpuplane.dev/block"},
        affinity=[{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}],
    )
    result = run(platform, tmp_path, document)
    assert result.verdict == NEVER
    assert (result.message or "").endswith("Total nodes: 4; excluded: affinity: 4")


def test_a_label_fit_cannot_know_is_assumed_and_said(platform: Platform, tmp_path: Path) -> None:
    document = job(
        "unknown-label",
        annotations={PREFERRED: "topology.gpuplane.dev/block"},
        node_selector={"example.com/rack-type": "fast"},
    )
    result = run(platform, tmp_path, document)
    assert result.verdict == FITS
    assert any("example.com/rack-type" in n and "assumed" in n for n in result.notes)


def test_tas_is_implied_on_a_tas_only_cluster_queue(platform: Platform, tmp_path: Path) -> None:
    """`isTASImplied`: every flavor of llm-eval-training is topology-aware, so a pod set without
    annotations is placed unconstrained at the lowest level, and filtered like any TAS pod set:
    GKE's accelerator label is on no node of an EKS cluster."""
    plain = run(platform, tmp_path, job("eval", namespace="llm-eval-train", gpus=4))
    assert plain.verdict in (FITS, "borrows"), plain.message
    assert flavor_of(plain) == "h200-tune"
    assert any("implied" in n for n in plain.notes)
    gke = job(
        "eval-gke",
        namespace="llm-eval-train",
        gpus=4,
        node_selector={"cloud.google.com/gke-accelerator": "nvidia-h200-141gb"},
    )
    result = run(platform, tmp_path, gke)
    assert result.verdict == NEVER
    assert (result.message or "").endswith("excluded: nodeSelector: 4")


# --- Kueue's job webhook: ValidateTASPodSetRequest ---------------------------------------------


@pytest.mark.parametrize(
    ("annotations", "words"),
    [
        (
            {REQUIRED: "kubernetes.io/hostname", PREFERRED: "topology.gpuplane.dev/rack"},
            "must not contain more than one topology annotation",
        ),
        ({SLICE: "kubernetes.io/hostname"}, "must be set when"),
        ({UNCONSTRAINED: "yes"}, "must be a boolean value"),
        ({REQUIRED: "kubernetes.io/hostname", SLICE: "kubernetes.io/hostname", SLICE_SIZE: "9"},
         "must not be greater than pod set count 2"),
    ],
)  # fmt: skip
def test_the_webhook_refuses_malformed_annotations(
    platform: Platform, tmp_path: Path, annotations: dict[str, str], words: str
) -> None:
    result = run(platform, tmp_path, job("bad", pods=2, gpus=1, annotations=annotations))
    assert result.verdict == NEVER
    assert result.message_from == "Kueue's webhook"
    assert words in (result.message or "")
