"""The GPU catalog: accelerators the engine knows, their MIG profiles and reference figures.

The catalog validates MIG layouts, names the Kubernetes extended resources a layout exposes
and gives acceptance thresholds a reference point. Everything here is a Python literal; nothing
is read from disk. Where each figure comes from is written down in ``docs/gpu-catalog.md``.

MIG profiles and their per-GPU maxima equal the NVIDIA GPU Operator v26.7.0 default MIG config
(``shared/reference/gpu-operator/mig-max.json`` for the PCI device ids each accelerator lists);
``tests/test_catalog.py`` checks that they still do.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Final

from renderer.findings.diagnostics import closest

__all__ = [
    "BALANCED_LAYOUT",
    "CATALOG",
    "MIG_OFF_LAYOUTS",
    "Accelerator",
    "MigProfile",
    "accelerator",
    "elsewhere",
    "layout_name",
    "resolve_mig_layout",
    "suggest",
]

BALANCED_LAYOUT: Final = "all-balanced"
"""mig-parted's name for the mixed layout of its default config: two of the smallest 1g instance,
one 2g and one 3g on a GPU of 7 compute slices (``1g.10gb`` x 2, ``2g.20gb``, ``3g.40gb`` on an
A100 80GB)."""

MIG_OFF_LAYOUTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "all-disabled": "turns MIG off, so the pool would offer no MIG device",
        "all-enabled": "enables MIG with no instances, so the pool would offer no MIG device",
    }
)
"""mig-parted's default entries that are no layout a pool can use, and why."""

# A mig-parted profile name: "<compute slices>g.<memory GB>gb", "+me" when it holds the media
# engines. Other attributes (+gfx, -me, +me.all) exist upstream, but only on GPUs not listed here.
_PROFILE_NAME: Final = re.compile(r"(?P<compute>[1-9][0-9]*)g\.(?P<gb>[1-9][0-9]*)gb(?P<me>\+me)?")

# Where a GPU instance may sit on a GPU with 7 compute slices and 8 memory slices (A100, H100,
# H200, B200): (compute slices, memory slices) -> the memory slices it may start at. It then
# occupies [start, start + memory slices). This is `nvidia-smi mig -lgipp` as printed in NVIDIA's
# MIG User Guide, e.g. "Profile ID 9 Placements: {0,4}:4" for 3g.
_PLACEMENT_STARTS: Final[Mapping[tuple[int, int], tuple[int, ...]]] = MappingProxyType(
    {
        (7, 8): (0,),  # 7g
        (4, 4): (0,),  # 4g
        (3, 4): (0, 4),  # 3g
        (2, 2): (0, 2, 4),  # 2g
        (1, 2): (0, 2, 4, 6),  # 1g with two memory slices: 1g.20gb, 1g.35gb, 1g.45gb ...
        (1, 1): (0, 1, 2, 3, 4, 5, 6),  # 1g with one memory slice, and 1g ... +me
    }
)

# A GPU has one set of media engines (NVDEC/NVJPG/OFA beyond the 1g share): one "+me" instance.
_MAX_MEDIA_INSTANCES: Final = 1


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG profile of one accelerator."""

    name: str  # exact mig-parted string: "1g.10gb", "1g.10gb+me", "3g.71gb"
    compute_slices: int  # the "Ng" part: 1, 2, 3, 4, 7
    memory_slices: int  # memory slices it takes (8 in all on A100/H100/H200/B200)
    memory_gb: int  # the "NNgb" part
    max_per_gpu: int  # per-GPU maximum instances (GPU Operator v26.7.0 default config)
    media_extensions: bool  # True for "+me" variants

    def __post_init__(self) -> None:
        match = _PROFILE_NAME.fullmatch(self.name)
        if match is None:
            raise ValueError(f"'{self.name}' is not a MIG profile name like '1g.10gb[+me]'")
        parsed = (int(match["compute"]), int(match["gb"]), match["me"] is not None)
        declared = (self.compute_slices, self.memory_gb, self.media_extensions)
        if parsed != declared:
            raise ValueError(
                f"MIG profile '{self.name}' declares compute slices, memory GB and media "
                f"extensions {declared}, but its name says {parsed}"
            )
        if self.memory_slices < 1 or self.max_per_gpu < 1:
            raise ValueError(f"MIG profile '{self.name}' needs memory slices and a maximum >= 1")

    @property
    def resource_name(self) -> str:
        """The extended resource under the GPU Operator's mixed strategy, e.g.
        ``nvidia.com/mig-1g.10gb``; "+me" becomes ".me": ``nvidia.com/mig-1g.10gb.me``."""
        return "nvidia.com/mig-" + self.name.replace("+", ".")

    @property
    def placement_starts(self) -> tuple[int, ...]:
        """Memory slices an instance of this profile may start at (MIG User Guide placements)."""
        return _PLACEMENT_STARTS.get((self.compute_slices, self.memory_slices), ())


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One accelerator model: identity, Kubernetes resource, MIG geometry, peak figures."""

    key: str  # catalog key used in pool files, e.g. "h100-80gb"
    vendor: str  # "nvidia" | "amd"
    product: str  # marketing name, e.g. "NVIDIA H100 SXM5 80GB"
    memory_gb: int
    resource_name: str  # "nvidia.com/gpu" or "amd.com/gpu"
    pci_device_ids: tuple[str, ...]  # mig-parted device-filter ids; () for non-MIG GPUs
    bf16_tflops: float  # dense peak BF16 TFLOPS (no sparsity)
    memory_bandwidth_gbps: float  # GB/s
    nvlink_bandwidth_gbps: float | None  # per-GPU NVLink / Infinity Fabric GB/s; None: PCIe only
    compute_slices: int  # 7 on MIG-capable 7-slice GPUs, 0 when no MIG
    memory_slices: int  # 8 on those, 0 when no MIG
    # Empty when no MIG. Not hashed: a mapping proxy is not hashable, the key identifies anyway.
    mig_profiles: Mapping[str, MigProfile] = field(hash=False)
    # The form factors the key covers, as a pool's `topology.form` writes them (sxm, pcie, nvl,
    # oam): what a GPU's name may say when the pool declares no form; () when not known.
    forms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Freeze whatever was passed in, so that no caller can change the catalog through it.
        object.__setattr__(self, "pci_device_ids", tuple(self.pci_device_ids))
        object.__setattr__(self, "forms", tuple(self.forms))
        if not isinstance(self.mig_profiles, MappingProxyType):
            object.__setattr__(self, "mig_profiles", MappingProxyType(dict(self.mig_profiles)))
        for name, profile in self.mig_profiles.items():
            if name != profile.name:
                raise ValueError(f"{self.key}: MIG profile listed as '{name}' is '{profile.name}'")
            if not profile.placement_starts:
                raise ValueError(f"{self.key}: no placement rule for MIG profile '{name}'")
        has_geometry = self.compute_slices > 0 and self.memory_slices > 0
        if bool(self.mig_profiles) != has_geometry:
            raise ValueError(
                f"{self.key}: MIG profiles and compute/memory slices must be given together"
            )

    @property
    def supports_mig(self) -> bool:
        return bool(self.mig_profiles)

    def mig_layout_problems(self, layout: Mapping[str, int]) -> list[str]:
        """What is wrong with a per-GPU MIG layout ``{profile: count}``; empty when it is valid.

        Checks, in order: the profiles exist on this accelerator; counts are whole numbers from
        1 to the profile's per-GPU maximum; at most one "+me" instance; the compute and memory
        slices fit; and, when all of that holds, that the instances have a non-overlapping
        placement under NVIDIA's placement rules.
        """
        if not self.supports_mig:
            return [f"{self.key} does not support MIG"]
        if not layout:
            return [f"the MIG layout for {self.key} is empty; name at least one profile"]

        problems: list[str] = []
        counted: list[tuple[MigProfile, int]] = []
        for name, count in layout.items():
            profile = self.mig_profiles.get(name)
            if profile is None:
                valid = ", ".join(self.mig_profiles)
                problems.append(f"'{name}' is not a MIG profile of {self.key}; valid: {valid}")
            elif isinstance(count, bool) or not isinstance(count, int):
                problems.append(f"'{name}': the count must be a whole number, got {count!r}")
            elif count <= 0:
                problems.append(f"'{name}': the count must be at least 1, got {count}")
            else:
                if count > profile.max_per_gpu:
                    problems.append(
                        f"'{name}': {count} instances exceed the per-GPU maximum of "
                        f"{profile.max_per_gpu} on {self.key}"
                    )
                counted.append((profile, count))

        media = [(p, n) for p, n in counted if p.media_extensions]
        media_total = sum(n for _, n in media)
        # One "+me" profile over its maximum of 1 is reported above already.
        if len(media) > 1 and media_total > _MAX_MEDIA_INSTANCES:
            problems.append(
                f"at most {_MAX_MEDIA_INSTANCES} media-extension (+me) instance per GPU "
                f"(a GPU has one set of media engines); the layout has {media_total}: "
                + _breakdown(media)
            )

        compute = sum(p.compute_slices * n for p, n in counted)
        if compute > self.compute_slices:
            problems.append(
                f"the layout needs {compute} compute slices "
                f"({_breakdown(counted, lambda p: p.compute_slices)}) "
                f"but {self.key} has {self.compute_slices}"
            )
        memory = sum(p.memory_slices * n for p, n in counted)
        if memory > self.memory_slices:
            problems.append(
                f"the layout needs {memory} memory slices "
                f"({_breakdown(counted, lambda p: p.memory_slices)}) "
                f"but {self.key} has {self.memory_slices}"
            )

        if not problems and _place(self.memory_slices, _instances(counted)) is None:
            rules = "; ".join(
                f"{p.name} may start at memory slice {_or_list(p.placement_starts)} "
                f"and takes {p.memory_slices}"
                for p, _ in counted
            )
            problems.append(
                f"no valid placement on {self.key}: "
                f"{_breakdown(counted)} "
                f"cannot all sit on {self.memory_slices} memory slices without overlapping "
                f"({rules})"
            )
        return problems

    def balanced_mig_layout(self) -> dict[str, int]:
        """mig-parted's ``all-balanced`` layout for this GPU: two of its smallest 1g instance, one
        2g and one 3g (the smallest of each, without media extensions), as the GPU Operator's
        default config gives every GPU of 7 compute slices; empty on other GPUs."""
        if self.compute_slices != 7:
            return {}
        layout: dict[str, int] = {}
        for compute, count in ((1, 2), (2, 1), (3, 1)):
            sizes = [
                p
                for p in self.mig_profiles.values()
                if p.compute_slices == compute and not p.media_extensions
            ]
            if not sizes:
                return {}
            layout[min(sizes, key=lambda p: (p.memory_slices, p.memory_gb)).name] = count
        return layout

    def named_mig_layouts(self) -> dict[str, dict[str, int]]:
        """The layouts mig-parted's default config names for this accelerator, by name:
        ``all-balanced``, then ``all-<profile>`` for each profile (``+`` written ``.``), which
        fills every GPU with that one profile at its per-GPU maximum. All of them are valid."""
        named: dict[str, dict[str, int]] = {}
        balanced = self.balanced_mig_layout()
        if balanced:
            named[BALANCED_LAYOUT] = balanced
        for profile in self.mig_profiles.values():
            named[layout_name(profile.name)] = {profile.name: profile.max_per_gpu}
        return named

    def equivalent_profile(self, profile: MigProfile) -> MigProfile | None:
        """This accelerator's profile of the same shape as ``profile`` of another one (compute
        slices, memory slices, media extensions): ``3g.40gb`` of an A100 80GB is ``3g.71gb`` of
        an H200. None when it has no such profile."""
        return next(
            (
                own
                for own in self.mig_profiles.values()
                if (own.compute_slices, own.memory_slices, own.media_extensions)
                == (profile.compute_slices, profile.memory_slices, profile.media_extensions)
            ),
            None,
        )

    def valid_mig_layouts(self) -> tuple[Mapping[str, int], ...]:
        """Every valid layout of this accelerator (each profile from 0 to its maximum, at least
        one instance in all); computed once per accelerator."""
        return _valid_layouts(self)

    def nearest_mig_layout(
        self, layout: Mapping[str, object], keep: frozenset[str] = frozenset()
    ) -> dict[str, int] | None:
        """The valid layout closest to ``layout``: fewest of the profiles in ``keep`` dropped,
        then fewest instances added or removed, then the most compute and memory slices used. A profile of another accelerator counts as this
        one's profile of the same shape; anything else it does not know is left out. None when
        the accelerator has no MIG."""
        wanted: dict[str, int] = {}
        for name, count in layout.items():
            profile = self.mig_profiles.get(name)
            if profile is None:
                shapes = {self.equivalent_profile(a.mig_profiles[name]) for a in elsewhere(name)}
                profile = next(iter(shapes)) if len(shapes) == 1 else None
            if profile is None:
                continue
            number = count if isinstance(count, int) and not isinstance(count, bool) else 1
            wanted[profile.name] = wanted.get(profile.name, 0) + max(number, 0)

        def distance(candidate: Mapping[str, int]) -> tuple[int, int, int, int, str]:
            dropped = sum(1 for n in keep if not candidate.get(n))
            names = set(candidate) | set(wanted)
            moved = sum(abs(candidate.get(n, 0) - wanted.get(n, 0)) for n in names)
            used = [(self.mig_profiles[n], c) for n, c in candidate.items()]
            compute = sum(p.compute_slices * c for p, c in used)
            memory = sum(p.memory_slices * c for p, c in used)
            return (dropped, moved, -compute, -memory, repr(sorted(candidate.items())))

        valid = self.valid_mig_layouts()
        if not valid:
            return None
        best: Mapping[str, int] = min(valid, key=distance)
        return dict(best)

    def mig_placement(self, layout: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
        """One non-overlapping placement of the layout's instances as ``(profile, start memory
        slice)`` pairs ordered by start, or None when there is none. Counts and per-GPU maxima
        are not checked here (``mig_layout_problems`` does that); unknown profiles and counts
        below 1 raise ValueError."""
        counted = self._counted(layout)
        instances = _instances(counted)
        starts = _place(self.memory_slices, instances)
        if starts is None:
            return None
        return tuple(
            sorted(
                ((p.name, s) for p, s in zip(instances, starts, strict=True)),
                key=lambda pair: (pair[1], pair[0]),
            )
        )

    def mig_resources(self, layout: Mapping[str, int]) -> dict[str, int]:
        """Extended resource name -> instances per GPU for a valid layout, in catalog order,
        e.g. ``{"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-3g.40gb": 1}``.

        Raises ValueError, listing the problems, when the layout is not valid."""
        problems = self.mig_layout_problems(layout)
        if problems:
            raise ValueError(f"invalid MIG layout for {self.key}: " + "; ".join(problems))
        return {
            p.resource_name: layout[name] for name, p in self.mig_profiles.items() if name in layout
        }

    def _counted(self, layout: Mapping[str, int]) -> list[tuple[MigProfile, int]]:
        if not self.supports_mig:
            raise ValueError(f"{self.key} does not support MIG")
        counted: list[tuple[MigProfile, int]] = []
        for name, count in layout.items():
            profile = self.mig_profiles.get(name)
            if profile is None:
                raise ValueError(f"'{name}' is not a MIG profile of {self.key}")
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"'{name}': the count must be a whole number >= 1")
            counted.append((profile, count))
        return counted


def layout_name(profile: str) -> str:
    """mig-parted's name for the layout of one profile on every slot: ``all-1g.10gb``; a ``+``
    in the profile is written ``.``, as the GPU Operator's default config does
    (``all-1g.10gb.me`` for ``1g.10gb+me``)."""
    return "all-" + profile.replace("+", ".")


@cache
def _valid_layouts(gpu: Accelerator) -> tuple[Mapping[str, int], ...]:
    if not gpu.supports_mig:
        return ()
    profiles = list(gpu.mig_profiles.values())
    found: list[Mapping[str, int]] = []
    for counts in itertools.product(*(range(p.max_per_gpu + 1) for p in profiles)):
        layout = {p.name: n for p, n in zip(profiles, counts, strict=True) if n}
        if layout and not gpu.mig_layout_problems(layout):
            found.append(MappingProxyType(layout))
    return tuple(found)


def _instances(counted: Iterable[tuple[MigProfile, int]]) -> list[MigProfile]:
    """One entry per instance, the least flexible first (fewest placements, then largest)."""
    expanded = [p for p, n in counted for _ in range(n)]
    return sorted(expanded, key=lambda p: (len(p.placement_starts), -p.memory_slices, p.name))


def _place(memory_slices: int, instances: list[MigProfile]) -> list[int] | None:
    """Backtracking search for start slices, one per instance, with no two overlapping."""
    starts: list[int] = []

    def search(i: int, used: int) -> bool:
        if i == len(instances):
            return True
        profile = instances[i]
        # Instances of one profile are interchangeable: keep their starts increasing.
        floor = starts[-1] if i > 0 and instances[i - 1] is profile else -1
        for start in profile.placement_starts:
            if start <= floor or start + profile.memory_slices > memory_slices:
                continue
            bits = ((1 << profile.memory_slices) - 1) << start
            if used & bits:
                continue
            starts.append(start)
            if search(i + 1, used | bits):
                return True
            starts.pop()
        return False

    return starts if search(0, 0) else None


def _breakdown(
    counted: Iterable[tuple[MigProfile, int]],
    per_instance: Callable[[MigProfile], int] | None = None,
) -> str:
    """ "2 x 3g.40gb = 8, 1 x 1g.10gb = 1" with per-instance slices, else "2 x 3g.40gb, ..." """
    parts = []
    for profile, count in counted:
        part = f"{count} x {profile.name}"
        if per_instance is not None:
            part += f" = {count * per_instance(profile)}"
        parts.append(part)
    return ", ".join(parts)


def _or_list(values: tuple[int, ...]) -> str:
    if len(values) == 1:
        return str(values[0])
    return ", ".join(str(v) for v in values[:-1]) + f" or {values[-1]}"


def _seven_slice_profiles(one: int, two: int, four: int, full: int) -> dict[str, MigProfile]:
    """The seven profiles NVIDIA's GPU Operator v26.7.0 default config gives a GPU with 7 compute
    and 8 memory slices, by the GB in their names: ``one`` for one memory slice (1g, 1g+me),
    ``two`` for two (1g with double memory, 2g), ``four`` for four (3g, 4g), ``full`` for all
    eight (7g). The maxima are that config's ``all-<profile>`` counts."""
    rows = (
        # compute slices, memory slices, GB, max per GPU, +me
        (1, 1, one, 7, False),
        (1, 1, one, 1, True),
        (1, 2, two, 4, False),
        (2, 2, two, 3, False),
        (3, 4, four, 2, False),
        (4, 4, four, 1, False),
        (7, 8, full, 1, False),
    )
    profiles = (
        MigProfile(
            name=f"{compute}g.{gb}gb" + ("+me" if me else ""),
            compute_slices=compute,
            memory_slices=memory,
            memory_gb=gb,
            max_per_gpu=maximum,
            media_extensions=me,
        )
        for compute, memory, gb, maximum, me in rows
    )
    return {p.name: p for p in profiles}


_NO_MIG: Final[Mapping[str, MigProfile]] = MappingProxyType({})

_ACCELERATORS: Final = (
    Accelerator(
        key="a100-40gb",
        vendor="nvidia",
        product="NVIDIA A100 SXM4 40GB",
        memory_gb=40,
        resource_name="nvidia.com/gpu",
        # A100 SXM4 40GB, A100 PCIe 40GB (two ids); figures below are the SXM4 part's.
        pci_device_ids=("0x20B010DE", "0x20B110DE", "0x20F110DE"),
        bf16_tflops=312.0,
        memory_bandwidth_gbps=1555.0,
        nvlink_bandwidth_gbps=600.0,
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(5, 10, 20, 40),
        forms=("sxm", "pcie"),
    ),
    Accelerator(
        key="a100-80gb",
        vendor="nvidia",
        product="NVIDIA A100 SXM4 80GB",
        memory_gb=80,
        resource_name="nvidia.com/gpu",
        # A100 SXM4 80GB, A100 PCIe 80GB; figures below are the SXM4 part's.
        pci_device_ids=("0x20B210DE", "0x20B510DE"),
        bf16_tflops=312.0,
        memory_bandwidth_gbps=2039.0,
        nvlink_bandwidth_gbps=600.0,
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(10, 20, 40, 80),
        forms=("sxm", "pcie"),
    ),
    Accelerator(
        key="h100-80gb",
        vendor="nvidia",
        product="NVIDIA H100 SXM5 80GB",
        memory_gb=80,
        resource_name="nvidia.com/gpu",
        # H100 SXM5 80GB, H100 PCIe; figures below are the SXM5 part's.
        pci_device_ids=("0x233010DE", "0x233110DE"),
        bf16_tflops=989.0,
        memory_bandwidth_gbps=3350.0,
        nvlink_bandwidth_gbps=900.0,
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(10, 20, 40, 80),
        forms=("sxm", "pcie"),
    ),
    Accelerator(
        key="h100-94gb",
        vendor="nvidia",
        product="NVIDIA H100 NVL 94GB",
        memory_gb=94,
        resource_name="nvidia.com/gpu",
        pci_device_ids=("0x232110DE",),  # pci.ids "H100L 94GB"
        bf16_tflops=835.0,
        memory_bandwidth_gbps=3900.0,
        nvlink_bandwidth_gbps=600.0,  # NVLink bridge
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(12, 24, 47, 94),
        forms=("nvl",),
    ),
    Accelerator(
        key="h200-141gb",
        vendor="nvidia",
        product="NVIDIA H200 SXM 141GB",
        memory_gb=141,
        resource_name="nvidia.com/gpu",
        # H200 SXM only. H200 NVL (0x233B10DE) lacks 1g.35gb in the upstream default config.
        pci_device_ids=("0x233510DE",),
        bf16_tflops=989.0,
        memory_bandwidth_gbps=4800.0,
        nvlink_bandwidth_gbps=900.0,
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(18, 35, 71, 141),
        forms=("sxm",),
    ),
    Accelerator(
        key="b200",
        vendor="nvidia",
        product="NVIDIA B200 180GB (HGX/DGX B200)",
        memory_gb=180,
        resource_name="nvidia.com/gpu",
        pci_device_ids=("0x290110DE",),
        bf16_tflops=2250.0,
        memory_bandwidth_gbps=8000.0,
        nvlink_bandwidth_gbps=1800.0,
        compute_slices=7,
        memory_slices=8,
        mig_profiles=_seven_slice_profiles(23, 45, 90, 180),
        forms=("sxm",),
    ),
    Accelerator(
        key="l40s",
        vendor="nvidia",
        product="NVIDIA L40S 48GB",
        memory_gb=48,
        resource_name="nvidia.com/gpu",
        pci_device_ids=(),
        bf16_tflops=362.0,
        memory_bandwidth_gbps=864.0,
        nvlink_bandwidth_gbps=None,
        compute_slices=0,
        memory_slices=0,
        mig_profiles=_NO_MIG,
        forms=("pcie",),
    ),
    Accelerator(
        key="l4",
        vendor="nvidia",
        product="NVIDIA L4 24GB",
        memory_gb=24,
        resource_name="nvidia.com/gpu",
        pci_device_ids=(),
        bf16_tflops=121.0,
        memory_bandwidth_gbps=300.0,
        nvlink_bandwidth_gbps=None,
        compute_slices=0,
        memory_slices=0,
        mig_profiles=_NO_MIG,
        forms=("pcie",),
    ),
    Accelerator(
        key="mi300x",
        vendor="amd",
        product="AMD Instinct MI300X 192GB",
        memory_gb=192,
        resource_name="amd.com/gpu",
        pci_device_ids=(),
        bf16_tflops=1307.0,
        memory_bandwidth_gbps=5300.0,
        nvlink_bandwidth_gbps=896.0,  # AMD Infinity Fabric: 7 links x 128 GB/s
        compute_slices=0,
        memory_slices=0,
        mig_profiles=_NO_MIG,
        forms=("oam",),
    ),
)

CATALOG: Final[Mapping[str, Accelerator]] = MappingProxyType({a.key: a for a in _ACCELERATORS})


def accelerator(key: str) -> Accelerator | None:
    """The catalog entry for ``key``, or None when the catalog has no such accelerator."""
    return CATALOG.get(key)


def suggest(key: str) -> str | None:
    """The known key closest to ``key``, for "did you mean" hints; None when nothing is close."""
    return closest(key, CATALOG)


def elsewhere(profile: str) -> list[Accelerator]:
    """The accelerators of the catalog that have a MIG profile of this name, in catalog order:
    where a profile unknown to one accelerator comes from."""
    return [a for a in CATALOG.values() if profile in a.mig_profiles]


def resolve_mig_layout(key: str, layout: str | Mapping[str, int]) -> Mapping[str, int]:
    """A pool's `mig.layout` as instances per profile: a mapping as written, a named layout
    (``all-balanced``, ``all-1g.10gb``) as the accelerator's entry of that name; empty for a
    name the accelerator does not have (the policy rule `mig-layout-invalid` says so)."""
    if isinstance(layout, str):
        gpu = accelerator(key)
        named = gpu.named_mig_layouts().get(layout) if gpu is not None else None
        return named or {}
    return layout
