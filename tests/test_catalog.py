"""The GPU catalog: agreement with the GPU Operator's MIG data, layout checks, immutability."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from renderer.model.catalog import CATALOG, Accelerator, MigProfile, accelerator, suggest

GPU_OPERATOR = Path(__file__).resolve().parents[2] / "shared" / "reference" / "gpu-operator"
MIG_MAX = GPU_OPERATOR / "mig-max.json"
MIG_CONFIGS = GPU_OPERATOR / "mig-configs.json"

REQUIRED_KEYS = {
    "a100-40gb",
    "a100-80gb",
    "h100-80gb",
    "h100-94gb",
    "h200-141gb",
    "b200",
    "l40s",
    "l4",
    "mi300x",
}

# The device ids each MIG-capable key must claim (mig-parted device-filter format).
EXPECTED_DEVICE_IDS = {
    "a100-40gb": {"0x20B010DE", "0x20B110DE", "0x20F110DE"},
    "a100-80gb": {"0x20B210DE", "0x20B510DE"},
    "h100-80gb": {"0x233010DE", "0x233110DE"},
    "h100-94gb": {"0x232110DE"},
    "h200-141gb": {"0x233510DE"},
    "b200": {"0x290110DE"},
}

# Placements from NVIDIA's MIG User Guide (`nvidia-smi mig -lgipp` on A100/H100), written out
# here independently of renderer.model.catalog: (compute slices, memory slices) -> allowed starts.
GUIDE_PLACEMENTS = {
    (7, 8): {0},
    (4, 4): {0},
    (3, 4): {0, 4},
    (2, 2): {0, 2, 4},
    (1, 2): {0, 2, 4, 6},
    (1, 1): {0, 1, 2, 3, 4, 5, 6},
}

MIG_KEYS = sorted(EXPECTED_DEVICE_IDS)


def _load(path: Path) -> Any:
    if not path.is_file():
        pytest.skip(f"upstream reference {path} is absent (expected ../shared beside the repo)")
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def mig_max() -> dict[str, Any]:
    data: dict[str, Any] = _load(MIG_MAX)
    return data


@pytest.fixture(scope="module")
def mig_configs() -> dict[str, Any]:
    data: dict[str, Any] = _load(MIG_CONFIGS)
    return data


def _cat(key: str) -> Accelerator:
    found = accelerator(key)
    assert found is not None, key
    return found


# --- the catalog's shape ------------------------------------------------------------------


def test_required_keys_present_and_keyed_by_their_own_key() -> None:
    assert set(CATALOG) >= REQUIRED_KEYS
    for key, acc in CATALOG.items():
        assert acc.key == key
        assert accelerator(key) is acc


def test_unknown_key_is_none() -> None:
    assert accelerator("h100") is None
    assert accelerator("") is None


def test_device_ids_are_the_expected_ones_and_unique() -> None:
    for key, ids in EXPECTED_DEVICE_IDS.items():
        assert set(_cat(key).pci_device_ids) == ids, key
    claimed = [i for acc in CATALOG.values() for i in acc.pci_device_ids]
    assert len(claimed) == len(set(claimed)), "a device id is claimed by two accelerators"
    for device_id in claimed:
        assert re.fullmatch(r"0x[0-9A-F]{4}10DE", device_id), device_id


def test_mig_capability_is_consistent() -> None:
    for key, acc in CATALOG.items():
        if key in EXPECTED_DEVICE_IDS:
            assert acc.supports_mig, key
            assert (acc.compute_slices, acc.memory_slices) == (7, 8), key
        else:
            assert not acc.supports_mig, key
            assert (acc.compute_slices, acc.memory_slices) == (0, 0), key
            assert acc.pci_device_ids == (), key
            assert len(acc.mig_profiles) == 0, key


def test_resource_names_and_vendors() -> None:
    for acc in CATALOG.values():
        assert acc.vendor in {"nvidia", "amd"}
        assert acc.resource_name == f"{acc.vendor}.com/gpu"
    assert _cat("mi300x").resource_name == "amd.com/gpu"
    assert _cat("h100-80gb").resource_name == "nvidia.com/gpu"


def test_pcie_only_parts_have_no_nvlink() -> None:
    assert _cat("l40s").nvlink_bandwidth_gbps is None
    assert _cat("l4").nvlink_bandwidth_gbps is None
    for key in REQUIRED_KEYS - {"l40s", "l4"}:
        bandwidth = _cat(key).nvlink_bandwidth_gbps
        assert bandwidth is not None and bandwidth > 0, key


def test_figures_are_plausible_and_ordered() -> None:
    for acc in CATALOG.values():
        assert acc.memory_gb > 0 and acc.bf16_tflops > 0 and acc.memory_bandwidth_gbps > 0
    # Relations the datasheets state, independent of the exact numbers.
    assert _cat("h200-141gb").bf16_tflops == _cat("h100-80gb").bf16_tflops  # same GH100 compute
    assert _cat("a100-40gb").bf16_tflops == _cat("a100-80gb").bf16_tflops
    assert _cat("h200-141gb").memory_bandwidth_gbps > _cat("h100-80gb").memory_bandwidth_gbps
    assert _cat("b200").nvlink_bandwidth_gbps == 2 * (_cat("h100-80gb").nvlink_bandwidth_gbps or 0)


# --- agreement with the GPU Operator v26.7.0 default MIG config ---------------------------


@pytest.mark.parametrize("key", MIG_KEYS)
def test_mig_profiles_equal_upstream_for_every_device_id(key: str, mig_max: dict[str, Any]) -> None:
    acc = _cat(key)
    ours = {name: p.max_per_gpu for name, p in acc.mig_profiles.items()}
    for device_id in acc.pci_device_ids:
        assert device_id in mig_max, f"{key}: {device_id} is not in mig-max.json"
        assert ours == mig_max[device_id]["profiles"], f"{key} vs {device_id}"


@pytest.mark.parametrize("key", MIG_KEYS)
def test_upstream_product_names_match_the_key(key: str, mig_max: dict[str, Any]) -> None:
    model = key.split("-")[0].upper()  # "H100", "A100", "B200"
    for device_id in _cat(key).pci_device_ids:
        assert model in mig_max[device_id]["product"], (key, device_id)


def test_h200_nvl_is_not_claimed_and_differs_upstream(mig_max: dict[str, Any]) -> None:
    h200 = _cat("h200-141gb")
    assert all("0x233B10DE" not in acc.pci_device_ids for acc in CATALOG.values())
    nvl = set(mig_max["0x233B10DE"]["profiles"])
    assert nvl != set(h200.mig_profiles), "upstream now agrees: 0x233B10DE may join h200-141gb"


@pytest.mark.parametrize("key", MIG_KEYS)
def test_upstream_all_balanced_layout_is_valid(key: str, mig_configs: dict[str, Any]) -> None:
    acc = _cat(key)
    for device_id in acc.pci_device_ids:
        layout = mig_configs["devices"][device_id]["all_balanced"]
        assert acc.mig_layout_problems(layout) == [], (key, device_id, layout)


@pytest.mark.parametrize("key", MIG_KEYS)
def test_each_single_profile_layout_valid_at_max_invalid_above(key: str) -> None:
    # The upstream maxima (all-<profile> configs) and the MIG User Guide placements must agree.
    acc = _cat(key)
    for name, profile in acc.mig_profiles.items():
        assert acc.mig_layout_problems({name: profile.max_per_gpu}) == [], name
        over = acc.mig_layout_problems({name: profile.max_per_gpu + 1})
        assert over and any(name in p for p in over), name


# --- profiles parse consistently with their names ----------------------------------------


@pytest.mark.parametrize("key", MIG_KEYS)
def test_profile_fields_parse_from_name(key: str) -> None:
    acc = _cat(key)
    full = acc.mig_profiles[next(n for n in acc.mig_profiles if n.startswith("7g."))]
    assert full.memory_gb == acc.memory_gb, "the 7g profile is the whole GPU"
    for name, profile in acc.mig_profiles.items():
        match = re.fullmatch(r"(\d)g\.(\d+)gb(\+me)?", name)
        assert match is not None, name
        assert profile.name == name
        assert profile.compute_slices == int(match[1])
        assert profile.memory_gb == int(match[2])
        assert profile.media_extensions == (match[3] is not None)
        # Memory slices are eighths of the GPU: the GB in the name, rounded.
        assert profile.memory_slices == round(profile.memory_gb * 8 / acc.memory_gb), name
        assert (profile.compute_slices, profile.memory_slices) in GUIDE_PLACEMENTS, name
        assert (
            set(profile.placement_starts)
            == GUIDE_PLACEMENTS[(profile.compute_slices, profile.memory_slices)]
        )


def test_profile_name_disagreeing_with_fields_is_rejected() -> None:
    with pytest.raises(ValueError, match=re.escape("2g.20gb")):
        MigProfile("2g.20gb", 3, 2, 20, 3, False)
    with pytest.raises(ValueError, match="not a MIG profile name"):
        MigProfile("big", 1, 1, 10, 7, False)


def test_resource_names() -> None:
    a100 = _cat("a100-80gb")
    assert a100.mig_profiles["1g.10gb+me"].resource_name == "nvidia.com/mig-1g.10gb.me"
    assert a100.mig_profiles["1g.10gb"].resource_name == "nvidia.com/mig-1g.10gb"
    assert _cat("h200-141gb").mig_profiles["3g.71gb"].resource_name == "nvidia.com/mig-3g.71gb"


def test_mig_resources_of_a_valid_layout() -> None:
    a100 = _cat("a100-80gb")
    got = a100.mig_resources({"3g.40gb": 1, "1g.10gb+me": 1, "1g.10gb": 2})
    assert got == {
        "nvidia.com/mig-1g.10gb": 2,
        "nvidia.com/mig-1g.10gb.me": 1,
        "nvidia.com/mig-3g.40gb": 1,
    }


def test_mig_resources_refuses_an_invalid_layout() -> None:
    with pytest.raises(ValueError, match=re.escape("3g.40gb")):
        _cat("a100-80gb").mig_resources({"3g.40gb": 2, "1g.10gb": 1})
    with pytest.raises(ValueError, match="does not support MIG"):
        _cat("l40s").mig_resources({"1g.10gb": 1})


# --- layout validation --------------------------------------------------------------------

VALID_LAYOUTS = [
    ("a100-80gb", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),  # the operator's all-balanced
    ("a100-80gb", {"3g.40gb": 1, "4g.40gb": 1}),
    ("a100-80gb", {"1g.10gb": 7}),
    ("a100-80gb", {"2g.20gb": 3, "1g.10gb": 1}),  # 2g at 0, 2, 4 and 1g at 6
    ("a100-80gb", {"1g.10gb+me": 1, "1g.10gb": 6}),
    ("h200-141gb", {"1g.35gb": 4}),
    ("h200-141gb", {"1g.18gb": 7}),
    ("b200", {"4g.90gb": 1, "2g.45gb": 1, "1g.45gb": 1}),
]

# layout, the profiles the problems must name, a word the problems must contain
INVALID_LAYOUTS = [
    ("a100-80gb", {"3g.40gb": 2, "1g.10gb": 1}, ["3g.40gb", "1g.10gb"], "memory"),
    ("a100-80gb", {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}, ["4g.40gb", "3g.40gb"], "compute"),
    ("a100-80gb", {"7g.80gb": 1, "1g.10gb": 1}, ["7g.80gb", "1g.10gb"], "slices"),
    ("h200-141gb", {"1g.18gb": 8}, ["1g.18gb"], "maximum of 7"),
    ("a100-80gb", {"1g.10gb+me": 2}, ["1g.10gb+me"], "maximum of 1"),
    ("a100-80gb", {"1g.18gb": 1}, ["1g.18gb", "1g.10gb", "7g.80gb"], "not a MIG profile"),
    ("a100-80gb", {"2g.20gb": 0}, ["2g.20gb"], "at least 1"),
    ("a100-80gb", {"2g.20gb": -1}, ["2g.20gb"], "at least 1"),
    ("h100-94gb", {"3g.47gb": 3}, ["3g.47gb"], "maximum of 2"),
]


@pytest.mark.parametrize(("key", "layout"), VALID_LAYOUTS)
def test_valid_layouts(key: str, layout: dict[str, int]) -> None:
    acc = _cat(key)
    assert acc.mig_layout_problems(layout) == []
    placement = acc.mig_placement(layout)
    assert placement is not None
    _assert_placement_sound(acc, layout, placement)


@pytest.mark.parametrize(("key", "layout", "named", "word"), INVALID_LAYOUTS)
def test_invalid_layouts_name_the_offending_profiles(
    key: str, layout: dict[str, int], named: list[str], word: str
) -> None:
    problems = _cat(key).mig_layout_problems(layout)
    assert problems, layout
    text = "\n".join(problems)
    for name in named:
        assert f"{name}" in text, (name, problems)
    assert word in text, problems


def test_non_integer_count_is_a_problem() -> None:
    problems = _cat("a100-80gb").mig_layout_problems({"1g.10gb": "2"})  # type: ignore[dict-item]
    assert len(problems) == 1 and "1g.10gb" in problems[0] and "whole number" in problems[0]
    assert _cat("a100-80gb").mig_layout_problems({"1g.10gb": True}) != []


def test_non_mig_accelerator_has_one_problem() -> None:
    assert _cat("l40s").mig_layout_problems({"1g.10gb": 1}) == ["l40s does not support MIG"]
    assert _cat("mi300x").mig_layout_problems({}) == ["mi300x does not support MIG"]


def test_empty_layout_is_a_problem() -> None:
    problems = _cat("h100-80gb").mig_layout_problems({})
    assert len(problems) == 1 and "empty" in problems[0]


def test_two_media_extension_profiles_are_refused() -> None:
    # Real accelerators have one +me profile; build one with two to reach the aggregate rule.
    base = _cat("a100-80gb")
    extra = MigProfile("1g.20gb+me", 1, 2, 20, 1, True)
    acc = dataclasses.replace(
        base, key="test-two-me", mig_profiles={**base.mig_profiles, extra.name: extra}
    )
    problems = acc.mig_layout_problems({"1g.10gb+me": 1, "1g.20gb+me": 1})
    assert len(problems) == 1, problems
    assert "media" in problems[0] and "1g.10gb+me" in problems[0] and "1g.20gb+me" in problems[0]


def test_layout_failing_only_placement_says_so() -> None:
    # With NVIDIA's placements, a 7/8-slice GPU whose slice totals fit always has a placement
    # (see test_placement_agrees_with_an_independent_search). To reach the placement message,
    # use an 8-compute-slice test GPU: eight 1g instances fit the totals, but no 1g may start
    # at memory slice 7.
    one = MigProfile("1g.10gb", 1, 1, 10, 8, False)
    acc = Accelerator(
        key="test-8x8",
        vendor="nvidia",
        product="test",
        memory_gb=80,
        resource_name="nvidia.com/gpu",
        pci_device_ids=(),
        bf16_tflops=1.0,
        memory_bandwidth_gbps=1.0,
        nvlink_bandwidth_gbps=None,
        compute_slices=8,
        memory_slices=8,
        mig_profiles={one.name: one},
    )
    problems = acc.mig_layout_problems({"1g.10gb": 8})
    assert len(problems) == 1, problems
    assert problems[0].startswith("no valid placement") and "1g.10gb" in problems[0]
    assert acc.mig_placement({"1g.10gb": 8}) is None
    assert acc.mig_placement({"1g.10gb": 7}) is not None


# --- an independent check of the placement search -----------------------------------------


def _fits_by_scanning(counts: dict[tuple[int, int], int]) -> bool:
    """Fill memory slices left to right: leave each empty or start an instance there."""

    def scan(slot: int, left: dict[tuple[int, int], int]) -> bool:
        if not any(left.values()):
            return True
        if slot >= 8:
            return False
        if scan(slot + 1, left):
            return True
        for shape, n in left.items():
            size = shape[1]
            fits = n and slot in GUIDE_PLACEMENTS[shape] and slot + size <= 8
            if fits and scan(slot + size, {**left, shape: n - 1}):
                return True
        return False

    return scan(0, dict(counts))


@pytest.mark.slow
@pytest.mark.parametrize("key", ["a100-80gb", "h200-141gb"])
def test_placement_agrees_with_an_independent_search(key: str) -> None:
    acc = _cat(key)
    profiles = list(acc.mig_profiles.values())
    for counts in itertools.product(*(range(p.max_per_gpu + 1) for p in profiles)):
        layout = {p.name: n for p, n in zip(profiles, counts, strict=True) if n}
        if not layout:
            continue
        shapes: dict[tuple[int, int], int] = {}
        for p, n in zip(profiles, counts, strict=True):
            shape = (p.compute_slices, p.memory_slices)
            shapes[shape] = shapes.get(shape, 0) + n
        compute = sum(c * n for (c, _), n in shapes.items())
        expected = compute <= 7 and _fits_by_scanning(shapes)
        assert (acc.mig_layout_problems(layout) == []) == expected, layout
        placement = acc.mig_placement(layout)
        assert (placement is not None) == _fits_by_scanning(shapes), layout
        if placement is not None:
            _assert_placement_sound(acc, layout, placement)


def _assert_placement_sound(
    acc: Accelerator, layout: Mapping[str, int], placement: tuple[tuple[str, int], ...]
) -> None:
    used: set[int] = set()
    names = []
    for name, start in placement:
        profile = acc.mig_profiles[name]
        assert start in GUIDE_PLACEMENTS[(profile.compute_slices, profile.memory_slices)]
        span = set(range(start, start + profile.memory_slices))
        assert max(span) < acc.memory_slices
        assert not used & span, placement
        used |= span
        names.append(name)
    assert sorted(names) == sorted(n for n, c in layout.items() for _ in range(c))


# --- immutability -------------------------------------------------------------------------


def test_fields_cannot_be_assigned() -> None:
    acc = _cat("h100-80gb")
    with pytest.raises(dataclasses.FrozenInstanceError):
        acc.memory_gb = 1  # type: ignore[misc]
    profile = acc.mig_profiles["1g.10gb"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.max_per_gpu = 99  # type: ignore[misc]
    assert profile.max_per_gpu == 7


def test_catalog_and_profile_maps_are_read_only() -> None:
    with pytest.raises(TypeError):
        CATALOG["x"] = _cat("l4")  # type: ignore[index]
    with pytest.raises(TypeError):
        del CATALOG["l4"]  # type: ignore[attr-defined]
    profiles = _cat("b200").mig_profiles
    with pytest.raises(TypeError):
        profiles["1g.1gb"] = profiles["1g.23gb"]  # type: ignore[index]
    assert "l4" in CATALOG and "1g.1gb" not in profiles


def test_profiles_passed_as_a_dict_are_frozen_too() -> None:
    given = dict(_cat("a100-40gb").mig_profiles)
    acc = dataclasses.replace(_cat("a100-40gb"), key="copy", mig_profiles=given)
    given.clear()
    assert len(acc.mig_profiles) == 7
    with pytest.raises(TypeError):
        acc.mig_profiles["x"] = acc.mig_profiles["1g.5gb"]  # type: ignore[index]


def test_accelerators_are_hashable() -> None:
    assert len({_cat("l4"), _cat("l4"), _cat("b200")}) == 2


# --- suggestions --------------------------------------------------------------------------


def test_suggest() -> None:
    h100 = suggest("h100")
    assert h100 is not None and h100.startswith("h100-")
    assert suggest("H100-80GB") == "h100-80gb"
    assert suggest("h100-80g") == "h100-80gb"
    assert suggest("mi300") == "mi300x"
    assert suggest("l40") == "l40s"
    assert suggest("h200_141gb") == "h200-141gb"
    assert suggest("tpu-v5e") is None
    assert suggest("") is None
