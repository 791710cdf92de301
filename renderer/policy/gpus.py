"""Policy on GPUs and sharing: accelerators from the catalog, MIG layouts, time-slicing, MPS, DRA.

These rules change when the GPU catalog or the GPU Operator's sharing modes do.
"""

from __future__ import annotations

from collections.abc import Iterator

from renderer.findings.diagnostics import Diagnostic
from renderer.model import catalog
from renderer.model.platform import Platform
from renderer.policy.rule import did_you_mean, error, pools_by_cluster, rule


@rule("unknown-accelerator")
def accelerators_known(p: Platform) -> Iterator[Diagnostic]:
    """A pool's accelerator must be a key of the GPU catalog.

    The catalog knows each accelerator's memory, MIG profiles, resource name and reference
    bandwidths; without it the pool's capacity and resource names are unknown.
    `gpuplane explain unknown-accelerator` cannot list them all; see docs/gpu-catalog.md.
    """
    for pool in p.pools.values():
        if catalog.accelerator(pool.accelerator) is None:
            suggestion = catalog.suggest(pool.accelerator)
            yield error(
                "unknown-accelerator",
                f"accelerator '{pool.accelerator}' is not in the GPU catalog",
                pool.origin.at("spec", "accelerator"),
                f"did you mean '{suggestion}'?"
                if suggestion
                else f"known: {', '.join(sorted(catalog.CATALOG))}",
            )


@rule("mig-layout-invalid")
def mig_layouts_valid(p: Platform) -> Iterator[Diagnostic]:
    """A MIG layout must be one the accelerator can hold.

    Each profile must exist on the accelerator, each count must be within the profile's per-GPU
    maximum (as the GPU Operator's MIG manager knows them), and the instances must fit the GPU's
    7 compute slices and 8 memory slices in a valid placement. The MIG manager would otherwise
    leave the node unconfigured and its GPUs unadvertised.
    """
    for pool in p.pools.values():
        accelerator = catalog.accelerator(pool.accelerator)
        if accelerator is None or pool.sharing != "mig":
            continue
        for problem in accelerator.mig_layout_problems(pool.mig_layout):
            yield error(
                "mig-layout-invalid",
                f"pool '{pool.name}': {problem}",
                pool.origin.at("spec", "mig", "layout"),
                "use a layout from the GPU Operator's MIG configs, e.g. all-balanced",
            )


@rule("quota-profile")
def quota_profiles_match(p: Platform) -> Iterator[Diagnostic]:
    """Quota on a MIG pool names one of its layout's profiles; quota on other pools names none.

    A MIG pool advertises one resource per profile (`nvidia.com/mig-3g.40gb`), so the quota must
    say which one it counts; on a whole-GPU or time-shared pool a profile means nothing.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            if pool.sharing == "mig" and pool.exposure != "dra":
                layout = sorted(pool.mig_layout)
                if quota.profile is None:
                    yield error(
                        "quota-profile",
                        f"pool '{pool.name}' is a MIG pool; say which profile this quota counts",
                        quota.origin.location,
                        f"add profile: one of {', '.join(layout)}",
                    )
                elif quota.profile not in pool.mig_layout:
                    yield error(
                        "quota-profile",
                        f"profile '{quota.profile}' is not in the MIG layout of pool '{pool.name}' ({', '.join(layout)})",
                        quota.origin.at("profile"),
                        did_you_mean(quota.profile, layout),
                    )
            elif quota.profile is not None:
                yield error(
                    "quota-profile",
                    f"pool '{pool.name}' does not use MIG; profile '{quota.profile}' has no meaning there",
                    quota.origin.at("profile"),
                    "remove profile",
                )


@rule("sharing-breaks-training")
def no_sharing_on_training(p: Platform) -> Iterator[Diagnostic]:
    """Time-slicing and MPS are refused on distributed-training pools.

    Multi-node training assumes every rank owns its GPU: all-reduce runs in lockstep, so one
    time-shared rank slows every rank, and memory is not isolated between replicas.
    """
    for pool in p.pools.values():
        if pool.workload == "distributed-training" and pool.sharing in ("time-slicing", "mps"):
            yield error(
                "sharing-breaks-training",
                f"pool '{pool.name}' shares GPUs with {pool.sharing} but runs distributed training",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu for distributed training, or change the workload",
            )


@rule("dra-needs-kubernetes-1.34")
def dra_needs_new_clusters(p: Platform) -> Iterator[Diagnostic]:
    """`exposure: dra` needs Kubernetes 1.34 or later, where `resource.k8s.io/v1` is served.

    Dynamic Resource Allocation reached GA (v1) in 1.34; earlier versions serve only beta APIs
    that gpuplane does not render.
    """
    for pool in p.pools.values():
        cluster = p.clusters.get(pool.cluster)
        if pool.exposure == "dra" and cluster is not None and cluster.minor < 34:
            yield error(
                "dra-needs-kubernetes-1.34",
                f"pool '{pool.name}' uses DRA but cluster '{cluster.name}' runs Kubernetes {cluster.kubernetes_version}",
                pool.origin.at("spec", "exposure"),
                "use exposure: device-plugin, or upgrade the cluster to 1.34",
                (("version declared here", cluster.origin.at("spec", "kubernetesVersion")),),
            )


@rule("mig-strategy-conflict")
def one_mig_strategy(p: Platform) -> Iterator[Diagnostic]:
    """One MIG strategy per cluster: MIG pools (strategy `mixed`) and MPS pools cannot share one.

    The GPU Operator sets the device plugin's MIG strategy for the whole cluster, `mixed` as soon
    as any pool uses MIG, and the device plugin refuses to start with MPS under `mixed`. Put the
    MPS pool on another cluster, or use time-slicing there.
    """
    by_cluster = pools_by_cluster(p)
    for pools in by_cluster.values():
        mig = [pool for pool in pools if pool.sharing == "mig"]
        if not mig:
            continue
        for pool in pools:
            if pool.sharing == "mps":
                yield error(
                    "mig-strategy-conflict",
                    f"pool '{pool.name}' uses MPS on cluster '{pool.cluster}', whose MIG pool '{mig[0].name}' makes the MIG strategy mixed",
                    pool.origin.at("spec", "sharing"),
                    "use time-slicing for this pool, or move it (or the MIG pool) to another cluster",
                    (("the MIG pool is declared here", mig[0].origin.at("spec", "sharing")),),
                )


@rule("sharing-needs-nvidia")
def sharing_is_nvidia_only(p: Platform) -> Iterator[Diagnostic]:
    """MIG, time-slicing and MPS are NVIDIA features; other accelerators are shared whole.

    gpuplane renders them through the NVIDIA GPU Operator (MIG manager, device plugin sharing);
    on an AMD pool they would be promised in quotas and never configured on the nodes.
    """
    for pool in p.pools.values():
        accelerator = catalog.accelerator(pool.accelerator)
        if (
            accelerator is not None
            and accelerator.vendor != "nvidia"
            and pool.sharing != "full-gpu"
        ):
            yield error(
                "sharing-needs-nvidia",
                f"pool '{pool.name}' ({accelerator.product}) uses {pool.sharing}, which gpuplane renders for NVIDIA GPUs only",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu",
            )


@rule("dra-unsupported")
def dra_is_nvidia_whole_or_mig(p: Platform) -> Iterator[Diagnostic]:
    """DRA pools are NVIDIA pools of whole GPUs or MIG devices.

    gpuplane renders DeviceClasses for the NVIDIA DRA driver only, and a DRA claim is one pod's
    own device: time-slicing or MPS replicas do not exist there, so quotas counted in replicas
    would promise devices no claim can get.
    """
    for pool in p.pools.values():
        if pool.exposure != "dra":
            continue
        accelerator = catalog.accelerator(pool.accelerator)
        if accelerator is not None and accelerator.vendor != "nvidia":
            yield error(
                "dra-unsupported",
                f"pool '{pool.name}' ({accelerator.product}) uses DRA, which gpuplane renders for the NVIDIA DRA driver only",
                pool.origin.at("spec", "exposure"),
                "use exposure: device-plugin",
            )
        if pool.sharing in ("time-slicing", "mps"):
            yield error(
                "dra-unsupported",
                f"pool '{pool.name}' combines DRA with {pool.sharing}, whose replicas a DRA claim cannot get",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu or mig with exposure: dra, or the device plugin for sharing",
            )
