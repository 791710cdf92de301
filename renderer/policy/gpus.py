"""Policy on GPUs and sharing: accelerators from the catalog, MIG layouts, time-slicing, MPS, DRA.

These rules change when the GPU catalog or the GPU Operator's sharing modes do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from renderer.findings.diagnostics import Diagnostic, closest
from renderer.model import catalog
from renderer.model.capacity import mig_layout_usable
from renderer.model.catalog import Accelerator
from renderer.model.choices import TIME_SHARED
from renderer.model.operators import DRA_DRIVER_ADDON, serves_here
from renderer.model.platform import Cluster, Platform, Pool
from renderer.policy.rule import error, pools_by_cluster, rule


@rule("unknown-accelerator")
def accelerators_known(p: Platform) -> Iterator[Diagnostic]:
    """A pool's accelerator must be a key of the GPU catalog.

    The catalog knows each accelerator's memory, MIG profiles, resource name and reference
    bandwidths; without it the pool's capacity and resource names are unknown.

    To satisfy it: set `spec.accelerator` of the pool file to a key of the catalog: a100-40gb,
    a100-80gb, h100-80gb, h100-94gb, h200-141gb, b200, l40s, l4 or mi300x (the hint names the
    closest). docs/gpu-catalog.md says which GPUs each key covers; a GPU it does not list needs
    an entry in `renderer/model/catalog.py` first.
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
    maximum (as the GPU Operator's MIG manager knows them), at most one instance may hold the
    media engines (`+me`), and the instances must fit the GPU's 7 compute slices and 8 memory
    slices in a valid placement. A named layout must be one the GPU Operator's default MIG
    config defines for the accelerator. The MIG manager would otherwise leave the node
    unconfigured and its GPUs unadvertised.

    To satisfy it: write `spec.mig.layout` of the pool file as instances per GPU of the
    accelerator's own profiles, e.g. `layout: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}` on
    a100-80gb or h100-80gb (the hint gives the valid layout nearest to yours that keeps every
    profile a team holds quota on, so quota-profile stays satisfied), or by name:
    `layout: all-balanced` (two of the smallest 1g profile, one 2g, one 3g) or
    `layout: all-<profile>`, that profile only, as many as a GPU holds (`all-1g.10gb` is
    7 x 1g.10gb on h100-80gb; `+me` is written `.me`: `all-1g.10gb.me`). Profile names carry
    the GPU's memory, so `3g.40gb` of an 80GB GPU is `3g.71gb` on h200-141gb: the hint names
    the profile of the same shape. docs/gpu-catalog.md lists every profile and its maximum.
    A GPU without MIG (l40s, l4) takes `sharing: full-gpu`, `time-slicing` or `mps` instead.
    """
    for pool in p.pools.values():
        gpu = catalog.accelerator(pool.accelerator)
        if gpu is None or pool.sharing != "mig" or gpu.vendor != "nvidia":
            continue  # unknown-accelerator and sharing-needs-nvidia say what is wrong there
        if not gpu.supports_mig:
            capable = [a.key for a in catalog.CATALOG.values() if a.supports_mig]
            yield error(
                "mig-layout-invalid",
                f"pool '{pool.name}': {gpu.key} ({gpu.product}) has no MIG",
                pool.origin.at("spec", "sharing"),
                "use sharing: full-gpu, time-slicing or mps on it, or a MIG-capable "
                f"accelerator: {', '.join(capable)}",
            )
        elif pool.mig_layout_name is not None:
            yield from _named_layout_findings(pool, gpu)
        else:
            held = {q.profile for t in p.teams.values() for q in t.gpus if q.pool == pool.name}
            yield from _layout_findings(pool, gpu, frozenset(x for x in held if x))


def _named_layout_findings(pool: Pool, gpu: Accelerator) -> Iterator[Diagnostic]:
    """A layout given by name: one the accelerator has, or a finding that lists those it has."""
    name = pool.mig_layout_name or ""
    named = gpu.named_mig_layouts()
    if name in named:
        return
    at = pool.origin.at("spec", "mig", "layout")
    listing = f"named layouts of {gpu.key}: {', '.join(named)}"
    if name in catalog.MIG_OFF_LAYOUTS:
        yield error(
            "mig-layout-invalid",
            f"pool '{pool.name}': layout '{name}' {catalog.MIG_OFF_LAYOUTS[name]}",
            at,
            f"use sharing: full-gpu for whole GPUs, or a layout with instances; {listing}",
        )
        return
    profile = _plus(name.removeprefix("all-")) if name.startswith("all-") else ""
    owners = [a.key for a in catalog.elsewhere(profile)] if profile not in gpu.mig_profiles else []
    guess = _named_guess(gpu, name, named)
    yield error(
        "mig-layout-invalid",
        f"pool '{pool.name}': '{name}' is not a named MIG layout of {gpu.key}"
        + (f" but of {', '.join(owners)}" if owners else ""),
        at,
        (f"did you mean '{guess}'? " if guess else "") + listing,
    )


def _named_guess(gpu: Accelerator, name: str, named: Mapping[str, object]) -> str | None:
    """The named layout meant: `all-1g.10gb+me` written with `+`, the same shape's layout for
    another accelerator's `all-<profile>`, else the closest name."""
    profile = name.removeprefix("all-")
    if profile in gpu.mig_profiles and catalog.layout_name(profile) in named:
        return catalog.layout_name(profile)
    shapes = _same_shape(gpu, profile) or _same_shape(gpu, _plus(profile))
    if len(shapes) == 1:
        return catalog.layout_name(shapes[0])
    return closest(name, named)


def _plus(profile: str) -> str:
    """A layout name's profile part with its media-extension suffix as a profile writes it."""
    return profile[: -len(".me")] + "+me" if profile.endswith(".me") else profile


def _same_shape(gpu: Accelerator, profile: str) -> list[str]:
    """This accelerator's profiles of the shape another accelerator's `profile` has."""
    found: list[str] = []
    for other in catalog.elsewhere(profile):
        same = gpu.equivalent_profile(other.mig_profiles[profile])
        if same is not None and same.name not in found:
            found.append(same.name)
    return found


def _unknown_profile(pool: Pool, gpu: Accelerator, name: str) -> Diagnostic:
    """A profile the accelerator does not have: where it comes from, which of the accelerator's
    own profiles was meant (the same shape, else the closest name), and all of them."""
    owners = [a.key for a in catalog.elsewhere(name)]
    same = _same_shape(gpu, name)
    guesses = same or [g for g in (closest(name, gpu.mig_profiles),) if g]
    hint = f"{gpu.key} has {', '.join(gpu.mig_profiles)}"
    if guesses:
        what = "the same slice" if same else "the closest name"
        quoted = " or ".join(f"'{g}'" for g in guesses)
        hint = f"did you mean {quoted} ({what} on {gpu.key})? " + hint
    return error(
        "mig-layout-invalid",
        f"pool '{pool.name}': '{name}' is not a MIG profile of {gpu.key}"
        + (f" but of {', '.join(owners)}" if owners else ""),
        pool.origin.key("spec", "mig", "layout", name),
        hint,
    )


def _layout_findings(pool: Pool, gpu: Accelerator, held: frozenset[str]) -> Iterator[Diagnostic]:
    """A layout of instances per profile: each unknown profile at its key, then what is wrong
    with the rest, with the valid layout nearest to the whole (keeping the profiles teams hold
    quota on, `held`, where one can) and the standard ones."""
    layout = pool.mig_layout
    unknown = [name for name in layout if name not in gpu.mig_profiles]
    for name in unknown:
        yield _unknown_profile(pool, gpu, name)
    known = {name: count for name, count in layout.items() if name not in unknown}
    problems = gpu.mig_layout_problems(known) if known or not unknown else []
    if not problems:
        return
    hint = _valid_layouts_hint(gpu, gpu.nearest_mig_layout(layout, keep=held))
    for problem in problems:
        yield error(
            "mig-layout-invalid",
            f"pool '{pool.name}': {problem}",
            pool.origin.at("spec", "mig", "layout"),
            hint,
        )


def _valid_layouts_hint(gpu: Accelerator, nearest: Mapping[str, int] | None) -> str:
    """`layout: {...}` nearest to what was written, and the accelerator's standard layouts by
    name: all-balanced, and the one of the most instances (`all-1g.10gb`, 7 x 1g.10gb)."""
    named = gpu.named_mig_layouts()
    most = max(gpu.mig_profiles.values(), key=lambda p: p.max_per_gpu)
    standard = [n for n in (catalog.BALANCED_LAYOUT, catalog.layout_name(most.name)) if n in named]
    parts: list[str] = []
    if nearest:
        same = next((n for n, layout in named.items() if dict(layout) == dict(nearest)), None)
        parts.append(
            f"nearest valid layout: {{{_flow(nearest)}}}" + (f" (= layout: {same})" if same else "")
        )
        standard = [name for name in standard if name != same]
    if standard:
        parts.append(
            "standard ones: " + ", ".join(f"layout: {n} ({_sum(named[n])})" for n in standard)
        )
    return "; ".join(parts)


def _flow(layout: Mapping[str, int]) -> str:
    return ", ".join(f"{name}: {count}" for name, count in layout.items())


def _sum(layout: Mapping[str, int]) -> str:
    return " + ".join(f"{count} x {name}" for name, count in layout.items())


@rule("quota-profile", scope="team")
def quota_profiles_match(p: Platform) -> Iterator[Diagnostic]:
    """Quota on a MIG pool names one of its layout's profiles; quota on other pools names none.

    A MIG pool advertises one resource per profile (`nvidia.com/mig-3g.40gb`), so the quota must
    say which one it counts; on a whole-GPU or time-shared pool a profile means nothing, nor on
    a MIG pool exposed through DRA, whose MIG devices are counted together.

    To satisfy it: on a MIG pool, give each `spec.gpus` entry of the team file a `profile` from
    the pool's `mig.layout`, one entry per profile, e.g. `{pool: a100-mig, profile: 3g.40gb,
    nominal: 4}` (the hint names the one meant, or lists them); on any other pool, and on a DRA
    MIG pool, remove `profile`.
    """
    for team in p.teams.values():
        for quota in team.gpus:
            pool = p.pools.get(quota.pool)
            if pool is None:
                continue
            if pool.sharing == "mig" and pool.exposure != "dra":
                layout = sorted(pool.mig_layout)
                if not mig_layout_usable(pool):
                    continue  # mig-layout-invalid says what to fix first
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
                        _layout_profile_hint(pool, quota.profile, layout),
                    )
            elif quota.profile is not None:
                how = (
                    "hands out its MIG devices through DRA, counted together"
                    if pool.sharing == "mig"
                    else "does not use MIG"
                )
                yield error(
                    "quota-profile",
                    f"pool '{pool.name}' {how}; profile '{quota.profile}' has no meaning there",
                    quota.origin.at("profile"),
                    "remove profile",
                )


def _layout_profile_hint(pool: Pool, profile: str, layout: list[str]) -> str:
    """For a quota's profile that is not in the pool's layout: add it to the layout when the
    accelerator has it; else the layout's profile meant (the same shape as another accelerator's
    profile of that name, or the closest name); else the list."""
    gpu = catalog.accelerator(pool.accelerator)
    if gpu is not None and profile in gpu.mig_profiles:
        return f"use one of {', '.join(layout)}, or add {profile} to the pool's mig.layout"
    same = [s for s in _same_shape(gpu, profile) if s in layout] if gpu is not None else []
    guess = same[0] if len(same) == 1 else closest(profile, layout)
    return f"did you mean '{guess}'?" if guess else f"use one of: {', '.join(layout)}"


@rule("sharing-breaks-training")
def no_sharing_on_training(p: Platform) -> Iterator[Diagnostic]:
    """Time-slicing, MPS and MIG are refused on distributed-training pools.

    Multi-node training assumes every rank owns its GPU: all-reduce runs in lockstep, so one
    time-shared rank slows every rank, and memory is not isolated between replicas. A MIG
    instance is isolated, but it has no peer-to-peer path (NVLink or PCIe) to any other GPU
    and a CUDA process sees one instance only, so NCCL cannot run its collectives on it.

    To satisfy it: set the pool's `spec.sharing` to `full-gpu` (and remove its `timeSlicing`,
    `mps` or `mig` block); or, if the pool does not run multi-node training, set
    `spec.workload` to what it runs, e.g. `fine-tuning` or `notebooks`.
    """
    for pool in p.pools.values():
        if pool.workload == "distributed-training" and pool.sharing in (*TIME_SHARED, "mig"):
            why = (
                "MIG instances have no peer-to-peer path for NCCL"
                if pool.sharing == "mig"
                else "every rank must own its GPU"
            )
            yield error(
                "sharing-breaks-training",
                f"pool '{pool.name}' shares GPUs with {pool.sharing} but runs distributed "
                f"training: {why}",
                pool.origin.at("spec", "sharing"),
                f"set sharing: full-gpu and remove the `{_SHARING_BLOCK[pool.sharing]}` block "
                "for distributed training, or change the workload",
            )


_SHARING_BLOCK = {"time-slicing": "timeSlicing", "mps": "mps", "mig": "mig"}
"""The pool's settings block of each way of sharing, which full-gpu no longer allows."""


def dra_refused(p: Platform, pool: Pool) -> bool:
    """A pool exposed through DRA that dra-needs-kubernetes-1.34 or dra-unsupported refuses: on
    a cluster older than 1.34, of another vendor's GPUs, or time-shared. Its DRA driver is not
    asked for (operator-missing) until those rules are satisfied: their hints may drop DRA."""
    return pool.exposure == "dra" and (
        _too_old_for_dra(p, pool) is not None
        or _not_nvidia(pool) is not None
        or pool.sharing in TIME_SHARED
    )


def _too_old_for_dra(p: Platform, pool: Pool) -> Cluster | None:
    """The pool's cluster, where it runs a Kubernetes older than 1.34."""
    cluster = p.clusters.get(pool.cluster)
    return cluster if cluster is not None and cluster.minor < 34 else None


def _not_nvidia(pool: Pool) -> Accelerator | None:
    """The pool's accelerator, where the catalog knows it and it is not NVIDIA's."""
    accelerator = catalog.accelerator(pool.accelerator)
    return accelerator if accelerator is not None and accelerator.vendor != "nvidia" else None


@rule("dra-needs-kubernetes-1.34")
def dra_needs_new_clusters(p: Platform) -> Iterator[Diagnostic]:
    """`exposure: dra` needs Kubernetes 1.34 or later, where `resource.k8s.io/v1` is served.

    Dynamic Resource Allocation reached GA (v1) in 1.34; earlier versions serve only beta APIs
    that gpuplane does not render.

    To satisfy it: set the pool's `spec.exposure: device-plugin`, or, once the cluster runs
    1.34 or later, raise `spec.kubernetesVersion` of its cluster file to match (quoted, "1.34").
    """
    for pool in p.pools.values():
        cluster = _too_old_for_dra(p, pool)
        if pool.exposure == "dra" and cluster is not None:
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
    as any pool uses MIG, and the device plugin refuses to start with MPS under `mixed`.

    To satisfy it: give the MPS pool `sharing: time-slicing` (its `mps: {replicas: N}` block
    becomes `timeSlicing: {replicas: N}`), or move it, or the MIG pool, to another cluster
    (`spec.cluster` of the pool file).
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
                    "set sharing: time-slicing and rename the `mps` block `timeSlicing`, or "
                    "move this pool (or the MIG pool) to another cluster",
                    (("the MIG pool is declared here", mig[0].origin.at("spec", "sharing")),),
                )


@rule("sharing-needs-nvidia")
def sharing_is_nvidia_only(p: Platform) -> Iterator[Diagnostic]:
    """MIG, time-slicing and MPS are NVIDIA features; other accelerators are shared whole.

    gpuplane renders them through the NVIDIA GPU Operator (MIG manager, device plugin sharing);
    on an AMD pool they would be promised in quotas and never configured on the nodes.

    To satisfy it: set the pool's `spec.sharing: full-gpu` and remove its `mig`, `timeSlicing`
    or `mps` block; pods then request whole GPUs (`amd.com/gpu` on AMD), and the teams' quotas
    on a pool that was time-sliced count whole GPUs, no longer replicas.
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
                f"set sharing: full-gpu and remove the `{_SHARING_BLOCK[pool.sharing]}` block"
                + (" (quotas on the pool then count whole GPUs)" if pool.sharing != "mig" else ""),
            )


@rule("dra-unsupported")
def dra_is_nvidia_whole_or_mig(p: Platform) -> Iterator[Diagnostic]:
    """DRA pools are NVIDIA pools of whole GPUs or MIG devices.

    gpuplane renders DeviceClasses for the NVIDIA DRA driver only, and a DRA claim is one pod's
    own device: time-slicing or MPS replicas do not exist there, so quotas counted in replicas
    would promise devices no claim can get.

    To satisfy it: on a pool of another vendor's GPUs set `spec.exposure: device-plugin`; on an
    NVIDIA DRA pool keep time-slicing or MPS and set `exposure: device-plugin`, or use
    `sharing: full-gpu` (removing the `timeSlicing` or `mps` block) or `mig`, with the NVIDIA
    DRA driver declared on the cluster (`draDriver` under `spec.addons`, rule operator-missing).
    """
    for pool in p.pools.values():
        if pool.exposure != "dra":
            continue
        accelerator = _not_nvidia(pool)
        if accelerator is not None:
            yield error(
                "dra-unsupported",
                f"pool '{pool.name}' ({accelerator.product}) uses DRA, which gpuplane renders for the NVIDIA DRA driver only",
                pool.origin.at("spec", "exposure"),
                "use exposure: device-plugin",
            )
        if pool.sharing in TIME_SHARED:
            cluster = p.clusters.get(pool.cluster)
            driver = cluster is None or serves_here(cluster, DRA_DRIVER_ADDON)
            yield error(
                "dra-unsupported",
                f"pool '{pool.name}' combines DRA with {pool.sharing}, whose replicas a DRA claim cannot get",
                pool.origin.at("spec", "sharing"),
                f"set exposure: device-plugin to keep {pool.sharing}, or set sharing: full-gpu "
                f"and remove the `{_SHARING_BLOCK[pool.sharing]}` block to keep DRA"
                + (
                    ""
                    if driver
                    else f" (and declare spec.addons.{DRA_DRIVER_ADDON} on the cluster)"
                ),
            )
